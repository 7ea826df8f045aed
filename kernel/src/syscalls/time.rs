//! Time: `clock_gettime`.

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
