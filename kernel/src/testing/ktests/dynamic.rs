//! Programs written by others, unmodified: Debian's dynamically linked
//! coreutils (`ls`, `sort`, `env`) and `dash`, loaded by Debian's own
//! `ld.so` and `libc.so.6` (`execve` and the kernel's loader honour
//! `PT_INTERP`; `ld.so` maps the libraries with `mmap` on their files),
//! and Debian's `bash-static` running a script. Each test compares what
//! the programs print, byte for byte.
//!
//! Also: bad interpreters and truncated or corrupt programs fail cleanly
//! (`ENOENT`, `ENOEXEC`), file mappings behave as `ld.so` needs
//! (`user/mapfiles.c`), and every frame comes back when the programs
//! end. Where things are in the image: docs/design/0007, "Dynamically
//! linked programs".

use alloc::{format, string::String, vec::Vec};

use super::{ensure, KernelTest, TestResult};
use linux_process::threads::{self as user, UserExit};

pub const TESTS: &[KernelTest] = &[
    KernelTest {
        name: "debian_dynamic_ls_lists_a_known_directory",
        run: dynamic_ls_lists_a_known_directory,
    },
    KernelTest {
        name: "debian_dynamic_sort_and_env_under_glibc_ld_so",
        run: dynamic_sort_and_env,
    },
    KernelTest {
        name: "debian_dash_runs_pipelines_and_reports_exit_statuses",
        run: dash_runs_pipelines,
    },
    KernelTest {
        name: "debian_bash_static_runs_a_script_with_functions_arrays_pipes_and_traps",
        run: bash_runs_a_script,
    },
    KernelTest {
        name: "file_mappings_hold_file_bytes_and_obey_mprotect_munmap_and_map_fixed",
        run: file_mappings,
    },
    KernelTest {
        name: "user_programs_run_code_they_wrote_and_on_an_executable_stack",
        run: written_code_runs,
    },
    KernelTest {
        name: "set_id_programs_run_as_their_owner_and_group",
        run: set_id_programs_run_as_their_owner,
    },
    KernelTest {
        name: "bad_interpreters_and_corrupt_programs_fail_with_enoent_or_enoexec",
        run: bad_interpreters_and_corrupt_programs,
    },
    KernelTest {
        name: "truncated_and_corrupt_elf_files_never_harm_the_loader",
        run: corrupt_elf_files_never_harm_the_loader,
    },
    KernelTest {
        name: "dynamic_programs_give_every_frame_back",
        run: dynamic_programs_give_every_frame_back,
    },
];

/// Where the image holds Debian's dynamically linked programs (clear of
/// busybox's applet links in `/bin` and `/usr/bin`).
const DEBIAN_BIN: &str = "/opt/debian/bin";

/// Runs the program at `path` (static or dynamically linked) with
/// `arguments` (`argv[0]` first) and `environment`; returns how it ended
/// and what it printed.
fn run(path: &str, arguments: &[&str], environment: &[&str]) -> Result<(UserExit, String), String> {
    let (_, mark) = crate::console_output::recent_console_output(u64::MAX);
    let arguments: Vec<&[u8]> = arguments
        .iter()
        .map(|argument| argument.as_bytes())
        .collect();
    let environment: Vec<&[u8]> = environment
        .iter()
        .map(|variable| variable.as_bytes())
        .collect();
    let name = path.rsplit('/').next().unwrap_or(path);
    let end = user::spawn_path(name, path.as_bytes(), &arguments, &environment)?.join();
    let (output, _) = crate::console_output::recent_console_output(mark);
    Ok((end, String::from_utf8_lossy(&output).into_owned()))
}

/// Runs `script` under busybox `sh -c`.
fn sh(script: &str) -> Result<(UserExit, String), String> {
    run("/bin/busybox", &["sh", "-c", script], &[])
}

/// Fails unless `path` ended with `expected_end` printing `expected`.
fn expect(
    what: &str,
    (end, output): (UserExit, String),
    expected_end: UserExit,
    expected: &str,
) -> TestResult {
    ensure!(
        end == expected_end && output == expected,
        "{what} {end}; it printed:\n{output}\ninstead of:\n{expected}"
    );
    Ok(())
}

/// The file tree, as root.
fn tree() -> Result<(&'static vfs::Vfs, vfs::PathContext), String> {
    let personality = crate::linux::personality().ok_or("the Linux personality is not set up")?;
    let vfs: &'static vfs::Vfs = personality.vfs();
    Ok((vfs, vfs.context(0, 0)))
}

/// Writes `bytes` as the file `path` (made or emptied) with `mode`.
fn write_file(path: &str, bytes: &[u8], mode: u32) -> TestResult {
    use vfs::flags::{O_CREAT, O_TRUNC, O_WRONLY};
    let (vfs, context) = tree()?;
    let file = vfs
        .open(
            &context,
            path.as_bytes(),
            O_CREAT | O_WRONLY | O_TRUNC,
            mode,
        )
        .map_err(|error| format!("creating {path}: {error}"))?;
    let written = file
        .write(bytes)
        .map_err(|error| format!("writing {path}: {error}"))?;
    ensure!(
        written == bytes.len(),
        "wrote {written} of {} bytes to {path}",
        bytes.len()
    );
    Ok(())
}

/// The bytes of the file `path`.
fn read_file(path: &str) -> Result<Vec<u8>, String> {
    let (vfs, context) = tree()?;
    linux::read_whole_file(vfs, &context, path.as_bytes())
        .map_err(|error| format!("reading {path}: {error}"))
}

/// Removes `path` and what is under it.
fn remove(path: &str) -> TestResult {
    let (vfs, context) = tree()?;
    crate::linux::remove_tree(vfs, &context, path.as_bytes())
        .map_err(|error| format!("removing {path}: {error}"))
}

/// A directory whose listing is known: sizes, modes, a link, a
/// subdirectory, and dates set with `touch`.
const LS_SETUP: &str = "set -e; d=/tmp/dynamic-ls; rm -rf $d; mkdir -p $d/sub
printf 'hello\\n' > $d/a.txt; printf 0123456789 > $d/b.bin; chmod 755 $d/b.bin
ln -s a.txt $d/link
touch -h -d '2001-02-03 04:05:06' $d/a.txt $d/b.bin $d/link $d/sub $d";

/// What `ls -l` prints of it.
const LS_EXPECTED: &str = "total 8
-rw-r--r-- 1 root root  6 Feb  3  2001 a.txt
-rwxr-xr-x 1 root root 10 Feb  3  2001 b.bin
lrwxrwxrwx 1 root root  5 Feb  3  2001 link -> a.txt
drwxr-xr-x 2 root root 40 Feb  3  2001 sub
";

/// Coreutils' `ls` (which needs `libselinux.so.1` and, through it,
/// `libpcre2-8.so.0`) lists a directory made for it. Owners are names:
/// glibc finds them in the image's `/etc/passwd` and `/etc/group`.
fn dynamic_ls_lists_a_known_directory() -> TestResult {
    expect("the setup", sh(LS_SETUP)?, UserExit::Exited(0), "")?;
    let ls = format!("{DEBIAN_BIN}/ls");
    expect(
        "ls -l",
        run(&ls, &["ls", "-l", "/tmp/dynamic-ls"], &[])?,
        UserExit::Exited(0),
        LS_EXPECTED,
    )?;
    expect(
        "ls -a1 --indicator-style=classify",
        run(
            &ls,
            &["ls", "-a1", "--indicator-style=classify", "/tmp/dynamic-ls"],
            &[],
        )?,
        UserExit::Exited(0),
        "./\n../\na.txt\nb.bin*\nlink@\nsub/\n",
    )?;
    // An error is reported as coreutils reports it, with status 2.
    expect(
        "ls of a missing file",
        run(&ls, &["ls", "/tmp/dynamic-ls/missing"], &[])?,
        UserExit::Exited(2),
        "ls: cannot access '/tmp/dynamic-ls/missing': No such file or directory\n",
    )?;
    remove("/tmp/dynamic-ls")
}

/// Coreutils' `sort` on known input through busybox pipes, and `env`,
/// started by the kernel itself and by `env -i`.
fn dynamic_sort_and_env() -> TestResult {
    let script = format!(
        "printf 'pear\\napple\\nfig\\napple\\n' | {DEBIAN_BIN}/sort
printf 'pear\\napple\\nfig\\napple\\n' | {DEBIAN_BIN}/sort -u -r
printf '10\\n9\\n100\\n' | {DEBIAN_BIN}/sort -n
printf 'b:2\\na:3\\nc:1\\n' | {DEBIAN_BIN}/sort -t: -k2n
printf 'x\\n' | {DEBIAN_BIN}/sort - /no/such/file; echo \"status=$?\""
    );
    expect(
        "sort",
        sh(&script)?,
        UserExit::Exited(0),
        "apple\napple\nfig\npear\npear\nfig\napple\n9\n10\n100\nc:1\nb:2\na:3\n\
         /opt/debian/bin/sort: cannot read: /no/such/file: No such file or directory\nstatus=2\n",
    )?;
    let env = format!("{DEBIAN_BIN}/env");
    expect(
        "env -i A=1 B=2 env",
        run(&env, &["env", "-i", "A=1", "B=2", &env], &["HIDDEN=yes"])?,
        UserExit::Exited(0),
        "A=1\nB=2\n",
    )?;
    expect(
        "env with an environment",
        run(&env, &["env"], &["X=1", "Y=two words"])?,
        UserExit::Exited(0),
        "X=1\nY=two words\n",
    )?;
    // ld.so run as a program, loading env itself.
    expect(
        "ld.so env",
        run(
            "/lib64/ld-linux-x86-64.so.2",
            &["ld.so", &env, "-i", "Z=9", &env],
            &[],
        )?,
        UserExit::Exited(0),
        "Z=9\n",
    )
}

/// Debian's `dash`: a pipeline through busybox applets and dynamic
/// `sort`, `$?` after `false`, a subshell and a function, command
/// substitution, a loop, and its own exit status.
fn dash_runs_pipelines() -> TestResult {
    let script = format!(
        "echo pear apple fig | tr ' ' '\\n' | {DEBIAN_BIN}/sort | tr a-z A-Z
false; echo \"false=$?\"
(exit 7); echo \"sub=$?\"
f() {{ return 4; }}; f; echo \"f=$?\"
x=$(echo nested | wc -c); echo \"x=$x\"
for i in 1 2 3; do printf '%s;' $i; done; echo
{DEBIAN_BIN}/env -i {DEBIAN_BIN}/sort /no/such/file 2>/dev/null || echo \"sort=$?\"
exit 5"
    );
    expect(
        "dash -c",
        run(&format!("{DEBIAN_BIN}/dash"), &["dash", "-c", &script], &[])?,
        UserExit::Exited(5),
        "APPLE\nFIG\nPEAR\nfalse=1\nsub=7\nf=4\nx=7\n1;2;3;\nsort=2\n",
    )
}

/// A script for `bash script.sh`: functions with locals and return
/// values, indexed and associative arrays, `[[ ]]` with patterns,
/// arithmetic, a pipe through dynamic `sort`, command substitution,
/// parameter expansion, a `case`, and a `trap ... EXIT` that sees the
/// final status.
const BASH_SCRIPT: &str = r#"trap 'echo "exit trap: status $?"' EXIT
greet() { local who=$1; echo "hello, $who"; return 2; }
greet world; echo "rc=$? args=$# first=$1"
fruits=(pear apple fig)
echo "${#fruits[@]} fruits, second ${fruits[1]}"
printf '%s\n' "${fruits[@]}" | /opt/debian/bin/sort | tr '\n' ' '; echo
declare -A colour=([sky]=blue [grass]=green)
echo "sky=${colour[sky]} keys=${#colour[@]}"
if [[ ${fruits[0]} == p* && ${#fruits[@]} -gt 2 ]]; then echo "pattern ok"; fi
[[ apple =~ ^a(p+)le$ ]] && echo "regex ${BASH_REMATCH[1]}"
(( n = 6 * 7, n += 1 )); echo "n=$n $(( n % 5 )) $(( 2 ** 10 ))"
count=$(printf 'a\nb\nc\n' | wc -l); echo "count=$count"
s="Hello World"; echo "${s,,} ${s^^} ${s:6:3} ${s/World/bash}"
case $2 in two) echo "case two";; *) echo "case other";; esac
exit 3
"#;

/// What [`BASH_SCRIPT`] prints when run as `bash script one two`.
const BASH_EXPECTED: &str = "hello, world
rc=2 args=2 first=one
3 fruits, second apple
apple fig pear 
sky=blue keys=2
pattern ok
regex pp
n=43 3 1024
count=3
hello world HELLO WORLD Wor Hello bash
case two
exit trap: status 3
";

/// Debian's `bash-static` runs a script from a file, and `bash -c`.
fn bash_runs_a_script() -> TestResult {
    write_file("/tmp/dynamic-script.sh", BASH_SCRIPT.as_bytes(), 0o644)?;
    expect(
        "bash script.sh",
        run(
            "/bin/bash",
            &["bash", "/tmp/dynamic-script.sh", "one", "two"],
            &[],
        )?,
        UserExit::Exited(3),
        BASH_EXPECTED,
    )?;
    expect(
        "bash -c",
        run(
            "/bin/bash",
            &["bash", "-c", "a=(x y); echo ${a[@]} $((${#a[@]} * 21))"],
            &[],
        )?,
        UserExit::Exited(0),
        "x y 42\n",
    )?;
    remove("/tmp/dynamic-script.sh")
}

/// `user/mapfiles.c` checks file mappings from inside (see its comment).
fn file_mappings() -> TestResult {
    let (end, output) = run("/bin/mapfiles", &["mapfiles"], &[])?;
    ensure!(
        end == UserExit::Exited(0) && output.contains("mapfiles: ok"),
        "mapfiles {end}; it printed: {output}"
    );
    Ok(())
}

/// `user/wxmemory.c`: writable-and-executable mappings, code made
/// executable after it was written, and an executable stack
/// (`PT_GNU_STACK`), as Linux allows user programs (see its comment).
fn written_code_runs() -> TestResult {
    let (end, output) = run("/bin/wxmemory", &["wxmemory"], &[])?;
    ensure!(
        end == UserExit::Exited(0) && output.contains("wxmemory: ok"),
        "wxmemory {end}; it printed: {output}"
    );
    Ok(())
}

/// `user/setid.c`: a copy of the program made set-user-id and
/// set-group-id runs, from a process that became nobody, with its owner
/// and group as effective and saved ids (see its comment).
fn set_id_programs_run_as_their_owner() -> TestResult {
    let (end, output) = run("/bin/setid", &["setid"], &[])?;
    ensure!(
        end == UserExit::Exited(0) && output.contains("setid: ok"),
        "setid {end}; it printed: {output}"
    );
    Ok(())
}

/// The interpreter path every Debian program names.
const INTERPRETER: &[u8] = b"/lib64/ld-linux-x86-64.so.2\0";

/// `program` with its interpreter path replaced by `interpreter` (no
/// longer than the original; the rest is NULs).
fn with_interpreter(program: &[u8], interpreter: &[u8]) -> Result<Vec<u8>, String> {
    let at = program
        .windows(INTERPRETER.len())
        .position(|window| window == INTERPRETER)
        .ok_or("the program names no /lib64/ld-linux-x86-64.so.2")?;
    ensure!(
        interpreter.len() < INTERPRETER.len(),
        "the new interpreter path is too long"
    );
    let mut patched = Vec::from(program);
    patched[at..at + INTERPRETER.len()].fill(0);
    patched[at..at + interpreter.len()].copy_from_slice(interpreter);
    Ok(patched)
}

/// Programs that cannot run, each run by bash, which reports the errno
/// `execve` gave: a missing interpreter (`ENOENT`, "required file not
/// found", 127), an interpreter that is text, one that is itself
/// dynamically linked, a truncated program and one with corrupt program
/// headers (`ENOEXEC`, "Exec format error", 126). Then a library cut
/// short of its ELF header, which `ld.so` reports (status 127), and one
/// cut after its headers, whose segments map past the end of the file:
/// the program dies of the fault (SIGBUS on Linux, SIGSEGV here, where
/// such pages read as zeros). The kernel runs on: a good program runs
/// after.
fn bad_interpreters_and_corrupt_programs() -> TestResult {
    let env = read_file(&format!("{DEBIAN_BIN}/env"))?;
    let directory = "/tmp/dynamic-bad";
    let (vfs, context) = tree()?;
    let _ = crate::linux::remove_tree(vfs, &context, directory.as_bytes());
    vfs.mkdir(&context, directory.as_bytes(), 0o755)
        .map_err(|error| format!("making {directory}: {error}"))?;
    for library in ["short", "cut"] {
        vfs.mkdir(&context, format!("{directory}/{library}").as_bytes(), 0o755)
            .map_err(|error| format!("making {directory}/{library}: {error}"))?;
    }
    write_file("/tmp/dynamic-bad/text", b"not a program\n", 0o755)?;
    let mut corrupt = env.clone();
    corrupt[56..58].copy_from_slice(&0xffffu16.to_le_bytes()); // e_phnum
    let programs: [(&str, Vec<u8>); 5] = [
        (
            "no-interpreter",
            with_interpreter(&env, b"/lib64/ld-nothere.so.2")?,
        ),
        (
            "text-interpreter",
            with_interpreter(&env, b"/tmp/dynamic-bad/text")?,
        ),
        (
            "dynamic-interpreter",
            with_interpreter(&env, b"/opt/debian/bin/env")?,
        ),
        ("truncated", Vec::from(&env[..env.len().min(3000)])),
        ("corrupt", corrupt),
    ];
    for (name, bytes) in &programs {
        write_file(&format!("{directory}/{name}"), bytes, 0o755)?;
    }
    let selinux = read_file("/lib/x86_64-linux-gnu/libselinux.so.1")?;
    write_file(
        "/tmp/dynamic-bad/short/libselinux.so.1",
        &selinux[..selinux.len().min(40)],
        0o644,
    )?;
    write_file(
        "/tmp/dynamic-bad/cut/libselinux.so.1",
        &selinux[..selinux.len().min(1000)],
        0o644,
    )?;
    let script = "cd /tmp/dynamic-bad
for p in no-interpreter text-interpreter dynamic-interpreter truncated corrupt; do ./$p; echo \"$p $?\"; done 2>&1
LD_LIBRARY_PATH=/tmp/dynamic-bad/short /opt/debian/bin/ls / 2>&1; echo \"ls $?\"
/opt/debian/bin/env -i OK=1 /opt/debian/bin/env";
    let expected = "bash: line 2: ./no-interpreter: cannot execute: required file not found
no-interpreter 127
bash: line 2: ./text-interpreter: cannot execute binary file: Exec format error
text-interpreter 126
bash: line 2: ./dynamic-interpreter: cannot execute binary file: Exec format error
dynamic-interpreter 126
bash: line 2: ./truncated: cannot execute binary file: Exec format error
truncated 126
bash: line 2: ./corrupt: cannot execute binary file: Exec format error
corrupt 126
/opt/debian/bin/ls: error while loading shared libraries: /tmp/dynamic-bad/short/libselinux.so.1: file too short
ls 127
OK=1
";
    expect(
        "bash running bad programs",
        run("/bin/bash", &["bash", "-c", script], &[])?,
        UserExit::Exited(0),
        expected,
    )?;
    let (end, _) = run(
        &format!("{DEBIAN_BIN}/ls"),
        &["ls", "/"],
        &["LD_LIBRARY_PATH=/tmp/dynamic-bad/cut"],
    )?;
    ensure!(
        matches!(end, UserExit::Faulted(_)),
        "ls with a library cut after its headers {end}, not ended by a fault"
    );
    expect(
        "env after the bad programs",
        run(&format!("{DEBIAN_BIN}/env"), &["env"], &["STILL=here"])?,
        UserExit::Exited(0),
        "STILL=here\n",
    )?;
    remove(directory)
}

/// The loader itself, given Debian's `env` and `ld.so` cut short at
/// every length up to their headers and beyond, and with bytes of their
/// headers and program headers changed one at a time: each load either
/// succeeds or says why not, never faults, and every frame comes back.
fn corrupt_elf_files_never_harm_the_loader() -> TestResult {
    use loader as elf;
    let program = read_file(&format!("{DEBIAN_BIN}/env"))?;
    let interpreter = read_file("/lib64/ld-linux-x86-64.so.2")?;
    let frames = crate::page_cache::frames_free_or_cached();
    let mut refused = 0;
    let mut attempt = |program: &[u8], interpreter: &[u8]| {
        let wanted = elf::interpreter_path(program).ok().flatten();
        match elf::load(
            crate::page_cache::get(),
            elf::FileBytes::Copied(program),
            wanted.as_ref().map(|_| elf::FileBytes::Copied(interpreter)),
        ) {
            Ok(image) => drop(image),
            Err(_) => refused += 1,
        }
    };
    // Cut short: every length through the headers, then every 4 KiB.
    let lengths = (0..1024)
        .step_by(7)
        .chain((1024..program.len()).step_by(4096));
    for length in lengths {
        attempt(&program[..length], &interpreter);
        attempt(&program, &interpreter[..length.min(interpreter.len())]);
    }
    // Bytes changed one at a time: every byte of the file header, and in
    // the first program headers the type and the low and high bytes of
    // each value that places memory (offset, address, sizes).
    let header_bytes = 0..64usize;
    let program_header_bytes = (0..8usize).flat_map(|index| {
        [0usize, 4, 8, 15, 16, 23, 32, 39, 40, 47].map(|field| 64 + index * 56 + field)
    });
    for offset in header_bytes.chain(program_header_bytes) {
        for value in [0x00u8, 0xff] {
            let mut changed = program.clone();
            changed[offset] = value;
            attempt(&changed, &interpreter);
            let mut changed = interpreter.clone();
            changed[offset] = value;
            attempt(&program, &changed);
        }
    }
    ensure!(refused > 100, "only {refused} corrupt files were refused");
    let after = crate::page_cache::frames_free_or_cached();
    ensure!(after >= frames, "the loads kept {} frames", frames - after);
    // And the untouched files still load and run.
    expect(
        "env after the corrupt loads",
        run(&format!("{DEBIAN_BIN}/env"), &["env"], &["AFTER=1"])?,
        UserExit::Exited(0),
        "AFTER=1\n",
    )
}

/// The tests above have run every program once (so what stays, such as
/// the heap's growth, has grown): running them again leaves free frames
/// and the heap where they were.
fn dynamic_programs_give_every_frame_back() -> TestResult {
    let frames = crate::page_cache::frames_free_or_cached();
    let heap = hal::heap::stats().allocated_bytes;
    dynamic_ls_lists_a_known_directory()?;
    dynamic_sort_and_env()?;
    dash_runs_pipelines()?;
    bash_runs_a_script()?;
    file_mappings()?;
    written_code_runs()?;
    let frames_after = crate::page_cache::frames_free_or_cached();
    let heap_after = hal::heap::stats().allocated_bytes;
    ensure!(
        frames_after >= frames,
        "the programs kept {} frames",
        frames - frames_after
    );
    ensure!(
        heap_after <= heap + 1024,
        "the programs kept {} heap bytes",
        heap_after - heap
    );
    Ok(())
}
