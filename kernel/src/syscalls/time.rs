//! Time: `clock_gettime`, `time`.

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
