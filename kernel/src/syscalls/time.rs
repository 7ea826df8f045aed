//! Time: `clock_gettime`, `time`, `nanosleep`, `clock_nanosleep`.

use super::errno;

/// `clock_gettime(clock, timespec)`: every clock reads the time since boot
/// (there is no real-time clock yet), in a `struct timespec`.
pub(super) fn clock_gettime(clock: u64, timespec: u64) -> i64 {
    // CLOCK_REALTIME .. CLOCK_BOOTTIME (0..=7) are accepted.
    if clock > 7 {
        return -errno::EINVAL;
    }
    let now = hal::timer::uptime_ns();
    let mut value = [0u8; 16];
    value[..8].copy_from_slice(&(now / 1_000_000_000).to_le_bytes());
    value[8..].copy_from_slice(&(now % 1_000_000_000).to_le_bytes());
    match hal::user::copy_to_user(timespec, &value) {
        Ok(()) => 0,
        Err(_) => -errno::EFAULT,
    }
}

/// `time(tloc)`: seconds since boot (no real-time clock yet), also stored
/// at `tloc` unless it is null.
pub(super) fn time(tloc: u64) -> i64 {
    let seconds = hal::timer::uptime_ns() / 1_000_000_000;
    if tloc != 0 && hal::user::copy_to_user(tloc, &seconds.to_le_bytes()).is_err() {
        return -errno::EFAULT;
    }
    seconds as i64
}

/// Reads a `struct timespec` as nanoseconds: `EFAULT`, or `EINVAL` for a
/// negative or malformed one.
fn read_timespec(address: u64) -> Result<u64, i64> {
    let mut value = [0u8; 16];
    hal::user::copy_from_user(&mut value, address).map_err(|_| -errno::EFAULT)?;
    let seconds = i64::from_le_bytes(value[..8].try_into().unwrap_or([0; 8]));
    let nanoseconds = i64::from_le_bytes(value[8..].try_into().unwrap_or([0; 8]));
    if seconds < 0 || !(0..1_000_000_000).contains(&nanoseconds) {
        return Err(-errno::EINVAL);
    }
    Ok((seconds as u64).saturating_mul(1_000_000_000).saturating_add(nanoseconds as u64))
}

/// Sleeps until uptime `deadline` (ns), waking every millisecond to
/// notice a kill: `EINTR` then, with what was left written to `remaining`
/// unless it is null.
fn sleep_until(deadline: u64, remaining: u64) -> i64 {
    loop {
        let now = hal::timer::uptime_ns();
        if now >= deadline {
            return 0;
        }
        if crate::signals::interrupted() {
            let left = deadline - now;
            if remaining != 0 {
                let mut value = [0u8; 16];
                value[..8].copy_from_slice(&(left / 1_000_000_000).to_le_bytes());
                value[8..].copy_from_slice(&(left % 1_000_000_000).to_le_bytes());
                let _ = hal::user::copy_to_user(remaining, &value);
            }
            return -errno::EINTR;
        }
        let left_ms = (deadline - now).div_ceil(1_000_000);
        sched::sleep_ms(left_ms.min(1));
    }
}

/// `nanosleep(req, rem)`.
pub(super) fn nanosleep(request: u64, remaining: u64) -> i64 {
    match read_timespec(request) {
        Ok(ns) => sleep_until(hal::timer::uptime_ns().saturating_add(ns), remaining),
        Err(error) => error,
    }
}

/// `clock_nanosleep(clock, flags, req, rem)`: relative, or absolute with
/// `TIMER_ABSTIME` (every clock reads the time since boot, as
/// `clock_gettime` does).
pub(super) fn clock_nanosleep(clock: u64, flags: u64, request: u64, remaining: u64) -> i64 {
    const TIMER_ABSTIME: u64 = 1;
    if clock > 7 || flags & !TIMER_ABSTIME != 0 {
        return -errno::EINVAL;
    }
    let ns = match read_timespec(request) {
        Ok(ns) => ns,
        Err(error) => return error,
    };
    if flags & TIMER_ABSTIME != 0 {
        sleep_until(ns, 0)
    } else {
        sleep_until(hal::timer::uptime_ns().saturating_add(ns), remaining)
    }
}
