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
//!
//! On one processor with interrupts off, a lock found taken can never be
//! released: taking one that is held is reported as a deadlock at once
//! (with a backtrace) instead of spinning forever with interrupts off.

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

/// Runs `f`, a non-maskable interrupt's handler, so that the locks it
/// takes (`try_lock` only) leave no trace on the interrupted code's
/// bookkeeping. The NMI may arrive between the interrupted code's last
/// release and its reading of [`ENABLE_ON_LAST_RELEASE`]; the handler's
/// own first lock would store "interrupts were off" there, and the
/// interrupted release would then leave interrupts off for good. Its
/// locks are balanced, so the count comes back by itself; the flag is
/// put back here.
pub(crate) fn invisibly_to_interrupted_locks<R>(f: impl FnOnce() -> R) -> R {
    let enable_on_last_release = ENABLE_ON_LAST_RELEASE.load(Ordering::Relaxed);
    let result = f();
    ENABLE_ON_LAST_RELEASE.store(enable_on_last_release, Ordering::Relaxed);
    result
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
        if self
            .is_locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            // One processor, and interrupts are off: the holder is this very
            // code path (a lock taken again inside its own critical section,
            // directly or through an allocation or a fault), or a thread
            // switched out while holding it. Either way it is never released;
            // spinning would freeze the machine without a word.
            deadlock(core::ptr::from_ref(self) as u64);
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

/// Return addresses printed with a deadlock report.
const DEADLOCK_BACKTRACE_DEPTH: usize = 12;

/// Reports an [`IrqMutex`] taken again on the one processor, with the
/// backtrace of the code that wants it, and stops the kernel: it cannot go
/// on, and a report is what finds the bug (a lock held while allocating,
/// as the frame allocator once did, froze the machine silently).
#[cold]
#[inline(never)]
fn deadlock(lock_address: u64) -> ! {
    let mut callers = [0u64; DEADLOCK_BACKTRACE_DEPTH];
    crate::backtrace::callers_here(&mut callers);
    crate::console::emergency_write_fmt(format_args!(
        "\nDEADLOCK: the interrupt-disabling lock at {lock_address:#x} is already held on this \
         processor ({} held); its holder cannot run again to release it\nbacktrace:",
        LOCKS_HELD.load(Ordering::Relaxed),
    ));
    for caller in callers.iter().take_while(|&&caller| caller != 0) {
        crate::console::emergency_write_fmt(format_args!(" {caller:#x}"));
    }
    crate::console::emergency_write_fmt(format_args!("\n"));
    panic!("deadlock on the lock at {lock_address:#x}");
}

/// A spin mutex that keeps interrupts disabled while held.
pub type IrqMutex<T> = lock_api::Mutex<RawIrqSpinlock, T>;
/// The guard of an [`IrqMutex`].
pub type IrqMutexGuard<'a, T> = lock_api::MutexGuard<'a, RawIrqSpinlock, T>;
