//! The interval timers (`services/interval-timers`): the kernel's side,
//! the [`Host`] on the clock, the scheduler and signal delivery, and the
//! keeper's thread.

use core::sync::atomic::{AtomicBool, Ordering};

use interval_timers::{Host, IntervalTimers};
use linux::signal::{SignalInfo, Source};
use linux_abi::signal::SIGALRM;

/// The keeper's thread, woken when a timer is set.
static KEEPER: sched::WaitQueue = sched::WaitQueue::new();
static KEEPER_STARTED: AtomicBool = AtomicBool::new(false);

/// The timers' host: the uptime clock, `SIGALRM` through the kernel's
/// signal delivery, the keeper's sleep through the scheduler.
pub struct Kernel;

impl Host for Kernel {
    fn now_ns(&self) -> u64 {
        hal::timer::uptime_ns()
    }

    fn send_alarm(&self, pid: u64) -> bool {
        let info = SignalInfo {
            signal: SIGALRM,
            source: Source::Kernel,
        };
        crate::signals::send(pid, info).is_ok()
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

static TIMERS: IntervalTimers<Kernel> = IntervalTimers::new(Kernel);

/// Every process's real-time interval timer (`alarm`, `setitimer`).
pub fn timers() -> &'static IntervalTimers<Kernel> {
    &TIMERS
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

/// Process `pid` ended: its timer goes.
pub fn process_ended(pid: u64) {
    TIMERS.process_ended(pid);
}
