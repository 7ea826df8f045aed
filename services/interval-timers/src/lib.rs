//! Interval timers: `alarm` and `setitimer`/`getitimer` with
//! `ITIMER_REAL`. Each process may have one real-time timer; when it
//! expires the process gets `SIGALRM`, and a timer with an interval is
//! armed again.
//!
//! The pieces:
//! - [`Table`], [`Timer`], [`Setting`]: the timers as plain data and
//!   their arithmetic (arming, the time left, expiry in deadline order,
//!   re-arming), with the time passed in, so it is tested on the host.
//! - [`IntervalTimers`]: the table under a lock, the calls the system
//!   calls make, and [`IntervalTimers::keep`], the loop of the one
//!   thread that expires them all.
//! - [`Host`]: what that needs from the kernel (the clock, sending
//!   `SIGALRM`, the keeper's sleep and its wake-up), which the kernel
//!   implements at boot; the kernel also runs the keeper's thread.
//!
//! The keeper sleeps until the earliest deadline, or without a deadline
//! while no timer is armed; arming a timer wakes it, so a timer armed for
//! sooner than the keeper's deadline is not late.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

mod table;
#[cfg(test)]
mod tests;

use alloc::vec::Vec;

pub use table::{Setting, Table, Timer};

/// What the interval timers need from the kernel.
pub trait Host: Send + Sync {
    /// The uptime now (ns): the clock deadlines are kept in.
    fn now_ns(&self) -> u64;
    /// Sends `SIGALRM` to process `pid`; false if there is no such
    /// process any more (its timer is then disarmed).
    fn send_alarm(&self, pid: u64) -> bool;
    /// Puts the keeper to sleep until uptime `until` (ns; `None`: no
    /// deadline) or until [`Host::wake_keeper`]. `rearmed` says whether a
    /// timer was set since the keeper looked: the implementation prepares
    /// to block, asks `rearmed`, and blocks only if it answers false, so
    /// a wake-up between the keeper's look and its sleep is not lost.
    /// Waking early (spuriously) is harmless.
    fn sleep_keeper(&self, until: Option<u64>, rearmed: &dyn Fn() -> bool);
    /// Wakes the keeper: a timer was set, perhaps for sooner than the
    /// keeper's deadline.
    fn wake_keeper(&self);
}

/// The table and how many times it was set (the keeper compares counts
/// to know whether a timer was set since it looked).
struct State {
    table: Table,
    sets: u64,
}

/// Every process's real-time interval timer, and the keeper that
/// expires them.
pub struct IntervalTimers<H> {
    host: H,
    state: spin::Mutex<State>,
}

impl<H: Host> IntervalTimers<H> {
    /// No timer armed; `host` is the kernel's side.
    pub const fn new(host: H) -> IntervalTimers<H> {
        IntervalTimers {
            host,
            state: spin::Mutex::new(State {
                table: Table::new(),
                sets: 0,
            }),
        }
    }

    /// Process `pid`'s timer as `getitimer` reads it now.
    pub fn get(&self, pid: u64) -> Setting {
        let timer = self.state.lock().table.get(pid);
        self.setting_now(timer)
    }

    /// `setitimer`: arms process `pid`'s timer to expire `value_ns` from
    /// now and then every `interval_ns` (a zero `value_ns` disarms it);
    /// returns the setting it replaces.
    pub fn set(&self, pid: u64, value_ns: u64, interval_ns: u64) -> Setting {
        let timer = Timer::starting(self.host.now_ns(), value_ns, interval_ns);
        let previous = self.replace(pid, timer);
        self.setting_now(previous)
    }

    /// `alarm`: `SIGALRM` to process `pid` in `seconds` (0 cancels);
    /// returns the seconds the previous alarm had left, rounded up.
    pub fn alarm(&self, pid: u64, seconds: u32) -> u64 {
        self.set(pid, u64::from(seconds).saturating_mul(1_000_000_000), 0)
            .seconds_left()
    }

    /// Process `pid` ended: its timer goes.
    pub fn process_ended(&self, pid: u64) {
        if self.state.lock().table.get(pid).is_some() {
            self.replace(pid, None);
        }
    }

    /// The keeper: expires the due timers, sends their `SIGALRM`s, and
    /// sleeps until the next deadline, for ever. The kernel runs it on a
    /// thread of its own.
    pub fn keep(&self) -> ! {
        loop {
            let (next, sets) = self.expire_due();
            self.host.sleep_keeper(next, &|| self.set_since(sets));
        }
    }

    /// One round of the keeper: expires what is due now and signals its
    /// processes. Returns the next deadline and the count of sets seen.
    fn expire_due(&self) -> (Option<u64>, u64) {
        let now = self.host.now_ns();
        let mut due = Vec::new();
        let (next, sets) = {
            let mut state = self.state.lock();
            let next = state.table.expire(now, &mut due);
            (next, state.sets)
        };
        // Signals go out with the table unlocked: sending one may run
        // the process, which may set its timer.
        for pid in due {
            if !self.host.send_alarm(pid) {
                self.replace(pid, None);
            }
        }
        (next, sets)
    }

    /// Whether a timer was set (or disarmed) since the keeper saw `sets`.
    fn set_since(&self, sets: u64) -> bool {
        self.state.lock().sets != sets
    }

    /// Sets process `pid`'s timer, wakes the keeper, returns the previous
    /// timer.
    fn replace(&self, pid: u64, timer: Option<Timer>) -> Option<Timer> {
        let previous = {
            let mut state = self.state.lock();
            state.sets = state.sets.wrapping_add(1);
            state.table.set(pid, timer)
        };
        self.host.wake_keeper();
        previous
    }

    fn setting_now(&self, timer: Option<Timer>) -> Setting {
        timer.map_or(Setting::default(), |timer| {
            timer.setting_at(self.host.now_ns())
        })
    }
}
