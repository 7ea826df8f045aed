//! POSIX per-process timers: `timer_create`, `timer_settime`,
//! `timer_gettime`, `timer_getoverrun`, `timer_delete`
//! (timer_create(2)). The timers are the interval-timer service's
//! (`crate::itimer`); the `struct sigevent` checks are
//! `linux::timer_args`'s. Each call checks its arguments in Linux's
//! order (`kernel/time/posix-timers.c`).

use interval_timers::{Notice, Slot, TimerClock};
use linux::{
    process_args::{self, Clock},
    timer_args::{timer_notice, TimerNotice, DEFAULT_TIMER_NOTICE},
};
use linux_abi::{
    time::{Itimerspec, Sigevent, Timespec, TIMER_ABSTIME},
    Errno,
};

/// The calling thread's process and thread ids.
fn caller(strand: u64) -> Result<(u64, u64), i64> {
    process::ids_of_strand(strand).ok_or(Errno::ESRCH.as_negative())
}

/// A timer id as the calls take it (`timer_t`, an `int`): the slot, if
/// it can name one.
fn slot_of(id: u64) -> Result<Slot, i64> {
    u32::try_from(id as i32)
        .map(Slot::Posix)
        .map_err(|_| Errno::EINVAL.as_negative())
}

/// What the service's timer sends for a decoded notice, for timer `id`.
fn service_notice(notice: TimerNotice, id: u32) -> Notice {
    match notice {
        TimerNotice::Nothing => Notice::default(),
        TimerNotice::Signal {
            signal,
            thread,
            value,
        } => Notice {
            signal,
            thread,
            // Without a `struct sigevent`, the signal carries the id.
            value: value.unwrap_or(u64::from(id)),
        },
    }
}

/// `timer_create(clock, sevp, timerid)`: `sevp` (`EFAULT`), the clock
/// (`EINVAL`, `EOPNOTSUPP` for the raw and coarse clocks), too many
/// timers (`EAGAIN`), the notification (`EINVAL`), then `timerid`
/// (`EFAULT`, the timer undone). A null `sevp` is `SIGALRM` to the
/// process carrying the timer's id.
pub(crate) fn timer_create(strand: u64, clock: u64, event: u64, timer_id: u64) -> i64 {
    let (pid, tid) = match caller(strand) {
        Ok(ids) => ids,
        Err(error) => return error,
    };
    let event = if event == 0 {
        None
    } else {
        let mut bytes = [0u8; Sigevent::BYTES];
        if hal::user::copy_from_user(&mut bytes, event).is_err() {
            return Errno::EFAULT.as_negative();
        }
        Some(Sigevent::from_bytes(&bytes))
    };
    let timer_clock = match process_args::timer_clock(clock) {
        Ok(Clock::Wall) => TimerClock::Wall,
        Ok(Clock::Uptime) => TimerClock::Uptime,
        Ok(Clock::ProcessCpu) => TimerClock::ProcessCpu,
        // The calling thread's own processor time.
        Ok(Clock::ThreadCpu) => TimerClock::ThreadCpu(tid),
        Err(error) => return error.as_negative(),
    };
    let notice = match event {
        None => DEFAULT_TIMER_NOTICE,
        Some(event) => {
            let is_own_thread =
                |thread: i32| process::process_of_thread(thread as u64) == Some(pid);
            match timer_notice(&event, is_own_thread) {
                Ok(notice) => notice,
                Err(error) => return error.as_negative(),
            }
        }
    };
    let timers = crate::itimer::timers();
    let Ok(id) = timers.create(pid, timer_clock, |id| service_notice(notice, id)) else {
        return Errno::EAGAIN.as_negative();
    };
    if hal::user::copy_to_user(timer_id, &(id as i32).to_le_bytes()).is_err() {
        timers.delete(pid, id);
        return Errno::EFAULT.as_negative();
    }
    0
}

/// A setting as `struct itimerspec`.
fn itimerspec_of(setting: interval_timers::Setting) -> Itimerspec {
    Itimerspec {
        interval: Timespec::from_nanoseconds(setting.interval_ns),
        value: Timespec::from_nanoseconds(setting.value_ns),
    }
}

/// `timer_settime(timerid, flags, new, old)`: a null `new` (`EINVAL`),
/// `new` (`EFAULT`), a malformed time (`EINVAL`), the timer (`EINVAL`),
/// then `old` (`EFAULT`). Arms the timer to expire after `it_value` (or
/// at it, with `TIMER_ABSTIME`; other flags are ignored, as by Linux),
/// then every `it_interval`; a zero `it_value` disarms it.
pub(crate) fn timer_settime(strand: u64, id: u64, flags: u64, new: u64, old: u64) -> i64 {
    let (pid, _) = match caller(strand) {
        Ok(ids) => ids,
        Err(error) => return error,
    };
    if new == 0 {
        return Errno::EINVAL.as_negative();
    }
    let mut bytes = [0u8; Itimerspec::BYTES];
    if hal::user::copy_from_user(&mut bytes, new).is_err() {
        return Errno::EFAULT.as_negative();
    }
    let setting = Itimerspec::from_bytes(&bytes);
    let (Some(value_ns), Some(interval_ns)) = (
        setting.value.to_nanoseconds(),
        setting.interval.to_nanoseconds(),
    ) else {
        return Errno::EINVAL.as_negative();
    };
    let slot = match slot_of(id) {
        Ok(slot) => slot,
        Err(error) => return error,
    };
    let is_absolute = flags & TIMER_ABSTIME != 0;
    let Some(previous) = crate::itimer::timers().arm(pid, slot, value_ns, interval_ns, is_absolute)
    else {
        return Errno::EINVAL.as_negative();
    };
    if old != 0 && hal::user::copy_to_user(old, &itimerspec_of(previous).to_bytes()).is_err() {
        return Errno::EFAULT.as_negative();
    }
    0
}

/// `timer_gettime(timerid, curr)`: the time to the next expiry and the
/// period; `EINVAL` for no such timer, then `EFAULT`.
pub(crate) fn timer_gettime(strand: u64, id: u64, current: u64) -> i64 {
    let (pid, _) = match caller(strand) {
        Ok(ids) => ids,
        Err(error) => return error,
    };
    let setting = match slot_of(id).map(|slot| crate::itimer::timers().get(pid, slot)) {
        Ok(Some(setting)) => setting,
        Ok(None) => return Errno::EINVAL.as_negative(),
        Err(error) => return error,
    };
    match hal::user::copy_to_user(current, &itimerspec_of(setting).to_bytes()) {
        Ok(()) => 0,
        Err(_) => Errno::EFAULT.as_negative(),
    }
}

/// `timer_getoverrun(timerid)`: the periods the timer's last expiry let
/// go by past the first (at most `DELAYTIMER_MAX`, `INT_MAX`); `EINVAL`
/// for no such timer.
pub(crate) fn timer_getoverrun(strand: u64, id: u64) -> i64 {
    let (pid, _) = match caller(strand) {
        Ok(ids) => ids,
        Err(error) => return error,
    };
    let Ok(Slot::Posix(id)) = slot_of(id) else {
        return Errno::EINVAL.as_negative();
    };
    match crate::itimer::timers().overrun(pid, id) {
        Some(overrun) => overrun.min(i32::MAX as u64) as i64,
        None => Errno::EINVAL.as_negative(),
    }
}

/// `timer_delete(timerid)`: `EINVAL` for no such timer.
pub(crate) fn timer_delete(strand: u64, id: u64) -> i64 {
    let (pid, _) = match caller(strand) {
        Ok(ids) => ids,
        Err(error) => return error,
    };
    match slot_of(id) {
        Ok(Slot::Posix(id)) if crate::itimer::timers().delete(pid, id) => 0,
        _ => Errno::EINVAL.as_negative(),
    }
}
