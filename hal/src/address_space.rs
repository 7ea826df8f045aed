//! User address spaces: page tables of their own for the lower half, the
//! kernel's shared upper half.
//!
//! An [`AddressSpace`] owns a PML4 whose upper 256 entries are copies of
//! the kernel's (which never change after boot: `memory::init` gives each a
//! PDPT up front), and whose lower half maps user pages, each to a fresh
//! zeroed frame the address space owns. Dropping it frees those frames and
//! the lower-half tables. The context switch loads the root of the incoming
//! thread's address space into CR3 (`context`).

use x86_64::{
    registers::control::{Cr3, Cr3Flags},
    structures::paging::{
        mapper::{MapToError, TranslateResult},
        page_table::PageTableEntry,
        FrameAllocator, Mapper, OffsetPageTable, Page, PageTable, PageTableFlags, PhysFrame,
        Size4KiB, Translate,
    },
    PhysAddr, VirtAddr,
};

use core::sync::atomic::{AtomicU64, Ordering};

pub use crate::paging::UserProtection;

use crate::{
    memory::{self, MapError, TableFrames, FRAMES, PAGE_SIZE, PHYS_OFFSET},
    sync::{IrqMutex, IrqMutexGuard},
    user::USER_END,
};

/// The highest page of the user half is never mapped: a `syscall` at its
/// very end would return (`sysret`) to a non-canonical address, which
/// faults in ring 0 on the user's stack on Intel CPUs.
const HIGHEST_MAPPABLE: u64 = USER_END - 2 * PAGE_SIZE;

impl UserProtection {
    /// The protection a leaf entry's flags give.
    fn of(flags: PageTableFlags) -> Self {
        if !flags.contains(PageTableFlags::PRESENT) {
            UserProtection::None
        } else if flags.contains(PageTableFlags::WRITABLE) {
            if flags.contains(PageTableFlags::NO_EXECUTE) {
                UserProtection::ReadWrite
            } else {
                UserProtection::ReadWriteExecute
            }
        } else if flags.contains(PageTableFlags::NO_EXECUTE) {
            UserProtection::Read
        } else {
            UserProtection::ReadExecute
        }
    }

    fn flags(self) -> PageTableFlags {
        let base = PageTableFlags::PRESENT | PageTableFlags::USER_ACCESSIBLE;
        match self {
            UserProtection::None => PageTableFlags::USER_ACCESSIBLE | PageTableFlags::NO_EXECUTE,
            UserProtection::Read => base | PageTableFlags::NO_EXECUTE,
            UserProtection::ReadWrite => {
                base | PageTableFlags::WRITABLE | PageTableFlags::NO_EXECUTE
            }
            UserProtection::ReadExecute => base,
            UserProtection::ReadWriteExecute => base | PageTableFlags::WRITABLE,
        }
    }
}

/// The user page at `virt`: page aligned, and below the highest page a
/// user may have (see [`HIGHEST_MAPPABLE`]).
fn user_page(virt: u64) -> Result<Page<Size4KiB>, MapError> {
    if !virt.is_multiple_of(PAGE_SIZE) {
        return Err(MapError::Unaligned(virt));
    }
    if virt > HIGHEST_MAPPABLE {
        return Err(MapError::OutsideRegion(virt));
    }
    Ok(Page::containing_address(VirtAddr::new(virt)))
}

/// A user address space. Its page tables are changed under its own lock,
/// so the thread running in it (a fault handler mapping a page) and the
/// kernel (loading a program) can share it.
#[derive(Debug)]
pub struct AddressSpace {
    root: PhysFrame,
    /// User pages mapped (for accounting and tests).
    pages: AtomicU64,
    /// Held while the lower-half tables are read or changed.
    tables: IrqMutex<()>,
}

/// The page table at physical `frame`, through the physical window.
///
/// # Safety
/// `frame` must hold a page table that nothing else refers to as a Rust
/// reference for the lifetime chosen.
unsafe fn table_at<'a>(frame: PhysFrame) -> &'a mut PageTable {
    // SAFETY: guaranteed by the caller; the window maps all RAM.
    unsafe { &mut *((PHYS_OFFSET + frame.start_address().as_u64()) as *mut PageTable) }
}

impl AddressSpace {
    /// An empty user half over the kernel's upper half.
    pub fn new() -> Result<Self, MapError> {
        let root = {
            let mut frames = FRAMES.lock();
            let address = frames.allocate().ok_or(MapError::OutOfFrames)?;
            PhysFrame::containing_address(PhysAddr::new(address))
        };
        let kernel = PhysFrame::containing_address(PhysAddr::new(memory::kernel_root()));
        // SAFETY: `root` was just allocated, so nothing refers to it; the
        // kernel's PML4 is only read here, and its upper half never changes
        // after boot.
        let (table, kernel_table) = unsafe { (table_at(root), table_at(kernel)) };
        for index in 0..256 {
            table[index].set_unused();
        }
        for index in 256..512 {
            table[index] = kernel_table[index].clone();
        }
        Ok(AddressSpace {
            root,
            pages: AtomicU64::new(0),
            tables: IrqMutex::new(()),
        })
    }

    /// The page tables, for as long as `_lock` (this address space's table
    /// lock) is held.
    fn mapper<'a>(&'a self, _lock: &'a IrqMutexGuard<'_, ()>) -> OffsetPageTable<'a> {
        // SAFETY: `self.root` is this address space's PML4; the table lock,
        // held for the mapper's lifetime, makes this the only reference to
        // its tables; all RAM is in the window.
        unsafe { OffsetPageTable::new(table_at(self.root), VirtAddr::new(PHYS_OFFSET)) }
    }

    /// Maps user page `virt` to a fresh zeroed frame with `protection`.
    pub fn map(&self, virt: u64, protection: UserProtection) -> Result<(), MapError> {
        let page = user_page(virt)?;
        let lock = self.tables.lock();
        let mut frames = FRAMES.lock();
        let mut table_frames = TableFrames(&mut frames);
        // Zeroed by the allocator: no kernel data reaches user mode.
        let frame = table_frames.allocate_frame().ok_or(MapError::OutOfFrames)?;
        let parent_flags =
            PageTableFlags::PRESENT | PageTableFlags::WRITABLE | PageTableFlags::USER_ACCESSIBLE;
        // SAFETY: a user page of this address space mapped to a fresh frame:
        // nothing aliases it, and no kernel memory is reachable through the
        // lower half.
        let result = unsafe {
            self.mapper(&lock).map_to_with_table_flags(
                page,
                frame,
                protection.flags(),
                parent_flags,
                &mut table_frames,
            )
        };
        match result {
            Ok(flush) => {
                // Only the active address space has TLB entries to drop.
                flush.flush();
                self.pages.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(error) => {
                let _ = table_frames.0.free(frame.start_address().as_u64());
                Err(match error {
                    MapToError::FrameAllocationFailed => MapError::OutOfFrames,
                    _ => MapError::AlreadyMapped(virt),
                })
            }
        }
    }

    /// Maps user page `virt` to `frame`, which the caller keeps: the page
    /// tables become one more owner of the frame (it is freed when the
    /// last of the holder and every mapping lets go), so dropping or
    /// freeing the `Frame` while it is mapped cannot free memory a user
    /// page still reaches. The `PhysAddr` service maps its pages this way.
    pub fn map_frame(
        &self,
        virt: u64,
        frame: &memory::Frame,
        protection: UserProtection,
    ) -> Result<(), MapError> {
        let page = user_page(virt)?;
        let lock = self.tables.lock();
        let mut frames = FRAMES.lock();
        frames
            .share(frame.address())
            .map_err(|_| MapError::NotMapped(frame.address()))?;
        let mut table_frames = TableFrames(&mut frames);
        let parent_flags =
            PageTableFlags::PRESENT | PageTableFlags::WRITABLE | PageTableFlags::USER_ACCESSIBLE;
        // SAFETY: a user page of this address space mapped to a user frame
        // it now co-owns (shared above); no kernel memory becomes reachable
        // through the lower half.
        let result = unsafe {
            self.mapper(&lock).map_to_with_table_flags(
                page,
                PhysFrame::containing_address(PhysAddr::new(frame.address())),
                protection.flags(),
                parent_flags,
                &mut table_frames,
            )
        };
        match result {
            Ok(flush) => {
                flush.flush();
                self.pages.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(error) => {
                // Undo the share: the mapping was not made.
                let _ = table_frames.0.free(frame.address());
                Err(match error {
                    MapToError::FrameAllocationFailed => MapError::OutOfFrames,
                    _ => MapError::AlreadyMapped(virt),
                })
            }
        }
    }

    /// Copies bytes from user address `virt` into `out` through the kernel's
    /// window (whatever the pages' protection); every page touched must be
    /// mapped. The counterpart of [`Self::write`].
    pub fn read(&self, virt: u64, out: &mut [u8]) -> Result<(), MapError> {
        let mut done = 0;
        while done < out.len() {
            let at = virt + done as u64;
            let physical = self.translate(at).ok_or(MapError::NotMapped(at))?;
            let room = (PAGE_SIZE - at % PAGE_SIZE) as usize;
            let chunk = room.min(out.len() - done);
            // SAFETY: `physical` is in a user frame this address space maps,
            // reached through the window; the chunk stays inside it; no Rust
            // reference points into user frames.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    (PHYS_OFFSET + physical) as *const u8,
                    out[done..].as_mut_ptr(),
                    chunk,
                )
            };
            done += chunk;
        }
        Ok(())
    }

    /// Copies `bytes` to user address `virt` through the kernel's window
    /// (whatever the pages' protection: for loading programs); every page
    /// touched must be mapped, to a frame this address space alone owns
    /// (else [`MapError::SharedFrame`]: a page shared by `fork` or from
    /// the page cache is another owner's too). Pages before a failing one
    /// are written.
    pub fn write(&self, virt: u64, bytes: &[u8]) -> Result<(), MapError> {
        // Held throughout, so that no page written is shared meanwhile.
        let lock = self.tables.lock();
        let mut done = 0;
        while done < bytes.len() {
            let at = virt + done as u64;
            if at >= USER_END {
                return Err(MapError::NotMapped(at));
            }
            let physical = match self.mapper(&lock).translate(VirtAddr::new(at)) {
                TranslateResult::Mapped { frame, offset, .. } => {
                    frame.start_address().as_u64() + offset
                }
                _ => return Err(MapError::NotMapped(at)),
            };
            if FRAMES.lock().is_shared(physical & !(PAGE_SIZE - 1)) {
                return Err(MapError::SharedFrame(at));
            }
            let room = (PAGE_SIZE - at % PAGE_SIZE) as usize;
            let chunk = room.min(bytes.len() - done);
            // SAFETY: `physical` is in a user frame this address space
            // alone owns (checked above, under the table lock, which keeps
            // it so), reached through the window; the chunk stays inside
            // it; no Rust reference points into user frames.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    bytes[done..].as_ptr(),
                    (PHYS_OFFSET + physical) as *mut u8,
                    chunk,
                )
            };
            done += chunk;
        }
        Ok(())
    }

    /// The physical address user address `virt` maps to, if mapped.
    pub fn translate(&self, virt: u64) -> Option<u64> {
        if virt >= USER_END {
            return None;
        }
        let lock = self.tables.lock();
        match self.mapper(&lock).translate(VirtAddr::new(virt)) {
            TranslateResult::Mapped { frame, offset, .. } => {
                Some(frame.start_address().as_u64() + offset)
            }
            _ => None,
        }
    }

    /// User pages mapped.
    pub fn pages(&self) -> u64 {
        self.pages.load(Ordering::Relaxed)
    }

    /// Changes the protection of mapped user page `virt`; a page whose
    /// frame has another owner (another address space, or the page
    /// cache) stays read-only, as under [`Self::protect_range`]: a write
    /// must first get a private copy.
    pub fn protect(&self, virt: u64, protection: UserProtection) -> Result<(), MapError> {
        user_page(virt)?;
        let mut lock = self.tables.lock();
        let entry = self
            .leaf(&mut lock, virt)
            .ok_or(MapError::NotMapped(virt))?;
        let frame = entry.addr();
        let mut flags = protection.flags();
        if must_stay_read_only(&FRAMES.lock(), frame.as_u64()) {
            flags.remove(PageTableFlags::WRITABLE);
        }
        entry.set_addr(frame, flags);
        self.flush(virt);
        Ok(())
    }

    /// The protection of mapped user page `virt`, if it is mapped.
    pub fn protection(&self, virt: u64) -> Option<UserProtection> {
        user_page(virt & !(PAGE_SIZE - 1)).ok()?;
        let mut lock = self.tables.lock();
        let entry = self.leaf(&mut lock, virt)?;
        Some(UserProtection::of(entry.flags()))
    }

    /// Unmaps user page `virt` and lets go of its frame (freed unless
    /// another address space shares it).
    pub fn unmap(&self, virt: u64) -> Result<(), MapError> {
        user_page(virt)?;
        let mut lock = self.tables.lock();
        let entry = self
            .leaf(&mut lock, virt)
            .ok_or(MapError::NotMapped(virt))?;
        let frame = entry.addr().as_u64();
        entry.set_unused();
        self.flush(virt);
        let _ = FRAMES.lock().free(frame);
        self.pages.fetch_sub(1, Ordering::Relaxed);
        Ok(())
    }

    /// Unmaps every page mapped in `[start, end)` and lets go of their
    /// frames; returns how many there were.
    pub fn unmap_range(&self, start: u64, end: u64) -> u64 {
        let mut frames_released = alloc::vec::Vec::new();
        {
            let _lock = self.tables.lock();
            // SAFETY: this address space's PML4, under its table lock.
            let root = unsafe { table_at(self.root) };
            for_each_leaf(root, 4, 0, start, end.min(USER_END), &mut |_, entry| {
                frames_released.push(entry.addr().as_u64());
                entry.set_unused();
                true
            });
        }
        self.flush_range(start, end.min(USER_END));
        let mut frames = FRAMES.lock();
        for frame in &frames_released {
            let _ = frames.free(*frame);
        }
        drop(frames);
        let count = frames_released.len() as u64;
        self.pages.fetch_sub(count, Ordering::Relaxed);
        count
    }

    /// Moves every page mapped in `[from, from + len)` to the same place
    /// in `[to, to + len)` (`mremap` moving a mapping): each keeps its
    /// frame, its protection and its owners, and the old addresses are
    /// left unmapped. Every page of the destination must be unmapped and
    /// both ranges page aligned, in the user half, and apart; otherwise,
    /// or if the destination's page tables cannot be made, nothing moves.
    /// Returns how many pages moved.
    pub fn move_range(&self, from: u64, to: u64, len: u64) -> Result<u64, MapError> {
        let in_user_half = |start: u64| {
            start
                .checked_add(len)
                .is_some_and(|end| end <= HIGHEST_MAPPABLE + PAGE_SIZE)
        };
        if !from.is_multiple_of(PAGE_SIZE)
            || !to.is_multiple_of(PAGE_SIZE)
            || !len.is_multiple_of(PAGE_SIZE)
        {
            return Err(MapError::Unaligned(if !from.is_multiple_of(PAGE_SIZE) {
                from
            } else {
                to
            }));
        }
        if !in_user_half(from) || !in_user_half(to) {
            return Err(MapError::OutsideRegion(to));
        }
        if from < to + len && to < from + len {
            return Err(MapError::AlreadyMapped(to));
        }
        let mut lock = self.tables.lock();
        // SAFETY: this address space's PML4, under its table lock.
        let root = unsafe { table_at(self.root) };
        let mut destination_used = None;
        for_each_leaf(root, 4, 0, to, to + len, &mut |virt, _| {
            destination_used = Some(virt);
            false
        });
        if let Some(virt) = destination_used {
            return Err(MapError::AlreadyMapped(virt));
        }
        let mut pages = alloc::vec::Vec::new();
        for_each_leaf(root, 4, 0, from, from + len, &mut |virt, entry| {
            pages.push((virt, entry.addr(), entry.flags()));
            true
        });
        let parent_flags =
            PageTableFlags::PRESENT | PageTableFlags::WRITABLE | PageTableFlags::USER_ACCESSIBLE;
        let mut frames = FRAMES.lock();
        let mut table_frames = TableFrames(&mut frames);
        let mut mapper = self.mapper(&lock);
        let mut moved = 0;
        let mut failure = None;
        for &(virt, frame, flags) in &pages {
            let page = Page::<Size4KiB>::containing_address(VirtAddr::new(virt - from + to));
            // SAFETY: maps a user page of this address space to a user
            // frame it already owns (the old entry's, cleared below, so
            // ownership moves with it); no kernel memory becomes reachable.
            let mapped = unsafe {
                mapper.map_to_with_table_flags(
                    page,
                    PhysFrame::containing_address(frame),
                    flags,
                    parent_flags,
                    &mut table_frames,
                )
            };
            match mapped {
                Ok(flush) => {
                    flush.ignore();
                    moved += 1;
                }
                Err(error) => {
                    failure = Some(match error {
                        MapToError::FrameAllocationFailed => MapError::OutOfFrames,
                        _ => MapError::AlreadyMapped(virt - from + to),
                    });
                    break;
                }
            }
        }
        if let Some(error) = failure {
            // Undo: the destination entries made go again; the frames
            // stay with the source entries, which were not touched.
            for &(virt, _, _) in &pages[..moved] {
                if let Some(entry) = self.leaf(&mut lock, virt - from + to) {
                    entry.set_unused();
                }
            }
            drop(frames);
            self.flush_range(to, to + len);
            return Err(error);
        }
        for &(virt, _, _) in &pages {
            if let Some(entry) = self.leaf(&mut lock, virt) {
                entry.set_unused();
            }
        }
        drop(frames);
        self.flush_range(from, from + len);
        self.flush_range(to, to + len);
        Ok(moved as u64)
    }

    /// Gives every page mapped in `[start, end)` `protection`; pages whose
    /// frame another address space shares stay read-only (a write must
    /// first get a private copy). Returns how many pages there were.
    pub fn protect_range(&self, start: u64, end: u64, protection: UserProtection) -> u64 {
        if start.is_multiple_of(PAGE_SIZE)
            && end.checked_sub(start) == Some(PAGE_SIZE)
            && end <= USER_END
        {
            // One page (Appel and Li's primitives change pages one at a
            // time): a straight walk to its entry, not the range walk.
            let changed = {
                let mut lock = self.tables.lock();
                let frames = FRAMES.lock();
                match self.leaf(&mut lock, start) {
                    Some(entry) => {
                        let mut flags = protection.flags();
                        if must_stay_read_only(&frames, entry.addr().as_u64()) {
                            flags.remove(PageTableFlags::WRITABLE);
                        }
                        let frame = entry.addr();
                        entry.set_addr(frame, flags);
                        true
                    }
                    None => false,
                }
            };
            if changed {
                self.flush(start);
            }
            return u64::from(changed);
        }
        let mut count = 0;
        {
            let _lock = self.tables.lock();
            let frames = FRAMES.lock();
            // SAFETY: this address space's PML4, under its table lock.
            let root = unsafe { table_at(self.root) };
            for_each_leaf(root, 4, 0, start, end.min(USER_END), &mut |_, entry| {
                let mut flags = protection.flags();
                if must_stay_read_only(&frames, entry.addr().as_u64()) {
                    flags.remove(PageTableFlags::WRITABLE);
                }
                let frame = entry.addr();
                entry.set_addr(frame, flags);
                count += 1;
                true
            });
        }
        self.flush_range(start, end.min(USER_END));
        count
    }

    /// Gives mapped user page `virt` a frame of its own (a copy of the
    /// shared one, if another address space shares it) and `protection`:
    /// the mechanism under copy-on-write. A frame of shared memory is
    /// kept, with `protection`: its owners write it together.
    pub fn make_private(&self, virt: u64, protection: UserProtection) -> Result<(), MapError> {
        user_page(virt)?;
        let mut lock = self.tables.lock();
        let entry = self
            .leaf(&mut lock, virt)
            .ok_or(MapError::NotMapped(virt))?;
        let old = entry.addr().as_u64();
        let mut frames = FRAMES.lock();
        if must_stay_read_only(&frames, old) {
            let new = frames.allocate().ok_or(MapError::OutOfFrames)?;
            // SAFETY: both are user frames of RAM: `old` is mapped by this
            // address space (and others, read-only), `new` was just
            // allocated, so nothing refers to it; they differ.
            unsafe { memory::copy_frame(old, new) };
            entry.set_addr(PhysAddr::new(new), protection.flags());
            let _ = frames.free(old);
        } else {
            entry.set_addr(PhysAddr::new(old), protection.flags());
        }
        drop(frames);
        self.flush(virt);
        Ok(())
    }

    /// Shares every page mapped in `[start, end)` with `child` (a new
    /// address space, mapping nothing there yet) at the same address: both
    /// then own the frame. With `copy_on_write`, writable pages become
    /// read-only in both, so the first write to each faults and can be
    /// given a private copy ([`Self::make_private`]): `fork`'s mechanism.
    /// Returns the pages shared.
    pub fn share_range_with(
        &self,
        child: &AddressSpace,
        start: u64,
        end: u64,
        copy_on_write: bool,
    ) -> Result<u64, MapError> {
        if core::ptr::eq(self, child) {
            return Err(MapError::AlreadyMapped(start));
        }
        let end = end.min(HIGHEST_MAPPABLE + PAGE_SIZE);
        if start >= end {
            return Ok(0);
        }
        let _lock = self.tables.lock();
        let child_lock = child.tables.lock();
        let mut frames = FRAMES.lock();
        let mut shared = 0;
        let mut result = Ok(());
        // SAFETY: this address space's PML4, under its table lock.
        let root = unsafe { table_at(self.root) };
        let mut child_tables = child.mapper(&child_lock);
        for_each_leaf(root, 4, 0, start, end, &mut |virt, entry| {
            let mut flags = entry.flags();
            if copy_on_write && flags.contains(PageTableFlags::WRITABLE) {
                flags.remove(PageTableFlags::WRITABLE);
                entry.set_flags(flags);
            }
            let frame = entry.addr().as_u64();
            if frames.share(frame).is_err() {
                return false;
            }
            let parent_flags = PageTableFlags::PRESENT
                | PageTableFlags::WRITABLE
                | PageTableFlags::USER_ACCESSIBLE;
            let mut table_frames = TableFrames(&mut frames);
            // SAFETY: maps a user page of `child` to a user frame it now
            // co-owns; no kernel memory becomes reachable.
            let mapped = unsafe {
                child_tables.map_to_with_table_flags(
                    Page::<Size4KiB>::containing_address(VirtAddr::new(virt)),
                    PhysFrame::containing_address(PhysAddr::new(frame)),
                    flags,
                    parent_flags,
                    &mut table_frames,
                )
            };
            match mapped {
                // `child` is not active: no TLB entry to drop.
                Ok(flush) => flush.ignore(),
                Err(error) => {
                    let _ = frames.free(frame);
                    result = Err(match error {
                        MapToError::FrameAllocationFailed => MapError::OutOfFrames,
                        _ => MapError::AlreadyMapped(virt),
                    });
                    return false;
                }
            }
            shared += 1;
            true
        });
        drop(frames);
        child.pages.fetch_add(shared, Ordering::Relaxed);
        if copy_on_write {
            self.flush_range(start, end);
        }
        result.map(|()| shared)
    }

    /// The leaf entry mapping user page `virt`, if present, while `_lock`
    /// (this address space's table lock) is held. The lock guard is
    /// borrowed mutably for the entry's lifetime, so two entries of one
    /// address space can never be held at once.
    fn leaf<'a>(
        &'a self,
        _lock: &'a mut IrqMutexGuard<'_, ()>,
        virt: u64,
    ) -> Option<&'a mut PageTableEntry> {
        let address = VirtAddr::new(virt);
        // SAFETY: this address space's PML4, under its table lock held for
        // the result's lifetime.
        let mut table = unsafe { table_at(self.root) };
        for index in [address.p4_index(), address.p3_index(), address.p2_index()] {
            let entry = &table[index];
            if !entry.flags().contains(PageTableFlags::PRESENT)
                || entry.flags().contains(PageTableFlags::HUGE_PAGE)
            {
                return None;
            }
            // SAFETY: a lower-half table of this address space, which owns
            // it, under the same lock.
            table = unsafe { table_at(PhysFrame::containing_address(entry.addr())) };
        }
        let entry = &mut table[address.p1_index()];
        (!entry.is_unused()).then_some(entry)
    }

    /// Whether this is the address space in CR3.
    fn is_active(&self) -> bool {
        Cr3::read().0.start_address().as_u64() == self.root()
    }

    /// Drops the TLB entries of `[start, end)` if this address space is
    /// active: page by page for a short range, else all of them (a CR3
    /// reload, which also empties an emulator's whole software TLB, so it
    /// is kept for long ranges).
    fn flush_range(&self, start: u64, end: u64) {
        /// Longest range flushed page by page.
        const PAGE_BY_PAGE: u64 = 64;
        if !self.is_active() {
            return;
        }
        let pages = end.saturating_sub(start) / PAGE_SIZE;
        if pages <= PAGE_BY_PAGE {
            for page in 0..pages {
                x86_64::instructions::tlb::flush(VirtAddr::new(start + page * PAGE_SIZE));
            }
        } else {
            x86_64::instructions::tlb::flush_all();
        }
    }

    /// Drops the TLB entry for `virt` if this address space is active (an
    /// inactive one has none: CR3 loads flush the lower half).
    fn flush(&self, virt: u64) {
        if self.is_active() {
            x86_64::instructions::tlb::flush(VirtAddr::new(virt));
        }
    }

    /// The physical address of the PML4 (what CR3 holds while active).
    pub(crate) fn root(&self) -> u64 {
        self.root.start_address().as_u64()
    }
}

/// Whether a page of the frame at `address` must stay read-only, so that
/// a write first gets a private copy: the frame has another owner (an
/// address space it was shared with by `fork`, or the page cache) and is
/// not shared memory, which its owners write together.
fn must_stay_read_only(frames: &crate::frames::FrameBitmap, address: u64) -> bool {
    frames.is_shared(address) && !frames.is_shared_memory(address)
}

/// Loads `root` into CR3 unless it is already there.
pub(crate) fn activate(root: u64) {
    let (current, _) = Cr3::read();
    if current.start_address().as_u64() != root {
        let frame = PhysFrame::containing_address(PhysAddr::new(root));
        // `root` is the kernel's PML4 or that of a live address space (held
        // by the context switched to); both map the kernel's upper half.
        // SAFETY: so the code and stack in use stay mapped across the switch.
        unsafe { Cr3::write(frame, Cr3Flags::empty()) };
    }
}

/// Calls `visit` with the address and leaf entry of every mapped page
/// (present or not) in `[start, end)` under `table` at `level` (4 = PML4),
/// whose first address is `base`; stops when `visit` returns false.
/// Returns false if it stopped early.
fn for_each_leaf(
    table: &mut PageTable,
    level: u8,
    base: u64,
    start: u64,
    end: u64,
    visit: &mut dyn FnMut(u64, &mut PageTableEntry) -> bool,
) -> bool {
    let span = PAGE_SIZE << (9 * u64::from(level - 1));
    let entries: u64 = if level == 4 { 256 } else { 512 };
    if end <= start || end <= base {
        return true;
    }
    // Only the entries whose span meets [start, end).
    let first_index = start.saturating_sub(base) / span;
    let last_index = ((end - 1 - base) / span).min(entries - 1);
    for index in first_index..=last_index {
        let index = index as usize;
        let first = base + index as u64 * span;
        let entry = &mut table[index];
        if entry.is_unused() {
            continue;
        }
        if level == 1 {
            if !visit(first, entry) {
                return false;
            }
            continue;
        }
        if !entry.flags().contains(PageTableFlags::PRESENT)
            || entry.flags().contains(PageTableFlags::HUGE_PAGE)
        {
            continue;
        }
        // SAFETY: a lower-half table of the address space being walked,
        // whose table lock the caller holds.
        let child = unsafe { table_at(PhysFrame::containing_address(entry.addr())) };
        if !for_each_leaf(child, level - 1, first, start, end, visit) {
            return false;
        }
    }
    true
}

/// Frees the lower-half tables under `table` at `level` (4 = PML4) and the
/// user frames they map.
fn free_lower(table: &mut PageTable, level: u8, frames: &mut crate::frames::FrameBitmap) {
    let entries = if level == 4 { 0..256 } else { 0..512 };
    for index in entries {
        let entry = &mut table[index];
        if entry.is_unused() {
            continue;
        }
        let frame = entry.addr().as_u64();
        if level > 1 && !entry.flags().contains(PageTableFlags::HUGE_PAGE) {
            // SAFETY: the entry points at a lower-level table this address
            // space created and owns; nothing else refers to it.
            let child = unsafe { table_at(PhysFrame::containing_address(PhysAddr::new(frame))) };
            free_lower(child, level - 1, frames);
        }
        let _ = frames.free(frame);
        entry.set_unused();
    }
}

impl Drop for AddressSpace {
    fn drop(&mut self) {
        // Never the active one: the context switch moved CR3 away from it
        // before the last thread holding it was dropped.
        debug_assert_ne!(Cr3::read().0.start_address().as_u64(), self.root());
        let mut frames = FRAMES.lock();
        // SAFETY: this address space owns its PML4 and is being dropped.
        let table = unsafe { table_at(self.root) };
        free_lower(table, 4, &mut frames);
        let _ = frames.free(self.root.start_address().as_u64());
    }
}
