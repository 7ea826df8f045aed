//! `/proc` and the calls that report on processes and files, as Linux
//! programs see them: Debian's busybox `ps`, `cat`, `ls` and `readlink`
//! reading `/proc`, and `user/linuxcalls.c` checking `select`,
//! `pselect6`, `times`, `sysinfo`, `getrusage`, `utimensat`, `chown` and
//! the groups. What the programs print is compared exactly, but for
//! process ids, which are read from the output where the kernel cannot
//! know them beforehand, and dates.

use alloc::{format, string::String, vec::Vec};

use super::{ensure, KernelTest, TestResult};
use linux_process::threads::{self as user, UserExit};

pub const TESTS: &[KernelTest] = &[
    KernelTest {
        name: "busybox_ps_lists_each_process_with_its_pid_parent_group_and_command",
        run: busybox_ps_lists_each_process,
    },
    KernelTest {
        name: "proc_self_names_the_callers_arguments_program_and_descriptors",
        run: proc_self_names_the_caller,
    },
    KernelTest {
        name: "proc_meminfo_mounts_and_uptime_agree_with_the_kernel",
        run: proc_system_files_agree_with_the_kernel,
    },
    KernelTest {
        name: "select_pselect6_times_sysinfo_utimensat_chown_and_groups_from_a_musl_program",
        run: linux_calls_from_a_musl_program,
    },
    KernelTest {
        name: "proc_maps_names_programs_libraries_heap_and_stack_and_environ_the_environment",
        run: proc_maps_and_environ,
    },
];

/// What the script of [`proc_maps_and_environ`] runs.
const MAPS_SCRIPT: &str = "cat /proc/self/maps\n\
    echo ---\n\
    /opt/debian/bin/sort /proc/self/maps\n\
    echo ---\n\
    env -i A=1 B=two cat /proc/self/environ | tr '\\0' '\\n'\n";

/// `/proc/PID/maps` of busybox's static `cat` names its file for each
/// segment (with the segments' offsets), `[heap]` and `[stack]`; that of
/// Debian's dynamic `sort` names `sort`, `libc.so.6` and `ld.so` (at its
/// real name) too; `/proc/PID/environ` is the environment the program
/// started with.
fn proc_maps_and_environ() -> TestResult {
    write_file("/tmp/maps.sh", MAPS_SCRIPT)?;
    let result = run("busybox", &["sh", "/tmp/maps.sh"]);
    remove_file("/tmp/maps.sh");
    let (_, end, output) = result?;
    ensure!(
        end == UserExit::Exited(0),
        "the script {end}; it printed:\n{output}"
    );
    let parts: Vec<&str> = output.split("---\n").collect();
    ensure!(parts.len() == 3, "the script printed:\n{output}");
    let has = |part: &str, perms: &str, name: &str| {
        part.lines()
            .any(|line| line.split_whitespace().nth(1) == Some(perms) && line.ends_with(name))
    };
    let busybox_text = parts[0].lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.len() == 6
            && fields[1] == "r-xp"
            && fields[2] != "00000000"
            && fields[5] == "/bin/busybox"
    });
    ensure!(
        busybox_text && has(parts[0], "rw-p", "/bin/busybox") && has(parts[0], "rw-p", "[stack]"),
        "cat's maps lack busybox's text (at its offset), data or the stack:\n{}",
        parts[0]
    );
    for name in [
        "/opt/debian/bin/sort",
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
    ] {
        ensure!(
            has(parts[1], "r-xp", name),
            "sort's maps have no executable mapping of {name}:\n{}",
            parts[1]
        );
    }
    ensure!(
        has(parts[1], "rw-p", "[heap]"),
        "sort's maps have no heap:\n{}",
        parts[1]
    );
    ensure!(
        parts[2] == "A=1\nB=two\n",
        "environ of `env -i A=1 B=two cat` read:\n{}",
        parts[2]
    );
    Ok(())
}

/// The program `bin/<name>` of the boot archive.
fn archive_program(name: &str) -> Result<&'static [u8], String> {
    let extensions = crate::extensions::get().ok_or("no boot archive")?;
    let path = format!("bin/{name}");
    extensions
        .archive_files(&path)
        .iter()
        .find(|(entry, _)| *entry == path)
        .map(|&(_, file)| file)
        .ok_or_else(|| format!("{path} is not in the boot archive"))
}

/// Runs `bin/<name>` with `arguments` (`argv[0]` is the name): its process
/// id, how it ended and what it printed.
fn run(name: &str, arguments: &[&str]) -> Result<(u64, UserExit, String), String> {
    let file = archive_program(name)?;
    let mut argv = alloc::vec![name];
    argv.extend_from_slice(arguments);
    let (_, mark) = crate::console_output::recent_console_output(u64::MAX);
    let thread = user::spawn_program(name, loader::FileBytes::Lent(file), &argv)?;
    let pid = thread.process();
    let end = thread.join();
    let (output, _) = crate::console_output::recent_console_output(mark);
    Ok((pid, end, String::from_utf8_lossy(&output).into_owned()))
}

/// The file tree and a root context in it.
fn tree() -> Result<(&'static vfs::Vfs, vfs::PathContext), String> {
    let personality = crate::linux::personality().ok_or("the Linux personality is not set up")?;
    let vfs = &**personality.vfs();
    Ok((vfs, vfs.context(0, 0)))
}

/// Writes `contents` to a new file at `path` of the tree.
fn write_file(path: &str, contents: &str) -> TestResult {
    let (vfs, context) = tree()?;
    let flags = vfs::flags::O_WRONLY | vfs::flags::O_CREAT | vfs::flags::O_TRUNC;
    let file = vfs
        .open(&context, path.as_bytes(), flags, 0o644)
        .map_err(|error| format!("creating {path}: {error}"))?;
    file.write(contents.as_bytes())
        .map_err(|error| format!("writing {path}: {error}"))?;
    Ok(())
}

/// The whole of file `path` of the tree, read as a program reads it.
fn read_file(path: &str) -> Result<String, String> {
    let (vfs, context) = tree()?;
    let file = vfs
        .open(&context, path.as_bytes(), vfs::flags::O_RDONLY, 0)
        .map_err(|error| format!("opening {path}: {error}"))?;
    let mut contents = Vec::new();
    let mut buffer = [0u8; 512];
    loop {
        let count = file
            .read(&mut buffer)
            .map_err(|error| format!("reading {path}: {error}"))?;
        if count == 0 {
            return Ok(String::from_utf8_lossy(&contents).into_owned());
        }
        contents.extend_from_slice(&buffer[..count]);
    }
}

fn remove_file(path: &str) {
    if let Ok((vfs, context)) = tree() {
        let _ = vfs.unlink(&context, path.as_bytes());
    }
}

/// A script for busybox `sh`: a background `sleep`, waited for until it
/// has become `sleep` (its `comm`, read through `/proc`), then `ps`, then
/// the sleep killed and waited for (the shell says `Terminated`), so that
/// no process outlives the test.
const PS_SCRIPT: &str = "sleep 9 &
until read c < /proc/$!/comm && [ \"$c\" = sleep ]; do :; done
ps -o pid,ppid,pgid,comm,args
kill $!
wait $! || :
";

/// busybox `ps` (reading `/proc/PID/stat` and `cmdline` of each process
/// `/proc` lists) shows exactly the three processes there are: the shell
/// the kernel started (parent 0, its own group, command `busybox`), the
/// `sleep` it started and `ps` itself (a fork of the shell running the
/// applet without `execve`, which busybox shows as `{ps}` and the shell's
/// arguments), each with its parent and group.
fn busybox_ps_lists_each_process() -> TestResult {
    write_file("/tmp/ps.sh", PS_SCRIPT)?;
    let result = run("busybox", &["sh", "/tmp/ps.sh"]);
    remove_file("/tmp/ps.sh");
    let (shell, end, output) = result?;
    ensure!(
        end == UserExit::Exited(0),
        "the ps script {end}; it printed:\n{output}"
    );
    // The ids of `sleep` and `ps` are the kernel's to choose: read from
    // the lines that name them, then every line is compared.
    let pid_of = |command: &str| {
        output
            .lines()
            .find(|line| line.split_whitespace().nth(3) == Some(command))
            .and_then(|line| line.split_whitespace().next())
            .and_then(|pid| pid.parse::<u64>().ok())
    };
    let (Some(sleep), Some(ps)) = (pid_of("sleep"), pid_of("ps")) else {
        return Err(format!("ps did not list sleep and ps:\n{output}"));
    };
    let line = |pid: u64, parent: u64, command: &str, arguments: &str| {
        format!("{pid:>5} {parent:>5} {shell:>5} {command:<16} {arguments}\n")
    };
    // Then the shell's report of the killed job, as on Linux.
    let expected = format!(
        "{:<5} {:<5} {:<5} {:<16} {}\n{}{}{}Terminated\n",
        "PID",
        "PPID",
        "PGID",
        "COMMAND",
        "COMMAND",
        line(shell, 0, "busybox", "busybox sh /tmp/ps.sh"),
        line(sleep, shell, "sleep", "sleep 9"),
        line(ps, shell, "ps", "{ps} busybox sh /tmp/ps.sh"),
    );
    ensure!(
        output == expected,
        "ps printed:\n{output}\ninstead of:\n{expected}"
    );
    ensure!(
        sleep > shell && ps > sleep,
        "process ids were not handed out in order: shell {shell}, sleep {sleep}, ps {ps}"
    );
    Ok(())
}

/// What the script of [`proc_self_names_the_caller`] runs.
const SELF_SCRIPT: &str = "cat /proc/self/cmdline | tr '\\0' ' '; echo
readlink /proc/self/exe
cat /proc/self/comm
ls -1 /proc/self/fd
ls -l /proc/self/fd > /tmp/fd.txt 2>/dev/null
read pid command state parent rest < /proc/self/stat; echo \"$pid $command $state $parent $$\"
readlink /proc/self/cwd; cd /tmp; readlink /proc/self/cwd
";

/// Through busybox: `/proc/self` is whoever reads it (`cat`'s own
/// arguments, the shell's own `stat` read by its builtin `read`);
/// `/proc/self/exe` is the program file, `/bin/busybox`, though the shell
/// ran `cat` through `/proc/self/exe` itself; `comm` is the applet's
/// name; `ls` lists and `ls -l` shows the descriptors with Linux's modes
/// and targets (the directory `ls` was reading is closed by the time it
/// reads its link, as on Linux); `cwd` follows `cd`.
fn proc_self_names_the_caller() -> TestResult {
    write_file("/tmp/self.sh", SELF_SCRIPT)?;
    let result = run("busybox", &["sh", "/tmp/self.sh"]);
    remove_file("/tmp/self.sh");
    let listing = read_file("/tmp/fd.txt");
    remove_file("/tmp/fd.txt");
    let (shell, end, output) = result?;
    ensure!(
        end == UserExit::Exited(0),
        "the script {end}; it printed:\n{output}"
    );
    let expected = format!(
        "cat /proc/self/cmdline \n/bin/busybox\ncat\n0\n1\n2\n3\n{shell} (busybox) R 0 {shell}\n/\n/tmp\n"
    );
    ensure!(
        output == expected,
        "the script printed:\n{output}\ninstead of:\n{expected}"
    );
    // `ls -l` without its date columns (month, day, time or year).
    let listing: String = listing?
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let kept: Vec<&str> = if fields.len() >= 9 {
                fields[..5].iter().chain(&fields[8..]).copied().collect()
            } else {
                fields
            };
            kept.join(" ") + "\n"
        })
        .collect();
    let expected_listing = "total 0\n\
        lrwx------ 1 root root 64 0 -> /dev/console\n\
        l-wx------ 1 root root 64 1 -> /tmp/fd.txt\n\
        l-wx------ 1 root root 64 2 -> /dev/null\n\
        lr-x------ 1 root root 64 3\n";
    ensure!(
        listing == expected_listing,
        "ls -l /proc/self/fd printed (dates removed):\n{listing}\ninstead of:\n{expected_listing}"
    );
    Ok(())
}

/// The figure after `label` in `/proc/meminfo`, in kB.
fn meminfo_kb(meminfo: &str, label: &str) -> Result<u64, String> {
    meminfo
        .lines()
        .find_map(|line| line.strip_prefix(label))
        .and_then(|rest| rest.trim().strip_suffix(" kB"))
        .and_then(|figure| figure.trim().parse().ok())
        .ok_or_else(|| format!("no {label} line in /proc/meminfo:\n{meminfo}"))
}

/// `/proc/meminfo` read between two readings of the frame allocator says
/// the same: `MemTotal` is the frames managed, `MemFree` and
/// `MemAvailable` the free frames (between the two readings); busybox
/// `cat` prints the same `MemTotal`. `/proc/mounts` lists the root and
/// `/proc`; `/proc/uptime` is the kernel's uptime; `/proc/version` is
/// `uname`'s release and version.
fn proc_system_files_agree_with_the_kernel() -> TestResult {
    let before = hal::memory::frame_stats();
    let uptime_before = hal::timer::uptime_ns();
    let meminfo = read_file("/proc/meminfo")?;
    let uptime = read_file("/proc/uptime")?;
    let uptime_after = hal::timer::uptime_ns();
    let after = hal::memory::frame_stats();
    let page_kb = hal::memory::PAGE_SIZE / 1024;
    let total = meminfo_kb(&meminfo, "MemTotal:")?;
    ensure!(
        total == before.total as u64 * page_kb && before.total == after.total,
        "MemTotal is {total} kB, the kernel manages {} frames of {page_kb} kB",
        before.total
    );
    let free_range =
        before.free.min(after.free) as u64 * page_kb..=before.free.max(after.free) as u64 * page_kb;
    for label in ["MemFree:", "MemAvailable:"] {
        let figure = meminfo_kb(&meminfo, label)?;
        ensure!(
            free_range.contains(&figure),
            "{label} is {figure} kB, the kernel had between {:?} kB free",
            free_range
        );
    }
    ensure!(meminfo_kb(&meminfo, "SwapTotal:")? == 0, "swap is reported");
    // Seconds with hundredths, within the two readings.
    let seconds = uptime
        .split_whitespace()
        .next()
        .and_then(|figure| figure.split_once('.'))
        .and_then(|(whole, hundredths)| {
            Some(whole.parse::<u64>().ok()? * 100 + hundredths.parse::<u64>().ok()?)
        })
        .ok_or_else(|| format!("/proc/uptime says {uptime}"))?;
    ensure!(
        (uptime_before / 10_000_000..=uptime_after / 10_000_000).contains(&seconds),
        "/proc/uptime says {uptime}, the kernel's uptime was {uptime_before} to {uptime_after} ns"
    );
    let mounts = read_file("/proc/mounts")?;
    ensure!(
        mounts == "ramfs / ramfs rw 0 0\nproc /proc proc rw 0 0\n",
        "/proc/mounts says:\n{mounts}"
    );
    let version = read_file("/proc/version")?;
    ensure!(
        version == "Linux version 6.1.0-spindle (spindle) #1 SMP Spindle (the Linux personality of an extensible kernel)\n",
        "/proc/version says: {version}"
    );
    let (_, end, output) = run("busybox", &["grep", "MemTotal", "/proc/meminfo"])?;
    let expected = format!("MemTotal:       {:>8} kB\n", total);
    ensure!(
        end == UserExit::Exited(0) && output == expected,
        "busybox grep MemTotal /proc/meminfo {end}, printing {output:?} instead of {expected:?}"
    );
    Ok(())
}

/// `user/linuxcalls.c` checks `select` and `pselect6` (a ready pipe, a
/// timeout that runs out and the time left written back, `EBADF`,
/// `EFAULT`, `EINVAL`), `times`, `getrusage` and `sysinfo` (against
/// `/proc/meminfo`), `utimensat`, `utimes`, `futimesat`, `utime` (stat
/// shows the times), the `chown` family (stat shows the owner),
/// `getgroups`/`setgroups`, and its own `/proc/self` files; it exits 0
/// only if every check held. No process's descriptors outlive it.
fn linux_calls_from_a_musl_program() -> TestResult {
    let personality = crate::linux::personality().ok_or("the Linux personality is not set up")?;
    let processes = personality.processes();
    let (_, end, output) = run("linuxcalls", &["an argument", "another"])?;
    ensure!(
        end == UserExit::Exited(0) && output.ends_with("linuxcalls: ok\n"),
        "linuxcalls {end}; it printed:\n{output}"
    );
    let after = personality.processes();
    ensure!(
        after == processes,
        "{after} processes have descriptors after linuxcalls ended, {processes} before"
    );
    Ok(())
}
