//! The timers (`services/interval-timers`): the kernel's side, the
//! [`Host`] on the clocks, the scheduler and signal delivery, and the
//! keeper's thread.
//!
//! Processor time is not split into user and system time here (as for
//! `getrusage`, all of it counts as user time): `ITIMER_VIRTUAL` and
//! `ITIMER_PROF` count the same clock, the process's processor time.

use core::sync::atomic::{AtomicBool, Ordering};

use interval_timers::{Expiry, Host, IntervalTimers, Notice, Slot, TimerClock};
use linux::signal::{SignalInfo, Source};

/// The keeper's thread, woken when a timer is set.
static KEEPER: sched::WaitQueue = sched::WaitQueue::new();
static KEEPER_STARTED: AtomicBool = AtomicBool::new(false);

/// The timers' host: the uptime clock and the processor-time clocks,
/// signals through the kernel's signal delivery, the keeper's sleep
/// through the scheduler.
pub struct Kernel;

impl Host for Kernel {
    fn now_ns(&self) -> u64 {
        hal::timer::uptime_ns()
    }

    fn epoch_offset_ns(&self) -> u64 {
        hal::rtc::epoch_offset_ns()
    }

    fn cpu_ns(&self, pid: u64, clock: TimerClock) -> Option<u64> {
        match clock {
            TimerClock::Uptime | TimerClock::Wall => Some(hal::timer::uptime_ns()),
            TimerClock::ProcessCpu => Some(process::get(pid)?.cpu_ns()),
            TimerClock::ThreadCpu(tid) => thread_cpu_ns(pid, tid),
        }
    }

    fn notify(&self, expiry: &Expiry) -> bool {
        let source = match expiry.slot {
            Slot::Posix(id) => Source::Timer {
                id,
                overrun: expiry.overrun,
                value: expiry.notice.value,
            },
            // Interval timers' signals come from the kernel (`SI_KERNEL`).
            Slot::Real | Slot::Virtual | Slot::Profiling => Source::Kernel,
        };
        let info = SignalInfo {
            signal: expiry.notice.signal,
            source,
        };
        let sent = match expiry.notice.thread {
            Some(tid) => crate::signals::send_to_thread(expiry.pid, tid, info),
            None => crate::signals::send(expiry.pid, info),
        };
        sent.is_ok()
    }

    fn sleep_keeper(&self, until: Option<u64>, rearmed: &dyn Fn() -> bool) {
        // Prepared before the look: a set between the look and the block
        // makes the block return at once.
        sched::prepare_to_wait();
        if !rearmed() {
            sched::block_prepared("interval timers", until);
        }
    }

    fn wake_keeper(&self) {
        KEEPER.wake_all();
    }
}

/// Thread `tid` of process `pid`'s processor time; `None` if it is not
/// one of that process's threads (any more).
pub(crate) fn thread_cpu_ns(pid: u64, tid: u64) -> Option<u64> {
    let strand = process::threads_of_process(pid)
        .into_iter()
        .find(|&(thread, _)| thread == tid)?
        .1;
    sched::thread_cpu_ns(sched::ThreadId(strand))
}

static TIMERS: IntervalTimers<Kernel> = IntervalTimers::new(Kernel);

/// Every process's timers (`alarm`, `setitimer`, `timer_create`).
pub fn timers() -> &'static IntervalTimers<Kernel> {
    &TIMERS
}

/// What an interval timer sends: `SIGALRM`, `SIGVTALRM` or `SIGPROF` to
/// the process.
pub(crate) fn interval_notice(signal: u8) -> Notice {
    Notice {
        signal,
        thread: None,
        value: 0,
    }
}

/// Starts the keeper thread (at boot: it is part of the kernel, not of
/// the first program that sets an alarm).
pub fn init() {
    if KEEPER_STARTED.swap(true, Ordering::Relaxed) {
        return;
    }
    let spawned = sched::spawn("interval timers", || {
        // Registered for good: every set wakes it.
        KEEPER.register(sched::current());
        TIMERS.keep()
    });
    if spawned.is_err() {
        KEEPER_STARTED.store(false, Ordering::Relaxed);
        log::error!("interval timers: no memory for the keeper thread's stack; alarm and setitimer will not fire");
    }
}

/// Process `pid` ended: its timers go.
pub fn process_ended(pid: u64) {
    TIMERS.process_ended(pid);
}

/// Process `pid` runs a new program: its `timer_create` timers go.
pub(crate) fn program_replaced(pid: u64) {
    TIMERS.program_replaced(pid);
}

/// The running thread returns to user mode: its process's
/// processor-time timers that are due expire (one load while no such
/// timer is armed anywhere).
pub(crate) fn account_current() {
    if !TIMERS.has_cpu_timers() {
        return;
    }
    if let Some((pid, _)) = process::ids_of_strand(sched::current().0) {
        TIMERS.account(pid);
    }
}
