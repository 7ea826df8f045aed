//! Kernel backtraces along the frame-pointer chain (the kernel keeps frame
//! pointers): of code a trap interrupted, for the profiler and the lockup
//! watchdog, and of the running code itself, for deadlock reports.
//!
//! A walk stays inside the live part of one kernel stack (between the stack
//! pointer and the top of its slot), so a broken chain (generated code,
//! assembly, a corrupted frame) gives wrong callers at worst, never a read
//! outside mapped memory.

use crate::{context::STACK_SLOT_BYTES, memory::STACKS_BASE, trap::TrapFrame};

/// End of the kernel stacks' region (the next region's start).
const STACKS_END: u64 = crate::memory::GENERAL_BASE;

/// Fills `callers` with return addresses along the interrupted code's
/// frame-pointer chain, innermost first; 0 past the chain's end. Nothing
/// for code interrupted in user mode or on a stack outside the kernel
/// stacks' region (the boot stack).
pub fn callers_of(frame: &TrapFrame, callers: &mut [u64]) {
    callers.fill(0);
    if !frame.is_from_user() {
        walk(frame.rsp(), frame.rbp, callers);
    }
}

/// Fills `callers` with the return addresses of the code that calls this
/// function and of its callers, innermost first; 0 past the chain's end.
#[inline(never)]
pub fn callers_here(callers: &mut [u64]) {
    callers.fill(0);
    let (rsp, rbp): (u64, u64);
    // SAFETY: reads two registers into locals; no memory is touched.
    unsafe {
        core::arch::asm!(
            "mov {rsp}, rsp",
            "mov {rbp}, rbp",
            rsp = out(reg) rsp,
            rbp = out(reg) rbp,
            options(nomem, nostack, preserves_flags)
        );
    }
    walk(rsp, rbp, callers);
}

fn walk(rsp: u64, mut rbp: u64, callers: &mut [u64]) {
    if !(STACKS_BASE + 1..STACKS_END).contains(&rsp) {
        // The boot stack or another: no bounds known, no walk.
        return;
    }
    // The slot of the byte below the stack pointer (a stack's top is its
    // slot's end, `context::KernelStack`): the top of the stack the code
    // runs on. Everything from the stack pointer up to it is mapped (a
    // stack is mapped from its top down).
    let top = STACKS_BASE
        + (rsp - 1 - STACKS_BASE) / STACK_SLOT_BYTES * STACK_SLOT_BYTES
        + STACK_SLOT_BYTES;
    for caller in callers.iter_mut() {
        if rbp < rsp || !rbp.is_multiple_of(8) || rbp > top - 16 {
            break;
        }
        // SAFETY: `rbp..rbp + 16` is 8-byte aligned and lies between the
        // stack pointer and the top of its stack, which is mapped while the
        // code using it runs (the caller runs on it, or interrupted it), and
        // reading plain words of it has no side effects.
        let (next, return_address) = unsafe {
            (
                core::ptr::read_volatile(rbp as *const u64),
                core::ptr::read_volatile((rbp + 8) as *const u64),
            )
        };
        *caller = return_address;
        if next <= rbp {
            break;
        }
        rbp = next;
    }
}
