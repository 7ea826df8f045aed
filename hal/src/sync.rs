//! Interrupt-safe spin locks.
//!
//! Spindle runs on one CPU for now, and interrupt handlers (the timer tick)
//! take some of the same locks as threads (the scheduler, the console, the
//! heap). A lock that left interrupts enabled could be interrupted by a
//! handler that then spins forever on it. [`IrqMutex`] therefore disables
//! interrupts while held.
//!
//! Interrupts come back on only when the CPU releases the *last* lock it
//! holds, and only if they were on when it took the first (xv6's
//! `push_off`/`pop_off`). A per-lock saved state would turn them back on
//! when locks are released out of order: take A, take B, release A, and
//! an interrupt handler could then spin on B. No lock is held across a
//! context switch (the scheduler releases its lock before switching), so
//! the count belongs to the CPU, of which there is one for now.

use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use x86_64::instructions::interrupts;

/// How many [`IrqMutex`]es the CPU holds (or is spinning for).
static LOCKS_HELD: AtomicUsize = AtomicUsize::new(0);
/// Whether interrupts were enabled when the CPU took its outermost lock.
static ENABLE_ON_LAST_RELEASE: AtomicBool = AtomicBool::new(false);

/// Disables interrupts and counts one more lock held.
fn push_off() {
    let were_enabled = interrupts::are_enabled();
    interrupts::disable();
    // An interrupt between the two lines above takes and releases its own
    // locks: the count is back where it was when this line runs.
    if LOCKS_HELD.fetch_add(1, Ordering::Relaxed) == 0 {
        ENABLE_ON_LAST_RELEASE.store(were_enabled, Ordering::Relaxed);
    }
}

/// Counts one lock fewer; re-enables interrupts after the last, if they
/// were enabled before the first.
fn pop_off() {
    if LOCKS_HELD.fetch_sub(1, Ordering::Relaxed) == 1
        && ENABLE_ON_LAST_RELEASE.load(Ordering::Relaxed)
    {
        interrupts::enable();
    }
}

/// How many interrupt-disabling locks the CPU holds now (for tests).
pub fn locks_held() -> usize {
    LOCKS_HELD.load(Ordering::Relaxed)
}

/// The raw lock behind [`IrqMutex`]: a test-and-set spin lock that disables
/// interrupts while held.
pub struct RawIrqSpinlock {
    is_locked: AtomicBool,
}

// SAFETY: the lock provides mutual exclusion: `lock` returns only after it
// atomically changed `is_locked` from false to true (Acquire), and `unlock`
// (called only by the holder, per the trait contract) stores false (Release).
unsafe impl lock_api::RawMutex for RawIrqSpinlock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self {
        is_locked: AtomicBool::new(false),
    };

    // A guard must be released on the CPU that took it, with interrupts off.
    type GuardMarker = lock_api::GuardNoSend;

    fn lock(&self) {
        push_off();
        while self
            .is_locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            core::hint::spin_loop();
        }
    }

    fn try_lock(&self) -> bool {
        push_off();
        let is_acquired = self
            .is_locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
        if !is_acquired {
            pop_off();
        }
        is_acquired
    }

    unsafe fn unlock(&self) {
        self.is_locked.store(false, Ordering::Release);
        pop_off();
    }
}

/// A spin mutex that keeps interrupts disabled while held.
pub type IrqMutex<T> = lock_api::Mutex<RawIrqSpinlock, T>;
/// The guard of an [`IrqMutex`].
pub type IrqMutexGuard<'a, T> = lock_api::MutexGuard<'a, RawIrqSpinlock, T>;
