//! `futex`: wait while a user word holds a value, and wake waiters; what
//! musl's mutexes, condition variables, `pthread_join` and thread exit
//! (`CLONE_CHILD_CLEARTID`) are built on.
//!
//! Waiters are kept by which word they wait on. A word in private memory,
//! or any word of a `FUTEX_PRIVATE_FLAG` call, is named by its process
//! and address; a word in shared memory (`MAP_SHARED`, which a forked
//! child keeps) by the shared object and its offset there, so that
//! processes mapping it find each other's waiters, as on Linux (LTP's
//! checkpoints between a test and its children are such words). The
//! check of the word and the queueing happen under one lock, which every
//! waker takes, so no wake-up is lost.

use alloc::collections::{BTreeMap, VecDeque};
use linux::process_args::{self, FutexOperation};
use linux_abi::{time::Timespec, Errno};

use ::process::{self, Process};

/// Which futex word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    /// A word of one address map: the map
    /// ([`Process::memory_identity`], which processes sharing it by
    /// `clone(CLONE_VM)` have in common) and the address.
    Private { memory: usize, address: u64 },
    /// A word of shared memory: the object
    /// ([`vm::AddressMap::shared_page_at`]), its page, the offset in it.
    Shared {
        object: usize,
        page: u64,
        offset: u64,
    },
}

impl Key {
    /// The key of the word at `address` in `process`, for a call that
    /// may (`shared`) or may not reach other processes.
    fn of(process: &Process, address: u64, shared: bool) -> Key {
        let private = Key::Private {
            memory: process.memory_identity(),
            address,
        };
        if !shared {
            return private;
        }
        match process
            .with_memory(|memory| memory.shared_page_at(address))
            .flatten()
        {
            Some((object, page)) => Key::Shared {
                object,
                page,
                offset: address % hal::paging::PAGE_SIZE,
            },
            None => private,
        }
    }
}

/// Threads waiting, by (process, address), oldest first. A plain spin
/// lock, not an `IrqMutex`: `wait` releases it inside the scheduler's
/// park step, where interrupts must stay off (an `IrqMutex` guard would
/// turn them back on as it goes).
static WAITERS: spin::Mutex<BTreeMap<Key, VecDeque<u64>>> = spin::Mutex::new(BTreeMap::new());

/// `futex(address, op, value, timeout_or_count, address2, value3)`.
pub(crate) fn futex(
    strand: u64,
    address: u64,
    operation_word: u64,
    value: u64,
    timeout: u64,
    address2: u64,
    value3: u64,
) -> i64 {
    let Some(process) = process::of_strand(strand) else {
        return Errno::ESRCH.as_negative();
    };
    let operation = match process_args::futex_operation(address, operation_word) {
        Ok(operation) => operation,
        Err(error) => return error.as_negative(),
    };
    let shared = process_args::futex_is_shared(operation_word);
    let key = Key::of(&process, address, shared);
    // An absolute timeout is an uptime, or a wall-clock time to turn
    // into one.
    let absolute = Some(if process_args::futex_uses_wall_clock(operation_word) {
        hal::rtc::epoch_offset_ns()
    } else {
        0
    });
    match operation {
        FutexOperation::Wait => wait(strand, key, address, value as u32, timeout, None),
        FutexOperation::WaitAbsolute => wait(strand, key, address, value as u32, timeout, absolute),
        FutexOperation::Wake => wake(key, value as u32) as i64,
        FutexOperation::Requeue | FutexOperation::CompareRequeue => {
            if !address2.is_multiple_of(4) {
                return Errno::EINVAL.as_negative();
            }
            let expected = (operation == FutexOperation::CompareRequeue).then_some(value3 as u32);
            let to = Key::of(&process, address2, shared);
            requeue(key, address, to, value as u32, timeout as u32, expected)
        }
    }
}

/// Reads the user word at `address` (of the running thread's process).
fn read_word(address: u64) -> Option<u32> {
    let mut word = [0u8; 4];
    hal::user::copy_from_user(&mut word, address).ok()?;
    Some(u32::from_le_bytes(word))
}

/// `FUTEX_WAIT`: sleeps while the word at `address` (named by `key`) is
/// `expected` (`absolute`: the timeout is a time, less this offset to
/// make it an uptime),
/// until woken (0), or `EAGAIN` at once if it is not. A timeout is polled
/// every tick (relative, or absolute for `FUTEX_WAIT_BITSET`).
fn wait(
    strand: u64,
    key: Key,
    address: u64,
    expected: u32,
    timeout: u64,
    absolute: Option<u64>,
) -> i64 {
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
        Some(match absolute {
            Some(offset) => span.saturating_sub(offset),
            None => hal::timer::uptime_ns().saturating_add(span),
        })
    };
    let mut waiters = Some(WAITERS.lock());
    match read_word(address) {
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
/// waiters of `from` (the word at `address`) and moves up to `move_count`
/// others to `to` (after checking that the word is `expected`, for the
/// compare form).
fn requeue(
    from: Key,
    address: u64,
    to: Key,
    wake_count: u32,
    move_count: u32,
    expected: Option<u32>,
) -> i64 {
    let mut table = WAITERS.lock();
    if let Some(expected) = expected {
        match read_word(address) {
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
    // Linux wakes this word with a shared futex call.
    wake(Key::of(process, address, true), count);
}
