//! Physical frame allocator: one bit per 4 KiB frame.
//!
//! The bitmap is a fixed array in `.bss` sized for [`MAX_PHYS_BYTES`] of
//! physical address space, so it exists before the heap does. A set bit means
//! "free". Allocation scans from a hint, the lowest word where a frame was
//! freed or the last allocation found one, so freed memory is reused first
//! and a run of allocations costs O(1) amortised; freeing checks that the
//! frame was allocated, which catches double frees.
//!
//! A frame may be shared by several owners (a page mapped copy-on-write
//! in two address spaces after `fork`): [`FrameBitmap::share`] counts one
//! more owner, and [`FrameBitmap::free`] frees the frame only when its last
//! owner lets go. The counts sit in a table with one entry per frame
//! (Linux's `struct page` reference count), handed in once memory is known
//! ([`FrameBitmap::give_owner_table`]), not in a map on the kernel heap:
//! the heap grows by taking frames from this allocator, under its lock, so
//! an allocation made while that lock is held (a map node for a new shared
//! frame) would wait for the lock it holds, with interrupts off, and stop
//! the machine. Nothing here allocates.
//!
//! A frame may also be marked as shared memory ([`FrameBitmap::mark_shared_memory`]):
//! memory its owners are meant to write together (`MAP_SHARED`), which
//! stays writable while shared instead of being copied on write. The mark
//! goes when the frame is freed.
//!
//! This module is plain safe logic and is unit-tested on the host.

/// Size of a physical frame (and of a small page).
pub const FRAME_SIZE: u64 = 4096;
/// Highest physical address the allocator can manage (exclusive): 4 GiB.
pub const MAX_PHYS_BYTES: u64 = 4 << 30;
const MAX_FRAMES: usize = (MAX_PHYS_BYTES / FRAME_SIZE) as usize;
const WORDS: usize = MAX_FRAMES / 64;

/// Why a frame could not be freed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// The address is not 4 KiB aligned.
    Unaligned(u64),
    /// The frame lies outside memory the allocator manages.
    NotManaged(u64),
    /// The frame is already free (a double free).
    AlreadyFree(u64),
    /// The frame has no entry in the owner table (none was given, or the
    /// frame lies beyond it).
    NoOwnerCount(u64),
}

/// A bitmap over physical frames: bit set = free.
pub struct FrameBitmap {
    free_bits: [u64; WORDS],
    /// Frames ever added (usable RAM), whether free or not.
    managed_frames: usize,
    free_frames: usize,
    /// Word index where the next search starts.
    hint: usize,
    /// One past the highest frame number added: the size the owner table
    /// must have.
    frame_limit: usize,
    /// Owners beyond the first, one entry per frame below `frame_limit`
    /// (empty until [`Self::give_owner_table`]).
    extra_owners: &'static mut [u32],
    /// Frames with more than one owner.
    shared_frames: usize,
    /// Frames of shared memory: bit set = marked.
    shared_memory_bits: [u64; WORDS],
}

impl FrameBitmap {
    /// An allocator that manages no memory yet.
    pub const fn new() -> Self {
        Self {
            free_bits: [0; WORDS],
            managed_frames: 0,
            free_frames: 0,
            hint: 0,
            frame_limit: 0,
            extra_owners: &mut [],
            shared_frames: 0,
            shared_memory_bits: [0; WORDS],
        }
    }

    /// Adds the whole frames inside `[start, end)` as free memory, minus any
    /// part of `reserved` (e.g. the kernel image). Frames above
    /// [`MAX_PHYS_BYTES`] are ignored.
    pub fn add_region(&mut self, start: u64, end: u64, reserved: &[(u64, u64)]) {
        let first = start.div_ceil(FRAME_SIZE);
        let last = (end.min(MAX_PHYS_BYTES)) / FRAME_SIZE;
        for frame in first..last {
            let address = frame * FRAME_SIZE;
            let is_reserved = reserved
                .iter()
                .any(|&(low, high)| address + FRAME_SIZE > low && address < high);
            let (word, bit) = (frame as usize / 64, frame as usize % 64);
            if is_reserved || self.free_bits[word] & (1 << bit) != 0 {
                continue;
            }
            self.free_bits[word] |= 1 << bit;
            self.managed_frames += 1;
            self.free_frames += 1;
            self.frame_limit = self.frame_limit.max(frame as usize + 1);
        }
    }

    /// Entries the owner table needs: one per frame up to the highest
    /// frame added.
    pub fn owner_table_len(&self) -> usize {
        self.frame_limit
    }

    /// Gives the allocator its owner table, all zero, with at least
    /// [`Self::owner_table_len`] entries (the caller takes its memory
    /// before any frame is shared; a table given earlier is replaced only
    /// while no frame is shared).
    pub fn give_owner_table(&mut self, table: &'static mut [u32]) {
        debug_assert!(table.iter().all(|&count| count == 0));
        if self.shared_frames == 0 {
            self.extra_owners = table;
        }
    }

    /// The owner-table entry of the allocated frame at `address`.
    fn owner_count(&mut self, address: u64) -> Result<&mut u32, FrameError> {
        self.check_allocated(address)?;
        self.extra_owners
            .get_mut((address / FRAME_SIZE) as usize)
            .ok_or(FrameError::NoOwnerCount(address))
    }

    /// Takes one free frame and returns its physical address.
    pub fn allocate(&mut self) -> Option<u64> {
        if self.free_frames == 0 {
            return None;
        }
        for offset in 0..WORDS {
            let word = (self.hint + offset) % WORDS;
            let bits = self.free_bits[word];
            if bits != 0 {
                let bit = bits.trailing_zeros() as usize;
                self.free_bits[word] &= !(1 << bit);
                self.free_frames -= 1;
                self.hint = word;
                return Some((word * 64 + bit) as u64 * FRAME_SIZE);
            }
        }
        None
    }

    /// Takes `count` free frames that are physically contiguous (a device
    /// reading a ring or buffer by physical address needs them so) and
    /// returns the first one's address. Searches from the bottom; `None`
    /// when no run of that length is free.
    pub fn allocate_contiguous(&mut self, count: usize) -> Option<u64> {
        if count == 0 || count > self.free_frames {
            return None;
        }
        let total = WORDS * 64;
        let is_free =
            |bits: &[u64; WORDS], frame: usize| bits[frame / 64] & (1 << (frame % 64)) != 0;
        let mut start = 0;
        while start + count <= total {
            // Skip whole words with no free frame quickly.
            if start % 64 == 0 && self.free_bits[start / 64] == 0 {
                start += 64;
                continue;
            }
            match (start..start + count).find(|&frame| !is_free(&self.free_bits, frame)) {
                Some(taken) => start = taken + 1,
                None => {
                    for frame in start..start + count {
                        self.free_bits[frame / 64] &= !(1 << (frame % 64));
                    }
                    self.free_frames -= count;
                    return Some(start as u64 * FRAME_SIZE);
                }
            }
        }
        None
    }

    /// Adds an owner to the allocated frame at `address` (it is now shared).
    pub fn share(&mut self, address: u64) -> Result<(), FrameError> {
        let count = self.owner_count(address)?;
        *count += 1;
        if *count == 1 {
            self.shared_frames += 1;
        }
        Ok(())
    }

    /// Marks the allocated frame at `address` as shared memory, which its
    /// owners write together (see the module's doc); the mark lasts until
    /// the frame is freed.
    pub fn mark_shared_memory(&mut self, address: u64) -> Result<(), FrameError> {
        self.check_allocated(address)?;
        let frame = (address / FRAME_SIZE) as usize;
        self.shared_memory_bits[frame / 64] |= 1 << (frame % 64);
        Ok(())
    }

    /// Whether the frame at `address` is marked as shared memory.
    pub fn is_shared_memory(&self, address: u64) -> bool {
        let frame = (address / FRAME_SIZE) as usize;
        address < MAX_PHYS_BYTES && self.shared_memory_bits[frame / 64] & (1 << (frame % 64)) != 0
    }

    /// Whether the allocated frame at `address` has more than one owner.
    pub fn is_shared(&self, address: u64) -> bool {
        self.extra_owners
            .get((address / FRAME_SIZE) as usize)
            .is_some_and(|&count| count > 0)
    }

    /// Frames with more than one owner.
    pub fn shared_frames(&self) -> usize {
        self.shared_frames
    }

    fn check_allocated(&self, address: u64) -> Result<(), FrameError> {
        if !address.is_multiple_of(FRAME_SIZE) {
            return Err(FrameError::Unaligned(address));
        }
        if address >= MAX_PHYS_BYTES {
            return Err(FrameError::NotManaged(address));
        }
        let frame = (address / FRAME_SIZE) as usize;
        if self.free_bits[frame / 64] & (1 << (frame % 64)) != 0 {
            return Err(FrameError::AlreadyFree(address));
        }
        Ok(())
    }

    /// Lets go of one owner of the frame at `address`: the frame returns to
    /// the free pool when it was the last.
    pub fn free(&mut self, address: u64) -> Result<(), FrameError> {
        if let Ok(extra) = self.owner_count(address) {
            if *extra > 0 {
                *extra -= 1;
                if *extra == 0 {
                    self.shared_frames -= 1;
                }
                return Ok(());
            }
        }
        self.release(address)
    }

    fn release(&mut self, address: u64) -> Result<(), FrameError> {
        if !address.is_multiple_of(FRAME_SIZE) {
            return Err(FrameError::Unaligned(address));
        }
        if address >= MAX_PHYS_BYTES {
            return Err(FrameError::NotManaged(address));
        }
        let frame = (address / FRAME_SIZE) as usize;
        let (word, bit) = (frame / 64, frame % 64);
        if self.free_bits[word] & (1 << bit) != 0 {
            return Err(FrameError::AlreadyFree(address));
        }
        self.free_bits[word] |= 1 << bit;
        self.shared_memory_bits[word] &= !(1 << bit);
        self.free_frames += 1;
        // The search starts at the lowest word with a freed frame: memory
        // is reused from the bottom, warm in the caches (and, under an
        // emulator, already backed by the host, where a never-touched frame
        // costs the host a page fault: 7 µs per page under TCG).
        self.hint = self.hint.min(word);
        Ok(())
    }

    /// Frames currently free.
    pub fn free_frames(&self) -> usize {
        self.free_frames
    }

    /// Frames managed (usable RAM added with [`Self::add_region`]).
    pub fn managed_frames(&self) -> usize {
        self.managed_frames
    }
}

impl Default for FrameBitmap {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::{boxed::Box, collections::HashSet, vec, vec::Vec};

    use super::*;

    fn bitmap() -> Box<FrameBitmap> {
        Box::new(FrameBitmap::new())
    }

    /// Gives `frames` an owner table of the size it asks for, as
    /// `memory::init` does in the kernel.
    fn give_table(frames: &mut FrameBitmap) {
        let table = vec![0u32; frames.owner_table_len()].leak();
        frames.give_owner_table(table);
    }

    #[test]
    fn allocates_distinct_aligned_frames_inside_regions() {
        let mut frames = bitmap();
        frames.add_region(0x10_0000, 0x20_0000, &[]);
        assert_eq!(frames.managed_frames(), 256);
        let mut seen = HashSet::new();
        while let Some(frame) = frames.allocate() {
            assert_eq!(frame % FRAME_SIZE, 0);
            assert!((0x10_0000..0x20_0000).contains(&frame));
            assert!(seen.insert(frame), "frame {frame:#x} handed out twice");
        }
        assert_eq!(seen.len(), 256);
        assert_eq!(frames.free_frames(), 0);
    }

    #[test]
    fn reserved_ranges_and_partial_frames_are_excluded() {
        let mut frames = bitmap();
        frames.add_region(0x1001, 0x10_0000, &[(0x8000, 0x9001)]);
        // 0x2000..0x100000 is 254 frames; 0x8000 and 0x9000 are reserved.
        assert_eq!(frames.managed_frames(), 252);
        while let Some(frame) = frames.allocate() {
            assert!(frame >= 0x2000);
            assert!(frame != 0x8000 && frame != 0x9000);
        }
    }

    #[test]
    fn free_returns_frames_and_rejects_double_free() {
        let mut frames = bitmap();
        frames.add_region(0, 0x4000, &[]);
        let frame = frames.allocate().unwrap();
        assert_eq!(frames.free_frames(), 3);
        assert_eq!(frames.free(frame), Ok(()));
        assert_eq!(frames.free_frames(), 4);
        assert_eq!(frames.free(frame), Err(FrameError::AlreadyFree(frame)));
        assert_eq!(
            frames.free(frame + 1),
            Err(FrameError::Unaligned(frame + 1))
        );
        assert_eq!(
            frames.free(MAX_PHYS_BYTES),
            Err(FrameError::NotManaged(MAX_PHYS_BYTES))
        );
    }

    #[test]
    fn a_shared_frame_is_freed_by_its_last_owner() {
        let mut frames = bitmap();
        frames.add_region(0, 0x4000, &[]);
        give_table(&mut frames);
        let frame = frames.allocate().unwrap();
        assert_eq!(frames.share(frame), Ok(()));
        assert_eq!(frames.share(frame), Ok(()));
        assert!(frames.is_shared(frame));
        assert_eq!(frames.shared_frames(), 1);
        assert_eq!(frames.free(frame), Ok(()));
        assert_eq!(frames.free(frame), Ok(()));
        assert!(!frames.is_shared(frame));
        assert_eq!(frames.free_frames(), 3);
        assert_eq!(frames.free(frame), Ok(()));
        assert_eq!(frames.free_frames(), 4);
        assert_eq!(frames.share(frame), Err(FrameError::AlreadyFree(frame)));
    }

    #[test]
    fn freed_frames_are_reused_lowest_first() {
        let mut frames = bitmap();
        frames.add_region(0, 0x10_0000, &[]);
        let taken: Vec<u64> = (0..10).map(|_| frames.allocate().unwrap()).collect();
        assert_eq!(frames.free(taken[3]), Ok(()));
        assert_eq!(frames.free(taken[7]), Ok(()));
        assert_eq!(frames.allocate(), Some(taken[3]));
        assert_eq!(frames.allocate(), Some(taken[7]));
        let all: HashSet<u64> = core::iter::from_fn(|| frames.allocate()).collect();
        assert!(!all.contains(&taken[3]) && !all.contains(&taken[7]));
        assert_eq!(frames.free_frames(), 0);
    }

    #[test]
    fn contiguous_runs_skip_taken_frames_and_free_one_by_one() {
        let mut frames = bitmap();
        frames.add_region(0, 0x10_0000, &[(0x3000, 0x4000)]);
        // Frames 0-2 are free, 3 is reserved: a run of 4 starts at 4.
        assert_eq!(frames.allocate_contiguous(4), Some(0x4000));
        assert_eq!(frames.allocate_contiguous(3), Some(0));
        assert_eq!(frames.free_frames(), 255 - 7);
        for frame in 4..8 {
            assert_eq!(frames.free(frame * FRAME_SIZE), Ok(()));
        }
        assert_eq!(frames.allocate_contiguous(4), Some(0x4000));
        assert_eq!(frames.allocate_contiguous(1000), None);
        assert_eq!(frames.allocate_contiguous(0), None);
        // Across a word boundary (frames 60-70).
        let mut frames = bitmap();
        frames.add_region(60 * FRAME_SIZE, 71 * FRAME_SIZE, &[]);
        assert_eq!(frames.allocate_contiguous(11), Some(60 * FRAME_SIZE));
        assert_eq!(frames.free_frames(), 0);
    }

    #[test]
    fn sharing_needs_the_owner_table_and_stays_inside_it() {
        let mut frames = bitmap();
        frames.add_region(0, 0x4000, &[]);
        let frame = frames.allocate().unwrap();
        assert_eq!(frames.share(frame), Err(FrameError::NoOwnerCount(frame)));
        assert_eq!(frames.owner_table_len(), 4);
        // A table too short for the frame: refused, and freeing still works.
        frames.give_owner_table(vec![0u32; 0].leak());
        assert_eq!(frames.share(frame), Err(FrameError::NoOwnerCount(frame)));
        assert_eq!(frames.free(frame), Ok(()));
        give_table(&mut frames);
        let frame = frames.allocate().unwrap();
        assert_eq!(frames.share(frame), Ok(()));
        assert_eq!(frames.free(frame), Ok(()));
        assert_eq!(frames.free(frame), Ok(()));
        assert_eq!(frames.free_frames(), 4);
    }

    #[test]
    fn adding_a_region_twice_counts_it_once() {
        let mut frames = bitmap();
        frames.add_region(0, 0x4000, &[]);
        frames.add_region(0, 0x4000, &[]);
        assert_eq!(frames.managed_frames(), 4);
    }

    #[test]
    fn the_shared_memory_mark_lasts_until_the_frame_is_freed() {
        let mut frames = bitmap();
        frames.add_region(0, 0x4000, &[]);
        give_table(&mut frames);
        let frame = frames.allocate().unwrap();
        assert!(!frames.is_shared_memory(frame));
        assert_eq!(frames.mark_shared_memory(frame), Ok(()));
        assert!(frames.is_shared_memory(frame));
        frames.share(frame).unwrap();
        assert_eq!(frames.free(frame), Ok(()));
        assert!(frames.is_shared_memory(frame), "one owner is left");
        assert_eq!(frames.free(frame), Ok(()));
        assert!(!frames.is_shared_memory(frame), "freed, the mark goes");
        assert_eq!(
            frames.mark_shared_memory(frame),
            Err(FrameError::AlreadyFree(frame))
        );
        assert!(!frames.is_shared_memory(!0xfff), "beyond managed memory");
    }
}
