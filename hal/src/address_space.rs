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
        FrameAllocator, Mapper, OffsetPageTable, Page, PageTable, PageTableFlags, PhysFrame,
        Size4KiB, Translate,
    },
    PhysAddr, VirtAddr,
};

use core::sync::atomic::{AtomicU64, Ordering};

use crate::{
    memory::{self, MapError, TableFrames, FRAMES, PAGE_SIZE, PHYS_OFFSET},
    sync::{IrqMutex, IrqMutexGuard},
    user::USER_END,
};

/// The highest page of the user half is never mapped: a `syscall` at its
/// very end would return (`sysret`) to a non-canonical address, which
/// faults in ring 0 on the user's stack on Intel CPUs.
const HIGHEST_MAPPABLE: u64 = USER_END - 2 * PAGE_SIZE;

/// How user code may access a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserProtection {
    /// Read only.
    Read,
    /// Read and write.
    ReadWrite,
    /// Read and execute (code).
    ReadExecute,
}

impl UserProtection {
    fn flags(self) -> PageTableFlags {
        let base = PageTableFlags::PRESENT | PageTableFlags::USER_ACCESSIBLE;
        match self {
            UserProtection::Read => base | PageTableFlags::NO_EXECUTE,
            UserProtection::ReadWrite => {
                base | PageTableFlags::WRITABLE | PageTableFlags::NO_EXECUTE
            }
            UserProtection::ReadExecute => base,
        }
    }
}

/// The user page at `virt`: page aligned, and below the highest page a
/// user may have (see [`HIGHEST_MAPPABLE`]).
fn user_page(virt: u64) -> Result<Page<Size4KiB>, MapError> {
    if virt % PAGE_SIZE != 0 {
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
        let frame = table_frames
            .allocate_frame()
            .ok_or(MapError::OutOfFrames)?;
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

    /// Copies `bytes` to user address `virt` through the kernel's window
    /// (whatever the pages' protection: for loading programs); every page
    /// touched must be mapped.
    pub fn write(&self, virt: u64, bytes: &[u8]) -> Result<(), MapError> {
        let mut done = 0;
        while done < bytes.len() {
            let at = virt + done as u64;
            let physical = self.translate(at).ok_or(MapError::NotMapped(at))?;
            let room = (PAGE_SIZE - at % PAGE_SIZE) as usize;
            let chunk = room.min(bytes.len() - done);
            // SAFETY: `physical` is in a user frame this address space owns,
            // reached through the window; the chunk stays inside it; no Rust
            // reference points into user frames.
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

    /// Changes the protection of mapped user page `virt`.
    pub fn protect(&self, virt: u64, protection: UserProtection) -> Result<(), MapError> {
        let page = user_page(virt)?;
        let lock = self.tables.lock();
        // SAFETY: changes the permissions of a user page of this address
        // space: no kernel memory and no Rust reference is affected.
        let flush = unsafe { self.mapper(&lock).update_flags(page, protection.flags()) }
            .map_err(|_| MapError::NotMapped(virt))?;
        // Only the active address space has TLB entries to drop.
        flush.flush();
        Ok(())
    }

    /// The physical address of the PML4 (what CR3 holds while active).
    pub(crate) fn root(&self) -> u64 {
        self.root.start_address().as_u64()
    }
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
