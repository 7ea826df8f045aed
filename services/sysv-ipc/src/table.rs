//! The system's semaphore sets, by key and by id, and the `semget` and
//! `semctl` rules (Linux's `ipc/util.c` ids and `ipc/sem.c`).
//!
//! An id is a slot index plus the slot's sequence number times 2^15
//! (Linux's `ipc_buildid` with `IPCMNI` 32768): an id of a removed set
//! names nothing (`EINVAL`), even after its slot is reused.

use alloc::vec::Vec;

use linux_abi::{
    ipc::{
        Sembuf, SemidDs, Seminfo, IPC_CREAT, IPC_EXCL, IPC_PRIVATE, SEMAEM, SEMMNI, SEMMNS, SEMMSL,
        SEMOPM, SEMUSZ, SEMVMX,
    },
    Errno,
};

use crate::{
    permissions::{self, Caller, Permissions},
    set::{Outcome, SemaphoreSet, Wait},
};

/// Bits of an id that are the slot index (`IPCMNI_SHIFT`).
const INDEX_BITS: u32 = 15;

/// What `semctl`'s `GETPID`, `GETVAL`, `GETNCNT` and `GETZCNT` read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The last process to change it.
    LastPid,
    /// Its value.
    Value,
    /// Callers waiting for `Wait`.
    Waiting(Wait),
}

/// Every semaphore set of the system (one IPC namespace).
#[derive(Default)]
pub struct SemaphoreSets {
    /// Sets by slot index.
    slots: Vec<Option<SemaphoreSet>>,
    /// The sequence number the next set gets (Linux's `ids->seq`).
    next_sequence: u16,
    /// Semaphores in all sets (bounded by `SEMMNS`).
    semaphores_in_use: usize,
}

impl SemaphoreSets {
    /// No sets.
    pub fn new() -> SemaphoreSets {
        SemaphoreSets::default()
    }

    /// `semget(key, count, flags)` by `caller` at `now`: the id of the set
    /// `key` names, made if `IPC_CREAT` asks (`IPC_PRIVATE` always makes
    /// one). `EINVAL` for a count outside `0..=SEMMSL` (or 0 to make one,
    /// or more than an existing set has), `ENOENT` without a set or
    /// `IPC_CREAT`, `EEXIST` with `IPC_CREAT | IPC_EXCL` and a set,
    /// `EACCES` when `flags`' permission bits are not granted, `ENOSPC`
    /// past the system's limits.
    pub fn get(
        &mut self,
        key: i32,
        count: i32,
        flags: u32,
        caller: &Caller<'_>,
        now: i64,
    ) -> Result<i32, Errno> {
        let count = usize::try_from(count)
            .ok()
            .filter(|&count| count <= SEMMSL as usize)
            .ok_or(Errno::EINVAL)?;
        if key != IPC_PRIVATE {
            if let Some(index) = self.index_of_key(key) {
                if flags & IPC_CREAT != 0 && flags & IPC_EXCL != 0 {
                    return Err(Errno::EEXIST);
                }
                let set = self.slots[index].as_ref().ok_or(Errno::EINVAL)?;
                if count > set.len() {
                    return Err(Errno::EINVAL);
                }
                set.permissions.check(caller, flags)?;
                return Ok(id_of(index, set.sequence));
            }
            if flags & IPC_CREAT == 0 {
                return Err(Errno::ENOENT);
            }
        }
        self.make(key, count, flags, caller, now)
    }

    /// A new set of `count` semaphores for `key`: its id.
    fn make(
        &mut self,
        key: i32,
        count: usize,
        flags: u32,
        caller: &Caller<'_>,
        now: i64,
    ) -> Result<i32, Errno> {
        if count == 0 {
            return Err(Errno::EINVAL);
        }
        if self.semaphores_in_use + count > SEMMNS as usize {
            return Err(Errno::ENOSPC);
        }
        let index = match self.slots.iter().position(Option::is_none) {
            Some(index) => index,
            None if self.slots.len() < SEMMNI as usize => {
                self.slots.push(None);
                self.slots.len() - 1
            }
            None => return Err(Errno::ENOSPC),
        };
        let sequence = self.next_sequence;
        // Linux's sequence wraps at INT_MAX >> IPCMNI_SHIFT, so ids stay
        // positive.
        self.next_sequence = self.next_sequence.wrapping_add(1);
        let permissions = Permissions::new(key, flags, caller);
        self.slots[index] = Some(SemaphoreSet::new(permissions, sequence, count, now));
        self.semaphores_in_use += count;
        Ok(id_of(index, sequence))
    }

    fn index_of_key(&self, key: i32) -> Option<usize> {
        self.slots
            .iter()
            .position(|slot| slot.as_ref().is_some_and(|set| set.permissions.key == key))
    }

    /// The set `id` names (`EINVAL` for none: a negative id, an empty
    /// slot, or a slot since reused).
    pub fn set(&self, id: i32) -> Result<&SemaphoreSet, Errno> {
        let (index, sequence) = split(id)?;
        self.slots
            .get(index)
            .and_then(Option::as_ref)
            .filter(|set| set.sequence == sequence)
            .ok_or(Errno::EINVAL)
    }

    fn set_mut(&mut self, id: i32) -> Result<&mut SemaphoreSet, Errno> {
        let (index, sequence) = split(id)?;
        self.slots
            .get_mut(index)
            .and_then(Option::as_mut)
            .filter(|set| set.sequence == sequence)
            .ok_or(Errno::EINVAL)
    }

    /// `semop` on set `id` by `caller` at `now`: `E2BIG` past `SEMOPM`
    /// operations, `EINVAL` for no operation or no such set, `EFBIG` for a
    /// semaphore number past the set's end, `EACCES` without write
    /// permission (read permission when every operation waits for zero),
    /// then [`SemaphoreSet::operate`].
    pub fn operate(
        &mut self,
        id: i32,
        operations: &[Sembuf],
        caller: &Caller<'_>,
        now: i64,
    ) -> Result<Outcome, Errno> {
        Self::check_operations(operations)?;
        let set = self.set_mut(id)?;
        if operations
            .iter()
            .any(|operation| usize::from(operation.number) >= set.len())
        {
            return Err(Errno::EFBIG);
        }
        let alters = operations.iter().any(|operation| operation.operation != 0);
        let wanted = if alters {
            permissions::WRITE
        } else {
            permissions::READ
        };
        set.permissions.check(caller, wanted)?;
        set.operate(operations, caller.pid, now)
    }

    /// The checks of a `semop`'s operation count that come before the
    /// set is looked at (`EINVAL` for none, `E2BIG` past `SEMOPM`).
    pub fn check_operations(operations: &[Sembuf]) -> Result<(), Errno> {
        match operations.len() {
            0 => Err(Errno::EINVAL),
            count if count > SEMOPM as usize => Err(Errno::E2BIG),
            _ => Ok(()),
        }
    }

    /// A caller blocked in `semop` starts (`is_waiting`) or stops waiting
    /// on semaphore `number` of set `id` (which may be gone: then
    /// nothing is counted).
    pub fn count_waiter(&mut self, id: i32, number: u16, wait: Wait, is_waiting: bool) {
        if let Ok(set) = self.set_mut(id) {
            set.count_waiter(usize::from(number), wait, is_waiting);
        }
    }

    /// `IPC_STAT` of set `id` (read permission), or with `by_index` the set
    /// in slot `id` (`SEM_STAT`; `SEM_STAT_ANY` with `check` false): the
    /// record and the set's id.
    pub fn stat(
        &self,
        id: i32,
        by_index: bool,
        check: bool,
        caller: &Caller<'_>,
    ) -> Result<(SemidDs, i32), Errno> {
        let set = if by_index {
            let index = usize::try_from(id).map_err(|_| Errno::EINVAL)?;
            self.slots
                .get(index)
                .and_then(Option::as_ref)
                .ok_or(Errno::EINVAL)?
        } else {
            self.set(id)?
        };
        if check {
            set.permissions.check(caller, permissions::READ)?;
        }
        let index = if by_index { id } else { split(id)?.0 as i32 };
        let permissions = &set.permissions;
        let record = SemidDs {
            perm: linux_abi::ipc::IpcPerm {
                key: permissions.key,
                uid: permissions.uid,
                gid: permissions.gid,
                cuid: permissions.creator_uid,
                cgid: permissions.creator_gid,
                mode: permissions.mode,
                seq: set.sequence,
            },
            otime: set.operation_time,
            ctime: set.change_time,
            nsems: set.len() as u64,
        };
        Ok((record, id_of(index as usize, set.sequence)))
    }

    /// `IPC_SET`: set `id`'s owner, group and permission bits, by its
    /// owner, maker or an administrator (`EPERM`).
    pub fn set_ownership(
        &mut self,
        id: i32,
        (uid, gid, mode): (u32, u32, u32),
        caller: &Caller<'_>,
        now: i64,
    ) -> Result<(), Errno> {
        let set = self.set_mut(id)?;
        set.permissions.check_control(caller)?;
        set.permissions.uid = uid;
        set.permissions.gid = gid;
        set.permissions.mode = mode & linux_abi::ipc::IPC_PERMISSION_BITS;
        set.change_time = now;
        Ok(())
    }

    /// `IPC_RMID`: removes set `id`, by its owner, maker or an
    /// administrator (`EPERM`). Its waiters then find it gone.
    pub fn remove(&mut self, id: i32, caller: &Caller<'_>) -> Result<(), Errno> {
        self.set(id)?.permissions.check_control(caller)?;
        let (index, _) = split(id)?;
        if let Some(set) = self.slots[index].take() {
            self.semaphores_in_use -= set.len();
        }
        while self.slots.last().is_some_and(Option::is_none) {
            self.slots.pop();
        }
        Ok(())
    }

    /// `GETPID`, `GETVAL`, `GETNCNT`, `GETZCNT` of semaphore `number` of
    /// set `id` (read permission; `EINVAL` past the set's end).
    pub fn status(
        &self,
        id: i32,
        number: i32,
        what: Status,
        caller: &Caller<'_>,
    ) -> Result<i32, Errno> {
        let set = self.set(id)?;
        set.permissions.check(caller, permissions::READ)?;
        let number = semaphore_index(set, number)?;
        Ok(match what {
            Status::LastPid => set.last_pid(number) as i32,
            Status::Value => set.value(number),
            Status::Waiting(wait) => set.waiting(number, wait) as i32,
        })
    }

    /// `GETALL`: every value of set `id` (read permission).
    pub fn values(&self, id: i32, caller: &Caller<'_>) -> Result<Vec<u16>, Errno> {
        let set = self.set(id)?;
        set.permissions.check(caller, permissions::READ)?;
        Ok(set.values())
    }

    /// How many semaphores set `id` has.
    pub fn len_of(&self, id: i32) -> Result<usize, Errno> {
        self.set(id).map(SemaphoreSet::len)
    }

    /// `SETVAL`: semaphore `number` of set `id` to `value` (`ERANGE`
    /// outside `0..=SEMVMX`, checked first, `EINVAL` past the set's end,
    /// then write permission).
    pub fn set_value(
        &mut self,
        id: i32,
        number: i32,
        value: i32,
        caller: &Caller<'_>,
        now: i64,
    ) -> Result<(), Errno> {
        if !(0..=SEMVMX).contains(&value) {
            return Err(Errno::ERANGE);
        }
        let set = self.set_mut(id)?;
        let number = semaphore_index(set, number)?;
        set.permissions.check(caller, permissions::WRITE)?;
        set.set_value(number, value, caller.pid, now)
    }

    /// `SETALL`: every value of set `id` (write permission; `values` has
    /// one per semaphore).
    pub fn set_all(
        &mut self,
        id: i32,
        values: &[u16],
        caller: &Caller<'_>,
        now: i64,
    ) -> Result<(), Errno> {
        let set = self.set_mut(id)?;
        set.permissions.check(caller, permissions::WRITE)?;
        if values.len() != set.len() {
            return Err(Errno::EINVAL);
        }
        set.set_all(values, caller.pid, now)
    }

    /// `IPC_INFO` (`in_use` false: the limits) or `SEM_INFO` (`semusz`
    /// counts the sets, `semaem` the semaphores), and the highest slot
    /// index in use (0 with none), which both return.
    pub fn info(&self, in_use: bool) -> (Seminfo, i32) {
        let sets = self.slots.iter().filter(|slot| slot.is_some()).count();
        let (undo_size, adjust_max) = if in_use {
            (sets as i32, self.semaphores_in_use as i32)
        } else {
            (SEMUSZ, SEMAEM)
        };
        let fields = [
            SEMMNS as i32, // semmap
            SEMMNI as i32,
            SEMMNS as i32,
            SEMMNS as i32, // semmnu
            SEMMSL as i32,
            SEMOPM as i32,
            SEMOPM as i32, // semume
            undo_size,
            SEMVMX,
            adjust_max,
        ];
        let highest = self.slots.iter().rposition(Option::is_some).unwrap_or(0) as i32;
        (Seminfo { fields }, highest)
    }

    /// Process `pid` ended: its undo adjustments are applied in every
    /// set. Whether any value changed.
    pub fn process_ended(&mut self, pid: u32) -> bool {
        let mut changed = false;
        for set in self.slots.iter_mut().flatten() {
            changed |= set.process_ended(pid);
        }
        changed
    }
}

/// The id of the set in slot `index` with `sequence`.
fn id_of(index: usize, sequence: u16) -> i32 {
    ((i32::from(sequence) & 0xffff) << INDEX_BITS) | index as i32
}

/// An id's slot index and sequence number (`EINVAL` for a negative id).
fn split(id: i32) -> Result<(usize, u16), Errno> {
    let id = u32::try_from(id).map_err(|_| Errno::EINVAL)?;
    Ok((
        (id & ((1 << INDEX_BITS) - 1)) as usize,
        (id >> INDEX_BITS) as u16,
    ))
}

/// Semaphore `number` of `set` as an index (`EINVAL` outside the set).
fn semaphore_index(set: &SemaphoreSet, number: i32) -> Result<usize, Errno> {
    usize::try_from(number)
        .ok()
        .filter(|&number| number < set.len())
        .ok_or(Errno::EINVAL)
}
