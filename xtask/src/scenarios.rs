//! QEMU scenarios of `./x test`, one boot each, named by what they prove.
//!
//! Each [`Scenario`] boots the kernel with `spindle.mode=<mode>` on its
//! command line, drives it through the serial line ([`Guest`]), and checks
//! what it printed and how QEMU exited. The contract with the kernel:
//! - `spindle.mode=test`: run the in-kernel tests, print `test <name> ... ok`
//!   or `test <name> ... FAILED` per test and then `N passed, N failed`, and
//!   exit through `isa-debug-exit` with 33 (all passed) or 35.
//! - `spindle.mode=shell`: print the prompt `spindle> ` (no newline), echo
//!   typed characters, take `\n` or `\r` as Enter; `halt` exits with 33.
//! - `spindle.mode=crash`: fault on purpose on the boot path; the fault
//!   handler prints `page fault` and `CR2=` and exits with 35.
//!
//! Every run's serial log is written to `target/qemu-logs/<scenario>.log`;
//! on failure it is also printed.

use std::{
    fs,
    path::{Path, PathBuf},
    thread,
    time::{Duration, Instant},
};

use crate::{
    fuzz,
    netpeer::{self, Forward, HostHttpServer, Protocol},
    parse::{self, GuestExit},
    qemu::{Accel, BootConfig, Guest},
    repo_root,
    toolchain::Image,
    Result,
};

/// Commands the shell's `help` must list.
pub const SHELL_COMMANDS: &[&str] = &[
    "help", "mem", "threads", "uptime", "ext", "run", "events", "domains", "http", "net", "trace",
    "profile", "halt",
];

/// How soon after `halt` QEMU must have exited.
const HALT_EXIT_WITHIN: Duration = Duration::from_secs(15);

/// Pause between the two `uptime` commands.
const UPTIME_PAUSE: Duration = Duration::from_millis(300);

/// Folder, relative to the repository root, where serial logs are kept.
pub const LOG_DIRECTORY: &str = "target/qemu-logs";

/// One QEMU boot and what must hold about it.
pub struct Scenario {
    /// What the scenario proves, as an identifier.
    pub name: &'static str,
    /// Value of `spindle.mode=` on the kernel command line.
    pub mode: &'static str,
    /// Drives the booted guest and checks it; an error is the failure reason.
    pub check: fn(&mut Guest) -> Result<()>,
    /// The boot archive it boots with.
    pub archive: Archive,
    /// Guest ports reached from the host (each from a free host port; the
    /// check finds it with [`Guest::host_port`]).
    pub forwards: &'static [(Protocol, u16)],
    /// The NIC on a raw link instead of QEMU's user network: its frames
    /// travel as UDP datagrams between QEMU and the harness, which plays
    /// the other host ([`Guest::raw_link`]).
    pub raw_link: bool,
    /// The NIC behind a PCI-to-PCI bridge, on bus 1.
    pub nic_behind_bridge: bool,
    /// The kernel image it boots: the testing one (with the in-kernel
    /// tests, benchmarks and fuzz drivers) unless it proves something of
    /// the production image `./x run` boots.
    pub image: Image,
}

/// Which boot archive a scenario boots with.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Archive {
    /// The usual one: extensions and regression modules.
    Boot,
    /// The usual one plus the modules of [`TEST_KERNEL_FUZZ`].
    KernelFuzz,
    /// The usual one plus the Linux baseline's programs and the script
    /// that runs them (`bench::baseline_archive`).
    Baseline,
    /// The usual one plus Debian's `stress-ng` and the script of
    /// [`stress_ng_runs_without_freezing_the_kernel`] (`stress.rs`).
    Stress,
    /// The usual one plus the Debian programs of `programs.rs` and their
    /// script.
    Programs,
    /// The usual one plus `/etc/spindle-exec`: the command `exec` mode
    /// runs, as `./x run --exec` gives it.
    Exec(&'static str),
}

/// The kernel fuzz cases `./x test` runs (`./x fuzz` runs many more).
pub const TEST_KERNEL_FUZZ: fuzz::Cases = fuzz::Cases {
    seed: fuzz::DEFAULT_SEED,
    first: 0,
    count: 1_000,
};

/// Every QEMU scenario, in the order `./x test` runs them.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "kernel_tests_pass",
        mode: "test",
        check: kernel_tests_pass,
        archive: Archive::Boot,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "run_boots_into_busybox_sh_with_the_kernel_shell_reachable",
        mode: "linux",
        check: run_boots_into_busybox_sh,
        archive: Archive::Boot,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "bash_static_starts_interactively_from_busybox_sh",
        mode: "linux",
        check: bash_starts_interactively,
        archive: Archive::Boot,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "ctrl_c_and_ctrl_z_reach_the_foreground_job_of_busybox_sh",
        mode: "linux",
        check: ctrl_c_and_ctrl_z_reach_the_foreground_job,
        archive: Archive::Boot,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "every_baseline_program_runs_unmodified_and_prints_its_figures",
        mode: "exec",
        check: every_baseline_program_runs,
        archive: Archive::Baseline,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "the_network_interface_serves_udp_echo_tcp_and_http_both_ways",
        mode: "linux",
        check: network_serves_udp_echo_tcp_and_http,
        archive: Archive::Boot,
        forwards: &[
            (Protocol::Udp, 7),
            (Protocol::Udp, 5300),
            (Protocol::Udp, 5353),
            (Protocol::Tcp, 8080),
            (Protocol::Tcp, 9000),
            (Protocol::Tcp, 9100),
        ],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "frames_from_a_raw_peer_are_answered_and_hostile_ones_dropped",
        mode: "linux",
        check: raw_peer_frames,
        archive: Archive::Boot,
        forwards: &[],
        raw_link: true,
        nic_behind_bridge: true,
        image: Image::Testing,
    },
    Scenario {
        name: "shell_help_lists_every_command",
        mode: "shell",
        check: shell_help_lists_every_command,
        archive: Archive::Boot,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "shell_mem_reports_frames_and_heap",
        mode: "shell",
        check: shell_mem_reports_frames_and_heap,
        archive: Archive::Boot,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "shell_threads_lists_idle_and_shell",
        mode: "shell",
        check: shell_threads_lists_idle_and_shell,
        archive: Archive::Boot,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "shell_uptime_advances",
        mode: "shell",
        check: shell_uptime_advances,
        archive: Archive::Boot,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "shell_unknown_command_is_reported",
        mode: "shell",
        check: shell_unknown_command_is_reported,
        archive: Archive::Boot,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "shell_halt_exits_qemu_with_success",
        mode: "shell",
        check: shell_halt_exits_qemu_with_success,
        archive: Archive::Boot,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "shell_ext_load_hello_logs_and_unloads",
        mode: "shell",
        check: shell_ext_load_hello_logs_and_unloads,
        archive: Archive::Boot,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "shell_survives_runaway_and_faulting_extensions",
        mode: "shell",
        check: shell_survives_runaway_and_faulting_extensions,
        archive: Archive::Boot,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "shell_regression_modules_are_contained",
        mode: "shell",
        check: shell_regression_modules_are_contained,
        archive: Archive::Boot,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "shell_runs_user_programs",
        mode: "shell",
        check: shell_runs_user_programs,
        archive: Archive::Boot,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "kernel_fuzz_cases_are_refused_or_contained",
        mode: "fuzz",
        check: kernel_fuzz_cases_are_refused_or_contained,
        archive: Archive::KernelFuzz,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "boot_page_fault_is_reported_and_fails",
        mode: "crash",
        check: boot_page_fault_is_reported_and_fails,
        archive: Archive::Boot,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "kernel_stack_overflow_is_a_reported_double_fault",
        mode: "overflow",
        check: kernel_stack_overflow_is_a_reported_double_fault,
        archive: Archive::Boot,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "stress_ng_runs_without_freezing_the_kernel",
        mode: "exec",
        check: stress_ng_runs_without_freezing_the_kernel,
        archive: Archive::Stress,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "debian_programs_do_real_work",
        mode: "exec",
        check: debian_programs_do_real_work,
        archive: Archive::Programs,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Production,
    },
    Scenario {
        name: "boot_stack_overflow_is_a_reported_double_fault",
        mode: "boot-overflow",
        check: kernel_stack_overflow_is_a_reported_double_fault,
        archive: Archive::Boot,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Testing,
    },
    Scenario {
        name: "the_production_image_runs_a_command_as_x_run_does",
        mode: "exec",
        check: the_production_image_runs_a_command_as_x_run_does,
        archive: Archive::Exec(PRODUCTION_COMMAND),
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Production,
    },
    Scenario {
        name: "the_production_image_has_no_test_modes",
        mode: "test",
        check: the_production_image_has_no_test_modes,
        archive: Archive::Boot,
        forwards: &[],
        raw_link: false,
        nic_behind_bridge: false,
        image: Image::Production,
    },
];

/// What [`the_production_image_runs_a_command_as_x_run_does`] runs: a
/// dynamically linked Debian program, a pipe and an exit status.
const PRODUCTION_COMMAND: &str =
    "/opt/debian/bin/ls /opt/debian/bin | /bin/grep -c . | sed 's/^/programs: /'; exit 7";

/// The production image (`./x run`'s) boots and runs a command on the
/// Linux personality: Debian's `ls` through a pipe prints its count of
/// programs (more than 0), and the command's status, 7, becomes QEMU's
/// (exec mode's exit through the status device).
fn the_production_image_runs_a_command_as_x_run_does(guest: &mut Guest) -> Result<()> {
    let exit = guest.wait_exit(None)?;
    let log = guest.serial_log();
    let count = log
        .lines()
        .find_map(|line| line.trim().strip_prefix("programs: "))
        .ok_or_else(|| format!("no `programs: N` line from the command ({exit})"))?;
    match count.trim().parse::<u32>() {
        Ok(count) if count > 0 => {}
        _ => return Err(format!("`programs: {count}` is not a positive count").into()),
    }
    if exit.program_status() != Some(7) {
        return Err(format!("expected the command's status 7 as QEMU's, got {exit}").into());
    }
    Ok(())
}

/// The production image has none of the test code: asked for the in-kernel
/// tests, it says so and fails instead of running any.
fn the_production_image_has_no_test_modes(guest: &mut Guest) -> Result<()> {
    let exit = guest.wait_exit(None)?;
    let log = guest.serial_log();
    expect_in("(serial log)", &log, "this image has no test code")?;
    if log.contains("running ") && log.contains(" tests") {
        return Err("the production image started in-kernel tests".into());
    }
    if exit != GuestExit::Failure {
        return Err(format!("expected exit status 35 for an unknown mode, got {exit}").into());
    }
    Ok(())
}

/// The stress scenario's deadline: the freeze's reproduction, the fork
/// program and each stressor of [`crate::stress::TEST_STRESSORS`] at
/// about ten seconds under emulation, with room to spare.
const STRESS_DEADLINE: Duration = Duration::from_secs(420);

/// The script of the stress scenario: first the sequence that froze the
/// kernel (issue 27: stress-ng with its output in a file beside a
/// background job of the same shell), then `user/forkheap.c` the same
/// way (a large process forking, which made the frame allocator wait
/// for itself), then the short stressor set.
fn stress_script() -> String {
    let mut script = String::from(
        "cd /tmp\n\
         (sleep 8; echo tick8) &\n\
         /stress/lib/ld-linux-x86-64.so.2 --library-path /stress/lib /stress/bin/stress-ng \
         --sigpipe 1 --timeout 3s --metrics-brief > /tmp/o 2>&1\n\
         echo \"reproduction rc=$?\"\n\
         wait\n\
         (sleep 2; echo tick2) &\n\
         /bin/forkheap 96 > /tmp/forkheap.out 2>&1\n\
         echo \"forkheap rc=$?\"\n\
         wait\n\
         cat /tmp/forkheap.out\n",
    );
    script.push_str(&crate::stress::guest_script(crate::stress::TEST_STRESSORS));
    script
}

/// The boot archive of the stress scenario.
fn stress_archive() -> Result<PathBuf> {
    let mut files = crate::stress::stress_files()?;
    files.push(("etc/spindle-exec".to_string(), stress_script().into_bytes()));
    crate::image::build_archive_with(
        files,
        &crate::repo_root().join("target/initrd-stress-test.cpio"),
    )
}

/// Debian's `stress-ng` on Spindle as issue 27 found it freezing the
/// kernel: the reproduction prints `reproduction rc=0` and the
/// background job's `tick8`; `user/forkheap.c` forks a 96 MiB process
/// beside a background job and every child is as expected; every
/// stressor of the short set passes (`--verify`), none freezes the
/// kernel (each line within `stress::STRESSOR_LIMIT`) or panics it.
fn stress_ng_runs_without_freezing_the_kernel(guest: &mut Guest) -> Result<()> {
    let limit = Some(crate::stress::STRESSOR_LIMIT);
    for (expected, what) in [
        (
            "reproduction rc=0",
            "stress-ng --sigpipe with its output in a file and a background job",
        ),
        ("tick8", "the background job beside stress-ng"),
        ("forkheap rc=0", "user/forkheap.c beside a background job"),
        ("tick2", "the background job beside forkheap"),
        ("every child as expected", "forkheap's own check"),
    ] {
        guest
            .wait_for(expected, 0, limit)
            .map_err(|error| format!("{what}: no `{expected}`: {error}"))?;
    }
    let mut failed = Vec::new();
    let mut from = 0;
    for name in crate::stress::TEST_STRESSORS {
        let at = guest
            .wait_for(&format!("stress {name} "), from, limit)
            .map_err(|error| format!("stressor {name} froze or panicked the kernel: {error}"))?;
        from = guest.wait_for("\n", at, limit)?;
        match crate::stress::verdict_in(&guest.serial_log(), name) {
            Some(crate::stress::Verdict::Pass) => {}
            other => failed.push(format!(
                "{name} ({})",
                other.map_or("no verdict", |verdict| verdict.word())
            )),
        }
    }
    let exit = guest.wait_exit(limit)?;
    if !failed.is_empty() {
        return Err(format!("stressors that did not pass: {}", failed.join(", ")).into());
    }
    if exit.program_status() != Some(0) {
        return Err(format!("the script did not end with status 0: {exit}").into());
    }
    Ok(())
}

/// How long the Debian programs' scenario may take under TCG (Python
/// and tcc start slowly; sqlite3 writes a thousand rows).
const PROGRAMS_DEADLINE: Duration = Duration::from_secs(600);

/// The boot archive of [`debian_programs_do_real_work`].
fn programs_archive() -> Result<PathBuf> {
    let mut files = crate::programs::program_files()?;
    files.push((
        "etc/spindle-exec".to_string(),
        crate::programs::guest_script().into_bytes(),
    ));
    crate::image::build_archive_with(
        files,
        &crate::repo_root().join("target/initrd-programs.cpio"),
    )
}

/// Debian's `sqlite3`, GNU `make` and `tar` (with gzip and xz),
/// `python3`, `perl` and `tcc` do real work on the production image
/// (`programs.rs` says what), and each prints the known answer.
fn debian_programs_do_real_work(guest: &mut Guest) -> Result<()> {
    guest
        .wait_for("programs done", 0, None)
        .map_err(|error| format!("the script did not finish: {error}"))?;
    let log = guest.serial_log();
    let mut from = 0;
    let mut missing = Vec::new();
    for expected in crate::programs::EXPECTED {
        match log[from..].find(expected) {
            Some(at) => from += at + expected.len(),
            None => missing.push(*expected),
        }
    }
    if !missing.is_empty() {
        let failed: Vec<&str> = log
            .lines()
            .filter(|line| line.starts_with("program failed") || line.starts_with("  | "))
            .collect();
        return Err(format!(
            "missing answers: {}; what failed: {}",
            missing.join(" / "),
            failed.join(" | ")
        )
        .into());
    }
    let exit = guest.wait_exit(None)?;
    if exit.program_status() != Some(0) {
        return Err(format!("the script did not end with status 0: {exit}").into());
    }
    Ok(())
}

/// Options shared by every scenario of one `./x test`.
pub struct ScenarioOptions {
    /// The testing kernel image's ELF, if a selected scenario boots it.
    pub kernel: Option<PathBuf>,
    /// The production image's ELF, if a selected scenario boots it.
    pub production_kernel: Option<PathBuf>,
    /// Accelerator.
    pub accel: Accel,
    /// Wall-clock deadline of each run.
    pub timeout: Duration,
}

/// Runs one scenario and prints its verdict line; returns whether it passed.
pub fn run_scenario(scenario: &Scenario, options: &ScenarioOptions) -> bool {
    let started_at = Instant::now();
    let kernel = match scenario.image {
        Image::Testing => options.kernel.as_ref(),
        Image::Production => options.production_kernel.as_ref(),
    };
    let Some(kernel) = kernel else {
        println!(
            "scenario {} ... FAILED (0.0 s)\n  reason: its kernel image was not built",
            scenario.name
        );
        return false;
    };
    let mut config = BootConfig::new(kernel, scenario.mode, options.accel);
    config.nic_behind_bridge = scenario.nic_behind_bridge;
    let mut timeout = options.timeout;
    let prepared = match scenario.archive {
        Archive::Boot => Ok(()),
        Archive::KernelFuzz => fuzz::prepare_kernel_archive(TEST_KERNEL_FUZZ).map(|archive| {
            config.initrd = Some(archive);
            timeout = fuzz::kernel_deadline(timeout, TEST_KERNEL_FUZZ.count);
        }),
        Archive::Baseline => crate::bench::baseline_archive().map(|(archive, _)| {
            config.initrd = Some(archive);
        }),
        Archive::Exec(command) => crate::image::build_archive_with(
            vec![("etc/spindle-exec".to_string(), command.as_bytes().to_vec())],
            &crate::repo_root().join("target/initrd-exec-test.cpio"),
        )
        .map(|archive| {
            config.initrd = Some(archive);
            config.append.push_str(" spindle.quiet");
        }),
        Archive::Programs => programs_archive().map(|archive| {
            config.initrd = Some(archive);
            config.append.push_str(" spindle.quiet");
            timeout = timeout.max(PROGRAMS_DEADLINE);
        }),
        Archive::Stress => stress_archive().map(|archive| {
            config.initrd = Some(archive);
            config.append.push_str(" spindle.quiet");
            timeout = timeout.max(STRESS_DEADLINE);
        }),
    };
    let forwards: Result<Vec<Forward>> = scenario
        .forwards
        .iter()
        .map(|&(protocol, port)| Forward::pick(protocol, port))
        .collect();
    let prepared = prepared.and_then(|()| {
        let forwards = forwards?;
        config.forwards = forwards.iter().map(Forward::hostfwd).collect();
        let link = if scenario.raw_link {
            let link = netpeer::RawLink::open()?;
            config.raw_link = Some((link.qemu_port, link.our_port()?));
            Some(link)
        } else {
            None
        };
        Ok((forwards, link))
    });
    let booted = prepared.and_then(|(forwards, link)| {
        let mut guest = Guest::boot(&config, timeout)?;
        guest.forwards = forwards;
        guest.raw_link = link;
        Ok(guest)
    });
    let (outcome, log) = match booted {
        Ok(mut guest) => {
            let outcome = (scenario.check)(&mut guest);
            guest.kill();
            (outcome, guest.full_log())
        }
        Err(error) => (Err(error), String::new()),
    };
    let seconds = started_at.elapsed().as_secs_f64();
    let log_path = save_log(scenario.name, &log);
    match outcome {
        Ok(()) => {
            println!("scenario {} ... ok ({seconds:.1} s)", scenario.name);
            true
        }
        Err(error) => {
            println!("scenario {} ... FAILED ({seconds:.1} s)", scenario.name);
            println!("  reason: {error}");
            print_log(scenario.name, &log, log_path.as_deref());
            false
        }
    }
}

/// Prints a guest's serial log between markers, so CI logs show it.
pub fn print_log(name: &str, log: &str, saved_at: Option<&Path>) {
    println!("---- serial log of {name} ({} bytes) ----", log.len());
    print!("{log}");
    if !log.ends_with('\n') {
        println!();
    }
    match saved_at {
        Some(path) => println!("---- end of serial log (kept in {}) ----", path.display()),
        None => println!("---- end of serial log ----"),
    }
}

/// Writes a run's serial log to [`LOG_DIRECTORY`]; returns its path.
pub fn save_log(name: &str, log: &str) -> Option<PathBuf> {
    let directory = repo_root().join(LOG_DIRECTORY);
    let path = directory.join(format!("{name}.log"));
    fs::create_dir_all(&directory).ok()?;
    fs::write(&path, log).ok()?;
    Some(path)
}

/// `spindle.mode=test`: every in-kernel test passes, the summary says
/// `N passed, 0 failed`, and QEMU exits with 33.
fn kernel_tests_pass(guest: &mut Guest) -> Result<()> {
    let exit = guest.wait_exit(None)?;
    let log = guest.serial_log();
    let results = parse::parse_test_results(&log);
    for result in &results {
        match (result.is_ok, result.detail.is_empty()) {
            (true, _) => println!("    test {} ... ok", result.name),
            (false, true) => println!("    test {} ... FAILED", result.name),
            (false, false) => println!("    test {} ... FAILED: {}", result.name, result.detail),
        }
    }
    let failed_names: Vec<&str> = results
        .iter()
        .filter(|result| !result.is_ok)
        .map(|result| result.name.as_str())
        .collect();
    let summary = parse::find_test_summary(&log);
    if let Some(summary) = summary {
        println!(
            "    kernel: {} passed, {} failed",
            summary.passed, summary.failed
        );
    }
    if !failed_names.is_empty() {
        return Err(format!(
            "in-kernel tests failed: {} ({exit})",
            failed_names.join(", ")
        )
        .into());
    }
    let summary =
        summary.ok_or_else(|| format!("no `N passed, N failed` line from the kernel ({exit})"))?;
    if summary.failed > 0 {
        return Err(format!("kernel reports {} failed tests ({exit})", summary.failed).into());
    }
    let planned = parse::find_planned_tests(&log)
        .ok_or_else(|| format!("no `running N tests` line from the kernel ({exit})"))?;
    if planned == 0 || summary.passed != planned as u64 || results.len() != planned {
        return Err(format!(
            "the kernel planned {planned} tests, reported {} results and {} passed",
            results.len(),
            summary.passed
        )
        .into());
    }
    if exit != GuestExit::Success {
        return Err(format!("expected exit status 33 after the tests, got {exit}").into());
    }
    Ok(())
}

/// `help` names every shell command.
/// The Linux baseline's programs (`../shared/baseline/bench/`, static
/// musl, unmodified; all but the socket ones) run under busybox `sh` as
/// the baseline's `/init` runs them: none fails, each prints its
/// `bench NAME <ns> ns` line with a positive figure, and QEMU exits with
/// the script's status 0.
fn every_baseline_program_runs(guest: &mut Guest) -> Result<()> {
    let exit = guest.wait_exit(None)?;
    let log = guest.full_log();
    if let Some(failure) = log.lines().find(|line| line.contains("baseline-fail")) {
        return Err(format!("a baseline program failed: {}", failure.trim()).into());
    }
    let list_path = crate::repo_root().join("../shared/baseline/benchmarks.txt");
    let list = std::fs::read_to_string(&list_path)
        .map_err(|error| format!("{}: {error}", list_path.display()))?;
    let figures = crate::bench::program_figures(&log);
    let mut expected: Vec<String> = crate::bench::baseline_programs_run(&list)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    expected.extend(
        crate::bench::LINUX_SUITE_OURS
            .iter()
            .map(|name| name.to_string()),
    );
    if expected.len() < 10 {
        return Err(format!(
            "only {} baseline programs are listed in {}",
            expected.len(),
            list_path.display()
        )
        .into());
    }
    for name in &expected {
        match figures.iter().find(|(figure, _)| figure == name) {
            Some((_, ns)) if *ns > 0.0 => {}
            Some((_, ns)) => return Err(format!("{name} printed the figure {ns} ns").into()),
            None => return Err(format!("{name} printed no `bench {name} ... ns` line").into()),
        }
    }
    if exit.program_status() != Some(0) {
        return Err(format!("the script did not end with status 0: {exit}").into());
    }
    Ok(())
}

fn shell_help_lists_every_command(guest: &mut Guest) -> Result<()> {
    guest.wait_for_prompt()?;
    let reply = guest.command("help")?;
    let missing: Vec<&str> = SHELL_COMMANDS
        .iter()
        .copied()
        .filter(|command| !contains_word(&reply, command))
        .collect();
    if !missing.is_empty() {
        return Err(format!("`help` does not list {missing:?}; reply was {reply:?}").into());
    }
    Ok(())
}

/// `mem` reports frames and heap with numbers.
fn shell_mem_reports_frames_and_heap(guest: &mut Guest) -> Result<()> {
    guest.wait_for_prompt()?;
    let reply = guest.command("mem")?;
    for word in ["frames", "heap"] {
        if !contains_word(&reply, word) {
            return Err(format!("`mem` reply lacks `{word}`: {reply:?}").into());
        }
    }
    if !parse::contains_number(&reply) {
        return Err(format!("`mem` reply has no numbers: {reply:?}").into());
    }
    Ok(())
}

/// `threads` lists at least the idle thread and the shell's thread.
fn shell_threads_lists_idle_and_shell(guest: &mut Guest) -> Result<()> {
    guest.wait_for_prompt()?;
    let reply = guest.command("threads")?;
    let idle_line = reply.lines().position(|line| line.contains("idle"));
    let shell_line = reply.lines().position(|line| line.contains("shell"));
    match (idle_line, shell_line) {
        (Some(idle), Some(shell)) if idle != shell => Ok(()),
        _ => Err(
            format!("`threads` should list `idle` and `shell` on separate lines: {reply:?}").into(),
        ),
    }
}

/// `uptime` shows more milliseconds the second time.
fn shell_uptime_advances(guest: &mut Guest) -> Result<()> {
    guest.wait_for_prompt()?;
    let first_reply = guest.command("uptime")?;
    thread::sleep(UPTIME_PAUSE);
    let second_reply = guest.command("uptime")?;
    let milliseconds = |reply: &str| {
        parse::parse_milliseconds(reply)
            .ok_or_else(|| format!("`uptime` reply has no `<number> ms`: {reply:?}"))
    };
    let (first, second) = (milliseconds(&first_reply)?, milliseconds(&second_reply)?);
    if second <= first {
        return Err(format!("uptime did not advance: {first} ms, then {second} ms").into());
    }
    Ok(())
}

/// What `./x run` boots: Debian's busybox `sh` on the serial console. A
/// pipeline through an external applet, a builtin's arithmetic, the
/// kernel shell's `uptime` through `/bin/spindle`, and `exit`, which
/// halts the machine cleanly.
fn run_boots_into_busybox_sh(guest: &mut Guest) -> Result<()> {
    const PROMPT: &str = "/ # ";
    let prompt = guest.wait_for(PROMPT, 0, None)?;
    let start = guest.serial_len().max(prompt);
    guest.send("echo $((6 * 7)) | wc -c; spindle uptime\n")?;
    guest.wait_for(PROMPT, start + 1, None)?;
    let log = guest.serial_log();
    let reply = &log[start.min(log.len())..];
    if !reply.contains("\n3\n") {
        return Err(format!("`echo $((6 * 7)) | wc -c` did not print 3: {reply:?}").into());
    }
    if parse::parse_milliseconds(reply).is_none() {
        return Err(format!("`spindle uptime` printed no `<number> ms`: {reply:?}").into());
    }
    guest.send("exit\n")?;
    match guest.wait_exit(None)? {
        GuestExit::Success => Ok(()),
        other => Err(format!("`exit` did not halt the machine cleanly: {other}").into()),
    }
}

/// Runs `line` at busybox's prompt and returns what it printed (up to
/// the next prompt).
fn sh(guest: &mut Guest, line: &str, within: Option<Duration>) -> Result<String> {
    const PROMPT: &str = "/ # ";
    let start = guest.serial_len();
    guest.send(&format!("{line}\n"))?;
    let end = guest.wait_for(PROMPT, start + 1, within)?;
    let log = guest.serial_log();
    Ok(log[start.min(log.len())..end.min(log.len())].to_string())
}

/// The virtio-net interface on QEMU's user network, from the host through
/// forwarded ports: the Wasm UDP echo (`udp-echo`, a guarded handler on
/// `UDP.PacketArrived`) answers datagrams and stops when unloaded; the
/// kernel's forwarder relays datagrams to a server on the host and back,
/// and a TCP connection to an echo server on the host; a Linux program's
/// TCP server (busybox `httpd`) serves a megabyte intact, and so does the
/// HTTP server as a Wasm extension (`http-server`, a 404 too);
/// two megabytes uploaded to busybox `nc` arrive intact; busybox `wget`
/// in the guest fetches a megabyte from a server on the host.
fn network_serves_udp_echo_tcp_and_http(guest: &mut Guest) -> Result<()> {
    guest.wait_for("/ # ", 0, None)?;
    let loaded = sh(guest, "spindle ext load udp-echo", None)?;
    expect_in("spindle ext load udp-echo", &loaded, "answering UDP port 7")?;
    let udp = guest.host_port(Protocol::Udp, 7)?;
    for round in 0..5u8 {
        let payload: Vec<u8> = (0..(100 + usize::from(round) * 300))
            .map(|index| (index as u8) ^ round)
            .collect();
        // The first datagram may wait for ARP on QEMU's side: try thrice.
        let mut answer = None;
        for _ in 0..3 {
            answer = netpeer::udp_exchange(udp, &payload, Duration::from_secs(3))?;
            if answer.is_some() {
                break;
            }
        }
        match answer {
            Some(echo) if echo == payload => {}
            Some(echo) => {
                return Err(format!(
                    "datagram {round}: the echo differs ({} bytes sent, {} back)",
                    payload.len(),
                    echo.len()
                )
                .into())
            }
            None => return Err(format!("datagram {round}: no echo from the guest").into()),
        }
    }
    let unloaded = sh(guest, "spindle ext unload udp-echo", None)?;
    expect_in("spindle ext unload udp-echo", &unloaded, "unloaded")?;
    if netpeer::udp_exchange(udp, b"anyone?", Duration::from_secs(1))?.is_some() {
        return Err("a datagram was echoed after udp-echo was unloaded".into());
    }

    // The Wasm RPC service: add(40, 2), and an unknown procedure.
    let loaded = sh(guest, "spindle ext load udp-rpc", None)?;
    expect_in(
        "spindle ext load udp-rpc",
        &loaded,
        "serving calls on UDP port 5300",
    )?;
    let rpc = guest.host_port(Protocol::Udp, 5300)?;
    let mut call = Vec::new();
    call.extend_from_slice(&1u32.to_le_bytes());
    call.extend_from_slice(&77u32.to_le_bytes());
    call.extend_from_slice(&40u64.to_le_bytes());
    call.extend_from_slice(&2u64.to_le_bytes());
    let answer = netpeer::udp_exchange(rpc, &call, Duration::from_secs(3))?
        .ok_or("the RPC service did not answer add(40, 2)")?;
    let mut expected = 77u32.to_le_bytes().to_vec();
    expected.extend_from_slice(&0u32.to_le_bytes());
    expected.extend_from_slice(&42u64.to_le_bytes());
    if answer != expected {
        return Err(format!("add(40, 2) was answered with {answer:02x?}").into());
    }
    let unknown = [9u32.to_le_bytes(), 78u32.to_le_bytes()].concat();
    let answer = netpeer::udp_exchange(rpc, &unknown, Duration::from_secs(3))?
        .ok_or("the RPC service did not answer procedure 9")?;
    if answer.get(4..8) != Some(&1u32.to_le_bytes()[..]) {
        return Err(format!("procedure 9 was answered with {answer:02x?}, not status 1").into());
    }

    // SPIN's forwarder: datagrams for port 5353 relayed, in the kernel, to
    // a server on the host (10.0.2.2 from the guest), and its answers back.
    let responder = netpeer::HostUdpResponder::start(b"relayed:")?;
    let forwarding = sh(
        guest,
        &format!("spindle net forward udp 5353 10.0.2.2:{}", responder.port),
        None,
    )?;
    expect_in(
        "spindle net forward",
        &forwarding,
        "forwarding UDP port 5353",
    )?;
    let forwarded = guest.host_port(Protocol::Udp, 5353)?;
    let mut answer = None;
    for _ in 0..3 {
        answer = netpeer::udp_exchange(forwarded, b"through the kernel", Duration::from_secs(3))?;
        if answer.is_some() {
            break;
        }
    }
    match answer {
        Some(answer) if answer == b"relayed:through the kernel" => {}
        Some(answer) => {
            return Err(format!(
                "the forwarder answered {:?}",
                String::from_utf8_lossy(&answer)
            )
            .into())
        }
        None => return Err("nothing came back through the forwarder".into()),
    }
    let stopped = sh(guest, "spindle net unforward udp 5353", None)?;
    expect_in("spindle net unforward", &stopped, "packets relayed")?;
    drop(responder);

    // The forwarder on TCP: a connection to port 9100 redirected, segment
    // by segment, to an echo server on the host; half a megabyte each way.
    let echo = netpeer::HostTcpEcho::start()?;
    let forwarding = sh(
        guest,
        &format!("spindle net forward tcp 9100 10.0.2.2:{}", echo.port),
        None,
    )?;
    expect_in(
        "spindle net forward tcp",
        &forwarding,
        "forwarding TCP port 9100",
    )?;
    let data = netpeer::pattern(512 << 10);
    let back = netpeer::tcp_round_trip(
        guest.host_port(Protocol::Tcp, 9100)?,
        &data,
        Duration::from_secs(60),
    )?;
    if back != data {
        return Err(format!(
            "through the TCP forwarder: {} bytes came back for the {} sent, {}",
            back.len(),
            data.len(),
            if back.len() == data.len() {
                "different"
            } else {
                "a different count"
            }
        )
        .into());
    }
    let echoed = echo.finish()?;
    if echoed != data.len() as u64 {
        return Err(format!(
            "the host's echo server saw {echoed} bytes, not {}",
            data.len()
        )
        .into());
    }
    let stopped = sh(guest, "spindle net unforward tcp 9100", None)?;
    expect_in("spindle net unforward tcp", &stopped, "packets relayed")?;

    // A Linux program's TCP server, reached from the host.
    let started = sh(
        guest,
        "mkdir -p /tmp/www && seq 1 150000 > /tmp/www/numbers && httpd -p 8080 -h /tmp/www && echo httpd-started",
        None,
    )?;
    expect_in("httpd", &started, "httpd-started")?;
    let http = guest.host_port(Protocol::Tcp, 8080)?;
    let _ = netpeer::connect_when_up(http, Duration::from_secs(10))?;
    let (status, body) = netpeer::http_get(http, "/numbers", Duration::from_secs(60))?;
    if !status.contains(" 200") {
        return Err(format!("GET /numbers: {status}").into());
    }
    let expected: String = (1..=150_000).map(|n| format!("{n}\n")).collect();
    if body != expected.as_bytes() {
        return Err(format!(
            "GET /numbers: {} bytes, not the {} of `seq 1 150000`",
            body.len(),
            expected.len()
        )
        .into());
    }

    // The same file from the HTTP server as a Wasm extension, on port
    // 8080 once busybox's is gone: a megabyte of /tmp (read from the file
    // by the kernel as it is sent), and a missing file.
    sh(guest, "killall httpd; sleep 1", None)?;
    let loaded = sh(
        guest,
        "spindle ext load http-server native files=/tmp/www",
        None,
    )?;
    expect_in(
        "spindle ext load http-server",
        &loaded,
        "serving HTTP on TCP port 8080",
    )?;
    let _ = netpeer::connect_when_up(http, Duration::from_secs(10))?;
    let (status, body) = netpeer::http_get(http, "/numbers", Duration::from_secs(60))?;
    if !status.contains(" 200") || body != expected.as_bytes() {
        return Err(format!(
            "GET /numbers from the Wasm server: {status}, {} bytes, not the {} of `seq 1 150000`",
            body.len(),
            expected.len()
        )
        .into());
    }
    let (status, _) = netpeer::http_get(http, "/missing", Duration::from_secs(20))?;
    if !status.contains(" 404") {
        return Err(format!("GET /missing from the Wasm server: {status}").into());
    }
    let unloaded = sh(guest, "spindle ext unload http-server", None)?;
    expect_in("spindle ext unload http-server", &unloaded, "unloaded")?;

    // Two megabytes up, to busybox nc.
    sh(guest, "nc -l -p 9000 > /tmp/upload &", None)?;
    let upload = netpeer::pattern(2 << 20);
    let nc = guest.host_port(Protocol::Tcp, 9000)?;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match netpeer::tcp_send(nc, &upload, Duration::from_secs(60)) {
            Ok(()) => break,
            Err(error) if Instant::now() >= deadline => {
                return Err(format!("uploading to nc: {error}").into())
            }
            Err(_) => thread::sleep(Duration::from_millis(300)),
        }
    }
    let sum = sh(
        guest,
        "wait; md5sum /tmp/upload; wc -c < /tmp/upload",
        Some(Duration::from_secs(60)),
    )?;
    expect_in("md5sum /tmp/upload", &sum, &netpeer::md5_hex(&upload)?)?;

    // One megabyte down, by busybox wget from the host.
    let download = netpeer::pattern(1 << 20);
    let server = HostHttpServer::start(download.clone())?;
    let fetched = sh(
        guest,
        &format!(
            "wget -q -O /tmp/down http://10.0.2.2:{}/blob && md5sum /tmp/down",
            server.port
        ),
        Some(Duration::from_secs(60)),
    )?;
    server.finish()?;
    expect_in(
        "wget from the host",
        &fetched,
        &netpeer::md5_hex(&download)?,
    )?;
    let counters = sh(guest, "spindle net", None)?;
    expect_in("spindle net", &counters, "device: receive interrupts")
}

/// The NIC on a raw link whose other end is the harness, behind a PCI
/// bridge (found on bus 1): an ARP request
/// for the guest's address is answered; ICMP echo requests (ping) are
/// answered with the same identifier, sequence and data and valid
/// checksums; the Wasm UDP echo answers a datagram; the Wasm send-side
/// filter (`egress-filter`, on `UDP.PacketSend`) keeps its answers to
/// port 9 off the wire until unloaded; then 2,000 hostile
/// frames (random bytes, truncations, bit flips in good frames) go in
/// through the device, and the guest still answers ping and counts them
/// as malformed.
fn raw_peer_frames(guest: &mut Guest) -> Result<()> {
    guest.wait_for("/ # ", 0, None)?;
    // The NIC sits behind a PCI-to-PCI bridge in this scenario: found on
    // the bridge's bus, and everything below goes through the bridge.
    if !guest.full_log().contains("net: virtio-net at PCI 01:03.0") {
        return Err("the NIC behind the PCI bridge (01:03.0) was not brought up".into());
    }
    let loaded = sh(guest, "spindle ext load udp-echo", None)?;
    expect_in("spindle ext load udp-echo", &loaded, "answering UDP port 7")?;
    let link = guest
        .raw_link
        .take()
        .ok_or("the scenario has no raw link")?;
    let is_type = |ethertype: u16| {
        move |frame: &[u8]| frame.get(12..14) == Some(&ethertype.to_be_bytes()[..])
    };
    link.send(&netpeer::arp_request(netpeer::GUEST_IP))?;
    let reply = link
        .receive_matching(Duration::from_secs(10), is_type(0x0806))?
        .ok_or("no ARP reply for 10.0.2.15")?;
    if reply.get(20..22) != Some(&[0, 2][..]) || reply.get(22..28) != Some(&netpeer::GUEST_MAC[..])
    {
        return Err(format!("a wrong ARP reply: {}", hex(&reply)).into());
    }
    let ping = |link: &netpeer::RawLink, sequence: u16| -> Result<()> {
        link.send(&netpeer::echo_request(
            0x5350,
            sequence,
            b"ping from the harness",
        ))?;
        let reply = link
            .receive_matching(Duration::from_secs(10), |frame| {
                frame.get(23) == Some(&1) && frame.get(34) == Some(&0)
            })?
            .ok_or_else(|| format!("no echo reply to ping {sequence}"))?;
        let message = &reply[34..];
        if netpeer::internet_checksum(&reply[14..34]) != 0
            || netpeer::internet_checksum(message) != 0
            || message[4..6] != 0x5350u16.to_be_bytes()
            || message[6..8] != sequence.to_be_bytes()
            || &message[8..] != b"ping from the harness"
        {
            return Err(format!("a wrong echo reply: {}", hex(&reply)).into());
        }
        Ok(())
    };
    for sequence in 1..=3 {
        ping(&link, sequence)?;
    }
    link.send(&netpeer::udp_frame(40000, 7, b"echo over the raw link"))?;
    let echo = link
        .receive_matching(Duration::from_secs(10), |frame| frame.get(23) == Some(&17))?
        .ok_or("no answer from the Wasm UDP echo")?;
    if echo.get(42..) != Some(&b"echo over the raw link"[..])
        || echo.get(36..38) != Some(&40000u16.to_be_bytes()[..])
    {
        return Err(format!("a wrong UDP echo: {}", hex(&echo)).into());
    }
    // The send side: egress-filter refuses datagrams to port 9 on
    // `UDP.PacketSend`, so the echo's answer to a client on port 9 never
    // reaches the wire, while a client on port 10 is answered; unloaded,
    // port 9 is answered again.
    let loaded = sh(guest, "spindle ext load egress-filter", None)?;
    expect_in(
        "spindle ext load egress-filter",
        &loaded,
        "refusing UDP datagrams to port 9",
    )?;
    let echo_to = |link: &netpeer::RawLink, client_port: u16, wait: Duration| {
        link.send(&netpeer::udp_frame(client_port, 7, b"who answers?"))?;
        link.receive_matching(wait, |frame| {
            frame.get(23) == Some(&17) && frame.get(36..38) == Some(&client_port.to_be_bytes()[..])
        })
    };
    if let Some(answer) = echo_to(&link, 9, Duration::from_secs(3))? {
        return Err(format!(
            "a datagram to port 9 left through egress-filter: {}",
            hex(&answer)
        )
        .into());
    }
    echo_to(&link, 10, Duration::from_secs(10))?
        .ok_or("with egress-filter loaded, no echo to port 10 either")?;
    let refused = sh(guest, "spindle ext call egress-filter refused", None)?;
    expect_in(
        "spindle ext call egress-filter refused",
        &refused,
        "refused returned 1 ",
    )?;
    let counted = sh(guest, "spindle ext call egress-filter sent_udp", None)?;
    expect_in(
        "spindle ext call egress-filter sent_udp",
        &counted,
        "sent_udp returned 1 ",
    )?;
    let unloaded = sh(guest, "spindle ext unload egress-filter", None)?;
    expect_in("spindle ext unload egress-filter", &unloaded, "unloaded")?;
    echo_to(&link, 9, Duration::from_secs(10))?
        .ok_or("egress-filter unloaded, still no echo to port 9")?;

    let seeds = [
        netpeer::echo_request(1, 1, b"seed"),
        netpeer::udp_frame(1, 7, b"seed"),
        netpeer::arp_request(netpeer::GUEST_IP),
    ];
    let mut state = 0x853c_49e6_748f_ea9bu64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..2000usize {
        let mut frame: Vec<u8> = if round % 3 == 0 {
            (0..14 + next() % 100).map(|_| next() as u8).collect()
        } else {
            seeds[round % seeds.len()].clone()
        };
        for _ in 0..1 + next() % 3 {
            let at = (next() as usize) % frame.len();
            frame[at] ^= 1 << (next() % 8);
        }
        if next() % 4 == 0 {
            frame.truncate(14 + (next() as usize) % frame.len().saturating_sub(13).max(1));
        }
        // The guest's own MAC, so the frames are its to parse.
        frame[..6].copy_from_slice(&netpeer::GUEST_MAC);
        link.send(&frame)?;
        if round % 100 == 99 {
            thread::sleep(Duration::from_millis(5));
            // The guest answers many of these (ARP requests, echoes):
            // unread, its answers would fill the harness's socket and
            // the host would drop the echo reply waited for below.
            link.discard_pending()?;
        }
    }
    thread::sleep(Duration::from_millis(500));
    link.discard_pending()?;
    ping(&link, 100)?;
    let counters = sh(guest, "spindle net", None)?;
    if !counters.contains("bad ipv4 checksum") && !counters.contains("bad ipv4 header") {
        return Err(format!("`spindle net` counted no malformed frame: {counters:?}").into());
    }
    Ok(())
}

/// Bytes in hex, for messages.
fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Debian's `bash-static`, started from busybox's prompt, is an
/// interactive shell on the terminal: its own prompt, line editing by
/// readline (which waits for keys in `pselect6`), a function called with
/// arithmetic, and `exit 4`, whose status busybox then reports.
fn bash_starts_interactively(guest: &mut Guest) -> Result<()> {
    const BUSYBOX_PROMPT: &str = "/ # ";
    const BASH_PROMPT: &str = "bash-5.2# ";
    let prompt = guest.wait_for(BUSYBOX_PROMPT, 0, None)?;
    let start = guest.serial_len().max(prompt);
    guest.send("bash\n")?;
    let at = guest.wait_for(BASH_PROMPT, start, None)?;
    let start = guest.serial_len().max(at);
    guest.send("f() { echo \"in f $1\"; }; f $((6 * 7))\n")?;
    guest.wait_for(BASH_PROMPT, start + 1, None)?;
    let log = guest.serial_log();
    let reply = &log[start.min(log.len())..];
    if !reply.contains("in f 42") {
        return Err(format!("bash's function did not print `in f 42`: {reply:?}").into());
    }
    let start = guest.serial_len();
    guest.send("exit 4\n")?;
    let at = guest.wait_for(BUSYBOX_PROMPT, start, None)?;
    let start = guest.serial_len().max(at);
    guest.send("echo status=$?\n")?;
    guest.wait_for(BUSYBOX_PROMPT, start + 1, None)?;
    let log = guest.serial_log();
    let reply = &log[start.min(log.len())..];
    if !reply.contains("status=4") {
        return Err(format!("busybox did not see bash's exit status 4: {reply:?}").into());
    }
    guest.send("exit\n")?;
    match guest.wait_exit(None)? {
        GuestExit::Success => Ok(()),
        other => Err(format!("`exit` did not halt the machine cleanly: {other}").into()),
    }
}

/// The terminal's signal keys at busybox's interactive prompt: ^C sends
/// SIGINT to the foreground job (a `sleep 30` ends at once and the shell
/// says 130 = 128 + SIGINT), ^Z sends SIGTSTP (the shell's job control
/// reports the job stopped), and the stopped job can be killed.
fn ctrl_c_and_ctrl_z_reach_the_foreground_job(guest: &mut Guest) -> Result<()> {
    const PROMPT: &str = "/ # ";
    // Well under the `sleep 30` the keys must cut short.
    const WITHIN: Duration = Duration::from_secs(15);
    // Time for the shell to start `sleep` before the key is typed.
    const SETTLE: Duration = Duration::from_millis(1500);
    let prompt = guest.wait_for(PROMPT, 0, None)?;
    let start = guest.serial_len().max(prompt + PROMPT.len());
    guest.send("sleep 30\n")?;
    std::thread::sleep(SETTLE);
    guest.send("\x03")?;
    guest.wait_for(PROMPT, start, Some(WITHIN))?;
    let mark = guest.serial_len();
    guest.send("echo rc=$?\n")?;
    guest.wait_for("rc=130", mark, Some(WITHIN))?;
    let mark = guest.serial_len();
    guest.send("sleep 30\n")?;
    std::thread::sleep(SETTLE);
    guest.send("\x1a")?;
    guest.wait_for("Stopped", mark, Some(WITHIN))?;
    let mark = guest.serial_len();
    guest.send("kill -9 %1; wait; echo killed\n")?;
    let killed = guest.wait_for(
        "killed",
        mark + "kill -9 %1; wait; echo killed".len(),
        Some(WITHIN),
    )?;
    // ash notices the job's end when it next looks at its jobs; `exit`
    // while it still counts a stopped job would only warn.
    let prompt = guest.wait_for(PROMPT, killed, Some(WITHIN))?;
    guest.send("jobs\n")?;
    guest.wait_for(PROMPT, prompt + PROMPT.len(), Some(WITHIN))?;
    guest.send("exit\n")?;
    match guest.wait_exit(None)? {
        GuestExit::Success => Ok(()),
        other => Err(format!("`exit` did not halt the machine cleanly: {other}").into()),
    }
}

/// An unknown command gets `unknown command` and the shell goes on.
fn shell_unknown_command_is_reported(guest: &mut Guest) -> Result<()> {
    guest.wait_for_prompt()?;
    let reply = guest.command("frobnicate")?;
    if !reply.contains("unknown command") {
        return Err(format!("`frobnicate` reply lacks `unknown command`: {reply:?}").into());
    }
    Ok(())
}

/// `halt` ends QEMU with exit status 33 within a few seconds.
fn shell_halt_exits_qemu_with_success(guest: &mut Guest) -> Result<()> {
    guest.wait_for_prompt()?;
    guest.send("halt\n")?;
    match guest.wait_exit(Some(HALT_EXIT_WITHIN))? {
        GuestExit::Success => Ok(()),
        GuestExit::TimedOut => Err(format!(
            "QEMU still running {} s after `halt`",
            HALT_EXIT_WITHIN.as_secs()
        )
        .into()),
        other => Err(format!("expected exit status 33 after `halt`, got {other}").into()),
    }
}

/// Fails unless `reply` contains `needle`.
fn expect_in(command: &str, reply: &str, needle: &str) -> Result<()> {
    if reply.contains(needle) {
        Ok(())
    } else {
        Err(format!("`{command}` reply lacks {needle:?}: {reply:?}").into())
    }
}

/// `ext load hello` runs its `init`, which logs; `ext list`, `domains` and
/// `ext unload` show and remove it.
fn shell_ext_load_hello_logs_and_unloads(guest: &mut Guest) -> Result<()> {
    guest.wait_for_prompt()?;
    let reply = guest.command("ext load hello")?;
    expect_in("ext load hello", &reply, "hello from a Wasm extension")?;
    expect_in("ext list", &guest.command("ext list")?, "hello")?;
    let domains = guest.command("domains")?;
    expect_in("domains", &domains, "spindle")?;
    expect_in("domains", &domains, "spindle.log")?;
    expect_in(
        "ext unload hello",
        &guest.command("ext unload hello")?,
        "unloaded hello",
    )?;
    let reply = guest.command("ext unload hello")?;
    expect_in("ext unload hello (twice)", &reply, "not loaded")
}

/// A runaway ephemeral handler is stopped by its budget and a faulting one
/// is contained: both are reported through `Extension.Faulted`, while the
/// shell keeps answering and tick-counter keeps counting.
fn shell_survives_runaway_and_faulting_extensions(guest: &mut Guest) -> Result<()> {
    guest.wait_for_prompt()?;
    for name in ["tick-counter", "runaway", "faulty"] {
        expect_in(
            "ext load",
            &guest.command(&format!("ext load {name}"))?,
            "loaded",
        )?;
    }
    thread::sleep(Duration::from_millis(500));
    let uptime = guest.command("uptime")?;
    if parse::parse_milliseconds(&uptime).is_none() {
        return Err(format!("the shell stopped answering: `uptime` gave {uptime:?}").into());
    }
    let events = guest.command("events")?;
    expect_in("events", &events, "Timer.Tick")?;
    expect_in("events", &events, "Extension.Faulted")?;
    let log = guest.serial_log();
    expect_in("(serial log)", &log, "Extension.Faulted: runaway")?;
    expect_in("(serial log)", &log, "budget exhausted")?;
    expect_in("(serial log)", &log, "Extension.Faulted: faulty")?;
    expect_in("(serial log)", &log, "unreachable executed")?;
    let count = guest.command("ext call tick-counter count")?;
    expect_in("ext call tick-counter count", &count, "count returned")?;
    expect_in("ext call tick-counter count", &count, "(i64)")?;
    for name in ["faulty", "runaway", "tick-counter"] {
        expect_in(
            "ext unload",
            &guest.command(&format!("ext unload {name}"))?,
            "unloaded",
        )?;
    }
    Ok(())
}

/// The modules that once panicked the kernel on load and corrupted it on a
/// call are loaded from the shell and their exports called with
/// arguments, as a user would; each call returns or is reported through
/// `Extension.Faulted`, and the shell keeps answering.
fn shell_regression_modules_are_contained(guest: &mut Guest) -> Result<()> {
    guest.wait_for_prompt()?;
    let available = guest.command("ext available")?;
    expect_in(
        "ext available",
        &available,
        "regress-wasm-load-panics-kernel",
    )?;
    for name in [
        "regress-wasm-load-panics-kernel",
        "regress-wasm-call-corrupts-kernel",
    ] {
        let reply = guest.command(&format!("ext load {name}"))?;
        if !(reply.contains("loaded") || reply.contains("error:")) {
            return Err(format!("`ext load {name}`: neither loaded nor refused: {reply:?}").into());
        }
    }
    // Export `6` of this module is the call that wrote through a bad stack
    // pointer under wasmi 2.0.0; the others with it, each with arguments of
    // its type (`2` to `5` re-export kernel procedures: bad handles and
    // pointers on purpose).
    for call in [
        "6",
        "7",
        "8 7 65535",
        "1",
        "2 0 4096",
        "3 0",
        "4 9",
        "5 0 1 2 3",
    ] {
        let command = format!("ext call regress-wasm-call-corrupts-kernel {call}");
        let reply = guest.command(&command)?;
        if !(reply.contains("returned") || reply.contains("failed:")) {
            return Err(format!("`{command}`: no result and no contained fault: {reply:?}").into());
        }
    }
    let uptime = guest.command("uptime")?;
    if parse::parse_milliseconds(&uptime).is_none() {
        return Err(format!("the shell stopped answering: `uptime` gave {uptime:?}").into());
    }
    expect_in(
        "ext list",
        &guest.command("ext list")?,
        "regress-wasm-call-corrupts-kernel",
    )?;
    Ok(())
}

/// `run` starts static musl programs from the boot archive in ring 3: one
/// prints its arguments with printf and exits 3; one that writes through
/// a null pointer is ended by the page fault alone, and the shell goes on.
fn shell_runs_user_programs(guest: &mut Guest) -> Result<()> {
    guest.wait_for_prompt()?;
    let listing = guest.command("run")?;
    expect_in("run", &listing, "hello")?;
    expect_in("run", &listing, "segv")?;
    let reply = guest.command("run hello a b")?;
    expect_in(
        "run hello a b",
        &reply,
        "hello from hello, a musl program in ring 3, with 3 arguments: a b",
    )?;
    expect_in("run hello a b", &reply, "hello exited with status 3")?;
    let reply = guest.command("run segv")?;
    expect_in(
        "run segv",
        &reply,
        "segv: about to write through a null pointer",
    )?;
    expect_in("run segv", &reply, "segv was ended by CPU exception 14")?;
    if reply.contains("still here") {
        return Err(format!("the null write did not fault: {reply:?}").into());
    }
    expect_in(
        "run nosuch",
        &guest.command("run nosuch")?,
        "error: no program nosuch",
    )?;
    // Their system calls went through the dispatcher's event.
    let events = guest.command("events")?;
    let raised = events
        .lines()
        .find(|line| line.trim_start().starts_with("MachineTrap.Syscall"))
        .and_then(|line| line.split("raised=").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|count| count.parse::<u64>().ok())
        .ok_or_else(|| format!("`events` lists no MachineTrap.Syscall count: {events:?}"))?;
    // hello makes 5 calls (arch_prctl, set_tid_address, ioctl, writev,
    // exit_group), segv 4 before its fault.
    if raised < 9 {
        return Err(
            format!("MachineTrap.Syscall raised only {raised} times for two programs").into(),
        );
    }
    let uptime = guest.command("uptime")?;
    if parse::parse_milliseconds(&uptime).is_none() {
        return Err(format!("the shell stopped answering: `uptime` gave {uptime:?}").into());
    }
    // Programs run again after a fault.
    expect_in(
        "run hello",
        &guest.command("run hello")?,
        "hello exited with status 3",
    )
}

/// `spindle.mode=fuzz`: the generated modules of [`TEST_KERNEL_FUZZ`] are
/// loaded and called in the kernel; every case is refused or contained,
/// nothing leaks, and QEMU exits with 33.
fn kernel_fuzz_cases_are_refused_or_contained(guest: &mut Guest) -> Result<()> {
    fuzz::check_kernel_run(guest, TEST_KERNEL_FUZZ)
}

/// `spindle.mode=crash`: the boot-path page fault is reported with its
/// address and QEMU exits with 35.
fn boot_page_fault_is_reported_and_fails(guest: &mut Guest) -> Result<()> {
    let exit = guest.wait_exit(None)?;
    let log = guest.serial_log();
    if !log.to_lowercase().contains("page fault") {
        return Err(format!("no `page fault` in the serial log ({exit})").into());
    }
    if !log.contains("CR2=") {
        return Err(format!("no `CR2=` in the serial log ({exit})").into());
    }
    if exit != GuestExit::Failure {
        return Err(format!("expected exit status 35 after the fault, got {exit}").into());
    }
    Ok(())
}

/// `spindle.mode=overflow`: a kernel thread's stack overflow hits its guard
/// page and arrives as a double fault on the IST stack (not a triple fault,
/// which would reset the machine and give no report); QEMU exits with 35.
fn kernel_stack_overflow_is_a_reported_double_fault(guest: &mut Guest) -> Result<()> {
    let exit = guest.wait_exit(None)?;
    let log = guest.serial_log();
    expect_in("(serial log)", &log, "EXCEPTION: double fault")?;
    expect_in("(serial log)", &log, "KERNEL PANIC")?;
    if exit != GuestExit::Failure {
        return Err(format!("expected exit status 35 after the double fault, got {exit}").into());
    }
    Ok(())
}

/// Whether `word` occurs in `text` delimited by non-identifier characters.
fn contains_word(text: &str, word: &str) -> bool {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|token| token == word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_whole() {
        assert!(contains_word("help  mem\nthreads: list", "threads"));
        assert!(contains_word("frames: 12 free", "frames"));
        assert!(!contains_word("helper", "help"));
    }

    #[test]
    fn scenario_names_are_unique_identifiers() {
        let mut names: Vec<&str> = SCENARIOS.iter().map(|scenario| scenario.name).collect();
        assert!(names
            .iter()
            .all(|name| name.chars().all(|c| c.is_ascii_lowercase() || c == '_')));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SCENARIOS.len());
    }
}
