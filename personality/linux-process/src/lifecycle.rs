//! Processes: `exit`, `fork`, `wait4`, `kill`, the identifiers, and the
//! thread's own state (`arch_prctl`, `set_tid_address`, `sched_yield`).

use alloc::format;
use linux_abi::{
    resource::Rusage,
    siginfo::{Siginfo, SiginfoFields},
    signal, Errno,
};

use ::process::{self, Children, KillError, Reporting, WaitError};

/// `wait4`'s options: return at once if no child has changed; report
/// stopped and continued children; wait for threads' ends too (accepted,
/// meaningless here).
const WNOHANG: u64 = 1;
const WUNTRACED: u64 = 2;
const WCONTINUED: u64 = 8;
const WALL: u64 = 0x4000_0000;
const WCLONE: u64 = 0x8000_0000;
/// `clone` flags.
mod clone_flag {
    /// Share the address space (a thread).
    pub const VM: u64 = 0x100;
    /// The parent waits until the child calls `execve` or exits.
    pub const VFORK: u64 = 0x4000;
    /// Be a thread of the caller's process.
    pub const THREAD: u64 = 0x1_0000;
    /// Set the new thread's FS base (TLS) to the fifth argument.
    pub const SETTLS: u64 = 0x8_0000;
    /// Write the new thread's id to the third argument (in the parent).
    pub const PARENT_SETTID: u64 = 0x10_0000;
    /// Clear and wake the fourth argument when the thread ends.
    pub const CHILD_CLEARTID: u64 = 0x20_0000;
    /// Write the new thread's id to the fourth argument (in the child).
    pub const CHILD_SETTID: u64 = 0x100_0000;
}

/// `getpid()`: the calling thread's process.
pub(crate) fn getpid(strand: u64) -> i64 {
    process::of_strand(strand).map_or(Errno::ESRCH.as_negative(), |process| process.id() as i64)
}

/// `gettid()`: the calling thread's id (the process id for its first
/// thread).
pub(crate) fn gettid(strand: u64) -> i64 {
    process::tid_of(strand).map_or(Errno::ESRCH.as_negative(), |tid| tid as i64)
}

/// `set_tid_address(address)`: the thread's id is cleared there (and
/// waiters woken) when it ends. Returns the thread id.
pub(crate) fn set_tid_address(strand: u64, address: u64) -> i64 {
    process::set_clear_child_tid(strand, address);
    gettid(strand)
}

/// `clone(flags, stack, parent_tid, child_tid, tls)`: without `CLONE_VM`,
/// a `fork` (on `stack` if given); with `CLONE_VM | CLONE_THREAD`, a new
/// thread of the caller's process, resuming from the same call with
/// result 0 on `stack`. `CLONE_VM | CLONE_VFORK` without `CLONE_THREAD`
/// (how musl's and glibc's `posix_spawn`, and so `system`, start a
/// program) is a `fork` on `stack`: the child gets a copy of the memory
/// instead of sharing it, which those callers cannot tell apart (the
/// child only prepares and calls `execve`; musl learns of a failed
/// `execve` through a close-on-exec pipe, glibc through the exit
/// status). Other `CLONE_VM` sharing by another process is not supported
/// (`ENOSYS`).
pub(crate) fn clone(
    strand: u64,
    [flags, stack, parent_tid, child_tid, tls]: [u64; 5],
    saved: Option<(hal::user::UserRegisters, u64)>,
) -> i64 {
    if flags & clone_flag::VM == 0 {
        return fork(strand, flags, stack, saved);
    }
    if flags & clone_flag::THREAD == 0 {
        if flags & clone_flag::VFORK != 0 {
            return fork(strand, flags & !clone_flag::VM, stack, saved);
        }
        return Errno::ENOSYS.as_negative();
    }
    let (Some(process), Some((mut registers, fs_base))) = (process::of_strand(strand), saved)
    else {
        return Errno::ESRCH.as_negative();
    };
    let tid = process::reserve_id();
    registers.rax = 0;
    if stack != 0 {
        registers.rsp = stack;
    }
    let fs_base = if flags & clone_flag::SETTLS != 0 {
        tls
    } else {
        fs_base
    };
    let tid_bytes = (tid as u32).to_le_bytes();
    if flags & clone_flag::PARENT_SETTID != 0
        && hal::user::copy_to_user(parent_tid, &tid_bytes).is_err()
    {
        return Errno::EFAULT.as_negative();
    }
    if flags & clone_flag::CHILD_SETTID != 0
        && hal::user::copy_to_user(child_tid, &tid_bytes).is_err()
    {
        return Errno::EFAULT.as_negative();
    }
    let clear = if flags & clone_flag::CHILD_CLEARTID != 0 {
        child_tid
    } else {
        0
    };
    let name = format!("process {} thread {tid}", process.id());
    // The new thread's signal mask is its creator's.
    if let (Some(personality), Some(creator)) = (crate::personality(), process::tid_of(strand)) {
        personality.thread_started(process.id(), creator, tid);
    }
    match crate::threads::start(process, &name, registers, fs_base, tid, clear) {
        Ok(_thread) => tid as i64,
        Err(_) => Errno::EAGAIN.as_negative(),
    }
}

/// `getppid()`: the parent's process id (0 for a child of the kernel).
pub(crate) fn getppid(strand: u64) -> i64 {
    process::of_strand(strand).map_or(Errno::ESRCH.as_negative(), |process| {
        process.parent() as i64
    })
}

/// `fork()`, and `clone` without `CLONE_VM` (with an optional new stack):
/// a child process with a copy-on-write copy of the caller's memory,
/// resuming from the same call with result 0. The parent gets the child's
/// id. `registers` and `fs_base` are the caller's, as the call left them.
pub(crate) fn fork(
    strand: u64,
    flags: u64,
    child_stack: u64,
    saved: Option<(hal::user::UserRegisters, u64)>,
) -> i64 {
    if flags & clone_flag::VM != 0 {
        return Errno::ENOSYS.as_negative();
    }
    let (Some(parent), Some((mut registers, fs_base))) = (process::of_strand(strand), saved) else {
        return Errno::ESRCH.as_negative();
    };
    let memory = match parent.with_memory(|memory| memory.fork()) {
        Some(Ok(memory)) => memory,
        Some(Err(_)) => return Errno::ENOMEM.as_negative(),
        None => return Errno::ESRCH.as_negative(),
    };
    let id = process::reserve_id();
    let child = process::create(id, parent.id(), memory);
    registers.rax = 0;
    if child_stack != 0 {
        registers.rsp = child_stack;
    }
    match crate::threads::start(
        child.clone(),
        &format!("process {id}"),
        registers,
        fs_base,
        0,
        0,
    ) {
        Ok(_thread) => id as i64,
        Err(_) => {
            process::discard(&child);
            Errno::EAGAIN.as_negative()
        }
    }
}

/// `wait4(pid, wstatus, options, rusage)`: waits for a child to change
/// (`pid` > 0: that child; -1: any; 0: any in the caller's process group;
/// below -1: any in group `-pid`), writes its wait status, and returns
/// its id (0 with `WNOHANG` if none has changed). `WUNTRACED` and
/// `WCONTINUED` report stops and continues too. `rusage` gets the
/// child's processor time, largest size and minor faults (its own and
/// its waited-for children's).
pub(crate) fn wait4(strand: u64, pid: u64, status: u64, options: u64, rusage: u64) -> i64 {
    let Some(parent) = process::of_strand(strand) else {
        return Errno::ESRCH.as_negative();
    };
    if options & !(WNOHANG | WUNTRACED | WCONTINUED | WALL | WCLONE) != 0 {
        return Errno::EINVAL.as_negative();
    }
    // `pid_t` is an `int`: only the low 32 bits count (glibc passes -1
    // zero-extended).
    let which = match pid as i32 {
        -1 => Children::Any,
        0 => match crate::personality().and_then(|p| p.process_group(parent.id())) {
            Some(group) => Children::Group(group),
            None => Children::Any,
        },
        pid if pid > 0 => Children::Process(pid as u64),
        pid => Children::Group(u64::from(pid.unsigned_abs())),
    };
    let reporting = Reporting {
        ended: true,
        stopped: options & WUNTRACED != 0,
        continued: options & WCONTINUED != 0,
        keep: false,
    };
    match process::wait(&parent, which, reporting, options & WNOHANG == 0) {
        Ok(Some((child, change, usage))) => {
            if status != 0
                && hal::user::copy_to_user(status, &change.wait_status().to_le_bytes()).is_err()
            {
                return Errno::EFAULT.as_negative();
            }
            if rusage != 0
                && hal::user::copy_to_user(rusage, &usage.rusage_with_children().to_bytes())
                    .is_err()
            {
                return Errno::EFAULT.as_negative();
            }
            child as i64
        }
        Ok(None) => 0,
        Err(WaitError::NoChild) => Errno::ECHILD.as_negative(),
        Err(WaitError::Interrupted) => Errno::EINTR.as_negative(),
    }
}

/// `waitid(idtype, id, infop, options, rusage)`: as `wait4`, with the
/// child named by `idtype` (`P_ALL`, `P_PID`, `P_PGID`), the changes
/// asked for spelled out (`WEXITED`, `WSTOPPED`, `WCONTINUED`; at least
/// one), `WNOWAIT` to leave the change waitable, and the answer written
/// as a `siginfo_t` (`SIGCHLD`, `CLD_*`, the child, its status). Returns
/// 0; with `WNOHANG` and no change, 0 with the `siginfo_t`'s pid zeroed.
pub(crate) fn waitid(
    strand: u64,
    idtype: u64,
    id: u64,
    infop: u64,
    options: u64,
    rusage: u64,
) -> i64 {
    const P_ALL: u64 = 0;
    const P_PID: u64 = 1;
    const P_PGID: u64 = 2;
    const WSTOPPED: u64 = 2;
    const WEXITED: u64 = 4;
    const WNOWAIT: u64 = 0x0100_0000;
    let Some(parent) = process::of_strand(strand) else {
        return Errno::ESRCH.as_negative();
    };
    let known = WNOHANG | WSTOPPED | WEXITED | WCONTINUED | WNOWAIT | WALL | WCLONE;
    if options & !known != 0 || options & (WEXITED | WSTOPPED | WCONTINUED) == 0 {
        return Errno::EINVAL.as_negative();
    }
    let id = u64::from(id as u32);
    let which = match idtype as u32 as u64 {
        P_ALL => Children::Any,
        P_PID if id > 0 => Children::Process(id),
        P_PGID if id > 0 => Children::Group(id),
        P_PGID => match crate::personality().and_then(|p| p.process_group(parent.id())) {
            Some(group) => Children::Group(group),
            None => return Errno::EINVAL.as_negative(),
        },
        _ => return Errno::EINVAL.as_negative(),
    };
    let reporting = Reporting {
        ended: options & WEXITED != 0,
        stopped: options & WSTOPPED != 0,
        continued: options & WCONTINUED != 0,
        keep: options & WNOWAIT != 0,
    };
    // With WNOHANG and no change: a siginfo_t of zeros (si_pid 0).
    let mut info = Siginfo::default();
    let mut used = Rusage::default();
    match process::wait(&parent, which, reporting, options & WNOHANG == 0) {
        Ok(Some((child, change, usage))) => {
            used = usage.rusage_with_children();
            let (code, status) = match change {
                process::Change::Ended(process::End::Exited(status)) => {
                    (signal::CLD_EXITED, (status & 0xff) as i32)
                }
                process::Change::Ended(process::End::Killed { signal, .. }) => {
                    (signal::CLD_KILLED, i32::from(signal))
                }
                process::Change::Stopped(signal) => (signal::CLD_STOPPED, i32::from(signal)),
                process::Change::Continued => (signal::CLD_CONTINUED, i32::from(signal::SIGCONT)),
            };
            info = Siginfo {
                signo: i32::from(signal::SIGCHLD),
                code,
                fields: SiginfoFields::Child {
                    pid: child as i32,
                    uid: 0,
                    status,
                },
            };
        }
        Ok(None) => {}
        Err(WaitError::NoChild) => return Errno::ECHILD.as_negative(),
        Err(WaitError::Interrupted) => return Errno::EINTR.as_negative(),
    }
    if infop != 0 && hal::user::copy_to_user(infop, &info.to_bytes()).is_err() {
        return Errno::EFAULT.as_negative();
    }
    if rusage != 0 && hal::user::copy_to_user(rusage, &used.to_bytes()).is_err() {
        return Errno::EFAULT.as_negative();
    }
    0
}

/// The errno of a failed `kill`.
fn kill_errno(error: KillError) -> i64 {
    match error {
        KillError::NoProcess => Errno::ESRCH.as_negative(),
        KillError::BadSignal => Errno::EINVAL.as_negative(),
    }
}

/// A signal number argument: 0..=64.
fn signal_argument(signal: u64) -> Option<u8> {
    u8::try_from(signal)
        .ok()
        .filter(|&signal| signal <= signal::MAX_SIGNAL)
}

/// `kill(pid, signal)`: to a process, the caller's group (0), everyone
/// (-1) or a group (`-pgid`).
pub(crate) fn kill(strand: u64, pid: u64, signal: u64) -> i64 {
    let (Some(sender), Some(signal)) = (process::of_strand(strand), signal_argument(signal)) else {
        return Errno::EINVAL.as_negative();
    };
    match crate::signals::kill(sender.id(), pid as i32, signal) {
        Ok(()) => 0,
        Err(error) => kill_errno(error),
    }
}

/// `tgkill(tgid, tid, signal)`, or `tkill(tid, signal)` with `tgid`
/// `None`.
pub(crate) fn tgkill(strand: u64, tgid: Option<u64>, tid: u64, signal: u64) -> i64 {
    let (Some(sender), Some(signal)) = (process::of_strand(strand), signal_argument(signal)) else {
        return Errno::EINVAL.as_negative();
    };
    let (tid, tgid) = (tid as i32, tgid.map(|tgid| tgid as i32));
    if tid <= 0 || tgid.is_some_and(|tgid| tgid <= 0) {
        return Errno::EINVAL.as_negative();
    }
    match crate::signals::kill_thread(sender.id(), tgid.map(|t| t as u64), tid as u64, signal) {
        Ok(()) => 0,
        Err(error) => kill_errno(error),
    }
}

/// `arch_prctl(ARCH_SET_FS | ARCH_GET_FS, addr)`.
pub(crate) fn arch_prctl(code: u64, address: u64) -> i64 {
    const ARCH_SET_FS: u64 = 0x1002;
    const ARCH_GET_FS: u64 = 0x1003;
    match code {
        ARCH_SET_FS => match hal::user::set_fs_base(address) {
            Ok(()) => 0,
            Err(_) => Errno::EFAULT.as_negative(),
        },
        ARCH_GET_FS => {
            match hal::user::copy_to_user(address, &hal::user::fs_base().to_le_bytes()) {
                Ok(()) => 0,
                Err(_) => Errno::EFAULT.as_negative(),
            }
        }
        _ => Errno::EINVAL.as_negative(),
    }
}

/// Negated errno of a personality error.
fn errno_of(error: vfs::Errno) -> i64 {
    error.as_negative()
}

/// How many scripts may name each other's interpreter in a row (Linux's
/// limit, after which `ELOOP`).
const MAX_SCRIPT_DEPTH: usize = 4;
/// The longest first line of a script the kernel reads (Linux's
/// `BINPRM_BUF_SIZE`).
const SCRIPT_LINE_BYTES: usize = 256;

/// The interpreter a script names on its first line (`#!/bin/sh -e`):
/// its path and the one optional argument (the rest of the line, as
/// Linux takes it). `None` for a file that is not a script, or whose
/// first line names no interpreter.
fn script_interpreter(bytes: &[u8]) -> Option<(alloc::vec::Vec<u8>, Option<alloc::vec::Vec<u8>>)> {
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

/// `execve(path, argv, envp)`: replaces the calling process's program.
/// Everything that can fail is done first (reading the strings, the file
/// and its interpreter, loading them into a new address space); then the
/// thread switches to the new space, the old one is dropped,
/// close-on-exec descriptors close, and the call "returns" at the new
/// program's entry (the entry stub finds it in `take_exec`).
/// A static or dynamically linked ELF program, or a script whose first
/// line names its interpreter (`#!`), which then runs with the script's
/// path as an argument.
pub(crate) fn execve(strand: u64, path: u64, argv: u64, envp: u64) -> i64 {
    let (Some(process), Some(personality)) = (process::of_strand(strand), crate::personality())
    else {
        return Errno::ENOSYS.as_negative();
    };
    let path = match linux::user::read_path(path) {
        Ok(path) => path,
        Err(error) => return errno_of(error),
    };
    let (arguments, environment) = match (
        linux::user::read_string_vector(argv),
        linux::user::read_string_vector(envp),
    ) {
        (Ok(arguments), Ok(environment)) => (arguments, environment),
        (Err(error), _) | (_, Err(error)) => return errno_of(error),
    };
    let mut arguments = arguments;
    let mut program = path.clone();
    let mut bytes = match personality.read_executable(process.id(), &program) {
        Ok(bytes) => bytes,
        Err(error) => return errno_of(error),
    };
    // A script (`#!interpreter [argument]`) runs its interpreter with the
    // script's path as an argument; an interpreter may be a script too,
    // as far as Linux allows.
    for depth in 0.. {
        let Some((interpreter, argument)) = script_interpreter(&bytes) else {
            break;
        };
        if depth == MAX_SCRIPT_DEPTH {
            return Errno::ELOOP.as_negative();
        }
        let mut replaced = alloc::vec![interpreter.clone()];
        replaced.extend(argument);
        replaced.push(program);
        replaced.extend(arguments.into_iter().skip(1));
        arguments = replaced;
        program = interpreter;
        bytes = match personality.read_executable(process.id(), &program) {
            Ok(bytes) => bytes,
            Err(error) => return errno_of(error),
        };
    }
    // A dynamically linked program's interpreter is read as the program
    // was: a missing one is `ENOENT`, as on Linux.
    let interpreter_path = match loader::interpreter_path(&bytes) {
        Ok(path) => path,
        Err(_) => return errno_of(vfs::Errno::ENOEXEC),
    };
    let interpreter = match &interpreter_path {
        Some(interpreter) => match personality.read_executable(process.id(), interpreter) {
            Ok(interpreter) => Some(interpreter),
            Err(error) => return errno_of(error),
        },
        None => None,
    };
    let image = match loader::load(
        crate::page_cache(),
        loader::FileBytes::of(&bytes),
        interpreter.as_ref().map(loader::FileBytes::of),
    ) {
        Ok(image) => image,
        Err(loader::LoadError::NoMemory) => return Errno::ENOMEM.as_negative(),
        Err(loader::LoadError::NotExecutable(_)) => return errno_of(vfs::Errno::ENOEXEC),
    };
    // The file bytes are not needed any more: give the heap back before
    // the new program's pages are taken.
    drop((bytes, interpreter));
    let entry = image.layout.entry;
    let arguments: alloc::vec::Vec<&[u8]> = arguments.iter().map(|a| a.as_slice()).collect();
    let environment: alloc::vec::Vec<&[u8]> = environment.iter().map(|v| v.as_slice()).collect();
    let files = crate::threads::ProgramFiles::find(
        Some(process.id()),
        &program,
        interpreter_path.as_deref(),
    );
    let (memory, rsp) =
        match crate::threads::program_memory(image, &arguments, &environment, &path, &files) {
            Ok(loaded) => loaded,
            Err(_) => return Errno::ENOMEM.as_negative(),
        };
    // The point of no return: the new space goes into CR3 before the old
    // one (still CR3 until now) is dropped.
    hal::context::set_address_space(Some(memory.space().clone()));
    let old = process.replace_memory(memory);
    drop(old);
    crate::hooks().program_replaced(process.id());
    personality.process_executed(process.id());
    crate::programs::program_executed(&process, &program, &arguments, &environment);
    let _ = hal::user::set_fs_base(0);
    crate::record_exec(strand, entry, rsp);
    0
}
