//! An application-specific scheduler (SPIN §4.2): the kernel loads it for
//! one group of strands and binds its handlers to the `Strand` events; the
//! events' authorizer lets it see that group's strands alone. It runs the
//! highest-priority strand of its group, and keeps running it when it
//! yields, until it ends; equal priorities go first come, first served.
//! The global scheduler and every other strand are unaffected.
#![no_std]

use core::sync::atomic::{AtomicU64, Ordering};

// Keeps the SDK linked (its panic handler and allocator-free runtime).
use spindle_sdk as _;

/// Most strands queued at once.
const CAPACITY: usize = 64;

/// The queue: (strand, priority, arrival), 0 strand = free slot. Handlers
/// of one extension never run at once (the runtime serialises them), so
/// relaxed atomics are only for `static` mutability without `unsafe`.
static STRANDS: [AtomicU64; CAPACITY] = [const { AtomicU64::new(0) }; CAPACITY];
static PRIORITIES: [AtomicU64; CAPACITY] = [const { AtomicU64::new(0) }; CAPACITY];
static ARRIVALS: [AtomicU64; CAPACITY] = [const { AtomicU64::new(0) }; CAPACITY];
static NEXT_ARRIVAL: AtomicU64 = AtomicU64::new(1);
static RESUMES: AtomicU64 = AtomicU64::new(0);
static CHOICES: AtomicU64 = AtomicU64::new(0);

/// `Strand.Unblock(strand, group, priority)`: the strand was made, or was
/// woken after blocking in the kernel; queue it (as a new arrival).
#[no_mangle]
pub extern "C" fn on_unblock(strand: u64, _group: u64, priority: u64) {
    if let Some(slot) = STRANDS.iter().position(|slot| slot.load(Ordering::Relaxed) == 0) {
        STRANDS[slot].store(strand, Ordering::Relaxed);
        PRIORITIES[slot].store(priority, Ordering::Relaxed);
        ARRIVALS[slot].store(NEXT_ARRIVAL.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
    }
}

/// `Strand.Block(strand, group, _)`: the strand blocked in the kernel or
/// ended; forget it until an `Unblock`.
#[no_mangle]
pub extern "C" fn on_block(strand: u64, _group: u64, _unused: u64) {
    for slot in &STRANDS {
        if slot.load(Ordering::Relaxed) == strand {
            slot.store(0, Ordering::Relaxed);
        }
    }
}

/// `Strand.Checkpoint(leaving, group, _) -> next`: the queued strand with
/// the highest priority (the earliest arrival among equals); 0 if none.
#[no_mangle]
pub extern "C" fn on_checkpoint(_leaving: u64, _group: u64, _unused: u64) -> u64 {
    CHOICES.fetch_add(1, Ordering::Relaxed);
    let mut best: Option<(u64, u64, u64)> = None;
    for slot in 0..CAPACITY {
        let strand = STRANDS[slot].load(Ordering::Relaxed);
        if strand == 0 {
            continue;
        }
        let priority = PRIORITIES[slot].load(Ordering::Relaxed);
        let arrival = ARRIVALS[slot].load(Ordering::Relaxed);
        let better = match best {
            None => true,
            Some((_, best_priority, best_arrival)) => {
                priority > best_priority || (priority == best_priority && arrival < best_arrival)
            }
        };
        if better {
            best = Some((strand, priority, arrival));
        }
    }
    best.map_or(0, |(strand, ..)| strand)
}

/// `Strand.Resume(strand, group, _)`: the strand got the processor.
#[no_mangle]
pub extern "C" fn on_resume(_strand: u64, _group: u64, _unused: u64) {
    RESUMES.fetch_add(1, Ordering::Relaxed);
}

/// How many times a strand of the group was given the processor.
#[no_mangle]
pub extern "C" fn resumes() -> u64 {
    RESUMES.load(Ordering::Relaxed)
}

/// How many times the kernel asked who runs next.
#[no_mangle]
pub extern "C" fn choices() -> u64 {
    CHOICES.load(Ordering::Relaxed)
}
