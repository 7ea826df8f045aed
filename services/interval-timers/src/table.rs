//! The timers as plain data: no clock, no lock, no thread. Every time is
//! a reading of the timer's own clock in nanoseconds that the caller
//! passes in, so the arithmetic is tested on the host with made-up times.

use alloc::{collections::BTreeMap, vec::Vec};

/// Nanoseconds in a second (`alarm` counts seconds).
const NS_PER_SECOND: u64 = 1_000_000_000;
/// What an armed timer that is due reads as: 1 ns left rather than zero,
/// which would read as disarmed (Linux's `common_timer_get`).
const DUE_READS_AS_NS: u64 = 1;

/// Which of a process's timers: the three of `setitimer` and the ones
/// `timer_create` made, by their id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Slot {
    /// `ITIMER_REAL` (and `alarm`): elapsed time.
    Real,
    /// `ITIMER_VIRTUAL`: the process's user processor time.
    Virtual,
    /// `ITIMER_PROF`: the process's user and system processor time.
    Profiling,
    /// A `timer_create` timer.
    Posix(u32),
}

/// The clock a timer counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerClock {
    /// The uptime: the keeper thread expires these timers.
    Uptime,
    /// The wall clock: kept as the uptime is (the keeper expires them),
    /// but an absolute setting is a wall-clock time, which
    /// [`crate::IntervalTimers::arm`] turns into the uptime it falls at.
    Wall,
    /// The processor time of the timer's process: expired as the
    /// process's threads return to user mode ([`crate::IntervalTimers::account`]).
    ProcessCpu,
    /// The processor time of one thread of the process (by thread id).
    ThreadCpu(u64),
}

impl TimerClock {
    /// Whether it counts elapsed time (the keeper's timers), not
    /// processor time.
    pub fn is_elapsed_time(self) -> bool {
        matches!(self, TimerClock::Uptime | TimerClock::Wall)
    }
}

/// What an expiry sends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Notice {
    /// The signal; 0 for none (`SIGEV_NONE`: the timer is only read).
    pub signal: u8,
    /// The thread it goes to (`SIGEV_THREAD_ID`); `None`: the process.
    pub thread: Option<u64>,
    /// The value the signal carries (`sigev_value`).
    pub value: u64,
}

/// An armed timer: when it expires next and its period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timer {
    /// Reading of its clock (ns) at which it expires next.
    pub deadline_ns: u64,
    /// Period after that (ns); 0 for a one-shot timer.
    pub interval_ns: u64,
}

impl Timer {
    /// The timer armed when its clock reads `now_ns`: first expiry
    /// `value_ns` from now, then every `interval_ns`. `None` when
    /// `value_ns` is 0, which disarms (whatever the interval), as in Linux.
    pub fn starting(now_ns: u64, value_ns: u64, interval_ns: u64) -> Option<Timer> {
        (value_ns > 0).then(|| Timer {
            deadline_ns: now_ns.saturating_add(value_ns),
            interval_ns,
        })
    }

    /// The timer armed to expire when its clock reads `deadline_ns`
    /// (`TIMER_ABSTIME`), then every `interval_ns`; `None` for a zero
    /// deadline, which disarms.
    pub fn at(deadline_ns: u64, interval_ns: u64) -> Option<Timer> {
        (deadline_ns > 0).then_some(Timer {
            deadline_ns,
            interval_ns,
        })
    }

    /// How the timer reads when its clock reads `now_ns`: the time left
    /// (at least 1 ns, so an armed timer never reads as disarmed) and its
    /// period.
    pub fn setting_at(&self, now_ns: u64) -> Setting {
        Setting {
            value_ns: self.deadline_ns.saturating_sub(now_ns).max(DUE_READS_AS_NS),
            interval_ns: self.interval_ns,
        }
    }

    /// Expires it at `now_ns` (it is due): the periods that went by past
    /// the first (its overruns), and the timer that stays armed (the next
    /// period, in phase with the first deadline, as Linux's
    /// `hrtimer_forward`), or `None` for a one-shot timer.
    fn expire(&self, now_ns: u64) -> (u64, Option<Timer>) {
        if self.interval_ns == 0 {
            return (0, None);
        }
        let periods = (now_ns - self.deadline_ns) / self.interval_ns + 1;
        let next = periods
            .checked_mul(self.interval_ns)
            .and_then(|elapsed| self.deadline_ns.checked_add(elapsed));
        let rearmed = next.map(|deadline_ns| Timer {
            deadline_ns,
            interval_ns: self.interval_ns,
        });
        (periods - 1, rearmed)
    }
}

/// A timer as `getitimer` and `timer_gettime` report it: the time left
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

/// One timer of a process: its clock, what it sends, whether and how it
/// is armed, and the overruns of its last expiry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The clock it counts.
    pub clock: TimerClock,
    /// What its expiry sends.
    pub notice: Notice,
    /// Its setting; `None` while disarmed.
    pub armed: Option<Timer>,
    /// The periods its last expiry stood for past the first
    /// (`timer_getoverrun`).
    pub overrun: u64,
}

impl Entry {
    /// A disarmed timer on `clock` that sends `notice`.
    pub fn new(clock: TimerClock, notice: Notice) -> Entry {
        Entry {
            clock,
            notice,
            armed: None,
            overrun: 0,
        }
    }
}

/// An expiry to act on: whose timer, what it sends, and its overruns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expiry {
    /// The process.
    pub pid: u64,
    /// Which of its timers.
    pub slot: Slot,
    /// What it sends.
    pub notice: Notice,
    /// The periods it stands for past the first.
    pub overrun: u64,
}

/// Every process's timers, by process and slot.
#[derive(Debug, Default)]
pub struct Table {
    entries: BTreeMap<(u64, Slot), Entry>,
}

impl Table {
    /// No timer.
    pub const fn new() -> Table {
        Table {
            entries: BTreeMap::new(),
        }
    }

    /// Process `pid`'s timer in `slot`, if it has one.
    pub fn get(&self, pid: u64, slot: Slot) -> Option<&Entry> {
        self.entries.get(&(pid, slot))
    }

    /// Whether there is no timer at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Puts `entry` in process `pid`'s `slot`, replacing what was there.
    pub fn insert(&mut self, pid: u64, slot: Slot, entry: Entry) {
        self.entries.insert((pid, slot), entry);
    }

    /// Takes away process `pid`'s timer in `slot`; whether it had one.
    pub fn remove(&mut self, pid: u64, slot: Slot) -> bool {
        let removed = self.entries.remove(&(pid, slot)).is_some();
        self.shrink_if_empty();
        removed
    }

    /// Takes away the timers of process `pid` that `doomed` picks;
    /// whether there were any.
    pub fn remove_where(&mut self, pid: u64, doomed: impl Fn(Slot) -> bool) -> bool {
        let before = self.entries.len();
        self.entries
            .retain(|&(owner, slot), _| owner != pid || !doomed(slot));
        self.shrink_if_empty();
        self.entries.len() != before
    }

    /// Arms (or with `None` disarms) process `pid`'s timer in `slot`;
    /// returns the setting it replaces, or `None` if there is no such
    /// timer.
    pub fn arm(&mut self, pid: u64, slot: Slot, timer: Option<Timer>) -> Option<Option<Timer>> {
        let entry = self.entries.get_mut(&(pid, slot))?;
        entry.overrun = 0;
        Some(core::mem::replace(&mut entry.armed, timer))
    }

    /// The lowest id no `timer_create` timer of process `pid` has, if it
    /// has fewer than `limit`.
    pub fn free_posix_id(&self, pid: u64, limit: u32) -> Option<u32> {
        let mut next = 0u32;
        for (&(_, slot), _) in self
            .entries
            .range((pid, Slot::Posix(0))..=(pid, Slot::Posix(u32::MAX)))
        {
            if slot != Slot::Posix(next) {
                break;
            }
            next = next.checked_add(1)?;
        }
        (next < limit).then_some(next)
    }

    /// Whether any armed timer counts processor time.
    pub fn has_armed_cpu_timer(&self) -> bool {
        self.entries
            .values()
            .any(|entry| entry.armed.is_some() && !entry.clock.is_elapsed_time())
    }

    /// Expires the timers that are due: `now` gives the reading of a
    /// timer's clock for the timers to look at (`None`: skip it). Appends
    /// the expiries to `due`, earliest deadline first (ties by process and
    /// slot), re-arms the periodic timers and disarms the one-shot ones.
    pub fn expire(&mut self, now: impl Fn(u64, TimerClock) -> Option<u64>, due: &mut Vec<Expiry>) {
        let mut expired: Vec<(u64, (u64, Slot), u64)> = Vec::new();
        for (&key, entry) in &self.entries {
            let (Some(timer), Some(now_ns)) = (entry.armed, now(key.0, entry.clock)) else {
                continue;
            };
            if timer.deadline_ns <= now_ns {
                expired.push((timer.deadline_ns, key, now_ns));
            }
        }
        expired.sort_unstable();
        for (_, (pid, slot), now_ns) in expired {
            let Some(entry) = self.entries.get_mut(&(pid, slot)) else {
                continue;
            };
            let Some(timer) = entry.armed else {
                continue;
            };
            let (overrun, rearmed) = timer.expire(now_ns);
            entry.armed = rearmed;
            entry.overrun = overrun;
            due.push(Expiry {
                pid,
                slot,
                notice: entry.notice,
                overrun,
            });
        }
    }

    /// The earliest deadline of the armed elapsed-time timers (the
    /// keeper's).
    pub fn next_uptime_deadline(&self) -> Option<u64> {
        self.entries
            .values()
            .filter(|entry| entry.clock.is_elapsed_time())
            .filter_map(|entry| entry.armed.map(|timer| timer.deadline_ns))
            .min()
    }

    fn shrink_if_empty(&mut self) {
        if self.entries.is_empty() {
            // An emptied map keeps its root node; a fresh one holds no
            // memory, so the kernel's heap readings in tests stay level.
            self.entries = BTreeMap::new();
        }
    }
}
