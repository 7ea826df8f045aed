//! [`WaitQueue`]: the threads waiting for one kind of event (a pipe that
//! became readable, a packet, typed input), woken together when it
//! happens.
//!
//! A waiter registers itself, looks at its condition, blocks, and takes
//! itself off the queue once it runs again (see
//! [`crate::prepare_to_wait`]); a waker only walks the list and wakes.
//! So waking never changes the list, needs no memory, and can be done
//! from an interrupt handler ([`WaitQueue::wake_all_from_interrupt`]).
//! The list lives under an interrupt-disabling lock; registering grows
//! it outside that lock, since allocating with interrupts disabled
//! is what once deadlocked the kernel.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

use hal::sync::IrqMutex;

use crate::{wake, ThreadId};

/// Threads waiting for an event.
pub struct WaitQueue {
    /// The registered threads, in no particular order.
    waiters: IrqMutex<Vec<ThreadId>>,
    /// `waiters.len()`, readable without the lock: a waker with nobody
    /// to wake (the common case: a pipe written while its reader runs)
    /// pays one load.
    registered: AtomicUsize,
}

impl WaitQueue {
    /// A queue nobody waits on.
    pub const fn new() -> Self {
        Self {
            waiters: IrqMutex::new(Vec::new()),
            registered: AtomicUsize::new(0),
        }
    }

    /// Registers thread `thread`: every wake-up of the queue wakes it
    /// until [`WaitQueue::unregister`].
    pub fn register(&self, thread: ThreadId) {
        loop {
            let capacity = {
                let mut waiters = self.waiters.lock();
                if waiters.len() < waiters.capacity() {
                    waiters.push(thread);
                    self.registered.store(waiters.len(), Ordering::SeqCst);
                    return;
                }
                waiters.capacity()
            };
            // Full: a bigger list, allocated with interrupts on, replaces
            // it (unless another thread grew it meanwhile); the old one
            // is freed after the lock is released.
            let mut bigger = Vec::with_capacity(capacity.max(2) * 2);
            {
                let mut waiters = self.waiters.lock();
                if waiters.capacity() < bigger.capacity() {
                    bigger.extend_from_slice(&waiters);
                    core::mem::swap(&mut *waiters, &mut bigger);
                }
            }
            drop(bigger);
        }
    }

    /// Takes thread `thread` off the queue (once, if it registered more
    /// than once).
    pub fn unregister(&self, thread: ThreadId) {
        let mut waiters = self.waiters.lock();
        if let Some(at) = waiters.iter().position(|&waiter| waiter == thread) {
            waiters.swap_remove(at);
        }
        self.registered.store(waiters.len(), Ordering::SeqCst);
    }

    /// Whether no thread is registered.
    pub fn is_empty(&self) -> bool {
        self.registered.load(Ordering::SeqCst) == 0
    }

    /// Wakes every registered thread (they stay registered until they
    /// unregister). Call it after changing what the waiters look at.
    pub fn wake_all(&self) {
        // SeqCst on both sides: a waiter registers, then looks at the
        // condition; a waker changes the condition, then looks here. One
        // of the two sees the other.
        if self.is_empty() {
            return;
        }
        let waiters = self.waiters.lock();
        for &waiter in waiters.iter() {
            wake(waiter);
        }
    }

    /// [`WaitQueue::wake_all`] from an interrupt handler: never waits for
    /// a lock, and when the processor was idle the woken thread runs at
    /// once rather than at the next timer tick.
    pub fn wake_all_from_interrupt(&self) {
        if self.is_empty() {
            return;
        }
        {
            let Some(waiters) = self.waiters.try_lock() else {
                return;
            };
            for &waiter in waiters.iter() {
                if !crate::wake_in_interrupt(waiter) {
                    return;
                }
            }
        }
        crate::leave_idle_from_interrupt();
    }
}

impl Default for WaitQueue {
    fn default() -> Self {
        Self::new()
    }
}
