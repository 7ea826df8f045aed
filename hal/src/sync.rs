//! Interrupt-safe spin locks.
//!
//! Spindle runs on one CPU for now, and interrupt handlers (the timer tick)
//! take some of the same locks as threads (the scheduler, the console, the
//! heap). A lock that left interrupts enabled could be interrupted by a
//! handler that then spins forever on it. [`IrqMutex`] therefore disables
//! interrupts while held and restores the previous state on release.

use core::sync::atomic::{AtomicBool, Ordering};

use x86_64::instructions::interrupts;

/// The raw lock behind [`IrqMutex`]: a test-and-set spin lock that disables
/// interrupts while held.
pub struct RawIrqSpinlock {
    is_locked: AtomicBool,
    /// Whether interrupts were enabled when the lock was taken; written and
    /// read only by the holder.
    were_interrupts_enabled: AtomicBool,
}

// SAFETY: the lock provides mutual exclusion: `lock` returns only after it
// atomically changed `is_locked` from false to true (Acquire), and `unlock`
// (called only by the holder, per the trait contract) stores false (Release).
unsafe impl lock_api::RawMutex for RawIrqSpinlock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = Self {
        is_locked: AtomicBool::new(false),
        were_interrupts_enabled: AtomicBool::new(false),
    };

    // A guard must be released on the CPU that took it, with interrupts off.
    type GuardMarker = lock_api::GuardNoSend;

    fn lock(&self) {
        let were_enabled = interrupts::are_enabled();
        interrupts::disable();
        while self
            .is_locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            core::hint::spin_loop();
        }
        self.were_interrupts_enabled
            .store(were_enabled, Ordering::Relaxed);
    }

    fn try_lock(&self) -> bool {
        let were_enabled = interrupts::are_enabled();
        interrupts::disable();
        let is_acquired = self
            .is_locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
        if is_acquired {
            self.were_interrupts_enabled
                .store(were_enabled, Ordering::Relaxed);
        } else if were_enabled {
            interrupts::enable();
        }
        is_acquired
    }

    unsafe fn unlock(&self) {
        let were_enabled = self.were_interrupts_enabled.load(Ordering::Relaxed);
        self.is_locked.store(false, Ordering::Release);
        if were_enabled {
            interrupts::enable();
        }
    }
}

/// A spin mutex that keeps interrupts disabled while held.
pub type IrqMutex<T> = lock_api::Mutex<RawIrqSpinlock, T>;
/// The guard of an [`IrqMutex`].
pub type IrqMutexGuard<'a, T> = lock_api::MutexGuard<'a, RawIrqSpinlock, T>;
