//! The process family's arguments, decoded and checked: every flag word,
//! option set and number a program passes to `mmap` and `mprotect`,
//! `clone`, `wait4` and `waitid`, `kill` and `tgkill`, `futex`, the
//! clocks, and the first line of a script `execve` runs. The calls
//! themselves act on processes, threads and address spaces, so they live
//! in `personality/linux-process`, which runs only in the kernel; what
//! they accept and refuse is decided here, as plain functions from
//! numbers to a typed request or an [`Errno`], so it is host-tested.

use alloc::vec::Vec;

use linux_abi::{
    signal,
    time::{clock as clock_id, TIMER_ABSTIME},
    Errno,
};

/// `PROT_READ`, `PROT_WRITE`, `PROT_EXEC`.
const PROT_READ: u64 = 1;
const PROT_WRITE: u64 = 2;
const PROT_EXEC: u64 = 4;

/// `mmap` flags.
mod map_flag {
    /// Changes are shared with other mappings of the object.
    pub const SHARED: u64 = 0x01;
    /// Changes are private to the mapping.
    pub const PRIVATE: u64 = 0x02;
    /// Shared, and unknown flags are an error (both type bits).
    pub const SHARED_VALIDATE: u64 = 0x03;
    /// The bits that say shared or private.
    pub const TYPE: u64 = 0x03;
    /// Place exactly at the address given, replacing what was there.
    pub const FIXED: u64 = 0x10;
    /// Not backed by a file: zero-filled.
    pub const ANONYMOUS: u64 = 0x20;
    /// Like `MAP_FIXED`, but fail rather than replace.
    pub const FIXED_NOREPLACE: u64 = 0x10_0000;
}

/// What a mapping lets the program do with its pages. Writable and
/// executable at once is never granted (W^X).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protection {
    /// No access (`PROT_NONE`).
    None,
    /// Read only.
    Read,
    /// Read and write.
    ReadWrite,
    /// Read and execute.
    ReadExecute,
    /// Read, write and execute.
    ReadWriteExecute,
}

/// The protection `prot` asks for: `EINVAL` for unknown bits. Writable
/// and executable at once is allowed, as on Linux.
pub fn protection(prot: u64) -> Result<Protection, Errno> {
    if prot & !(PROT_READ | PROT_WRITE | PROT_EXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(
        match (
            prot & PROT_WRITE != 0,
            prot & PROT_EXEC != 0,
            prot & PROT_READ != 0,
        ) {
            (true, true, _) => Protection::ReadWriteExecute,
            (true, false, _) => Protection::ReadWrite,
            (false, true, _) => Protection::ReadExecute,
            (false, false, true) => Protection::Read,
            (false, false, false) => Protection::None,
        },
    )
}

/// An `mmap` request, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapRequest {
    /// `MAP_SHARED` (or `MAP_SHARED_VALIDATE`) rather than `MAP_PRIVATE`.
    pub shared: bool,
    /// What the pages allow.
    pub protection: Protection,
    /// The address is where it must go (`MAP_FIXED` or
    /// `MAP_FIXED_NOREPLACE`), not a hint.
    pub fixed: bool,
    /// Fail rather than replace what is there (`MAP_FIXED_NOREPLACE`).
    pub no_replace: bool,
    /// Zero-filled memory rather than a file's (`MAP_ANONYMOUS`).
    pub anonymous: bool,
}

/// Checks `mmap(_, len, prot, flags, ...)`'s numbers in Linux's order:
/// neither or both type bits wrong (`EINVAL`), the protection, then a
/// zero length (`EINVAL`).
pub fn map_request(len: u64, prot: u64, flags: u64) -> Result<MapRequest, Errno> {
    let shared = match flags & map_flag::TYPE {
        map_flag::PRIVATE => false,
        map_flag::SHARED | map_flag::SHARED_VALIDATE => true,
        _ => return Err(Errno::EINVAL),
    };
    let protection = protection(prot)?;
    if len == 0 {
        return Err(Errno::EINVAL);
    }
    let no_replace = flags & map_flag::FIXED_NOREPLACE != 0;
    Ok(MapRequest {
        shared,
        protection,
        fixed: flags & map_flag::FIXED != 0 || no_replace,
        no_replace,
        anonymous: flags & map_flag::ANONYMOUS != 0,
    })
}

/// `clone` flags by their short names (Linux's numbers are
/// `linux_abi::clone`'s).
pub mod clone_flag {
    pub use linux_abi::clone::{
        CLONE_CHILD_CLEARTID as CHILD_CLEARTID, CLONE_CHILD_SETTID as CHILD_SETTID,
        CLONE_PARENT_SETTID as PARENT_SETTID, CLONE_SETTLS as SETTLS, CLONE_THREAD as THREAD,
        CLONE_VFORK as VFORK, CLONE_VM as VM,
    };
}

/// What a `clone` makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloneKind {
    /// A new process, with these flags: with `CLONE_VM` it runs in the
    /// caller's memory (`vfork`, `posix_spawn`), otherwise in a
    /// copy-on-write copy of it; with `CLONE_VFORK` the caller waits
    /// until it calls `execve` or ends.
    Fork {
        /// The `clone` flags.
        flags: u64,
    },
    /// Another thread of the caller's process.
    Thread,
}

/// What `clone(flags, ...)` makes, after Linux's checks of the flags
/// together (`copy_process`): `EINVAL` for a new mount or user
/// namespace sharing the caller's root and directory (`CLONE_FS`), a
/// thread without the signal handlers (`CLONE_SIGHAND`), shared signal
/// handlers without shared memory (`CLONE_VM`), a thread in new user or
/// process-id namespaces, and a process descriptor asked for with
/// `CLONE_PARENT_SETTID` (both would be written to the same place) or
/// `CLONE_DETACHED`.
pub fn clone_kind(flags: u64) -> Result<CloneKind, Errno> {
    use linux_abi::clone::*;
    let has = |flag: u64| flags & flag != 0;
    let is_refused = (has(CLONE_FS) && has(CLONE_NEWNS | CLONE_NEWUSER))
        || (has(CLONE_THREAD) && !has(CLONE_SIGHAND))
        || (has(CLONE_SIGHAND) && !has(CLONE_VM))
        || (has(CLONE_THREAD) && has(CLONE_NEWUSER | CLONE_NEWPID))
        || (has(CLONE_PIDFD) && has(clone_flag::PARENT_SETTID | CLONE_DETACHED));
    if is_refused {
        return Err(Errno::EINVAL);
    }
    if has(CLONE_THREAD) {
        return Ok(CloneKind::Thread);
    }
    Ok(CloneKind::Fork { flags })
}

/// `wait4`'s and `waitid`'s options.
mod wait_flag {
    /// Return at once if no child has changed.
    pub const WNOHANG: u64 = 1;
    /// Report stopped children (`WUNTRACED`, `waitid`'s `WSTOPPED`).
    pub const WUNTRACED: u64 = 2;
    /// `waitid`: report children that ended.
    pub const WEXITED: u64 = 4;
    /// Report continued children.
    pub const WCONTINUED: u64 = 8;
    /// `waitid`: leave the change to be waited for again.
    pub const WNOWAIT: u64 = 0x0100_0000;
    /// Wait for threads' ends too (accepted, meaningless here).
    pub const WALL: u64 = 0x4000_0000;
    /// Wait for clone children only (accepted, meaningless here).
    pub const WCLONE: u64 = 0x8000_0000;
}

/// Which children a wait is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitTarget {
    /// Any child.
    Any,
    /// This child.
    Process(u64),
    /// The children in this process group.
    Group(u64),
    /// The child a process descriptor of the caller names
    /// (`P_PIDFD`): this descriptor.
    Descriptor(u64),
    /// The children in the caller's own process group.
    CallersGroup,
}

/// A wait, checked: for which children, which changes, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitRequest {
    /// Which children.
    pub target: WaitTarget,
    /// Report children that ended.
    pub ended: bool,
    /// Report children that stopped.
    pub stopped: bool,
    /// Report children that were continued.
    pub continued: bool,
    /// Leave the change to be waited for again (`WNOWAIT`).
    pub keep: bool,
    /// Wait for a change rather than return at once (no `WNOHANG`).
    pub block: bool,
}

/// Checks `wait4(pid, _, options, _)`: `EINVAL` for unknown options. The
/// pid is a C `int` (glibc passes -1 zero-extended): -1 any child, 0 the
/// caller's group, above 0 that child, below -1 the group `-pid`.
pub fn wait4_request(pid: u64, options: u64) -> Result<WaitRequest, Errno> {
    use wait_flag::*;
    if options & !(WNOHANG | WUNTRACED | WCONTINUED | WALL | WCLONE) != 0 {
        return Err(Errno::EINVAL);
    }
    let target = match pid as i32 {
        -1 => WaitTarget::Any,
        0 => WaitTarget::CallersGroup,
        pid if pid > 0 => WaitTarget::Process(pid as u64),
        pid => WaitTarget::Group(u64::from(pid.unsigned_abs())),
    };
    Ok(WaitRequest {
        target,
        ended: true,
        stopped: options & WUNTRACED != 0,
        continued: options & WCONTINUED != 0,
        keep: false,
        block: options & WNOHANG == 0,
    })
}

/// Checks `waitid(idtype, id, _, options, _)`: `EINVAL` for unknown
/// options, for none of `WEXITED`, `WSTOPPED`, `WCONTINUED`, and for an
/// unknown `idtype`, a `P_PID` of 0 or a negative `P_PIDFD`. `P_PGID`
/// with 0 is the caller's group.
pub fn waitid_request(idtype: u64, id: u64, options: u64) -> Result<WaitRequest, Errno> {
    use wait_flag::*;
    const P_ALL: u64 = 0;
    const P_PID: u64 = 1;
    const P_PGID: u64 = 2;
    let known = WNOHANG | WUNTRACED | WEXITED | WCONTINUED | WNOWAIT | WALL | WCLONE;
    if options & !known != 0 || options & (WEXITED | WUNTRACED | WCONTINUED) == 0 {
        return Err(Errno::EINVAL);
    }
    if u64::from(idtype as u32) == linux_abi::pidfd::P_PIDFD && (id as i32) < 0 {
        return Err(Errno::EINVAL);
    }
    let id = u64::from(id as u32);
    let target = match u64::from(idtype as u32) {
        linux_abi::pidfd::P_PIDFD => WaitTarget::Descriptor(id),
        P_ALL => WaitTarget::Any,
        P_PID if id > 0 => WaitTarget::Process(id),
        P_PGID if id > 0 => WaitTarget::Group(id),
        P_PGID => WaitTarget::CallersGroup,
        _ => return Err(Errno::EINVAL),
    };
    Ok(WaitRequest {
        target,
        ended: options & WEXITED != 0,
        stopped: options & WUNTRACED != 0,
        continued: options & WCONTINUED != 0,
        keep: options & WNOWAIT != 0,
        block: options & WNOHANG == 0,
    })
}

/// A signal number argument: 0 (only check the target) to
/// `MAX_SIGNAL`; `EINVAL` otherwise.
pub fn signal_argument(signal: u64) -> Result<u8, Errno> {
    u8::try_from(signal)
        .ok()
        .filter(|&signal| signal <= signal::MAX_SIGNAL)
        .ok_or(Errno::EINVAL)
}

/// Checks `tgkill(tgid, tid, _)` (or `tkill(tid, _)`, `tgid` `None`):
/// both are C `int`s and must be positive (`EINVAL`). Returns them.
pub fn thread_target(tgid: Option<u64>, tid: u64) -> Result<(Option<u64>, u64), Errno> {
    let (tid, tgid) = (tid as i32, tgid.map(|tgid| tgid as i32));
    if tid <= 0 || tgid.is_some_and(|tgid| tgid <= 0) {
        return Err(Errno::EINVAL);
    }
    Ok((tgid.map(|tgid| tgid as u64), tid as u64))
}

/// `futex` operations.
mod futex_op {
    pub const WAIT: u64 = 0;
    pub const WAKE: u64 = 1;
    pub const REQUEUE: u64 = 3;
    pub const CMP_REQUEUE: u64 = 4;
    pub const WAIT_BITSET: u64 = 9;
    pub const WAKE_BITSET: u64 = 10;
    pub const PRIVATE: u64 = 128;
    pub const CLOCK_REALTIME: u64 = 256;
}

/// A `futex` operation, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FutexOperation {
    /// `FUTEX_WAIT`: the timeout is relative.
    Wait,
    /// `FUTEX_WAIT_BITSET`: the timeout is an absolute time.
    WaitAbsolute,
    /// `FUTEX_WAKE`, `FUTEX_WAKE_BITSET`.
    Wake,
    /// `FUTEX_REQUEUE`.
    Requeue,
    /// `FUTEX_CMP_REQUEUE`: requeue only if the word still holds a value.
    CompareRequeue,
}

/// Whether a `futex` operation may reach other processes' waiters: true
/// unless `FUTEX_PRIVATE_FLAG` is set, as on Linux, where such a word in
/// shared memory is found by the memory, not the address.
pub fn futex_is_shared(operation: u64) -> bool {
    operation & futex_op::PRIVATE == 0
}

/// Whether a `futex` wait's absolute timeout is a wall-clock time
/// (`FUTEX_CLOCK_REALTIME`) rather than an uptime (`CLOCK_MONOTONIC`).
pub fn futex_uses_wall_clock(operation: u64) -> bool {
    operation & futex_op::CLOCK_REALTIME != 0
}

/// Decodes `futex(address, operation, ...)`: `EINVAL` for an address
/// that is not 4-byte aligned, `ENOSYS` for an operation not offered
/// (priority inheritance, `FUTEX_WAKE_OP`). `FUTEX_PRIVATE_FLAG` is
/// read by [`futex_is_shared`], `FUTEX_CLOCK_REALTIME` by
/// [`futex_uses_wall_clock`].
pub fn futex_operation(address: u64, operation: u64) -> Result<FutexOperation, Errno> {
    if !address.is_multiple_of(4) {
        return Err(Errno::EINVAL);
    }
    match operation & !(futex_op::PRIVATE | futex_op::CLOCK_REALTIME) {
        futex_op::WAIT => Ok(FutexOperation::Wait),
        futex_op::WAIT_BITSET => Ok(FutexOperation::WaitAbsolute),
        futex_op::WAKE | futex_op::WAKE_BITSET => Ok(FutexOperation::Wake),
        futex_op::REQUEUE => Ok(FutexOperation::Requeue),
        futex_op::CMP_REQUEUE => Ok(FutexOperation::CompareRequeue),
        _ => Err(Errno::ENOSYS),
    }
}

/// What a clock id reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// The wall clock, which root may set: `CLOCK_REALTIME`, its coarse
    /// and alarm forms, `CLOCK_TAI`.
    Wall,
    /// The time since boot, which only moves forward: `CLOCK_MONOTONIC`
    /// and its raw and coarse forms, `CLOCK_BOOTTIME` (nothing suspends).
    Uptime,
    /// The calling process's processor time (`CLOCK_PROCESS_CPUTIME_ID`).
    ProcessCpu,
    /// The calling thread's processor time (`CLOCK_THREAD_CPUTIME_ID`).
    ThreadCpu,
}

/// `CLOCK_REALTIME`: the only clock `clock_settime` sets.
pub const CLOCK_REALTIME: u64 = clock_id::REALTIME;
/// The clocks whose resolution is a tick.
const COARSE_CLOCKS: [u64; 2] = [clock_id::REALTIME_COARSE, clock_id::MONOTONIC_COARSE];
/// A coarse clock's resolution: one tick of Linux's usual 250 Hz.
const COARSE_RESOLUTION_NS: u64 = 4_000_000;

/// Decodes a clock id: `EINVAL` for one Linux does not have (above
/// `CLOCK_TAI` 11, the retired `CLOCK_SGI_CYCLE` 10, and the negative
/// ids of other processes' CPU clocks, not offered).
pub fn clock(clock: u64) -> Result<Clock, Errno> {
    use clock_id::*;
    match clock {
        REALTIME | REALTIME_COARSE | REALTIME_ALARM | TAI => Ok(Clock::Wall),
        MONOTONIC | MONOTONIC_RAW | MONOTONIC_COARSE | BOOTTIME | BOOTTIME_ALARM => {
            Ok(Clock::Uptime)
        }
        PROCESS_CPUTIME_ID => Ok(Clock::ProcessCpu),
        THREAD_CPUTIME_ID => Ok(Clock::ThreadCpu),
        _ => Err(Errno::EINVAL),
    }
}

/// `clock_getres`: the clock's resolution in nanoseconds (1 for the
/// precise clocks, a tick for the coarse ones).
pub fn clock_resolution(clock: u64) -> Result<u64, Errno> {
    self::clock(clock)?;
    Ok(if COARSE_CLOCKS.contains(&clock) {
        COARSE_RESOLUTION_NS
    } else {
        1
    })
}

/// Whether timers and sleeps may count `clock`: Linux has none on the
/// raw and coarse clocks nor (sleeps) on the calling thread's processor
/// time, and answers `EOPNOTSUPP` (its `k_clock` has no `nsleep` or
/// `timer_create`).
fn may_wait_on(clock: u64) -> bool {
    use clock_id::*;
    !matches!(clock, MONOTONIC_RAW | REALTIME_COARSE | MONOTONIC_COARSE)
}

/// Checks `clock_nanosleep(clock, flags, ...)` in Linux's order: the
/// clock (`EINVAL`), whether one may sleep on it (`EOPNOTSUPP`, also for
/// the calling thread's processor time, which cannot move while it
/// sleeps). Flags other than `TIMER_ABSTIME` are ignored, as by Linux.
/// Returns the clock and whether the time is absolute.
pub fn sleep_clock(clock: u64, flags: u64) -> Result<(Clock, bool), Errno> {
    let kind = self::clock(clock)?;
    if !may_wait_on(clock) || kind == Clock::ThreadCpu {
        return Err(Errno::EOPNOTSUPP);
    }
    Ok((kind, flags & TIMER_ABSTIME != 0))
}

/// Checks `timer_create`'s clock: `EINVAL` for no clock, `EOPNOTSUPP`
/// for one timers cannot count (raw and coarse).
pub fn timer_clock(clock: u64) -> Result<Clock, Errno> {
    let kind = self::clock(clock)?;
    if !may_wait_on(clock) {
        return Err(Errno::EOPNOTSUPP);
    }
    Ok(kind)
}

/// How many scripts may name each other's interpreter in a row (Linux's
/// limit, after which `ELOOP`).
pub const MAX_SCRIPT_DEPTH: usize = 4;
/// The longest first line of a script the kernel reads (Linux's
/// `BINPRM_BUF_SIZE`).
pub const SCRIPT_LINE_BYTES: usize = 256;

/// The interpreter a script names on its first line (`#!/bin/sh -e`):
/// its path and the one optional argument (the rest of the line, blanks
/// trimmed, as Linux takes it). `None` for a file that is not a script,
/// or whose first line names no interpreter. Only the first
/// [`SCRIPT_LINE_BYTES`] bytes are read.
pub fn script_interpreter(bytes: &[u8]) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
    let line = bytes.strip_prefix(b"#!")?;
    let line = &line[..line.len().min(SCRIPT_LINE_BYTES - 2)];
    let line = line.split(|&byte| byte == b'\n').next().unwrap_or(line);
    let blank = |byte: &u8| *byte == b' ' || *byte == b'\t' || *byte == b'\r';
    let start = line.iter().position(|byte| !blank(byte))?;
    let line = &line[start..];
    let end = line.iter().position(blank).unwrap_or(line.len());
    let (interpreter, rest) = line.split_at(end);
    let rest_start = rest.iter().position(|byte| !blank(byte));
    let argument = rest_start.map(|at| {
        let rest = &rest[at..];
        let end = rest
            .iter()
            .rposition(|byte| !blank(byte))
            .map_or(0, |last| last + 1);
        rest[..end].to_vec()
    });
    Some((
        interpreter.to_vec(),
        argument.filter(|argument| !argument.is_empty()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protection_refuses_unknown_bits_and_write_with_execute() {
        assert_eq!(protection(0), Ok(Protection::None));
        assert_eq!(protection(PROT_READ), Ok(Protection::Read));
        assert_eq!(
            protection(PROT_READ | PROT_WRITE),
            Ok(Protection::ReadWrite)
        );
        assert_eq!(protection(PROT_WRITE), Ok(Protection::ReadWrite));
        assert_eq!(
            protection(PROT_READ | PROT_EXEC),
            Ok(Protection::ReadExecute)
        );
        assert_eq!(
            protection(PROT_WRITE | PROT_EXEC),
            Ok(Protection::ReadWriteExecute),
            "Linux allows it: code generators and executable stacks"
        );
        assert_eq!(protection(8), Err(Errno::EINVAL));
        assert_eq!(protection(u64::MAX), Err(Errno::EINVAL));
    }

    #[test]
    fn map_requests_check_the_type_then_the_protection_then_the_length() {
        // Neither type bit: EINVAL even with a bad protection.
        assert_eq!(
            map_request(4096, 8, map_flag::ANONYMOUS),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            map_request(0, 8, map_flag::PRIVATE),
            Err(Errno::EINVAL),
            "an unknown protection bit"
        );
        assert_eq!(
            map_request(0, PROT_READ, map_flag::PRIVATE),
            Err(Errno::EINVAL)
        );
        let request = map_request(
            1,
            PROT_READ | PROT_WRITE,
            map_flag::SHARED_VALIDATE | map_flag::ANONYMOUS | map_flag::FIXED_NOREPLACE,
        )
        .unwrap();
        assert!(request.shared && request.anonymous && request.fixed && request.no_replace);
        assert_eq!(request.protection, Protection::ReadWrite);
        let request = map_request(u64::MAX, PROT_READ, map_flag::PRIVATE).unwrap();
        assert!(!request.shared && !request.fixed && !request.anonymous);
    }

    #[test]
    fn clone_makes_forks_threads_or_refuses_shared_processes() {
        use linux_abi::clone::*;
        assert_eq!(clone_kind(17), Ok(CloneKind::Fork { flags: 17 }));
        let vfork = clone_flag::VM | clone_flag::VFORK | 17;
        assert_eq!(clone_kind(vfork), Ok(CloneKind::Fork { flags: vfork }));
        let shared = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | 17;
        assert_eq!(clone_kind(shared), Ok(CloneKind::Fork { flags: shared }));
        assert_eq!(
            clone_kind(CLONE_VM | CLONE_SIGHAND | CLONE_THREAD | clone_flag::SETTLS),
            Ok(CloneKind::Thread)
        );
        for refused in [
            CLONE_FS | CLONE_NEWNS,
            CLONE_FS | CLONE_NEWUSER,
            CLONE_VM | CLONE_THREAD,
            CLONE_SIGHAND,
            CLONE_VM | CLONE_SIGHAND | CLONE_THREAD | CLONE_NEWPID,
            CLONE_PIDFD | clone_flag::PARENT_SETTID,
            CLONE_PIDFD | CLONE_DETACHED,
        ] {
            assert_eq!(clone_kind(refused), Err(Errno::EINVAL), "{refused:#x}");
        }
    }

    #[test]
    fn wait4_reads_the_pid_as_an_int_and_refuses_unknown_options() {
        let any = wait4_request(u64::from(u32::MAX), 0).unwrap();
        assert_eq!(any.target, WaitTarget::Any);
        assert!(any.ended && any.block && !any.stopped && !any.keep);
        assert_eq!(
            wait4_request(0, 0).unwrap().target,
            WaitTarget::CallersGroup
        );
        assert_eq!(
            wait4_request(42, 0).unwrap().target,
            WaitTarget::Process(42)
        );
        assert_eq!(
            wait4_request(-7i64 as u64, 0).unwrap().target,
            WaitTarget::Group(7)
        );
        let nohang = wait4_request(42, wait_flag::WNOHANG | wait_flag::WUNTRACED).unwrap();
        assert!(!nohang.block && nohang.stopped);
        assert_eq!(wait4_request(42, 0x10), Err(Errno::EINVAL));
        assert_eq!(wait4_request(42, wait_flag::WNOWAIT), Err(Errno::EINVAL));
    }

    #[test]
    fn waitid_needs_a_change_to_report_and_a_known_id_type() {
        assert_eq!(waitid_request(0, 0, wait_flag::WNOHANG), Err(Errno::EINVAL));
        assert_eq!(waitid_request(4, 1, wait_flag::WEXITED), Err(Errno::EINVAL));
        assert_eq!(
            waitid_request(3, 5, wait_flag::WEXITED).unwrap().target,
            WaitTarget::Descriptor(5),
            "P_PIDFD"
        );
        assert_eq!(
            waitid_request(3, u64::from(u32::MAX), wait_flag::WEXITED),
            Err(Errno::EINVAL),
            "a negative descriptor"
        );
        assert_eq!(waitid_request(1, 0, wait_flag::WEXITED), Err(Errno::EINVAL));
        assert_eq!(
            waitid_request(0, 0, wait_flag::WEXITED | 0x10),
            Err(Errno::EINVAL)
        );
        let request = waitid_request(1, 9, wait_flag::WEXITED | wait_flag::WNOWAIT).unwrap();
        assert_eq!(request.target, WaitTarget::Process(9));
        assert!(request.ended && request.keep && !request.stopped);
        assert_eq!(
            waitid_request(2, 0, wait_flag::WCONTINUED).unwrap().target,
            WaitTarget::CallersGroup
        );
        // The id is an int: the high half is ignored.
        assert_eq!(
            waitid_request(2, (1 << 32) | 5, wait_flag::WEXITED)
                .unwrap()
                .target,
            WaitTarget::Group(5)
        );
    }

    #[test]
    fn signals_and_thread_ids_are_checked() {
        assert_eq!(signal_argument(0), Ok(0));
        assert_eq!(
            signal_argument(u64::from(signal::MAX_SIGNAL)),
            Ok(signal::MAX_SIGNAL)
        );
        assert_eq!(
            signal_argument(u64::from(signal::MAX_SIGNAL) + 1),
            Err(Errno::EINVAL)
        );
        assert_eq!(signal_argument(256 + 9), Err(Errno::EINVAL));
        assert_eq!(thread_target(Some(3), 4), Ok((Some(3), 4)));
        assert_eq!(thread_target(None, 4), Ok((None, 4)));
        assert_eq!(thread_target(Some(0), 4), Err(Errno::EINVAL));
        assert_eq!(thread_target(None, u64::MAX), Err(Errno::EINVAL));
    }

    #[test]
    fn futex_operations_need_an_aligned_word_and_a_known_operation() {
        assert_eq!(futex_operation(2, 0), Err(Errno::EINVAL));
        assert_eq!(futex_operation(8, 0), Ok(FutexOperation::Wait));
        assert_eq!(
            futex_operation(8, 9 | futex_op::PRIVATE | futex_op::CLOCK_REALTIME),
            Ok(FutexOperation::WaitAbsolute)
        );
        assert_eq!(futex_operation(8, 10), Ok(FutexOperation::Wake));
        assert_eq!(
            futex_operation(8, 4 | 128),
            Ok(FutexOperation::CompareRequeue)
        );
        // FUTEX_WAKE_OP, FUTEX_LOCK_PI: not offered.
        assert_eq!(futex_operation(8, 5), Err(Errno::ENOSYS));
        assert_eq!(futex_operation(8, 6), Err(Errno::ENOSYS));
    }

    #[test]
    fn futexes_are_shared_unless_marked_private() {
        assert!(futex_is_shared(0));
        assert!(futex_is_shared(9 | futex_op::CLOCK_REALTIME));
        assert!(!futex_is_shared(futex_op::PRIVATE));
        assert!(!futex_is_shared(1 | futex_op::PRIVATE));
        assert!(futex_uses_wall_clock(9 | futex_op::CLOCK_REALTIME));
        assert!(!futex_uses_wall_clock(9 | futex_op::PRIVATE));
    }

    #[test]
    fn clocks_are_the_wall_clock_or_the_uptime() {
        assert_eq!(clock(0), Ok(Clock::Wall));
        assert_eq!(clock(1), Ok(Clock::Uptime));
        assert_eq!(clock(7), Ok(Clock::Uptime), "CLOCK_BOOTTIME");
        assert_eq!(clock(11), Ok(Clock::Wall), "CLOCK_TAI");
        assert_eq!(clock(10), Err(Errno::EINVAL), "CLOCK_SGI_CYCLE");
        assert_eq!(clock(12), Err(Errno::EINVAL));
        assert_eq!(clock(u64::MAX), Err(Errno::EINVAL));
        assert_eq!(clock_resolution(1), Ok(1));
        assert_eq!(clock_resolution(5), Ok(4_000_000));
        assert_eq!(clock_resolution(10), Err(Errno::EINVAL));
        assert_eq!(clock(2), Ok(Clock::ProcessCpu));
        assert_eq!(clock(3), Ok(Clock::ThreadCpu));
    }

    #[test]
    fn sleeps_and_timers_refuse_the_raw_and_coarse_clocks_and_sleeps_the_thread_clock() {
        assert_eq!(sleep_clock(1, 0), Ok((Clock::Uptime, false)));
        assert_eq!(sleep_clock(0, 1), Ok((Clock::Wall, true)));
        assert_eq!(
            sleep_clock(1, 2),
            Ok((Clock::Uptime, false)),
            "other flags ignored"
        );
        assert_eq!(sleep_clock(2, 0), Ok((Clock::ProcessCpu, false)));
        assert_eq!(
            sleep_clock(3, 0),
            Err(Errno::EOPNOTSUPP),
            "the caller's own thread clock"
        );
        for raw_or_coarse in [4, 5, 6] {
            assert_eq!(sleep_clock(raw_or_coarse, 0), Err(Errno::EOPNOTSUPP));
            assert_eq!(timer_clock(raw_or_coarse), Err(Errno::EOPNOTSUPP));
        }
        assert_eq!(sleep_clock(12, 0), Err(Errno::EINVAL));
        assert_eq!(timer_clock(3), Ok(Clock::ThreadCpu));
        assert_eq!(timer_clock(10), Err(Errno::EINVAL));
    }

    #[test]
    fn script_lines_give_an_interpreter_and_one_argument() {
        assert_eq!(
            script_interpreter(b"#!/bin/sh\necho"),
            Some((b"/bin/sh".to_vec(), None))
        );
        assert_eq!(
            script_interpreter(b"#! /usr/bin/env  python3 -u \r\nx"),
            Some((b"/usr/bin/env".to_vec(), Some(b"python3 -u".to_vec())))
        );
        assert_eq!(script_interpreter(b"#!   \n/bin/sh"), None);
        assert_eq!(script_interpreter(b"\x7fELF"), None);
        assert_eq!(script_interpreter(b"#!"), None);
        // A first line past the limit is cut where Linux cuts it.
        let mut long = b"#!/bin/".to_vec();
        long.extend(core::iter::repeat_n(b'x', 1000));
        let (interpreter, _) = script_interpreter(&long).unwrap();
        assert_eq!(interpreter.len(), SCRIPT_LINE_BYTES - 2);
    }
}
