//! A sampling profiler: while it runs, each timer tick records where the
//! processor was (the interrupted instruction in the kernel, or "user
//! mode"). `spindle profile start` / `stop` in the shell; the addresses
//! map to functions on the host (`addr2line -f -e` the kernel ELF).

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Samples kept at most (16 s at the 1 kHz tick).
const CAPACITY: usize = 16 * 1024;

/// The sample of a tick taken in user mode.
pub const USER_MODE: u64 = 0;

static RUNNING: AtomicBool = AtomicBool::new(false);
static NEXT: AtomicUsize = AtomicUsize::new(0);
static SAMPLES: [AtomicU64; CAPACITY] = [const { AtomicU64::new(0) }; CAPACITY];

/// Starts sampling afresh.
pub fn start() {
    RUNNING.store(false, Ordering::Release);
    NEXT.store(0, Ordering::Release);
    RUNNING.store(true, Ordering::Release);
}

/// Stops sampling; the samples taken (kernel addresses, or
/// [`USER_MODE`]).
pub fn stop() -> Vec<u64> {
    RUNNING.store(false, Ordering::Release);
    let taken = NEXT.load(Ordering::Acquire).min(CAPACITY);
    SAMPLES[..taken]
        .iter()
        .map(|sample| sample.load(Ordering::Relaxed))
        .collect()
}

/// Records one tick's sample (the timer interrupt calls it).
pub(crate) fn record(from_user: bool, instruction: u64) {
    if !RUNNING.load(Ordering::Relaxed) {
        return;
    }
    let at = NEXT.fetch_add(1, Ordering::Relaxed);
    if let Some(slot) = SAMPLES.get(at) {
        slot.store(
            if from_user { USER_MODE } else { instruction },
            Ordering::Relaxed,
        );
    }
}
