//! Signals in the running kernel: sending them (`kill`, faults, a child's
//! end, a broken pipe, the terminal) and delivering them on a thread's
//! way back to user mode, after a system call, an interrupt or a fault.
//!
//! The Linux personality keeps each process's dispositions, mask and
//! pending signals (`linux::signal`) and lays out the handler's frame
//! (`linux::signal_frame`); this module is where the kernel acts on them:
//! it ends the process, or rewrites the return to user mode so that it
//! enters the handler, and `rt_sigreturn` rewrites it back. A process of
//! no personality (the kernel's own test programs) keeps the core's rule:
//! every signal ends it.

use alloc::sync::Arc;

use hal::{
    trap::TrapFrame,
    user::{EnterError, SyscallFrame, UserRegisters},
};
use linux::{
    signal::{Disposition, SignalInfo, Source},
    signal_frame::{self, FaultDetails},
    LinuxProcess,
};
use linux_abi::{signal::*, syscall, Errno};
use sched::Fault;

use ::process::{self, End, KillError};

/// A user state a signal can be delivered into: the saved state of a
/// system call or of a trap from user mode.
pub trait UserFrame {
    /// The user program's registers.
    fn registers(&self) -> UserRegisters;
    /// Makes the return to user mode resume with `registers`.
    fn set_registers(&mut self, registers: &UserRegisters) -> Result<(), EnterError>;
}

impl UserFrame for SyscallFrame {
    fn registers(&self) -> UserRegisters {
        SyscallFrame::registers(self)
    }
    fn set_registers(&mut self, registers: &UserRegisters) -> Result<(), EnterError> {
        self.set_user_registers(registers)
    }
}

impl UserFrame for TrapFrame {
    fn registers(&self) -> UserRegisters {
        self.user_registers()
    }
    fn set_registers(&mut self, registers: &UserRegisters) -> Result<(), EnterError> {
        self.set_user_registers(registers)
    }
}

/// The calling thread's id (its process's id for the first thread; 0
/// for a kernel thread): how the personality names the thread whose mask
/// and own signals to use.
pub fn current_thread() -> u64 {
    process::tid_of(sched::current().0).unwrap_or(0)
}

/// The calling thread as delivery needs it: its process, that process's
/// Linux state, and its thread id; found with one look at the thread
/// table (not one for the process and one for the thread).
struct Current {
    pid: u64,
    files: Arc<LinuxProcess>,
    thread: u64,
}

impl Current {
    /// The calling thread, if it runs a program of the personality.
    fn get() -> Option<Current> {
        let (pid, thread) = process::ids_of_strand(sched::current().0)?;
        let files = crate::personality()?.files(pid)?;
        Some(Current { pid, files, thread })
    }
}

/// The calling thread's process's Linux state (whose signals a signal
/// descriptor reads: `linux::set_current_process`).
pub fn current_process() -> Option<Arc<LinuxProcess>> {
    Current::get().map(|current| current.files)
}

/// Sends `info` to process `pid`. Signal 0 only checks that it exists.
/// `SIGKILL` (and any signal to a process of no personality) ends it;
/// others are posted to it, and its threads woken so that one blocked in
/// the kernel returns to take it.
pub fn send(pid: u64, info: SignalInfo) -> Result<(), KillError> {
    if info.signal > MAX_SIGNAL {
        return Err(KillError::BadSignal);
    }
    let target = process::get(pid).ok_or(KillError::NoProcess)?;
    if info.signal == 0 || target.end().is_some() {
        return Ok(());
    }
    let files = crate::personality().and_then(|personality| personality.files(pid));
    let Some(files) = files else {
        return process::kill(pid, info.signal);
    };
    if info.signal == SIGKILL {
        return process::kill(pid, SIGKILL);
    }
    if info.signal == SIGCONT {
        process::continue_stopped(&target);
    }
    let posted = files.signals.lock().post(info);
    if posted {
        process::interrupt(&target);
    }
    Ok(())
}

/// `kill(pid, signal)` as Linux reads `pid`: a process (> 0), the
/// caller's process group (0), every process but the caller's and the
/// first (-1), or process group `-pid`. `ESRCH` if nobody was reached.
pub fn kill(sender: u64, pid: i32, signal: u8) -> Result<(), KillError> {
    let info = SignalInfo {
        signal,
        source: Source::User {
            pid: sender as u32,
            thread: false,
        },
    };
    let personality = crate::personality().ok_or(KillError::NoProcess)?;
    if pid > 0 {
        if process::get(pid as u64).is_none() {
            return Err(KillError::NoProcess);
        }
        if !may_signal(personality, sender, pid as u64, signal) {
            return Err(KillError::NotPermitted);
        }
        return send(pid as u64, info);
    }
    let targets = match pid {
        0 => {
            let group = personality
                .process_group(sender)
                .ok_or(KillError::NoProcess)?;
            personality.group_members(group)
        }
        -1 => personality
            .pids()
            .into_iter()
            .filter(|&target| target != sender && target != 1)
            .collect(),
        _ => personality.group_members(u64::from(pid.unsigned_abs())),
    };
    if signal > MAX_SIGNAL {
        return Err(KillError::BadSignal);
    }
    let mut reached = false;
    let mut refused = false;
    for target in targets {
        if may_signal(personality, sender, target, signal) {
            reached |= send(target, info).is_ok();
        } else {
            refused = true;
        }
    }
    if reached {
        Ok(())
    } else if refused {
        Err(KillError::NotPermitted)
    } else {
        Err(KillError::NoProcess)
    }
}

/// Whether process `sender` may send `signal` to process `target`: by
/// the users' rule ([`linux::identity::may_signal`]), or `SIGCONT` within
/// a session, as on Linux. A process the personality does not know (a
/// kernel test program) is not checked.
fn may_signal(personality: &linux::Personality, sender: u64, target: u64, signal: u8) -> bool {
    let (Some(from), Some(to)) = (personality.files(sender), personality.files(target)) else {
        return true;
    };
    linux::identity::may_signal(&from.credentials(), &to.credentials())
        || (signal == SIGCONT && from.session() == to.session())
}

/// Whether the calling thread must stop waiting in the kernel: its
/// process is being ended, or a signal it must take is pending.
pub fn interrupted() -> bool {
    if process::pending_kill().is_some() {
        return true;
    }
    if !linux::signals_may_be_pending() {
        return false;
    }
    Current::get()
        .is_some_and(|current| current.files.signals.lock().has_deliverable(current.thread))
}

/// Process `pid` is ending (its last thread is): each of its children
/// that asked for one (`PR_SET_PDEATHSIG`) gets its parent-death signal,
/// sent by the parent. Linux sends it when the thread that made the child
/// ends; here a process's children belong to the whole process, so it is
/// sent when the last thread ends.
pub fn parent_ended(pid: u64) {
    let Some(personality) = crate::personality() else {
        return;
    };
    for child in process::children_of(pid) {
        if let Some(signal) = personality.parent_death_signal(child) {
            let info = SignalInfo {
                signal,
                source: Source::User {
                    pid: pid as u32,
                    thread: false,
                },
            };
            let _ = send(child, info);
        }
    }
}

/// `SIGCHLD` to `parent`: its child `child` ended with `end`.
pub fn child_ended(parent: u64, child: u64, end: End) {
    let (code, status) = match end {
        End::Exited(status) => (CLD_EXITED, (status & 0xff) as i32),
        End::Killed { signal, .. } => (CLD_KILLED, i32::from(signal)),
    };
    let info = SignalInfo {
        signal: SIGCHLD,
        source: Source::Child {
            code,
            pid: child as u32,
            status,
        },
    };
    let _ = send(parent, info);
}

/// `SIGCHLD` to `parent`: its child `child` stopped (`code`
/// `CLD_STOPPED`) or was continued (`CLD_CONTINUED`) by `signal`; not sent
/// if the parent asked so (`SA_NOCLDSTOP`).
pub fn child_stopped(parent: u64, child: u64, code: i32, signal: u8) {
    let quiet = crate::personality()
        .and_then(|personality| personality.files(parent))
        .is_some_and(|files| files.signals.lock().has_flag(SIGCHLD, SA_NOCLDSTOP));
    if quiet {
        return;
    }
    let info = SignalInfo {
        signal: SIGCHLD,
        source: Source::Child {
            code,
            pid: child as u32,
            status: i32::from(signal),
        },
    };
    let _ = send(parent, info);
}

/// `tgkill(tgid, tid, signal)` and `tkill(tid, signal)` (`tgid` `None`):
/// the signal goes to that thread alone, which takes it when its mask
/// lets it. `ESRCH` if no such thread runs (in that process).
pub fn kill_thread(sender: u64, tgid: Option<u64>, tid: u64, signal: u8) -> Result<(), KillError> {
    let pid = process::process_of_thread(tid).ok_or(KillError::NoProcess)?;
    if tgid.is_some_and(|tgid| tgid != pid) {
        return Err(KillError::NoProcess);
    }
    let info = SignalInfo {
        signal,
        source: Source::User {
            pid: sender as u32,
            thread: true,
        },
    };
    if signal > MAX_SIGNAL {
        return Err(KillError::BadSignal);
    }
    let target = process::get(pid).ok_or(KillError::NoProcess)?;
    if let Some(personality) = crate::personality() {
        if !may_signal(personality, sender, pid, signal) {
            return Err(KillError::NotPermitted);
        }
    }
    deliver_to_thread(&target, tid, info)
}

/// Sends `info` to thread `tid` of process `pid` (a timer's
/// `SIGEV_THREAD_ID`): `NoProcess` if it is not one of its threads.
pub fn send_to_thread(pid: u64, tid: u64, info: SignalInfo) -> Result<(), KillError> {
    if process::process_of_thread(tid) != Some(pid) {
        return Err(KillError::NoProcess);
    }
    let target = process::get(pid).ok_or(KillError::NoProcess)?;
    deliver_to_thread(&target, tid, info)
}

/// Posts `info` to thread `tid` of `target`, waking it to take it;
/// `SIGKILL` ends the whole process.
fn deliver_to_thread(
    target: &process::Process,
    tid: u64,
    info: SignalInfo,
) -> Result<(), KillError> {
    let pid = target.id();
    let files = crate::personality().and_then(|personality| personality.files(pid));
    let Some(files) = files else {
        return send(pid, info);
    };
    if info.signal == 0 || target.end().is_some() {
        return Ok(());
    }
    if info.signal == SIGKILL {
        return process::kill(pid, SIGKILL);
    }
    if info.signal == SIGCONT {
        process::continue_stopped(target);
    }
    if files.signals.lock().post_to_thread(tid, info) {
        process::interrupt(target);
    }
    Ok(())
}

/// System calls an interrupting signal restarts when its handler asks
/// (`SA_RESTART`) or no handler ran; the others fail with `EINTR`
/// (signal(7): `nanosleep`, `poll`, `select`, `sigsuspend`, ... are never
/// restarted). `fcntl` and `flock` are interrupted only while waiting for
/// a lock (`F_SETLKW`, `flock` without `LOCK_NB`), which signal(7) lists
/// as restartable.
fn is_restartable(number: u64) -> bool {
    use syscall::*;
    matches!(
        number,
        READ | WRITE
            | READV
            | WRITEV
            | PREAD64
            | PWRITE64
            | IOCTL
            | OPEN
            | OPENAT
            | WAIT4
            | WAITID
            | FCNTL
            | FLOCK
    )
}

/// The length of the `syscall` instruction: a restarted call resumes
/// this far back.
const SYSCALL_INSTRUCTION_BYTES: u64 = 2;

/// After system call `number` returned `result` (already in `frame`):
/// `SIGPIPE` for a write to a broken pipe, then any signal to deliver.
/// Returns the signal the process must be killed by, if one must end it
/// (the caller ends it, holding nothing).
pub fn after_syscall(frame: &mut SyscallFrame, number: u64, result: i64) -> Option<u8> {
    if result == Errno::EPIPE.as_negative()
        && matches!(number, syscall::WRITE | syscall::WRITEV | syscall::PWRITE64)
    {
        // To the writing thread, as Linux sends it.
        if let Some(current) = Current::get() {
            let info = SignalInfo {
                signal: SIGPIPE,
                source: Source::Kernel,
            };
            current
                .files
                .signals
                .lock()
                .post_to_thread(current.thread, info);
        }
    }
    if !linux::signals_may_be_pending() {
        return None;
    }
    deliver(frame, Some((number, result)), None)
}

/// After an interrupt taken in user mode: any signal to deliver.
pub fn after_interrupt(frame: &mut TrapFrame) -> Option<u8> {
    // Where a thread that runs in user mode meets the kernel, every tick
    // (processor time grows only while threads run): its process's
    // processor-time timers are checked here, before the look for
    // signals, so that one they send is delivered now.
    crate::itimer::account_current();
    if !linux::signals_may_be_pending() {
        return None;
    }
    deliver(frame, None, None)
}

/// A fault in user mode: if the program handles the signal it raises (a
/// handler installed, the signal not blocked), the handler is entered
/// and `true` returned; otherwise the caller ends the program, as Linux
/// does for a fault signal it cannot deliver.
pub fn deliver_fault(frame: &mut TrapFrame, fault: &Fault) -> bool {
    const PAGE_FAULT: u64 = 14;
    let Some(current) = Current::get() else {
        return false;
    };
    let (pid, thread) = (current.pid, current.thread);
    let signal = process::signal_for_fault(fault.vector);
    // Linux's distinction: an address in a mapping the access is not
    // allowed to (ACCERR), or in none (MAPERR).
    let mapped = || {
        process::get(pid)
            .and_then(|process| {
                process.with_memory(|memory| memory.region_at(fault.fault_address).is_some())
            })
            .unwrap_or(false)
    };
    let (code, address) = match fault.vector {
        PAGE_FAULT if mapped() => (SEGV_ACCERR, fault.fault_address),
        PAGE_FAULT => (SEGV_MAPERR, fault.fault_address),
        0 => (1, fault.rip), // FPE_INTDIV
        6 => (2, fault.rip), // ILL_ILLOPN
        _ => (SI_KERNEL, 0),
    };
    {
        let mut state = current.files.signals.lock();
        let handled = matches!(state.disposition(signal), Disposition::Handler(_));
        if !handled || state.mask(thread) & bit(signal) != 0 {
            return false;
        }
        state.post_to_thread(
            thread,
            SignalInfo {
                signal,
                source: Source::Fault { code, address },
            },
        );
    }
    let details = FaultDetails {
        vector: fault.vector,
        error_code: fault.error_code,
        address: fault.fault_address,
    };
    // Delivered with what was just found (the thread table is not asked
    // again).
    deliver_to(frame, current, None, Some(details)).is_none()
}

/// Takes the calling process's deliverable signals: ignored ones are
/// dropped, a stop stops the process until it is continued, and the
/// first with a handler rewrites `frame` to enter it. Returns the signal
/// that must end the process, if one must (a default action, or a frame
/// that cannot be pushed: `SIGSEGV`).
fn deliver(
    frame: &mut dyn UserFrame,
    syscall: Option<(u64, i64)>,
    fault: Option<FaultDetails>,
) -> Option<u8> {
    deliver_to(frame, Current::get()?, syscall, fault)
}

/// [`deliver`] for the calling thread `current`, already found.
fn deliver_to(
    frame: &mut dyn UserFrame,
    current: Current,
    syscall: Option<(u64, i64)>,
    fault: Option<FaultDetails>,
) -> Option<u8> {
    let Current { pid, files, thread } = current;
    let interrupted_call = syscall
        .filter(|&(number, result)| result == Errno::EINTR.as_negative() && is_restartable(number));
    let mut resumed_from_stop = false;
    loop {
        // Whether it is traced is read under the lock the take holds:
        // an untraced thread (nearly all) takes its signal with one lock.
        let taken = {
            let mut state = files.signals.lock();
            state.take(thread).map(|taken| (taken, state.is_traced()))
        };
        let Some(((info, disposition), is_traced)) = taken else {
            break;
        };
        // A tracee shows its tracer each signal before it takes it.
        let (info, disposition) =
            match crate::ptrace::before_taking(pid, &files, thread, info, disposition, is_traced) {
                crate::ptrace::TracedSignal::Take(info, disposition) => (info, disposition),
                crate::ptrace::TracedSignal::Skip => continue,
                crate::ptrace::TracedSignal::Killed => return process::pending_kill(),
            };
        match disposition {
            Disposition::Ignore => {}
            Disposition::Terminate => return Some(info.signal),
            Disposition::Stop => {
                if !process::stop_current(pid, info.signal) {
                    // Killed while stopped.
                    return process::pending_kill();
                }
                resumed_from_stop = true;
            }
            Disposition::Handler(handler) => {
                let mut registers = frame.registers();
                if let Some((number, _)) = interrupted_call {
                    if handler.flags & SA_RESTART != 0 {
                        registers.rax = number;
                        registers.rip = registers.rip.wrapping_sub(SYSCALL_INSTRUCTION_BYTES);
                    }
                }
                let (restore_mask, alternate) = {
                    let mut state = files.signals.lock();
                    (
                        state.take_mask_to_restore(thread),
                        state.alternate_stack(thread),
                    )
                };
                let fpu = hal::user::save_fpu();
                let entry = signal_frame::enter_handler(
                    &registers,
                    &fpu,
                    &info,
                    fault,
                    &handler,
                    restore_mask,
                    alternate,
                );
                let Ok(entry) = entry else {
                    return Some(SIGSEGV);
                };
                if frame.set_registers(&entry).is_err() {
                    return Some(SIGSEGV);
                }
                let mut state = files.signals.lock();
                let mut mask = state.mask(thread) | handler.mask;
                if handler.flags & SA_NODEFER == 0 {
                    mask |= bit(info.signal);
                }
                state.set_mask(thread, mask);
                return None;
            }
        }
    }
    files.signals.lock().end_suspend(thread);
    if let (Some((number, _)), true) = (interrupted_call, resumed_from_stop) {
        let mut registers = frame.registers();
        registers.rax = number;
        registers.rip = registers.rip.wrapping_sub(SYSCALL_INSTRUCTION_BYTES);
        if frame.set_registers(&registers).is_err() {
            return Some(SIGSEGV);
        }
    }
    None
}

/// `rt_sigreturn()`: the handler returned; the frame it ran on gives back
/// the interrupted registers, FPU state and mask. Then any signal now
/// unblocked is delivered. `None` for a process of no personality (the
/// call is then an unknown one); `Some(Some(signal))` if the process
/// must be ended: a frame that cannot be read or restored ends it with
/// `SIGSEGV`, as on Linux.
pub fn sigreturn(frame: &mut SyscallFrame) -> Option<Option<u8>> {
    let current = Current::get()?;
    let Ok(interrupted) = signal_frame::return_from_handler(frame.rsp()) else {
        return Some(Some(SIGSEGV));
    };
    if let Some(fpu) = &interrupted.fpu {
        if hal::user::restore_fpu(fpu).is_err() {
            return Some(Some(SIGSEGV));
        }
    }
    if frame.set_user_registers(&interrupted.registers).is_err() {
        return Some(Some(SIGSEGV));
    }
    current
        .files
        .signals
        .lock()
        .set_mask(current.thread, interrupted.mask);
    if !linux::signals_may_be_pending() {
        return Some(None);
    }
    Some(deliver_to(frame, current, None, None))
}
