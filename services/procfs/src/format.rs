//! The text of each `/proc` file, in Linux's layouts: the fields and
//! their order are what programs parse (busybox `ps` reads `stat` with
//! `sscanf`), so they follow `fs/proc/array.c`, `fs/proc/meminfo.c`,
//! `fs/proc/uptime.c` and `fs/proc_namespace.c` field for field; what
//! Spindle does not have is 0.

use alloc::{format, string::String, vec::Vec};
use core::fmt::Write;

use linux_abi::signal::SIGCHLD;

use crate::source::{
    Counters, Cpu, KernelSettings, Mapping, MemoryInfo, Mount, ProcessInfo, ProcessState,
    ThreadInfo,
};

/// `USER_HZ`: the unit of the `clock_t` times in `stat` and of `times`.
pub const CLOCK_TICKS_PER_SECOND: u64 = 100;
/// Bytes of a page (the unit of `statm` and of `stat`'s `rss`).
const PAGE_BYTES: u64 = 4096;
/// `RLIM_INFINITY`, `stat`'s `rsslim`.
const NO_LIMIT: u64 = u64::MAX;

/// Nanoseconds as clock ticks (`USER_HZ`), rounded down.
pub fn clock_ticks(ns: u64) -> u64 {
    ns / (1_000_000_000 / CLOCK_TICKS_PER_SECOND)
}

/// `/proc/PID/cmdline`: the arguments, each ending in a NUL.
pub fn command_line(process: &ProcessInfo) -> Vec<u8> {
    if process.state == ProcessState::Zombie {
        return Vec::new();
    }
    process.arguments.clone()
}

/// The column a mapping's name starts at in `/proc/PID/maps` (Linux pads
/// the fields before it to 73 characters on 64-bit machines).
const MAPS_NAME_COLUMN: usize = 73;

/// `/proc/PID/maps`: a line per mapping (Linux's `show_map_vma`):
/// `start-end perms offset major:minor inode`, and the name, if any, from
/// column 73.
pub fn maps(mappings: &[Mapping]) -> Vec<u8> {
    let mut text = Vec::new();
    for mapping in mappings {
        let flag = |on: bool, letter: char| if on { letter } else { '-' };
        let mut line = format!(
            "{:08x}-{:08x} {}{}{}{} {:08x} {:02x}:{:02x} {} ",
            mapping.start,
            mapping.end,
            flag(mapping.read, 'r'),
            flag(mapping.write, 'w'),
            flag(mapping.execute, 'x'),
            if mapping.shared { 's' } else { 'p' },
            mapping.offset,
            mapping.dev >> 8 & 0xfff,
            mapping.dev & 0xff,
            mapping.ino,
        )
        .into_bytes();
        if !mapping.name.is_empty() {
            while line.len() < MAPS_NAME_COLUMN {
                line.push(b' ');
            }
            line.extend_from_slice(&mapping.name);
        }
        line.push(b'\n');
        text.extend_from_slice(&line);
    }
    text
}

/// `/proc/PID/stat`: one line of 52 fields (Linux's `do_task_stat`).
pub fn process_stat(process: &ProcessInfo) -> Vec<u8> {
    let is_zombie = process.state == ProcessState::Zombie;
    // A zombie has no memory left.
    let (virtual_bytes, resident_pages) = if is_zombie {
        (0, 0)
    } else {
        (process.virtual_bytes, process.resident_pages)
    };
    let mut line: Vec<u8> = format!("{} (", process.pid).into_bytes();
    line.extend_from_slice(&process.command);
    let mut rest = String::new();
    // state ppid pgrp session tty_nr tpgid flags
    let _ = write!(
        rest,
        ") {} {} {} {} 0 -1 0",
        process.state.letter(),
        process.parent,
        process.process_group,
        process.session
    );
    // minflt cminflt majflt cmajflt utime stime cutime cstime: all
    // processor time is counted as user time (the kernel does not tell
    // the two apart yet).
    let _ = write!(
        rest,
        " {} {} 0 0 {} 0 {} 0",
        process.minor_faults,
        process.children_minor_faults,
        clock_ticks(process.cpu_ns),
        clock_ticks(process.children_cpu_ns)
    );
    // priority nice num_threads itrealvalue starttime vsize rss rsslim
    let _ = write!(
        rest,
        " 20 0 {} 0 {} {} {} {}",
        process.threads.max(1),
        clock_ticks(process.start_ns),
        virtual_bytes,
        resident_pages,
        NO_LIMIT
    );
    // startcode endcode startstack kstkesp kstkeip signal blocked
    // sigignore sigcatch wchan nswap cnswap exit_signal processor
    // rt_priority policy delayacct_blkio_ticks guest_time cguest_time
    // start_data end_data start_brk arg_start arg_end env_start env_end
    // exit_code; the exit signal is SIGCHLD, what a parent gets when
    // the process ends.
    let _ = writeln!(
        rest,
        " 0 0 0 0 0 0 0 0 0 0 0 0 {SIGCHLD} 0 0 0 0 0 0 0 0 0 0 0 0 0 0"
    );
    line.extend_from_slice(rest.as_bytes());
    line
}

/// Bytes as Linux's `kB` figures.
fn kilobytes(bytes: u64) -> u64 {
    bytes / 1024
}

/// `process` as one of its threads sees it (Linux's per-thread
/// `task/TID/` files): the thread's id, state and processor time.
fn thread_view(process: &ProcessInfo, thread: &ThreadInfo) -> ProcessInfo {
    ProcessInfo {
        pid: thread.tid,
        state: thread.state,
        cpu_ns: thread.cpu_ns,
        ..process.clone()
    }
}

/// `/proc/PID/task/TID/stat`: the process's `stat` line as the thread's
/// (its id first, its state and its processor time).
pub fn thread_stat(process: &ProcessInfo, thread: &ThreadInfo) -> Vec<u8> {
    process_stat(&thread_view(process, thread))
}

/// `/proc/PID/task/TID/status`: the process's `status` with the thread's
/// state, `Pid:` the thread's id, `Tgid:` the process's.
pub fn thread_status(process: &ProcessInfo, thread: &ThreadInfo) -> Vec<u8> {
    status(&thread_view(process, thread), process.pid)
}

/// `/proc/PID/status`: `Name:` to `Threads:` (Linux's
/// `proc_pid_status`, the lines programs look for).
pub fn process_status(process: &ProcessInfo) -> Vec<u8> {
    status(process, process.pid)
}

/// The `status` lines of `process` (or of a thread's view of it), in
/// thread group `thread_group`.
fn status(process: &ProcessInfo, thread_group: u64) -> Vec<u8> {
    let mut text: Vec<u8> = b"Name:\t".to_vec();
    text.extend_from_slice(&process.command);
    let mut rest = String::from("\n");
    if let Some(umask) = process.umask {
        let _ = writeln!(rest, "Umask:\t{umask:04o}");
    }
    let _ = writeln!(rest, "State:\t{}", process.state.description());
    let _ = writeln!(rest, "Tgid:\t{thread_group}");
    let _ = writeln!(rest, "Ngid:\t0");
    let _ = writeln!(rest, "Pid:\t{}", process.pid);
    let _ = writeln!(rest, "PPid:\t{}", process.parent);
    let _ = writeln!(rest, "TracerPid:\t0");
    let (uid, gid) = (process.uid, process.gid);
    let _ = writeln!(rest, "Uid:\t{uid}\t{uid}\t{uid}\t{uid}");
    let _ = writeln!(rest, "Gid:\t{gid}\t{gid}\t{gid}\t{gid}");
    rest.push_str("Groups:\t");
    for (index, group) in process.groups.iter().enumerate() {
        let separator = if index == 0 { "" } else { " " };
        let _ = write!(rest, "{separator}{group}");
    }
    // Linux ends the list with a space, kept for programs that expect it.
    rest.push_str(" \n");
    if process.state != ProcessState::Zombie {
        let size = kilobytes(process.virtual_bytes);
        let resident = kilobytes(process.resident_pages * PAGE_BYTES);
        let _ = writeln!(rest, "VmPeak:\t{size:>8} kB");
        let _ = writeln!(rest, "VmSize:\t{size:>8} kB");
        let _ = writeln!(rest, "VmHWM:\t{resident:>8} kB");
        let _ = writeln!(rest, "VmRSS:\t{resident:>8} kB");
    }
    let _ = writeln!(rest, "Threads:\t{}", process.threads.max(1));
    // Linux's last lines; a waiting program's count of wake-ups.
    let (voluntary, involuntary) = process.context_switches;
    let _ = writeln!(rest, "voluntary_ctxt_switches:\t{voluntary}");
    let _ = writeln!(rest, "nonvoluntary_ctxt_switches:\t{involuntary}");
    text.extend_from_slice(rest.as_bytes());
    text
}

/// `/proc/PID/statm`: sizes in pages (size, resident, shared, text, lib,
/// data, dirty); what is not told apart is 0.
pub fn process_statm(process: &ProcessInfo) -> Vec<u8> {
    if process.state == ProcessState::Zombie {
        return b"0 0 0 0 0 0 0\n".to_vec();
    }
    format!(
        "{} {} 0 0 0 0 0\n",
        process.virtual_bytes / PAGE_BYTES,
        process.resident_pages
    )
    .into_bytes()
}

/// `/proc/meminfo`: each line `Label:` padded to 16 columns, the figure
/// right-aligned in 8, then ` kB` (Linux's `show_val_kb`). Spindle has no
/// page cache, swap or shared memory, so those are 0.
pub fn meminfo(memory: &MemoryInfo) -> Vec<u8> {
    let mut text = String::new();
    for (label, bytes) in [
        ("MemTotal:", memory.total_bytes),
        ("MemFree:", memory.free_bytes),
        ("MemAvailable:", memory.available_bytes),
        ("Buffers:", 0),
        ("Cached:", 0),
        ("SwapCached:", 0),
        ("SwapTotal:", 0),
        ("SwapFree:", 0),
        ("Shmem:", 0),
    ] {
        let _ = writeln!(text, "{label:<16}{:>8} kB", kilobytes(bytes));
    }
    text.into_bytes()
}

/// Nanoseconds as seconds with two decimals.
fn seconds_with_hundredths(ns: u64) -> String {
    let hundredths = ns / 10_000_000;
    format!("{}.{:02}", hundredths / 100, hundredths % 100)
}

/// `/proc/uptime`: seconds since boot and seconds idle.
pub fn uptime(uptime_ns: u64, idle_ns: u64) -> Vec<u8> {
    format!(
        "{} {}\n",
        seconds_with_hundredths(uptime_ns),
        seconds_with_hundredths(idle_ns)
    )
    .into_bytes()
}

/// A path or name as `/proc/mounts` writes it: space, tab, newline and
/// backslash as octal escapes (`\040`), so that fields split on spaces.
fn escaped(text: &[u8], out: &mut Vec<u8>) {
    for &byte in text {
        if matches!(byte, b' ' | b'\t' | b'\n' | b'\\') {
            out.extend_from_slice(format!("\\{byte:03o}").as_bytes());
        } else {
            out.push(byte);
        }
    }
}

/// `/proc/mounts`: `device path type options 0 0` per mount.
pub fn mounts(mounts: &[Mount]) -> Vec<u8> {
    let mut text = Vec::new();
    for mount in mounts {
        escaped(&mount.device, &mut text);
        text.push(b' ');
        escaped(&mount.path, &mut text);
        text.push(b' ');
        escaped(&mount.fs_type, &mut text);
        text.extend_from_slice(if mount.is_read_only {
            b" ro 0 0\n"
        } else {
            b" rw 0 0\n"
        });
    }
    text
}

/// `/proc/cpuinfo`: a block per processor, `name\t: value` lines and a
/// blank line after each (the first lines of x86's `show_cpuinfo`).
pub fn cpuinfo(cpus: &[Cpu]) -> Vec<u8> {
    let mut text = Vec::new();
    for (index, cpu) in cpus.iter().enumerate() {
        text.extend_from_slice(format!("processor\t: {index}\nvendor_id\t: ").as_bytes());
        text.extend_from_slice(&cpu.vendor);
        text.extend_from_slice(
            format!(
                "\ncpu family\t: {}\nmodel\t\t: {}\nmodel name\t: ",
                cpu.family, cpu.model
            )
            .as_bytes(),
        );
        text.extend_from_slice(&cpu.model_name);
        text.extend_from_slice(
            format!(
                "\nstepping\t: {}\ncpu MHz\t\t: {}.{:03}\ncpu cores\t: 1\n\n",
                cpu.stepping,
                cpu.khz / 1000,
                cpu.khz % 1000
            )
            .as_bytes(),
        );
    }
    text
}

/// `/proc/stat`: processor time (all of it user or idle: the kernel does
/// not tell user from system time yet), context switches, processes made,
/// and the ones running (Linux's `show_stat`; `btime` is 0, as the clock
/// starts at boot).
pub fn system_stat(
    uptime_ns: u64,
    idle_ns: u64,
    counters: &Counters,
    processes: &[ProcessInfo],
) -> Vec<u8> {
    let busy = clock_ticks(uptime_ns.saturating_sub(idle_ns));
    let idle = clock_ticks(idle_ns);
    let times = format!("{busy} 0 0 {idle} 0 0 0 0 0 0");
    let running = processes
        .iter()
        .filter(|process| process.state == ProcessState::Running)
        .count();
    format!(
        "cpu  {times}\ncpu0 {times}\nintr 0\nctxt {}\nbtime 0\nprocesses {}\nprocs_running {running}\nprocs_blocked 0\n",
        counters.context_switches, counters.processes_made
    )
    .into_bytes()
}

/// `/proc/loadavg`: the load averages (not measured yet: 0.00), the
/// processes running and all of them, and the last process id.
pub fn loadavg(counters: &Counters, processes: &[ProcessInfo]) -> Vec<u8> {
    let running = processes
        .iter()
        .filter(|process| process.state == ProcessState::Running)
        .count();
    format!(
        "0.00 0.00 0.00 {running}/{} {}\n",
        processes.len(),
        counters.last_pid
    )
    .into_bytes()
}

/// A file of `/proc/sys/kernel/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelSetting {
    /// `domainname`.
    DomainName,
    /// `hostname`.
    HostName,
    /// `ostype`.
    OsType,
    /// `osrelease`.
    OsRelease,
    /// `pid_max`.
    PidMax,
    /// `version`.
    Version,
}

/// The text of a `/proc/sys/kernel/` file: the value and a newline
/// (Linux's `proc_dostring` and `proc_dointvec`).
pub fn kernel_setting(settings: &KernelSettings, setting: KernelSetting) -> Vec<u8> {
    let mut text = match setting {
        KernelSetting::DomainName => settings.domain_name.clone(),
        KernelSetting::HostName => settings.host_name.clone(),
        KernelSetting::OsType => settings.os_type.clone(),
        KernelSetting::OsRelease => settings.os_release.clone(),
        KernelSetting::PidMax => format!("{}", settings.pid_max).into_bytes(),
        KernelSetting::Version => settings.version.clone(),
    };
    text.push(b'\n');
    text
}
