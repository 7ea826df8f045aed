//! `futex`: wait while a user word holds a value, and wake waiters; what
//! musl's mutexes, condition variables, `pthread_join` and thread exit
//! (`CLONE_CHILD_CLEARTID`) are built on.
//!
//! Waiters are kept by (process, address): processes share no memory yet,
//! so private and shared futexes are the same. The check of the word and
//! the queueing happen under one lock, which every waker takes, so no
//! wake-up is lost.

use alloc::collections::{BTreeMap, VecDeque};
use linux::process_args::{self, FutexOperation};
use linux_abi::{time::Timespec, Errno};

use ::process::{self, Process};

/// A futex: the waiting process and the address of its word.
type Key = (u64, u64);

/// Threads waiting, by (process, address), oldest first. A plain spin
/// lock, not an `IrqMutex`: `wait` releases it inside the scheduler's
/// park step, where interrupts must stay off (an `IrqMutex` guard would
/// turn them back on as it goes).
static WAITERS: spin::Mutex<BTreeMap<Key, VecDeque<u64>>> = spin::Mutex::new(BTreeMap::new());

/// `futex(address, op, value, timeout_or_count, address2, value3)`.
pub(crate) fn futex(
    strand: u64,
    address: u64,
    operation: u64,
    value: u64,
    timeout: u64,
    address2: u64,
    value3: u64,
) -> i64 {
    let Some(process) = process::of_strand(strand) else {
        return Errno::ESRCH.as_negative();
    };
    let operation = match process_args::futex_operation(address, operation) {
        Ok(operation) => operation,
        Err(error) => return error.as_negative(),
    };
    let key = (process.id(), address);
    match operation {
        FutexOperation::Wait => wait(strand, key, value as u32, timeout, false),
        FutexOperation::WaitAbsolute => wait(strand, key, value as u32, timeout, true),
        FutexOperation::Wake => wake(key, value as u32) as i64,
        FutexOperation::Requeue => requeue(
            key,
            (process.id(), address2),
            value as u32,
            timeout as u32,
            None,
        ),
        FutexOperation::CompareRequeue => requeue(
            key,
            (process.id(), address2),
            value as u32,
            timeout as u32,
            Some(value3 as u32),
        ),
    }
}

/// Reads the user word at `address` (of the running thread's process).
fn read_word(address: u64) -> Option<u32> {
    let mut word = [0u8; 4];
    hal::user::copy_from_user(&mut word, address).ok()?;
    Some(u32::from_le_bytes(word))
}

/// `FUTEX_WAIT`: sleeps while the word at the key's address is `expected`,
/// until woken (0), or `EAGAIN` at once if it is not. A timeout is polled
/// every tick (relative, or absolute for `FUTEX_WAIT_BITSET`).
fn wait(strand: u64, key: Key, expected: u32, timeout: u64, absolute: bool) -> i64 {
    let deadline = if timeout == 0 {
        None
    } else {
        let mut timespec = [0u8; Timespec::BYTES];
        if hal::user::copy_from_user(&mut timespec, timeout).is_err() {
            return Errno::EFAULT.as_negative();
        }
        // A negative or malformed time is EINVAL, as on Linux.
        let Some(span) = Timespec::from_bytes(&timespec).to_nanoseconds() else {
            return Errno::EINVAL.as_negative();
        };
        Some(if absolute {
            span
        } else {
            hal::timer::uptime_ns().saturating_add(span)
        })
    };
    let mut waiters = Some(WAITERS.lock());
    match read_word(key.1) {
        None => return Errno::EFAULT.as_negative(),
        Some(word) if word != expected => return Errno::EAGAIN.as_negative(),
        Some(_) => {}
    }
    if let Some(deadline) = deadline {
        if let Some(table) = waiters.as_mut() {
            table.entry(key).or_default().push_back(strand);
        }
        drop(waiters.take());
        loop {
            // Prepared first: a `FUTEX_WAKE` or a signal between the
            // looks below and the block is not lost.
            sched::prepare_to_wait();
            if !is_waiting(key, strand) {
                return 0;
            }
            if hal::timer::uptime_ns() >= deadline {
                return if forget(key, strand) {
                    Errno::ETIMEDOUT.as_negative()
                } else {
                    0
                };
            }
            if crate::signals::interrupted() {
                return if forget(key, strand) {
                    Errno::EINTR.as_negative()
                } else {
                    0
                };
            }
            sched::block_prepared("futex", Some(deadline));
        }
    }
    sched::block_current_if(|me| {
        if let Some(mut table) = waiters.take() {
            table.entry(key).or_default().push_back(me.0);
        }
        true
    });
    // Woken by `wake` (which took this thread off the queue), or by
    // something else: a kill, which the return to user mode acts on.
    if forget(key, strand) {
        Errno::EINTR.as_negative()
    } else {
        0
    }
}

fn is_waiting(key: Key, strand: u64) -> bool {
    WAITERS
        .lock()
        .get(&key)
        .is_some_and(|queue| queue.contains(&strand))
}

/// Takes `strand` off the key's queue; whether it was still on it.
fn forget(key: Key, strand: u64) -> bool {
    let mut table = WAITERS.lock();
    let Some(queue) = table.get_mut(&key) else {
        return false;
    };
    let before = queue.len();
    queue.retain(|&waiting| waiting != strand);
    let was = queue.len() != before;
    if queue.is_empty() {
        table.remove(&key);
    }
    was
}

/// `FUTEX_WAKE`: wakes up to `count` waiters; how many it woke.
fn wake(key: Key, count: u32) -> u32 {
    let woken: alloc::vec::Vec<u64> = {
        let mut table = WAITERS.lock();
        let Some(queue) = table.get_mut(&key) else {
            return 0;
        };
        let take = (count as usize).min(queue.len());
        let woken = queue.drain(..take).collect();
        if queue.is_empty() {
            table.remove(&key);
        }
        woken
    };
    for &strand in &woken {
        sched::wake(sched::ThreadId(strand));
    }
    woken.len() as u32
}

/// `FUTEX_REQUEUE` and `FUTEX_CMP_REQUEUE`: wakes up to `wake_count`
/// waiters of `from` and moves up to `move_count` others to `to` (after
/// checking that the word is `expected`, for the compare form).
fn requeue(from: Key, to: Key, wake_count: u32, move_count: u32, expected: Option<u32>) -> i64 {
    if !to.1.is_multiple_of(4) {
        return Errno::EINVAL.as_negative();
    }
    let mut table = WAITERS.lock();
    if let Some(expected) = expected {
        match read_word(from.1) {
            None => return Errno::EFAULT.as_negative(),
            Some(word) if word != expected => return Errno::EAGAIN.as_negative(),
            Some(_) => {}
        }
    }
    let mut queue = table.remove(&from).unwrap_or_default();
    let take = (wake_count as usize).min(queue.len());
    let woken: alloc::vec::Vec<u64> = queue.drain(..take).collect();
    let moving = (move_count as usize).min(queue.len());
    let moved: alloc::vec::Vec<u64> = queue.drain(..moving).collect();
    if !queue.is_empty() {
        table.insert(from, queue);
    }
    if !moved.is_empty() {
        table.entry(to).or_default().extend(moved.iter().copied());
    }
    drop(table);
    for &strand in &woken {
        sched::wake(sched::ThreadId(strand));
    }
    (woken.len() + moved.len()) as i64
}

/// Wakes up to `count` threads of `process` waiting on `address` (a
/// thread's end with `CLONE_CHILD_CLEARTID`).
pub fn wake_address(process: &Process, address: u64, count: u32) {
    wake((process.id(), address), count);
}
