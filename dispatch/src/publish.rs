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
//! private `Arc` revalidated by comparing *stamps*, which makes the
//! steady-state raise free of atomic read-modify-writes, as fast as the RCU
//! read side of a kernel. Every published value gets a stamp from one
//! counter shared by all publications, so a stamp names one value of one
//! publication for ever: a cache that holds the value stamped `s` may use
//! it exactly while the publication's current stamp is `s`, whichever event
//! the cache was last used with (one compare, no separate event check). Crates that do this with raw pointers (arc-swap,
//! crossbeam-epoch) need `std` or `unsafe` in this crate; see
//! docs/design/0002-dispatcher.md.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

use spin::RwLock;

/// The next stamp of any publication. Starts at 1: stamp 0 is never
/// given, so an empty cache (stamp 0) never matches. At one publication per
/// nanosecond a 64-bit counter lasts 584 years.
static NEXT_STAMP: AtomicU64 = AtomicU64::new(1);

fn next_stamp() -> u64 {
    NEXT_STAMP.fetch_add(1, Ordering::Relaxed)
}

/// An `Arc<T>` replaced atomically; see the module documentation.
pub(crate) struct Publication<T> {
    /// Generation of the current value; its parity is the current slot.
    /// Written only by writers holding the owner's writer lock.
    generation: AtomicU64,
    /// The current value's stamp (unique among all publications' values).
    /// Stored after `generation`.
    stamp: AtomicU64,
    /// Slot `generation & 1` holds the current value and its stamp, the
    /// other the previous one (or a value being installed).
    slots: [RwLock<(u64, Arc<T>)>; 2],
}

impl<T> Publication<T> {
    pub(crate) fn new(initial: Arc<T>) -> Self {
        let stamp = next_stamp();
        Publication {
            generation: AtomicU64::new(0),
            stamp: AtomicU64::new(stamp),
            slots: [
                RwLock::new((stamp, initial.clone())),
                RwLock::new((stamp, initial)),
            ],
        }
    }

    /// The current generation (changes on every publication).
    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The current value's stamp: equal to the stamp [`Publication::load`]
    /// returned exactly while that value is still the current one.
    #[inline(always)]
    pub(crate) fn stamp(&self) -> u64 {
        self.stamp.load(Ordering::Acquire)
    }

    /// The current value and its stamp. Never waits for a writer.
    pub(crate) fn load(&self) -> (u64, Arc<T>) {
        loop {
            let generation = self.generation.load(Ordering::Acquire);
            if let Some(slot) = self.slots[(generation & 1) as usize].try_read() {
                // The slot may hold a newer value than `generation` named
                // (refilled between the two reads): its own stamp is
                // returned, so a cache never labels a value wrongly.
                let (stamp, value) = &*slot;
                return (*stamp, value.clone());
            }
            core::hint::spin_loop();
        }
    }

    /// Publishes `value`; returns its generation. The caller must hold the
    /// owner's writer lock (writers are not synchronized here).
    pub(crate) fn publish(&self, value: Arc<T>) -> u64 {
        let next = self.generation.load(Ordering::Relaxed) + 1;
        let stamp = next_stamp();
        let old = {
            let mut slot = self.slots[(next & 1) as usize].write();
            core::mem::replace(&mut *slot, (stamp, value.clone()))
        };
        // The one store that publishes the new list to `load`...
        self.generation.store(next, Ordering::Release);
        // ... and the one that retires every cache of the old one.
        self.stamp.store(stamp, Ordering::Release);
        // The list from two generations ago; freed now unless a raiser (or a
        // RaiseCache) still holds it, in which case the last holder frees it.
        drop(old);
        // The list just replaced is retired too: its slot takes the new
        // value (a raiser that read the old generation then gets the new
        // list with its own stamp, which `load` allows). Otherwise the slot
        // would keep it, and whatever its handlers captured (a process, an
        // extension's state), until the next publication. A raiser cloning
        // from that slot right now makes the try fail: the list then goes
        // at the next publication, as before.
        let retired = self.slots[((next - 1) & 1) as usize]
            .try_write()
            .map(|mut slot| core::mem::replace(&mut *slot, (stamp, value)));
        drop(retired);
        next
    }
}
