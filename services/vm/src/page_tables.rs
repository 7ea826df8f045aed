//! The mechanism under the model: what [`AddressMap`](crate::AddressMap)
//! asks of a user address space's page tables and of the frames they map.
//!
//! `vm` decides which pages should be mapped, how, and when; the
//! [`PageTables`] it is given do it. In the kernel they are `hal`'s
//! `AddressSpace` (the impl below, built for the bare-metal target only,
//! where `hal` has page tables); the host tests give the model page
//! tables of their own that record what it asked for, so every policy
//! here is tested without a machine.

use hal::paging::{MapError, UserProtection};

/// A user address space's page tables: one entry per mapped page of the
/// user half, each holding a frame (which several address spaces, or a
/// shared object, may own together) and a protection. Methods take
/// `&self`: the page tables lock themselves, so a fault handler and the
/// kernel can share them.
pub trait PageTables: Sized {
    /// A hold on a physical frame: what shared objects hand out
    /// ([`SharedObject::page`](crate::SharedObject::page)) and file
    /// mappings are made of ([`AddressMap::map_pages`](crate::AddressMap::map_pages)).
    /// Each hold is let go with [`Self::free_frame`].
    type Frame: Send + Sync;

    /// Empty page tables for the user half (`fork`'s child).
    fn new_empty() -> Result<Self, MapError>;

    /// The protection of the entry for the page holding `virt`, if there
    /// is one (a `PROT_NONE` page has an entry, and so a protection).
    fn protection(&self, virt: u64) -> Option<UserProtection>;

    /// Maps page `virt` to a fresh zeroed frame with `protection`.
    /// [`MapError::AlreadyMapped`] if it has an entry already.
    fn map(&self, virt: u64, protection: UserProtection) -> Result<(), MapError>;

    /// Maps page `virt` to `frame` with `protection`; the page tables
    /// become one more owner of the frame, so the caller keeps its hold.
    fn map_frame(
        &self,
        virt: u64,
        frame: &Self::Frame,
        protection: UserProtection,
    ) -> Result<(), MapError>;

    /// Gives mapped page `virt` a frame of its own (a copy, if another
    /// owner shares it and it is not shared memory) and `protection`:
    /// copy-on-write's mechanism.
    fn make_private(&self, virt: u64, protection: UserProtection) -> Result<(), MapError>;

    /// Unmaps every page in `[start, end)` and lets go of their frames;
    /// returns how many there were.
    fn unmap_range(&self, start: u64, end: u64) -> u64;

    /// Moves every page mapped in `[from, from + len)` to the same place
    /// in `[to, to + len)`, each with its frame and protection; nothing
    /// moves if the destination has a mapped page or the ranges overlap.
    /// Returns how many pages moved.
    fn move_range(&self, from: u64, to: u64, len: u64) -> Result<u64, MapError>;

    /// Gives every page mapped in `[start, end)` `protection`, except that
    /// a page whose frame another owner shares (not shared memory) stays
    /// read-only: a write must first get a private copy. Returns how many
    /// pages there were.
    fn protect_range(&self, start: u64, end: u64, protection: UserProtection) -> u64;

    /// Maps every page mapped in `[start, end)` into `child` at the same
    /// address, both owning the frame; with `copy_on_write`, writable
    /// pages become read-only in both first. Returns how many pages.
    fn share_range_with(
        &self,
        child: &Self,
        start: u64,
        end: u64,
        copy_on_write: bool,
    ) -> Result<u64, MapError>;

    /// A fresh zeroed frame of shared memory: its owners write it
    /// together, so mappings of it stay writable while shared.
    fn allocate_shared_memory_frame() -> Option<Self::Frame>;

    /// Another hold on `frame`.
    fn share_frame(frame: &Self::Frame) -> Self::Frame;

    /// Lets go of a hold on a frame (freed when its last owner lets go).
    fn free_frame(frame: Self::Frame);
}

/// The kernel's page tables: each operation is `hal`'s own.
#[cfg(target_os = "none")]
impl PageTables for hal::address_space::AddressSpace {
    type Frame = hal::memory::Frame;

    fn new_empty() -> Result<Self, MapError> {
        hal::address_space::AddressSpace::new()
    }

    fn protection(&self, virt: u64) -> Option<UserProtection> {
        hal::address_space::AddressSpace::protection(self, virt)
    }

    fn map(&self, virt: u64, protection: UserProtection) -> Result<(), MapError> {
        hal::address_space::AddressSpace::map(self, virt, protection)
    }

    fn map_frame(
        &self,
        virt: u64,
        frame: &Self::Frame,
        protection: UserProtection,
    ) -> Result<(), MapError> {
        hal::address_space::AddressSpace::map_frame(self, virt, frame, protection)
    }

    fn make_private(&self, virt: u64, protection: UserProtection) -> Result<(), MapError> {
        hal::address_space::AddressSpace::make_private(self, virt, protection)
    }

    fn unmap_range(&self, start: u64, end: u64) -> u64 {
        hal::address_space::AddressSpace::unmap_range(self, start, end)
    }

    fn move_range(&self, from: u64, to: u64, len: u64) -> Result<u64, MapError> {
        hal::address_space::AddressSpace::move_range(self, from, to, len)
    }

    fn protect_range(&self, start: u64, end: u64, protection: UserProtection) -> u64 {
        hal::address_space::AddressSpace::protect_range(self, start, end, protection)
    }

    fn share_range_with(
        &self,
        child: &Self,
        start: u64,
        end: u64,
        copy_on_write: bool,
    ) -> Result<u64, MapError> {
        hal::address_space::AddressSpace::share_range_with(self, child, start, end, copy_on_write)
    }

    fn allocate_shared_memory_frame() -> Option<Self::Frame> {
        hal::memory::allocate_shared_memory_frame()
    }

    fn share_frame(frame: &Self::Frame) -> Self::Frame {
        frame.share()
    }

    fn free_frame(frame: Self::Frame) {
        hal::memory::free_frame(frame);
    }
}
