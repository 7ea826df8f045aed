//! `spindle.mode=sysfuzz`: the system-call fuzzing campaign of
//! `./x fuzz --syscalls`. `bin/sysfuzz` (`user/sysfuzz.c`) makes random
//! system calls with random arguments; this runs it as many processes,
//! several at once (they may also `kill` each other), each with its own
//! seed, and checks that the kernel answered them all and got back every
//! frame and heap byte and its process table.
//!
//! `spindle.sysfuzz=SEED,PROCESSES,CALLS` picks the campaign: processes
//! get seeds `SEED`, `SEED + 1`, ... and make `CALLS` calls each. The
//! kernel prints `sysfuzz seed <N>` before each batch, so a kernel panic
//! names the seeds to replay (`run sysfuzz <N> <CALLS>` in the shell).

use alloc::{format, string::String, vec::Vec};

use linux_process::threads::{self as user, UserExit};

/// Processes run at once.
const BATCH: u64 = 4;
/// Growth of the least heap from the first quarter of the batches to the
/// last that is not taken for a leak: tables that reach a larger size
/// once (a few hundred bytes). Twenty bytes lost per process over a
/// hundred processes exceed it.
const HEAP_SLACK_BYTES: usize = 1024;

/// Runs the campaign described by `spindle.sysfuzz`; whether the kernel
/// came through it whole.
pub fn run(parameters: &str) -> bool {
    match campaign(parameters) {
        Ok(summary) => {
            log::info!("{summary}");
            true
        }
        Err(error) => {
            log::error!("sysfuzz: {error}");
            false
        }
    }
}

fn campaign(parameters: &str) -> Result<String, String> {
    let numbers: Vec<u64> = parameters
        .split(',')
        .map(|part| part.trim().parse::<u64>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("spindle.sysfuzz needs SEED,PROCESSES,CALLS, not `{parameters}`"))?;
    let [seed, processes, calls] = numbers[..] else {
        return Err(format!(
            "spindle.sysfuzz needs SEED,PROCESSES,CALLS, not `{parameters}`"
        ));
    };
    if processes == 0 {
        return Err(String::from("spindle.sysfuzz needs at least one process"));
    }
    let extensions = crate::extensions::get().ok_or("no boot archive")?;
    let files = extensions.archive_files("bin/sysfuzz");
    let &(_, program) = files
        .first()
        .ok_or("bin/sysfuzz is not in the boot archive")?;
    let calls_text = format!("{calls}");
    // Warm up what stays, with as many processes at once as a batch (the
    // scheduler's tables, the events' caches, the page tables of the
    // kernel-stack area).
    crate::linux::in_scratch_tree(b"/tmp/sysfuzz", || {
        let mut warming = Vec::new();
        for _ in 0..BATCH {
            warming.push(user::spawn_program(
                "sysfuzz",
                loader::FileBytes::Lent(program),
                &["sysfuzz", "1", "100"],
            )?);
        }
        for program in warming {
            let end = program.join();
            if matches!(end, UserExit::Killed(_)) {
                return Err(format!("a warm-up run {end}"));
            }
        }
        Ok(())
    })??;
    let frames = crate::page_cache::frames_free_or_kept();
    // The heap after each batch: what the dispatcher frees lazily (handler
    // lists replaced by `vm_handler` calls) comes and goes, so leaks are
    // judged on the least heap seen in the first and the last quarter.
    let mut heap_after_batch: Vec<usize> = Vec::new();
    let table = ::process::count();
    let calls_before = crate::syscalls::count();
    let (mut exited, mut faulted, mut killed) = (0u64, 0u64, 0u64);
    let mut first = seed;
    while first < seed + processes {
        let last = (first + BATCH).min(seed + processes);
        hal::console::write_fmt(format_args!("sysfuzz seed {first}..{last}\n"));
        // Each batch in a scratch tree of its own, removed after it: the
        // files its calls made are not a leak.
        let ends = crate::linux::in_scratch_tree(b"/tmp/sysfuzz", || {
            let mut running = Vec::new();
            for process_seed in first..last {
                let seed_text = format!("{process_seed}");
                running.push(user::spawn_program(
                    "sysfuzz",
                    loader::FileBytes::Lent(program),
                    &["sysfuzz", &seed_text, &calls_text],
                )?);
            }
            Ok::<Vec<UserExit>, String>(running.into_iter().map(|program| program.join()).collect())
        })??;
        for end in ends {
            match end {
                UserExit::Exited(_) => exited += 1,
                UserExit::Faulted(_) => faulted += 1,
                UserExit::Killed(_) => killed += 1,
            }
        }
        heap_after_batch.push(hal::heap::stats().allocated_bytes);
        first = last;
    }
    let made = crate::syscalls::count() - calls_before;
    let frames_after = crate::page_cache::frames_free_or_kept();
    let quarter = heap_after_batch.len().div_ceil(4);
    let least = |batches: &[usize]| batches.iter().copied().min().unwrap_or(0);
    let heap = least(&heap_after_batch[..quarter]);
    let heap_after = least(&heap_after_batch[heap_after_batch.len() - quarter..]);
    let table_after = ::process::count();
    if frames_after < frames {
        return Err(format!(
            "{} frames were not given back",
            frames - frames_after
        ));
    }
    if heap_after > heap + HEAP_SLACK_BYTES {
        return Err(format!(
            "the least heap grew by {} bytes from the first quarter of the batches to the last",
            heap_after - heap
        ));
    }
    if table_after != table {
        return Err(format!(
            "the process table went from {table} to {table_after}"
        ));
    }
    Ok(format!(
        "sysfuzz: {processes} processes (seeds {seed}..{}), {made} system calls; {exited} exited, {faulted} ended by their own faults, {killed} ended by a signal; frames, heap and process table back where they were",
        seed + processes
    ))
}
