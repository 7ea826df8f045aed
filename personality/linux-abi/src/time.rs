//! Times as system calls exchange them: `struct timespec`, `struct
//! timeval`, `struct itimerval`, `struct itimerspec`, and the special nanosecond values of
//! `utimensat`.

use crate::bytes::{get_i64, put};

/// Nanoseconds in a second.
const NS_PER_SECOND: u64 = 1_000_000_000;
/// Nanoseconds in a microsecond.
const NS_PER_MICROSECOND: u64 = 1_000;

/// `struct timespec`: seconds and nanoseconds (16 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timespec {
    /// `tv_sec`.
    pub sec: i64,
    /// `tv_nsec`: 0..1_000_000_000 in a valid value.
    pub nsec: i64,
}

impl Timespec {
    /// Bytes of a `struct timespec`.
    pub const BYTES: usize = 16;

    /// The time `ns` nanoseconds after zero.
    pub const fn from_nanoseconds(ns: u64) -> Timespec {
        Timespec {
            sec: (ns / NS_PER_SECOND) as i64,
            nsec: (ns % NS_PER_SECOND) as i64,
        }
    }

    /// The nanoseconds it stands for; `None` for a negative time or
    /// nanoseconds outside 0..1e9 (what Linux refuses with `EINVAL`).
    /// Saturates at `u64::MAX` for times too far away to count.
    pub fn to_nanoseconds(self) -> Option<u64> {
        let sec = u64::try_from(self.sec).ok()?;
        let nsec = u64::try_from(self.nsec)
            .ok()
            .filter(|&n| n < NS_PER_SECOND)?;
        Some(sec.saturating_mul(NS_PER_SECOND).saturating_add(nsec))
    }

    /// The record as user space reads it: `tv_sec`@0, `tv_nsec`@8.
    pub fn to_bytes(self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        put(&mut bytes, 0, self.sec.to_le_bytes());
        put(&mut bytes, 8, self.nsec.to_le_bytes());
        bytes
    }

    /// The record user space wrote.
    pub fn from_bytes(bytes: &[u8; Self::BYTES]) -> Timespec {
        Timespec {
            sec: get_i64(bytes, 0),
            nsec: get_i64(bytes, 8),
        }
    }
}

/// `struct timeval`: seconds and microseconds (16 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timeval {
    /// `tv_sec`.
    pub sec: i64,
    /// `tv_usec`: 0..1_000_000 in a valid value.
    pub usec: i64,
}

impl Timeval {
    /// Bytes of a `struct timeval`.
    pub const BYTES: usize = 16;

    /// The time `ns` nanoseconds after zero, rounded down to microseconds.
    pub const fn from_nanoseconds(ns: u64) -> Timeval {
        Timeval {
            sec: (ns / NS_PER_SECOND) as i64,
            usec: (ns % NS_PER_SECOND / NS_PER_MICROSECOND) as i64,
        }
    }

    /// The nanoseconds it stands for; `None` for a negative time or
    /// microseconds outside 0..1e6. Saturates at `u64::MAX`.
    pub fn to_nanoseconds(self) -> Option<u64> {
        let sec = u64::try_from(self.sec).ok()?;
        let usec = u64::try_from(self.usec)
            .ok()
            .filter(|&u| u < NS_PER_SECOND / NS_PER_MICROSECOND)?;
        Some(
            sec.saturating_mul(NS_PER_SECOND)
                .saturating_add(usec * NS_PER_MICROSECOND),
        )
    }

    /// The record as user space reads it: `tv_sec`@0, `tv_usec`@8.
    pub fn to_bytes(self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        put(&mut bytes, 0, self.sec.to_le_bytes());
        put(&mut bytes, 8, self.usec.to_le_bytes());
        bytes
    }

    /// The record user space wrote.
    pub fn from_bytes(bytes: &[u8; Self::BYTES]) -> Timeval {
        Timeval {
            sec: get_i64(bytes, 0),
            usec: get_i64(bytes, 8),
        }
    }
}

/// `struct itimerval` (`getitimer`, `setitimer`): the period and the
/// time left (32 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Itimerval {
    /// `it_interval`: the period; zero for a one-shot timer.
    pub interval: Timeval,
    /// `it_value`: the time left; zero for a disarmed timer.
    pub value: Timeval,
}

impl Itimerval {
    /// Bytes of a `struct itimerval`.
    pub const BYTES: usize = 32;

    /// The record as user space reads it: `it_interval`@0, `it_value`@16.
    pub fn to_bytes(self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        put(&mut bytes, 0, self.interval.to_bytes());
        put(&mut bytes, 16, self.value.to_bytes());
        bytes
    }

    /// The record user space wrote.
    pub fn from_bytes(bytes: &[u8; Self::BYTES]) -> Itimerval {
        Itimerval {
            interval: Timeval {
                sec: get_i64(bytes, 0),
                usec: get_i64(bytes, 8),
            },
            value: Timeval {
                sec: get_i64(bytes, 16),
                usec: get_i64(bytes, 24),
            },
        }
    }
}

/// `struct itimerspec` (`timerfd_settime`, `timerfd_gettime`,
/// `timer_settime`): the period and the time left, in nanoseconds (32
/// bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Itimerspec {
    /// `it_interval`: the period; zero for a one-shot timer.
    pub interval: Timespec,
    /// `it_value`: the time left (or, set absolute, the time of the
    /// expiry); zero for a disarmed timer.
    pub value: Timespec,
}

impl Itimerspec {
    /// Bytes of a `struct itimerspec`.
    pub const BYTES: usize = 32;

    /// The record as user space reads it: `it_interval`@0, `it_value`@16.
    pub fn to_bytes(self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        put(&mut bytes, 0, self.interval.to_bytes());
        put(&mut bytes, 16, self.value.to_bytes());
        bytes
    }

    /// The record user space wrote.
    pub fn from_bytes(bytes: &[u8; Self::BYTES]) -> Itimerspec {
        Itimerspec {
            interval: Timespec {
                sec: get_i64(bytes, 0),
                nsec: get_i64(bytes, 8),
            },
            value: Timespec {
                sec: get_i64(bytes, 16),
                nsec: get_i64(bytes, 24),
            },
        }
    }
}

/// `setitimer`'s `which`: the real-time timer, which sends `SIGALRM`.
pub const ITIMER_REAL: u64 = 0;
/// `setitimer`'s `which`: the timer on the process's user processor
/// time, which sends `SIGVTALRM`.
pub const ITIMER_VIRTUAL: u64 = 1;
/// `setitimer`'s `which`: the timer on the process's user and system
/// processor time, which sends `SIGPROF`.
pub const ITIMER_PROF: u64 = 2;

/// `clock_nanosleep` and `timer_settime`'s flag: the time is a reading
/// of the clock, not a delay.
pub const TIMER_ABSTIME: u64 = 1;

/// Clock ids (`include/uapi/linux/time.h`).
pub mod clock {
    /// The wall clock.
    pub const REALTIME: u64 = 0;
    /// The time since boot, not counting suspend.
    pub const MONOTONIC: u64 = 1;
    /// The calling process's processor time.
    pub const PROCESS_CPUTIME_ID: u64 = 2;
    /// The calling thread's processor time.
    pub const THREAD_CPUTIME_ID: u64 = 3;
    /// `MONOTONIC` without frequency adjustment.
    pub const MONOTONIC_RAW: u64 = 4;
    /// `REALTIME` at the last tick.
    pub const REALTIME_COARSE: u64 = 5;
    /// `MONOTONIC` at the last tick.
    pub const MONOTONIC_COARSE: u64 = 6;
    /// The time since boot, suspend included.
    pub const BOOTTIME: u64 = 7;
    /// `REALTIME` that wakes a suspended system.
    pub const REALTIME_ALARM: u64 = 8;
    /// `BOOTTIME` that wakes a suspended system.
    pub const BOOTTIME_ALARM: u64 = 9;
    /// International atomic time.
    pub const TAI: u64 = 11;
}

/// `struct sigevent`'s `sigev_notify`: signal the process.
pub const SIGEV_SIGNAL: i32 = 0;
/// `sigev_notify`: no notification (the timer is only read).
pub const SIGEV_NONE: i32 = 1;
/// `sigev_notify`: a thread started by the C library (to the kernel, a
/// signal to the process).
pub const SIGEV_THREAD: i32 = 2;
/// `sigev_notify`: signal the thread `sigev_notify_thread_id`.
pub const SIGEV_THREAD_ID: i32 = 4;

/// `struct sigevent` (64 bytes on x86_64): how `timer_create`'s timer
/// tells of its expiry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sigevent {
    /// `sigev_value`: what the signal carries (`si_value`).
    pub value: u64,
    /// `sigev_signo`.
    pub signo: i32,
    /// `sigev_notify`: `SIGEV_SIGNAL`, `SIGEV_NONE`, ...
    pub notify: i32,
    /// `sigev_notify_thread_id` (the union's first member).
    pub thread_id: i32,
}

impl Sigevent {
    /// Bytes of a `struct sigevent`.
    pub const BYTES: usize = 64;

    /// The record user space wrote: `sigev_value`@0, `sigev_signo`@8,
    /// `sigev_notify`@12, `sigev_notify_thread_id`@16.
    pub fn from_bytes(bytes: &[u8; Self::BYTES]) -> Sigevent {
        let word = |at: usize| {
            i32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        Sigevent {
            value: get_i64(bytes, 0) as u64,
            signo: word(8),
            notify: word(12),
            thread_id: word(16),
        }
    }
}

/// `utimensat`'s `tv_nsec`: set the time to now.
pub const UTIME_NOW: i64 = (1 << 30) - 1;
/// `utimensat`'s `tv_nsec`: leave the time as it is.
pub const UTIME_OMIT: i64 = (1 << 30) - 2;
