//! Time: `clock_gettime`, `clock_getres`, `clock_settime`,
//! `gettimeofday`, `settimeofday`, `time`, `nanosleep`,
//! `clock_nanosleep`, and the real-time interval timer (`alarm`,
//! `setitimer`, `getitimer`).
//!
//! The wall clock (`CLOCK_REALTIME`) is `hal::rtc`'s: the CMOS clock's
//! date at boot carried forward by the uptime; the other clocks read the
//! uptime.

use linux::{credentials::CAP_SYS_TIME, process_args, process_args::Clock};
use linux_abi::{
    time::{Itimerval, Timespec, Timeval, ITIMER_REAL},
    Errno,
};

/// What clock `kind` reads now, in nanoseconds.
fn now(kind: Clock) -> u64 {
    match kind {
        Clock::Wall => hal::rtc::realtime_ns(),
        Clock::Uptime => hal::timer::uptime_ns(),
    }
}

/// `clock_gettime(clock, timespec)`: the clock's time in a `struct
/// timespec`.
pub(crate) fn clock_gettime(clock: u64, timespec: u64) -> i64 {
    let kind = match process_args::clock(clock) {
        Ok(kind) => kind,
        Err(error) => return error.as_negative(),
    };
    let now = Timespec::from_nanoseconds(now(kind));
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
/// any other clock or a malformed time, `EPERM` without `CAP_SYS_TIME`.
pub(crate) fn clock_settime(strand: u64, clock: u64, timespec: u64) -> i64 {
    if let Err(error) = process_args::clock(clock) {
        return error.as_negative();
    }
    let ns = match read_timespec(timespec) {
        Ok(ns) => ns,
        Err(error) => return error,
    };
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
            let left = deadline - now;
            if remaining != 0 {
                let left = Timespec::from_nanoseconds(left);
                let _ = hal::user::copy_to_user(remaining, &left.to_bytes());
            }
            return Errno::EINTR.as_negative();
        }
        sched::block_prepared("sleep", Some(deadline));
    }
}

/// `nanosleep(req, rem)`.
pub(crate) fn nanosleep(request: u64, remaining: u64) -> i64 {
    match read_timespec(request) {
        Ok(ns) => sleep_until(hal::timer::uptime_ns().saturating_add(ns), remaining),
        Err(error) => error,
    }
}

/// `clock_nanosleep(clock, flags, req, rem)`: relative, or absolute
/// with `TIMER_ABSTIME` (a wall-clock time is turned into the uptime it
/// falls at, as the clock reads now).
pub(crate) fn clock_nanosleep(clock: u64, flags: u64, request: u64, remaining: u64) -> i64 {
    let (kind, absolute) = match process_args::sleep_clock(clock, flags) {
        Ok(decoded) => decoded,
        Err(error) => return error.as_negative(),
    };
    let ns = match read_timespec(request) {
        Ok(ns) => ns,
        Err(error) => return error,
    };
    if !absolute {
        return sleep_until(hal::timer::uptime_ns().saturating_add(ns), remaining);
    }
    match kind {
        Clock::Wall => sleep_until(ns.saturating_sub(hal::rtc::epoch_offset_ns()), 0),
        Clock::Uptime => sleep_until(ns, 0),
    }
}

/// A `struct timeval` as nanoseconds: `EINVAL` for a negative or
/// malformed one.
fn ns_of_timeval(value: Timeval) -> Result<u64, i64> {
    value.to_nanoseconds().ok_or(Errno::EINVAL.as_negative())
}

/// A timer's setting as `struct itimerval`.
fn itimerval_of(setting: interval_timers::Setting) -> Itimerval {
    Itimerval {
        interval: Timeval::from_nanoseconds(setting.interval_ns),
        value: Timeval::from_nanoseconds(setting.value_ns),
    }
}

/// `getitimer(which, value)`.
pub(crate) fn getitimer(strand: u64, which: u64, value: u64) -> i64 {
    let Some(pid) = crate::threads::process_of(strand) else {
        return Errno::ESRCH.as_negative();
    };
    if which as i32 != ITIMER_REAL as i32 {
        return Errno::EINVAL.as_negative();
    }
    match hal::user::copy_to_user(
        value,
        &itimerval_of(crate::itimer::timers().get(pid)).to_bytes(),
    ) {
        Ok(()) => 0,
        Err(_) => Errno::EFAULT.as_negative(),
    }
}

/// `setitimer(which, new, old)`: arms (or, with a zero value, disarms)
/// the process's real-time timer; the previous one is written to `old`.
pub(crate) fn setitimer(strand: u64, which: u64, new: u64, old: u64) -> i64 {
    let Some(pid) = crate::threads::process_of(strand) else {
        return Errno::ESRCH.as_negative();
    };
    if which as i32 != ITIMER_REAL as i32 {
        return Errno::EINVAL.as_negative();
    }
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
    let timers = crate::itimer::timers();
    let previous = if new == 0 {
        timers.get(pid)
    } else {
        timers.set(pid, value, interval)
    };
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
    crate::itimer::timers().alarm(pid, seconds as u32) as i64
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
