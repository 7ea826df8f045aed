//! Publication of handler lists without blocking raisers (RCU-style).
//!
//! Requirements (design.md "Events", 003 §3): raisers never wait for
//! installers and never see a half-built list; a new list is published with
//! one atomic store; the old one is freed when no raiser holds it.
//!
//! `unsafe` is forbidden in this crate, so there is no raw pointer to load.
//! Instead a [`Publication`] keeps the current list as an `Arc` in one of two
//! slots and a generation counter whose parity names the current slot:
//!
//! - a writer (serialized by the event's writer lock) builds the new list
//!   completely, puts it in the *other* slot (waiting, if need be, for
//!   raisers still cloning the list that slot held two generations ago), and
//!   publishes with one `store` of the generation;
//! - a raiser reads the generation and `try_read`s that slot to clone the
//!   `Arc`. The try can fail only if the slot is being refilled, which means
//!   the generation has already moved on: the raiser re-reads it and finds a
//!   slot no writer touches. Raisers therefore never wait for a writer
//!   (lock-free), and always get a complete list;
//! - the old list is dropped when its last `Arc` goes: reclamation "when no
//!   raiser holds it" is reference counting.
//!
//! Cloning the `Arc` costs a few atomic read-modify-writes. Raisers on hot
//! paths (a CPU's syscall or packet path) keep a [`crate::RaiseCache`]: a
//! private `Arc` revalidated by comparing the generation, which makes the
//! steady-state raise free of atomic read-modify-writes, as fast as the RCU
//! read side of a kernel. Crates that do this with raw pointers (arc-swap,
//! crossbeam-epoch) need `std` or `unsafe` in this crate; see
//! docs/design/0002-dispatcher.md.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

use spin::RwLock;

/// An `Arc<T>` replaced atomically; see the module documentation.
pub(crate) struct Publication<T> {
    /// Generation of the current value; its parity is the current slot.
    /// Written only by writers holding the owner's writer lock.
    generation: AtomicU64,
    /// Slot `generation & 1` holds the current value, the other the previous
    /// one (or a value being installed).
    slots: [RwLock<Arc<T>>; 2],
}

impl<T> Publication<T> {
    pub(crate) fn new(initial: Arc<T>) -> Self {
        Publication {
            generation: AtomicU64::new(0),
            slots: [RwLock::new(initial.clone()), RwLock::new(initial)],
        }
    }

    /// The current generation (changes on every publication).
    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The current value and its generation. Never waits for a writer.
    pub(crate) fn load(&self) -> (u64, Arc<T>) {
        loop {
            let generation = self.generation.load(Ordering::Acquire);
            if let Some(slot) = self.slots[(generation & 1) as usize].try_read() {
                return (generation, slot.clone());
            }
            core::hint::spin_loop();
        }
    }

    /// Publishes `value`; returns its generation. The caller must hold the
    /// owner's writer lock (writers are not synchronized here).
    pub(crate) fn publish(&self, value: Arc<T>) -> u64 {
        let next = self.generation.load(Ordering::Relaxed) + 1;
        let old = {
            let mut slot = self.slots[(next & 1) as usize].write();
            core::mem::replace(&mut *slot, value)
        };
        // The one store that publishes the new list.
        self.generation.store(next, Ordering::Release);
        // The list from two generations ago; freed now unless a raiser (or a
        // RaiseCache) still holds it, in which case the last holder frees it.
        drop(old);
        next
    }
}
