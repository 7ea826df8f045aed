//! Page tables for the host: [`FakeTables`] records what the model asks
//! for (each page's frame and protection) over a pretend physical memory
//! of numbered frames, each holding one word of contents and a count of
//! owners, as `hal`'s frame allocator counts them. It follows `hal`'s
//! `AddressSpace` rule for rule where the model can tell (a frame another
//! owner shares stays read-only unless it is shared memory; `fork` makes
//! writable pages read-only in both; a private copy copies the contents),
//! and it can be told to run out of frames, to reach the model's error
//! paths.
//!
//! The physical memory is per thread (each test runs on its own), so
//! tests do not see each other's frames.

use core::cell::RefCell;
use std::{collections::BTreeMap, sync::Mutex};

use hal::paging::{MapError, UserProtection, PAGE_SIZE, USER_END};

use crate::PageTables;

/// The highest page a user may map (as `hal`: the last page of the user
/// half is never mapped).
const HIGHEST_MAPPABLE: u64 = USER_END - 2 * PAGE_SIZE;

/// A hold on a pretend frame: its number. Neither `Clone` nor `Copy`, as
/// `hal`'s `Frame`: each hold is let go once.
#[derive(Debug, PartialEq, Eq)]
pub struct FakeFrame(usize);

impl FakeFrame {
    /// The frame's number.
    pub fn number(&self) -> usize {
        self.0
    }
}

/// One pretend frame.
#[derive(Clone, Copy, Debug, Default)]
pub struct FrameState {
    /// What the frame holds (one word stands for a page of bytes).
    pub contents: u64,
    /// Holders and mappings; zero once freed.
    pub owners: u32,
    /// Made by `allocate_shared_memory_frame`: written by its owners
    /// together, never copied on write.
    pub shared_memory: bool,
}

/// The pretend physical memory of the thread.
#[derive(Default)]
struct Memory {
    /// Every frame ever made, by number (numbers are not reused, so a
    /// stale number is caught as a freed frame).
    frames: Vec<FrameState>,
    /// Frames that may still be made; `None` for no limit.
    frames_left: Option<u64>,
}

thread_local! {
    static MEMORY: RefCell<Memory> = RefCell::new(Memory::default());
}

/// Forgets every frame and lifts the limit: each test starts with this.
pub fn reset_memory() {
    MEMORY.with(|memory| *memory.borrow_mut() = Memory::default());
}

/// Lets only `frames` more frames be made (`None`: no limit). Page-table
/// frames are not counted, but an operation that may need one fails as
/// `hal`'s does ([`MapError::OutOfFrames`]) once no frame is left.
pub fn limit_frames(frames: Option<u64>) {
    MEMORY.with(|memory| memory.borrow_mut().frames_left = frames);
}

/// Frames with an owner.
pub fn live_frames() -> usize {
    MEMORY.with(|memory| {
        memory
            .borrow()
            .frames
            .iter()
            .filter(|frame| frame.owners > 0)
            .count()
    })
}

/// The state of frame `number`.
pub fn frame(number: usize) -> FrameState {
    MEMORY.with(|memory| memory.borrow().frames[number])
}

/// Whether no frame may be made (page tables could not grow either).
fn out_of_frames() -> bool {
    MEMORY.with(|memory| memory.borrow().frames_left == Some(0))
}

/// A fresh frame holding `contents`, with one owner.
fn allocate(contents: u64, shared_memory: bool) -> Option<usize> {
    MEMORY.with(|memory| {
        let mut memory = memory.borrow_mut();
        match &mut memory.frames_left {
            Some(0) => return None,
            Some(left) => *left -= 1,
            None => {}
        }
        memory.frames.push(FrameState {
            contents,
            owners: 1,
            shared_memory,
        });
        Some(memory.frames.len() - 1)
    })
}

/// One more owner of frame `number`.
fn share(number: usize) {
    MEMORY.with(|memory| {
        let mut memory = memory.borrow_mut();
        let frame = &mut memory.frames[number];
        assert!(frame.owners > 0, "frame {number} shared after it was freed");
        frame.owners += 1;
    });
}

/// One owner of frame `number` fewer.
fn release(number: usize) {
    MEMORY.with(|memory| {
        let mut memory = memory.borrow_mut();
        let frame = &mut memory.frames[number];
        assert!(frame.owners > 0, "frame {number} freed twice");
        frame.owners -= 1;
    });
}

/// Whether a page of frame `number` must stay read-only so that a write
/// first gets a private copy (`hal`'s rule).
fn must_stay_read_only(number: usize) -> bool {
    let frame = frame(number);
    frame.owners > 1 && !frame.shared_memory
}

/// `protection` as a page of frame `number` may have it: without write
/// access while the frame must stay read-only.
fn effective(protection: UserProtection, number: usize) -> UserProtection {
    if protection.is_writable() && must_stay_read_only(number) {
        protection.without_write()
    } else {
        protection
    }
}

/// A page-table entry: the frame and how user code may reach it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The frame's number.
    pub frame: usize,
    /// The entry's protection.
    pub protection: UserProtection,
}

/// Page tables that record their entries (under a lock, as `hal`'s
/// are: the map shares them through an `Arc`).
#[derive(Default)]
pub struct FakeTables {
    entries: Mutex<BTreeMap<u64, Entry>>,
}

/// The page `virt` as `hal` checks it: aligned and mappable.
fn user_page(virt: u64) -> Result<u64, MapError> {
    if !virt.is_multiple_of(PAGE_SIZE) {
        return Err(MapError::Unaligned(virt));
    }
    if virt > HIGHEST_MAPPABLE {
        return Err(MapError::OutsideRegion(virt));
    }
    Ok(virt)
}

impl FakeTables {
    /// The entry for the page holding `virt`.
    pub fn entry(&self, virt: u64) -> Option<Entry> {
        self.entries
            .lock()
            .unwrap()
            .get(&(virt & !(PAGE_SIZE - 1)))
            .copied()
    }

    /// Every entry, by page.
    pub fn entries(&self) -> BTreeMap<u64, Entry> {
        self.entries.lock().unwrap().clone()
    }

    /// What user code reads at the page holding `virt` (its frame's
    /// contents), if it is mapped.
    pub fn contents(&self, virt: u64) -> Option<u64> {
        self.entry(virt).map(|entry| frame(entry.frame).contents)
    }

    /// Stores `value` in the frame the page holding `virt` maps, as a
    /// user write the entry allows would.
    pub fn store(&self, virt: u64, value: u64) {
        let entry = self.entry(virt).expect("a store to an unmapped page");
        assert!(entry.protection.is_writable());
        MEMORY.with(|memory| memory.borrow_mut().frames[entry.frame].contents = value);
    }
}

impl PageTables for FakeTables {
    type Frame = FakeFrame;

    fn new_empty() -> Result<Self, MapError> {
        // hal takes a frame for the new root table.
        if out_of_frames() {
            return Err(MapError::OutOfFrames);
        }
        Ok(FakeTables::default())
    }

    fn protection(&self, virt: u64) -> Option<UserProtection> {
        user_page(virt & !(PAGE_SIZE - 1)).ok()?;
        self.entry(virt).map(|entry| entry.protection)
    }

    fn map(&self, virt: u64, protection: UserProtection) -> Result<(), MapError> {
        let page = user_page(virt)?;
        if self.entries.lock().unwrap().contains_key(&page) {
            return Err(MapError::AlreadyMapped(virt));
        }
        let frame = allocate(0, false).ok_or(MapError::OutOfFrames)?;
        self.entries
            .lock()
            .unwrap()
            .insert(page, Entry { frame, protection });
        Ok(())
    }

    fn map_frame(
        &self,
        virt: u64,
        frame: &FakeFrame,
        protection: UserProtection,
    ) -> Result<(), MapError> {
        let page = user_page(virt)?;
        if self.entries.lock().unwrap().contains_key(&page) {
            return Err(MapError::AlreadyMapped(virt));
        }
        if out_of_frames() {
            // The page table the entry goes in could not be made.
            return Err(MapError::OutOfFrames);
        }
        share(frame.0);
        self.entries.lock().unwrap().insert(
            page,
            Entry {
                frame: frame.0,
                protection,
            },
        );
        Ok(())
    }

    fn make_private(&self, virt: u64, protection: UserProtection) -> Result<(), MapError> {
        let page = user_page(virt)?;
        let entry = self.entry(page).ok_or(MapError::NotMapped(virt))?;
        let frame = if must_stay_read_only(entry.frame) {
            let copy =
                allocate(self::frame(entry.frame).contents, false).ok_or(MapError::OutOfFrames)?;
            release(entry.frame);
            copy
        } else {
            entry.frame
        };
        self.entries
            .lock()
            .unwrap()
            .insert(page, Entry { frame, protection });
        Ok(())
    }

    fn unmap_range(&self, start: u64, end: u64) -> u64 {
        let pages: Vec<u64> = self
            .entries
            .lock()
            .unwrap()
            .range(start..end.min(USER_END))
            .map(|(&page, _)| page)
            .collect();
        for page in &pages {
            if let Some(entry) = self.entries.lock().unwrap().remove(page) {
                release(entry.frame);
            }
        }
        pages.len() as u64
    }

    fn move_range(&self, from: u64, to: u64, len: u64) -> Result<u64, MapError> {
        let in_user_half = |start: u64| {
            start
                .checked_add(len)
                .is_some_and(|end| end <= HIGHEST_MAPPABLE + PAGE_SIZE)
        };
        if !from.is_multiple_of(PAGE_SIZE) || !to.is_multiple_of(PAGE_SIZE) {
            return Err(MapError::Unaligned(to));
        }
        if !len.is_multiple_of(PAGE_SIZE) {
            return Err(MapError::Unaligned(from));
        }
        if !in_user_half(from) || !in_user_half(to) {
            return Err(MapError::OutsideRegion(to));
        }
        if from < to + len && to < from + len {
            return Err(MapError::AlreadyMapped(to));
        }
        let mut entries = self.entries.lock().unwrap();
        if let Some((&page, _)) = entries.range(to..to + len).next() {
            return Err(MapError::AlreadyMapped(page));
        }
        let moving: Vec<(u64, Entry)> = entries
            .range(from..from + len)
            .map(|(&page, &entry)| (page, entry))
            .collect();
        if !moving.is_empty() && out_of_frames() {
            // The destination's page tables could not be made.
            return Err(MapError::OutOfFrames);
        }
        for &(page, entry) in &moving {
            entries.remove(&page);
            entries.insert(page - from + to, entry);
        }
        Ok(moving.len() as u64)
    }

    fn protect_range(&self, start: u64, end: u64, protection: UserProtection) -> u64 {
        let mut entries = self.entries.lock().unwrap();
        let mut count = 0;
        for (_, entry) in entries.range_mut(start..end.min(USER_END)) {
            entry.protection = effective(protection, entry.frame);
            count += 1;
        }
        count
    }

    fn share_range_with(
        &self,
        child: &Self,
        start: u64,
        end: u64,
        copy_on_write: bool,
    ) -> Result<u64, MapError> {
        if core::ptr::eq(self, child) {
            return Err(MapError::AlreadyMapped(start));
        }
        let end = end.min(HIGHEST_MAPPABLE + PAGE_SIZE);
        let mut entries = self.entries.lock().unwrap();
        let mut shared = 0;
        for (&page, entry) in entries.range_mut(start..end) {
            if child.entries.lock().unwrap().contains_key(&page) {
                return Err(MapError::AlreadyMapped(page));
            }
            if out_of_frames() {
                // The child's page tables could not grow.
                return Err(MapError::OutOfFrames);
            }
            if copy_on_write {
                entry.protection = entry.protection.without_write();
            }
            share(entry.frame);
            child.entries.lock().unwrap().insert(page, *entry);
            shared += 1;
        }
        Ok(shared)
    }

    fn allocate_shared_memory_frame() -> Option<FakeFrame> {
        allocate(0, true).map(FakeFrame)
    }

    fn share_frame(frame: &FakeFrame) -> FakeFrame {
        share(frame.0);
        FakeFrame(frame.0)
    }

    fn free_frame(frame: FakeFrame) {
        release(frame.0);
    }
}

impl Drop for FakeTables {
    fn drop(&mut self) {
        for (_, entry) in core::mem::take(self.entries.get_mut().unwrap()) {
            release(entry.frame);
        }
    }
}

/// A file's page as a page cache holds it: a frame with `contents`, of
/// which the caller gets a hold.
pub fn file_frame(contents: u64) -> Option<FakeFrame> {
    allocate(contents, false).map(FakeFrame)
}
