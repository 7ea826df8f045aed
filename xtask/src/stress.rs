//! `./x stress`: Debian's `stress-ng`, stressor by stressor, on Spindle
//! and on the Linux baseline in the same QEMU, side by side.
//!
//! `stress-ng` and the shared libraries it needs are fetched with `apt-get
//! download` ([`crate::debian`]) and put in the boot image under
//! `/stress` (`bin/stress-ng`, `lib/`), run through Debian's `ld.so`
//! from there, the same way on both kernels. A guest script runs each
//! stressor alone (`--NAME 1 --timeout Ns --verify`) and prints one line
//! per stressor, `stress NAME pass|fail|skip rc=N`: `stress-ng` exits 0
//! when the stressor ran and verified, 3 (no resource) or 4 (not
//! implemented) when it could not run here, anything else on failure.
//!
//! The harness reads the serial line as the run goes. A stressor whose
//! line does not come within [`STRESSOR_LIMIT`] froze the kernel (or
//! looped): it is reported `freeze`; a kernel panic is reported `panic`.
//! QEMU is then killed and booted again with the stressors not yet run,
//! so one stressor never hides the others.

use std::{
    collections::BTreeMap,
    fs,
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use crate::{
    debian, image,
    parse::GuestExit,
    qemu::{Accel, BootConfig, Guest},
    Result,
};

/// The stressors `./x stress` runs, by the kernel service each loads:
/// processes, signals, memory, files, pipes and IPC, timers, sockets over
/// loopback, scheduling, and computation.
pub const STRESSORS: &[&str] = &[
    // Processes.
    "fork",
    "vfork",
    "clone",
    "exec",
    "wait",
    "kill",
    "zombie",
    "pthread",
    // Signals.
    "sigpipe",
    "sigsegv",
    "sigq",
    "sigsuspend",
    "sigchld",
    "sigfpe",
    "sigtrap",
    "sigabrt",
    // Memory.
    "vm",
    "malloc",
    "brk",
    "mmap",
    "mremap",
    "stack",
    "memcpy",
    "mprotect",
    "madvise",
    // Files.
    "hdd",
    "dentry",
    "dir",
    "fstat",
    "open",
    "rename",
    "link",
    "symlink",
    "seek",
    "lockf",
    "flock",
    "fallocate",
    "io",
    "chmod",
    "chown",
    "utime",
    "getdent",
    // Pipes and IPC.
    "pipe",
    "pipeherd",
    "fifo",
    "futex",
    "eventfd",
    "msg",
    "mq",
    "sem",
    "shm",
    // Timers.
    "nanosleep",
    "timer",
    "clock",
    "itimer",
    "timerfd",
    "alarm",
    // Sockets over loopback.
    "sock",
    "udp",
    "epoll",
    "poll",
    "sockpair",
    // Scheduling.
    "yield",
    "schedpolicy",
    "affinity",
    "get",
    "nice",
    // Computation.
    "cpu",
    "matrix",
    "hash",
    "crypt",
    "qsort",
    "bsearch",
];

/// The short set `./x test` runs on Spindle: the stressors that froze it
/// (issue 27) and one of each other kind.
pub const TEST_STRESSORS: &[&str] = &[
    "sigpipe",
    "cpu",
    "matrix",
    "hash",
    "sigsegv",
    "sigq",
    "sigsuspend",
    "fork",
    "vm",
    "pipe",
    "nanosleep",
    "udp",
];

/// Seconds each stressor runs (`--timeout`).
pub const STRESSOR_SECONDS: u32 = 3;

/// How long the harness waits for a stressor's line before calling it a
/// freeze: its run, plus `stress-ng`'s start and the reaping of its
/// workers under emulation.
pub const STRESSOR_LIMIT: Duration = Duration::from_secs(90);

/// Debian packages that hold `stress-ng` and the shared libraries it
/// loads (found with `readelf -d`, transitively; bookworm's 0.15.06).
const PACKAGES: &[&str] = &[
    "stress-ng",
    "libc6",
    "libapparmor1",
    "libbsd0",
    "libcrypt1",
    "libdrm2",
    "libegl1",
    "libexpat1",
    "libffi8",
    "libgbm1",
    "libgcc-s1",
    "libgles2",
    "libglvnd0",
    "libipsec-mb1",
    "libjpeg62-turbo",
    "libjudydebian1",
    "libkmod2",
    "liblzma5",
    "libmd0",
    "libsctp1",
    "libssl3",
    "libwayland-server0",
    "libxxhash0",
    "libzstd1",
    "zlib1g",
];

/// Where the files go in the guest.
const GUEST_DIR: &str = "stress";

/// `stress-ng` as the guest script runs it: through Debian's `ld.so`,
/// with the libraries beside it.
const STRESS_NG: &str =
    "/stress/lib/ld-linux-x86-64.so.2 --library-path /stress/lib /stress/bin/stress-ng";

/// `stress-ng` and every shared library it loads, as boot-archive files
/// under `stress/`. A library that none of the packages holds is an
/// error naming it: the run would fail in the guest, later and less
/// clearly.
pub fn stress_files() -> Result<Vec<(String, Vec<u8>)>> {
    let mut libraries: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut program = None;
    for package in PACKAGES {
        let root = debian::package(package)?;
        if *package == "stress-ng" {
            program = Some(root.join("usr/bin/stress-ng"));
        }
        for directory in ["lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib64"] {
            let Ok(entries) = fs::read_dir(root.join(directory)) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.contains(".so") {
                    libraries.entry(name).or_insert(entry.path());
                }
            }
        }
    }
    let program = program.ok_or("the stress-ng package has no usr/bin/stress-ng")?;
    let mut files = vec![(format!("{GUEST_DIR}/bin/stress-ng"), fs::read(&program)?)];
    let mut wanted = vec!["ld-linux-x86-64.so.2".to_string()];
    wanted.extend(needed(&program)?);
    let mut taken = std::collections::BTreeSet::new();
    while let Some(name) = wanted.pop() {
        if !taken.insert(name.clone()) {
            continue;
        }
        let path = libraries.get(&name).ok_or_else(|| {
            format!("stress-ng needs {name}, which none of its Debian packages holds")
        })?;
        // The file a link names, under the name the loader asks for.
        let real = fs::canonicalize(path)?;
        wanted.extend(needed(&real)?);
        files.push((format!("{GUEST_DIR}/lib/{name}"), fs::read(&real)?));
    }
    Ok(files)
}

/// The shared libraries `elf` names (`DT_NEEDED`), from `readelf -d`.
pub fn needed(elf: &Path) -> Result<Vec<String>> {
    let output = Command::new("readelf")
        .arg("-d")
        .arg(elf)
        .output()
        .map_err(|error| format!("cannot run readelf (binutils): {error}"))?;
    if !output.status.success() {
        return Err(format!("readelf -d {} failed", elf.display()).into());
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| line.contains("(NEEDED)"))
        .filter_map(|line| Some(line.split_once('[')?.1.split_once(']')?.0.to_string()))
        .collect())
}

/// The guest script: each stressor alone, a `stress-begin NAME` line
/// before it and `stress NAME VERDICT rc=N` after, the last lines of its
/// output when it failed, and `stress-done` at the end.
pub fn guest_script(stressors: &[&str]) -> String {
    let mut script = String::from("cd /tmp\n");
    script.push_str(&format!("for name in {}; do\n", stressors.join(" ")));
    script.push_str(&format!(
        "  echo \"stress-begin $name\"\n  \
         {STRESS_NG} --$name 1 --timeout {STRESSOR_SECONDS}s --verify --temp-path /tmp \
         --metrics-brief </dev/null >/tmp/stress.log 2>&1\n  \
         rc=$?\n  \
         case $rc in 0) verdict=pass ;; 3|4) verdict=skip ;; *) verdict=fail ;; esac\n  \
         echo \"stress $name $verdict rc=$rc\"\n  \
         if [ $verdict != pass ]; then grep -v metrc /tmp/stress.log | tail -n 6 | sed 's/^/  | /'; fi\n\
         done\n\
         echo stress-done\n"
    ));
    script
}

/// How one stressor went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It ran and verified (`stress-ng` exit 0).
    Pass,
    /// It ran and failed, with `stress-ng`'s exit status.
    Fail(i32),
    /// It could not run here (no resource, not implemented).
    Skip(i32),
    /// No line came within [`STRESSOR_LIMIT`]: the kernel froze or the
    /// stressor never ended.
    Freeze,
    /// The kernel panicked (or QEMU ended) during it.
    Panic,
}

impl Verdict {
    /// The word `./x stress` prints.
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail(_) => "fail",
            Verdict::Skip(_) => "skip",
            Verdict::Freeze => "freeze",
            Verdict::Panic => "panic",
        }
    }
}

/// The verdict of a `stress NAME WORD rc=N` line for `name` in `log`
/// (anywhere in it: the script runs each stressor once), if there is one.
pub fn verdict_in(log: &str, name: &str) -> Option<Verdict> {
    let prefix = format!("stress {name} ");
    let line = log
        .lines()
        .find_map(|line| line.trim().strip_prefix(&prefix))?;
    let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
    let rc = rest
        .strip_prefix("rc=")
        .and_then(|rc| rc.trim().parse().ok())
        .unwrap_or(-1);
    Some(match word {
        "pass" => Verdict::Pass,
        "skip" => Verdict::Skip(rc),
        _ => Verdict::Fail(rc),
    })
}

/// The lines the guest script printed after `name`'s verdict (the end of
/// its output, `  | ` before each).
pub fn failure_lines<'a>(log: &'a str, name: &str) -> Vec<&'a str> {
    let prefix = format!("stress {name} ");
    log.lines()
        .skip_while(|line| !line.trim().starts_with(&prefix))
        .skip(1)
        .take_while(|line| line.starts_with("  | "))
        .map(|line| line.trim_start_matches("  | "))
        .collect()
}

/// One kernel to stress: how to boot it with a given guest script.
pub trait Kernel {
    /// Its name in the output.
    fn name(&self) -> &'static str;
    /// A boot that runs `script`.
    fn boot(&self, script: &str) -> Result<Guest>;
}

/// Runs `stressors` on `kernel`, one boot for as long as the kernel keeps
/// going, a new boot after a freeze or a panic; prints each verdict as
/// `stress NAME VERDICT (KERNEL)` and returns them in order.
pub fn run_stressors(kernel: &dyn Kernel, stressors: &[&str]) -> Result<Vec<(String, Verdict)>> {
    let mut verdicts = Vec::new();
    let mut left: Vec<&str> = stressors.to_vec();
    while !left.is_empty() {
        let mut guest = kernel.boot(&guest_script(&left))?;
        let mut from = 0;
        let mut ran = 0;
        for &name in &left {
            let started = Instant::now();
            let line = format!("stress {name} ");
            let verdict = match guest.wait_for(&line, from, Some(STRESSOR_LIMIT)) {
                Ok(at) => {
                    // The whole line, not only its start.
                    from = guest.wait_for("\n", at, Some(STRESSOR_LIMIT))?;
                    verdict_in(&guest.serial_log(), name).unwrap_or(Verdict::Fail(-1))
                }
                Err(_) => {
                    let log = guest.serial_log();
                    if log.contains("KERNEL PANIC")
                        || guest
                            .wait_exit(Some(Duration::ZERO))
                            .is_ok_and(|exit| exit != GuestExit::TimedOut)
                    {
                        Verdict::Panic
                    } else {
                        Verdict::Freeze
                    }
                }
            };
            println!(
                "stress {name} {} ({}, {:.0} s)",
                verdict.word(),
                kernel.name(),
                started.elapsed().as_secs_f64()
            );
            let is_stuck = matches!(verdict, Verdict::Freeze | Verdict::Panic);
            verdicts.push((name.to_string(), verdict));
            ran += 1;
            if is_stuck {
                let log_path = save_log(kernel.name(), name, &guest.full_log())?;
                println!("  the serial log is in {}", log_path.display());
                break;
            }
        }
        // The last lines of each failure follow its verdict line.
        let _ = guest.wait_for("stress-done", from, Some(Duration::from_secs(5)));
        let log = guest.serial_log();
        for (name, verdict) in &verdicts[verdicts.len() - ran..] {
            if matches!(verdict, Verdict::Fail(_)) {
                for line in failure_lines(&log, name) {
                    println!("  {name}: {line}");
                }
            }
        }
        guest.kill();
        keep_log(kernel.name(), &guest.full_log(), verdicts.len() == ran)?;
        left.drain(..ran);
    }
    Ok(verdicts)
}

/// Prints each stressor's verdicts side by side and the counts; returns
/// whether Spindle met the goal: no freeze, no panic, and every stressor
/// that passes on Linux passes on it too (only the first two without
/// Linux's figures).
pub fn print_summary(
    kernel: &str,
    ours: &[(String, Verdict)],
    theirs: Option<&[(String, Verdict)]>,
) -> bool {
    println!("\n{:<12} {:<8} {:<8}", "stressor", kernel, "linux");
    let mut behind = Vec::new();
    for (name, verdict) in ours {
        let linux = theirs.and_then(|theirs| {
            theirs
                .iter()
                .find(|(other, _)| other == name)
                .map(|(_, verdict)| verdict)
        });
        println!(
            "{name:<12} {:<8} {:<8}",
            verdict.word(),
            linux.map_or("-", Verdict::word)
        );
        if linux == Some(&Verdict::Pass) && *verdict != Verdict::Pass {
            behind.push(name.as_str());
        }
    }
    let count = |verdicts: &[(String, Verdict)]| {
        let mut counts = BTreeMap::new();
        for (_, verdict) in verdicts {
            *counts.entry(verdict.word()).or_insert(0) += 1;
        }
        ["pass", "fail", "skip", "freeze", "panic"]
            .iter()
            .map(|word| format!("{} {word}", counts.get(word).copied().unwrap_or(0)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!("stress: {kernel} {}", count(ours));
    if let Some(theirs) = theirs {
        println!("stress: linux {}", count(theirs));
        if behind.is_empty() {
            println!("stress: every stressor that passes on Linux passes on Spindle");
        } else {
            println!(
                "stress: passing on Linux, not on Spindle: {}",
                behind.join(" ")
            );
        }
    }
    let stuck = ours
        .iter()
        .filter(|(_, verdict)| matches!(verdict, Verdict::Freeze | Verdict::Panic))
        .count();
    stuck == 0 && behind.is_empty()
}

/// Keeps every boot's serial log of a run in
/// `target/qemu-logs/stress-KERNEL.log` (a new file for the first boot).
fn keep_log(kernel: &str, log: &str, is_first_boot: bool) -> Result<()> {
    use std::io::Write;
    let directory = crate::repo_root().join(crate::scenarios::LOG_DIRECTORY);
    fs::create_dir_all(&directory)?;
    let mut file = fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(!is_first_boot)
        .truncate(is_first_boot)
        .open(directory.join(format!("stress-{kernel}.log")))?;
    file.write_all(log.as_bytes())?;
    Ok(())
}

/// Keeps the serial log of a boot that froze or panicked.
fn save_log(kernel: &str, stressor: &str, log: &str) -> Result<PathBuf> {
    let directory = crate::repo_root().join(crate::scenarios::LOG_DIRECTORY);
    fs::create_dir_all(&directory)?;
    let path = directory.join(format!("stress-{kernel}-{stressor}.log"));
    fs::write(&path, log)?;
    Ok(path)
}

/// Spindle, booted in `exec` mode with the script as its command.
pub struct Spindle {
    /// The kernel ELF.
    pub kernel: PathBuf,
    /// The accelerator.
    pub accel: Accel,
    /// The stress-ng files ([`stress_files`]).
    pub files: Vec<(String, Vec<u8>)>,
}

impl Kernel for Spindle {
    fn name(&self) -> &'static str {
        "spindle"
    }

    fn boot(&self, script: &str) -> Result<Guest> {
        let mut extra = self.files.clone();
        extra.push(("etc/spindle-exec".to_string(), script.as_bytes().to_vec()));
        let archive = crate::repo_root().join("target/initrd-stress.cpio");
        let mut config = BootConfig::new(&self.kernel, "exec", self.accel);
        config.append.push_str(" spindle.quiet");
        config.initrd = Some(image::build_archive_with(extra, &archive)?);
        Guest::boot(&config, whole_run(script))
    }
}

/// Linux: the baseline's kernel (`../shared/baseline/build.sh`) and its
/// initramfs, with `stress-ng` and an `/init` that runs the script added
/// as a second archive, on the same QEMU machine and CPU model.
pub struct Linux {
    /// The baseline's output folder (`bench::build_linux_baseline`).
    pub baseline: PathBuf,
    /// The accelerator.
    pub accel: Accel,
    /// The stress-ng files ([`stress_files`]).
    pub files: Vec<(String, Vec<u8>)>,
}

impl Kernel for Linux {
    fn name(&self) -> &'static str {
        "linux"
    }

    fn boot(&self, script: &str) -> Result<Guest> {
        crate::linux_guest::boot(
            &self.baseline,
            self.accel,
            self.files.clone(),
            script,
            &crate::repo_root().join("target/baseline-linux-stress"),
            whole_run(script),
        )
    }
}

/// The deadline of a boot that runs `script`: every stressor at its limit.
fn whole_run(script: &str) -> Duration {
    let stressors = script
        .lines()
        .find_map(|line| line.strip_prefix("for name in "))
        .map_or(1, |list| {
            list.split_whitespace().count().saturating_sub(1).max(1)
        });
    STRESSOR_LIMIT * (stressors as u32 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_lines_are_read_with_their_status() {
        let log = "stress-begin sigq\nstress sigq pass rc=0\nstress cpu fail rc=2\n  | x\n\
                   stress mq skip rc=4\n";
        assert_eq!(verdict_in(log, "sigq"), Some(Verdict::Pass));
        assert_eq!(verdict_in(log, "cpu"), Some(Verdict::Fail(2)));
        assert_eq!(verdict_in(log, "mq"), Some(Verdict::Skip(4)));
        assert_eq!(verdict_in(log, "sig"), None);
        assert_eq!(verdict_in(log, "fork"), None);
        assert_eq!(failure_lines(log, "cpu"), vec!["x"]);
        assert!(failure_lines(log, "sigq").is_empty());
    }

    #[test]
    fn the_script_runs_each_stressor_alone_and_says_when_it_is_done() {
        let script = guest_script(&["cpu", "fork"]);
        assert!(script.contains("for name in cpu fork; do"));
        assert!(script.contains("--$name 1 --timeout 3s --verify"));
        assert!(script.contains("echo stress-done"));
        assert_eq!(whole_run(&script), STRESSOR_LIMIT * 3);
    }

    #[test]
    fn the_test_set_is_part_of_the_whole_set() {
        for name in TEST_STRESSORS {
            assert!(STRESSORS.contains(name), "{name}");
        }
    }
}
