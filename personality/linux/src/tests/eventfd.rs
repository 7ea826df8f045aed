//! `eventfd`: the counter's rules (`EventCounter`) and the calls: flags,
//! 8-byte reads and writes, semaphores, waiting for a count or for room.

use linux_abi::{eventfd::*, syscall::*};
use vfs::{flags::O_NONBLOCK, Errno};

use super::*;
use crate::eventfd::EventCounter;

#[test]
fn the_counter_gives_all_or_one_and_refuses_to_overflow() {
    let mut counter = EventCounter::new(5, false);
    assert_eq!(counter.take(), Some(5));
    assert_eq!(counter.take(), None);
    let mut semaphore = EventCounter::new(2, true);
    assert_eq!(semaphore.take(), Some(1));
    assert_eq!(semaphore.take(), Some(1));
    assert_eq!(semaphore.take(), None);
    let mut full = EventCounter::new(0, false);
    assert_eq!(full.add(u64::MAX), Err(Errno::EINVAL));
    assert_eq!(full.add(EVENTFD_MAX), Ok(true));
    assert!(!full.readiness().writable);
    assert!(full.readiness().readable);
    assert_eq!(full.add(1), Ok(false));
    assert_eq!(full.add(0), Ok(true), "adding nothing always fits");
    assert_eq!(full.take(), Some(EVENTFD_MAX));
    assert!(!full.readiness().readable);
    assert!(full.readiness().writable);
}

#[test]
fn eventfd2_checks_its_flags_and_sets_them() {
    let fixture = Fixture::new();
    for flags in [4, 1 << 31, u64::from(u32::MAX)] {
        assert_eq!(fixture.call(EVENTFD2, &[0, flags]), err(Errno::EINVAL));
    }
    let fd = fixture.call(EVENTFD2, &[0, EFD_CLOEXEC | EFD_NONBLOCK]) as u64;
    assert_eq!(fixture.call(FCNTL, &[fd, 1]), 1, "close-on-exec");
    assert_ne!(fixture.call(FCNTL, &[fd, 3]) & i64::from(O_NONBLOCK), 0);
    let plain = fixture.call(EVENTFD, &[0]) as u64;
    assert_eq!(fixture.call(FCNTL, &[plain, 1]), 0);
    assert_eq!(fixture.call(FCNTL, &[plain, 3]) & i64::from(O_NONBLOCK), 0);
}

#[test]
fn reads_and_writes_move_eight_bytes() {
    let fixture = Fixture::new();
    let fd = fixture.call(EVENTFD2, &[3, EFD_NONBLOCK]) as u64;
    assert_eq!(fixture.call(READ, &[fd, at(0), 7]), err(Errno::EINVAL));
    assert_eq!(fixture.call(READ, &[fd, at(0), 16]), 8);
    assert_eq!(peek_u64(at(0)), 3);
    assert_eq!(fixture.call(READ, &[fd, at(0), 8]), err(Errno::EAGAIN));
    let value = put(0x100, &40u64.to_le_bytes());
    assert_eq!(fixture.call(WRITE, &[fd, value, 4]), err(Errno::EINVAL));
    assert_eq!(fixture.call(WRITE, &[fd, value, 8]), 8);
    assert_eq!(fixture.call(WRITE, &[fd, value, 8]), 8);
    let too_much = put(0x108, &u64::MAX.to_le_bytes());
    assert_eq!(fixture.call(WRITE, &[fd, too_much, 8]), err(Errno::EINVAL));
    let nearly_full = put(0x110, &(EVENTFD_MAX - 1).to_le_bytes());
    assert_eq!(
        fixture.call(WRITE, &[fd, nearly_full, 8]),
        err(Errno::EAGAIN)
    );
    assert_eq!(fixture.call(READ, &[fd, at(0), 8]), 8);
    assert_eq!(peek_u64(at(0)), 80);
    assert!(
        fake::blocks().is_empty(),
        "a nonblocking counter never blocks"
    );
}

#[test]
fn a_semaphore_read_waits_for_a_post() {
    let fixture = Fixture::new();
    let fd = fixture.call(EVENTFD2, &[0, EFD_SEMAPHORE]) as u64;
    let file = fixture.process().fds.get(fd as i64).expect("open");
    fake::once_blocked(move || {
        assert_eq!(file.write(&2u64.to_le_bytes()), Ok(8));
    });
    assert_eq!(fixture.call(READ, &[fd, at(0), 8]), 8);
    assert_eq!(peek_u64(at(0)), 1);
    assert_eq!(fake::blocks(), [("eventfd read", None)]);
    assert_eq!(fixture.call(READ, &[fd, at(0), 8]), 8);
    assert_eq!(peek_u64(at(0)), 1);
    fake::once_blocked(|| fake::set_interrupted(true));
    assert_eq!(fixture.call(READ, &[fd, at(0), 8]), err(Errno::EINTR));
}
