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

/// The global allocator: `talc`, behind a check that refuses a request no
/// heap of [`HEAP_MAX_BYTES`] could hold before `talc` sees it. `talc`
/// 4.4's in-place growth computes `pointer + new_size`, which wraps
/// around the address space for a huge size and then writes a tag
/// through the wrapped pointer: a `Vec` grown to a size a program chose
/// (a file written at offset 2^47) faulted the kernel that way. Refused,
/// it is an ordinary allocation failure the caller handles.
pub struct GuardedAllocator(Talck<RawIrqSpinlock, HeapGrower>);

impl GuardedAllocator {
    fn fits(size: usize) -> bool {
        size as u64 <= HEAP_MAX_BYTES
    }
}

// SAFETY: every method forwards to `talc`'s `GlobalAlloc` with the same
// arguments, or returns null (an allocation failure, which the contract
// allows) for sizes beyond the heap; so the contract holds as for `talc`.
unsafe impl core::alloc::GlobalAlloc for GuardedAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !Self::fits(layout.size()) {
            return core::ptr::null_mut();
        }
        // SAFETY: the caller's guarantees for `alloc`, passed on.
        unsafe { self.0.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !Self::fits(layout.size()) {
            return core::ptr::null_mut();
        }
        // SAFETY: the caller's guarantees for `alloc_zeroed`, passed on.
        unsafe { self.0.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: the caller's guarantees for `dealloc`, passed on.
        unsafe { self.0.dealloc(pointer, layout) }
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !Self::fits(new_size) {
            // The old block stays the caller's, as on any failure.
            return core::ptr::null_mut();
        }
        // SAFETY: the caller's guarantees for `realloc`, passed on.
        unsafe { self.0.realloc(pointer, layout, new_size) }
    }
}

#[cfg(target_os = "none")]
#[global_allocator]
static ALLOCATOR: GuardedAllocator = GuardedAllocator(Talck::new(Talc::new(HeapGrower {
    arena: Span::empty(),
    mapped_bytes: 0,
})));

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
    let talc = ALLOCATOR.0.lock();
    let counters = talc.get_counters();
    HeapStats {
        allocated_bytes: counters.allocated_bytes,
        available_bytes: counters.available_bytes,
        mapped_bytes: talc.oom_handler.mapped_bytes,
        allocation_count: counters.allocation_count,
    }
}
