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

use crate::trap::TrapFrame;

/// Samples kept at most (8 s at the 1 kHz tick).
const CAPACITY: usize = 8 * 1024;

/// Addresses kept per sample: the interrupted instruction, then return
/// addresses, innermost first (0 past the chain's end).
pub const DEPTH: usize = 8;

/// The first address of a tick taken in user mode.
pub const USER_MODE: u64 = 0;

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
        crate::backtrace::callers_of(frame, &mut chain[1..]);
    }
    for (stored, address) in slot.iter().zip(chain) {
        stored.store(address, Ordering::Relaxed);
    }
}
