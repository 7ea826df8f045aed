//! Processes: `exit`, `fork`, `wait4`, `kill`, the identifiers, and the
//! thread's own state (`arch_prctl`, `set_tid_address`, `sched_yield`).

use alloc::format;
use linux_abi::{
    resource::Rusage,
    siginfo::{Siginfo, SiginfoFields},
    signal, Errno,
};

use linux::process_args::{self, clone_flag, CloneKind, WaitRequest, WaitTarget};

use ::process::{self, Children, KillError, Reporting, WaitError};

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

/// `clone(flags, stack, parent_tid, child_tid, tls)`: without
/// `CLONE_THREAD`, a new process ([`fork`], on `stack` if given, in the
/// caller's memory with `CLONE_VM`); with `CLONE_THREAD`, a new thread
/// of the caller's process, resuming from the same call with result 0
/// on `stack`. The combinations Linux refuses are `EINVAL`
/// (`process_args::clone_kind`).
pub(crate) fn clone(
    strand: u64,
    [flags, stack, parent_tid, child_tid, tls]: [u64; 5],
    saved: Option<(hal::user::UserRegisters, u64)>,
) -> i64 {
    match process_args::clone_kind(flags) {
        Ok(CloneKind::Fork { flags }) if flags & linux_abi::clone::CLONE_PIDFD != 0 => {
            return fork_with_descriptor(strand, flags, stack, parent_tid, saved)
        }
        Ok(CloneKind::Fork { flags }) => return fork(strand, flags, stack, saved),
        Ok(CloneKind::Thread) => {}
        Err(error) => return error.as_negative(),
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

/// What `vfork()` is: `clone(CLONE_VM | CLONE_VFORK | SIGCHLD)`.
pub(crate) const VFORK_FLAGS: u64 =
    linux_abi::clone::CLONE_VM | linux_abi::clone::CLONE_VFORK | signal::SIGCHLD as u64;

/// `getppid()`: the parent's process id (0 for a child of the kernel).
pub(crate) fn getppid(strand: u64) -> i64 {
    process::of_strand(strand).map_or(Errno::ESRCH.as_negative(), |process| {
        process.parent() as i64
    })
}

/// `fork()`, and `clone` without `CLONE_THREAD` (with an optional new
/// stack): a child process resuming from the same call with result 0,
/// with a copy-on-write copy of the caller's memory, or with `CLONE_VM`
/// in the caller's memory itself. With `CLONE_VFORK` the caller waits
/// until the child calls `execve` or ends (`vfork`). The parent gets the
/// child's id. `registers` and `fs_base` are the caller's, as the call
/// left them.
pub(crate) fn fork(
    strand: u64,
    flags: u64,
    child_stack: u64,
    saved: Option<(hal::user::UserRegisters, u64)>,
) -> i64 {
    let (Some(parent), Some((mut registers, fs_base))) = (process::of_strand(strand), saved) else {
        return Errno::ESRCH.as_negative();
    };
    let child = if flags & clone_flag::VM != 0 {
        match process::create_in_parent_memory(process::reserve_id(), &parent) {
            Some(child) => child,
            None => return Errno::ESRCH.as_negative(),
        }
    } else {
        let memory = match parent.with_memory(|memory| memory.fork()) {
            Some(Ok(memory)) => memory,
            Some(Err(_)) => return Errno::ENOMEM.as_negative(),
            None => return Errno::ESRCH.as_negative(),
        };
        process::create(process::reserve_id(), parent.id(), memory)
    };
    let id = child.id();
    crate::scheduling::process_forked(parent.id(), id);
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
        Ok(_thread) => {
            if flags & clone_flag::VFORK != 0 {
                process::wait_for_vfork_child(&child);
            }
            id as i64
        }
        Err(_) => {
            process::discard(&child);
            Errno::EAGAIN.as_negative()
        }
    }
}

/// `clone(CLONE_PIDFD, ...)` without `CLONE_THREAD`: [`fork`], and a
/// close-on-exec process descriptor for the child in the caller, its
/// number written to `descriptor_at` (an `int`). The descriptor is
/// checked first, so a bad address is `EFAULT` with no child made.
fn fork_with_descriptor(
    strand: u64,
    flags: u64,
    stack: u64,
    descriptor_at: u64,
    saved: Option<(hal::user::UserRegisters, u64)>,
) -> i64 {
    let (Some(parent), Some(personality)) = (process::of_strand(strand), crate::personality())
    else {
        return Errno::ESRCH.as_negative();
    };
    let Some(files) = personality.files(parent.id()) else {
        return Errno::ESRCH.as_negative();
    };
    if hal::user::copy_to_user(descriptor_at, &(-1i32).to_le_bytes()).is_err() {
        return Errno::EFAULT.as_negative();
    }
    let child = fork(strand, flags, stack, saved);
    if child <= 0 {
        return child;
    }
    let descriptor = match linux::pidfd::pidfd_open(personality, &files, child as u64, 0) {
        Ok(descriptor) => descriptor as i32,
        // Out of descriptors: the child runs, unnamed (`-1` written).
        Err(_) => return child,
    };
    // Written before (a valid address): only a concurrent unmap fails.
    let _ = hal::user::copy_to_user(descriptor_at, &descriptor.to_le_bytes());
    child
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
    let request = match process_args::wait4_request(pid, options) {
        Ok(request) => request,
        Err(error) => return error.as_negative(),
    };
    let Some((which, reporting)) = wait_of(&parent, request, Some(Children::Any)) else {
        return Errno::ECHILD.as_negative();
    };
    match process::wait(&parent, which, reporting, request.block) {
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

/// The process service's terms for a checked wait. The caller's own
/// group, when it has none, is `without_group` (`wait4` waits for any
/// child; `waitid` refuses: `None`).
fn wait_of(
    parent: &process::Process,
    request: WaitRequest,
    without_group: Option<Children>,
) -> Option<(Children, Reporting)> {
    let which = match request.target {
        WaitTarget::Any => Children::Any,
        WaitTarget::Process(pid) => Children::Process(pid),
        WaitTarget::Group(group) => Children::Group(group),
        // Resolved to its process by the caller (`waitid`).
        WaitTarget::Descriptor(_) => return None,
        WaitTarget::CallersGroup => crate::personality()
            .and_then(|personality| personality.process_group(parent.id()))
            .map(Children::Group)
            .or(without_group)?,
    };
    let reporting = Reporting {
        ended: request.ended,
        stopped: request.stopped,
        continued: request.continued,
        keep: request.keep,
    };
    Some((which, reporting))
}

/// `waitid(idtype, id, infop, options, rusage)`: as `wait4`, with the
/// child named by `idtype` (`P_ALL`, `P_PID`, `P_PGID`), the changes
/// asked for spelled out (`WEXITED`, `WSTOPPED`, `WCONTINUED`; at least
/// one), or by a process descriptor (`P_PIDFD`: a non-blocking one
/// waits as with `WNOHANG`, and finding no change is `EAGAIN` unless
/// `WNOHANG` was asked), `WNOWAIT` to leave the change waitable, and the answer written
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
    let Some(parent) = process::of_strand(strand) else {
        return Errno::ESRCH.as_negative();
    };
    let mut request = match process_args::waitid_request(idtype, id, options) {
        Ok(request) => request,
        Err(error) => return error.as_negative(),
    };
    let mut is_nonblocking_descriptor = false;
    if let WaitTarget::Descriptor(fd) = request.target {
        let Some(personality) = crate::personality() else {
            return Errno::EBADF.as_negative();
        };
        let described = match personality.process_descriptor(parent.id(), fd) {
            Ok(described) => described,
            Err(error) => return error.as_negative(),
        };
        request.target = WaitTarget::Process(described.pid);
        // Linux's `kernel_waitid`: the descriptor's `O_NONBLOCK` is a
        // `WNOHANG` that reports "nothing yet" as `EAGAIN`.
        is_nonblocking_descriptor = described.is_nonblocking && request.block;
        request.block &= !described.is_nonblocking;
    }
    // `P_PGID` 0 of a caller with no group: Linux's EINVAL.
    let Some((which, reporting)) = wait_of(&parent, request, None) else {
        return Errno::EINVAL.as_negative();
    };
    // With WNOHANG and no change: a siginfo_t of zeros (si_pid 0).
    let mut info = Siginfo::default();
    let mut used = Rusage::default();
    match process::wait(&parent, which, reporting, request.block) {
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
        Ok(None) if is_nonblocking_descriptor => return Errno::EAGAIN.as_negative(),
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
        KillError::NotPermitted => Errno::EPERM.as_negative(),
    }
}

/// `kill(pid, signal)`: to a process, the caller's group (0), everyone
/// (-1) or a group (`-pgid`).
pub(crate) fn kill(strand: u64, pid: u64, signal: u64) -> i64 {
    let (Some(sender), Ok(signal)) = (
        process::of_strand(strand),
        process_args::signal_argument(signal),
    ) else {
        return Errno::EINVAL.as_negative();
    };
    match crate::signals::kill(sender.id(), pid as i32, signal) {
        Ok(()) => 0,
        Err(error) => kill_errno(error),
    }
}

/// `pidfd_send_signal(pidfd, signal, info, flags)`: `kill` of the
/// process descriptor `pidfd` names, in Linux's order of checks:
/// `EINVAL` for any flag, `EBADF` for a `pidfd` that is not a process
/// descriptor, `EFAULT` for an unreadable `info`, `EINVAL` if `info`'s
/// signal is not `signal`, `EPERM` for an `info` that claims to come
/// from the kernel or `tgkill` (a code of 0 or above, or `SI_TKILL`)
/// sent to another process; then as `kill`. The signal arrives as
/// `kill` sends it (`SI_USER`, from the caller): `info`'s code and value
/// are not carried (nor does Spindle have `rt_sigqueueinfo`).
pub(crate) fn pidfd_send_signal(
    strand: u64,
    pidfd: u64,
    signal: u64,
    info: u64,
    flags: u64,
) -> i64 {
    let (Some(sender), Some(personality)) = (process::of_strand(strand), crate::personality())
    else {
        return Errno::ESRCH.as_negative();
    };
    if flags as u32 != 0 {
        return Errno::EINVAL.as_negative();
    }
    let target = match personality.process_descriptor(sender.id(), pidfd) {
        Ok(described) => described.pid,
        Err(error) => return error.as_negative(),
    };
    if info != 0 {
        // `si_signo`, `si_errno`, `si_code`: the head of a `siginfo_t`.
        let mut head = [0u8; 12];
        if hal::user::copy_from_user(&mut head, info).is_err() {
            return Errno::EFAULT.as_negative();
        }
        let word =
            |at: usize| i32::from_le_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
        let (claimed_signal, code) = (word(0), word(8));
        if i64::from(claimed_signal) != signal as i64 {
            return Errno::EINVAL.as_negative();
        }
        if target != sender.id() && (code >= 0 || code == signal::SI_TKILL) {
            return Errno::EPERM.as_negative();
        }
    }
    let Ok(signal) = process_args::signal_argument(signal) else {
        return Errno::EINVAL.as_negative();
    };
    match crate::signals::kill(sender.id(), target as i32, signal) {
        Ok(()) => 0,
        Err(error) => kill_errno(error),
    }
}

/// `tgkill(tgid, tid, signal)`, or `tkill(tid, signal)` with `tgid`
/// `None`.
pub(crate) fn tgkill(strand: u64, tgid: Option<u64>, tid: u64, signal: u64) -> i64 {
    let (Some(sender), Ok(signal), Ok((tgid, tid))) = (
        process::of_strand(strand),
        process_args::signal_argument(signal),
        process_args::thread_target(tgid, tid),
    ) else {
        return Errno::EINVAL.as_negative();
    };
    match crate::signals::kill_thread(sender.id(), tgid, tid, signal) {
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
    // What the set-id bits say, of the program run directly: Linux
    // honours them on no script.
    let (mut bytes, mut set_id_file) = match personality.read_executable(process.id(), &program) {
        Ok((bytes, file)) => (bytes, Some(file)),
        Err(error) => return errno_of(error),
    };
    // A script (`#!interpreter [argument]`) runs its interpreter with the
    // script's path as an argument; an interpreter may be a script too,
    // as far as Linux allows.
    for depth in 0.. {
        let Some((interpreter, argument)) = process_args::script_interpreter(&bytes) else {
            break;
        };
        if depth == process_args::MAX_SCRIPT_DEPTH {
            return Errno::ELOOP.as_negative();
        }
        let mut replaced = alloc::vec![interpreter.clone()];
        replaced.extend(argument);
        replaced.push(program);
        replaced.extend(arguments.into_iter().skip(1));
        arguments = replaced;
        program = interpreter;
        set_id_file = None;
        bytes = match personality.read_executable(process.id(), &program) {
            Ok((bytes, _)) => bytes,
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
            Ok((interpreter, _)) => Some(interpreter),
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
    crate::itimer::program_replaced(process.id());
    personality.process_executed(process.id(), set_id_file);
    crate::programs::program_executed(&process, &program, &arguments, &environment);
    let _ = hal::user::set_fs_base(0);
    crate::record_exec(strand, entry, rsp);
    // A tracee stops at its new program's first instruction: `SIGTRAP`
    // (ptrace(2), without `PTRACE_O_TRACEEXEC`).
    if process::is_traced(&process) {
        let info = linux::signal::SignalInfo {
            signal: signal::SIGTRAP,
            source: linux::signal::Source::User {
                pid: process.id() as u32,
                thread: false,
            },
        };
        let _ = crate::signals::send(process.id(), info);
    }
    0
}
