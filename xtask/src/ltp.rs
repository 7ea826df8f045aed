//! `./x ltp`: the Linux Test Project's system-call tests on Spindle,
//! run as `../shared/ltp/README.md` says the Linux figure was obtained,
//! so the two compare case by case.
//!
//! - **Build**: LTP's source (`../shared/ltp/ltp-*.tar.xz`) is unpacked
//!   into `target/ltp/`, configured once with `LDFLAGS=-static` (static
//!   glibc programs), then `make -C lib` and `make -k -C DIR` for each
//!   folder of `testcases/kernel/syscalls` that holds a chosen case's
//!   program and does not have it built yet: a rerun builds nothing. The
//!   programs are stripped into `target/ltp/stripped/` (a third smaller:
//!   they travel in the boot archive, which lives in the guest's memory).
//! - **Cases**: a case is one line of `runtest/syscalls`, `NAME COMMAND`;
//!   by default the ones `selection.txt` names. A case of the selection
//!   that `runtest/syscalls` lacks, or whose program did not build, is a
//!   failure, reported with why.
//! - **Run**: cases go in batches, one boot of the production image in
//!   `exec` mode per batch, with the batch's programs and the helpers of
//!   their folders (children, exec targets, resource files) in
//!   `/ltp/testcases/bin` (`/ltp/bin` links there); the image's own
//!   `/etc` has the users and groups LTP's README asks for. A guest script runs each case from a
//!   scratch folder under `timeout 120 sh -c "COMMAND"` with the
//!   README's environment and prints `ltp-result NAME STATUS SECONDS`.
//!   Status 0 is a pass, 32 (TCONF) not applicable, anything else a
//!   failure.
//! - **Crashes and hangs**: when QEMU ends, or no result comes within
//!   [`CASE_LIMIT`] of the previous one, the running case is a failure
//!   (`kernel crash` or `kernel hang`) and the batch's remaining cases run
//!   again in a new boot.

use std::{
    collections::{BTreeMap, BTreeSet, VecDeque},
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::{
    image::BaseArchive,
    parse::GuestExit,
    qemu::{Accel, BootConfig, Guest},
    repo_root, Result,
};

/// LTP's source and case lists, relative to the repository root.
pub const SHARED_DIRECTORY: &str = "../shared/ltp";

/// Where LTP is unpacked, built and its results kept, relative to the
/// repository root.
pub const BUILD_DIRECTORY: &str = "target/ltp";

/// The runtest file whose lines are the cases.
const RUNTEST: &str = "runtest/syscalls";

/// The folder whose subfolders hold the cases' programs.
const SYSCALLS: &str = "testcases/kernel/syscalls";

/// Seconds each case may run in the guest (`timeout 120`, as on Linux).
pub const CASE_TIMEOUT_SECONDS: u64 = 120;

/// How long the harness waits for a case's result line after the
/// previous one before it calls the kernel hung: the case's own timeout,
/// plus the time `timeout` and the script need to report it under a
/// loaded emulator.
pub const CASE_LIMIT: Duration = Duration::from_secs(CASE_TIMEOUT_SECONDS + 60);

/// Extra time for the first case of a boot: QEMU's start, the kernel's
/// boot and the unpacking of the archive.
const BOOT_ALLOWANCE: Duration = Duration::from_secs(120);

/// Cases per boot: enough that boots are a small part of the run, few
/// enough that a crash costs little.
const BATCH_CASES: usize = 40;

/// Most bytes of LTP programs in one boot archive (it lives in the
/// guest's 512 MiB, and is unpacked into its memory-backed files).
const BATCH_BYTES: u64 = 64 << 20;

/// Where the programs go in the guest (`LTPROOT`).
const GUEST_ROOT: &str = "/ltp";

/// One line of `runtest/syscalls`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// The case's name, the line's first word.
    pub name: String,
    /// The rest of the line: the program and its arguments.
    pub command: String,
}

impl Case {
    /// The program the command runs (its first word).
    pub fn program(&self) -> &str {
        self.command.split_whitespace().next().unwrap_or_default()
    }
}

/// The cases of a runtest file, in its order (comments and blank lines
/// skipped).
pub fn parse_runtest(text: &str) -> Vec<Case> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| {
            let (name, command) = line.split_once(char::is_whitespace)?;
            Some(Case {
                name: name.to_string(),
                command: command.trim().to_string(),
            })
        })
        .collect()
}

/// The names of a case list (`selection.txt`, `linux-pass.txt`): one a
/// line, `#` comments and blank lines skipped.
pub fn parse_names(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether `name` is chosen by `pattern`: one of its comma-separated
/// alternatives, each a glob (`*`, `?`) matching the whole name, or else
/// a substring of it.
pub fn matches_pattern(pattern: &str, name: &str) -> bool {
    if pattern.contains(',') {
        return pattern
            .split(',')
            .filter(|alternative| !alternative.is_empty())
            .any(|alternative| matches_pattern(alternative, name));
    }
    if pattern.contains(['*', '?']) {
        glob_matches(pattern.as_bytes(), name.as_bytes())
    } else {
        name.contains(pattern)
    }
}

fn glob_matches(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => (0..=text.len()).any(|skip| glob_matches(rest, &text[skip..])),
        Some((b'?', rest)) => !text.is_empty() && glob_matches(rest, &text[1..]),
        Some((&byte, rest)) => text.first() == Some(&byte) && glob_matches(rest, &text[1..]),
    }
}

/// How one case went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Exit status 0.
    Pass,
    /// Exit status 32: LTP's TCONF, the case does not apply here.
    Conf,
    /// Anything else, with why.
    Fail(Failure),
}

/// Why a case failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// It ran and exited with this status after this many seconds.
    Exit { status: u32, seconds: u64 },
    /// The selection names it but `runtest/syscalls` has no such line.
    NotInRuntest,
    /// Its program did not build.
    NotBuilt,
    /// QEMU ended while it ran (a panic, a fault, a reset): what QEMU's
    /// exit was.
    KernelCrash(String),
    /// No result came within [`CASE_LIMIT`].
    KernelHang,
}

impl Verdict {
    /// The word `./x ltp` prints and `results.txt` holds.
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Conf => "conf",
            Verdict::Fail(_) => "fail",
        }
    }

    /// The verdict of a case that exited with `status`.
    pub fn of_status(status: u32, seconds: u64) -> Self {
        match status {
            0 => Verdict::Pass,
            32 => Verdict::Conf,
            _ => Verdict::Fail(Failure::Exit { status, seconds }),
        }
    }

    /// What a person reads after the word: why it failed.
    pub fn detail(&self) -> String {
        match self {
            Verdict::Pass | Verdict::Conf => String::new(),
            Verdict::Fail(Failure::Exit { status, seconds }) => {
                if *seconds >= CASE_TIMEOUT_SECONDS {
                    format!("timed out: exit {status} after {seconds} s")
                } else {
                    format!("exit {status} after {seconds} s")
                }
            }
            Verdict::Fail(Failure::NotInRuntest) => format!("not in {RUNTEST}"),
            Verdict::Fail(Failure::NotBuilt) => "its program did not build".into(),
            Verdict::Fail(Failure::KernelCrash(exit)) => {
                format!("kernel crash while it ran: {exit}")
            }
            Verdict::Fail(Failure::KernelHang) => {
                format!("kernel hang: no result within {} s", CASE_LIMIT.as_secs())
            }
        }
    }
}

/// A result line of the guest script, `ltp-result NAME STATUS SECONDS`:
/// the name, exit status and seconds.
pub fn parse_result_line(line: &str) -> Option<(&str, u32, u64)> {
    let mut words = line.trim().strip_prefix("ltp-result ")?.split_whitespace();
    let name = words.next()?;
    let status = words.next()?.parse().ok()?;
    let seconds = words.next()?.parse().ok()?;
    Some((name, status, seconds))
}

/// `text` as one shell word in single quotes.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The guest script for `cases`: the README's environment, then each
/// case from a fresh scratch folder under `timeout 120 sh -c "COMMAND"`,
/// its result line after it and, when it failed, the end of its output
/// (`  | ` before each line); `ltp-done` at the end.
pub fn guest_script(cases: &[Case]) -> String {
    let mut script = format!(
        "export TMPDIR=/tmp LTPROOT={GUEST_ROOT} PATH={GUEST_ROOT}/bin:$PATH LTP_TIMEOUT_MUL=4\n\
         ltp_case() {{\n  \
           echo \"ltp-begin $1\"\n  \
           scratch=/tmp/ltp-case-$1\n  \
           rm -rf \"$scratch\"; mkdir -p \"$scratch\"; cd \"$scratch\"\n  \
           start=$(date +%s)\n  \
           timeout {CASE_TIMEOUT_SECONDS} sh -c \"$2\" </dev/null >/tmp/ltp-output 2>&1\n  \
           status=$?\n  \
           end=$(date +%s)\n  \
           cd /; rm -rf \"$scratch\"\n  \
           echo \"ltp-result $1 $status $((end - start))\"\n  \
           if [ $status != 0 ] && [ $status != 32 ]; then tail -n 15 /tmp/ltp-output | sed 's/^/  | /'; fi\n\
         }}\n"
    );
    for case in cases {
        script.push_str(&format!(
            "ltp_case {} {}\n",
            shell_quote(&case.name),
            shell_quote(&case.command)
        ));
    }
    script.push_str("echo ltp-done\n");
    script
}

/// The lines the guest script printed after `name`'s result (the end of
/// its output, `  | ` before each).
pub fn failure_lines<'a>(log: &'a str, name: &str) -> Vec<&'a str> {
    let prefix = format!("ltp-result {name} ");
    log.lines()
        .skip_while(|line| !line.starts_with(&prefix))
        .skip(1)
        .take_while(|line| line.starts_with("  | "))
        .map(|line| line.trim_start_matches("  | "))
        .collect()
}

/// LTP's unpacked source tree, configured and with its library built.
pub struct Tree {
    root: PathBuf,
    /// Every program LTP's build makes, by folder (relative to the tree):
    /// the `.c` files' names and the words of the folder's Makefile.
    folders: BTreeMap<PathBuf, FolderSources>,
}

/// What a folder of `testcases/kernel/syscalls` can build.
struct FolderSources {
    /// The names of its `.c` files, without `.c`.
    sources: BTreeSet<String>,
    /// Its Makefile's text (names of programs built from another
    /// folder's source, `sethostname01: .../setdomainname01.c`).
    makefile: String,
}

/// The one `ltp-*.tar.xz` of [`SHARED_DIRECTORY`].
fn tarball() -> Result<PathBuf> {
    let shared = repo_root().join(SHARED_DIRECTORY);
    let entries = fs::read_dir(&shared).map_err(|error| {
        format!(
            "{}: {error} (./x ltp needs LTP's source and case lists there)",
            shared.display()
        )
    })?;
    let mut found: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("ltp-") && name.ends_with(".tar.xz"))
        })
        .collect();
    found.sort();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(format!("no ltp-*.tar.xz in {}", shared.display()).into()),
        _ => Err(format!(
            "more than one ltp-*.tar.xz in {}; keep one",
            shared.display()
        )
        .into()),
    }
}

/// Reads a file of [`SHARED_DIRECTORY`] (`selection.txt`, `linux-pass.txt`).
pub fn shared_list(name: &str) -> Result<Vec<String>> {
    let path = repo_root().join(SHARED_DIRECTORY).join(name);
    let text = fs::read_to_string(&path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    Ok(parse_names(&text))
}

/// The build log, where every step's output goes.
fn build_log() -> PathBuf {
    repo_root().join(BUILD_DIRECTORY).join("build.log")
}

/// Runs `command` (in `folder`) with its output appended to the build log;
/// fails naming `what` and the log.
fn run_logged(command: &mut Command, folder: &Path, what: &str) -> Result<bool> {
    use std::io::Write;
    let log_path = build_log();
    let mut log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)?;
    writeln!(log, "\n==== {what} ====")?;
    let status = command
        .current_dir(folder)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .status()
        .map_err(|error| format!("{what}: cannot start {:?}: {error}", command.get_program()))?;
    Ok(status.success())
}

fn run_logged_checked(command: &mut Command, folder: &Path, what: &str) -> Result<()> {
    if run_logged(command, folder, what)? {
        Ok(())
    } else {
        Err(format!(
            "{what} failed; its output is in {}",
            crate::toolchain::display_path(&build_log())
        )
        .into())
    }
}

/// `make`'s parallelism: every processor.
fn make_jobs() -> String {
    let jobs = std::thread::available_parallelism().map_or(1, |count| count.get());
    format!("-j{jobs}")
}

impl Tree {
    /// Unpacks, configures and builds LTP's library, each only if not done
    /// before (a marker file records each finished step).
    pub fn prepare() -> Result<Self> {
        let tarball = tarball()?;
        let build = repo_root().join(BUILD_DIRECTORY);
        fs::create_dir_all(&build)?;
        let stem = tarball
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(|name| name.strip_suffix(".tar.xz"))
            .ok_or("odd LTP tarball name")?
            .to_string();
        let root = build.join(&stem);
        let unpacked = root.join(".spindle-unpacked");
        if !unpacked.is_file() {
            if root.exists() {
                fs::remove_dir_all(&root)?;
            }
            eprintln!("x: unpacking {}", tarball.display());
            let mut tar = Command::new("tar");
            tar.arg("xJf").arg(&tarball);
            run_logged_checked(&mut tar, &build, "unpacking LTP")?;
            if !root.is_dir() {
                return Err(format!("{} did not unpack into {stem}/", tarball.display()).into());
            }
            fs::write(&unpacked, tarball.display().to_string())?;
        }
        let configured = root.join(".spindle-configured");
        if !configured.is_file() {
            eprintln!("x: configuring LTP (make autotools, ./configure LDFLAGS=-static; minutes)");
            run_logged_checked(
                Command::new("make").arg("autotools"),
                &root,
                "make autotools",
            )?;
            run_logged_checked(
                Command::new("./configure").arg("LDFLAGS=-static"),
                &root,
                "./configure LDFLAGS=-static",
            )?;
            fs::write(&configured, "LDFLAGS=-static\n")?;
        }
        if !root.join("lib/libltp.a").is_file() {
            eprintln!("x: building LTP's library (make -C lib)");
            run_logged_checked(
                Command::new("make").args(["-C", "lib", &make_jobs()]),
                &root,
                "make -C lib",
            )?;
        }
        let mut folders = BTreeMap::new();
        index_folders(&root, Path::new(SYSCALLS), &mut folders)?;
        Ok(Self { root, folders })
    }

    /// The cases of `runtest/syscalls`.
    pub fn runtest(&self) -> Result<Vec<Case>> {
        let path = self.root.join(RUNTEST);
        let text = fs::read_to_string(&path)
            .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
        Ok(parse_runtest(&text))
    }

    /// The folder (relative to the tree) that builds `program`: the one
    /// with `program.c`, or the `.c` of which it is the 64-bit-offset
    /// variant (`fcntl01_64` from `fcntl01.c`), or whose Makefile names it.
    pub fn folder_of(&self, program: &str) -> Option<&Path> {
        let base = program.strip_suffix("_64").unwrap_or(program);
        let by_source = self
            .folders
            .iter()
            .find(|(_, folder)| folder.sources.contains(program) || folder.sources.contains(base));
        let by_makefile = || {
            self.folders.iter().find(|(_, folder)| {
                folder
                    .makefile
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .any(|word| word == program)
            })
        };
        by_source
            .or_else(by_makefile)
            .map(|(path, _)| path.as_path())
    }

    /// Builds (`make -k`) every folder of `programs` in which one of them
    /// is missing; returns the folders whose make failed. A folder that
    /// fails to build all of its programs is not fatal: the cases whose
    /// programs are there still run.
    pub fn build_programs(&self, programs: &[&str]) -> Result<Vec<PathBuf>> {
        let mut to_build = BTreeSet::new();
        for program in programs {
            if let Some(folder) = self.folder_of(program) {
                if !self.root.join(folder).join(program).is_file() {
                    to_build.insert(folder.to_path_buf());
                }
            }
        }
        let mut failed = Vec::new();
        let total = to_build.len();
        for (index, folder) in to_build.into_iter().enumerate() {
            eprintln!(
                "x: building LTP {} ({} of {total})",
                folder.display(),
                index + 1
            );
            let what = format!("make -k -C {}", folder.display());
            let mut make = Command::new("make");
            make.arg("-k").arg("-C").arg(&folder).arg(make_jobs());
            if !run_logged(&mut make, &self.root, &what)? {
                failed.push(folder);
            }
        }
        Ok(failed)
    }

    /// The built `program` of `folder`, stripped (cached in
    /// `target/ltp/stripped/`, redone when the build is newer), or `None`
    /// if it did not build.
    fn stripped(&self, folder: &Path, program: &str) -> Result<Option<PathBuf>> {
        let built = self.root.join(folder).join(program);
        if !built.is_file() {
            return Ok(None);
        }
        let stripped = repo_root()
            .join(BUILD_DIRECTORY)
            .join("stripped")
            .join(folder)
            .join(program);
        let is_current = match (fs::metadata(&stripped), fs::metadata(&built)) {
            (Ok(stripped), Ok(built)) => stripped.modified()? >= built.modified()?,
            _ => false,
        };
        if !is_current {
            fs::create_dir_all(stripped.parent().ok_or("no parent")?)?;
            if !is_elf_executable(&built)? {
                // A shell script (`test_ioctl`): nothing to strip.
                fs::copy(&built, &stripped)?;
                return Ok(Some(stripped));
            }
            crate::toolchain::run_checked(
                Command::new("strip").arg("-o").arg(&stripped).arg(&built),
                &format!("strip {}", built.display()),
            )?;
        }
        Ok(Some(stripped))
    }

    /// The programs of `folder` that no runtest line runs: helpers its
    /// cases start (children, exec targets) or copy (resource files).
    fn helpers(&self, folder: &Path, case_programs: &BTreeSet<String>) -> Result<Vec<String>> {
        let mut helpers = Vec::new();
        for entry in fs::read_dir(self.root.join(folder))? {
            let path = entry?.path();
            let Some(name) = path.file_name().and_then(|name| name.to_str()) else {
                continue;
            };
            if path.is_file() && !case_programs.contains(name) && is_elf_executable(&path)? {
                helpers.push(name.to_string());
            }
        }
        helpers.sort();
        Ok(helpers)
    }
}

/// Whether `path` is an ELF file with an execute bit.
fn is_elf_executable(path: &Path) -> Result<bool> {
    use std::{io::Read, os::unix::fs::PermissionsExt};
    if fs::metadata(path)?.permissions().mode() & 0o111 == 0 {
        return Ok(false);
    }
    let mut magic = [0u8; 4];
    let is_elf = fs::File::open(path)?.read_exact(&mut magic).is_ok() && magic == *b"\x7fELF";
    Ok(is_elf)
}

/// Records the folders under `relative` (recursively) that have a
/// Makefile, with their sources.
fn index_folders(
    root: &Path,
    relative: &Path,
    folders: &mut BTreeMap<PathBuf, FolderSources>,
) -> Result<()> {
    let folder = root.join(relative);
    let mut sources = BTreeSet::new();
    let mut children = Vec::new();
    for entry in fs::read_dir(&folder)? {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|name| name.to_str()) else {
            continue;
        };
        if path.is_dir() {
            children.push(relative.join(name));
        } else if let Some(stem) = name.strip_suffix(".c") {
            sources.insert(stem.to_string());
        }
    }
    if let Ok(makefile) = fs::read_to_string(folder.join("Makefile")) {
        if relative != Path::new(SYSCALLS) {
            folders.insert(relative.to_path_buf(), FolderSources { sources, makefile });
        }
    }
    for child in children {
        index_folders(root, &child, folders)?;
    }
    Ok(())
}

/// A case ready to run: its line and the files it needs.
#[derive(Clone)]
struct Runnable {
    case: Case,
    /// Stripped programs (its own and its folder's helpers), by the name
    /// they have in the guest.
    files: Vec<(String, PathBuf)>,
}

/// A run's cases in batches, one boot each.
struct Batch {
    /// Its number, for log names.
    number: usize,
    /// How many boots it has had (a crash reboots the rest).
    boot: usize,
    cases: Vec<Runnable>,
}

/// Splits `runnables` (in order) into batches of at most [`BATCH_CASES`]
/// cases and about [`BATCH_BYTES`] of programs.
fn batches(runnables: Vec<Runnable>) -> Result<Vec<Batch>> {
    let mut sizes = Vec::new();
    for runnable in &runnables {
        let mut files = Vec::new();
        for (name, path) in &runnable.files {
            files.push((name.clone(), fs::metadata(path)?.len()));
        }
        sizes.push(files);
    }
    let mut runnables = runnables.into_iter();
    Ok(batch_lengths(&sizes, BATCH_CASES, BATCH_BYTES)
        .into_iter()
        .enumerate()
        .map(|(index, length)| Batch {
            number: index + 1,
            boot: 1,
            cases: runnables.by_ref().take(length).collect(),
        })
        .collect())
}

/// How many consecutive cases go in each batch, given each case's files
/// (name in the guest, bytes): a batch ends before the case that would
/// make it more than `most_cases` cases or more than `most_bytes` of
/// files (a file two of its cases need counts once). A case alone over
/// `most_bytes` still gets a batch.
fn batch_lengths(files: &[Vec<(String, u64)>], most_cases: usize, most_bytes: u64) -> Vec<usize> {
    let mut lengths = Vec::new();
    let mut length = 0;
    let mut names = BTreeSet::new();
    let mut bytes = 0u64;
    for case_files in files {
        let added = |names: &BTreeSet<&str>| -> u64 {
            case_files
                .iter()
                .filter(|(name, _)| !names.contains(name.as_str()))
                .map(|(_, size)| size)
                .sum()
        };
        if length > 0 && (length >= most_cases || bytes + added(&names) > most_bytes) {
            lengths.push(length);
            length = 0;
            names.clear();
            bytes = 0;
        }
        bytes += added(&names);
        names.extend(case_files.iter().map(|(name, _)| name.as_str()));
        length += 1;
    }
    if length > 0 {
        lengths.push(length);
    }
    lengths
}

/// The cases `./x test` runs and requires to pass: every case of
/// `linux-pass.txt` that has passed on Spindle, kept by
/// `./x ltp --keep-passing` (which only adds; a case leaves by hand).
pub const KEPT_LIST: &str = "xtask/ltp-passing.txt";

/// The names in [`KEPT_LIST`].
pub fn kept_cases() -> Result<Vec<String>> {
    let path = repo_root().join(KEPT_LIST);
    let text = fs::read_to_string(&path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    Ok(parse_names(&text))
}

/// Adds to [`KEPT_LIST`] every case of `outcome` that passed and passes
/// on Linux, keeping the file's order (`runtest/syscalls`'s, new names
/// where the run had them); returns the names added.
pub fn keep_passing(outcome: &Outcome) -> Result<Vec<String>> {
    let linux_pass: BTreeSet<String> = shared_list("linux-pass.txt")?.into_iter().collect();
    let kept = kept_cases()?;
    let kept_set: BTreeSet<&str> = kept.iter().map(String::as_str).collect();
    let added: Vec<String> = outcome
        .verdicts
        .iter()
        .filter(|(name, verdict)| {
            *verdict == Verdict::Pass
                && linux_pass.contains(name)
                && !kept_set.contains(name.as_str())
        })
        .map(|(name, _)| name.clone())
        .collect();
    if !added.is_empty() {
        let path = repo_root().join(KEPT_LIST);
        let mut text = fs::read_to_string(&path)?;
        for name in &added {
            text.push_str(name);
            text.push('\n');
        }
        fs::write(&path, text)?;
    }
    Ok(added)
}

/// What `./x ltp` was asked for.
pub struct Options {
    /// Only cases matching this ([`matches_pattern`]).
    pub pattern: Option<String>,
    /// These cases instead of the selection (`./x test` runs
    /// [`KEPT_LIST`]'s).
    pub cases: Option<Vec<String>>,
    /// Every case of `runtest/syscalls`, not only `selection.txt`'s.
    pub is_all: bool,
    /// Boots at a time.
    pub jobs: usize,
    /// The kernel the cases run on.
    pub kernel: Kernel,
    /// The accelerator.
    pub accel: Accel,
}

/// The kernel the cases run on.
pub enum Kernel {
    /// Spindle's production image: its ELF.
    Spindle(PathBuf),
    /// The Linux baseline (`../shared/baseline/build.sh`'s output folder),
    /// booted on the same QEMU machine, for the figure to compare with.
    Linux(PathBuf),
}

impl Kernel {
    /// Its name in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Kernel::Spindle(_) => "Spindle",
            Kernel::Linux(_) => "Linux",
        }
    }

    /// Where a run on it keeps a report called `file` (`results.txt`,
    /// `failures.txt`): Linux's get `-linux` before the extension, so
    /// that the two runs' reports sit side by side.
    fn report_path(&self, file: &str) -> PathBuf {
        let file = match self {
            Kernel::Spindle(_) => file.to_string(),
            Kernel::Linux(_) => file.replacen('.', "-linux.", 1),
        };
        repo_root().join(BUILD_DIRECTORY).join(file)
    }
}

/// What every boot of a run starts from: Spindle's usual boot archive,
/// or, for Linux, the users, groups and hosts LTP's README asks for
/// (Spindle's image has them from the same folder).
enum BootBase {
    Spindle(BaseArchive),
    Linux(Vec<crate::image::ArchiveFile>),
}

impl BootBase {
    fn gather(kernel: &Kernel) -> Result<Self> {
        Ok(match kernel {
            Kernel::Spindle(_) => BootBase::Spindle(BaseArchive::gather()?),
            Kernel::Linux(_) => {
                let folder = repo_root().join(crate::image::ETC_DIRECTORY);
                let mut files = Vec::new();
                for name in ["passwd", "group", "hosts"] {
                    files.push((format!("etc/{name}"), fs::read(folder.join(name))?));
                }
                BootBase::Linux(files)
            }
        })
    }
}

/// Everything a run found, in `runtest/syscalls` order.
pub struct Outcome {
    /// Each case's name and verdict.
    pub verdicts: Vec<(String, Verdict)>,
}

/// Builds what the chosen cases need and runs them; prints each verdict
/// as it comes (`ltp NAME pass|conf|fail`), keeps them in
/// `target/ltp/results.txt`, and returns them.
pub fn run(options: &Options) -> Result<Outcome> {
    let tree = Tree::prepare()?;
    let runtest = tree.runtest()?;
    let wanted: Vec<String> = if let Some(cases) = &options.cases {
        cases.clone()
    } else if options.is_all {
        runtest.iter().map(|case| case.name.clone()).collect()
    } else {
        shared_list("selection.txt")?
    };
    let wanted: Vec<String> = wanted
        .into_iter()
        .filter(|name| {
            options
                .pattern
                .as_deref()
                .is_none_or(|pattern| matches_pattern(pattern, name))
        })
        .collect();
    if wanted.is_empty() {
        return Err(format!(
            "no case matches {}",
            options.pattern.as_deref().unwrap_or("the selection")
        )
        .into());
    }
    let by_name: BTreeMap<&str, &Case> = runtest
        .iter()
        .map(|case| (case.name.as_str(), case))
        .collect();
    let mut early: Vec<(String, Verdict)> = Vec::new();
    let mut chosen: Vec<Case> = Vec::new();
    for name in &wanted {
        match by_name.get(name.as_str()) {
            Some(case) => chosen.push((*case).clone()),
            None => early.push((name.clone(), Verdict::Fail(Failure::NotInRuntest))),
        }
    }
    let programs: Vec<&str> = chosen.iter().map(Case::program).collect();
    let started = Instant::now();
    let failed_folders = tree.build_programs(&programs)?;
    for folder in &failed_folders {
        eprintln!(
            "x: make -k -C {} failed for some programs (see {})",
            folder.display(),
            crate::toolchain::display_path(&build_log())
        );
    }
    eprintln!(
        "x: LTP programs ready in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    let case_programs: BTreeSet<String> = runtest
        .iter()
        .map(|case| case.program().to_string())
        .collect();
    let mut helpers_of: BTreeMap<PathBuf, Vec<(String, PathBuf)>> = BTreeMap::new();
    let mut runnables = Vec::new();
    for case in chosen {
        let program = case.program().to_string();
        let Some(folder) = tree.folder_of(&program).map(Path::to_path_buf) else {
            early.push((case.name, Verdict::Fail(Failure::NotBuilt)));
            continue;
        };
        let Some(stripped) = tree.stripped(&folder, &program)? else {
            early.push((case.name, Verdict::Fail(Failure::NotBuilt)));
            continue;
        };
        if !helpers_of.contains_key(&folder) {
            let mut helpers = Vec::new();
            for helper in tree.helpers(&folder, &case_programs)? {
                if let Some(path) = tree.stripped(&folder, &helper)? {
                    helpers.push((helper, path));
                }
            }
            helpers_of.insert(folder.clone(), helpers);
        }
        let mut files = vec![(program, stripped)];
        files.extend(helpers_of[&folder].iter().cloned());
        runnables.push(Runnable { case, files });
    }
    for (name, verdict) in &early {
        print_verdict(name, verdict);
    }
    // This run's failures only.
    let failures = options.kernel.report_path("failures.txt");
    if failures.exists() {
        fs::remove_file(&failures)?;
    }
    let total_runnable = runnables.len();
    let queue = Mutex::new(VecDeque::from(batches(runnables)?));
    let results = Mutex::new(early);
    let base = BootBase::gather(&options.kernel)?;
    eprintln!(
        "x: running {total_runnable} LTP cases on {} in {} boots, {} at a time",
        options.kernel.name(),
        lock(&queue).len(),
        options.jobs
    );
    let errors = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for worker in 0..options.jobs {
            let (queue, results, errors, base) = (&queue, &results, &errors, &base);
            scope.spawn(move || loop {
                let Some(batch) = lock(queue).pop_front() else {
                    return;
                };
                match run_batch(options, base, worker, &batch) {
                    Ok(BatchOutcome { verdicts, rest }) => {
                        lock(results).extend(verdicts);
                        if !rest.is_empty() {
                            lock(queue).push_front(Batch {
                                number: batch.number,
                                boot: batch.boot + 1,
                                cases: rest,
                            });
                        }
                    }
                    Err(error) => {
                        lock(errors).push(format!("batch {}: {error}", batch.number));
                        return;
                    }
                }
            });
        }
    });
    let errors = errors.into_inner().unwrap_or_default();
    if !errors.is_empty() {
        return Err(errors.join("; ").into());
    }
    let mut verdicts = results.into_inner().unwrap_or_default();
    let order: BTreeMap<&str, usize> = wanted
        .iter()
        .enumerate()
        .map(|(index, name)| (name.as_str(), index))
        .collect();
    verdicts.sort_by_key(|(name, _)| order.get(name.as_str()).copied().unwrap_or(usize::MAX));
    let results_path = options.kernel.report_path("results.txt");
    let text: String = verdicts
        .iter()
        .map(|(name, verdict)| format!("{name} {}\n", verdict.word()))
        .collect();
    fs::write(&results_path, text)?;
    eprintln!(
        "x: LTP cases ran in {:.0} s; verdicts in {}",
        started.elapsed().as_secs_f64(),
        crate::toolchain::display_path(&results_path)
    );
    Ok(Outcome { verdicts })
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn print_verdict(name: &str, verdict: &Verdict) {
    let detail = verdict.detail();
    if detail.is_empty() {
        println!("ltp {name} {}", verdict.word());
    } else {
        println!("ltp {name} {} ({detail})", verdict.word());
    }
}

/// What one boot of a batch came to.
struct BatchOutcome {
    /// The verdicts it reached, in order.
    verdicts: Vec<(String, Verdict)>,
    /// After a crash or hang, the cases still to run.
    rest: Vec<Runnable>,
}

/// Boots once for `batch` and runs its cases until the end or a crash or
/// hang.
fn run_batch(
    options: &Options,
    base: &BootBase,
    worker: usize,
    batch: &Batch,
) -> Result<BatchOutcome> {
    let cases: Vec<Case> = batch
        .cases
        .iter()
        .map(|runnable| runnable.case.clone())
        .collect();
    let mut programs: Vec<(String, Vec<u8>)> = Vec::new();
    let mut placed = BTreeSet::new();
    for runnable in &batch.cases {
        for (name, path) in &runnable.files {
            if placed.insert(name.clone()) {
                programs.push((
                    format!("{}/testcases/bin/{name}", &GUEST_ROOT[1..]),
                    fs::read(path)?,
                ));
            }
        }
    }
    let whole_run = BOOT_ALLOWANCE + CASE_LIMIT * (cases.len() as u32 + 1);
    let mut guest = match (&options.kernel, base) {
        (Kernel::Spindle(kernel), BootBase::Spindle(archive)) => {
            let mut extra = vec![(
                "etc/spindle-exec".to_string(),
                guest_script(&cases).into_bytes(),
            )];
            extra.extend(programs);
            let links = vec![(
                format!("{}/bin", &GUEST_ROOT[1..]),
                format!("{GUEST_ROOT}/testcases/bin"),
            )];
            let path = repo_root()
                .join(BUILD_DIRECTORY)
                .join(format!("initrd-job{worker}.cpio"));
            let mut config = BootConfig::new(kernel, "exec", options.accel);
            config.append.push_str(" spindle.quiet");
            config.initrd = Some(archive.write_with(extra, links, &path)?);
            Guest::boot(&config, whole_run)?
        }
        (Kernel::Linux(baseline), BootBase::Linux(etc)) => {
            let mut files = etc.clone();
            files.extend(programs);
            // The baseline's archive format has no links: made at boot.
            let script = format!(
                "ln -s {GUEST_ROOT}/testcases/bin {GUEST_ROOT}/bin\n{}",
                guest_script(&cases)
            );
            let work = repo_root()
                .join(BUILD_DIRECTORY)
                .join(format!("linux-job{worker}"));
            crate::linux_guest::boot(baseline, options.accel, files, &script, &work, whole_run)?
        }
        _ => return Err("the boot base does not match the kernel".into()),
    };
    let mut verdicts = Vec::new();
    let mut from = 0;
    let mut rest = Vec::new();
    for (index, runnable) in batch.cases.iter().enumerate() {
        let name = &runnable.case.name;
        let limit = if index == 0 {
            CASE_LIMIT + BOOT_ALLOWANCE
        } else {
            CASE_LIMIT
        };
        let pattern = format!("ltp-result {name} ");
        // The whole line, not only its start.
        let found = guest
            .wait_for(&pattern, from, Some(limit))
            .and_then(|at| guest.wait_for("\n", at, Some(CASE_LIMIT)));
        let verdict = match found {
            Ok(end) => {
                from = end;
                let log = guest.serial_log();
                let line = log
                    .lines()
                    .find(|line| line.starts_with(&pattern))
                    .unwrap_or_default();
                match parse_result_line(line) {
                    Some((_, status, seconds)) => Verdict::of_status(status, seconds),
                    None => return Err(format!("unreadable result line `{line}`").into()),
                }
            }
            Err(_) => {
                let exit = guest.wait_exit(Some(Duration::ZERO))?;
                let verdict = if exit == GuestExit::TimedOut {
                    Verdict::Fail(Failure::KernelHang)
                } else {
                    Verdict::Fail(Failure::KernelCrash(exit.to_string()))
                };
                print_verdict(name, &verdict);
                verdicts.push((name.clone(), verdict));
                rest = batch.cases[index + 1..].to_vec();
                break;
            }
        };
        print_verdict(name, &verdict);
        verdicts.push((name.clone(), verdict));
    }
    if rest.is_empty() {
        // The end of the last case's output follows its result line.
        let _ = guest.wait_for("ltp-done", from, Some(Duration::from_secs(10)));
    }
    guest.kill();
    let log = guest.full_log();
    keep_failures(&options.kernel, &log, &verdicts)?;
    let directory = repo_root().join(crate::scenarios::LOG_DIRECTORY);
    fs::create_dir_all(&directory)?;
    let log_path = directory.join(format!(
        "ltp-{}-batch{}-boot{}.log",
        options.kernel.name().to_lowercase(),
        batch.number,
        batch.boot
    ));
    fs::write(&log_path, &log)?;
    if !rest.is_empty() {
        println!(
            "  (the serial log is in {}; the batch's {} other cases run again in a new boot)",
            crate::toolchain::display_path(&log_path),
            rest.len()
        );
    }
    Ok(BatchOutcome { verdicts, rest })
}

/// Appends the end of each failed case's output to
/// `target/ltp/failures.txt` (`NAME: LINE`), for a person to read.
fn keep_failures(kernel: &Kernel, log: &str, verdicts: &[(String, Verdict)]) -> Result<()> {
    use std::io::Write;
    let mut text = String::new();
    for (name, verdict) in verdicts {
        if let Verdict::Fail(_) = verdict {
            text.push_str(&format!("{name}: {}\n", verdict.detail()));
            for line in failure_lines(log, name) {
                text.push_str(&format!("{name}:   {line}\n"));
            }
        }
    }
    let mut file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(kernel.report_path("failures.txt"))?;
    file.write_all(text.as_bytes())?;
    Ok(())
}

/// Prints the counts (naming `kernel`) and the cases that pass on Linux
/// (`linux-pass.txt`) but did not here; returns whether every case of
/// `linux-pass.txt` that ran passed and no case crashed or hung the
/// kernel. On Linux itself the same lines check the runner against the
/// figure of `../shared/ltp/README.md`, and only a crash or hang fails.
pub fn print_summary(outcome: &Outcome, kernel: &Kernel) -> Result<bool> {
    let name = kernel.name();
    let count = |word: &str| {
        outcome
            .verdicts
            .iter()
            .filter(|(_, verdict)| verdict.word() == word)
            .count()
    };
    println!(
        "ltp: {} passed, {} conf, {} failed of {} on {name}",
        count("pass"),
        count("conf"),
        count("fail"),
        outcome.verdicts.len()
    );
    let linux_pass: BTreeSet<String> = shared_list("linux-pass.txt")?.into_iter().collect();
    let on_linux: Vec<&(String, Verdict)> = outcome
        .verdicts
        .iter()
        .filter(|(name, _)| linux_pass.contains(name))
        .collect();
    let behind: Vec<&str> = on_linux
        .iter()
        .filter(|(_, verdict)| *verdict != Verdict::Pass)
        .map(|(name, _)| name.as_str())
        .collect();
    println!(
        "ltp: {} of the {} cases run that pass on Linux (linux-pass.txt) pass on {name}",
        on_linux.len() - behind.len(),
        on_linux.len()
    );
    if !behind.is_empty() {
        println!(
            "ltp: passing on Linux (linux-pass.txt), not on {name}: {}",
            behind.join(" ")
        );
    }
    let stuck: Vec<&str> = outcome
        .verdicts
        .iter()
        .filter(|(_, verdict)| {
            matches!(
                verdict,
                Verdict::Fail(Failure::KernelCrash(_) | Failure::KernelHang)
            )
        })
        .map(|(name, _)| name.as_str())
        .collect();
    if !stuck.is_empty() {
        println!("ltp: crashed or hung the kernel: {}", stuck.join(" "));
    }
    let is_linux = matches!(kernel, Kernel::Linux(_));
    Ok((behind.is_empty() || is_linux) && stuck.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtest_lines_become_cases_with_their_program() {
        let cases = parse_runtest(
            "#DESCRIPTION:Kernel system calls\nabort01 abort01\n\n\
             fork06 fork_procs -n 1000\n# a comment\npipeio_1 pipeio -T pipeio_1 -c 5\n",
        );
        assert_eq!(cases.len(), 3);
        assert_eq!(cases[0].name, "abort01");
        assert_eq!(cases[1].program(), "fork_procs");
        assert_eq!(cases[1].command, "fork_procs -n 1000");
        assert_eq!(cases[2].program(), "pipeio");
    }

    #[test]
    fn patterns_are_globs_over_the_whole_name_or_substrings() {
        assert!(matches_pattern("fork", "vfork01"));
        assert!(matches_pattern("uname*,set*id*", "setreuid01"));
        assert!(!matches_pattern("uname*,set*id*,", "getuid01"));
        assert!(matches_pattern("fork*", "fork01"));
        assert!(!matches_pattern("fork*", "vfork01"));
        assert!(matches_pattern("*_64", "fcntl01_64"));
        assert!(!matches_pattern("*_64", "fcntl01"));
        assert!(matches_pattern("read0?", "read02"));
        assert!(!matches_pattern("read0?", "read0"));
        assert!(!matches_pattern("mmap", "munmap01"));
    }

    #[test]
    fn exit_status_decides_the_verdict() {
        assert_eq!(Verdict::of_status(0, 1), Verdict::Pass);
        assert_eq!(Verdict::of_status(32, 0), Verdict::Conf);
        let failed = Verdict::of_status(1, 3);
        assert_eq!(failed.word(), "fail");
        assert_eq!(failed.detail(), "exit 1 after 3 s");
        assert!(Verdict::of_status(143, 120)
            .detail()
            .starts_with("timed out"));
    }

    #[test]
    fn result_lines_and_failure_output_are_read() {
        let log = "ltp-begin abort01\nltp-result abort01 0 2\nltp-begin brk02\n\
                   ltp-result brk02 1 4\n  | brk02.c:10: TFAIL: no\n  | summary\nltp-done\n";
        assert_eq!(
            parse_result_line("ltp-result brk02 1 4"),
            Some(("brk02", 1, 4))
        );
        assert_eq!(parse_result_line("ltp-result brk02 x 4"), None);
        assert_eq!(parse_result_line("ltp-begin brk02"), None);
        assert_eq!(
            failure_lines(log, "brk02"),
            vec!["brk02.c:10: TFAIL: no", "summary"]
        );
        assert!(failure_lines(log, "abort01").is_empty());
    }

    #[test]
    fn the_script_runs_each_case_under_timeout_with_the_readme_environment() {
        let script = guest_script(&parse_runtest("fork06 fork_procs -n 1000\nodd it's\n"));
        assert!(script.contains("LTPROOT=/ltp PATH=/ltp/bin:$PATH LTP_TIMEOUT_MUL=4"));
        assert!(script.contains("TMPDIR=/tmp"));
        assert!(script.contains("timeout 120 sh -c \"$2\""));
        assert!(script.contains("ltp_case 'fork06' 'fork_procs -n 1000'\n"));
        assert!(script.contains(r"ltp_case 'odd' 'it'\''s'"));
        assert!(script.ends_with("echo ltp-done\n"));
    }

    #[test]
    fn batches_end_at_the_case_or_byte_limit_counting_shared_helpers_once() {
        let case = |program: &str, size: u64| {
            vec![(program.to_string(), size), ("helper".to_string(), 10)]
        };
        // Three cases of 10 + 10 bytes, the helper shared: 20, 30, 40.
        let files = vec![case("a", 10), case("b", 10), case("c", 10)];
        assert_eq!(batch_lengths(&files, 40, 40), vec![3]);
        assert_eq!(batch_lengths(&files, 40, 39), vec![2, 1]);
        assert_eq!(batch_lengths(&files, 2, 1000), vec![2, 1]);
        // A case bigger than the limit still runs, alone.
        let files = vec![case("a", 10), case("big", 500), case("c", 10)];
        assert_eq!(batch_lengths(&files, 40, 100), vec![1, 1, 1]);
        assert!(batch_lengths(&[], 40, 100).is_empty());
    }

    /// LTP's README asks for users root, daemon, bin and nobody and
    /// groups root, daemon, bin, nobody and users: the image's `/etc`
    /// must have them.
    #[test]
    fn the_readme_users_and_groups_are_in_the_image() {
        let etc = crate::repo_root().join(crate::image::ETC_DIRECTORY);
        let passwd = fs::read_to_string(etc.join("passwd")).expect("user/etc/passwd");
        let group = fs::read_to_string(etc.join("group")).expect("user/etc/group");
        for user in ["root", "daemon", "bin", "nobody"] {
            assert!(passwd
                .lines()
                .any(|line| line.starts_with(&format!("{user}:"))));
        }
        for name in ["root", "daemon", "bin", "nobody", "users"] {
            assert!(group
                .lines()
                .any(|line| line.starts_with(&format!("{name}:"))));
        }
    }
}
