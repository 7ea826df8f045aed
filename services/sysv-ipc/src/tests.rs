//! The semaphore table against Linux's rules: ids, `semget`'s errors,
//! permissions, all-or-nothing operations, undo and the `semctl` reads.

use linux_abi::ipc::*;

use crate::*;

const ROOT: Caller<'static> = Caller {
    pid: 10,
    uid: 0,
    gid: 0,
    groups: &[],
    may_bypass_modes: true,
    may_administer: true,
};

const USER: Caller<'static> = Caller {
    pid: 20,
    uid: 1000,
    gid: 1000,
    groups: &[],
    may_bypass_modes: false,
    may_administer: false,
};

fn operation(number: u16, operation: i16, flags: i16) -> Sembuf {
    Sembuf {
        number,
        operation,
        flags,
    }
}

#[test]
fn semget_makes_finds_and_refuses_as_linux() {
    let mut sets = SemaphoreSets::new();
    assert_eq!(sets.get(5, 0, IPC_CREAT, &ROOT, 1), Err(Errno::EINVAL));
    assert_eq!(sets.get(5, -1, IPC_CREAT, &ROOT, 1), Err(Errno::EINVAL));
    assert_eq!(sets.get(5, 32_001, IPC_CREAT, &ROOT, 1), Err(Errno::EINVAL));
    assert_eq!(sets.get(5, 1, 0o600, &ROOT, 1), Err(Errno::ENOENT));
    let id = sets
        .get(5, 3, IPC_CREAT | IPC_EXCL | 0o600, &ROOT, 1)
        .unwrap();
    assert_eq!(sets.get(5, 0, 0, &ROOT, 1), Ok(id), "0 finds any size");
    assert_eq!(sets.get(5, 3, IPC_CREAT, &ROOT, 1), Ok(id));
    assert_eq!(sets.get(5, 4, 0, &ROOT, 1), Err(Errno::EINVAL));
    assert_eq!(
        sets.get(5, 3, IPC_CREAT | IPC_EXCL, &ROOT, 1),
        Err(Errno::EEXIST)
    );
    assert_eq!(sets.get(5, 1, 0o400, &USER, 1), Err(Errno::EACCES));
    let private = sets.get(IPC_PRIVATE, 1, 0o600, &ROOT, 1).unwrap();
    assert_ne!(private, id);
    assert_eq!(sets.len_of(id), Ok(3));
}

#[test]
fn a_removed_sets_id_names_nothing_even_when_its_slot_is_reused() {
    let mut sets = SemaphoreSets::new();
    let first = sets.get(IPC_PRIVATE, 1, 0o600, &ROOT, 1).unwrap();
    assert_eq!(sets.remove(first, &ROOT), Ok(()));
    let second = sets.get(IPC_PRIVATE, 1, 0o600, &ROOT, 1).unwrap();
    assert_ne!(first, second);
    assert_eq!(sets.len_of(first), Err(Errno::EINVAL));
    assert_eq!(sets.remove(first, &ROOT), Err(Errno::EINVAL));
    assert_eq!(sets.len_of(-1), Err(Errno::EINVAL));
}

#[test]
fn stat_reports_owner_maker_mode_and_size() {
    let mut sets = SemaphoreSets::new();
    let id = sets.get(7, 2, IPC_CREAT | 0o640, &USER, 123).unwrap();
    let (record, same) = sets.stat(id, false, true, &USER).unwrap();
    assert_eq!(same, id);
    assert_eq!(record.perm.key, 7);
    assert_eq!((record.perm.uid, record.perm.cuid), (1000, 1000));
    assert_eq!(record.perm.mode, 0o640);
    assert_eq!((record.nsems, record.otime, record.ctime), (2, 0, 123));
    let other = Caller {
        uid: 2000,
        gid: 2000,
        ..USER
    };
    assert_eq!(sets.stat(id, false, true, &other), Err(Errno::EACCES));
    assert!(sets.stat(id, false, false, &other).is_ok(), "SEM_STAT_ANY");
    let group = Caller {
        uid: 2000,
        groups: &[1000],
        ..USER
    };
    assert!(sets.stat(id, false, true, &group).is_ok());
}

#[test]
fn only_owner_maker_or_administrator_may_set_or_remove() {
    let mut sets = SemaphoreSets::new();
    let id = sets.get(IPC_PRIVATE, 1, 0o666, &ROOT, 1).unwrap();
    assert_eq!(
        sets.set_ownership(id, (1000, 1000, 0o600), &USER, 2),
        Err(Errno::EPERM)
    );
    assert_eq!(sets.remove(id, &USER), Err(Errno::EPERM));
    assert_eq!(
        sets.set_ownership(id, (1000, 1000, 0o7600), &ROOT, 2),
        Ok(())
    );
    let (record, _) = sets.stat(id, false, true, &ROOT).unwrap();
    assert_eq!(
        (record.perm.uid, record.perm.mode, record.ctime),
        (1000, 0o600, 2)
    );
    assert_eq!(sets.remove(id, &USER), Ok(()), "now its owner");
}

#[test]
fn operations_apply_all_or_none() {
    let mut sets = SemaphoreSets::new();
    let id = sets.get(IPC_PRIVATE, 2, 0o600, &ROOT, 1).unwrap();
    assert_eq!(sets.set_value(id, 0, 1, &ROOT, 2), Ok(()));
    // Takes from 0 and from 1 (empty): blocks, and 0 keeps its 1.
    let both = [operation(0, -1, 0), operation(1, -1, 0)];
    assert_eq!(
        sets.operate(id, &both, &ROOT, 3),
        Ok(Outcome::Blocked {
            semaphore: 1,
            wait: Wait::Increase
        })
    );
    assert_eq!(sets.status(id, 0, Status::Value, &ROOT), Ok(1));
    let nowait = [operation(0, -1, 0), operation(1, -1, IPC_NOWAIT)];
    assert_eq!(sets.operate(id, &nowait, &ROOT, 3), Err(Errno::EAGAIN));
    assert_eq!(
        sets.operate(id, &[operation(0, 0, 0)], &ROOT, 3),
        Ok(Outcome::Blocked {
            semaphore: 0,
            wait: Wait::Zero
        })
    );
    let up = Caller { pid: 33, ..ROOT };
    assert_eq!(
        sets.operate(id, &[operation(1, 2, 0)], &up, 4),
        Ok(Outcome::Done)
    );
    assert_eq!(sets.operate(id, &both, &ROOT, 5), Ok(Outcome::Done));
    assert_eq!(sets.values(id, &ROOT), Ok(vec![0, 1]));
    assert_eq!(sets.status(id, 1, Status::LastPid, &ROOT), Ok(10));
    assert_eq!(sets.stat(id, false, true, &ROOT).unwrap().0.otime, 5);
}

#[test]
fn operations_check_count_range_and_permission() {
    let mut sets = SemaphoreSets::new();
    let id = sets.get(IPC_PRIVATE, 1, 0o644, &ROOT, 1).unwrap();
    assert_eq!(sets.operate(id, &[], &ROOT, 1), Err(Errno::EINVAL));
    let many = vec![operation(0, 0, 0); 501];
    assert_eq!(sets.operate(id, &many, &ROOT, 1), Err(Errno::E2BIG));
    assert_eq!(
        sets.operate(id, &[operation(1, 1, 0)], &ROOT, 1),
        Err(Errno::EFBIG)
    );
    assert_eq!(
        sets.operate(id, &[operation(0, 1, 0)], &USER, 1),
        Err(Errno::EACCES)
    );
    assert_eq!(
        sets.operate(id, &[operation(0, 0, 0)], &USER, 1),
        Ok(Outcome::Done),
        "waiting for zero only reads"
    );
    assert_eq!(sets.set_value(id, 0, SEMVMX, &ROOT, 1), Ok(()));
    assert_eq!(
        sets.operate(id, &[operation(0, 1, 0)], &ROOT, 1),
        Err(Errno::ERANGE)
    );
    assert_eq!(
        sets.set_value(id, 0, SEMVMX + 1, &ROOT, 1),
        Err(Errno::ERANGE)
    );
    assert_eq!(sets.set_value(id, 0, -1, &ROOT, 1), Err(Errno::ERANGE));
    assert_eq!(sets.set_value(id, 1, 0, &ROOT, 1), Err(Errno::EINVAL));
}

#[test]
fn undo_adjustments_are_applied_when_the_process_ends() {
    let mut sets = SemaphoreSets::new();
    let id = sets.get(IPC_PRIVATE, 2, 0o600, &ROOT, 1).unwrap();
    assert_eq!(sets.set_all(id, &[5, 0], &ROOT, 1), Ok(()));
    let ops = [operation(0, -2, SEM_UNDO), operation(1, 3, SEM_UNDO)];
    assert_eq!(sets.operate(id, &ops, &USER_ROOT, 2), Ok(Outcome::Done));
    assert_eq!(sets.values(id, &ROOT), Ok(vec![3, 3]));
    assert!(!sets.process_ended(99));
    assert!(sets.process_ended(USER_ROOT.pid));
    assert_eq!(sets.values(id, &ROOT), Ok(vec![5, 0]));
    // SETVAL drops the adjustment of its semaphore.
    assert_eq!(sets.operate(id, &ops, &USER_ROOT, 2), Ok(Outcome::Done));
    assert_eq!(sets.set_value(id, 1, 1, &ROOT, 3), Ok(()));
    assert!(sets.process_ended(USER_ROOT.pid));
    assert_eq!(sets.values(id, &ROOT), Ok(vec![5, 1]));
}

/// A privileged caller with a process of its own.
const USER_ROOT: Caller<'static> = Caller { pid: 44, ..ROOT };

#[test]
fn waiters_are_counted_per_semaphore_and_kind() {
    let mut sets = SemaphoreSets::new();
    let id = sets.get(IPC_PRIVATE, 2, 0o600, &ROOT, 1).unwrap();
    sets.count_waiter(id, 1, Wait::Increase, true);
    sets.count_waiter(id, 1, Wait::Zero, true);
    sets.count_waiter(id, 1, Wait::Zero, true);
    let waiting = |sets: &SemaphoreSets, wait| sets.status(id, 1, Status::Waiting(wait), &ROOT);
    assert_eq!(waiting(&sets, Wait::Increase), Ok(1));
    assert_eq!(waiting(&sets, Wait::Zero), Ok(2));
    sets.count_waiter(id, 1, Wait::Zero, false);
    assert_eq!(waiting(&sets, Wait::Zero), Ok(1));
    assert_eq!(sets.status(id, 0, Status::Value, &USER), Err(Errno::EACCES));
}

#[test]
fn info_reports_limits_or_use_and_the_highest_index() {
    let mut sets = SemaphoreSets::new();
    assert_eq!(sets.info(false).1, 0);
    sets.get(IPC_PRIVATE, 2, 0o600, &ROOT, 1).unwrap();
    let second = sets.get(IPC_PRIVATE, 3, 0o600, &ROOT, 1).unwrap();
    let (limits, highest) = sets.info(false);
    assert_eq!(highest, 1);
    assert_eq!(limits.fields[4], SEMMSL as i32);
    let (usage, _) = sets.info(true);
    assert_eq!((usage.fields[7], usage.fields[9]), (2, 5));
    sets.remove(second, &ROOT).unwrap();
    assert_eq!(sets.info(true).0.fields[9], 2);
    let (record, id) = sets.stat(0, true, true, &ROOT).unwrap();
    assert_eq!((record.nsems, id & 0x7fff), (2, 0));
}
