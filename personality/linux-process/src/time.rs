//! Time: `clock_gettime`, `clock_getres`, `clock_settime`,
//! `gettimeofday`, `settimeofday`, `time`, `nanosleep`,
//! `clock_nanosleep`, and the real-time interval timer (`alarm`,
//! `setitimer`, `getitimer`).
//!
//! The wall clock (`CLOCK_REALTIME`) is `hal::rtc`'s: the CMOS clock's
//! date at boot carried forward by the uptime; the processor-time clocks
//! read the scheduler's accounting; the other clocks read the uptime.

use interval_timers::{Setting, Slot, TimerClock};
use linux::{credentials::CAP_SYS_TIME, process_args, process_args::Clock};
use linux_abi::{
    signal::{SIGALRM, SIGPROF, SIGVTALRM},
    time::{Itimerval, Timespec, Timeval, ITIMER_PROF, ITIMER_REAL, ITIMER_VIRTUAL},
    Errno,
};

/// What clock `kind` reads now for the calling thread `strand`, in
/// nanoseconds.
pub(crate) fn now(strand: u64, kind: Clock) -> u64 {
    match kind {
        Clock::Wall => hal::rtc::realtime_ns(),
        Clock::Uptime => hal::timer::uptime_ns(),
        Clock::ProcessCpu => process::of_strand(strand).map_or(0, |process| process.cpu_ns()),
        Clock::ThreadCpu => sched::thread_cpu_ns(sched::ThreadId(strand)).unwrap_or(0),
    }
}

/// `clock_gettime(clock, timespec)`: the clock's time in a `struct
/// timespec`.
pub(crate) fn clock_gettime(strand: u64, clock: u64, timespec: u64) -> i64 {
    let kind = match process_args::clock(clock) {
        Ok(kind) => kind,
        Err(error) => return error.as_negative(),
    };
    let now = Timespec::from_nanoseconds(now(strand, kind));
    match hal::user::copy_to_user(timespec, &now.to_bytes()) {
        Ok(()) => 0,
        Err(_) => Errno::EFAULT.as_negative(),
    }
}

/// `clock_getres(clock, res)`: the clock's resolution, written to `res`
/// unless it is null.
pub(crate) fn clock_getres(clock: u64, resolution: u64) -> i64 {
    let ns = match process_args::clock_resolution(clock) {
        Ok(ns) => ns,
        Err(error) => return error.as_negative(),
    };
    let value = Timespec::from_nanoseconds(ns);
    if resolution != 0 && hal::user::copy_to_user(resolution, &value.to_bytes()).is_err() {
        return Errno::EFAULT.as_negative();
    }
    0
}

/// Whether the calling thread's process may set the time
/// (`CAP_SYS_TIME`).
fn may_set_time(strand: u64) -> bool {
    crate::threads::process_of(strand)
        .and_then(|pid| crate::personality()?.files(pid))
        .is_some_and(|files| files.credentials().capable(CAP_SYS_TIME))
}

/// `clock_settime(clock, timespec)`: sets the wall clock; `EINVAL` for
/// another clock or a malformed time, `EPERM` without `CAP_SYS_TIME` or
/// for a processor-time clock, which nobody sets (Linux's
/// `posix_cpu_clock_set`).
pub(crate) fn clock_settime(strand: u64, clock: u64, timespec: u64) -> i64 {
    let kind = match process_args::clock(clock) {
        Ok(kind) => kind,
        Err(error) => return error.as_negative(),
    };
    let ns = match read_timespec(timespec) {
        Ok(ns) => ns,
        Err(error) => return error,
    };
    if matches!(kind, Clock::ProcessCpu | Clock::ThreadCpu) {
        return Errno::EPERM.as_negative();
    }
    if clock != process_args::CLOCK_REALTIME {
        return Errno::EINVAL.as_negative();
    }
    if !may_set_time(strand) {
        return Errno::EPERM.as_negative();
    }
    hal::rtc::set_realtime_ns(ns);
    0
}

/// `settimeofday(tv, tz)`: sets the wall clock from `tv` (if not null);
/// the time zone is accepted and not kept (every time here is UTC).
pub(crate) fn settimeofday(strand: u64, timeval: u64, timezone: u64) -> i64 {
    let mut ns = None;
    if timeval != 0 {
        let mut bytes = [0u8; Timeval::BYTES];
        if hal::user::copy_from_user(&mut bytes, timeval).is_err() {
            return Errno::EFAULT.as_negative();
        }
        match ns_of_timeval(Timeval::from_bytes(&bytes)) {
            Ok(value) => ns = Some(value),
            Err(error) => return error,
        }
    }
    if timezone != 0 {
        let mut bytes = [0u8; 8];
        if hal::user::copy_from_user(&mut bytes, timezone).is_err() {
            return Errno::EFAULT.as_negative();
        }
    }
    if !may_set_time(strand) {
        return Errno::EPERM.as_negative();
    }
    if let Some(ns) = ns {
        hal::rtc::set_realtime_ns(ns);
    }
    0
}

/// `time(tloc)`: seconds since the epoch, also stored at `tloc` unless
/// it is null.
pub(crate) fn time(tloc: u64) -> i64 {
    let seconds = hal::rtc::realtime_ns() / 1_000_000_000;
    if tloc != 0 && hal::user::copy_to_user(tloc, &seconds.to_le_bytes()).is_err() {
        return Errno::EFAULT.as_negative();
    }
    seconds as i64
}

/// Reads a `struct timespec` as nanoseconds: `EFAULT`, or `EINVAL` for a
/// negative or malformed one.
fn read_timespec(address: u64) -> Result<u64, i64> {
    let mut value = [0u8; Timespec::BYTES];
    hal::user::copy_from_user(&mut value, address).map_err(|_| Errno::EFAULT.as_negative())?;
    Timespec::from_bytes(&value)
        .to_nanoseconds()
        .ok_or(Errno::EINVAL.as_negative())
}

/// Writes what is left of an interrupted sleep to `remaining` unless it
/// is null: `EINTR`, or `EFAULT` if it cannot be written (as Linux's
/// `nanosleep_copyout`).
fn interrupted_with(left_ns: u64, remaining: u64) -> i64 {
    if remaining != 0 {
        let left = Timespec::from_nanoseconds(left_ns);
        if hal::user::copy_to_user(remaining, &left.to_bytes()).is_err() {
            return Errno::EFAULT.as_negative();
        }
    }
    Errno::EINTR.as_negative()
}

/// Sleeps until uptime `deadline` (ns), or until a signal to take or a
/// kill wakes it (their senders wake every thread of the process):
/// `EINTR` then, with what was left written to `remaining` unless it is
/// null.
fn sleep_until(deadline: u64, remaining: u64) -> i64 {
    loop {
        sched::prepare_to_wait();
        let now = hal::timer::uptime_ns();
        if now >= deadline {
            return 0;
        }
        if crate::signals::interrupted() {
            return interrupted_with(deadline - now, remaining);
        }
        sched::block_prepared("sleep", Some(deadline));
    }
}

/// Sleeps until the calling thread's process has run `deadline` (ns) of
/// processor time (`CLOCK_PROCESS_CPUTIME_ID`), or until a signal, as
/// [`sleep_until`]. Processor time grows no faster than the uptime (one
/// processor), so the sleep blocks for at least what is missing, and
/// looks again when that is over: one wake-up while the process's other
/// threads run, a few while they are blocked too.
fn sleep_until_cpu(strand: u64, deadline: u64, remaining: u64) -> i64 {
    loop {
        sched::prepare_to_wait();
        let used = now(strand, Clock::ProcessCpu);
        if used >= deadline {
            return 0;
        }
        if crate::signals::interrupted() {
            return interrupted_with(deadline - used, remaining);
        }
        let until = hal::timer::uptime_ns().saturating_add(deadline - used);
        sched::block_prepared("sleep", Some(until));
    }
}

/// `nanosleep(req, rem)`.
pub(crate) fn nanosleep(request: u64, remaining: u64) -> i64 {
    match read_timespec(request) {
        Ok(ns) => sleep_until(hal::timer::uptime_ns().saturating_add(ns), remaining),
        Err(error) => error,
    }
}

/// `clock_nanosleep(clock, flags, req, rem)`, its checks in Linux's
/// order: the clock (`EINVAL`, `EOPNOTSUPP`), `req` (`EFAULT`,
/// `EINVAL`). Relative, or absolute with `TIMER_ABSTIME` (a wall-clock
/// time is turned into the uptime it falls at, as the clock reads now);
/// only a relative sleep writes what is left to `rem`.
pub(crate) fn clock_nanosleep(
    strand: u64,
    clock: u64,
    flags: u64,
    request: u64,
    remaining: u64,
) -> i64 {
    let (kind, absolute) = match process_args::sleep_clock(clock, flags) {
        Ok(decoded) => decoded,
        Err(error) => return error.as_negative(),
    };
    let ns = match read_timespec(request) {
        Ok(ns) => ns,
        Err(error) => return error,
    };
    let remaining = if absolute { 0 } else { remaining };
    match (kind, absolute) {
        (Clock::ProcessCpu | Clock::ThreadCpu, true) => sleep_until_cpu(strand, ns, 0),
        (Clock::ProcessCpu | Clock::ThreadCpu, false) => {
            let deadline = now(strand, Clock::ProcessCpu).saturating_add(ns);
            sleep_until_cpu(strand, deadline, remaining)
        }
        (_, false) => sleep_until(hal::timer::uptime_ns().saturating_add(ns), remaining),
        (Clock::Wall, true) => sleep_until(ns.saturating_sub(hal::rtc::epoch_offset_ns()), 0),
        (Clock::Uptime, true) => sleep_until(ns, 0),
    }
}

/// A `struct timeval` as nanoseconds: `EINVAL` for a negative or
/// malformed one.
fn ns_of_timeval(value: Timeval) -> Result<u64, i64> {
    value.to_nanoseconds().ok_or(Errno::EINVAL.as_negative())
}

/// A timer's setting as `struct itimerval`.
fn itimerval_of(setting: Setting) -> Itimerval {
    Itimerval {
        interval: Timeval::from_nanoseconds(setting.interval_ns),
        value: Timeval::from_nanoseconds(setting.value_ns),
    }
}

/// `setitimer`'s `which` (an `int`): the timer's slot, the clock it
/// counts and the signal it sends; `EINVAL` for another.
fn interval_timer(which: u64) -> Result<(Slot, TimerClock, u8), i64> {
    match u64::from(which as u32) {
        ITIMER_REAL => Ok((Slot::Real, TimerClock::Uptime, SIGALRM)),
        ITIMER_VIRTUAL => Ok((Slot::Virtual, TimerClock::ProcessCpu, SIGVTALRM)),
        ITIMER_PROF => Ok((Slot::Profiling, TimerClock::ProcessCpu, SIGPROF)),
        _ => Err(Errno::EINVAL.as_negative()),
    }
}

/// `getitimer(which, value)`: `EINVAL` for no such timer, then `EFAULT`.
pub(crate) fn getitimer(strand: u64, which: u64, value: u64) -> i64 {
    let Some(pid) = crate::threads::process_of(strand) else {
        return Errno::ESRCH.as_negative();
    };
    let (slot, _, _) = match interval_timer(which) {
        Ok(timer) => timer,
        Err(error) => return error,
    };
    let setting = crate::itimer::timers().get_interval(pid, slot);
    match hal::user::copy_to_user(value, &itimerval_of(setting).to_bytes()) {
        Ok(()) => 0,
        Err(_) => Errno::EFAULT.as_negative(),
    }
}

/// `setitimer(which, new, old)`, its checks in Linux's order: `new`
/// (`EFAULT`, `EINVAL` for a malformed time; a null one disarms), then
/// `which` (`EINVAL`). Arms (or, with a zero value, disarms) the
/// process's timer; the previous setting goes to `old` unless it is null
/// (`EFAULT` if it cannot, the new setting made all the same, as on
/// Linux).
pub(crate) fn setitimer(strand: u64, which: u64, new: u64, old: u64) -> i64 {
    let Some(pid) = crate::threads::process_of(strand) else {
        return Errno::ESRCH.as_negative();
    };
    let mut bytes = [0u8; Itimerval::BYTES];
    if new != 0 && hal::user::copy_from_user(&mut bytes, new).is_err() {
        return Errno::EFAULT.as_negative();
    }
    let requested = Itimerval::from_bytes(&bytes);
    let (interval, value) = match (
        ns_of_timeval(requested.interval),
        ns_of_timeval(requested.value),
    ) {
        (Ok(interval), Ok(value)) => (interval, value),
        (Err(error), _) | (_, Err(error)) => return error,
    };
    let (slot, clock, signal) = match interval_timer(which) {
        Ok(timer) => timer,
        Err(error) => return error,
    };
    let notice = crate::itimer::interval_notice(signal);
    let previous = crate::itimer::timers().set_interval(pid, slot, clock, notice, value, interval);
    if old != 0 && hal::user::copy_to_user(old, &itimerval_of(previous).to_bytes()).is_err() {
        return Errno::EFAULT.as_negative();
    }
    0
}

/// `alarm(seconds)`: `SIGALRM` after that many seconds (0 cancels);
/// returns the seconds the previous alarm had left, rounded up.
pub(crate) fn alarm(strand: u64, seconds: u64) -> i64 {
    let Some(pid) = crate::threads::process_of(strand) else {
        return Errno::ESRCH.as_negative();
    };
    let notice = crate::itimer::interval_notice(SIGALRM);
    crate::itimer::timers().alarm(pid, seconds as u32, notice) as i64
}

/// `gettimeofday(tv, tz)`: the wall clock in a `struct timeval`; the
/// time zone, if asked, is UTC (zeros).
pub(crate) fn gettimeofday(timeval: u64, timezone: u64) -> i64 {
    let now = Timeval::from_nanoseconds(hal::rtc::realtime_ns());
    if timeval != 0 && hal::user::copy_to_user(timeval, &now.to_bytes()).is_err() {
        return Errno::EFAULT.as_negative();
    }
    if timezone != 0 && hal::user::copy_to_user(timezone, &[0u8; 8]).is_err() {
        return Errno::EFAULT.as_negative();
    }
    0
}
