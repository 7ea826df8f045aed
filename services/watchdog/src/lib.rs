//! The lockup watchdog's judgement (Linux's `kernel/watchdog.c` and
//! `kernel/hung_task.c`, for a kernel whose threads are preempted by a
//! timer tick). The kernel samples the machine at every watchdog NMI
//! (which arrives even with interrupts off) and asks [`Watchdog`] whether
//! what it saw is one of three faults:
//!
//! - **hard lockup**: the timer tick has not advanced for
//!   [`Thresholds::hard_ns`]: the processor runs with interrupts off (a
//!   spinning lock, a loop in an interrupt handler);
//! - **soft lockup**: interrupts arrive, but the same thread has run for
//!   [`Thresholds::soft_ns`] while another thread was ready: the scheduler
//!   never switched (preemption off, a tick that cannot take the
//!   scheduler). Round robin switches every time slice, so a ready thread
//!   waiting that long is never normal;
//! - **hung task**: a thread has waited for a kernel mutex for
//!   [`Thresholds::hung_ns`] (Linux's uninterruptible sleep): its holder
//!   never lets go.
//!
//! Each fault is reported once per episode: a hard lockup again only after
//! the tick moved, a soft lockup again only after a switch, a hung task
//! again only after the thread's wait ended.
//!
//! Nothing here allocates: the kernel calls it from the NMI.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

/// How long each condition must last to be a fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// The timer tick stopped this long: a hard lockup.
    pub hard_ns: u64,
    /// One thread ran this long with another ready: a soft lockup.
    pub soft_ns: u64,
    /// A thread waited for a kernel mutex this long: a hung task.
    pub hung_ns: u64,
}

impl Thresholds {
    /// The kernel's: 2 s of no tick, 5 s of no switch, 30 s on a mutex
    /// (Linux's defaults are 10 s, 20 s and 120 s on hardware; under an
    /// emulator a real stall shows sooner, and these leave round robin's
    /// worst wait of hundreds of ready threads at 10 ms each well below).
    pub const KERNEL: Thresholds = Thresholds {
        hard_ns: 2_000_000_000,
        soft_ns: 5_000_000_000,
        hung_ns: 30_000_000_000,
    };
}

/// The running thread at one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Running {
    /// Its identifier.
    pub id: u64,
    /// Uptime (ns) since which it has run without a switch.
    pub since_ns: u64,
}

/// A thread waiting for a kernel mutex at one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MutexWaiter {
    /// Its identifier.
    pub id: u64,
    /// Uptime (ns) since which it has waited.
    pub since_ns: u64,
}

/// A fault found, with what the report needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finding {
    /// The tick has not advanced for `stalled_ns`.
    HardLockup {
        /// How long the tick has stood still.
        stalled_ns: u64,
    },
    /// Thread `thread` has run `running_ns` while another was ready.
    SoftLockup {
        /// The thread that keeps the processor.
        thread: u64,
        /// How long it has run without a switch.
        running_ns: u64,
    },
    /// Thread `thread` has waited `blocked_ns` for a kernel mutex.
    HungTask {
        /// The waiting thread.
        thread: u64,
        /// How long it has waited.
        blocked_ns: u64,
    },
}

/// Hung tasks remembered as reported (per episode); more at once are
/// reported again at later samples, which is noise, not harm.
const REMEMBERED_HUNG: usize = 16;

/// The watchdog's memory between samples.
#[derive(Debug, Clone)]
pub struct Watchdog {
    thresholds: Thresholds,
    /// The tick count last seen, and when it last changed.
    last_ticks: u64,
    ticks_moved_at_ns: u64,
    hard_reported: bool,
    /// The soft lockup last reported: (thread, since), so that the same
    /// run is reported once.
    soft_reported: Option<Running>,
    /// Mutex waits reported: (thread, since).
    hung_reported: [Option<MutexWaiter>; REMEMBERED_HUNG],
    next_hung_slot: usize,
}

impl Watchdog {
    /// A watchdog that has seen nothing yet.
    pub const fn new(thresholds: Thresholds) -> Self {
        Self {
            thresholds,
            last_ticks: 0,
            ticks_moved_at_ns: 0,
            hard_reported: false,
            soft_reported: None,
            hung_reported: [None; REMEMBERED_HUNG],
            next_hung_slot: 0,
        }
    }

    /// Its thresholds.
    pub fn thresholds(&self) -> Thresholds {
        self.thresholds
    }

    /// The tick count `ticks` at uptime `now_ns`: a hard lockup when it
    /// has not moved for the threshold (reported once until it moves).
    pub fn observe_ticks(&mut self, now_ns: u64, ticks: u64) -> Option<Finding> {
        if ticks != self.last_ticks || self.ticks_moved_at_ns == 0 {
            self.last_ticks = ticks;
            self.ticks_moved_at_ns = now_ns.max(1);
            self.hard_reported = false;
            return None;
        }
        let stalled_ns = now_ns.saturating_sub(self.ticks_moved_at_ns);
        if stalled_ns >= self.thresholds.hard_ns && !self.hard_reported {
            self.hard_reported = true;
            return Some(Finding::HardLockup { stalled_ns });
        }
        None
    }

    /// The scheduler at uptime `now_ns`: the running thread (none is
    /// idle), whether any other thread is ready: a soft lockup when the
    /// same run has lasted the threshold with a thread ready (once per
    /// run).
    pub fn observe_running(
        &mut self,
        now_ns: u64,
        running: Option<Running>,
        is_any_ready: bool,
    ) -> Option<Finding> {
        let running = running?;
        let running_ns = now_ns.saturating_sub(running.since_ns);
        if !is_any_ready || running_ns < self.thresholds.soft_ns {
            return None;
        }
        if self.soft_reported == Some(running) {
            return None;
        }
        self.soft_reported = Some(running);
        Some(Finding::SoftLockup {
            thread: running.id,
            running_ns,
        })
    }

    /// A thread waiting for a kernel mutex at uptime `now_ns`: a hung
    /// task when the wait has lasted the threshold (once per wait).
    pub fn observe_mutex_waiter(&mut self, now_ns: u64, waiter: MutexWaiter) -> Option<Finding> {
        let blocked_ns = now_ns.saturating_sub(waiter.since_ns);
        if blocked_ns < self.thresholds.hung_ns || self.hung_reported.contains(&Some(waiter)) {
            return None;
        }
        self.hung_reported[self.next_hung_slot] = Some(waiter);
        self.next_hung_slot = (self.next_hung_slot + 1) % REMEMBERED_HUNG;
        Some(Finding::HungTask {
            thread: waiter.id,
            blocked_ns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000_000;

    fn watchdog() -> Watchdog {
        Watchdog::new(Thresholds::KERNEL)
    }

    #[test]
    fn a_tick_that_stops_is_a_hard_lockup_reported_once_until_it_moves() {
        let mut dog = watchdog();
        assert_eq!(dog.observe_ticks(SECOND, 1000), None);
        assert_eq!(dog.observe_ticks(2 * SECOND, 1000), None, "1 s is not yet");
        assert_eq!(
            dog.observe_ticks(3 * SECOND, 1000),
            Some(Finding::HardLockup {
                stalled_ns: 2 * SECOND
            })
        );
        assert_eq!(dog.observe_ticks(4 * SECOND, 1000), None, "reported once");
        assert_eq!(dog.observe_ticks(5 * SECOND, 1001), None, "it moved");
        assert_eq!(dog.observe_ticks(6 * SECOND, 1001), None);
        assert!(matches!(
            dog.observe_ticks(7 * SECOND + 1, 1001),
            Some(Finding::HardLockup { .. })
        ));
    }

    #[test]
    fn a_moving_tick_is_never_a_lockup() {
        let mut dog = watchdog();
        for step in 0..1000 {
            assert_eq!(dog.observe_ticks(step * SECOND, step), None);
        }
    }

    #[test]
    fn a_long_run_is_a_soft_lockup_only_while_another_thread_is_ready() {
        let mut dog = watchdog();
        let run = Running {
            id: 7,
            since_ns: SECOND,
        };
        assert_eq!(dog.observe_running(10 * SECOND, Some(run), false), None);
        assert_eq!(dog.observe_running(5 * SECOND, Some(run), true), None);
        assert_eq!(dog.observe_running(10 * SECOND, None, true), None);
        assert_eq!(
            dog.observe_running(6 * SECOND, Some(run), true),
            Some(Finding::SoftLockup {
                thread: 7,
                running_ns: 5 * SECOND
            })
        );
        assert_eq!(
            dog.observe_running(9 * SECOND, Some(run), true),
            None,
            "once per run"
        );
        let next_run = Running {
            id: 7,
            since_ns: 20 * SECOND,
        };
        assert!(dog
            .observe_running(26 * SECOND, Some(next_run), true)
            .is_some());
    }

    #[test]
    fn a_long_mutex_wait_is_a_hung_task_once_per_wait() {
        let mut dog = watchdog();
        let wait = MutexWaiter { id: 3, since_ns: 0 };
        assert_eq!(dog.observe_mutex_waiter(29 * SECOND, wait), None);
        assert_eq!(
            dog.observe_mutex_waiter(30 * SECOND, wait),
            Some(Finding::HungTask {
                thread: 3,
                blocked_ns: 30 * SECOND
            })
        );
        assert_eq!(dog.observe_mutex_waiter(40 * SECOND, wait), None);
        let other = MutexWaiter {
            id: 4,
            since_ns: SECOND,
        };
        assert!(dog.observe_mutex_waiter(40 * SECOND, other).is_some());
        let later_wait = MutexWaiter {
            id: 3,
            since_ns: 50 * SECOND,
        };
        assert!(dog.observe_mutex_waiter(80 * SECOND, later_wait).is_some());
    }
}
