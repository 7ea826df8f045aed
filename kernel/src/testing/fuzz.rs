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
//! gets; a CPU exception there stops the thread and fails the run.
//!
//! Leaks: after a case, the heap still holds for a while what the
//! dispatcher reclaims lazily (old handler lists, raise caches), up to tens
//! of kilobytes depending on the case. So the check compares minimums: the
//! smallest live heap seen after any case of the last tenth of the run must
//! not exceed the smallest of the first tenth (after warm-up) by more than a
//! little. A leak of even a few bytes a case over a thousand cases does.

use alloc::{format, string::String, sync::Arc, vec::Vec};

use wasm_fuzz::{exercise, Outcome, Rng, Stream, Target};

use crate::extensions::{self, EXTENSION_STACK_BYTES};

/// Where the cases are in the boot archive.
const CASE_PREFIX: &str = "fuzz/";
/// The file holding the seed, in decimal.
const SEED_FILE: &str = "fuzz/seed";
/// Heap growth between the first and the last tenth tolerated as noise
/// from other threads (the clock thread's raises); a per-case leak of a
/// few bytes over a few hundred cases exceeds it.
const HEAP_SLACK_BYTES: usize = 2048;

/// What the fuzzing thread reports.
#[derive(Default)]
struct Report {
    cases: u64,
    refused: u64,
    total: Outcome,
    failures: u64,
    /// The smallest live heap seen after a case of the first tenth, and of
    /// the last tenth.
    heap_early: Option<u64>,
    heap_late: Option<u64>,
    /// The most frames free or in the heap after a case of the first
    /// tenth, and of the last tenth.
    frames_early: Option<u64>,
    frames_late: Option<u64>,
}

/// Keeps the smaller (or, with `larger`, the larger) of `slot` and `value`.
fn keep(slot: &mut Option<u64>, value: u64, larger: bool) {
    *slot = Some(match *slot {
        Some(old) if larger => old.max(value),
        Some(old) => old.min(value),
        None => value,
    });
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
    .map_err(|_| String::from("cannot start the fuzz thread: no memory for its stack"))?;
    if let sched::ExitReason::Faulted(fault) = thread.join() {
        return Err(format!(
            "the last case (see `fuzz case` above) raised CPU exception {} at RIP={:#x} in the kernel",
            fault.vector, fault.rip
        ));
    }
    let report = report.lock();
    let (Some(heap_early), Some(heap_late), Some(frames_early), Some(frames_late)) = (
        report.heap_early,
        report.heap_late,
        report.frames_early,
        report.frames_late,
    ) else {
        return Err("the boot archive holds no fuzz cases".into());
    };
    hal::console::write_fmt(format_args!(
        "fuzz kernel: {} cases (seed {seed}): {} refused, {} loaded, {} handlers and guards bound, {} calls, {} trapped and contained, {} failed; least live heap {heap_early} bytes in the first tenth, {heap_late} in the last; frames free or kept (heap, kernel page tables) {frames_early} and {frames_late}\n",
        report.cases,
        report.refused,
        report.cases - report.refused,
        report.total.bindings,
        report.total.calls,
        report.total.traps,
        report.failures,
    ));
    if report.failures > 0 {
        return Err(format!(
            "{} cases broke the runtime's contract",
            report.failures
        ));
    }
    if heap_late > heap_early + HEAP_SLACK_BYTES as u64 {
        return Err(format!(
            "the heap grew by {} bytes over {} cases",
            heap_late - heap_early,
            report.cases
        ));
    }
    if frames_late < frames_early {
        return Err(format!(
            "{} frames were not returned",
            frames_early - frames_late
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
    let cases: Vec<(u64, &[u8])> = extensions
        .archive_files(CASE_PREFIX)
        .into_iter()
        .filter_map(|(name, bytes)| {
            let number = name.strip_prefix(CASE_PREFIX)?.strip_suffix(".wasm")?;
            Some((number.parse().ok()?, bytes))
        })
        .collect();
    // The first case warms what stays (caches, the dispatcher's lists).
    let tenth = (cases.len() / 10).max(1);
    let (early, late) = (1..=tenth, cases.len().saturating_sub(tenth)..cases.len());
    for (index, &(case, bytes)) in cases.iter().enumerate() {
        hal::console::write_fmt(format_args!("fuzz case {case}\n"));
        let mut rng = Rng::for_case(seed, case, Stream::Run);
        let result = exercise(&target, bytes, &mut rng);
        let heap = hal::heap::stats().allocated_bytes as u64;
        let frames = crate::page_cache::frames_free_or_kept();
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
        if early.contains(&index) || cases.len() == 1 {
            keep(&mut report.heap_early, heap, false);
            keep(&mut report.frames_early, frames, true);
        }
        if late.contains(&index) {
            keep(&mut report.heap_late, heap, false);
            keep(&mut report.frames_late, frames, true);
        }
    }
}
