//! Per-event accounting (events paper 003 §3.2, table 3: times raised, time
//! spent, handlers, guards), readable from the shell.
//!
//! Counting costs an atomic read-modify-write per raise, which is more than
//! the whole dispatch of a guarded handler, so it is off by default and
//! switched on per event. While it is on, the intrinsic-only shortcut is
//! disabled so that every raise is counted. Time needs a [`Clock`] from the
//! kernel (the TSC there; `std::time` on the host).

use core::sync::atomic::{AtomicU64, Ordering};

/// A monotonic clock.
pub trait Clock: Send + Sync {
    /// Nanoseconds since an arbitrary origin.
    fn now_ns(&self) -> u64;
}

impl<F: Fn() -> u64 + Send + Sync> Clock for F {
    fn now_ns(&self) -> u64 {
        self()
    }
}

/// A snapshot of one event's figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventStats {
    /// Times raised while accounting was on.
    pub raised: u64,
    /// Nanoseconds spent dispatching while accounting (with a clock) was on.
    pub time_ns: u64,
    /// Handlers installed (including the intrinsic one if present).
    pub handlers: usize,
    /// Guards installed, imposed ones included.
    pub guards: usize,
    /// Handler invocations that faulted (always counted).
    pub faults: u64,
    /// Ephemeral handlers terminated for exceeding their budget (always
    /// counted).
    pub terminated: u64,
    /// Asynchronous handler runs started (always counted).
    pub spawned: u64,
}

/// The counters of one event.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) raised: AtomicU64,
    pub(crate) time_ns: AtomicU64,
    pub(crate) faults: AtomicU64,
    pub(crate) terminated: AtomicU64,
    pub(crate) spawned: AtomicU64,
}

impl Counters {
    pub(crate) fn bump(counter: &AtomicU64, by: u64) {
        counter.fetch_add(by, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self, handlers: usize, guards: usize) -> EventStats {
        EventStats {
            raised: self.raised.load(Ordering::Relaxed),
            time_ns: self.time_ns.load(Ordering::Relaxed),
            handlers,
            guards,
            faults: self.faults.load(Ordering::Relaxed),
            terminated: self.terminated.load(Ordering::Relaxed),
            spawned: self.spawned.load(Ordering::Relaxed),
        }
    }
}
