//! `eventfd2`'s flags (eventfd(2), `include/uapi/linux/eventfd.h`).

/// Reads take 1 rather than the whole counter.
pub const EFD_SEMAPHORE: u64 = 1;
/// Close on `execve` (`O_CLOEXEC`).
pub const EFD_CLOEXEC: u64 = 0o2000000;
/// Reads and writes answer `EAGAIN` instead of waiting (`O_NONBLOCK`).
pub const EFD_NONBLOCK: u64 = 0o4000;

/// The largest value the counter holds: a write that would pass it
/// waits (`ULLONG_MAX - 1`).
pub const EVENTFD_MAX: u64 = u64::MAX - 1;
/// Bytes a read returns and a write takes: one `uint64_t`.
pub const EVENTFD_VALUE_BYTES: usize = 8;
