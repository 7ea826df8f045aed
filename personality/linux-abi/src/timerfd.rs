//! `timerfd_create` and `timerfd_settime` flags (timerfd_create(2),
//! `include/uapi/linux/timerfd.h`).

/// `timerfd_create`: close on `execve` (`O_CLOEXEC`).
pub const TFD_CLOEXEC: u64 = 0o2000000;
/// `timerfd_create`: reads answer `EAGAIN` instead of waiting
/// (`O_NONBLOCK`).
pub const TFD_NONBLOCK: u64 = 0o4000;
/// `timerfd_settime`: `it_value` is a time of the clock, not a delay.
pub const TFD_TIMER_ABSTIME: u64 = 1;
/// `timerfd_settime`: with an absolute `CLOCK_REALTIME` timer, reads
/// fail with `ECANCELED` when the clock is set.
pub const TFD_TIMER_CANCEL_ON_SET: u64 = 2;

/// Bytes a read returns: the expirations as one `uint64_t`.
pub const TIMERFD_COUNT_BYTES: usize = 8;
