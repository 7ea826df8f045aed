//! Fuzzing the extension runtime, on the host and in the kernel (`./x fuzz`,
//! and the short runs of `./x test`).
//!
//! - Host: the `wasm-fuzz` crate's `loader` test, optimized, in one process
//!   per job, each over its own range of case numbers. Every case is
//!   isolated; a failing case prints its seed and number and is saved as
//!   `target/fuzz/host-seed<S>-case<N>.wasm`.
//! - Kernel: the `fuzz-cases` program writes the modules of a range of
//!   cases; they go into a boot archive; the kernel runs them in
//!   `spindle.mode=fuzz` with the same arguments the host would use. When a
//!   case faults or panics the kernel, the last `fuzz case <N>` line names
//!   it and its module is saved as `target/fuzz/kernel-seed<S>-case<N>.wasm`.
//!
//! A case is named by its seed and number on both sides, so
//! `./x fuzz --host-only --seed S --first N --cases 1` replays a kernel
//! failure on the host and `--kernel-only` the other way round.

use std::{
    fs,
    path::{Path, PathBuf},
    time::Duration,
};

use crate::{
    image,
    parse::{self, GuestExit},
    qemu::{BootConfig, Guest},
    repo_root,
    toolchain::{self, cargo},
    Result,
};

/// The seed `./x test` and `./x fuzz` use unless given one.
pub const DEFAULT_SEED: u64 = 0x5eed_5eed_1995;

/// Where fuzz output (failing modules, case folders, archives) goes.
pub const OUTPUT_DIRECTORY: &str = "target/fuzz";

/// Most cases per kernel boot (the archive holds them all in memory).
pub const KERNEL_CASES_PER_BOOT: u64 = 1_000;

/// A range of cases of one seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cases {
    /// The campaign's seed.
    pub seed: u64,
    /// The first case number.
    pub first: u64,
    /// How many cases.
    pub count: u64,
}

/// `./x fuzz --net`: `frames` random and mutated Ethernet frames through
/// the protocol graph's receive path (`services/net`, the code the kernel
/// runs on each received frame), on the host, from `seed`. The short run
/// is part of `./x test` (20,000 frames on the host, 3,000 into the live
/// graph in QEMU).
pub fn run_net(frames: u64, seed: u64) -> Result<bool> {
    eprintln!("x: fuzzing the network receive path with {frames} frames (seed {seed:#x})");
    let status = cargo("target")
        .args([
            "test",
            "--release",
            "-p",
            "net",
            "random_frames_never_panic",
            "--",
            "--nocapture",
        ])
        .env("SPINDLE_NET_FRAMES", frames.to_string())
        .env("SPINDLE_NET_SEED", seed.to_string())
        .status()?;
    Ok(status.success())
}

/// The native engine's differential fuzzing, long run: `cases`
/// wasm-smith modules run by wasmi and by native code, once with the
/// kernel's choice of compiler per function and once with every function
/// the single-pass compiler handles compiled by it, compared call by call
/// (results, traps, memory). The short run (300 cases) is part of `./x
/// test`.
pub fn run_native(cases: u64) -> Result<bool> {
    eprintln!("x: the native engine against wasmi, {cases} generated modules per compiler choice");
    let status = cargo("target")
        .args([
            "test",
            "--release",
            "-p",
            "wasm-fuzz",
            "--test",
            "native_fuzz",
            "--",
            "--nocapture",
        ])
        .env("SPINDLE_NATIVE_CASES", cases.to_string())
        .status()?;
    Ok(status.success())
}

/// Runs the host fuzzer over `cases` in `jobs` processes (each a slice of
/// the range), stopping after `seconds` if given; returns whether every
/// case passed.
pub fn run_host(cases: Cases, jobs: u64, seconds: Option<u64>) -> Result<bool> {
    let arguments = ["test", "--release", "-p", "wasm-fuzz", "--test", "loader"];
    eprintln!("x: building the host fuzzer (cargo test --release -p wasm-fuzz --test loader)");
    toolchain::run_checked(
        cargo("target").args(arguments).arg("--no-run"),
        "host fuzzer build",
    )?;
    let jobs = jobs.clamp(1, cases.count.max(1));
    let per_job = cases.count.div_ceil(jobs);
    let mut children = Vec::new();
    for job in 0..jobs {
        let first = cases.first + job * per_job;
        let count = per_job.min(cases.first + cases.count - first);
        let mut command = cargo("target");
        command
            .args(arguments)
            .args(["--", "--nocapture"])
            .env("SPINDLE_FUZZ_SEED", cases.seed.to_string())
            .env("SPINDLE_FUZZ_FIRST", first.to_string())
            .env("SPINDLE_FUZZ_CASES", count.to_string());
        if let Some(seconds) = seconds {
            command.env("SPINDLE_FUZZ_SECONDS", seconds.to_string());
        }
        eprintln!(
            "x: host fuzz job {job}: seed {} cases {first}..{}",
            cases.seed,
            first + count
        );
        children.push((first, command.spawn()?));
    }
    let mut is_success = true;
    for (first, mut child) in children {
        let status = child.wait()?;
        if !status.success() {
            is_success = false;
            report_in_flight(cases.seed, first);
        }
    }
    Ok(is_success)
}

/// After a host job failed: if it died inside a case (a signal, not a
/// reported failure), the module it was running is still on disk; say so.
fn report_in_flight(seed: u64, first: u64) {
    let stem = format!("in-flight-seed{seed}-first{first}");
    let directory = repo_root().join(OUTPUT_DIRECTORY);
    let module = directory.join(format!("{stem}.wasm"));
    let case = fs::read_to_string(directory.join(format!("{stem}.case"))).unwrap_or_default();
    if module.is_file() {
        println!(
            "fuzz: the host fuzzer died during seed {seed} case {}; the module is {} (replay: ./x fuzz --host-only --seed {seed} --first {} --cases 1)",
            case.trim(),
            toolchain::display_path(&module),
            case.trim()
        );
    }
}

/// The folder holding the modules of `cases` for the kernel.
fn case_directory(cases: Cases) -> PathBuf {
    repo_root().join(OUTPUT_DIRECTORY).join(format!(
        "cases-seed{}-first{}-count{}",
        cases.seed, cases.first, cases.count
    ))
}

/// Writes the modules of `cases` (the `fuzz-cases` program) and a boot
/// archive holding them; returns the archive's path.
pub fn prepare_kernel_archive(cases: Cases) -> Result<PathBuf> {
    let directory = case_directory(cases);
    let _ = fs::remove_dir_all(&directory);
    let mut command = cargo("target");
    command
        .args(["run", "-q", "-p", "wasm-fuzz", "--features", "generate"])
        .args(["--bin", "fuzz-cases", "--"])
        .args(["--seed", &cases.seed.to_string()])
        .args(["--first", &cases.first.to_string()])
        .args(["--count", &cases.count.to_string()])
        .arg("--out")
        .arg(&directory);
    toolchain::run_checked(&mut command, "writing the fuzz cases")?;
    let archive = directory.with_extension("cpio");
    image::build_fuzz_archive(&directory, &archive)
}

/// Checks a kernel fuzz boot that has been started; on failure, saves the
/// module of the case that was running and says how to replay it.
pub fn check_kernel_run(guest: &mut Guest, cases: Cases) -> Result<()> {
    let exit = guest.wait_exit(None)?;
    let log = guest.serial_log();
    let summary = log
        .lines()
        .find(|line| line.starts_with("fuzz kernel:"))
        .map(str::to_string);
    let passed = parse::find_test_summary(&log)
        .is_some_and(|summary| summary.passed == 1 && summary.failed == 0);
    if exit == GuestExit::Success && passed {
        if let Some(summary) = summary {
            println!("    {summary}");
            return Ok(());
        }
    }
    let reason = log
        .lines()
        .find(|line| line.starts_with("fuzz: FAILED"))
        .map_or_else(|| format!("the kernel ended with {exit}"), str::to_string);
    let Some(case) = parse::last_fuzz_case(&log) else {
        return Err(format!("{reason}; no case had started").into());
    };
    let saved = save_kernel_case(cases, case)?;
    Err(format!(
        "{reason}; during seed {} case {case}, saved as {}; replay: ./x fuzz --kernel-only --seed {} --first {case} --kernel-cases 1 (or --host-only ... --cases 1)",
        cases.seed,
        toolchain::display_path(&saved),
        cases.seed
    )
    .into())
}

fn save_kernel_case(cases: Cases, case: u64) -> Result<PathBuf> {
    let source = case_directory(cases).join(format!("{case}.wasm"));
    let saved = repo_root()
        .join(OUTPUT_DIRECTORY)
        .join(format!("kernel-seed{}-case{case}.wasm", cases.seed));
    fs::copy(&source, &saved).map_err(|error| format!("{}: {error}", source.display()))?;
    Ok(saved)
}

/// The deadline of a kernel run of `count` cases: the usual boot deadline
/// plus a generous 200 ms a case under TCG.
pub fn kernel_deadline(base: Duration, count: u64) -> Duration {
    base + Duration::from_millis(200 * count)
}

/// Runs `cases` in the kernel, a boot per [`KERNEL_CASES_PER_BOOT`]; returns
/// whether every boot passed.
pub fn run_kernel(
    cases: Cases,
    boot: &dyn Fn(&Path) -> BootConfig,
    base: Duration,
) -> Result<bool> {
    let mut first = cases.first;
    let end = cases.first + cases.count;
    let mut is_success = true;
    while first < end {
        let batch = Cases {
            seed: cases.seed,
            first,
            count: KERNEL_CASES_PER_BOOT.min(end - first),
        };
        let archive = prepare_kernel_archive(batch)?;
        eprintln!(
            "x: kernel fuzz: seed {} cases {}..{}",
            batch.seed,
            batch.first,
            batch.first + batch.count
        );
        let config = boot(&archive);
        let mut guest = Guest::boot(&config, kernel_deadline(base, batch.count))?;
        let outcome = check_kernel_run(&mut guest, batch);
        guest.kill();
        let name = format!("fuzz-seed{}-first{}", batch.seed, batch.first);
        if let Some(path) = crate::scenarios::save_log(&name, &guest.full_log()) {
            eprintln!("x: serial log in {}", toolchain::display_path(&path));
        }
        if let Err(error) = outcome {
            println!("fuzz kernel: FAILED: {error}");
            is_success = false;
        }
        first += batch.count;
    }
    Ok(is_success)
}

/// `./x fuzz --syscalls`: boots the kernel in `spindle.mode=sysfuzz` with
/// `config` and waits for its verdict (about a second of TCG time per
/// thousand calls, with room to spare); whether it came through.
pub fn run_syscalls(config: &BootConfig, processes: u64, calls: u64) -> Result<bool> {
    let deadline = Duration::from_secs(60 + processes * calls / 500);
    let mut guest = Guest::boot(config, deadline)?;
    let exit = guest.wait_exit(None)?;
    let log = guest.full_log();
    let name = "sysfuzz";
    let saved = crate::scenarios::save_log(name, &log);
    let summary = log
        .lines()
        .find(|line| line.contains("sysfuzz: ") && line.contains("processes"));
    match (exit, summary) {
        (GuestExit::Success, Some(summary)) => {
            println!("{}", summary.trim());
            Ok(true)
        }
        (exit, _) => {
            crate::scenarios::print_log(name, &log, saved.as_deref());
            eprintln!("x: the syscall campaign ended with {exit}; the last `sysfuzz seed` line above names the seeds to replay (`run sysfuzz SEED CALLS` in the shell)");
            Ok(false)
        }
    }
}
