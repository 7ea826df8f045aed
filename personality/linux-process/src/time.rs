//! Time: `clock_gettime`, `gettimeofday`, `time`, `nanosleep`,
//! `clock_nanosleep`, and the real-time interval timer (`alarm`,
//! `setitimer`, `getitimer`).

use linux::process_args;
use linux_abi::{
    time::{Itimerval, Timespec, Timeval, ITIMER_REAL},
    Errno,
};

/// `clock_gettime(clock, timespec)`: every clock reads the time since boot
/// (there is no real-time clock yet), in a `struct timespec`.
pub(crate) fn clock_gettime(clock: u64, timespec: u64) -> i64 {
    if let Err(error) = process_args::clock(clock) {
        return error.as_negative();
    }
    let now = Timespec::from_nanoseconds(hal::timer::uptime_ns());
    match hal::user::copy_to_user(timespec, &now.to_bytes()) {
        Ok(()) => 0,
        Err(_) => Errno::EFAULT.as_negative(),
    }
}

/// `time(tloc)`: seconds since boot (no real-time clock yet), also stored
/// at `tloc` unless it is null.
pub(crate) fn time(tloc: u64) -> i64 {
    let seconds = hal::timer::uptime_ns() / 1_000_000_000;
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

/// `clock_nanosleep(clock, flags, req, rem)`: relative, or absolute with
/// `TIMER_ABSTIME` (every clock reads the time since boot, as
/// `clock_gettime` does).
pub(crate) fn clock_nanosleep(clock: u64, flags: u64, request: u64, remaining: u64) -> i64 {
    let absolute = match process_args::sleep_is_absolute(clock, flags) {
        Ok(absolute) => absolute,
        Err(error) => return error.as_negative(),
    };
    let ns = match read_timespec(request) {
        Ok(ns) => ns,
        Err(error) => return error,
    };
    if absolute {
        sleep_until(ns, 0)
    } else {
        sleep_until(hal::timer::uptime_ns().saturating_add(ns), remaining)
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

/// `gettimeofday(tv, tz)`: the time since boot (as `clock_gettime`) in
/// a `struct timeval`; the time zone, if asked, is UTC (zeros).
pub(crate) fn gettimeofday(timeval: u64, timezone: u64) -> i64 {
    let now = Timeval::from_nanoseconds(hal::timer::uptime_ns());
    if timeval != 0 && hal::user::copy_to_user(timeval, &now.to_bytes()).is_err() {
        return Errno::EFAULT.as_negative();
    }
    if timezone != 0 && hal::user::copy_to_user(timezone, &[0u8; 8]).is_err() {
        return Errno::EFAULT.as_negative();
    }
    0
}
