//! Counts the system calls of one process: the kernel loads it for a
//! process and binds `on_syscall` to `MachineTrap.Syscall`; the event's
//! authorizer imposes a guard so it sees that process's calls alone, and
//! runs it before the kernel's own handler, whose result stands.
#![no_std]

use core::sync::atomic::{AtomicU64, Ordering};

// Keeps the SDK linked (its panic handler and allocator-free runtime).
use spindle_sdk as _;

static CALLS: AtomicU64 = AtomicU64::new(0);
static LAST_NUMBER: AtomicU64 = AtomicU64::new(u64::MAX);

/// The handler: `MachineTrap.Syscall(strand, number, a0..a5) -> i64`. Its
/// result is not the caller's (the kernel's handler runs after it).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn on_syscall(
    _strand: u64,
    number: u64,
    _a0: u64,
    _a1: u64,
    _a2: u64,
    _a3: u64,
    _a4: u64,
    _a5: u64,
) -> i64 {
    CALLS.fetch_add(1, Ordering::Relaxed);
    LAST_NUMBER.store(number, Ordering::Relaxed);
    0
}

/// System calls seen so far.
#[no_mangle]
pub extern "C" fn count() -> u64 {
    CALLS.load(Ordering::Relaxed)
}

/// The number of the last system call seen.
#[no_mangle]
pub extern "C" fn last() -> u64 {
    LAST_NUMBER.load(Ordering::Relaxed)
}
