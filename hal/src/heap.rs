//! The kernel heap: `talc` as the global allocator, grown on demand.
//!
//! The heap starts empty. When `talc` runs out of memory it calls
//! [`HeapGrower::handle_oom`], which maps more fresh pages at the end of the
//! heap region (see `memory`) and extends the arena, up to
//! [`HEAP_MAX_BYTES`]. Page-table and frame locks are separate from the heap
//! lock and never allocate, so growing from inside the allocator is safe.

use core::alloc::Layout;

use talc::{OomHandler, Span, Talc, Talck};

use crate::{
    memory::{self, HEAP_BASE, HEAP_MAX_BYTES, PAGE_SIZE},
    sync::RawIrqSpinlock,
};

/// Smallest amount the heap grows by at a time.
const GROWTH_STEP_BYTES: u64 = 256 * 1024;

/// `talc`'s out-of-memory hook: maps more pages at the end of the heap.
pub struct HeapGrower {
    /// The current arena (empty before the first allocation).
    arena: Span,
    /// Bytes mapped from `HEAP_BASE`.
    mapped_bytes: u64,
}

impl OomHandler for HeapGrower {
    fn handle_oom(talc: &mut Talc<Self>, layout: Layout) -> Result<(), ()> {
        let wanted = (layout.size() + layout.align() + 4096) as u64;
        let grow_by = wanted.max(GROWTH_STEP_BYTES).next_multiple_of(PAGE_SIZE);
        let old_mapped = talc.oom_handler.mapped_bytes;
        if old_mapped + grow_by > HEAP_MAX_BYTES {
            return Err(());
        }
        memory::map_internal(HEAP_BASE + old_mapped, grow_by / PAGE_SIZE).map_err(|_| ())?;
        let new_mapped = old_mapped + grow_by;
        talc.oom_handler.mapped_bytes = new_mapped;
        let whole = Span::from_base_size(HEAP_BASE as *mut u8, new_mapped as usize);
        let old_arena = talc.oom_handler.arena;
        talc.oom_handler.arena = if old_arena.is_empty() {
            // SAFETY: the pages were just mapped, read-write, for the heap
            // alone.
            unsafe { talc.claim(whole)? }
        } else {
            // SAFETY: `old_arena` is the arena talc manages; `whole` contains
            // it and the rest is freshly mapped memory for the heap alone.
            unsafe { talc.extend(old_arena, whole) }
        };
        Ok(())
    }
}

#[cfg(target_os = "none")]
#[global_allocator]
static ALLOCATOR: Talck<RawIrqSpinlock, HeapGrower> = Talck::new(Talc::new(HeapGrower {
    arena: Span::empty(),
    mapped_bytes: 0,
}));

/// Heap counters, for `mem` in the shell and for leak tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapStats {
    /// Bytes in live allocations.
    pub allocated_bytes: usize,
    /// Bytes available for allocation in the current arena.
    pub available_bytes: usize,
    /// Bytes of the heap region currently backed by frames.
    pub mapped_bytes: u64,
    /// Live allocations.
    pub allocation_count: usize,
}

/// Current heap counters.
#[cfg(target_os = "none")]
pub fn stats() -> HeapStats {
    let talc = ALLOCATOR.lock();
    let counters = talc.get_counters();
    HeapStats {
        allocated_bytes: counters.allocated_bytes,
        available_bytes: counters.available_bytes,
        mapped_bytes: talc.oom_handler.mapped_bytes,
        allocation_count: counters.allocation_count,
    }
}
