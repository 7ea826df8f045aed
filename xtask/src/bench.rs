//! Benchmark suites of `./x bench`.
//!
//! Every figure is printed as one line,
//! `bench <suite>.<name> <median> <unit> [key=value ...]`, with units `ns`,
//! `cycles`, `ops/s`, `MB/s` or `x` (see [`crate::parse::parse_bench_line`]).
//! Guest figures are measured by the guest itself (TSC, many iterations,
//! median of repetitions) and relayed unchanged; with `--icount` QEMU runs
//! with `-icount shift=0` and each relayed line gets a trailing `icount=1`.
//!
//! Adding a suite is one entry in [`SUITES`] and one function.

use std::{
    io::{BufRead, BufReader},
    path::PathBuf,
    process::Stdio,
    time::Duration,
};

use crate::{
    parse::{self, GuestExit},
    qemu::{Accel, BootConfig, Guest},
    scenarios::{print_log, save_log},
    toolchain::{self, Profile},
    Result,
};

/// Boots measured by `boot.to_shell`.
const BOOT_RUNS: usize = 5;

/// One benchmark suite.
pub struct Suite {
    /// Name on the command line and prefix of its figures.
    pub name: &'static str,
    /// One line for `./x help bench`.
    pub about: &'static str,
    /// Runs the suite, printing its `bench` lines.
    pub run: fn(&mut BenchContext) -> Result<()>,
}

/// Every suite, in the order `./x bench` runs them.
pub const SUITES: &[Suite] = &[
    Suite {
        name: "boot",
        about: "time to shell prompt (host clock), direct and indirect call in the guest",
        run: boot,
    },
    Suite {
        name: "ext",
        about: "extensions in the guest: intrinsic, native guarded, Wasm handler and guard, Wasm-to-kernel call, module load",
        run: ext,
    },
    Suite {
        name: "core",
        about: "core services in the guest beside Linux in the same QEMU: the baseline's programs Spindle runs (../shared/baseline)",
        run: core,
    },
    Suite {
        name: "linux",
        about: "the Linux baseline's programs, unmodified, under the Linux personality beside Linux in the same QEMU (../shared/baseline)",
        run: linux,
    },
    Suite {
        name: "net",
        about: "the network beside Linux in the same QEMU: UDP round trip to the in-kernel Wasm echo and to user-level echoes, TCP throughput, HTTP requests per second (../shared/baseline/serve.sh)",
        run: crate::netbench::net,
    },
    Suite {
        name: "dispatch",
        about: "event dispatcher on the host (benches/dispatch)",
        run: dispatch,
    },
    Suite {
        name: "wasm-peer",
        about: "our native engine against wasmtime on the host: the checksum, the empty handler, compile time of big (benches/wasm-peer)",
        run: wasm_peer,
    },
];

/// Options and lazily built artifacts shared by the suites of one run.
pub struct BenchContext {
    /// Kernel profile.
    pub profile: Profile,
    /// Accelerator.
    pub accel: Accel,
    /// Whether QEMU runs with `-icount shift=0`.
    pub is_icount: bool,
    /// Wall-clock deadline of each QEMU run.
    pub timeout: Duration,
    /// Code layouts the host suite (`dispatch`) is linked in: 1 is the
    /// plain build; more relink it with its functions shuffled (see
    /// [`dispatch`]).
    pub layouts: usize,
    kernel: Option<PathBuf>,
}

impl BenchContext {
    /// A context whose kernel is built on first use.
    pub fn new(profile: Profile, accel: Accel, is_icount: bool, timeout: Duration) -> Self {
        Self {
            profile,
            accel,
            is_icount,
            timeout,
            layouts: 1,
            kernel: None,
        }
    }

    /// The kernel ELF, built the first time a suite needs it.
    pub fn kernel(&mut self) -> Result<PathBuf> {
        if let Some(kernel) = &self.kernel {
            return Ok(kernel.clone());
        }
        let kernel = toolchain::build_kernel(self.profile, toolchain::Image::Testing)?;
        self.kernel = Some(kernel.clone());
        Ok(kernel)
    }

    /// The accelerator's name, as the baseline's scripts take it.
    pub fn accel_name(&self) -> &'static str {
        match self.accel {
            Accel::Tcg => "tcg",
            Accel::Kvm => "kvm",
        }
    }

    pub(crate) fn boot_config(&mut self, mode: &str) -> Result<BootConfig> {
        let mut config = BootConfig::new(&self.kernel()?, mode, self.accel);
        config.is_icount = self.is_icount;
        Ok(config)
    }

    /// Appends the `icount=1` tag to a guest-measured line when it applies.
    fn tag(&self, line: &str) -> String {
        if self.is_icount {
            format!("{line} icount=1")
        } else {
            line.to_string()
        }
    }
}

/// Finds a suite by name.
pub fn find_suite(name: &str) -> Option<&'static Suite> {
    SUITES.iter().find(|suite| suite.name == name)
}

/// `boot`: host time to the first shell prompt (median of
/// [`BOOT_RUNS`] boots), then the guest's own `spindle.mode=bench` figures.
fn boot(context: &mut BenchContext) -> Result<()> {
    let config = context.boot_config("shell")?;
    let mut times_ns = Vec::with_capacity(BOOT_RUNS);
    for run in 0..BOOT_RUNS {
        let mut guest = Guest::boot(&config, context.timeout)?;
        match guest.wait_for_prompt() {
            Ok(elapsed) => times_ns.push(elapsed.as_nanos()),
            Err(error) => {
                guest.kill();
                let name = format!("bench-boot-to-shell-{run}");
                print_log(
                    &name,
                    &guest.full_log(),
                    save_log(&name, &guest.full_log()).as_deref(),
                );
                return Err(error);
            }
        }
    }
    times_ns.sort_unstable();
    let line = parse::format_bench_line(
        "boot.to_shell",
        times_ns[times_ns.len() / 2],
        "ns",
        &[
            ("runs", BOOT_RUNS.to_string()),
            ("min", times_ns[0].to_string()),
            ("max", times_ns[times_ns.len() - 1].to_string()),
        ],
    );
    println!("{}", context.tag(&line));

    guest_suite(context, "boot")
}

/// `ext`: the guest's `spindle.bench=ext` figures.
fn ext(context: &mut BenchContext) -> Result<()> {
    guest_suite(context, "ext")
}

/// Boots with `spindle.mode=bench spindle.bench=<suite>` and relays the
/// figures the guest prints.
fn guest_suite(context: &mut BenchContext, suite: &str) -> Result<()> {
    let mut config = context.boot_config("bench")?;
    config.append.push_str(&format!(" spindle.bench={suite}"));
    let log_name = format!("bench-{suite}");
    let mut guest = Guest::boot(&config, context.timeout)?;
    let exit = guest.wait_exit(None)?;
    let log = guest.full_log();
    save_log(&log_name, &log);
    let mut figures = 0;
    for line in log.lines().filter(|line| line.starts_with("bench ")) {
        if let Err(problem) = parse::parse_bench_line(line) {
            eprintln!("x: warning: malformed bench line from the guest ({problem}): {line}");
        }
        println!("{}", context.tag(line));
        figures += 1;
    }
    if exit != GuestExit::Success || figures == 0 {
        print_log(&log_name, &log, None);
        return Err(format!("spindle.bench={suite}: {figures} figures, {exit}").into());
    }
    Ok(())
}

/// The programs of `../shared/baseline/bench/` that Spindle runs today
/// (the others need system calls the Linux personality brings).
const CORE_PROGRAMS: &[&str] = &[
    "null_syscall",
    "fork_exit_wait",
    "page_touch",
    "thread_fork_join",
    "thread_ping_pong",
];

/// Figures reported under another name than the baseline program's (the
/// names of the table: SPIN's table 3 for user threads).
const RENAMED: &[(&str, &str)] = &[
    ("thread_fork_join", "fork_join_user"),
    ("thread_ping_pong", "ping_pong_user"),
];

/// Programs of `user/bench/` run on Spindle only, each printing figures
/// named as the baseline program's it stands beside (`vm_extension`: the
/// `vm_*` figures of the baseline's `vm`).
const SPINDLE_PROGRAMS: &[&str] = &["vm_extension"];

/// Spindle's kernel-thread figures (measured in the kernel, SPIN table 3)
/// and the Linux baseline figure each is put beside: Linux has no kernel
/// threads a program can time, so its nearest, pthreads, stands in.
const LINUX_COUNTERPARTS: &[(&str, &str)] = &[
    ("fork_join_kernel", "thread_fork_join"),
    ("ping_pong_kernel", "thread_ping_pong"),
    ("fork_join_user", "thread_fork_join"),
    ("ping_pong_user", "thread_ping_pong"),
];

/// `core`: the Linux baseline's benchmark programs, unmodified static musl
/// binaries built from `../shared/baseline/bench/`, run as user programs
/// on Spindle (`spindle.bench=core`) and on Linux booted by the baseline's
/// own `build.sh` and `run.sh` in the same QEMU and accelerator. Prints
/// `core.<name>` (Spindle), `core.<name>.linux` and `core.<name>.ratio`
/// (Spindle over Linux).
fn core(context: &mut BenchContext) -> Result<()> {
    let root = crate::repo_root();
    let baseline = root.join("../shared/baseline");
    if !baseline.join("bench").is_dir() {
        return Err(format!(
            "{}: the Linux baseline is missing (it comes with shared/)",
            baseline.display()
        )
        .into());
    }
    // 1. The programs, for Spindle.
    let output = root.join("target/baseline");
    std::fs::create_dir_all(&output)?;
    // The baseline's programs, and Spindle's own versions of those that
    // need what Linux does differently (user/bench/: vm_extension handles
    // its faults with a kernel extension instead of SIGSEGV), built
    // against the baseline's common.h so they time the same way.
    let sources = CORE_PROGRAMS
        .iter()
        .map(|name| (name, baseline.join("bench").join(format!("{name}.c"))))
        .chain(
            SPINDLE_PROGRAMS
                .iter()
                .map(|name| (name, root.join("user/bench").join(format!("{name}.c")))),
        );
    let mut extra = Vec::new();
    for (name, source) in sources {
        let binary = build_baseline_program(&source, &output.join(name))?;
        extra.push((format!("bench/{name}"), std::fs::read(&binary)?));
    }
    let archive = crate::image::build_archive_with(extra, &output.join("core.cpio"))?;
    // 2. Spindle.
    let mut config = context.boot_config("bench")?;
    config.append.push_str(" spindle.bench=core");
    config.initrd = Some(archive);
    let mut guest = Guest::boot(&config, context.timeout)?;
    let exit = guest.wait_exit(None)?;
    let log = guest.full_log();
    save_log("bench-core", &log);
    let spindle: Vec<(String, f64)> = program_figures(&log)
        .into_iter()
        .map(|(name, ns)| {
            let renamed = RENAMED
                .iter()
                .find(|(program, _)| *program == name)
                .map_or(name, |(_, figure)| figure.to_string());
            (renamed, ns)
        })
        .collect();
    if exit != GuestExit::Success || spindle.is_empty() {
        print_log("bench-core", &log, None);
        return Err(format!("spindle.bench=core: {} figures, {exit}", spindle.len()).into());
    }
    // 3. Linux, with the baseline's own scripts.
    let linux = linux_baseline_figures(context)?;
    for (name, spindle_ns) in &spindle {
        let line = format!("bench core.{name} {spindle_ns:.1} ns");
        println!("{}", context.tag(&line));
        let counterpart = LINUX_COUNTERPARTS
            .iter()
            .find(|(spindle_name, _)| spindle_name == name)
            .map_or(name.as_str(), |(_, linux_name)| linux_name);
        match linux
            .iter()
            .find(|(linux_name, _)| linux_name == counterpart)
        {
            Some((_, linux_ns)) => {
                if counterpart != name && !RENAMED.iter().any(|(_, figure)| figure == name) {
                    eprintln!("x: core.{name} is put beside Linux's {counterpart}");
                }
                println!("bench core.{name}.linux {linux_ns:.1} ns");
                println!("bench core.{name}.ratio {:.2} x", spindle_ns / linux_ns);
            }
            None => eprintln!("x: warning: the Linux baseline printed no {name} figure"),
        }
    }
    Ok(())
}

/// Builds a benchmark program as the baseline builds its own (static
/// musl, against the baseline's `common.h`); returns `binary`.
fn build_baseline_program(source: &std::path::Path, binary: &std::path::Path) -> Result<PathBuf> {
    let headers = crate::repo_root().join("../shared/baseline/bench");
    let mut command = std::process::Command::new("musl-gcc");
    command
        .args(["-static", "-O2", "-Wall", "-Wextra", "-I"])
        .arg(headers)
        .arg("-o")
        .arg(binary)
        .arg(source);
    toolchain::run_checked(&mut command, &format!("building {}", source.display()))?;
    Ok(binary.to_path_buf())
}

/// Builds and boots the Linux baseline with its own `build.sh` and
/// `run.sh` (in the same accelerator), and returns its figures.
fn linux_baseline_figures(context: &BenchContext) -> Result<Vec<(String, f64)>> {
    linux_baseline_figures_with(context, &[])
}

/// [`linux_baseline_figures`], with programs of ours added to the
/// baseline's initramfs: each `(name, binary)` goes in as `/bench/<name>`
/// and runs after the baseline's own, from its `benchmarks.txt`. The
/// baseline's files are not changed: the run uses a copy of its output
/// whose initramfs has a second archive appended (Linux unpacks each in
/// turn, the later `benchmarks.txt` replacing the first).
fn linux_baseline_figures_with(
    context: &BenchContext,
    programs: &[(&str, PathBuf)],
) -> Result<Vec<(String, f64)>> {
    let baseline = crate::repo_root().join("../shared/baseline");
    let accel = context.accel_name();
    eprintln!("x: building and booting the Linux baseline ({accel})");
    let linux_out = build_linux_baseline()?;
    let run_out = if programs.is_empty() {
        linux_out
    } else {
        with_our_programs(&baseline, &linux_out, programs)?
    };
    let run = std::process::Command::new("bash")
        .arg(baseline.join("run.sh"))
        .env("BASELINE_OUT", &run_out)
        .env("BASELINE_ACCEL", accel)
        .stderr(Stdio::inherit())
        .output()?;
    Ok(program_figures(&String::from_utf8_lossy(&run.stdout)))
}

/// Builds the Linux baseline (kernel, programs, initramfs) with its own
/// `build.sh` into `target/baseline-linux`; returns that folder.
pub fn build_linux_baseline() -> Result<PathBuf> {
    let root = crate::repo_root();
    let linux_out = root.join("target/baseline-linux");
    let mut build = std::process::Command::new("bash");
    build
        .arg(root.join("../shared/baseline/build.sh"))
        .env("BASELINE_OUT", &linux_out)
        .stdout(Stdio::null());
    toolchain::run_checked(&mut build, "the Linux baseline's build.sh")?;
    Ok(linux_out)
}

/// A copy of the baseline's output (`linux_out`) whose initramfs also
/// holds `programs` and lists them in `benchmarks.txt`; returns its
/// folder.
fn with_our_programs(
    baseline: &std::path::Path,
    linux_out: &std::path::Path,
    programs: &[(&str, PathBuf)],
) -> Result<PathBuf> {
    let out = crate::repo_root().join("target/baseline-linux-plus");
    std::fs::create_dir_all(&out)?;
    for file in ["vmlinuz", "vmlinux", "kernel-version"] {
        let from = linux_out.join(file);
        if from.is_file() {
            std::fs::copy(&from, out.join(file))?;
        }
    }
    let mut list = std::fs::read_to_string(baseline.join("benchmarks.txt"))?;
    let mut files = Vec::new();
    for (name, binary) in programs {
        list.push_str(&format!("{name} /bench/{name}\n"));
        files.push((format!("bench/{name}"), std::fs::read(binary)?));
    }
    files.push(("benchmarks.txt".to_string(), list.into_bytes()));
    let added = crate::image::write_files_archive(files, &out.join("added.cpio"))?;
    let mut initramfs = std::fs::read(linux_out.join("initramfs.cpio.gz"))?;
    // Linux reads an uncompressed archive only at a 4-byte boundary; the
    // zeros before it are skipped.
    initramfs.resize(initramfs.len().next_multiple_of(4), 0);
    initramfs.extend(std::fs::read(added)?);
    std::fs::write(out.join("initramfs.cpio.gz"), initramfs)?;
    Ok(out)
}

/// Spindle's own programs in `./x bench linux` (from `user/bench/`, built
/// like the baseline's and run on both kernels): SPIN's Unix-server
/// figure `ls -l`; `poll_wake` and `epoll_wake`, the latency of a wake-up
/// out of `poll` and `epoll_wait`; `eventfd_pingpong`, the round trip of
/// an event between two processes over eventfd counters; `fcntl_lock`
/// and `flock`, an uncontended lock and unlock of a file; `futex_wake`,
/// the round trip between two threads waking each other out of
/// `FUTEX_WAIT`; `vfork_exit_wait` and `pidfd_exit_wait`, beside the
/// baseline's `fork_exit_wait`: a child that runs in its parent's
/// memory, and a child's end waited for through a process descriptor;
/// `unix_stream_rtt`, a message's round trip between two processes over
/// a named `AF_UNIX` stream socket; `sem_pingpong`, the round trip of a
/// wake-up over System V semaphores.
pub const LINUX_SUITE_OURS: &[&str] = &[
    "ls_l",
    "poll_wake",
    "epoll_wake",
    "eventfd_pingpong",
    "fcntl_lock",
    "flock",
    "futex_wake",
    "vfork_exit_wait",
    "pidfd_exit_wait",
    "unix_stream_rtt",
    "sem_pingpong",
];

/// SPIN's Unix-server figures (paper 002, table 2) as `./x bench linux`
/// names them, and the program figure each is: `getpid` is the
/// baseline's null system call (`syscall(SYS_getpid)`), the 1 KiB read
/// its `read_1k_cached`.
const UNIX_SERVER_FIGURES: &[(&str, &str)] = &[
    ("getpid", "null_syscall"),
    ("read_1k", "read_1k_cached"),
    ("ls_l", "ls_l"),
];

/// Baseline programs `./x bench linux` leaves out: the UDP echo server
/// is `serve.sh`'s, for the networking benchmarks, not a benchmark of
/// its own (it is not in `benchmarks.txt`).
const LINUX_SUITE_SKIPPED: &[&str] = &["udp_echo"];

/// The boot archive that runs the Linux baseline's programs on Spindle:
/// every program of `../shared/baseline/bench/` built exactly as the
/// baseline builds them (static musl) in `/bench` (the socket ones too,
/// not run, so that `ls -l /bench` lists the same files as on Linux),
/// ours of [`LINUX_SUITE_OURS`], the baseline's `benchmarks.txt` without
/// the socket programs, and a `/etc/spindle-exec` that runs them as the
/// baseline's `/init` does, printing `baseline-fail NAME exit N` for a
/// program that fails. Returns the archive and our programs' binaries
/// (for the Linux side).
pub fn baseline_archive() -> Result<(PathBuf, Vec<(&'static str, PathBuf)>)> {
    let root = crate::repo_root();
    let baseline = root.join("../shared/baseline");
    let list = std::fs::read_to_string(baseline.join("benchmarks.txt"))
        .map_err(|error| format!("{}: {error}", baseline.join("benchmarks.txt").display()))?;
    let output = root.join("target/baseline-programs");
    std::fs::create_dir_all(&output)?;
    let mut extra = Vec::new();
    let mut programs: Vec<String> = std::fs::read_dir(baseline.join("bench"))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|extension| extension == "c"))
        .filter_map(|path| {
            path.file_stem()
                .and_then(|stem| stem.to_str())
                .map(String::from)
        })
        .collect();
    programs.sort();
    for name in &programs {
        let source = baseline.join("bench").join(format!("{name}.c"));
        let binary = build_baseline_program(&source, &output.join(name))?;
        extra.push((format!("bench/{name}"), std::fs::read(&binary)?));
    }
    let mut ours = Vec::new();
    for name in LINUX_SUITE_OURS {
        let source = root.join("user/bench").join(format!("{name}.c"));
        let binary = build_baseline_program(&source, &output.join(name))?;
        extra.push((format!("bench/{name}"), std::fs::read(&binary)?));
        ours.push((*name, binary));
    }
    let mut kept: String = baseline_programs_run(&list)
        .iter()
        .map(|(name, command)| format!("{name} {command}\n"))
        .collect();
    for name in LINUX_SUITE_OURS {
        kept.push_str(&format!("{name} /bench/{name}\n"));
    }
    extra.push(("benchmarks.txt".to_string(), kept.into_bytes()));
    // The loop of the baseline's /init, for the same shell.
    let script = "/bench/hello || echo \"baseline-fail hello exit $?\"\n\
        while read -r name command; do\n\
        case \"$name\" in '' | '#'*) continue ;; esac\n\
        $command </dev/null || echo \"baseline-fail $name exit $?\"\n\
        done </benchmarks.txt\n";
    extra.push(("etc/spindle-exec".to_string(), script.as_bytes().to_vec()));
    let archive = crate::image::build_archive_with(extra, &output.join("linux.cpio"))?;
    Ok((archive, ours))
}

/// The (name, command) lines of the baseline's `benchmarks.txt` that
/// Spindle runs: all but comments and the socket programs.
pub fn baseline_programs_run(list: &str) -> Vec<(String, String)> {
    list.lines()
        .filter_map(|line| {
            let line = line.trim();
            let (name, command) = line.split_once(char::is_whitespace)?;
            let keep = !name.starts_with('#') && !LINUX_SUITE_SKIPPED.contains(&name);
            keep.then(|| (name.to_string(), command.trim().to_string()))
        })
        .collect()
}

/// `linux`: every program of the Linux baseline but the socket ones, built
/// from `../shared/baseline/bench/` exactly as the baseline builds them
/// (static musl), run unmodified on Spindle's Linux personality by
/// Debian's busybox `sh` reading the baseline's own `benchmarks.txt` (as
/// its `/init` does), and on Linux by the baseline's scripts. Prints
/// `linux.<name>.spindle`, `linux.<name>.linux` and `linux.<name>.ratio`
/// per figure, then a side-by-side table; a program that fails on Spindle
/// is reported, never dropped silently.
fn linux(context: &mut BenchContext) -> Result<()> {
    let (archive, ours) = baseline_archive()?;
    let mut config = context.boot_config("exec")?;
    config.initrd = Some(archive);
    let mut guest = Guest::boot(&config, context.timeout)?;
    let exit = guest.wait_exit(None)?;
    let log = guest.full_log();
    save_log("bench-linux", &log);
    let spindle = program_figures(&log);
    for failure in log.lines().filter(|line| line.contains("baseline-fail")) {
        eprintln!("x: on Spindle: {}", failure.trim());
    }
    if spindle.is_empty() {
        print_log("bench-linux", &log, None);
        return Err(format!("the baseline programs printed no figure on Spindle ({exit})").into());
    }
    let linux = linux_baseline_figures_with(context, &ours)?;
    let mut table = Vec::new();
    for (name, linux_ns) in &linux {
        if LINUX_SUITE_SKIPPED.contains(&name.as_str()) {
            continue;
        }
        match spindle
            .iter()
            .find(|(spindle_name, _)| spindle_name == name)
        {
            Some((_, spindle_ns)) => {
                let ratio = spindle_ns / linux_ns;
                println!(
                    "{}",
                    context.tag(&format!("bench linux.{name}.spindle {spindle_ns:.1} ns"))
                );
                println!("bench linux.{name}.linux {linux_ns:.1} ns");
                println!("bench linux.{name}.ratio {ratio:.2} x");
                table.push(format!(
                    "{name:<18} {spindle_ns:>12.1} {linux_ns:>12.1} {ratio:>7.2}x"
                ));
            }
            None => {
                eprintln!(
                    "x: linux.{name}: no figure on Spindle (see target/qemu-logs/bench-linux.log)"
                );
                table.push(format!(
                    "{name:<18} {:>12} {linux_ns:>12.1} {:>8}",
                    "failed", "-"
                ));
            }
        }
    }
    eprintln!(
        "\n{:<18} {:>12} {:>12} {:>8}",
        "figure (ns)", "spindle", "linux", "ratio"
    );
    for line in table {
        eprintln!("{line}");
    }
    // SPIN's Unix-server table, under its own names.
    let figure = |figures: &[(String, f64)], name: &str| {
        figures
            .iter()
            .find(|(figure, _)| figure == name)
            .map(|&(_, ns)| ns)
    };
    eprintln!("\nSPIN's Unix-server figures (paper 002, table 2):");
    for (spin_name, program) in UNIX_SERVER_FIGURES {
        match (figure(&spindle, program), figure(&linux, program)) {
            (Some(spindle_ns), Some(linux_ns)) => {
                println!(
                    "{}",
                    context.tag(&format!(
                        "bench linux.{spin_name}.spindle {spindle_ns:.1} ns"
                    ))
                );
                println!("bench linux.{spin_name}.linux {linux_ns:.1} ns");
                println!(
                    "bench linux.{spin_name}.ratio {:.2} x",
                    spindle_ns / linux_ns
                );
            }
            _ => eprintln!("x: linux.{spin_name}: the figure {program} is missing on one side"),
        }
    }
    Ok(())
}

/// The `bench <name> <ns> ns ...` lines a baseline program prints, as
/// (name, ns).
pub fn program_figures(output: &str) -> Vec<(String, f64)> {
    output
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            if words.next()? != "bench" {
                return None;
            }
            let name = words.next()?;
            let value = words.next()?.parse::<f64>().ok()?;
            (words.next()? == "ns" && !name.contains('.')).then(|| (name.to_string(), value))
        })
        .collect()
}

/// How many processes `dispatch` runs per layout; each figure is reported
/// as the median over all of them (see [`parse::combine_bench_lines`]).
const DISPATCH_PROCESSES: usize = 3;

/// Target directory of the relinked layouts (kept apart from `target/` so
/// that the plain build's cache is not invalidated).
const LAYOUTS_TARGET_DIR: &str = "target/bench-layouts";

/// `dispatch`: builds the host benchmark crate `bench-dispatch`, runs it
/// [`DISPATCH_PROCESSES`] times, and prints each figure's median over the
/// processes (their own lines go to stderr as they come).
///
/// With `--layouts N` (N > 1) the binary is linked N times by lld with
/// `--shuffle-sections` (seeds 1..=N): every function is its own section,
/// so each link places the dispatcher, the handlers and the baselines at
/// different addresses relative to cache lines, pages and each other. Code
/// placement alone moves nanosecond figures by up to 25% between builds of
/// unchanged source; the median over layouts is a figure of the code, not
/// of one placement (Mytkowicz et al., "Producing wrong data without doing
/// anything obviously wrong", ASPLOS 2009).
fn dispatch(context: &mut BenchContext) -> Result<()> {
    let layouts = context.layouts.max(1);
    // Figures in the order of the first process, each with its lines.
    let mut figures: Vec<(String, Vec<parse::BenchLine>)> = Vec::new();
    for layout in 1..=layouts {
        let binary = if layouts == 1 {
            build_dispatch_bench()?
        } else {
            eprintln!("x: bench-dispatch layout {layout} of {layouts}");
            build_dispatch_bench_layout(layout)?
        };
        for process in 1..=DISPATCH_PROCESSES {
            eprintln!("x: bench-dispatch process {process} of {DISPATCH_PROCESSES}");
            run_host_bench(&binary, &mut figures)?;
        }
    }
    if figures.is_empty() {
        eprintln!("x: warning: bench-dispatch printed no `bench ` lines");
    }
    for (_, lines) in &figures {
        let combined = parse::combine_bench_lines(lines);
        if layouts > 1 {
            println!("{combined} layouts={layouts}");
        } else {
            println!("{combined}");
        }
    }
    Ok(())
}

/// Builds `bench-dispatch` as is and returns its path.
fn build_dispatch_bench() -> Result<PathBuf> {
    let status = toolchain::cargo("target")
        .args(["build", "-q", "--release", "-p", "bench-dispatch"])
        .status()?;
    if !status.success() {
        return Err(format!("building bench-dispatch failed ({status})").into());
    }
    Ok(PathBuf::from("target/release/bench-dispatch"))
}

/// Links `bench-dispatch` with lld, its `.text` sections shuffled with
/// `seed`, and returns the path of a copy of that binary. Only the final
/// crate is recompiled per seed (`cargo rustc` passes the flags to it
/// alone); the shuffle applies to every function linked, the dispatcher's
/// included.
fn build_dispatch_bench_layout(seed: usize) -> Result<PathBuf> {
    let shuffle = format!("link-arg=-Wl,--shuffle-sections=.text.*={seed}");
    let status = toolchain::cargo(LAYOUTS_TARGET_DIR)
        .args(["rustc", "-q", "--release", "-p", "bench-dispatch", "--"])
        .args(["-C", "link-arg=-fuse-ld=lld"])
        .args(["-C", &format!("link-arg=-B{}", toolchain::LLD_DIR)])
        .args(["-C", &shuffle])
        .status()?;
    if !status.success() {
        return Err(format!("linking bench-dispatch layout {seed} failed ({status})").into());
    }
    let copy = PathBuf::from(format!("{LAYOUTS_TARGET_DIR}/bench-dispatch-layout-{seed}"));
    std::fs::copy(
        format!("{LAYOUTS_TARGET_DIR}/release/bench-dispatch"),
        &copy,
    )?;
    Ok(copy)
}

/// Runs one process of a host benchmark (`binary`), adding its lines to
/// `figures` (its other output is passed through).
fn run_host_bench(
    binary: &PathBuf,
    figures: &mut Vec<(String, Vec<parse::BenchLine>)>,
) -> Result<()> {
    let mut child = std::process::Command::new(binary)
        .stdout(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout pipe")?;
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        if !line.starts_with("bench ") {
            println!("{line}");
            continue;
        }
        eprintln!("  {line}");
        match parse::parse_bench_line(&line) {
            Ok(parsed) => {
                let figure = format!("{}.{}", parsed.suite, parsed.name);
                match figures.iter_mut().find(|(name, _)| *name == figure) {
                    Some((_, lines)) => lines.push(parsed),
                    None => figures.push((figure, vec![parsed])),
                }
            }
            Err(problem) => eprintln!("x: warning: malformed bench line ({problem}): {line}"),
        }
    }
    let status = child.wait()?;
    if !status.success() {
        return Err(format!("{} failed ({status})", binary.display()).into());
    }
    Ok(())
}

/// How many processes `wasm-peer` runs; each figure is reported as the
/// median over them, as `dispatch`'s are.
const WASM_PEER_PROCESSES: usize = 3;

/// `wasm-peer`: builds the extensions (the bytes the kernel loads) and the
/// host benchmark crate `bench-wasm-peer`, runs it
/// [`WASM_PEER_PROCESSES`] times and prints each figure's median over the
/// processes: the bench extension's checksum of the 1,500-byte packet and
/// its empty handler under our native engine, wasmtime (guard pages, and
/// explicit bounds checks as ours) and Rust, the ratios of ours to each
/// (`checksum_1500.ratio` is the issue's, goal at most 1.2x), and compile
/// time of `big` under both (docs/design/0008-native-engine.md,
/// "Measures").
///
/// Built in its own profile (`bench-peer`: release without fat LTO, which
/// would take many minutes for wasmtime and two Cranelifts); the first
/// build takes about 11 minutes on two cores, since wasmtime is built for
/// this suite alone (it is not a default member: `./x test` never builds
/// it).
fn wasm_peer(_context: &mut BenchContext) -> Result<()> {
    crate::extensions::build_extensions()?;
    eprintln!("x: building bench-wasm-peer (wasmtime, the first time: minutes)");
    let status = toolchain::cargo("target")
        .args([
            "build",
            "-q",
            "--profile",
            "bench-peer",
            "-p",
            "bench-wasm-peer",
        ])
        .status()?;
    if !status.success() {
        return Err(format!("building bench-wasm-peer failed ({status})").into());
    }
    let binary = PathBuf::from("target/bench-peer/bench-wasm-peer");
    let mut figures: Vec<(String, Vec<parse::BenchLine>)> = Vec::new();
    for process in 1..=WASM_PEER_PROCESSES {
        eprintln!("x: bench-wasm-peer process {process} of {WASM_PEER_PROCESSES}");
        run_host_bench(&binary, &mut figures)?;
    }
    if figures.is_empty() {
        return Err("bench-wasm-peer printed no `bench ` lines".into());
    }
    for (_, lines) in &figures {
        println!("{}", parse::combine_bench_lines(lines));
    }
    Ok(())
}
