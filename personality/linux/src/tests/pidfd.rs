//! `pidfd_open` and `pidfd_getfd`: flags, the processes they may name,
//! readiness at the process's end, and who may take whose descriptors.

use linux_abi::{pidfd::PIDFD_NONBLOCK, syscall::*};
use vfs::{flags::O_NONBLOCK, Errno};

use super::*;

/// Another process of the personality, forked from [`PID`].
const OTHER: u64 = PID + 1;

/// `poll`'s `POLLIN`.
const POLLIN: u16 = 1;

/// Polls `fd` once for `POLLIN` without waiting: its `revents`.
fn poll_once(fixture: &Fixture, fd: u64) -> u16 {
    let mut record = [0u8; 8];
    record[..4].copy_from_slice(&(fd as i32).to_le_bytes());
    record[4..6].copy_from_slice(&POLLIN.to_le_bytes());
    let fds = put(0x800, &record);
    assert!(fixture.call(POLL, &[fds, 1, 0]) >= 0);
    u16::from_le_bytes(fake::peek(fds + 6, 2).try_into().expect("2 bytes"))
}

#[test]
fn pidfd_open_checks_flags_and_pids() {
    let fixture = Fixture::new();
    assert_eq!(fixture.call(PIDFD_OPEN, &[PID, 1]), err(Errno::EINVAL));
    assert_eq!(fixture.call(PIDFD_OPEN, &[0, 0]), err(Errno::EINVAL));
    assert_eq!(
        fixture.call(PIDFD_OPEN, &[u64::from(u32::MAX), 0]),
        err(Errno::EINVAL),
        "-1 as an int"
    );
    assert_eq!(fixture.call(PIDFD_OPEN, &[4321, 0]), err(Errno::ESRCH));
    let fd = fixture.call(PIDFD_OPEN, &[PID, 0]) as u64;
    assert_eq!(fixture.call(FCNTL, &[fd, 1]), 1, "always close-on-exec");
    assert_eq!(fixture.call(FCNTL, &[fd, 3]) & i64::from(O_NONBLOCK), 0);
    let nonblocking = fixture.call(PIDFD_OPEN, &[PID, PIDFD_NONBLOCK]) as u64;
    assert_ne!(
        fixture.call(FCNTL, &[nonblocking, 3]) & i64::from(O_NONBLOCK),
        0
    );
    assert_eq!(fixture.call(READ, &[fd, at(0), 8]), err(Errno::EINVAL));
}

#[test]
fn a_process_descriptor_turns_readable_when_the_process_ends() {
    let fixture = Fixture::new();
    fixture.personality.process_forked(PID, OTHER);
    let fd = fixture.call(PIDFD_OPEN, &[OTHER, 0]) as u64;
    assert_eq!(poll_once(&fixture, fd), 0);
    let described = fixture
        .personality
        .process_descriptor(PID, fd)
        .expect("a pidfd");
    assert_eq!(described.pid, OTHER);
    assert!(!described.is_nonblocking);
    fixture.personality.process_ended(OTHER);
    assert_eq!(poll_once(&fixture, fd), POLLIN);
    assert!(described.exit.has_ended());
    assert_eq!(
        fixture.call(PIDFD_OPEN, &[OTHER, 0]),
        err(Errno::ESRCH),
        "ended and waited for"
    );
}

#[test]
fn only_process_descriptors_describe_processes() {
    let fixture = Fixture::new();
    assert_eq!(
        fixture.personality.process_descriptor(PID, 0).err(),
        Some(Errno::EBADF),
        "/dev/null"
    );
    assert_eq!(
        fixture.personality.process_descriptor(PID, 99).err(),
        Some(Errno::EBADF)
    );
}

#[test]
fn pidfd_getfd_checks_in_linux_order_and_copies_close_on_exec() {
    let fixture = Fixture::new();
    let own = fixture.call(PIDFD_OPEN, &[PID, 0]) as u64;
    assert_eq!(fixture.call(PIDFD_GETFD, &[own, 0, 1]), err(Errno::EINVAL));
    assert_eq!(fixture.call(PIDFD_GETFD, &[0, 0, 0]), err(Errno::EBADF));
    assert_eq!(fixture.call(PIDFD_GETFD, &[99, 0, 0]), err(Errno::EBADF));
    assert_eq!(
        fixture.call(PIDFD_GETFD, &[own, u64::from(u32::MAX), 0]),
        err(Errno::EBADF)
    );
    let copy = fixture.call(PIDFD_GETFD, &[own, 1, 0]);
    assert!(copy > own as i64);
    assert_eq!(fixture.call(FCNTL, &[copy as u64, 1]), 1, "close-on-exec");
    fixture.personality.process_forked(PID, OTHER);
    let other = fixture.call(PIDFD_OPEN, &[OTHER, 0]) as u64;
    assert!(fixture.call(PIDFD_GETFD, &[other, 2, 0]) >= 0, "root may");
    assert_eq!(fixture.call(SETUID, &[65534]), 0);
    assert_eq!(
        fixture.call(PIDFD_GETFD, &[other, 2, 0]),
        err(Errno::EPERM),
        "another user's process"
    );
    assert!(fixture.call(PIDFD_GETFD, &[own, 2, 0]) >= 0, "its own");
    fixture.personality.process_ended(OTHER);
    assert_eq!(fixture.call(PIDFD_GETFD, &[other, 2, 0]), err(Errno::ESRCH));
}
