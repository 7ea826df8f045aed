//! Signals: dispositions, the mask, pending signals, and the calls on
//! them (`rt_sigaction`, `rt_sigprocmask`, `sigaltstack`,
//! `rt_sigpending`, `rt_sigsuspend`, `rt_sigtimedwait`, `pause`).
//!
//! The state is Linux's: a handler set is read back, `SIGKILL` and
//! `SIGSTOP` can be neither caught nor blocked, `SIG_IGN` and `SIG_DFL`
//! are remembered, `execve` resets caught signals to their default. A
//! signal sent is *posted* here ([`SignalState::post`]); the kernel takes
//! it ([`SignalState::take`]) on the thread's way back to user mode and
//! acts on its [`Disposition`]: ends or stops the process, or enters the
//! handler through the frame `signal_frame` builds.
//!
//! As on Linux, the mask, the alternate stack and the signals sent to
//! one thread (`tgkill`, a fault) are each thread's own; dispositions and
//! the signals sent to the process are shared, and a process's signal is
//! taken by whichever of its threads, not blocking it, returns to user
//! mode first. Threads are named by their thread ids; the kernel says
//! which thread is calling ([`set_current_thread`]).

use core::sync::atomic::{AtomicUsize, Ordering};

use alloc::{collections::BTreeMap, vec::Vec};
use linux_abi::{
    sigaction::{SigAction, SignalStack},
    siginfo::{Siginfo, SiginfoFields},
    signal::*,
};
use vfs::Errno;

use crate::{
    machine::{Blocking, Clock, Machine},
    user, LinuxProcess,
};

/// Signals that can be neither caught, ignored nor blocked.
const UNBLOCKABLE: u64 = bit(SIGKILL) | bit(SIGSTOP);

/// What a signal does when it is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// Nothing (ignored, or a default that ignores).
    Ignore,
    /// Ends the process, killed by the signal.
    Terminate,
    /// Stops the process until `SIGCONT` (`SIGSTOP`, `SIGTSTP`, ...).
    Stop,
    /// Runs the program's handler.
    Handler(Handler),
}

/// A handler as `rt_sigaction` installed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handler {
    /// Its address.
    pub address: u64,
    /// `sa_flags`.
    pub flags: u64,
    /// `sa_restorer`: where the handler returns (it calls `rt_sigreturn`).
    pub restorer: u64,
    /// Signals blocked while it runs (besides the signal itself).
    pub mask: u64,
}

/// The default action of `signal` (signal(7)).
fn default_disposition(signal: u8) -> Disposition {
    match signal {
        SIGCHLD | SIGCONT | SIGURG | SIGWINCH => Disposition::Ignore,
        SIGSTOP | SIGTSTP | SIGTTIN | SIGTTOU => Disposition::Stop,
        _ => Disposition::Terminate,
    }
}

/// Where a signal came from, as its `siginfo` tells the handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `kill` (`SI_USER`) or `tgkill`/`tkill` (`SI_TKILL`) from `pid`.
    User {
        /// The sender.
        pid: u32,
        /// Sent to one thread (`tgkill`, `tkill`, `raise`).
        thread: bool,
    },
    /// The kernel (a timer, a write to a broken pipe, the terminal).
    Kernel,
    /// A fault of the program at `address` with `code` (`SEGV_MAPERR`,
    /// ...).
    Fault {
        /// `si_code`.
        code: i32,
        /// `si_addr`.
        address: u64,
    },
    /// A child changed state (`SIGCHLD`).
    Child {
        /// `CLD_EXITED`, `CLD_KILLED`, ...
        code: i32,
        /// The child.
        pid: u32,
        /// Its exit status or signal.
        status: i32,
    },
    /// A `timer_create` timer expired (`SI_TIMER`).
    Timer {
        /// The timer's id.
        id: u32,
        /// The periods it let go by past the first.
        overrun: u64,
        /// Its `sigev_value`.
        value: u64,
    },
}

/// A posted signal and its origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignalInfo {
    /// The signal.
    pub signal: u8,
    /// Its origin.
    pub source: Source,
}

impl SignalInfo {
    /// The `siginfo_t` a handler with `SA_SIGINFO` reads.
    pub fn to_siginfo(&self) -> Siginfo {
        let (code, fields) = match self.source {
            Source::User { pid, thread } => (
                if thread { SI_TKILL } else { SI_USER },
                SiginfoFields::Sender {
                    pid: pid as i32,
                    uid: 0,
                },
            ),
            Source::Kernel => (SI_KERNEL, SiginfoFields::None),
            Source::Fault { code, address } => (code, SiginfoFields::Fault { address }),
            Source::Child { code, pid, status } => (
                code,
                SiginfoFields::Child {
                    pid: pid as i32,
                    uid: 0,
                    status,
                },
            ),
            Source::Timer { id, overrun, value } => (
                SI_TIMER,
                SiginfoFields::Timer {
                    id: id as i32,
                    // Linux caps it at `DELAYTIMER_MAX` (`INT_MAX`).
                    overrun: i32::try_from(overrun).unwrap_or(i32::MAX),
                    value,
                },
            ),
        };
        Siginfo {
            signo: i32::from(self.signal),
            code,
            fields,
        }
    }
}

/// Processes with a signal pending: while none has, the kernel's return
/// to user mode does not look (one load).
static PROCESSES_WITH_PENDING: AtomicUsize = AtomicUsize::new(0);

/// Whether any process may have a signal pending (cheap: for the return
/// to user mode of every system call and interrupt).
pub fn signals_may_be_pending() -> bool {
    PROCESSES_WITH_PENDING.load(Ordering::Relaxed) != 0
}

/// The kernel's answer to "which thread is calling?": its thread id.
static CURRENT_THREAD: spin::Once<fn() -> u64> = spin::Once::new();

/// Tells the personality how to learn the calling thread's id (set by
/// the kernel once).
pub fn set_current_thread(current: fn() -> u64) {
    CURRENT_THREAD.call_once(|| current);
}

/// The calling thread's id (0 before the kernel said how to learn it).
pub fn current_thread() -> u64 {
    CURRENT_THREAD.get().map_or(0, |current| current())
}

/// One thread's own signal state.
#[derive(Clone)]
struct ThreadSignals {
    mask: u64,
    /// The mask `rt_sigsuspend` replaced, put back when the signal that
    /// ends the wait has been taken.
    suspended_mask: Option<u64>,
    alternate_stack: SignalStack,
    /// Signals sent to this thread and not yet taken.
    pending: u64,
    /// Where each came from.
    origins: Vec<SignalInfo>,
}

impl ThreadSignals {
    fn with_mask(mask: u64, alternate_stack: SignalStack) -> Self {
        ThreadSignals {
            mask,
            suspended_mask: None,
            alternate_stack,
            pending: 0,
            origins: Vec::new(),
        }
    }
}

/// A process's signal dispositions, pending signals, and each thread's
/// mask, alternate stack and own pending signals.
pub struct SignalState {
    actions: [SigAction; MAX_SIGNAL as usize],
    /// Signals sent to the process and not yet taken.
    pending: u64,
    /// Where each pending signal came from (standard signals do not
    /// queue: one record per signal).
    origins: Vec<SignalInfo>,
    /// The threads that have a state of their own, by thread id.
    threads: BTreeMap<u64, ThreadSignals>,
    /// What a thread not met yet starts with (a forked child's first
    /// thread: the mask and stack of the parent's thread that forked).
    initial: ThreadSignals,
    /// Whether this process counts in [`PROCESSES_WITH_PENDING`].
    counted: bool,
    /// Traced (`ptrace`): signals it ignores are kept for its tracer to
    /// see rather than dropped when sent (Linux's `sig_ignored`). Not
    /// inherited by `fork`.
    is_traced: bool,
}

impl Default for SignalState {
    fn default() -> Self {
        SignalState {
            actions: [SigAction::default(); MAX_SIGNAL as usize],
            pending: 0,
            origins: Vec::new(),
            threads: BTreeMap::new(),
            initial: ThreadSignals::with_mask(0, SignalStack::DISABLED),
            counted: false,
            is_traced: false,
        }
    }
}

impl Drop for SignalState {
    fn drop(&mut self) {
        if self.counted {
            PROCESSES_WITH_PENDING.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl SignalState {
    /// A forked child's state, forked by `thread`: the dispositions, and
    /// that thread's mask and alternate stack for the child's thread;
    /// nothing pending (fork(2)).
    pub fn for_child(&self, thread: u64) -> SignalState {
        let parent = self.thread(thread);
        let mut child = SignalState::default();
        child.actions = self.actions;
        child.initial = ThreadSignals::with_mask(parent.mask, parent.alternate_stack);
        child
    }

    /// `creator` made thread `thread` (`clone` with `CLONE_THREAD`): it
    /// starts with the creator's mask, no alternate stack (Linux clears
    /// it for a thread that shares its creator's memory) and nothing of
    /// its own pending.
    pub fn thread_started(&mut self, creator: u64, thread: u64) {
        let mask = self.thread(creator).mask;
        self.threads.insert(
            thread,
            ThreadSignals::with_mask(mask, SignalStack::DISABLED),
        );
    }

    /// The process is traced from now on (or no longer): see
    /// `is_traced`.
    pub fn set_traced(&mut self, traced: bool) {
        self.is_traced = traced;
    }

    /// Whether the process is traced.
    pub fn is_traced(&self) -> bool {
        self.is_traced
    }

    /// Thread `thread` ended: what was sent to it alone goes with it.
    pub fn thread_ended(&mut self, thread: u64) {
        self.threads.remove(&thread);
        self.recount();
    }

    fn thread(&self, thread: u64) -> &ThreadSignals {
        self.threads.get(&thread).unwrap_or(&self.initial)
    }

    fn thread_mut(&mut self, thread: u64) -> &mut ThreadSignals {
        let initial = &self.initial;
        self.threads
            .entry(thread)
            .or_insert_with(|| initial.clone())
    }

    /// After `execve`: caught signals go back to their default (ignored
    /// ones stay ignored), the mask and pending signals are kept, the
    /// alternate stack is gone.
    pub fn reset_for_exec(&mut self) {
        for action in &mut self.actions {
            if action.handler != SIG_DFL && action.handler != SIG_IGN {
                *action = SigAction::default();
            }
        }
        self.initial.alternate_stack = SignalStack::DISABLED;
        for thread in self.threads.values_mut() {
            thread.alternate_stack = SignalStack::DISABLED;
        }
    }

    fn action(&self, signal: u8) -> &SigAction {
        &self.actions[usize::from(signal - 1)]
    }

    /// Whether `signal`'s disposition is "ignore".
    pub fn is_ignored(&self, signal: u64) -> bool {
        match u8::try_from(signal) {
            Ok(signal @ 1..=64) => self.disposition(signal) == Disposition::Ignore,
            _ => false,
        }
    }

    /// What `signal` (1..=64) does now.
    pub fn disposition(&self, signal: u8) -> Disposition {
        if signal == SIGKILL || signal == SIGSTOP {
            return default_disposition(signal);
        }
        let action = self.action(signal);
        match action.handler {
            SIG_DFL => default_disposition(signal),
            SIG_IGN => Disposition::Ignore,
            address => Disposition::Handler(Handler {
                address,
                flags: action.flags,
                restorer: action.restorer,
                mask: action.mask,
            }),
        }
    }

    /// Whether the handler of `signal` has `flag` in its `sa_flags`.
    pub fn has_flag(&self, signal: u8, flag: u64) -> bool {
        (1..=64).contains(&signal) && self.action(signal).flags & flag != 0
    }

    /// Thread `thread`'s signal mask.
    #[inline]
    pub fn mask(&self, thread: u64) -> u64 {
        self.thread(thread).mask
    }

    /// Replaces thread `thread`'s mask (a handler's return restores the
    /// one it interrupted); `SIGKILL` and `SIGSTOP` stay unblocked.
    pub fn set_mask(&mut self, thread: u64, mask: u64) {
        self.thread_mut(thread).mask = mask & !UNBLOCKABLE;
    }

    /// Thread `thread`'s alternate signal stack (`sigaltstack`).
    #[inline]
    pub fn alternate_stack(&self, thread: u64) -> SignalStack {
        self.thread(thread).alternate_stack
    }

    /// Signals pending for thread `thread`: its own and the process's.
    pub fn pending_for(&self, thread: u64) -> u64 {
        self.pending | self.thread(thread).pending
    }

    /// Keeps [`PROCESSES_WITH_PENDING`] right after a change.
    fn recount(&mut self) {
        let any = self.pending != 0 || self.threads.values().any(|thread| thread.pending != 0);
        match (self.counted, any) {
            (false, true) => {
                PROCESSES_WITH_PENDING.fetch_add(1, Ordering::Relaxed);
            }
            (true, false) => {
                PROCESSES_WITH_PENDING.fetch_sub(1, Ordering::Relaxed);
            }
            _ => {}
        }
        self.counted = any;
    }

    /// What posting `signal` does to signals already pending: `SIGCONT`
    /// discards stop signals, and a stop signal `SIGCONT`.
    fn discard_opposites(&mut self, signal: u8) {
        let stops = bit(SIGSTOP) | bit(SIGTSTP) | bit(SIGTTIN) | bit(SIGTTOU);
        if signal == SIGCONT {
            self.discard(stops);
        } else if stops & bit(signal) != 0 {
            self.discard(bit(SIGCONT));
        }
    }

    /// Posts a signal to the process: any thread not blocking it takes
    /// it. An ignored one that no thread blocks is discarded at once
    /// (Linux discards at generation; a blocked one stays, since the
    /// disposition may change before it is unblocked). Returns whether it
    /// is now pending. `SIGCONT` discards pending stop signals, and a stop
    /// signal a pending `SIGCONT`.
    pub fn post(&mut self, info: SignalInfo) -> bool {
        let signal = info.signal;
        if !(1..=64).contains(&signal) {
            return false;
        }
        self.discard_opposites(signal);
        let blocked = if self.threads.is_empty() {
            self.initial.mask & bit(signal) != 0
        } else {
            self.threads
                .values()
                .all(|thread| thread.mask & bit(signal) != 0)
        };
        if !blocked && !self.is_traced && self.disposition(signal) == Disposition::Ignore {
            return false;
        }
        if self.pending & bit(signal) == 0 {
            self.origins.push(info);
            self.pending |= bit(signal);
            self.recount();
        }
        true
    }

    /// Posts a signal to thread `thread` alone (`tgkill`, a fault), which
    /// takes it when it does not block it; as [`Self::post`] otherwise.
    pub fn post_to_thread(&mut self, thread: u64, info: SignalInfo) -> bool {
        let signal = info.signal;
        if !(1..=64).contains(&signal) {
            return false;
        }
        self.discard_opposites(signal);
        let blocked = self.thread(thread).mask & bit(signal) != 0;
        if !blocked && !self.is_traced && self.disposition(signal) == Disposition::Ignore {
            return false;
        }
        let target = self.thread_mut(thread);
        if target.pending & bit(signal) == 0 {
            target.origins.push(info);
            target.pending |= bit(signal);
            self.recount();
        }
        true
    }

    fn discard(&mut self, signals: u64) {
        self.origins.retain(|info| signals & bit(info.signal) == 0);
        self.pending &= !signals;
        for thread in self.threads.values_mut() {
            thread
                .origins
                .retain(|info| signals & bit(info.signal) == 0);
            thread.pending &= !signals;
        }
        self.recount();
    }

    /// Whether a signal is pending for thread `thread` that its mask
    /// does not block.
    pub fn has_deliverable(&self, thread: u64) -> bool {
        self.pending_for(thread) & !self.thread(thread).mask != 0
    }

    /// Takes the lowest-numbered signal pending for thread `thread` that
    /// its mask does not block (one sent to the thread itself before the
    /// process's of the same number), with what to do about it.
    /// `SA_RESETHAND` is applied here.
    pub fn take(&mut self, thread: u64) -> Option<(SignalInfo, Disposition)> {
        self.take_where(thread, |own| !own.mask)
    }

    /// Takes the lowest-numbered signal of `signals` pending for thread
    /// `thread`, blocked or not (`rt_sigtimedwait`), as [`Self::take`]
    /// does.
    pub fn take_among(&mut self, thread: u64, signals: u64) -> Option<(SignalInfo, Disposition)> {
        self.take_where(thread, |_| signals)
    }

    /// [`Self::take`] and [`Self::take_among`]: the signals looked at are
    /// `signals` of the thread's own state, which is looked up once (a
    /// `take` that asked for the mask first walked the threads' map twice
    /// on every signal delivered). Inlined into both, each with its rule.
    #[inline(always)]
    fn take_where(
        &mut self,
        thread: u64,
        signals: impl FnOnce(&ThreadSignals) -> u64,
    ) -> Option<(SignalInfo, Disposition)> {
        let own = self.thread(thread);
        let deliverable = (self.pending | own.pending) & signals(own);
        if deliverable == 0 {
            return None;
        }
        let signal = deliverable.trailing_zeros() as u8 + 1;
        let info = if own.pending & bit(signal) != 0 {
            let own = self.thread_mut(thread);
            let at = own.origins.iter().position(|info| info.signal == signal);
            own.pending &= !bit(signal);
            at.map(|at| own.origins.remove(at))
        } else {
            let at = self.origins.iter().position(|info| info.signal == signal);
            self.pending &= !bit(signal);
            at.map(|at| self.origins.remove(at))
        };
        let info = info.unwrap_or(SignalInfo {
            signal,
            source: Source::Kernel,
        });
        self.recount();
        let disposition = self.disposition(signal);
        if let Disposition::Handler(handler) = disposition {
            if handler.flags & SA_RESETHAND != 0 {
                self.actions[usize::from(signal - 1)] = SigAction::default();
            }
        }
        Some((info, disposition))
    }

    /// The mask a handler entered now on thread `thread` must restore
    /// when it returns: the one `rt_sigsuspend` replaced, if it is
    /// waiting (taken), else the current one.
    pub fn take_mask_to_restore(&mut self, thread: u64) -> u64 {
        let own = self.thread_mut(thread);
        own.suspended_mask.take().unwrap_or(own.mask)
    }

    /// Puts `mask` in force for a wait (`rt_sigsuspend`, `pselect6`,
    /// `ppoll`), keeping the current one to come back: when the wait ends
    /// with `EINTR`, the handler that runs returns to it (see
    /// [`SignalState::take_mask_to_restore`]); otherwise the caller ends
    /// the suspension with [`SignalState::end_suspend`].
    pub fn suspend_with(&mut self, thread: u64, mask: u64) {
        let own = self.thread_mut(thread);
        own.suspended_mask = Some(own.mask);
        own.mask = mask & !UNBLOCKABLE;
    }

    /// Ends thread `thread`'s `rt_sigsuspend` that no handler ran for:
    /// its mask comes back.
    pub fn end_suspend(&mut self, thread: u64) {
        let own = self.thread_mut(thread);
        if let Some(mask) = own.suspended_mask.take() {
            own.mask = mask;
        }
    }
}

/// `rt_sigaction(signal, act, oldact, sigsetsize)`.
pub fn rt_sigaction(
    process: &LinuxProcess,
    signal: u64,
    act: u64,
    old: u64,
    size: u64,
) -> Result<i64, Errno> {
    if size != SIGSET_BYTES || signal == 0 || signal > u64::from(MAX_SIGNAL) {
        return Err(Errno::EINVAL);
    }
    let index = (signal - 1) as usize;
    let mut new = [0u8; SigAction::BYTES];
    if act != 0 {
        user::read(act, &mut new)?;
        if signal == u64::from(SIGKILL) || signal == u64::from(SIGSTOP) {
            return Err(Errno::EINVAL);
        }
    }
    let previous = {
        let mut state = process.signals.lock();
        let previous = state.actions[index];
        if act != 0 {
            state.actions[index] = SigAction::from_bytes(&new);
            // Pending instances of a signal now ignored are discarded
            // (sigaction(2)).
            if state.is_ignored(signal) {
                state.discard(bit(signal as u8));
            }
        }
        previous
    };
    if old != 0 {
        user::write(old, &previous.to_bytes())?;
    }
    Ok(0)
}

/// `rt_sigprocmask(how, set, oldset, sigsetsize)`: the calling thread's
/// mask; `SIGKILL` and `SIGSTOP` are never blocked.
pub fn rt_sigprocmask(
    process: &LinuxProcess,
    how: u64,
    set: u64,
    old: u64,
    size: u64,
) -> Result<i64, Errno> {
    if size != SIGSET_BYTES {
        return Err(Errno::EINVAL);
    }
    let change = if set != 0 {
        Some(user::read_u64(set)?)
    } else {
        None
    };
    let thread = current_thread();
    let previous = {
        let mut state = process.signals.lock();
        let previous = state.mask(thread);
        if let Some(change) = change {
            let mask = match how {
                SIG_BLOCK => previous | change,
                SIG_UNBLOCK => previous & !change,
                SIG_SETMASK => change,
                _ => return Err(Errno::EINVAL),
            };
            state.set_mask(thread, mask);
        }
        previous
    };
    if old != 0 {
        user::write(old, &previous.to_le_bytes())?;
    }
    Ok(0)
}

/// `sigaltstack(ss, old_ss)`: recorded for the calling thread (`struct
/// stack_t`, 24 bytes). As Linux's `do_sigaltstack`: a mode other than
/// 0, `SS_ONSTACK` or `SS_DISABLE` (beside `SS_AUTODISARM`) is
/// `EINVAL`, a stack smaller than `MINSIGSTKSZ` `ENOMEM`; `SS_DISABLE`
/// forgets the stack; the old one's flags say `SS_DISABLE` when there is
/// none (and keep `SS_AUTODISARM`).
pub fn sigaltstack(process: &LinuxProcess, new: u64, old: u64) -> Result<i64, Errno> {
    let requested = if new != 0 {
        let mut bytes = [0u8; SignalStack::BYTES];
        user::read(new, &mut bytes)?;
        Some(checked_alternate_stack(SignalStack::from_bytes(&bytes))?)
    } else {
        None
    };
    let thread = current_thread();
    let previous = {
        let mut state = process.signals.lock();
        let own = state.thread_mut(thread);
        let previous = own.alternate_stack;
        if let Some(stack) = requested {
            own.alternate_stack = stack;
        }
        previous
    };
    if old != 0 {
        let mode = if previous.size == 0 { SS_DISABLE } else { 0 };
        let reported = SignalStack {
            flags: mode | (previous.flags & SS_AUTODISARM),
            ..previous
        };
        user::write(old, &reported.to_bytes())?;
    }
    Ok(0)
}

/// The alternate stack `sigaltstack` records for `stack`, or its error.
fn checked_alternate_stack(stack: SignalStack) -> Result<SignalStack, Errno> {
    match stack.flags & !SS_AUTODISARM {
        SS_DISABLE => Ok(SignalStack::DISABLED),
        0 | SS_ONSTACK if stack.size < MINSIGSTKSZ => Err(Errno::ENOMEM),
        0 | SS_ONSTACK => Ok(stack),
        _ => Err(Errno::EINVAL),
    }
}

/// `rt_sigpending(set, sigsetsize)`: the signals pending for the calling
/// thread (its own and its process's).
pub fn rt_sigpending(process: &LinuxProcess, set: u64, size: u64) -> Result<i64, Errno> {
    if size != SIGSET_BYTES {
        return Err(Errno::EINVAL);
    }
    let pending = process.signals.lock().pending_for(current_thread());
    user::write(set, &pending.to_le_bytes())?;
    Ok(0)
}

/// Waits until a signal the mask lets through is pending, or the process
/// is being ended. No wait queue: a signal's sender wakes every thread of
/// the process, and the kernel's kill too.
fn wait_for_signal(process: &LinuxProcess) {
    let thread = current_thread();
    loop {
        // Prepared before the look: a signal sent between the look and
        // the block makes the block return at once.
        Machine::prepare_to_wait();
        if process.signals.lock().has_deliverable(thread) || crate::pipe::interrupted() {
            return;
        }
        Machine::block_prepared("signal", None);
    }
}

/// `rt_sigtimedwait(set, info, timeout, sigsetsize)`: takes a signal of
/// `set` (normally blocked) once one is pending, without running its
/// handler, and returns its number with its `siginfo_t` written to
/// `info` (unless null). `EAGAIN` once `timeout` (a `struct timespec`;
/// null: forever) has passed; `EINTR` if another signal, one the mask
/// lets through, arrives meanwhile.
pub fn rt_sigtimedwait(
    process: &LinuxProcess,
    set: u64,
    info: u64,
    timeout: u64,
    size: u64,
) -> Result<i64, Errno> {
    if size != SIGSET_BYTES {
        return Err(Errno::EINVAL);
    }
    let wanted = user::read_u64(set)? & !UNBLOCKABLE;
    let timeout_ns = crate::poll::timespec_ns(timeout)?;
    let deadline = timeout_ns.map(|ns| Machine::uptime_ns().saturating_add(ns));
    let thread = current_thread();
    loop {
        Machine::prepare_to_wait();
        let taken = process.signals.lock().take_among(thread, wanted);
        if let Some((taken, _)) = taken {
            if info != 0 {
                user::write(info, &taken.to_siginfo().to_bytes())?;
            }
            return Ok(i64::from(taken.signal));
        }
        if crate::pipe::interrupted() {
            return Err(Errno::EINTR);
        }
        if deadline.is_some_and(|deadline| Machine::uptime_ns() >= deadline) {
            return Err(Errno::EAGAIN);
        }
        Machine::block_prepared("signal", deadline);
    }
}

/// `rt_sigsuspend(mask, sigsetsize)`: waits for a signal with `mask` in
/// force, then `EINTR`. The handler that runs returns to the mask from
/// before the call (the kernel takes it with
/// [`SignalState::take_mask_to_restore`]).
pub fn rt_sigsuspend(process: &LinuxProcess, mask: u64, size: u64) -> Result<i64, Errno> {
    if size != SIGSET_BYTES {
        return Err(Errno::EINVAL);
    }
    let mask = user::read_u64(mask)?;
    process.signals.lock().suspend_with(current_thread(), mask);
    wait_for_signal(process);
    Err(Errno::EINTR)
}

/// `pause()`: waits for a signal, then `EINTR`.
pub fn pause(process: &LinuxProcess) -> Result<i64, Errno> {
    wait_for_signal(process);
    Err(Errno::EINTR)
}
