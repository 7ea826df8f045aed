//! `spindle.mode=fuzz`: generated modules loaded and called inside the
//! running kernel, where a bug in the engine is a fault or a panic of the
//! real kernel, not of a host test.
//!
//! `./x fuzz` and `./x test` generate the modules on the host (wasm-smith
//! cannot run here) and put them in the boot archive as
//! `fuzz/<case>.wasm`, with the campaign's seed in `fuzz/seed`. Each case
//! runs through `wasm_fuzz::exercise` with the arguments of its
//! `(seed, case)`, exactly as on the host, so a failure replays on either
//! side. The kernel prints `fuzz case <N>` before each case, so when a case
//! faults or panics the kernel, the harness knows which module did it.
//!
//! The cases run on a thread of their own with the stack extension code
//! gets; a CPU exception there stops the thread and fails the run. At the
//! end, heap and frames must be where they were after the first case (the
//! first warms caches that stay): anything more is a leak.

use alloc::{format, string::String, sync::Arc};

use wasm_fuzz::{exercise, Outcome, Rng, Stream, Target};

use crate::extensions::{self, EXTENSION_STACK_BYTES};

/// Where the cases are in the boot archive.
const CASE_PREFIX: &str = "fuzz/";
/// The file holding the seed, in decimal.
const SEED_FILE: &str = "fuzz/seed";
/// Heap growth over the whole campaign tolerated as noise from other
/// threads (the clock thread's raises); a per-case leak of even a few
/// bytes over a few hundred cases exceeds it.
const HEAP_SLACK_BYTES: usize = 4096;

/// What the fuzzing thread reports.
#[derive(Default)]
struct Report {
    cases: u64,
    refused: u64,
    total: Outcome,
    failures: u64,
    heap_after_first: usize,
    frames_after_first: u64,
}

/// Frames that are free or back the heap: the heap keeps the frames it
/// grew into (it never shrinks), so a case that allocates much grows it
/// for good without leaking; frames neither free nor the heap's are held
/// by something else.
fn frames_free_or_heap() -> u64 {
    hal::memory::frame_stats().free as u64 + hal::heap::stats().mapped_bytes / hal::frames::FRAME_SIZE
}

/// Runs every case of the boot archive; returns whether all passed.
pub fn run() -> bool {
    match run_campaign() {
        Ok(()) => {
            hal::console::write_str("1 passed, 0 failed\n");
            true
        }
        Err(why) => {
            hal::console::write_fmt(format_args!("fuzz: FAILED: {why}\n0 passed, 1 failed\n"));
            false
        }
    }
}

fn run_campaign() -> Result<(), String> {
    let extensions = extensions::get().ok_or("the extension runtime is not up")?;
    let seed = extensions
        .archive_files(SEED_FILE)
        .first()
        .and_then(|(_, text)| core::str::from_utf8(text).ok())
        .and_then(|text| text.trim().parse::<u64>().ok())
        .ok_or("no readable fuzz/seed in the boot archive")?;
    let report = Arc::new(spin::Mutex::new(Report::default()));
    let shared = report.clone();
    let thread = sched::spawn_with_stack("fuzz", EXTENSION_STACK_BYTES, move || {
        run_cases(seed, &shared)
    })
    .map_err(|error| format!("cannot start the fuzz thread: {error:?}"))?;
    if let sched::ExitReason::Faulted(fault) = thread.join() {
        return Err(format!(
            "the last case (see `fuzz case` above) raised CPU exception {} at RIP={:#x} in the kernel",
            fault.vector, fault.rip
        ));
    }
    let report = report.lock();
    let heap = hal::heap::stats().allocated_bytes;
    let frames = frames_free_or_heap();
    hal::console::write_fmt(format_args!(
        "fuzz kernel: {} cases (seed {seed}): {} refused, {} loaded, {} handlers and guards bound, {} calls, {} trapped and contained, {} failed; heap {} bytes after the first case, {} after the last; frames free or in the heap {} and {}\n",
        report.cases,
        report.refused,
        report.cases - report.refused,
        report.total.bindings,
        report.total.calls,
        report.total.traps,
        report.failures,
        report.heap_after_first,
        heap,
        report.frames_after_first,
        frames,
    ));
    if report.cases == 0 {
        return Err("the boot archive holds no fuzz cases".into());
    }
    if report.failures > 0 {
        return Err(format!("{} cases broke the runtime's contract", report.failures));
    }
    if heap > report.heap_after_first + HEAP_SLACK_BYTES {
        return Err(format!(
            "the heap grew by {} bytes over {} cases",
            heap - report.heap_after_first,
            report.cases
        ));
    }
    if frames < report.frames_after_first {
        return Err(format!(
            "{} frames were not returned",
            report.frames_after_first - frames
        ));
    }
    Ok(())
}

/// The fuzzing thread: every `fuzz/<case>.wasm`, in archive order.
fn run_cases(seed: u64, report: &spin::Mutex<Report>) {
    let Some(extensions) = extensions::get() else {
        return;
    };
    let tick = extensions.tick().clone();
    let raise = move || {
        // Handlers' traps are contained and reported through
        // Extension.Faulted; a raise with the intrinsic cannot fail.
        let _ = tick.raise(&mut (0,));
    };
    let target = Target {
        runtime: extensions.runtime(),
        event: extensions.tick_port(),
        raise: &raise,
    };
    for (name, bytes) in extensions.archive_files(CASE_PREFIX) {
        let Some(case) = name
            .strip_prefix(CASE_PREFIX)
            .and_then(|name| name.strip_suffix(".wasm"))
            .and_then(|number| number.parse::<u64>().ok())
        else {
            continue;
        };
        hal::console::write_fmt(format_args!("fuzz case {case}\n"));
        let mut rng = Rng::for_case(seed, case, Stream::Run);
        let result = exercise(&target, bytes, &mut rng);
        let mut report = report.lock();
        match result {
            Ok(outcome) => {
                report.refused += u64::from(!outcome.loaded);
                report.total.add(&outcome);
            }
            Err(violation) => {
                report.failures += 1;
                hal::console::write_fmt(format_args!(
                    "fuzz: FAILED seed {seed} case {case}: {violation}\n"
                ));
            }
        }
        report.cases += 1;
        if report.cases == 1 {
            report.heap_after_first = hal::heap::stats().allocated_bytes;
            report.frames_after_first = frames_free_or_heap();
        }
    }
}
