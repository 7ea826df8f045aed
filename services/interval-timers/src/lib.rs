//! Every process's timers: `alarm` and `setitimer`/`getitimer`'s three
//! (`ITIMER_REAL` on elapsed time, `ITIMER_VIRTUAL` and `ITIMER_PROF` on
//! the process's processor time), and the ones `timer_create` makes, on
//! the uptime or on a process's or thread's processor time. When a timer
//! expires its process (or one thread of it) gets the timer's signal,
//! and a timer with an interval is armed again.
//!
//! The pieces:
//! - [`Table`], [`Entry`], [`Timer`], [`Setting`]: the timers as plain
//!   data and their arithmetic (arming, the time left, expiry in
//!   deadline order, re-arming and overruns), with the time passed in,
//!   so it is tested on the host.
//! - [`IntervalTimers`]: the table under a lock, the calls the system
//!   calls make, [`IntervalTimers::keep`], the loop of the one thread
//!   that expires the uptime timers, and [`IntervalTimers::account`],
//!   which expires a process's processor-time timers as its threads
//!   return to user mode (where Linux checks them, on the tick).
//! - [`Host`]: what that needs from the kernel (the clocks, sending the
//!   signals, the keeper's sleep and its wake-up), which the kernel
//!   implements at boot; the kernel also runs the keeper's thread.
//!
//! The keeper sleeps until the earliest deadline, or without a deadline
//! while no timer is armed; arming a timer wakes it, so a timer armed for
//! sooner than the keeper's deadline is not late. Processor time only
//! grows while a thread runs, and a running thread returns to user mode
//! at least every tick: checking there needs no thread and no polling.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

mod table;
#[cfg(test)]
mod tests;

use core::sync::atomic::{AtomicBool, Ordering};

use alloc::vec::Vec;

pub use table::{Entry, Expiry, Notice, Setting, Slot, Table, Timer, TimerClock};

/// How many `timer_create` timers a process may have at once: Linux
/// bounds them by the queued-signal limit (`RLIMIT_SIGPENDING`), which is
/// about this for a small machine's first user.
pub const POSIX_TIMERS_PER_PROCESS: u32 = 4096;

/// What a due interval timer reads as: 1 µs, the least a `struct
/// timeval` holds.
const DUE_INTERVAL_TIMER_READS_AS_NS: u64 = 1_000;

/// What the timers need from the kernel.
pub trait Host: Send + Sync {
    /// The uptime now (ns): the clock the keeper's deadlines are kept in.
    fn now_ns(&self) -> u64;
    /// What to add to an uptime to get the wall-clock time (ns).
    fn epoch_offset_ns(&self) -> u64;
    /// Process `pid`'s processor time (ns) for `clock`
    /// ([`TimerClock::ProcessCpu`] or [`TimerClock::ThreadCpu`]); `None`
    /// if the process or thread is gone.
    fn cpu_ns(&self, pid: u64, clock: TimerClock) -> Option<u64>;
    /// Sends what an expiry sends; false if its process (or thread) no
    /// longer exists (the timer is then disarmed).
    fn notify(&self, expiry: &Expiry) -> bool;
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

/// Why a timer could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooManyTimers;

/// Every process's timers, and the keeper that expires them.
pub struct IntervalTimers<H> {
    host: H,
    state: spin::Mutex<State>,
    /// Whether some armed timer counts processor time: while not, the
    /// return to user mode ([`IntervalTimers::account`]) costs one load.
    has_cpu_timers: AtomicBool,
}

impl<H: Host> IntervalTimers<H> {
    /// No timer; `host` is the kernel's side.
    pub const fn new(host: H) -> IntervalTimers<H> {
        IntervalTimers {
            host,
            state: spin::Mutex::new(State {
                table: Table::new(),
                sets: 0,
            }),
            has_cpu_timers: AtomicBool::new(false),
        }
    }

    /// The reading of `clock` for process `pid` now.
    fn now_on(&self, pid: u64, clock: TimerClock) -> Option<u64> {
        if clock.is_elapsed_time() {
            Some(self.host.now_ns())
        } else {
            self.host.cpu_ns(pid, clock)
        }
    }

    /// Process `pid`'s timer in `slot` as it reads now (all zeros when
    /// disarmed); `None` if it has no such timer.
    pub fn get(&self, pid: u64, slot: Slot) -> Option<Setting> {
        let entry = *self.state.lock().table.get(pid, slot)?;
        Some(self.setting_now(pid, entry.clock, entry.armed))
    }

    /// An interval timer (`getitimer`): as [`IntervalTimers::get`], all
    /// zeros for one never set, and a due one reads as 1 µs left (what
    /// `struct timeval` can tell from zero, as Linux's
    /// `itimer_get_remtime`).
    pub fn get_interval(&self, pid: u64, slot: Slot) -> Setting {
        let mut setting = self.get(pid, slot).unwrap_or_default();
        if setting.value_ns != 0 {
            setting.value_ns = setting.value_ns.max(DUE_INTERVAL_TIMER_READS_AS_NS);
        }
        setting
    }

    /// `setitimer`: arms process `pid`'s interval timer in `slot` (one of
    /// `setitimer`'s three, which counts `clock` and sends `notice`) to
    /// expire `value_ns` from now and then every `interval_ns` (a zero
    /// `value_ns` disarms it); returns the setting it replaces.
    pub fn set_interval(
        &self,
        pid: u64,
        slot: Slot,
        clock: TimerClock,
        notice: Notice,
        value_ns: u64,
        interval_ns: u64,
    ) -> Setting {
        let now = self.now_on(pid, clock).unwrap_or(0);
        let previous = {
            let mut state = self.state.lock();
            let previous = state.table.get(pid, slot).and_then(|entry| entry.armed);
            let mut entry = Entry::new(clock, notice);
            entry.armed = Timer::starting(now, value_ns, interval_ns);
            state.table.insert(pid, slot, entry);
            previous
        };
        self.changed();
        previous.map_or(Setting::default(), |timer| timer.setting_at(now))
    }

    /// `alarm`: `notice` (`SIGALRM`) to process `pid` in `seconds` (0
    /// cancels); returns the seconds the previous alarm had left, rounded
    /// up.
    pub fn alarm(&self, pid: u64, seconds: u32, notice: Notice) -> u64 {
        let value_ns = u64::from(seconds).saturating_mul(1_000_000_000);
        self.set_interval(pid, Slot::Real, TimerClock::Uptime, notice, value_ns, 0)
            .seconds_left()
    }

    /// `timer_create`: a disarmed timer of process `pid` on `clock` that
    /// sends what `notice` answers for its id (the lowest the process
    /// has free).
    pub fn create(
        &self,
        pid: u64,
        clock: TimerClock,
        notice: impl FnOnce(u32) -> Notice,
    ) -> Result<u32, TooManyTimers> {
        let mut state = self.state.lock();
        let id = state
            .table
            .free_posix_id(pid, POSIX_TIMERS_PER_PROCESS)
            .ok_or(TooManyTimers)?;
        let entry = Entry::new(clock, notice(id));
        state.table.insert(pid, Slot::Posix(id), entry);
        Ok(id)
    }

    /// `timer_delete`: whether process `pid` had timer `id`.
    pub fn delete(&self, pid: u64, id: u32) -> bool {
        let removed = self.state.lock().table.remove(pid, Slot::Posix(id));
        if removed {
            self.changed();
        }
        removed
    }

    /// `timer_settime`: arms process `pid`'s timer in `slot` to expire
    /// `value_ns` from now (or, if `is_absolute`, when its clock reads
    /// `value_ns`), then every `interval_ns`; a zero `value_ns` disarms
    /// it. Returns the setting it replaces; `None` if there is no such
    /// timer.
    pub fn arm(
        &self,
        pid: u64,
        slot: Slot,
        value_ns: u64,
        interval_ns: u64,
        is_absolute: bool,
    ) -> Option<Setting> {
        let clock = self.state.lock().table.get(pid, slot)?.clock;
        let now = self.now_on(pid, clock).unwrap_or(0);
        // An absolute time already past expires at once, as on Linux.
        let timer = if is_absolute && clock == TimerClock::Wall && value_ns != 0 {
            // The uptime it falls at; a time before boot is past (not
            // zero, which would disarm).
            let uptime = value_ns.saturating_sub(self.host.epoch_offset_ns());
            Timer::at(uptime.max(1), interval_ns)
        } else if is_absolute {
            Timer::at(value_ns, interval_ns)
        } else {
            Timer::starting(now, value_ns, interval_ns)
        };
        let previous = self.state.lock().table.arm(pid, slot, timer)?;
        self.changed();
        if timer.is_some_and(|timer| timer.deadline_ns <= now) && !clock.is_elapsed_time() {
            // Due already: processor time need not move for it to fire.
            self.account(pid);
        }
        Some(previous.map_or(Setting::default(), |timer| timer.setting_at(now)))
    }

    /// `timer_getoverrun`: the periods process `pid`'s timer `id` let go
    /// by past the first at its last expiry; `None` if there is no such
    /// timer.
    pub fn overrun(&self, pid: u64, id: u32) -> Option<u64> {
        Some(self.state.lock().table.get(pid, Slot::Posix(id))?.overrun)
    }

    /// Process `pid` ended: its timers go.
    pub fn process_ended(&self, pid: u64) {
        if self.state.lock().table.remove_where(pid, |_| true) {
            self.changed();
        }
    }

    /// Process `pid` runs a new program (`execve`): the timers
    /// `timer_create` made go, the interval timers stay, as on Linux.
    pub fn program_replaced(&self, pid: u64) {
        let posix = |slot| matches!(slot, Slot::Posix(_));
        if self.state.lock().table.remove_where(pid, posix) {
            self.changed();
        }
    }

    /// Whether some armed timer counts processor time (one load): what
    /// the return to user mode asks before it looks for its process.
    pub fn has_cpu_timers(&self) -> bool {
        self.has_cpu_timers.load(Ordering::Relaxed)
    }

    /// A thread of process `pid` returns to user mode: its processor-time
    /// timers that are due expire. One load while no such timer is armed.
    pub fn account(&self, pid: u64) {
        if !self.has_cpu_timers.load(Ordering::Relaxed) {
            return;
        }
        let mut due = Vec::new();
        {
            let mut state = self.state.lock();
            let now = |owner: u64, clock: TimerClock| {
                (owner == pid && !clock.is_elapsed_time())
                    .then(|| self.host.cpu_ns(owner, clock))
                    .flatten()
            };
            state.table.expire(now, &mut due);
            self.has_cpu_timers
                .store(state.table.has_armed_cpu_timer(), Ordering::Relaxed);
        }
        self.notify_all(&due);
    }

    /// The keeper: expires the due uptime timers, sends their signals,
    /// and sleeps until the next deadline, for ever. The kernel runs it
    /// on a thread of its own.
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
            let uptime = |_, clock: TimerClock| clock.is_elapsed_time().then_some(now);
            state.table.expire(uptime, &mut due);
            (state.table.next_uptime_deadline(), state.sets)
        };
        self.notify_all(&due);
        (next, sets)
    }

    /// Sends the expiries' signals, with the table unlocked (sending one
    /// may run the process, which may set its timer); a timer whose
    /// process is gone is disarmed.
    fn notify_all(&self, due: &[Expiry]) {
        for expiry in due {
            if expiry.notice.signal != 0 && !self.host.notify(expiry) {
                self.state.lock().table.arm(expiry.pid, expiry.slot, None);
            }
        }
    }

    /// Whether a timer was set (or disarmed) since the keeper saw `sets`.
    fn set_since(&self, sets: u64) -> bool {
        self.state.lock().sets != sets
    }

    /// A timer was set, disarmed or removed: counted for the keeper,
    /// which is woken, and the processor-time flag brought up to date.
    fn changed(&self) {
        {
            let mut state = self.state.lock();
            state.sets = state.sets.wrapping_add(1);
            self.has_cpu_timers
                .store(state.table.has_armed_cpu_timer(), Ordering::Relaxed);
        }
        self.host.wake_keeper();
    }

    fn setting_now(&self, pid: u64, clock: TimerClock, timer: Option<Timer>) -> Setting {
        let Some(timer) = timer else {
            return Setting::default();
        };
        let now = self.now_on(pid, clock).unwrap_or(timer.deadline_ns);
        timer.setting_at(now)
    }
}
