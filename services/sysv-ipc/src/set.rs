//! One semaphore set: its values, `semop`'s operations, applied all or
//! none (Linux's `perform_atomic_semop_slow`: each operation is applied
//! in order and the whole is rolled back when one cannot be), and the
//! undo adjustments `SEM_UNDO` records per process.

use alloc::{collections::BTreeMap, vec, vec::Vec};

use linux_abi::{
    ipc::{Sembuf, IPC_NOWAIT, SEMAEM, SEMVMX, SEM_UNDO},
    Errno,
};

use crate::permissions::Permissions;

/// What a blocked operation waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// The value to grow enough to take from it (`GETNCNT` counts these).
    Increase,
    /// The value to be zero (`GETZCNT` counts these).
    Zero,
}

/// What [`SemaphoreSet::operate`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every operation was applied.
    Done,
    /// None was: the first that could not be waits on this semaphore.
    Blocked {
        /// The semaphore's number in the set.
        semaphore: u16,
        /// What it waits for.
        wait: Wait,
    },
}

/// One semaphore.
#[derive(Clone, Copy, Debug, Default)]
struct Semaphore {
    /// Its value, `0..=SEMVMX`.
    value: i32,
    /// The process that last changed it (`GETPID`).
    last_pid: u32,
    /// Callers blocked until it grows.
    waiting_for_increase: u32,
    /// Callers blocked until it is zero.
    waiting_for_zero: u32,
}

/// A semaphore set.
pub struct SemaphoreSet {
    /// Owner, maker and mode.
    pub permissions: Permissions,
    /// The sequence number its id carries (its slot's generation).
    pub sequence: u16,
    /// The last `semop`, seconds since the epoch (0: none yet).
    pub operation_time: i64,
    /// The last change by `semctl` (or its making), seconds since the
    /// epoch.
    pub change_time: i64,
    semaphores: Vec<Semaphore>,
    /// Each process's undo adjustments (`semadj`), one per semaphore:
    /// what its end adds back. Not inherited by `fork`.
    adjustments: BTreeMap<u32, Vec<i32>>,
}

impl SemaphoreSet {
    /// A set of `count` semaphores, all zero, made at `now`.
    pub fn new(permissions: Permissions, sequence: u16, count: usize, now: i64) -> SemaphoreSet {
        SemaphoreSet {
            permissions,
            sequence,
            operation_time: 0,
            change_time: now,
            semaphores: vec![Semaphore::default(); count],
            adjustments: BTreeMap::new(),
        }
    }

    /// How many semaphores it has.
    pub fn len(&self) -> usize {
        self.semaphores.len()
    }

    /// Whether it has none (never: sets are made with at least one).
    pub fn is_empty(&self) -> bool {
        self.semaphores.is_empty()
    }

    /// Semaphore `number`'s value.
    pub fn value(&self, number: usize) -> i32 {
        self.semaphores[number].value
    }

    /// Every value, in order (`GETALL`).
    pub fn values(&self) -> Vec<u16> {
        // Values stay within 0..=SEMVMX, so they fit.
        self.semaphores
            .iter()
            .map(|semaphore| semaphore.value as u16)
            .collect()
    }

    /// The process that last changed semaphore `number` (`GETPID`).
    pub fn last_pid(&self, number: usize) -> u32 {
        self.semaphores[number].last_pid
    }

    /// How many callers wait on semaphore `number` for `wait`
    /// (`GETNCNT`, `GETZCNT`).
    pub fn waiting(&self, number: usize, wait: Wait) -> u32 {
        let semaphore = &self.semaphores[number];
        match wait {
            Wait::Increase => semaphore.waiting_for_increase,
            Wait::Zero => semaphore.waiting_for_zero,
        }
    }

    /// A caller starts (`is_waiting`) or stops waiting on semaphore
    /// `number` for `wait`.
    pub fn count_waiter(&mut self, number: usize, wait: Wait, is_waiting: bool) {
        let Some(semaphore) = self.semaphores.get_mut(number) else {
            return;
        };
        let counter = match wait {
            Wait::Increase => &mut semaphore.waiting_for_increase,
            Wait::Zero => &mut semaphore.waiting_for_zero,
        };
        *counter = if is_waiting {
            counter.saturating_add(1)
        } else {
            counter.saturating_sub(1)
        };
    }

    /// Sets semaphore `number` to `value` for process `pid` (`SETVAL`):
    /// every process's adjustment for it is dropped, as Linux does.
    /// `ERANGE` outside `0..=SEMVMX`.
    pub fn set_value(
        &mut self,
        number: usize,
        value: i32,
        pid: u32,
        now: i64,
    ) -> Result<(), Errno> {
        if !(0..=SEMVMX).contains(&value) {
            return Err(Errno::ERANGE);
        }
        for adjustments in self.adjustments.values_mut() {
            adjustments[number] = 0;
        }
        let semaphore = &mut self.semaphores[number];
        semaphore.value = value;
        semaphore.last_pid = pid;
        self.change_time = now;
        Ok(())
    }

    /// Sets every semaphore (`SETALL`; `values` has one per semaphore):
    /// every adjustment is dropped. `ERANGE` if one is above `SEMVMX`,
    /// and then nothing changes.
    pub fn set_all(&mut self, values: &[u16], pid: u32, now: i64) -> Result<(), Errno> {
        if values.iter().any(|&value| i32::from(value) > SEMVMX) {
            return Err(Errno::ERANGE);
        }
        self.adjustments.clear();
        for (semaphore, &value) in self.semaphores.iter_mut().zip(values) {
            semaphore.value = i32::from(value);
            semaphore.last_pid = pid;
        }
        self.change_time = now;
        Ok(())
    }

    /// Applies `operations` (their numbers are in range) for process
    /// `pid` at `now`, all or none: [`Outcome::Blocked`] names the first
    /// that must wait; `EAGAIN` instead if that one has `IPC_NOWAIT`;
    /// `ERANGE` if a value would pass `SEMVMX` or an undo adjustment
    /// `SEMAEM`.
    pub fn operate(&mut self, operations: &[Sembuf], pid: u32, now: i64) -> Result<Outcome, Errno> {
        let count = self.semaphores.len();
        let mut adjustments = self
            .adjustments
            .get(&pid)
            .cloned()
            .unwrap_or_else(|| vec![0; count]);
        let mut applied = 0;
        let mut answer = Ok(Outcome::Done);
        for operation in operations {
            let number = usize::from(operation.number);
            let change = i32::from(operation.operation);
            let value = self.semaphores[number].value;
            let wait = if change == 0 && value != 0 {
                Some(Wait::Zero)
            } else if value + change < 0 {
                Some(Wait::Increase)
            } else {
                None
            };
            if let Some(wait) = wait {
                answer = if operation.flags & IPC_NOWAIT != 0 {
                    Err(Errno::EAGAIN)
                } else {
                    Ok(Outcome::Blocked {
                        semaphore: operation.number,
                        wait,
                    })
                };
                break;
            }
            if value + change > SEMVMX {
                answer = Err(Errno::ERANGE);
                break;
            }
            if operation.flags & SEM_UNDO != 0 {
                let adjustment = adjustments[number] - change;
                if !(-SEMAEM - 1..=SEMAEM).contains(&adjustment) {
                    answer = Err(Errno::ERANGE);
                    break;
                }
                adjustments[number] = adjustment;
            }
            self.semaphores[number].value = value + change;
            applied += 1;
        }
        if answer != Ok(Outcome::Done) {
            // Roll back what went in, newest first.
            for operation in operations[..applied].iter().rev() {
                self.semaphores[usize::from(operation.number)].value -=
                    i32::from(operation.operation);
            }
            return answer;
        }
        for operation in operations {
            self.semaphores[usize::from(operation.number)].last_pid = pid;
        }
        if operations
            .iter()
            .any(|operation| operation.flags & SEM_UNDO != 0)
        {
            self.adjustments.insert(pid, adjustments);
        }
        self.operation_time = now;
        Ok(Outcome::Done)
    }

    /// Process `pid` ended: its adjustments are added to the values (each
    /// kept within `0..=SEMVMX`, as Linux's `exit_sem` does). Whether a
    /// value changed (waiters may now proceed).
    pub fn process_ended(&mut self, pid: u32) -> bool {
        let Some(adjustments) = self.adjustments.remove(&pid) else {
            return false;
        };
        let mut changed = false;
        for (semaphore, adjustment) in self.semaphores.iter_mut().zip(adjustments) {
            if adjustment != 0 {
                semaphore.value = (semaphore.value + adjustment).clamp(0, SEMVMX);
                semaphore.last_pid = pid;
                changed = true;
            }
        }
        changed
    }
}
