//! `xtask`: the host tool behind `./x`, Spindle's one front door.
//!
//! `./x` installs the toolchain when it is missing, then runs this program
//! with its arguments. Subcommands (each one's doc comment, below in
//! [`COMMANDS`], is its help):
//! - `build`: builds the kernel ([`toolchain`]);
//! - `run`: boots it in QEMU on the terminal ([`qemu`]);
//! - `test`: host unit tests, then the QEMU scenarios ([`scenarios`]);
//! - `bench`: benchmark suites ([`mod@bench`]);
//! - `help`: lists the subcommands.
//!
//! CI runs `./x test`, the same command a developer runs. The guest's output
//! is parsed by [`parse`], which is unit-tested on the host.

use std::{
    env,
    path::{Path, PathBuf},
    process::ExitCode,
    time::Instant,
};

mod architecture;
mod bench;
mod checks;
mod debian;
mod extensions;
mod fuzz;
mod image;
mod kernel_shape;
mod linux_guest;
mod ltp;
mod netbench;
mod netpeer;
mod parse;
mod policy;
mod programs;
mod qemu;
mod scenarios;
mod stress;
mod toolchain;

use parse::GuestExit;
use qemu::{Accel, BootConfig};
use toolchain::{Image, Profile};

/// Errors are reported as text; this tool has no callers but `main`.
pub type Result<T, E = Box<dyn std::error::Error>> = std::result::Result<T, E>;

/// A subcommand: its name, its help (the doc comment), and its function.
struct Command {
    name: &'static str,
    help: &'static str,
    run: fn(Args) -> Result<ExitCode>,
}

/// Declares [`COMMANDS`]: each entry's doc comment becomes its help text.
macro_rules! commands {
    ($( $(#[doc = $doc:literal])* $name:literal => $run:path, )*) => {
        /// Every subcommand of `./x`, in the order `./x help` lists them.
        const COMMANDS: &[Command] = &[
            $( Command { name: $name, help: concat!($($doc, "\n",)*), run: $run }, )*
        ];
    };
}

commands! {
    /// Boots Spindle in QEMU with busybox sh on this terminal (`exit` leaves).
    ///
    /// usage: ./x run [--accel tcg|kvm] [--debug] [--mode MODE]
    ///                [--add HOST_PATH:GUEST_PATH]... [--exec 'COMMAND']
    ///
    ///   --accel A    tcg (default) or kvm (only with real hardware virtualization)
    ///   --debug      boot the debug build instead of the release build
    ///   --mode MODE  kernel command line spindle.mode=MODE (default linux:
    ///                busybox sh; shell: the kernel shell; the test modes
    ///                test, bench, fuzz, sysfuzz, crash, overflow and
    ///                boot-overflow boot the image with the test code)
    ///   --add H:G    put host file or folder H into the image at G (e.g.
    ///                --add ./prog:/bin/prog); repeatable
    ///   --exec CMD   run CMD under /bin/sh -c (busybox) instead of the
    ///                shell, print its output, exit with its status
    ///
    /// Exits 0 when the kernel halts cleanly (QEMU status 33), 1 when it
    /// reports a failure (35), 2 on any other QEMU exit; with --exec, the
    /// command's exit status (0-63 exactly, larger as 63).
    "run" => run_command,
    /// Runs every test: host unit tests, then each QEMU scenario.
    ///
    /// usage: ./x test [--accel tcg|kvm] [--debug] [--host-only|--qemu-only] [FILTER]
    ///
    ///   FILTER       run only the QEMU scenarios whose name contains FILTER
    ///   --host-only  only `cargo test` on the host
    ///   --qemu-only  only the QEMU scenarios
    ///
    /// Every QEMU run has a deadline (SPINDLE_QEMU_TIMEOUT seconds, default
    /// 120); its serial log goes to target/qemu-logs/ and is printed on
    /// failure. Ends with `qemu: N passed, N failed`; exits non-zero if any
    /// test failed. See docs/testing.md.
    "test" => test_command,
    /// Runs the checks: cargo fmt --check, clippy on every crate (host and
    /// x86_64-unknown-none, the kernel image with and without its test code)
    /// and cargo doc, all with warnings as errors.
    ///
    /// usage: ./x check
    ///
    /// Prints `check: NAME ... ok|FAILED` for each; `./x test` runs them
    /// first (unless --qemu-only).
    "check" => check_command,
    /// Regenerates the crate diagram and table in docs/architecture.md
    /// from `cargo metadata`.
    ///
    /// usage: ./x architecture
    ///
    /// Only the part between the generated markers changes; `./x check`
    /// fails while it differs from what the manifests say.
    "architecture" => architecture_command,
    /// Runs benchmark suites and prints `bench <suite>.<name> <median> <unit> ...` lines.
    ///
    /// usage: ./x bench [SUITE] [--icount] [--layouts N] [--accel tcg|kvm] [--debug]
    ///
    ///   SUITE        one suite (default: all); see the list below
    ///   --icount     run QEMU with -icount shift=0 (1 ns of guest time per
    ///                instruction: exact, repeatable, blind to caches); guest
    ///                lines get a trailing icount=1
    ///   --layouts N  host suite (dispatch): link it N times with its
    ///                functions shuffled (lld --shuffle-sections) and report
    ///                medians over every layout (default 1, the plain build)
    "bench" => bench_command,
    /// Builds the kernel ELF (target/kernel/x86_64-unknown-none/<profile>/spindle).
    ///
    /// usage: ./x build [--release] [--testing]
    ///
    ///   --release  the release profile (default: debug; run, test and bench
    ///              build and boot the release profile unless --debug is given)
    ///   --testing  the image with the in-kernel tests, benchmarks and fuzz
    ///              drivers (.../spindle-testing), as test, bench and fuzz
    ///              build it; without, the production image that run boots
    "build" => build_command,
    /// Builds the SDK and every extension in extensions/ into target/extensions/*.wasm.
    ///
    /// usage: ./x build-extensions
    ///
    /// Rust extensions build for wasm32-unknown-unknown with Debian's cargo
    /// and wasm-ld; C extensions with clang-19 and sdk/c/spindle.h.
    "build-extensions" => build_extensions_command,
    /// Fuzzes the extension runtime on the host and in the kernel.
    ///
    /// usage: ./x fuzz [--host-only|--kernel-only] [--cases N] [--kernel-cases N]
    ///                 [--seconds S] [--seed X] [--first N] [--jobs N]
    ///
    ///   --cases N         host cases (default 100000, unbounded with --seconds)
    ///   --kernel-cases N  cases run inside QEMU (default 10000; 1000 per boot)
    ///   --seconds S       stop the host cases after S seconds
    ///   --seed X          the campaign's seed (decimal or 0x hex)
    ///   --first N         the first case number (default 0)
    ///   --jobs N          host processes (default: the number of CPUs)
    ///   --syscalls        instead: random system calls from user processes
    ///                     in the kernel (`user/sysfuzz.c`), with
    ///   --processes N     how many (default 64, four at a time), seeds
    ///                     from --seed (default 1), and
    ///   --calls N         calls each (default 5000)
    ///   --net             instead: random and mutated Ethernet frames
    ///                     through the network receive path (services/net)
    ///   --frames N        how many (default 1000000), from --seed
    ///   --native          instead: only the native engine against wasmi
    ///   --native-cases N  its generated modules (default 50000 per
    ///                     compiler choice; part of the host run too)
    ///
    /// A case is named by its seed and number, the same on both sides. A
    /// failing case prints them and its module is saved in target/fuzz/;
    /// `--first N --cases 1` (or `--kernel-cases 1`) replays it. `./x test`
    /// runs 10,000 host cases, 300 native differential cases and 1,000 in
    /// the kernel.
    "fuzz" => fuzz_command,
    /// Lists the subcommands, or shows one subcommand's help.
    ///
    /// usage: ./x help [SUBCOMMAND]   (or: ./x SUBCOMMAND --help)
    "help" => help_command,
    /// Builds the Linux Test Project's system-call tests and runs them on Spindle.
    ///
    /// usage: ./x ltp [--cases PATTERN] [--all|--kept] [--keep-passing] [--jobs N]
    ///                [--linux] [--accel tcg|kvm] [--debug]
    ///
    ///   --cases PATTERN  only the cases whose name matches: a glob over the
    ///                    whole name (`fork*`, `*_64`) or else a substring;
    ///                    several separated by commas (`set*id*,cap*`)
    ///   --kept           the cases of xtask/ltp-passing.txt (what `./x test`
    ///                    runs) instead of the selection
    ///   --keep-passing   add the cases that passed here and pass on Linux
    ///                    to xtask/ltp-passing.txt
    ///   --all            every case of runtest/syscalls, not only
    ///                    ../shared/ltp/selection.txt's
    ///   --jobs N         QEMU boots at a time (default 1)
    ///   --linux          run them on the Linux baseline (../shared/baseline)
    ///                    in the same QEMU instead, for the figure to
    ///                    compare with (reports: target/ltp/*-linux.txt)
    ///
    /// Builds LTP from ../shared/ltp/ltp-*.tar.xz in target/ltp/ (static,
    /// only the folders the cases need, once), runs the cases in batches,
    /// one boot each, as ../shared/ltp/README.md ran them on Linux, and
    /// prints `ltp NAME pass|conf|fail` for each, the counts, and the cases
    /// of linux-pass.txt that do not pass. Verdicts go to
    /// target/ltp/results.txt, the end of each failure's output to
    /// target/ltp/failures.txt. Exits non-zero if a case that passes on
    /// Linux does not pass, or one crashed or hung the kernel.
    "ltp" => ltp_command,
    /// Runs Debian's stress-ng, one stressor at a time, on Spindle and on
    /// the Linux baseline in the same QEMU, and compares.
    ///
    /// usage: ./x stress [--accel tcg|kvm] [--debug] [--spindle-only|--linux-only] [NAME...]
    ///
    ///   NAME            run only these stressors (default: the whole set,
    ///                   processes, signals, memory, files, pipes and IPC,
    ///                   timers, sockets, scheduling, computation)
    ///   --spindle-only  skip the Linux side
    ///   --linux-only    skip Spindle's side (Linux's verdicts alone)
    ///
    /// Prints `stress NAME pass|fail|skip|freeze|panic (KERNEL, S s)` as
    /// each ends, then a table and a summary; a stressor that freezes the
    /// kernel is reported and the run goes on in a new boot. Exits
    /// non-zero if a stressor froze or panicked Spindle, or passes on
    /// Linux and not on Spindle.
    "stress" => stress_command,
}

fn main() -> ExitCode {
    let mut arguments: Vec<String> = env::args().skip(1).collect();
    if arguments.is_empty() {
        arguments.push("help".into());
    }
    let name = arguments.remove(0);
    let name = match name.as_str() {
        "-h" | "--help" => "help",
        other => other,
    };
    let Some(command) = COMMANDS.iter().find(|command| command.name == name) else {
        eprintln!("x: unknown subcommand `{name}`\n");
        print_overview();
        return ExitCode::from(2);
    };
    if arguments
        .iter()
        .any(|argument| argument == "--help" || argument == "-h")
    {
        print_help(command);
        return ExitCode::SUCCESS;
    }
    match (command.run)(Args::new(arguments)) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("x {name}: error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The repository root: the nearest folder, from the current one upwards,
/// holding both `x` and `xtask/Cargo.toml` (so `./x` works from anywhere and
/// a moved checkout needs no rebuild); else where this crate was built.
pub fn repo_root() -> PathBuf {
    let is_root = |path: &Path| path.join("x").is_file() && path.join("xtask/Cargo.toml").is_file();
    if let Ok(current) = env::current_dir() {
        if let Some(root) = current.ancestors().find(|path| is_root(path)) {
            return root.to_path_buf();
        }
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// A subcommand's arguments, consumed option by option.
struct Args {
    remaining: Vec<String>,
}

impl Args {
    fn new(remaining: Vec<String>) -> Self {
        Self { remaining }
    }

    /// Removes `--name` if present and says whether it was.
    fn flag(&mut self, name: &str) -> bool {
        let before = self.remaining.len();
        self.remaining.retain(|argument| argument != name);
        self.remaining.len() != before
    }

    /// Removes `--name VALUE` or `--name=VALUE` and returns the value.
    fn value(&mut self, name: &str) -> Result<Option<String>> {
        let prefix = format!("{name}=");
        if let Some(index) = self
            .remaining
            .iter()
            .position(|argument| argument.starts_with(&prefix))
        {
            let argument = self.remaining.remove(index);
            return Ok(Some(argument[prefix.len()..].to_string()));
        }
        let Some(index) = self.remaining.iter().position(|argument| argument == name) else {
            return Ok(None);
        };
        if index + 1 >= self.remaining.len() {
            return Err(format!("{name} needs a value").into());
        }
        self.remaining.remove(index);
        Ok(Some(self.remaining.remove(index)))
    }

    /// Removes and returns the first argument not starting with `-`.
    fn positional(&mut self) -> Option<String> {
        let index = self
            .remaining
            .iter()
            .position(|argument| !argument.starts_with('-'))?;
        Some(self.remaining.remove(index))
    }

    /// Fails if anything was not consumed.
    fn finish(self) -> Result<()> {
        if self.remaining.is_empty() {
            Ok(())
        } else {
            Err(format!("unexpected arguments {:?} (see --help)", self.remaining).into())
        }
    }

    /// `--accel tcg|kvm`, default TCG.
    fn accel(&mut self) -> Result<Accel> {
        self.value("--accel")?
            .map_or(Ok(Accel::Tcg), |text| Accel::parse(&text))
    }

    /// `--debug` selects the debug profile; release is the default.
    fn boot_profile(&mut self) -> Profile {
        if self.flag("--debug") {
            Profile::Debug
        } else {
            Profile::Release
        }
    }
}

fn build_command(mut args: Args) -> Result<ExitCode> {
    let profile = if args.flag("--release") {
        Profile::Release
    } else {
        Profile::Debug
    };
    let image = if args.flag("--testing") {
        Image::Testing
    } else {
        Image::Production
    };
    args.finish()?;
    let elf = toolchain::build_kernel(profile, image)?;
    println!("{}", toolchain::display_path(&elf));
    Ok(ExitCode::SUCCESS)
}

/// The `spindle.mode=` values only the testing image has
/// (`kernel/src/testing/mod.rs`).
const TEST_MODES: &[&str] = &[
    "test",
    "bench",
    "fuzz",
    "sysfuzz",
    "crash",
    "overflow",
    "boot-overflow",
];

fn run_command(mut args: Args) -> Result<ExitCode> {
    let accel = args.accel()?;
    let profile = args.boot_profile();
    let mut additions = Vec::new();
    while let Some(addition) = args.value("--add")? {
        additions.push(addition);
    }
    let command = args.value("--exec")?;
    let mode = args.value("--mode")?.unwrap_or_else(|| {
        if command.is_some() {
            "exec".into()
        } else {
            "linux".into()
        }
    });
    args.finish()?;
    // The test modes need the image with the test code; everything else
    // boots what a user gets.
    let image = if TEST_MODES.contains(&mode.as_str()) {
        Image::Testing
    } else {
        Image::Production
    };
    let kernel = toolchain::build_kernel(profile, image)?;
    let mut config = BootConfig::new(&kernel, &mode, accel);
    if !additions.is_empty() || command.is_some() {
        let mut extra = Vec::new();
        for addition in &additions {
            extra.extend(image::host_files(addition)?);
        }
        if let Some(command) = &command {
            extra.push(("etc/spindle-exec".to_string(), command.as_bytes().to_vec()));
        }
        let archive = repo_root().join("target/initrd-run.cpio");
        config.initrd = Some(image::build_archive_with(extra, &archive)?);
    }
    if let Some(command) = &command {
        config.append.push_str(" spindle.quiet");
        eprintln!("x: running `{command}` in Spindle");
        let exit = qemu::run_interactive(&config)?;
        return Ok(match exit.program_status() {
            Some(status) => ExitCode::from(status),
            None => {
                eprintln!("x: the command did not run to its end: {exit}");
                ExitCode::from(2)
            }
        });
    }
    eprintln!(
        "x: booting {} in QEMU (`exit` or `halt` leaves)",
        toolchain::display_path(&kernel)
    );
    let exit = qemu::run_interactive(&config)?;
    Ok(match exit {
        GuestExit::Success => ExitCode::SUCCESS,
        GuestExit::Failure => {
            eprintln!("x: the kernel reported a failure ({exit})");
            ExitCode::from(1)
        }
        other => {
            eprintln!("x: unexpected QEMU exit: {other}");
            ExitCode::from(2)
        }
    })
}

fn stress_command(mut args: Args) -> Result<ExitCode> {
    let accel = args.accel()?;
    let profile = args.boot_profile();
    let is_spindle_only = args.flag("--spindle-only");
    let is_linux_only = args.flag("--linux-only");
    if is_spindle_only && is_linux_only {
        return Err("--spindle-only and --linux-only exclude each other".into());
    }
    let mut chosen = Vec::new();
    while let Some(name) = args.positional() {
        chosen.push(name);
    }
    args.finish()?;
    let stressors: Vec<&str> = if chosen.is_empty() {
        stress::STRESSORS.to_vec()
    } else {
        chosen.iter().map(String::as_str).collect()
    };
    let files = stress::stress_files()?;
    let spindle = if is_linux_only {
        None
    } else {
        Some(stress::Spindle {
            kernel: toolchain::build_kernel(profile, Image::Production)?,
            accel,
            files: files.clone(),
        })
    };
    let linux = if is_spindle_only {
        None
    } else {
        Some(stress::Linux {
            baseline: bench::build_linux_baseline()?,
            accel,
            files,
        })
    };
    println!(
        "stress: {} stressors, {} s each",
        stressors.len(),
        stress::STRESSOR_SECONDS
    );
    let theirs = match &linux {
        Some(linux) => Some(stress::run_stressors(linux, &stressors)?),
        None => None,
    };
    let Some(spindle) = spindle else {
        let theirs = theirs.unwrap_or_default();
        stress::print_summary("linux", &theirs, None);
        return Ok(ExitCode::SUCCESS);
    };
    let ours = stress::run_stressors(&spindle, &stressors)?;
    Ok(
        if stress::print_summary("spindle", &ours, theirs.as_deref()) {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        },
    )
}

fn ltp_command(mut args: Args) -> Result<ExitCode> {
    let accel = args.accel()?;
    let profile = args.boot_profile();
    let pattern = args.value("--cases")?;
    let is_all = args.flag("--all");
    let is_kept = args.flag("--kept");
    let keep_passing = args.flag("--keep-passing");
    let on_linux = args.flag("--linux");
    let jobs = match args.value("--jobs")? {
        None => 1,
        Some(text) => match text.parse::<usize>() {
            Ok(jobs) if jobs >= 1 => jobs,
            _ => return Err(format!("--jobs needs a count of 1 or more, not `{text}`").into()),
        },
    };
    args.finish()?;
    if on_linux && keep_passing {
        return Err("--keep-passing keeps what passes on Spindle: not with --linux".into());
    }
    let kernel = if on_linux {
        ltp::Kernel::Linux(bench::build_linux_baseline()?)
    } else {
        ltp::Kernel::Spindle(toolchain::build_kernel(profile, Image::Production)?)
    };
    let options = ltp::Options {
        pattern,
        cases: if is_kept {
            Some(ltp::kept_cases()?)
        } else {
            None
        },
        is_all,
        jobs,
        kernel,
        accel,
    };
    let outcome = ltp::run(&options)?;
    if keep_passing {
        let added = ltp::keep_passing(&outcome)?;
        println!(
            "ltp: {} case(s) added to {}{}{}",
            added.len(),
            ltp::KEPT_LIST,
            if added.is_empty() { "" } else { ": " },
            added.join(" ")
        );
    }
    Ok(if ltp::print_summary(&outcome, &options.kernel)? {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn test_command(mut args: Args) -> Result<ExitCode> {
    let accel = args.accel()?;
    let profile = args.boot_profile();
    let is_host_only = args.flag("--host-only");
    let is_qemu_only = args.flag("--qemu-only");
    let filter = args.positional();
    args.finish()?;
    if is_host_only && is_qemu_only {
        return Err("--host-only and --qemu-only exclude each other".into());
    }
    let timeout = qemu::run_timeout()?;
    let started_at = Instant::now();

    let host_passed = if is_qemu_only {
        None
    } else {
        let violations = policy::violations(&repo_root());
        for violation in &violations {
            println!("policy: {violation}");
        }
        println!(
            "policy: unsafe confined to hal ... {}",
            if violations.is_empty() {
                "ok"
            } else {
                "FAILED"
            }
        );
        let checks_passed = checks::run_all()?;
        Some(toolchain::run_host_tests()? && violations.is_empty() && checks_passed)
    };

    let selected: Vec<&scenarios::Scenario> = if is_host_only {
        Vec::new()
    } else {
        scenarios::SCENARIOS
            .iter()
            .filter(|scenario| {
                filter
                    .as_deref()
                    .is_none_or(|filter| scenario.name.contains(filter))
            })
            .collect()
    };
    // LTP's kept cases, after the scenarios: a pseudo-scenario the filter
    // selects by its name.
    let runs_ltp = !is_host_only
        && filter
            .as_deref()
            .is_none_or(|filter| LTP_SCENARIO.contains(filter));
    if !is_host_only && selected.is_empty() && !runs_ltp {
        return Err(format!(
            "no QEMU scenario matches `{}`",
            filter.as_deref().unwrap_or_default()
        )
        .into());
    }
    let mut failed_names = Vec::new();
    if !selected.is_empty() {
        let needs = |image: Image| selected.iter().any(|scenario| scenario.image == image);
        let built = (|| -> Result<(Option<PathBuf>, Option<PathBuf>)> {
            let testing = if needs(Image::Testing) {
                Some(toolchain::build_kernel(profile, Image::Testing)?)
            } else {
                None
            };
            let production = if needs(Image::Production) {
                Some(toolchain::build_kernel(profile, Image::Production)?)
            } else {
                None
            };
            Ok((testing, production))
        })();
        match built {
            Ok((kernel, production_kernel)) => {
                println!(
                    "\nrunning {} QEMU scenario(s) (deadline {:.0} s each)",
                    selected.len(),
                    timeout.as_secs_f64()
                );
                let options = scenarios::ScenarioOptions {
                    kernel,
                    production_kernel,
                    accel,
                    timeout,
                };
                for scenario in &selected {
                    if !scenarios::run_scenario(scenario, &options) {
                        failed_names.push(scenario.name);
                    }
                }
            }
            Err(error) => {
                println!("x: kernel build failed, so every QEMU scenario fails: {error}");
                failed_names.extend(selected.iter().map(|scenario| scenario.name));
            }
        }
    }

    if runs_ltp && !kept_ltp_cases_pass(accel, profile) {
        failed_names.push(LTP_SCENARIO);
    }

    println!();
    println!(
        "x test: finished in {:.1} s",
        started_at.elapsed().as_secs_f64()
    );
    match host_passed {
        Some(true) => println!("host unit tests: ok"),
        Some(false) => {
            println!("host unit tests: FAILED (see cargo's output and the check: lines above)")
        }
        None => println!("host unit tests: skipped (--qemu-only)"),
    }
    for name in &failed_names {
        println!("failed scenario: {name}");
    }
    let scenarios_run = selected.len() + usize::from(runs_ltp);
    if scenarios_run > 0 {
        println!(
            "qemu: {} passed, {} failed",
            scenarios_run - failed_names.len(),
            failed_names.len()
        );
    }
    let is_success = host_passed != Some(false) && failed_names.is_empty();
    Ok(if is_success {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The name `./x test` gives its run of LTP's kept cases.
const LTP_SCENARIO: &str = "ltp_cases_that_passed_still_pass";

/// Runs the LTP cases of `xtask/ltp-passing.txt` on the production image,
/// two boots at a time; those that fail run once more, alone, in new
/// boots (a case that fails twice is a regression, one that passes the
/// second time is named as flaky). Prints the verdict line; whether every
/// case passed.
fn kept_ltp_cases_pass(accel: Accel, profile: Profile) -> bool {
    let started_at = Instant::now();
    let run = || -> Result<(usize, Vec<String>, Vec<String>)> {
        let kernel = toolchain::build_kernel(profile, Image::Production)?;
        let kept = ltp::kept_cases()?;
        let options = |cases: Vec<String>, jobs: usize| ltp::Options {
            pattern: None,
            cases: Some(cases),
            is_all: false,
            jobs,
            kernel: ltp::Kernel::Spindle(kernel.clone()),
            accel,
        };
        let failed = |outcome: &ltp::Outcome| -> Vec<String> {
            outcome
                .verdicts
                .iter()
                .filter(|(_, verdict)| *verdict != ltp::Verdict::Pass)
                .map(|(name, _)| name.clone())
                .collect()
        };
        let first = failed(&ltp::run(&options(kept.clone(), 2))?);
        if first.is_empty() {
            return Ok((kept.len(), Vec::new(), Vec::new()));
        }
        println!("ltp: failed once, running again: {}", first.join(" "));
        let second = failed(&ltp::run(&options(first.clone(), 1))?);
        let flaky = first
            .into_iter()
            .filter(|name| !second.contains(name))
            .collect();
        Ok((kept.len(), second, flaky))
    };
    let elapsed = || started_at.elapsed().as_secs_f64();
    match run() {
        Ok((count, regressed, flaky)) => {
            if !flaky.is_empty() {
                println!(
                    "ltp: passed only the second time (flaky): {}",
                    flaky.join(" ")
                );
            }
            if regressed.is_empty() {
                println!("PASS {LTP_SCENARIO} ({count} cases, {:.1} s)", elapsed());
                true
            } else {
                println!(
                    "FAIL {LTP_SCENARIO} ({:.1} s): {} of {count} kept cases fail: {} \
                     (their output: target/ltp/failures.txt)",
                    elapsed(),
                    regressed.len(),
                    regressed.join(" ")
                );
                false
            }
        }
        Err(error) => {
            println!("FAIL {LTP_SCENARIO} ({:.1} s): {error}", elapsed());
            false
        }
    }
}

fn check_command(args: Args) -> Result<ExitCode> {
    args.finish()?;
    Ok(if checks::run_all()? {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn architecture_command(args: Args) -> Result<ExitCode> {
    args.finish()?;
    if architecture::write()? {
        println!("docs/architecture.md: the crate diagram was regenerated");
    } else {
        println!("docs/architecture.md: already current");
    }
    Ok(ExitCode::SUCCESS)
}

fn bench_command(mut args: Args) -> Result<ExitCode> {
    let accel = args.accel()?;
    let profile = args.boot_profile();
    let is_icount = args.flag("--icount");
    let layouts = match args.value("--layouts")? {
        None => 1,
        Some(text) => match text.parse::<usize>() {
            Ok(n) if (1..=100).contains(&n) => n,
            _ => return Err(format!("--layouts needs a count from 1 to 100, not `{text}`").into()),
        },
    };
    let suite_name = args.positional();
    args.finish()?;
    let suites: Vec<&bench::Suite> = match &suite_name {
        Some(name) => vec![bench::find_suite(name).ok_or_else(|| {
            let names: Vec<&str> = bench::SUITES.iter().map(|suite| suite.name).collect();
            format!("unknown suite `{name}` (suites: {})", names.join(", "))
        })?],
        None => bench::SUITES.iter().collect(),
    };
    let mut context = bench::BenchContext::new(profile, accel, is_icount, qemu::run_timeout()?);
    context.layouts = layouts;
    let mut failed = Vec::new();
    for suite in suites {
        eprintln!("x: bench suite {}", suite.name);
        if let Err(error) = (suite.run)(&mut context) {
            eprintln!("x: bench suite {} failed: {error}", suite.name);
            failed.push(suite.name);
        }
    }
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        Err(format!("failed suites: {}", failed.join(", ")).into())
    }
}

fn build_extensions_command(args: Args) -> Result<ExitCode> {
    args.finish()?;
    for path in extensions::build_extensions()? {
        println!("{}", toolchain::display_path(&path));
    }
    Ok(ExitCode::SUCCESS)
}

fn fuzz_command(mut args: Args) -> Result<ExitCode> {
    let number = |text: Option<String>, name: &str| -> Result<Option<u64>> {
        text.map(|text| {
            let parsed = match text.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => text.parse(),
            };
            parsed.map_err(|_| format!("{name} needs a number, not {text:?}").into())
        })
        .transpose()
    };
    let accel = args.accel()?;
    let profile = args.boot_profile();
    let is_host_only = args.flag("--host-only");
    let is_kernel_only = args.flag("--kernel-only");
    let seconds = number(args.value("--seconds")?, "--seconds")?;
    let host_cases = number(args.value("--cases")?, "--cases")?.unwrap_or(if seconds.is_some() {
        u64::MAX / 2
    } else {
        100_000
    });
    let kernel_cases = number(args.value("--kernel-cases")?, "--kernel-cases")?.unwrap_or(10_000);
    let seed = number(args.value("--seed")?, "--seed")?.unwrap_or(fuzz::DEFAULT_SEED);
    let first = number(args.value("--first")?, "--first")?.unwrap_or(0);
    let is_syscalls = args.flag("--syscalls");
    let is_net = args.flag("--net");
    let is_native = args.flag("--native");
    let native_cases = number(args.value("--native-cases")?, "--native-cases")?.unwrap_or(50_000);
    let frames = number(args.value("--frames")?, "--frames")?.unwrap_or(1_000_000);
    let processes = number(args.value("--processes")?, "--processes")?.unwrap_or(64);
    let calls = number(args.value("--calls")?, "--calls")?.unwrap_or(5000);
    let jobs = match number(args.value("--jobs")?, "--jobs")? {
        Some(jobs) => jobs,
        None => std::thread::available_parallelism().map_or(1, |n| n.get() as u64),
    };
    args.finish()?;
    if is_net {
        let is_success = fuzz::run_net(frames, seed)?;
        println!(
            "fuzz: {}",
            if is_success {
                "no frame panicked the receive path"
            } else {
                "FAILED"
            }
        );
        return Ok(if is_success {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    if is_native {
        let is_success = fuzz::run_native(native_cases)?;
        let verdict = if is_success {
            "native code behaved as wasmi in every case"
        } else {
            "FAILED"
        };
        println!("fuzz: {verdict}");
        return Ok(if is_success {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    if is_syscalls {
        let seed = if seed == fuzz::DEFAULT_SEED { 1 } else { seed };
        let kernel = toolchain::build_kernel(profile, Image::Testing)?;
        let mut config = BootConfig::new(&kernel, "sysfuzz", accel);
        config
            .append
            .push_str(&format!(" spindle.sysfuzz={seed},{processes},{calls}"));
        let is_success = fuzz::run_syscalls(&config, processes, calls)?;
        println!(
            "fuzz: {}",
            if is_success {
                "the kernel came through"
            } else {
                "FAILED"
            }
        );
        return Ok(if is_success {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    if is_host_only && is_kernel_only {
        return Err("--host-only and --kernel-only exclude each other".into());
    }
    let mut is_success = true;
    if !is_kernel_only {
        let cases = fuzz::Cases {
            seed,
            first,
            count: host_cases,
        };
        is_success &= fuzz::run_host(cases, jobs, seconds)?;
        is_success &= fuzz::run_native(native_cases)?;
    }
    if !is_host_only {
        let kernel = toolchain::build_kernel(profile, Image::Testing)?;
        let cases = fuzz::Cases {
            seed,
            first,
            count: kernel_cases,
        };
        let boot = |archive: &Path| {
            let mut config = BootConfig::new(&kernel, "fuzz", accel);
            config.initrd = Some(archive.to_path_buf());
            config
        };
        is_success &= fuzz::run_kernel(cases, &boot, qemu::run_timeout()?)?;
    }
    println!(
        "fuzz: {}",
        if is_success {
            "every case passed"
        } else {
            "FAILED"
        }
    );
    Ok(if is_success {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn help_command(mut args: Args) -> Result<ExitCode> {
    let topic = args.positional();
    args.finish()?;
    match topic {
        None => print_overview(),
        Some(topic) => match COMMANDS.iter().find(|command| command.name == topic) {
            Some(command) => print_help(command),
            None => return Err(format!("no subcommand `{topic}`").into()),
        },
    }
    Ok(ExitCode::SUCCESS)
}

fn print_overview() {
    println!("Spindle's front door. usage: ./x SUBCOMMAND [OPTIONS]\n");
    println!("subcommands:");
    for command in COMMANDS {
        let summary = command.help.lines().next().unwrap_or_default().trim();
        println!("  {:<16} {summary}", command.name);
    }
    println!("\n`./x help SUBCOMMAND` or `./x SUBCOMMAND --help` shows its options.");
}

fn print_help(command: &Command) {
    println!(
        "./x {}: {}",
        command.name,
        command.help.trim_end().replace("\n ", "\n").trim_start()
    );
    if command.name == "bench" {
        println!("\nsuites:");
        let width = bench::SUITES
            .iter()
            .map(|suite| suite.name.len())
            .max()
            .unwrap_or(0);
        for suite in bench::SUITES {
            println!("  {:<width$}  {}", suite.name, suite.about);
        }
    }
}
