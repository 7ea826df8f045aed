//! The timers as plain data: no clock, no lock, no thread. Every time is
//! an uptime in nanoseconds that the caller passes in, so the arithmetic
//! is tested on the host with made-up times.

use alloc::{collections::BTreeMap, vec::Vec};

/// Nanoseconds in a second (`alarm` counts seconds).
const NS_PER_SECOND: u64 = 1_000_000_000;
/// What a due timer reads as: Linux answers 1 µs left rather than zero,
/// which would read as disarmed.
const DUE_READS_AS_NS: u64 = 1_000;

/// An armed timer: when it expires next and its period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timer {
    /// Uptime (ns) at which it expires next.
    pub deadline_ns: u64,
    /// Period after that (ns); 0 for a one-shot timer.
    pub interval_ns: u64,
}

impl Timer {
    /// The timer `setitimer` arms at uptime `now_ns`: first expiry
    /// `value_ns` from now, then every `interval_ns`. `None` when
    /// `value_ns` is 0, which disarms (whatever the interval), as in Linux.
    pub fn starting(now_ns: u64, value_ns: u64, interval_ns: u64) -> Option<Timer> {
        (value_ns > 0).then(|| Timer {
            deadline_ns: now_ns.saturating_add(value_ns),
            interval_ns,
        })
    }

    /// How the timer reads at uptime `now_ns`: the time left (at least
    /// 1 µs, so an armed timer never reads as disarmed) and its period.
    pub fn setting_at(&self, now_ns: u64) -> Setting {
        Setting {
            value_ns: self.deadline_ns.saturating_sub(now_ns).max(DUE_READS_AS_NS),
            interval_ns: self.interval_ns,
        }
    }
}

/// A timer as `getitimer` reports it (`struct itimerval`): the time left
/// until the next expiry and the period; all zeros when disarmed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Setting {
    /// Time left until it expires (ns); 0: disarmed.
    pub value_ns: u64,
    /// Period (ns); 0: one-shot.
    pub interval_ns: u64,
}

impl Setting {
    /// What `alarm` returns for the alarm this setting describes: the
    /// seconds left rounded up (an armed alarm never reads as 0, which
    /// would mean none), or 0 when disarmed.
    pub fn seconds_left(&self) -> u64 {
        if self.value_ns == 0 {
            return 0;
        }
        self.value_ns.div_ceil(NS_PER_SECOND).max(1)
    }
}

/// The armed timers, by process id.
#[derive(Debug, Default)]
pub struct Table {
    timers: BTreeMap<u64, Timer>,
}

impl Table {
    /// No timer armed.
    pub const fn new() -> Table {
        Table {
            timers: BTreeMap::new(),
        }
    }

    /// Process `pid`'s timer, if armed.
    pub fn get(&self, pid: u64) -> Option<Timer> {
        self.timers.get(&pid).copied()
    }

    /// Whether no timer is armed.
    pub fn is_empty(&self) -> bool {
        self.timers.is_empty()
    }

    /// Arms process `pid`'s timer (`None` disarms it); returns the one it
    /// replaces.
    pub fn set(&mut self, pid: u64, timer: Option<Timer>) -> Option<Timer> {
        let previous = match timer {
            Some(timer) => self.timers.insert(pid, timer),
            None => self.timers.remove(&pid),
        };
        if self.timers.is_empty() {
            // An emptied map keeps its root node; a fresh one holds no
            // memory, so the kernel's heap readings in tests stay level.
            self.timers = BTreeMap::new();
        }
        previous
    }

    /// Expires what is due at uptime `now_ns`: appends to `due` the
    /// processes whose timers expired, earliest deadline first (ties by
    /// process id), re-arms the periodic ones and drops the one-shot ones.
    /// Returns the next deadline of what stays armed.
    ///
    /// A periodic timer that missed periods (the keeper ran late) is not
    /// made up for: one expiry, and the next period counts from now, as
    /// a signal already pending would absorb the others anyway.
    pub fn expire(&mut self, now_ns: u64, due: &mut Vec<u64>) -> Option<u64> {
        let mut expired: Vec<(u64, u64)> = self
            .timers
            .iter()
            .filter(|(_, timer)| timer.deadline_ns <= now_ns)
            .map(|(&pid, timer)| (timer.deadline_ns, pid))
            .collect();
        expired.sort_unstable();
        for &(_, pid) in &expired {
            due.push(pid);
            let rearmed = self.timers.get(&pid).and_then(|timer| {
                (timer.interval_ns > 0).then(|| Timer {
                    deadline_ns: now_ns.saturating_add(timer.interval_ns),
                    interval_ns: timer.interval_ns,
                })
            });
            self.set(pid, rearmed);
        }
        self.next_deadline()
    }

    /// The earliest deadline of the armed timers.
    pub fn next_deadline(&self) -> Option<u64> {
        self.timers.values().map(|timer| timer.deadline_ns).min()
    }
}
