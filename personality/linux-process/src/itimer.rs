//! Interval timers: `alarm` and `setitimer(ITIMER_REAL)`. Each process
//! may have one real-time timer; when it expires the process gets
//! `SIGALRM`, and a timer with an interval is armed again.
//!
//! One kernel thread keeps them all: it waits on a condition variable
//! while none is armed, and otherwise sleeps until the earliest deadline
//! (at most [`KEEPER_POLL_MS`] at a time, so a timer armed meanwhile for
//! sooner is not late by more than that).

use alloc::collections::BTreeMap;
use core::sync::atomic::{AtomicBool, Ordering};

use linux::signal::{SignalInfo, Source};
use linux_abi::signal::SIGALRM;
use sched::sync::{Condvar, Mutex};

/// The longest the keeper sleeps before it looks again.
const KEEPER_POLL_MS: u64 = 10;

/// An armed timer: when it expires next (uptime, ns), and its interval
/// (0: once).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timer {
    /// Uptime at which it expires.
    pub deadline_ns: u64,
    /// Period after that; 0 for a one-shot timer.
    pub interval_ns: u64,
}

/// Armed timers, by process.
static TIMERS: Mutex<BTreeMap<u64, Timer>> = Mutex::new(BTreeMap::new());
/// Signalled when a timer is armed.
static ARMED: Condvar = Condvar::new();
static KEEPER_STARTED: AtomicBool = AtomicBool::new(false);

/// Process `pid`'s timer, if armed.
pub fn get(pid: u64) -> Option<Timer> {
    TIMERS.lock().get(&pid).copied()
}

/// Starts the keeper thread (at boot: it is part of the kernel, not of
/// the first program that sets an alarm).
pub fn init() {
    if KEEPER_STARTED.swap(true, Ordering::Relaxed) {
        return;
    }
    if sched::spawn("interval timers", keeper).is_err() {
        KEEPER_STARTED.store(false, Ordering::Relaxed);
        log::error!("interval timers: no memory for the keeper thread's stack; alarm and setitimer will not fire");
    }
}

/// Arms process `pid`'s timer (`None` disarms it); returns the one it
/// replaces.
pub fn set(pid: u64, timer: Option<Timer>) -> Option<Timer> {
    let mut timers = TIMERS.lock();
    let previous = match timer {
        Some(timer) => timers.insert(pid, timer),
        None => timers.remove(&pid),
    };
    if timers.is_empty() {
        // An emptied map would keep its root node.
        *timers = BTreeMap::new();
    }
    ARMED.notify_all();
    previous
}

/// Process `pid` ended: its timer goes.
pub fn process_ended(pid: u64) {
    if TIMERS.lock().contains_key(&pid) {
        set(pid, None);
    }
}

fn keeper() {
    loop {
        let now = hal::timer::uptime_ns();
        let mut due = alloc::vec::Vec::new();
        let next = {
            let mut timers = TIMERS.lock();
            while timers.is_empty() {
                timers = ARMED.wait(timers);
            }
            for (&pid, timer) in timers.iter_mut() {
                if timer.deadline_ns <= now {
                    due.push(pid);
                    timer.deadline_ns = if timer.interval_ns == 0 {
                        0
                    } else {
                        // Missed periods are not made up: one signal, and
                        // the next period counted from now.
                        now.saturating_add(timer.interval_ns)
                    };
                }
            }
            timers.retain(|_, timer| timer.deadline_ns != 0);
            timers.values().map(|timer| timer.deadline_ns).min()
        };
        for pid in due {
            let info = SignalInfo {
                signal: SIGALRM,
                source: Source::Kernel,
            };
            if crate::signals::send(pid, info).is_err() {
                set(pid, None);
            }
        }
        let wait_ms = next.map_or(KEEPER_POLL_MS, |deadline| {
            deadline
                .saturating_sub(hal::timer::uptime_ns())
                .div_ceil(1_000_000)
        });
        if wait_ms > 0 {
            sched::sleep_ms(wait_ms.min(KEEPER_POLL_MS));
        }
    }
}
