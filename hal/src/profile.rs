//! A sampling profiler: while it runs, each timer tick records where the
//! processor was: the interrupted instruction in the kernel and the
//! return addresses of its callers (the kernel keeps frame pointers), or
//! "user mode". `spindle profile start` / `stop` in the shell; the
//! addresses map to functions on the host (`addr2line -f -e` the kernel
//! ELF; `./x bench net` does it for its TCP transfer).
//!
//! Time spent with interrupts disabled is sampled where they are enabled
//! again (the tick waits until then): the callers say whose it was.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::{context::STACK_SLOT_BYTES, memory::STACKS_BASE, trap::TrapFrame};

/// Samples kept at most (8 s at the 1 kHz tick).
const CAPACITY: usize = 8 * 1024;

/// Addresses kept per sample: the interrupted instruction, then return
/// addresses, innermost first (0 past the chain's end).
pub const DEPTH: usize = 8;

/// The first address of a tick taken in user mode.
pub const USER_MODE: u64 = 0;

/// End of the kernel stacks' region (the next region's start).
const STACKS_END: u64 = crate::memory::GENERAL_BASE;

static RUNNING: AtomicBool = AtomicBool::new(false);
static NEXT: AtomicUsize = AtomicUsize::new(0);
static SAMPLES: [[AtomicU64; DEPTH]; CAPACITY] =
    [const { [const { AtomicU64::new(0) }; DEPTH] }; CAPACITY];

/// One tick's sample: the interrupted instruction (or [`USER_MODE`]),
/// then the return addresses of its callers, 0 past the chain's end.
pub type Sample = [u64; DEPTH];

/// Starts sampling afresh.
pub fn start() {
    RUNNING.store(false, Ordering::Release);
    NEXT.store(0, Ordering::Release);
    RUNNING.store(true, Ordering::Release);
}

/// Stops sampling; the samples taken.
pub fn stop() -> Vec<Sample> {
    RUNNING.store(false, Ordering::Release);
    let taken = NEXT.load(Ordering::Acquire).min(CAPACITY);
    SAMPLES[..taken]
        .iter()
        .map(|slot| core::array::from_fn(|index| slot[index].load(Ordering::Relaxed)))
        .collect()
}

/// Records one tick's sample (the timer interrupt calls it).
pub(crate) fn record(frame: &TrapFrame) {
    if !RUNNING.load(Ordering::Relaxed) {
        return;
    }
    let at = NEXT.fetch_add(1, Ordering::Relaxed);
    let Some(slot) = SAMPLES.get(at) else {
        return;
    };
    let mut chain: Sample = [0; DEPTH];
    if !frame.is_from_user() {
        chain[0] = frame.rip();
        walk_callers(frame, &mut chain[1..]);
    }
    for (stored, address) in slot.iter().zip(chain) {
        stored.store(address, Ordering::Relaxed);
    }
}

/// Fills `callers` with return addresses along the interrupted code's
/// frame-pointer chain, as far as the chain stays inside the live part
/// of the interrupted thread's kernel stack (between its stack pointer
/// and the top of its slot). Code without frame pointers (generated
/// code, assembly) gives wrong callers at worst, never a read outside
/// that memory.
fn walk_callers(frame: &TrapFrame, callers: &mut [u64]) {
    let rsp = frame.rsp();
    if !(STACKS_BASE + 1..STACKS_END).contains(&rsp) {
        // The boot stack or another: no bounds known, no walk.
        return;
    }
    // The slot of the byte below the stack pointer (a stack's top is its
    // slot's end, `context::KernelStack`): the top of the stack
    // the interrupted code ran on. Everything from the stack pointer up
    // to it is mapped (a stack is mapped from its top down).
    let top = STACKS_BASE
        + (rsp - 1 - STACKS_BASE) / STACK_SLOT_BYTES * STACK_SLOT_BYTES
        + STACK_SLOT_BYTES;
    let mut rbp = frame.rbp;
    for caller in callers.iter_mut() {
        if rbp < rsp || rbp % 8 != 0 || rbp > top - 16 {
            break;
        }
        // SAFETY: `rbp..rbp + 16` is 8-byte aligned and lies between the
        // interrupted stack pointer and the top of its stack, which is
        // mapped while its thread runs (this interrupt runs on it), and
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
