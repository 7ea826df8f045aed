//! System V semaphores: `semget`, `semop`, `semtimedop`, `semctl`, on
//! the sets of `services/sysv-ipc` (one table for the whole system, as
//! Linux has one per IPC namespace).
//!
//! A `semop` that cannot proceed counts itself as a waiter of the
//! semaphore it waits on (`GETNCNT`, `GETZCNT`) and blocks on
//! [`Semaphores::changed`], which every change of any set wakes
//! (`semop`, `SETVAL`, `SETALL`, `IPC_RMID`, a process's undo at its
//! end); woken, it tries again. A set removed meanwhile is `EIDRM`; a
//! signal is `EINTR` (never restarted, as signal(7) says of `semop`); a
//! `semtimedop` timeout is `EAGAIN`.

use alloc::vec::Vec;

use linux_abi::{
    ipc::{
        Sembuf, SemidDs, GETALL, GETNCNT, GETPID, GETVAL, GETZCNT, IPC_INFO, IPC_RMID, IPC_SET,
        IPC_STAT, SEMOPM, SEM_INFO, SEM_STAT, SEM_STAT_ANY, SETALL, SETVAL,
    },
    time::Timespec,
};
use sysv_ipc::{Caller, Outcome, SemaphoreSets, Status, Wait};
use vfs::Errno;

use crate::{
    credentials::{Credentials, CAP_IPC_OWNER, CAP_SYS_ADMIN},
    machine::{Clock, Machine},
    user,
    wait::{wait_on, FileWaitQueue},
    LinuxProcess,
};

/// The system's semaphore sets and the queue their waiters block on.
pub(crate) struct Semaphores {
    sets: spin::Mutex<SemaphoreSets>,
    /// Woken whenever a set changes: blocked `semop`s look again.
    changed: FileWaitQueue,
    /// The wall clock (`sem_otime`, `sem_ctime`).
    clock: vfs::Clock,
}

impl Semaphores {
    /// No sets; times from `clock`.
    pub(crate) fn new(clock: vfs::Clock) -> Semaphores {
        Semaphores {
            sets: spin::Mutex::new(SemaphoreSets::new()),
            changed: FileWaitQueue::new(),
            clock,
        }
    }

    /// Seconds since the epoch.
    fn now(&self) -> i64 {
        (self.clock)().sec
    }

    /// Process `pid` ended: its `SEM_UNDO` adjustments are applied.
    pub(crate) fn process_ended(&self, pid: u64) {
        let changed = self.sets.lock().process_ended(pid as u32);
        if changed {
            self.changed.wake_all();
        }
    }
}

/// The IPC view of a process's credentials.
fn caller_of(credentials: &Credentials, pid: u64) -> Caller<'_> {
    Caller {
        pid: pid as u32,
        uid: credentials.users.effective,
        gid: credentials.groups.effective,
        groups: &credentials.supplementary,
        may_bypass_modes: credentials.capable(CAP_IPC_OWNER),
        may_administer: credentials.capable(CAP_SYS_ADMIN),
    }
}

/// `semget(key, nsems, semflg)`.
pub(crate) fn semget(
    semaphores: &Semaphores,
    files: &LinuxProcess,
    pid: u64,
    key: u64,
    count: u64,
    flags: u64,
) -> Result<i64, Errno> {
    let credentials = files.credentials();
    let caller = caller_of(&credentials, pid);
    // `key_t` and `int` arguments: the low 32 bits.
    semaphores
        .sets
        .lock()
        .get(
            key as i32,
            count as i32,
            flags as u32,
            &caller,
            semaphores.now(),
        )
        .map(i64::from)
}

/// `semtimedop(semid, sops, nsops, timeout)` (and `semop`, with no
/// timeout: `timeout` 0).
pub(crate) fn semtimedop(
    semaphores: &Semaphores,
    files: &LinuxProcess,
    pid: u64,
    id: u64,
    operations: u64,
    count: u64,
    timeout: u64,
) -> Result<i64, Errno> {
    let id = id as i32;
    if count == 0 || id < 0 {
        return Err(Errno::EINVAL);
    }
    if count > u64::from(SEMOPM) {
        return Err(Errno::E2BIG);
    }
    let operations = read_operations(operations, count as usize)?;
    let deadline = match timeout {
        0 => None,
        address => {
            let mut bytes = [0; Timespec::BYTES];
            user::read(address, &mut bytes)?;
            let timeout_ns = Timespec::from_bytes(&bytes)
                .to_nanoseconds()
                .ok_or(Errno::EINVAL)?;
            Some(Machine::uptime_ns().saturating_add(timeout_ns))
        }
    };
    let credentials = files.credentials();
    let caller = caller_of(&credentials, pid);
    // The semaphore this caller is counted as waiting on, if it is.
    let mut waiting: Option<(u16, Wait)> = None;
    let attempt = || {
        let mut sets = semaphores.sets.lock();
        let has_waited = waiting.is_some();
        if let Some((number, wait)) = waiting.take() {
            sets.count_waiter(id, number, wait, false);
        }
        match sets.operate(id, &operations, &caller, semaphores.now()) {
            Ok(Outcome::Done) => Some(Ok(0)),
            Ok(Outcome::Blocked { semaphore, wait }) => {
                sets.count_waiter(id, semaphore, wait, true);
                waiting = Some((semaphore, wait));
                None
            }
            // The set went while this caller waited on it.
            Err(Errno::EINVAL) if has_waited => Some(Err(Errno::EIDRM)),
            Err(error) => Some(Err(error)),
        }
    };
    let answer = wait_on(&semaphores.changed, "semop", deadline, attempt);
    if let Some((number, wait)) = waiting {
        semaphores.sets.lock().count_waiter(id, number, wait, false);
    }
    let result = match answer {
        Ok(Some(result)) => result,
        // The timeout passed.
        Ok(None) => Err(Errno::EAGAIN),
        Err(error) => Err(error),
    };
    if result.is_ok() {
        semaphores.changed.wake_all();
    }
    result
}

/// The `count` operations at `address`.
fn read_operations(address: u64, count: usize) -> Result<Vec<Sembuf>, Errno> {
    let mut bytes = alloc::vec![0; count * Sembuf::BYTES];
    user::read(address, &mut bytes)?;
    Ok(bytes
        .chunks_exact(Sembuf::BYTES)
        .map(|chunk| {
            let mut record = [0; Sembuf::BYTES];
            record.copy_from_slice(chunk);
            Sembuf::from_bytes(&record)
        })
        .collect())
}

/// `semctl(semid, semnum, cmd, arg)`: `arg` is the `union semun`, passed
/// by value (a value for `SETVAL`, an address for the others).
pub(crate) fn semctl(
    semaphores: &Semaphores,
    files: &LinuxProcess,
    pid: u64,
    id: u64,
    number: u64,
    command: u64,
    argument: u64,
) -> Result<i64, Errno> {
    let (id, number) = (id as i32, number as i32);
    if id < 0 {
        return Err(Errno::EINVAL);
    }
    let credentials = files.credentials();
    let caller = caller_of(&credentials, pid);
    let now = semaphores.now();
    let status = |what| {
        semaphores
            .sets
            .lock()
            .status(id, number, what, &caller)
            .map(i64::from)
    };
    let result = match command as u32 {
        IPC_INFO | SEM_INFO => {
            let (info, highest) = semaphores.sets.lock().info(command as u32 == SEM_INFO);
            user::write(argument, &info.to_bytes())?;
            return Ok(i64::from(highest));
        }
        IPC_STAT => {
            let (record, _) = semaphores.sets.lock().stat(id, false, true, &caller)?;
            user::write(argument, &record.to_bytes())?;
            return Ok(0);
        }
        SEM_STAT | SEM_STAT_ANY => {
            let check = command as u32 == SEM_STAT;
            let (record, full_id) = semaphores.sets.lock().stat(id, true, check, &caller)?;
            user::write(argument, &record.to_bytes())?;
            return Ok(i64::from(full_id));
        }
        GETALL => {
            let values = semaphores.sets.lock().values(id, &caller)?;
            let bytes: Vec<u8> = values
                .iter()
                .flat_map(|value| value.to_le_bytes())
                .collect();
            user::write(argument, &bytes)?;
            return Ok(0);
        }
        GETPID => return status(Status::LastPid),
        GETVAL => return status(Status::Value),
        GETNCNT => return status(Status::Waiting(Wait::Increase)),
        GETZCNT => return status(Status::Waiting(Wait::Zero)),
        SETVAL => semaphores
            .sets
            .lock()
            .set_value(id, number, argument as i32, &caller, now),
        SETALL => {
            let count = semaphores.sets.lock().len_of(id)?;
            let mut bytes = alloc::vec![0; count * 2];
            user::read(argument, &mut bytes)?;
            let values: Vec<u16> = bytes
                .chunks_exact(2)
                .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
                .collect();
            semaphores.sets.lock().set_all(id, &values, &caller, now)
        }
        IPC_SET => {
            let mut bytes = [0; SemidDs::BYTES];
            user::read(argument, &mut bytes)?;
            let ownership = SemidDs::ownership_from_bytes(&bytes);
            return semaphores
                .sets
                .lock()
                .set_ownership(id, ownership, &caller, now)
                .map(|()| 0);
        }
        IPC_RMID => semaphores.sets.lock().remove(id, &caller),
        _ => return Err(Errno::EINVAL),
    };
    // A value changed or the set went: blocked callers look again.
    result?;
    semaphores.changed.wake_all();
    Ok(0)
}
