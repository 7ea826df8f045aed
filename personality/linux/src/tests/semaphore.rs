//! System V semaphores: `semget`, `semop`, `semtimedop`, `semctl`,
//! their argument checks, and waits that a change, a removal, a signal
//! or a timeout ends.

use linux_abi::{
    ipc::*,
    syscall::{SEMCTL, SEMGET, SEMOP, SEMTIMEDOP},
    time::Timespec,
};
use vfs::Errno;

use super::*;

/// A fixture that blocked calls' actions may use.
fn shared_fixture() -> &'static Fixture {
    alloc::boxed::Box::leak(alloc::boxed::Box::new(Fixture::new()))
}

/// Writes `struct sembuf`s `(number, operation, flags)` at `offset`: their
/// address.
fn put_operations(offset: u64, operations: &[(u16, i16, i16)]) -> u64 {
    let bytes: Vec<u8> = operations
        .iter()
        .flat_map(|&(number, operation, flags)| {
            let mut record = [0u8; 6];
            record[..2].copy_from_slice(&number.to_le_bytes());
            record[2..4].copy_from_slice(&operation.to_le_bytes());
            record[4..].copy_from_slice(&flags.to_le_bytes());
            record
        })
        .collect();
    put(offset, &bytes)
}

/// A new private set of `count` semaphores, mode 0600: its id.
fn new_set(fixture: &Fixture, count: u64) -> u64 {
    let id = fixture.call(SEMGET, &[0, count, u64::from(IPC_CREAT | 0o600)]);
    assert!(id >= 0, "semget: {id}");
    id as u64
}

#[test]
fn semget_and_ipc_stat_describe_the_set_and_its_maker() {
    let fixture = Fixture::new();
    let flags = u64::from(IPC_CREAT | IPC_EXCL | 0o600);
    let id = fixture.call(SEMGET, &[0x5eed, 3, flags]) as u64;
    assert_eq!(
        fixture.call(SEMGET, &[0x5eed, 3, flags]),
        err(Errno::EEXIST)
    );
    assert_eq!(fixture.call(SEMGET, &[0x5eed, 4, 0]), err(Errno::EINVAL));
    assert_eq!(fixture.call(SEMGET, &[0xbad, 1, 0]), err(Errno::ENOENT));
    assert_eq!(
        fixture.call(SEMCTL, &[id, 0, u64::from(IPC_STAT), at(0)]),
        0
    );
    let record = fake::peek(at(0), SemidDs::BYTES);
    assert_eq!(&record[0..4], &0x5eedu32.to_le_bytes(), "key");
    assert_eq!(&record[12..16], &0u32.to_le_bytes(), "cuid: root");
    assert_eq!(&record[20..24], &0o600u32.to_le_bytes(), "mode");
    assert_eq!(&record[64..72], &1_000i64.to_le_bytes(), "ctime");
    assert_eq!(&record[80..88], &3u64.to_le_bytes(), "nsems");
    assert_eq!(
        fixture.call(SEMCTL, &[id, 0, u64::from(IPC_STAT), UNMAPPED]),
        err(Errno::EFAULT)
    );
}

#[test]
fn semctl_sets_and_reads_values_and_who_changed_them() {
    let fixture = Fixture::new();
    let id = new_set(&fixture, 2);
    let command = |command: u32| u64::from(command);
    assert_eq!(fixture.call(SEMCTL, &[id, 1, command(SETVAL), 7]), 0);
    assert_eq!(fixture.call(SEMCTL, &[id, 1, command(GETVAL)]), 7);
    assert_eq!(fixture.call(SEMCTL, &[id, 1, command(GETPID)]), PID as i64);
    assert_eq!(fixture.call(SEMCTL, &[id, 0, command(GETNCNT)]), 0);
    assert_eq!(fixture.call(SEMCTL, &[id, 0, command(GETZCNT)]), 0);
    assert_eq!(
        fixture.call(SEMCTL, &[id, 2, command(GETVAL)]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(SEMCTL, &[id, 0, command(SETVAL), 32_768]),
        err(Errno::ERANGE)
    );
    let values = put(0x100, &[3, 0, 4, 0]);
    assert_eq!(fixture.call(SEMCTL, &[id, 0, command(SETALL), values]), 0);
    assert_eq!(
        fixture.call(SEMCTL, &[id, 0, command(GETALL), at(0x200)]),
        0
    );
    assert_eq!(fake::peek(at(0x200), 4), [3, 0, 4, 0]);
    assert_eq!(
        fixture.call(SEMCTL, &[id, 0, command(SETALL), UNMAPPED - 2]),
        err(Errno::EFAULT)
    );
    assert_eq!(fixture.call(SEMCTL, &[id, 0, 99]), err(Errno::EINVAL));
    assert_eq!(
        fixture.call(SEMCTL, &[u64::MAX, 0, command(GETVAL)]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(SEMCTL, &[id, 0, command(IPC_INFO), at(0)]), 0);
    assert_eq!(
        peek_u32(at(16)),
        SEMMSL,
        "semmsl, the fifth field of seminfo"
    );
    assert_eq!(fixture.call(SEMCTL, &[id, 0, command(IPC_RMID)]), 0);
    assert_eq!(
        fixture.call(SEMCTL, &[id, 0, command(GETVAL)]),
        err(Errno::EINVAL)
    );
}

#[test]
fn semop_checks_its_arguments() {
    let fixture = Fixture::new();
    let id = new_set(&fixture, 1);
    let one = put_operations(0, &[(0, 1, 0)]);
    assert_eq!(fixture.call(SEMOP, &[id, one, 0]), err(Errno::EINVAL));
    assert_eq!(fixture.call(SEMOP, &[u64::MAX, one, 1]), err(Errno::EINVAL));
    assert_eq!(fixture.call(SEMOP, &[id, one, 501]), err(Errno::E2BIG));
    assert_eq!(fixture.call(SEMOP, &[id, UNMAPPED, 1]), err(Errno::EFAULT));
    let far = put_operations(0x40, &[(1, 1, 0)]);
    assert_eq!(fixture.call(SEMOP, &[id, far, 1]), err(Errno::EFBIG));
    let bad_timeout = put(0x80, &Timespec { sec: 0, nsec: -1 }.to_bytes());
    assert_eq!(
        fixture.call(SEMTIMEDOP, &[id, one, 1, bad_timeout]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(SEMOP, &[id, one, 1]), 0);
    assert_eq!(fixture.call(SEMCTL, &[id, 0, u64::from(GETVAL)]), 1);
}

#[test]
fn a_blocked_semop_is_counted_and_proceeds_once_the_value_grows() {
    let fixture = shared_fixture();
    let id = new_set(fixture, 1);
    let take = put_operations(0, &[(0, -1, 0)]);
    fake::once_blocked(move || {
        let waiting = fixture.call(SEMCTL, &[id, 0, u64::from(GETNCNT)]);
        assert_eq!(waiting, 1, "the blocked caller counts");
        assert_eq!(fixture.call(SEMCTL, &[id, 0, u64::from(SETVAL), 1]), 0);
    });
    assert_eq!(fixture.call(SEMOP, &[id, take, 1]), 0);
    assert_eq!(fixture.call(SEMCTL, &[id, 0, u64::from(GETVAL)]), 0);
    assert_eq!(fixture.call(SEMCTL, &[id, 0, u64::from(GETNCNT)]), 0);
    assert_eq!(fake::blocks(), [("semop", None)]);
}

#[test]
fn a_semop_waiting_on_a_removed_set_is_eidrm() {
    let fixture = shared_fixture();
    let id = new_set(fixture, 1);
    let wait_for_zero = put_operations(0, &[(0, 0, 0)]);
    assert_eq!(fixture.call(SEMCTL, &[id, 0, u64::from(SETVAL), 1]), 0);
    fake::once_blocked(move || {
        assert_eq!(fixture.call(SEMCTL, &[id, 0, u64::from(GETZCNT)]), 1);
        assert_eq!(fixture.call(SEMCTL, &[id, 0, u64::from(IPC_RMID)]), 0);
    });
    assert_eq!(
        fixture.call(SEMOP, &[id, wait_for_zero, 1]),
        err(Errno::EIDRM)
    );
}

#[test]
fn a_semop_ends_with_eintr_on_a_signal_and_eagain_on_nowait_or_timeout() {
    let fixture = Fixture::new();
    let id = new_set(&fixture, 1);
    let take = put_operations(0, &[(0, -1, 0)]);
    let take_nowait = put_operations(0x10, &[(0, -1, IPC_NOWAIT)]);
    assert_eq!(
        fixture.call(SEMOP, &[id, take_nowait, 1]),
        err(Errno::EAGAIN)
    );
    let timeout = put(
        0x80,
        &Timespec {
            sec: 0,
            nsec: 5_000,
        }
        .to_bytes(),
    );
    assert_eq!(
        fixture.call(SEMTIMEDOP, &[id, take, 1, timeout]),
        err(Errno::EAGAIN)
    );
    fake::once_blocked(|| fake::set_interrupted(true));
    assert_eq!(fixture.call(SEMOP, &[id, take, 1]), err(Errno::EINTR));
    fake::set_interrupted(false);
    assert_eq!(fixture.call(SEMCTL, &[id, 0, u64::from(GETNCNT)]), 0);
}

#[test]
fn undo_is_applied_when_the_process_ends() {
    let fixture = Fixture::new();
    let id = new_set(&fixture, 1);
    assert_eq!(fixture.call(SEMCTL, &[id, 0, u64::from(SETVAL), 2]), 0);
    fixture.personality.process_forked(PID, PID + 1);
    let take = put_operations(0, &[(0, -2, SEM_UNDO)]);
    let mut args = [0u64; 6];
    args[..3].copy_from_slice(&[id, take, 1]);
    assert_eq!(fixture.personality.handle(PID + 1, SEMOP, args), Some(0));
    assert_eq!(fixture.call(SEMCTL, &[id, 0, u64::from(GETVAL)]), 0);
    fixture.personality.process_ended(PID + 1);
    assert_eq!(fixture.call(SEMCTL, &[id, 0, u64::from(GETVAL)]), 2);
    assert_eq!(
        fixture.call(SEMCTL, &[id, 0, u64::from(GETPID)]),
        (PID + 1) as i64
    );
}
