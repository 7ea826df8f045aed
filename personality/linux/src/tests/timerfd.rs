//! `timerfd`: the expiry arithmetic (`Timer`) and the calls: clocks and
//! flags, settings read back, expirations counted and read.

use linux_abi::{
    syscall::*,
    time::{Itimerspec, Timespec},
    timerfd::*,
};
use vfs::{flags::O_NONBLOCK, Errno};

use super::*;
use crate::timerfd::{Setting, Timer};

/// Milliseconds in nanoseconds.
const MS: u64 = 1_000_000;

#[test]
fn a_periodic_timer_counts_every_period_gone_by() {
    let mut timer = Timer::default();
    assert_eq!(timer.take(0), None);
    assert_eq!(timer.ready_at(), None);
    assert_eq!(timer.set(1_000, 100, 50, false), Setting::default());
    assert_eq!(timer.ready_at(), Some(1_100));
    assert!(!timer.is_ready(1_099));
    assert_eq!(timer.take(1_099), None);
    assert!(timer.is_ready(1_100));
    // Expired at 1100, 1150, 1200 by 1220.
    assert_eq!(
        timer.setting(1_220),
        Setting {
            remaining_ns: 30,
            interval_ns: 50
        }
    );
    assert_eq!(timer.take(1_220), Some(3));
    assert_eq!(timer.take(1_220), None);
    assert_eq!(timer.ready_at(), Some(1_250));
}

#[test]
fn a_one_shot_timer_expires_once_and_setting_forgets_expirations() {
    let mut timer = Timer::default();
    timer.set(0, 500, 0, true);
    assert_eq!(timer.take(10_000), Some(1));
    assert_eq!(timer.setting(10_000), Setting::default());
    // An absolute time already past expires at once.
    timer.set(10_000, 5_000, 0, true);
    assert!(timer.is_ready(10_000));
    let old = timer.set(10_000, 0, 0, false);
    assert_eq!(old, Setting::default(), "expired: nothing left");
    assert_eq!(timer.take(20_000), None, "disarmed, its expiry forgotten");
}

#[test]
fn timerfd_create_checks_the_clock_and_flags() {
    let fixture = Fixture::new();
    for clock in [2, 3, 4, 5, 6, 10, u64::MAX] {
        assert_eq!(
            fixture.call(TIMERFD_CREATE, &[clock, 0]),
            err(Errno::EINVAL)
        );
    }
    assert_eq!(fixture.call(TIMERFD_CREATE, &[1, 4]), err(Errno::EINVAL));
    for clock in [0, 1, 7, 8, 9] {
        let fd = fixture.call(TIMERFD_CREATE, &[clock, TFD_CLOEXEC]);
        assert!(fd >= 0, "clock {clock}: {fd}");
        assert_eq!(fixture.call(FCNTL, &[fd as u64, 1]), 1);
        assert_eq!(fixture.call(CLOSE, &[fd as u64]), 0);
    }
    let fd = fixture.call(TIMERFD_CREATE, &[1, TFD_NONBLOCK]) as u64;
    assert_ne!(fixture.call(FCNTL, &[fd, 3]) & i64::from(O_NONBLOCK), 0);
}

/// Writes a `struct itimerspec` at `offset`: its address.
fn put_setting(offset: u64, value_ns: u64, interval_ns: u64) -> u64 {
    let setting = Itimerspec {
        interval: Timespec::from_nanoseconds(interval_ns),
        value: Timespec::from_nanoseconds(value_ns),
    };
    put(offset, &setting.to_bytes())
}

#[test]
fn settime_and_gettime_check_their_arguments() {
    let fixture = Fixture::new();
    let fd = fixture.call(TIMERFD_CREATE, &[1, 0]) as u64;
    let (read_end, _) = {
        assert_eq!(fixture.call(PIPE2, &[at(0), 0]), 0);
        (u64::from(peek_u32(at(0))), u64::from(peek_u32(at(4))))
    };
    let new = put_setting(0x100, 100 * MS, 0);
    assert_eq!(
        fixture.call(TIMERFD_SETTIME, &[fd, 4, new, 0]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(TIMERFD_SETTIME, &[fd, 0, UNMAPPED, 0]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(TIMERFD_SETTIME, &[99, 0, new, 0]),
        err(Errno::EBADF)
    );
    assert_eq!(
        fixture.call(TIMERFD_SETTIME, &[read_end, 0, new, 0]),
        err(Errno::EINVAL)
    );
    let malformed = put(
        0x140,
        &[
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0xca, 0x9a, 0x3b, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0,
        ],
    );
    assert_eq!(
        fixture.call(TIMERFD_SETTIME, &[fd, 0, malformed, 0]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(TIMERFD_GETTIME, &[fd, UNMAPPED]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(TIMERFD_GETTIME, &[read_end, at(0x200)]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(TIMERFD_SETTIME, &[fd, 0, new, 0]), 0);
    fake::set_uptime_ns(crate::machine::fake::FakeMachine::now() + 30 * MS);
    assert_eq!(fixture.call(TIMERFD_GETTIME, &[fd, at(0x200)]), 0);
    assert_eq!(peek_u64(at(0x210)), 0, "seconds left");
    assert_eq!(peek_u64(at(0x218)), 70 * MS, "nanoseconds left");
    let old = at(0x300);
    assert_eq!(
        fixture.call(TIMERFD_SETTIME, &[fd, 0, put_setting(0x100, 0, 0), old]),
        0
    );
    assert_eq!(peek_u64(old + 24), 70 * MS);
}

#[test]
fn a_read_waits_for_the_expiry_and_returns_the_count() {
    let fixture = Fixture::new();
    let fd = fixture.call(TIMERFD_CREATE, &[0, 0]) as u64;
    assert_eq!(fixture.call(READ, &[fd, at(0), 4]), err(Errno::EINVAL));
    let start = crate::machine::fake::FakeMachine::now();
    let new = put_setting(0x100, 100 * MS, 50 * MS);
    assert_eq!(fixture.call(TIMERFD_SETTIME, &[fd, 0, new, 0]), 0);
    assert_eq!(fixture.call(READ, &[fd, at(0), 8]), 8);
    assert_eq!(peek_u64(at(0)), 1);
    assert_eq!(fake::blocks(), [("timerfd read", Some(start + 100 * MS))]);
    fake::set_uptime_ns(start + 260 * MS);
    assert_eq!(fixture.call(READ, &[fd, at(0), 8]), 8);
    assert_eq!(peek_u64(at(0)), 3);
    // poll wakes for it too, by the expiry.
    let poll_fds = put(0x400, &[fd as u8, 0, 0, 0, 1, 0, 0, 0]);
    assert_eq!(fixture.call(POLL, &[poll_fds, 1, u64::MAX]), 1);
    assert_eq!(
        fake::blocks().last(),
        Some(&("poll", Some(start + 300 * MS)))
    );
    let flags = fixture.call(FCNTL, &[fd, 3]) as u64;
    assert_eq!(
        fixture.call(FCNTL, &[fd, 4, flags | u64::from(O_NONBLOCK)]),
        0
    );
    assert_eq!(fixture.call(READ, &[fd, at(0), 8]), 8);
    assert_eq!(fixture.call(READ, &[fd, at(0), 8]), err(Errno::EAGAIN));
}

#[test]
fn an_absolute_wall_clock_time_expires_at_the_uptime_it_falls_at() {
    use crate::machine::fake::{FakeMachine, FAKE_EPOCH_OFFSET_NS};
    let fixture = Fixture::new();
    let start = FakeMachine::now();
    let wall = fixture.call(TIMERFD_CREATE, &[0, 0]) as u64;
    let monotonic = fixture.call(TIMERFD_CREATE, &[1, 0]) as u64;
    // What timerfd01 does: now on the timer's clock, plus 100 ms.
    let wall_deadline = put_setting(0x100, FAKE_EPOCH_OFFSET_NS + start + 100 * MS, 0);
    assert_eq!(
        fixture.call(
            TIMERFD_SETTIME,
            &[wall, TFD_TIMER_ABSTIME, wall_deadline, 0]
        ),
        0
    );
    let uptime_deadline = put_setting(0x140, start + 100 * MS, 0);
    assert_eq!(
        fixture.call(
            TIMERFD_SETTIME,
            &[monotonic, TFD_TIMER_ABSTIME, uptime_deadline, 0]
        ),
        0
    );
    for fd in [wall, monotonic] {
        assert_eq!(fixture.call(TIMERFD_GETTIME, &[fd, at(0x200)]), 0);
        assert_eq!(
            peek_u64(at(0x218)),
            100 * MS,
            "relative, whatever the clock"
        );
    }
    assert_eq!(fixture.call(READ, &[wall, at(0), 8]), 8);
    assert_eq!(peek_u64(at(0)), 1);
    assert_eq!(fake::blocks(), [("timerfd read", Some(start + 100 * MS))]);
    // A wall-clock time before boot is past: it expires at once.
    let past = put_setting(0x180, 1, 0);
    assert_eq!(
        fixture.call(TIMERFD_SETTIME, &[wall, TFD_TIMER_ABSTIME, past, 0]),
        0
    );
    assert_eq!(fixture.call(READ, &[wall, at(0), 8]), 8);
}
