//! File locks: the record-lock table (split, merge, conflict), deadlock
//! detection, `flock`'s conversion rules, and the calls' argument checks,
//! waits and releases through the real table.

use linux_abi::{
    lock::*,
    syscall::{DUP, FCNTL, FLOCK},
};
use vfs::{flags, Errno};

use alloc::vec::Vec;

use super::{at, err, fake, Fixture, PID};
use crate::locks::{
    deadlock::WaitsFor,
    ranges::{ByteRange, LockKind, Owner, RecordLocks},
    whole_file::{WholeFileLocks, WouldBlock},
};

const A: Owner = Owner::Process(1);
const B: Owner = Owner::Process(2);
/// A second process of the fixture's personality (forked from [`PID`]).
const OTHER: u64 = PID + 1;

fn bytes(start: u64, end: u64) -> ByteRange {
    ByteRange { start, end }
}

/// `(owner, kind, start, end)` of each lock, by start.
fn held(table: &RecordLocks) -> Vec<(Owner, LockKind, u64, u64)> {
    table
        .locks()
        .iter()
        .map(|lock| (lock.owner, lock.kind, lock.range.start, lock.range.end))
        .collect()
}

use LockKind::{Exclusive, Shared};

#[test]
fn unlocking_the_middle_of_a_lock_splits_it() {
    let mut table = RecordLocks::default();
    table.set(A, 1, Some(Exclusive), bytes(0, 99)).unwrap();
    table.set(A, 1, None, bytes(40, 59)).unwrap();
    assert_eq!(
        held(&table),
        [(A, Exclusive, 0, 39), (A, Exclusive, 60, 99)]
    );
    // Releasing what is not held is no error.
    table.set(A, 1, None, bytes(200, 300)).unwrap();
    assert_eq!(held(&table).len(), 2);
}

#[test]
fn adjacent_and_overlapping_locks_of_one_kind_merge() {
    let mut table = RecordLocks::default();
    table.set(A, 1, Some(Shared), bytes(0, 9)).unwrap();
    table.set(A, 1, Some(Shared), bytes(20, 29)).unwrap();
    table.set(A, 1, Some(Shared), bytes(10, 19)).unwrap();
    assert_eq!(held(&table), [(A, Shared, 0, 29)]);
    // Another kind over the middle replaces that part only.
    table.set(A, 1, Some(Exclusive), bytes(5, 14)).unwrap();
    assert_eq!(
        held(&table),
        [
            (A, Shared, 0, 4),
            (A, Exclusive, 5, 14),
            (A, Shared, 15, 29)
        ]
    );
    // And back: one shared lock again.
    table.set(A, 1, Some(Shared), bytes(5, 14)).unwrap();
    assert_eq!(held(&table), [(A, Shared, 0, 29)]);
}

#[test]
fn other_owners_conflict_unless_both_share() {
    let mut table = RecordLocks::default();
    table.set(A, 1, Some(Exclusive), bytes(0, 9)).unwrap();
    table
        .set(A, 1, Some(Shared), bytes(20, u64::MAX >> 1))
        .unwrap();
    let conflict = table.set(B, 2, Some(Shared), bytes(5, 5)).unwrap_err();
    assert_eq!(
        (conflict.owner, conflict.pid, conflict.kind),
        (A, 1, Exclusive)
    );
    // A refused request changes nothing.
    assert_eq!(held(&table).len(), 2);
    table.set(B, 2, Some(Shared), bytes(10, 30)).unwrap();
    assert!(table.set(B, 2, Some(Exclusive), bytes(25, 25)).is_err());
    assert_eq!(
        table
            .conflict(B, Shared, bytes(0, 100))
            .map(|lock| lock.range),
        Some(bytes(0, 9))
    );
    assert_eq!(
        table
            .conflict(A, Exclusive, bytes(0, 100))
            .map(|lock| lock.owner),
        Some(B)
    );
    assert!(table.release_owner(A));
    assert!(!table.release_owner(A));
    assert_eq!(held(&table), [(B, Shared, 10, 30)]);
}

#[test]
fn a_wait_closing_a_cycle_is_a_deadlock() {
    let mut waits = WaitsFor::default();
    // Process 1 (thread 11) waits for 2, 2 (thread 21) for 3.
    waits.wait(11, 1, 2);
    waits.wait(21, 2, 3);
    assert!(waits.would_deadlock(3, 1));
    assert!(waits.would_deadlock(2, 1));
    assert!(!waits.would_deadlock(4, 1));
    assert!(!waits.would_deadlock(3, 4));
    waits.stop(21);
    assert!(!waits.would_deadlock(3, 1));
}

#[test]
fn flock_conversion_releases_first() {
    let mut table = WholeFileLocks::default();
    assert_eq!(table.lock(1, Shared), Ok(()));
    assert_eq!(table.lock(2, Shared), Ok(()));
    assert_eq!(table.lock(1, Shared), Ok(()));
    // Converting to exclusive meets 2's lock: 1 is left with none.
    assert_eq!(table.lock(1, Exclusive), Err(WouldBlock));
    assert_eq!(table.held_by(1), None);
    assert!(table.unlock(2));
    assert_eq!(table.lock(1, Exclusive), Ok(()));
    assert_eq!(table.lock(2, Shared), Err(WouldBlock));
    assert_eq!(table.lock(1, Shared), Ok(()));
    assert_eq!(table.lock(2, Shared), Ok(()));
    assert!(!table.unlock(3));
}

/// Writes a `struct flock` at `offset` of the mapped memory: its address.
fn put_lock(offset: u64, l_type: i16, l_whence: i16, l_start: i64, l_len: i64) -> u64 {
    let lock = Flock {
        l_type,
        l_whence,
        l_start,
        l_len,
        l_pid: 0,
    };
    super::put(offset, &lock.to_bytes())
}

/// The `struct flock` at user address `address`.
fn read_lock(address: u64) -> Flock {
    Flock::from_bytes(
        &fake::peek(address, Flock::BYTES)
            .try_into()
            .expect("32 bytes"),
    )
}

/// `fixture` with `/tmp/f` (100 bytes), open in [`PID`] as the answer.
fn with_file(fixture: &Fixture, open_flags: u32) -> u64 {
    fixture.make_file(b"/tmp/f", &[7; 100]);
    fixture.open(b"/tmp/f", open_flags)
}

/// `fcntl(fd, command, lock)` from process `pid`.
fn fcntl_from(fixture: &Fixture, pid: u64, fd: u64, command: u64, lock: u64) -> i64 {
    fixture
        .personality
        .handle(pid, FCNTL, [fd, command, lock, 0, 0, 0])
        .expect("fcntl")
}

#[test]
fn fcntl_lock_arguments_are_checked_in_linux_order() {
    let fixture = Fixture::new();
    let fd = with_file(&fixture, flags::O_RDWR);
    assert_eq!(
        fixture.call(FCNTL, &[fd, F_SETLK, super::UNMAPPED]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(FCNTL, &[99, F_SETLK, at(0)]),
        err(Errno::EBADF)
    );
    let bad_whence = put_lock(0, F_WRLCK, -1, 0, 0);
    assert_eq!(
        fixture.call(FCNTL, &[fd, F_SETLK, bad_whence]),
        err(Errno::EINVAL)
    );
    let bad_type = put_lock(0, 7, 0, 0, 0);
    assert_eq!(
        fixture.call(FCNTL, &[fd, F_SETLK, bad_type]),
        err(Errno::EINVAL)
    );
    let unlock_test = put_lock(0, F_UNLCK, 0, 0, 0);
    assert_eq!(
        fixture.call(FCNTL, &[fd, F_GETLK, unlock_test]),
        err(Errno::EINVAL)
    );
    let before_zero = put_lock(0, F_WRLCK, 0, -1, 5);
    assert_eq!(
        fixture.call(FCNTL, &[fd, F_SETLK, before_zero]),
        err(Errno::EINVAL)
    );
    let past_the_end = put_lock(0, F_WRLCK, 2, i64::MAX, 1);
    assert_eq!(
        fixture.call(FCNTL, &[fd, F_SETLK, past_the_end]),
        err(Errno::EOVERFLOW)
    );
    let too_long = put_lock(0, F_WRLCK, 0, 10, i64::MAX);
    assert_eq!(
        fixture.call(FCNTL, &[fd, F_SETLK, too_long]),
        err(Errno::EOVERFLOW)
    );
    let backwards_past_zero = put_lock(0, F_WRLCK, 0, 3, -4);
    assert_eq!(
        fixture.call(FCNTL, &[fd, F_SETLK, backwards_past_zero]),
        err(Errno::EINVAL)
    );
    let with_pid = Flock {
        l_type: F_WRLCK,
        l_pid: 5,
        ..Flock::default()
    };
    let with_pid = super::put(0, &with_pid.to_bytes());
    assert_eq!(
        fixture.call(FCNTL, &[fd, F_OFD_SETLK, with_pid]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(FCNTL, &[fd, F_OFD_GETLK, with_pid]),
        err(Errno::EINVAL)
    );
}

#[test]
fn a_lock_needs_the_access_it_stands_for() {
    let fixture = Fixture::new();
    let read_only = with_file(&fixture, flags::O_RDONLY);
    let write_only = fixture.open(b"/tmp/f", flags::O_WRONLY);
    let write = put_lock(0, F_WRLCK, 0, 0, 0);
    let read = put_lock(64, F_RDLCK, 0, 0, 0);
    assert_eq!(
        fixture.call(FCNTL, &[read_only, F_SETLK, write]),
        err(Errno::EBADF)
    );
    assert_eq!(
        fixture.call(FCNTL, &[write_only, F_SETLK, read]),
        err(Errno::EBADF)
    );
    assert_eq!(fixture.call(FCNTL, &[read_only, F_SETLK, read]), 0);
    assert_eq!(fixture.call(FCNTL, &[write_only, F_SETLK, write]), 0);
    // Testing needs no access.
    assert_eq!(fixture.call(FCNTL, &[read_only, F_GETLK, write]), 0);
}

#[test]
fn getlk_names_another_process_lock_and_leaves_the_rest_when_free() {
    let fixture = Fixture::new();
    let fd = with_file(&fixture, flags::O_RDWR);
    fixture.personality.process_forked(PID, OTHER);
    // PID locks bytes 10..=19, counted from the offset (5) + 5.
    let _ = fixture.call(linux_abi::syscall::LSEEK, &[fd, 5, 0]);
    let lock = put_lock(0, F_WRLCK, 1, 5, 10);
    assert_eq!(fixture.call(FCNTL, &[fd, F_SETLK, lock]), 0);
    // Its own lock is no conflict for itself: only the type changes.
    let test = put_lock(64, F_WRLCK, 1, 0, 0);
    assert_eq!(fixture.call(FCNTL, &[fd, F_GETLK, test]), 0);
    assert_eq!(
        read_lock(test),
        Flock {
            l_type: F_UNLCK,
            l_whence: 1,
            l_start: 0,
            l_len: 0,
            l_pid: 0
        }
    );
    let test = put_lock(64, F_RDLCK, 0, 0, 0);
    assert_eq!(fcntl_from(&fixture, OTHER, fd, F_GETLK, test), 0);
    assert_eq!(
        read_lock(test),
        Flock {
            l_type: F_WRLCK,
            l_whence: 0,
            l_start: 10,
            l_len: 10,
            l_pid: PID as i32
        }
    );
    // Inherited by fork the descriptor is; the lock is not.
    assert_eq!(
        fcntl_from(&fixture, OTHER, fd, F_SETLK, test),
        err(Errno::EAGAIN)
    );
    let after = put_lock(128, F_WRLCK, 0, 20, 0);
    assert_eq!(fcntl_from(&fixture, OTHER, fd, F_SETLK, after), 0);
    let test = put_lock(64, F_RDLCK, 0, 0, 0);
    assert_eq!(fixture.call(FCNTL, &[fd, F_GETLK, test]), 0);
    assert_eq!(
        read_lock(test),
        Flock {
            l_type: F_WRLCK,
            l_whence: 0,
            l_start: 20,
            l_len: 0,
            l_pid: OTHER as i32
        }
    );
}

#[test]
fn closing_any_descriptor_of_the_file_releases_the_process_locks() {
    let fixture = Fixture::new();
    let fd = with_file(&fixture, flags::O_RDWR);
    let other_description = fixture.open(b"/tmp/f", flags::O_RDONLY);
    fixture.personality.process_forked(PID, OTHER);
    let lock = put_lock(0, F_WRLCK, 0, 0, 0);
    assert_eq!(fixture.call(FCNTL, &[fd, F_SETLK, lock]), 0);
    assert_eq!(
        fcntl_from(&fixture, OTHER, fd, F_SETLK, lock),
        err(Errno::EAGAIN)
    );
    // The child closing its copy releases nothing of the parent's.
    assert_eq!(
        fixture.personality.handle(
            OTHER,
            linux_abi::syscall::CLOSE,
            [other_description, 0, 0, 0, 0, 0]
        ),
        Some(0)
    );
    assert_eq!(
        fcntl_from(&fixture, OTHER, fd, F_SETLK, lock),
        err(Errno::EAGAIN)
    );
    assert_eq!(
        fixture.call(linux_abi::syscall::CLOSE, &[other_description]),
        0
    );
    assert_eq!(fcntl_from(&fixture, OTHER, fd, F_SETLK, lock), 0);
    // And a process's end releases its locks.
    fixture.personality.process_ended(OTHER);
    assert_eq!(fixture.call(FCNTL, &[fd, F_SETLK, lock]), 0);
}

#[test]
fn description_locks_go_with_the_last_descriptor() {
    let fixture = Fixture::new();
    let fd = with_file(&fixture, flags::O_RDWR);
    let second = fixture.open(b"/tmp/f", flags::O_RDWR);
    let copy = fixture.call(DUP, &[fd]) as u64;
    let lock = put_lock(0, F_WRLCK, 0, 0, 0);
    assert_eq!(fixture.call(FCNTL, &[fd, F_OFD_SETLK, lock]), 0);
    // The same process's other description conflicts with it, and sees
    // no process holding it.
    assert_eq!(
        fixture.call(FCNTL, &[second, F_OFD_SETLK, lock]),
        err(Errno::EAGAIN)
    );
    assert_eq!(
        fixture.call(FCNTL, &[second, F_SETLK, lock]),
        err(Errno::EAGAIN)
    );
    assert_eq!(fixture.call(FCNTL, &[second, F_OFD_GETLK, lock]), 0);
    assert_eq!(read_lock(lock).l_pid, -1);
    let lock = put_lock(0, F_WRLCK, 0, 0, 0);
    assert_eq!(fixture.call(linux_abi::syscall::CLOSE, &[fd]), 0);
    assert_eq!(
        fixture.call(FCNTL, &[second, F_OFD_SETLK, lock]),
        err(Errno::EAGAIN)
    );
    assert_eq!(fixture.call(linux_abi::syscall::CLOSE, &[copy]), 0);
    assert_eq!(fixture.call(FCNTL, &[second, F_OFD_SETLK, lock]), 0);
}

#[test]
fn setlkw_waits_for_the_holder_and_a_signal_ends_the_wait() {
    let fixture = Fixture::new();
    let fd = with_file(&fixture, flags::O_RDWR);
    fixture.personality.process_forked(PID, OTHER);
    let lock = put_lock(0, F_WRLCK, 0, 0, 0);
    assert_eq!(fcntl_from(&fixture, OTHER, fd, F_SETLK, lock), 0);
    let other = fixture.personality.files(OTHER).expect("the other process");
    fake::once_blocked(|| fake::set_interrupted(true));
    assert_eq!(
        fixture.call(FCNTL, &[fd, F_SETLKW, lock]),
        err(Errno::EINTR)
    );
    fake::set_interrupted(false);
    // The holder closes its descriptor while the caller waits.
    fake::once_blocked(move || other.close(fd as i64).expect("open"));
    assert_eq!(fixture.call(FCNTL, &[fd, F_SETLKW, lock]), 0);
    assert!(fake::blocks()
        .iter()
        .all(|block| *block == ("fcntl record lock", None)));
}

/// `flock(fd, operation)` from [`PID`].
fn flock(fixture: &Fixture, fd: u64, operation: u32) -> i64 {
    fixture.call(FLOCK, &[fd, u64::from(operation)])
}

#[test]
fn flock_checks_the_operation_before_the_descriptor() {
    let fixture = Fixture::new();
    let fd = with_file(&fixture, flags::O_RDWR);
    assert_eq!(flock(&fixture, 99, LOCK_SH), err(Errno::EBADF));
    assert_eq!(flock(&fixture, 99, LOCK_NB), err(Errno::EINVAL));
    assert_eq!(flock(&fixture, fd, LOCK_NB), err(Errno::EINVAL));
    assert_eq!(flock(&fixture, fd, LOCK_SH | LOCK_EX), err(Errno::EINVAL));
    assert_eq!(flock(&fixture, fd, LOCK_MAND | LOCK_EX), 0);
    assert_eq!(flock(&fixture, fd, LOCK_UN), 0);
}

#[test]
fn flock_belongs_to_the_description() {
    let fixture = Fixture::new();
    let fd = with_file(&fixture, flags::O_RDONLY);
    let second = fixture.open(b"/tmp/f", flags::O_RDONLY);
    let copy = fixture.call(DUP, &[fd]) as u64;
    assert_eq!(flock(&fixture, fd, LOCK_EX | LOCK_NB), 0);
    assert_eq!(
        flock(&fixture, second, LOCK_SH | LOCK_NB),
        err(Errno::EWOULDBLOCK)
    );
    // The duplicate shares the lock: converting it through the copy
    // works, and lets the other description share.
    assert_eq!(flock(&fixture, copy, LOCK_SH | LOCK_NB), 0);
    assert_eq!(flock(&fixture, second, LOCK_SH | LOCK_NB), 0);
    assert_eq!(
        flock(&fixture, second, LOCK_EX | LOCK_NB),
        err(Errno::EWOULDBLOCK)
    );
    // That conversion lost `second` its shared lock; closing `fd` keeps
    // the lock (the copy is open), closing the copy releases it.
    assert_eq!(fixture.call(linux_abi::syscall::CLOSE, &[fd]), 0);
    assert_eq!(
        flock(&fixture, second, LOCK_EX | LOCK_NB),
        err(Errno::EWOULDBLOCK)
    );
    assert_eq!(fixture.call(linux_abi::syscall::CLOSE, &[copy]), 0);
    assert_eq!(flock(&fixture, second, LOCK_EX | LOCK_NB), 0);
}

#[test]
fn a_blocking_flock_waits_for_the_holder_or_a_signal() {
    let fixture = Fixture::new();
    let fd = with_file(&fixture, flags::O_RDWR);
    let second = fixture.open(b"/tmp/f", flags::O_RDWR);
    assert_eq!(flock(&fixture, fd, LOCK_EX), 0);
    fake::once_blocked(|| fake::set_interrupted(true));
    assert_eq!(flock(&fixture, second, LOCK_EX), err(Errno::EINTR));
    fake::set_interrupted(false);
    let process = fixture.process();
    fake::once_blocked(move || process.close(fd as i64).expect("open"));
    assert_eq!(flock(&fixture, second, LOCK_SH), 0);
    assert!(fake::blocks().iter().all(|block| *block == ("flock", None)));
}
