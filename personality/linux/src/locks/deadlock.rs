//! Deadlock detection for `F_SETLKW`: which process each blocked thread
//! waits for, and whether a new wait would close a cycle. Pure data,
//! host-tested.
//!
//! Linux's `posix_locks_deadlock` (fs/locks.c): before blocking, a
//! process follows the chain from the holder of the lock in its way (the
//! process that holder itself waits for, and so on, at most
//! [`MAX_DEADLOCK_STEPS`] steps); finding itself, it gets `EDEADLK`
//! instead of waiting forever. Only processes' locks take part:
//! open-file-description locks have no process to follow, as on Linux.

use alloc::collections::BTreeMap;

/// Steps along a chain of waits before giving up the search (Linux's
/// `MAX_DEADLK_ITERATIONS`): a longer chain is not reported.
pub const MAX_DEADLOCK_STEPS: usize = 10;

/// The waits of blocked `F_SETLKW` calls, by blocked thread.
#[derive(Clone, Debug, Default)]
pub struct WaitsFor {
    /// Blocked thread → (its process, the process holding the lock in its
    /// way).
    waits: BTreeMap<u64, (u64, u64)>,
}

impl WaitsFor {
    /// Thread `thread` of process `waiter` waits for a lock `holder`
    /// holds (replacing what it waited for before).
    pub fn wait(&mut self, thread: u64, waiter: u64, holder: u64) {
        self.waits.insert(thread, (waiter, holder));
    }

    /// Thread `thread` no longer waits.
    pub fn stop(&mut self, thread: u64) {
        self.waits.remove(&thread);
    }

    /// Whether process `requester` waiting for `holder` would wait for
    /// itself: `holder`, or the process it waits for, and so on, is
    /// `requester`.
    pub fn would_deadlock(&self, requester: u64, holder: u64) -> bool {
        let mut next = holder;
        for _ in 0..=MAX_DEADLOCK_STEPS {
            if next == requester {
                return true;
            }
            match self.waits.values().find(|(waiter, _)| *waiter == next) {
                Some(&(_, holder)) => next = holder,
                None => return false,
            }
        }
        false
    }
}
