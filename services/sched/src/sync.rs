//! Blocking synchronisation for kernel threads: [`Mutex`] and [`Condvar`].
//!
//! Unlike the spin locks in `hal::sync`, these put a waiting thread to sleep.
//! The data lives in a `spin::Mutex` that is only ever *tried*; a thread that
//! finds it taken records itself in the wait queue and blocks, all with
//! interrupts disabled (see [`crate::block_current_if`]), and the unlocker
//! wakes one waiter, which tries again. So no wake-up is lost and no code in
//! this module needs `unsafe`.

use alloc::collections::VecDeque;
use core::ops::{Deref, DerefMut};

use hal::sync::IrqMutex;

use crate::{block_current_for, wake, ThreadId};

/// A mutual-exclusion lock whose waiters block instead of spinning.
pub struct Mutex<T> {
    data: spin::Mutex<T>,
    waiters: IrqMutex<VecDeque<ThreadId>>,
}

impl<T> Mutex<T> {
    /// A new unlocked mutex holding `value`.
    pub const fn new(value: T) -> Self {
        Self {
            data: spin::Mutex::new(value),
            waiters: IrqMutex::new(VecDeque::new()),
        }
    }

    /// Takes the lock, blocking while another thread holds it.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        loop {
            if let Some(inner) = self.data.try_lock() {
                return MutexGuard {
                    mutex: self,
                    inner: Some(inner),
                };
            }
            block_current_for("kernel mutex", |me| {
                let mut waiters = self.waiters.lock();
                // Re-check under the wait-queue lock: the holder may have
                // released the lock since the failed attempt.
                let is_still_locked = self.data.is_locked();
                if is_still_locked {
                    waiters.push_back(me);
                }
                is_still_locked
            });
        }
    }

    /// Takes the lock if it is free.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.data.try_lock().map(|inner| MutexGuard {
            mutex: self,
            inner: Some(inner),
        })
    }

    fn wake_one(&self) {
        let waiter = self.waiters.lock().pop_front();
        if let Some(waiter) = waiter {
            wake(waiter);
        }
    }
}

/// Access to the data of a locked [`Mutex`]; unlocks when dropped.
pub struct MutexGuard<'a, T> {
    mutex: &'a Mutex<T>,
    /// Always `Some` until drop.
    inner: Option<spin::MutexGuard<'a, T>>,
}

impl<T> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.inner.as_ref().expect("guard used after unlock")
    }
}

impl<T> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.inner.as_mut().expect("guard used after unlock")
    }
}

impl<T> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        drop(self.inner.take());
        self.mutex.wake_one();
    }
}

/// A condition variable: threads wait for a change that others announce.
pub struct Condvar {
    waiters: IrqMutex<VecDeque<ThreadId>>,
}

impl Condvar {
    /// A condition variable nobody waits on.
    pub const fn new() -> Self {
        Self {
            waiters: IrqMutex::new(VecDeque::new()),
        }
    }

    /// Releases `guard`'s mutex, blocks until notified, and takes the mutex
    /// again. As with any condition variable, wake-ups may be spurious:
    /// re-check the condition in a loop.
    pub fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        let mutex = guard.mutex;
        let mut guard = Some(guard);
        block_current_for("condition variable", |me| {
            self.waiters.lock().push_back(me);
            // Unlocking here, after queueing, is what makes the wait atomic:
            // a notifier needs the mutex to change the condition, and finds
            // this thread already queued.
            drop(guard.take());
            true
        });
        mutex.lock()
    }

    /// Wakes one waiting thread, if any.
    pub fn notify_one(&self) {
        let waiter = self.waiters.lock().pop_front();
        if let Some(waiter) = waiter {
            wake(waiter);
        }
    }

    /// Wakes every waiting thread.
    pub fn notify_all(&self) {
        // Drained in place, waking under the queue's lock (as a
        // `WaitQueue` wakes): the queue keeps its buffer. Taking the queue
        // out freed the buffer, and the next `wait` allocated another: an
        // allocation and a free per notification on the kernel
        // ping-pong's path. A woken thread cannot queue again meanwhile:
        // waking only readies it, and the lock keeps interrupts off.
        let mut waiters = self.waiters.lock();
        for waiter in waiters.drain(..) {
            wake(waiter);
        }
    }
}

impl Default for Condvar {
    fn default() -> Self {
        Self::new()
    }
}
