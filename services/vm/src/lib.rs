//! The Unix address-space model, built on the `Translation` service as SPIN
//! built it (SOSP'95 §4.1): a process's memory is a set of [`Region`]s,
//! each a range of pages with one protection. Pages are not mapped when a
//! region is made; the first touch raises `Translation.PageNotPresent`,
//! whose handler ([`AddressMap::resolve_fault`]) maps a zeroed page
//! (demand-zero). `fork` shares every page copy-on-write
//! ([`AddressMap::fork`]); the first write to a shared page raises
//! `Translation.ProtectionFault`, and the same handler gives the writer a
//! private copy. `brk`, `mmap`, `munmap` and `mprotect` grow, make, remove
//! and change regions ([`AddressMap::set_break`], [`AddressMap::map_anonymous`],
//! [`AddressMap::unmap`], [`AddressMap::protect`]). A mapping of a file
//! ([`AddressMap::map_pages`]) is a region whose first pages are frames
//! the caller filled with the file's bytes, mapped at once; the rest of
//! it is demand-zero like any other.
//!
//! Shared memory (`MAP_SHARED`: anonymous, or of a file) is a region over
//! a [`SharedObject`], whose pages every mapping of it shares
//! ([`AddressMap::map_shared`]). A first touch maps the object's frame
//! for that page; `fork` shares the mapped pages without copy-on-write,
//! and a page the child touches first comes from the object too, so
//! parent and child see each other's writes.
//!
//! The mechanism (page tables, shared frames, private copies) is reached
//! through the [`PageTables`] trait: `hal`'s `AddressSpace` in the
//! kernel, page tables that record what they are asked in the host tests.
//! This crate is policy only, and has no `unsafe`.
#![cfg_attr(not(test), no_std)]

extern crate alloc;

use alloc::{collections::BTreeMap, sync::Arc, vec::Vec};

use hal::paging::{MapError, UserProtection, PAGE_SIZE};

mod page_tables;
mod shared;
#[cfg(test)]
mod tests;

pub use page_tables::PageTables;
pub use shared::{AnonymousMemory, SharedObject};

/// Page-fault error code: the page was present (a protection fault).
const FAULT_PRESENT: u64 = 1 << 0;
/// Page-fault error code: the access was a write.
const FAULT_WRITE: u64 = 1 << 1;
/// Page-fault error code: an instruction fetch.
const FAULT_FETCH: u64 = 1 << 4;

/// Lowest address a fixed mapping may have (Linux's default
/// `mmap_min_addr`): the first pages stay unmapped, so a null pointer
/// always faults.
pub const MMAP_MIN_ADDRESS: u64 = 0x1_0000;
/// Lowest address `mmap` places a mapping at without a fixed address.
pub const MMAP_FLOOR: u64 = 0x1000_0000;
/// Where `mmap` places mappings from, downwards.
pub const MMAP_CEILING: u64 = 0x7f00_0000_0000;
/// The most the break may grow beyond its start (1 GiB).
const MAX_BREAK_BYTES: u64 = 1 << 30;
/// The end of what mappings may cover: the user half less its last page,
/// which is never mapped (a `syscall` at its very end would return to a
/// non-canonical address), as Linux's `TASK_SIZE` leaves it out too.
const USER_END: u64 = hal::paging::USER_END - PAGE_SIZE;

/// A range of pages with one protection. Its pages are mapped on first
/// touch (zeroed) or were mapped by the loader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// First address (page aligned).
    pub start: u64,
    /// One past the last address (page aligned).
    pub end: u64,
    /// How the program may access it.
    pub protection: UserProtection,
    /// Whether `mprotect` may make it writable: false for a mapping of
    /// a file opened without write access (Linux's `VM_MAYWRITE`).
    pub may_write: bool,
    /// The shared memory it maps, if any.
    pub shared: Option<SharedPages>,
    /// What it maps, by its number in the address map's labels
    /// ([`AddressMap::label`]), if it is named.
    pub label: Option<u32>,
    /// The page of the labelled file at the region's start.
    pub file_page: u64,
}

/// What a region maps, as `/proc/PID/maps` names it: a file (its path,
/// device and inode) or a kind of memory (`[stack]`, `[heap]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    /// The path, or the bracketed kind.
    pub name: Vec<u8>,
    /// The file's device number (0 for memory).
    pub dev: u64,
    /// The file's inode number (0 for memory).
    pub ino: u64,
}

/// What a shared mapping maps ([`AddressMap::map_shared`]): pages of an
/// object that hands out frames of type `F` (its page tables').
pub struct SharedSource<F> {
    /// The shared pages (a file's, or anonymous shared memory).
    pub object: Arc<dyn SharedObject<Frame = F>>,
    /// The object's page at the region's start (the file offset in pages).
    pub first_page: u64,
    /// False keeps `mprotect` from making the region writable (a file
    /// opened read-only).
    pub may_write: bool,
}

/// Which pages of a shared object a region maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedPages {
    /// The object, by its number in the address map.
    pub object: u32,
    /// The object's page at the region's start.
    pub first_page: u64,
}

impl Region {
    /// Whether `next`, which starts where this region ends, can be one
    /// region with it: the same protection and rights, and the same
    /// memory (none, or the object's pages that follow).
    fn joins(&self, next: &Region) -> bool {
        self.end == next.start
            && self.protection == next.protection
            && self.may_write == next.may_write
            && self.label == next.label
            && (self.label.is_none()
                || self.file_page + (self.end - self.start) / PAGE_SIZE == next.file_page)
            && match (self.shared, next.shared) {
                (None, None) => true,
                (Some(low), Some(high)) => {
                    low.object == high.object
                        && low.first_page + (self.end - self.start) / PAGE_SIZE == high.first_page
                }
                _ => false,
            }
    }

    /// The shared object's page for the page at `address` in the region.
    fn object_page(&self, address: u64) -> Option<(u32, u64)> {
        self.shared.map(|shared| {
            (
                shared.object,
                shared.first_page + (page_down(address) - self.start) / PAGE_SIZE,
            )
        })
    }

    fn allows(&self, error_code: u64) -> bool {
        match self.protection {
            UserProtection::None => false,
            UserProtection::Read => error_code & (FAULT_WRITE | FAULT_FETCH) == 0,
            UserProtection::ReadExecute => error_code & FAULT_WRITE == 0,
            UserProtection::ReadWrite => error_code & FAULT_FETCH == 0,
            UserProtection::ReadWriteExecute => true,
        }
    }
}

/// Why a change to the address map was refused (Linux's errno for each is
/// the personality's to choose).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VmError {
    /// Not page aligned, empty, or outside the user half (`EINVAL`).
    BadRange,
    /// No room for the mapping, or no memory for its tables (`ENOMEM`).
    NoMemory,
    /// The range overlaps a region (for a fixed placement).
    Overlaps,
    /// A fixed mapping below [`MMAP_MIN_ADDRESS`] (`EPERM`).
    BelowMinimum,
    /// Write access asked for a region that may not be written
    /// (`EACCES`).
    NotWritable,
    /// The old range of a remap is not all one mapping's: unmapped, or
    /// running past the end of the mapping it starts in (`EFAULT`).
    NotOneMapping,
}

impl From<MapError> for VmError {
    fn from(error: MapError) -> Self {
        match error {
            MapError::OutOfFrames => VmError::NoMemory,
            _ => VmError::BadRange,
        }
    }
}

impl core::fmt::Display for VmError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            VmError::BadRange => "bad address range",
            VmError::NoMemory => "out of memory",
            VmError::Overlaps => "range overlaps an existing mapping",
            VmError::BelowMinimum => "a mapping below the lowest address allowed",
            VmError::NotWritable => "the mapping may not be made writable",
            VmError::NotOneMapping => "the range is not all one mapping's",
        })
    }
}

/// Where [`AddressMap::remap`] may put a mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remap {
    /// Where it is (no `MREMAP_MAYMOVE`).
    InPlace,
    /// Where it is if it can grow there, else wherever there is room
    /// (`MREMAP_MAYMOVE`).
    MayMove,
    /// At this address (`MREMAP_FIXED`).
    To(u64),
}

/// A process's memory: its address space (page tables `P`) and the
/// regions in it.
pub struct AddressMap<P: PageTables> {
    space: Arc<P>,
    /// Regions by start address; they never overlap.
    regions: BTreeMap<u64, Region>,
    /// Where the break region starts (after the program's image).
    break_start: u64,
    /// The current break (`brk`), page aligned upwards for the region.
    break_end: u64,
    /// Page faults resolved (demand-zero pages and private copies).
    resolved: u64,
    /// The shared objects regions map, by number.
    objects: BTreeMap<u32, Arc<dyn SharedObject<Frame = P::Frame>>>,
    /// The number the next object gets.
    next_object: u32,
    /// What regions map, by number (shared by the pieces of a split
    /// region).
    labels: BTreeMap<u32, Arc<Label>>,
    /// The number the next label gets.
    next_label: u32,
}

fn page_down(address: u64) -> u64 {
    address & !(PAGE_SIZE - 1)
}

fn page_up(address: u64) -> Option<u64> {
    address.checked_add(PAGE_SIZE - 1).map(page_down)
}

/// The page-aligned range `[start, start + len)`, if inside the user half.
fn user_range(start: u64, len: u64) -> Result<(u64, u64), VmError> {
    if !start.is_multiple_of(PAGE_SIZE) || len == 0 {
        return Err(VmError::BadRange);
    }
    let end = page_up(len)
        .and_then(|len| start.checked_add(len))
        .ok_or(VmError::BadRange)?;
    if end > USER_END {
        return Err(VmError::BadRange);
    }
    Ok((start, end))
}

impl<P: PageTables> AddressMap<P> {
    /// The map of `space` with no regions; the break starts at
    /// `break_start` (the first page after the program's image).
    pub fn new(space: Arc<P>, break_start: u64) -> Self {
        let break_start = page_up(break_start).unwrap_or(break_start);
        AddressMap {
            space,
            regions: BTreeMap::new(),
            break_start,
            break_end: break_start,
            resolved: 0,
            objects: BTreeMap::new(),
            next_object: 0,
            labels: BTreeMap::new(),
            next_label: 0,
        }
    }

    /// The address space the map describes.
    pub fn space(&self) -> &Arc<P> {
        &self.space
    }

    /// The regions, lowest first.
    pub fn regions(&self) -> impl Iterator<Item = &Region> {
        self.regions.values()
    }

    /// Page faults resolved so far.
    pub fn faults_resolved(&self) -> u64 {
        self.resolved
    }

    /// The region holding `address`, if any.
    pub fn region_at(&self, address: u64) -> Option<&Region> {
        self.regions
            .range(..=address)
            .next_back()
            .map(|(_, region)| region)
            .filter(|region| address < region.end)
    }

    /// Which shared memory the word at `address` is in, if a shared
    /// region holds it: the object (a number that stays the object's
    /// while any region maps it, the same in every address map that
    /// shares it) and the object's page. Shared futexes are keyed by it,
    /// so processes that map one object find each other's waiters
    /// whatever addresses they map it at.
    pub fn shared_page_at(&self, address: u64) -> Option<(usize, u64)> {
        let (object, page) = self.region_at(address)?.object_page(address)?;
        let object = self.objects.get(&object)?;
        // The allocation's address names the object: every map holds
        // the same `Arc`, and it cannot move or be reused while mapped.
        Some((Arc::as_ptr(object) as *const () as usize, page))
    }

    /// Whether any region overlaps `[start, end)`.
    fn overlaps(&self, start: u64, end: u64) -> bool {
        self.regions
            .range(..end)
            .next_back()
            .is_some_and(|(_, region)| region.end > start)
    }

    /// Adds a region over `[start, end)` (page aligned, free).
    pub fn add_region(
        &mut self,
        start: u64,
        end: u64,
        protection: UserProtection,
    ) -> Result<(), VmError> {
        if !start.is_multiple_of(PAGE_SIZE)
            || !end.is_multiple_of(PAGE_SIZE)
            || start >= end
            || end > USER_END
        {
            return Err(VmError::BadRange);
        }
        if self.overlaps(start, end) {
            return Err(VmError::Overlaps);
        }
        self.regions.insert(
            start,
            Region {
                start,
                end,
                protection,
                may_write: true,
                shared: None,
                label: None,
                file_page: 0,
            },
        );
        Ok(())
    }

    /// Names what the regions in `[start, end)` map (`/proc/PID/maps`):
    /// `label`, whose page `first_file_page` is at `start`. Regions only
    /// partly inside are split first.
    pub fn label(&mut self, start: u64, end: u64, label: Label, first_file_page: u64) {
        self.split_at(start);
        self.split_at(end);
        let number = self.next_label;
        self.next_label = self.next_label.wrapping_add(1);
        let mut used = false;
        for (_, region) in self.regions.range_mut(start..end) {
            region.label = Some(number);
            region.file_page = first_file_page + (region.start - start) / PAGE_SIZE;
            used = true;
        }
        if used {
            self.labels.insert(number, Arc::new(label));
        }
        self.drop_unused_labels();
    }

    /// Every region with its label, lowest first (`/proc/PID/maps`).
    pub fn labelled_regions(&self) -> impl Iterator<Item = (&Region, Option<&Label>)> {
        self.regions.values().map(|region| {
            let label = region
                .label
                .and_then(|number| self.labels.get(&number))
                .map(|label| &**label);
            (region, label)
        })
    }

    /// Splits the region holding `address` (if it holds it strictly
    /// inside) into two at `address`.
    fn split_at(&mut self, address: u64) {
        let Some(region) = self.region_at(address).copied() else {
            return;
        };
        if region.start == address {
            return;
        }
        if let Some(low) = self.regions.get_mut(&region.start) {
            low.end = address;
        }
        self.regions.insert(
            address,
            Region {
                start: address,
                shared: region.shared.map(|shared| SharedPages {
                    first_page: shared.first_page + (address - region.start) / PAGE_SIZE,
                    ..shared
                }),
                file_page: region.file_page + (address - region.start) / PAGE_SIZE,
                ..region
            },
        );
    }

    /// Resolves a page fault at `address` with `error_code` if it is one
    /// the model explains: a first touch inside a region (maps a zeroed
    /// page), or a write to a page shared copy-on-write in a writable
    /// region (gives a private copy). Anything else (outside every region,
    /// or an access the region forbids) is the program's fault: false.
    pub fn resolve_fault(&mut self, address: u64, error_code: u64) -> bool {
        let Some(region) = self.region_at(address).copied() else {
            return false;
        };
        if !region.allows(error_code) {
            return false;
        }
        let page = page_down(address);
        let resolved = match self.space.protection(page) {
            // First touch of shared memory: the object's page.
            None if region.shared.is_some() => self.map_object_page(&region, page),
            // First touch: a zeroed page (a fault on a page another
            // thread has just mapped resolves too: the access is retried).
            None => matches!(
                self.space.map(page, region.protection),
                Ok(()) | Err(MapError::AlreadyMapped(_))
            ),
            Some(UserProtection::None) => false,
            // A write to a present read-only page of a writable region: the
            // page is shared copy-on-write (or was last shared).
            Some(UserProtection::Read | UserProtection::ReadExecute)
                if error_code & (FAULT_PRESENT | FAULT_WRITE) == FAULT_PRESENT | FAULT_WRITE =>
            {
                self.space.make_private(page, region.protection).is_ok()
            }
            // Present and allowed: a stale translation; retrying suffices.
            Some(_) => error_code & FAULT_PRESENT != 0,
        };
        if resolved {
            self.resolved += 1;
        }
        resolved
    }

    /// Maps the shared object's page for `page` of `region` (its first
    /// touch); whether it is mapped now.
    fn map_object_page(&self, region: &Region, page: u64) -> bool {
        let Some((object, index)) = region.object_page(page) else {
            return false;
        };
        let Some(frame) = self
            .objects
            .get(&object)
            .and_then(|object| object.page(index))
        else {
            // Beyond the object (a file that shrank, a mapping grown past
            // its memory): the program's fault.
            return false;
        };
        let mapped = self.space.map_frame(page, &frame, region.protection);
        P::free_frame(frame);
        matches!(mapped, Ok(()) | Err(MapError::AlreadyMapped(_)))
    }

    /// A copy of this map in a new address space, every page shared with
    /// this one, copy-on-write where the region is writable and private
    /// (`fork`); shared memory stays shared.
    pub fn fork(&self) -> Result<AddressMap<P>, VmError> {
        let child = Arc::new(P::new_empty()?);
        for region in self.regions.values() {
            let copy_on_write = region.protection.is_writable() && region.shared.is_none();
            self.space
                .share_range_with(&child, region.start, region.end, copy_on_write)?;
        }
        Ok(AddressMap {
            space: child,
            regions: self.regions.clone(),
            break_start: self.break_start,
            break_end: self.break_end,
            resolved: 0,
            objects: self.objects.clone(),
            next_object: self.next_object,
            labels: self.labels.clone(),
            next_label: self.next_label,
        })
    }

    /// `mmap` of shared memory: a region of `len` bytes with `protection`
    /// over `source`'s object's pages, placed as [`Self::map_anonymous`]
    /// places one. Nothing is mapped yet: each page's first touch maps the
    /// object's frame. Returns the start.
    pub fn map_shared(
        &mut self,
        hint: u64,
        len: u64,
        protection: UserProtection,
        fixed: bool,
        source: SharedSource<P::Frame>,
    ) -> Result<u64, VmError> {
        let SharedSource {
            object,
            first_page,
            may_write,
        } = source;
        let number = self.next_object;
        let shared = Some(SharedPages {
            object: number,
            first_page,
        });
        let (start, _) = self.place_region(hint, len, protection, fixed, may_write, shared)?;
        self.next_object = self.next_object.wrapping_add(1);
        self.objects.insert(number, object);
        Ok(start)
    }

    /// `msync`: every shared object mapped in `[start, start + len)` writes
    /// its pages back to where they came from (a file). Every page must
    /// be in a region (else [`VmError::NoMemory`], Linux's `ENOMEM`).
    pub fn sync(&self, start: u64, len: u64) -> Result<(), VmError> {
        let (start, end) = user_range(start, len)?;
        self.check_covered(start, end)?;
        let mut synced: Vec<u32> = Vec::new();
        let regions = self
            .regions
            .range(..end)
            .rev()
            .take_while(|(_, region)| region.end > start);
        for (_, region) in regions {
            if let Some(shared) = region.shared {
                if !synced.contains(&shared.object) {
                    synced.push(shared.object);
                    if let Some(object) = self.objects.get(&shared.object) {
                        object.sync();
                    }
                }
            }
        }
        Ok(())
    }

    /// Lets go of the labels no region has any more.
    fn drop_unused_labels(&mut self) {
        if self.labels.is_empty() {
            return;
        }
        let regions = &self.regions;
        self.labels
            .retain(|number, _| regions.values().any(|region| region.label == Some(*number)));
    }

    /// Lets go of the shared objects no region maps any more.
    fn drop_unmapped_objects(&mut self) {
        if self.objects.is_empty() {
            return;
        }
        let regions = &self.regions;
        self.objects.retain(|number, _| {
            regions
                .values()
                .any(|region| region.shared.is_some_and(|shared| shared.object == *number))
        });
    }

    /// `brk(address)`: moves the break to `address` if it can (within 1 GiB
    /// of its start, not into another region; a smaller break unmaps what
    /// lies beyond it) and returns the break, as Linux's `brk` does. Zero
    /// asks for the current break.
    pub fn set_break(&mut self, address: u64) -> u64 {
        if address < self.break_start || address - self.break_start > MAX_BREAK_BYTES {
            return self.break_end;
        }
        let (Some(old_top), Some(new_top)) = (page_up(self.break_end), page_up(address)) else {
            return self.break_end;
        };
        if new_top > old_top {
            if self.overlaps(old_top, new_top) {
                return self.break_end;
            }
            // Grow the break region (or make it). Only a region the new
            // pages would join: the heap's (or plain private memory)
            // with the heap's protection; one `mprotect` changed keeps
            // its own, as on Linux, where new break pages are writable.
            let labels = &self.labels;
            let heap_like = |region: &Region| {
                region.protection == UserProtection::ReadWrite
                    && region.may_write
                    && region.shared.is_none()
                    && region.label.is_none_or(|number| {
                        labels
                            .get(&number)
                            .is_some_and(|label| label.name == b"[heap]")
                    })
            };
            match self.regions.range_mut(..old_top).next_back() {
                Some((_, region))
                    if region.end == old_top
                        && region.start >= self.break_start
                        && heap_like(region) =>
                {
                    region.end = new_top;
                }
                _ => {
                    if self
                        .add_region(old_top, new_top, UserProtection::ReadWrite)
                        .is_err()
                    {
                        return self.break_end;
                    }
                    let heap = Label {
                        name: b"[heap]".to_vec(),
                        dev: 0,
                        ino: 0,
                    };
                    self.label(old_top, new_top, heap, 0);
                }
            }
        } else if new_top < old_top {
            self.remove_range(new_top, old_top);
        }
        self.break_end = address;
        address
    }

    /// `mmap` of anonymous private memory: `len` bytes with `protection`,
    /// at `hint` if `fixed` (replacing what was there), or wherever there
    /// is room (the highest gap below [`MMAP_CEILING`]). Returns the start.
    pub fn map_anonymous(
        &mut self,
        hint: u64,
        len: u64,
        protection: UserProtection,
        fixed: bool,
    ) -> Result<u64, VmError> {
        let (start, size) = self.place(hint, len, fixed)?;
        self.add_region(start, start + size, protection)?;
        Ok(start)
    }

    /// `mmap` of a file: a region of `len` bytes with `protection`,
    /// placed as [`Self::map_anonymous`] places one, whose first pages are
    /// `pages` (frames the caller filled with the file's bytes, or the
    /// page cache's, in order), mapped now; the rest of the region is
    /// demand-zero. In a writable region they are mapped read-only: the
    /// first write to each gets a private copy (or, if no one else holds
    /// the frame any more, the page itself), so a cached page is never
    /// written. The page tables
    /// become co-owners of the frames: the caller frees its own hold on
    /// them after. `may_write` false keeps `mprotect` from making the
    /// region writable (a shared mapping whose writes could not reach the
    /// file). Returns the start.
    pub fn map_pages(
        &mut self,
        hint: u64,
        len: u64,
        protection: UserProtection,
        fixed: bool,
        may_write: bool,
        pages: &[P::Frame],
    ) -> Result<u64, VmError> {
        let pages_fit = page_up(len).is_some_and(|size| pages.len() as u64 <= size / PAGE_SIZE);
        if !pages_fit {
            return Err(VmError::BadRange);
        }
        let (start, size) = self.place_region(hint, len, protection, fixed, may_write, None)?;
        let page_protection = protection.without_write();
        for (index, frame) in pages.iter().enumerate() {
            let page = start + index as u64 * PAGE_SIZE;
            if let Err(error) = self.space.map_frame(page, frame, page_protection) {
                // Nothing of a failed mapping stays.
                self.remove_range(start, start + size);
                return Err(error.into());
            }
        }
        Ok(start)
    }

    /// Places a new region of `len` bytes (see [`Self::place`]) with
    /// `protection`, `may_write` and `shared`; returns its start and size.
    fn place_region(
        &mut self,
        hint: u64,
        len: u64,
        protection: UserProtection,
        fixed: bool,
        may_write: bool,
        shared: Option<SharedPages>,
    ) -> Result<(u64, u64), VmError> {
        let (start, size) = self.place(hint, len, fixed)?;
        self.add_region(start, start + size, protection)?;
        if let Some(region) = self.regions.get_mut(&start) {
            region.may_write = may_write;
            region.shared = shared;
        }
        Ok((start, size))
    }

    /// Where a new mapping of `len` bytes goes: at `hint` if `fixed`
    /// (whatever was there is removed first), else in the highest gap
    /// that fits. Returns the start and the size in whole pages.
    /// Linux's errors, in Linux's order: an empty length is
    /// [`VmError::BadRange`]; one that does not fit in the user half
    /// (rounded up past the top, or a fixed range ending beyond it)
    /// [`VmError::NoMemory`]; then an unaligned fixed address
    /// [`VmError::BadRange`], and one below [`MMAP_MIN_ADDRESS`]
    /// [`VmError::BelowMinimum`].
    fn place(&mut self, hint: u64, len: u64, fixed: bool) -> Result<(u64, u64), VmError> {
        if len == 0 {
            return Err(VmError::BadRange);
        }
        let size = page_up(len).ok_or(VmError::NoMemory)?;
        let start = if fixed {
            let end = hint
                .checked_add(size)
                .filter(|&end| end <= USER_END)
                .ok_or(VmError::NoMemory)?;
            if !hint.is_multiple_of(PAGE_SIZE) {
                return Err(VmError::BadRange);
            }
            if hint < MMAP_MIN_ADDRESS {
                return Err(VmError::BelowMinimum);
            }
            self.remove_range(hint, end);
            hint
        } else {
            self.find_gap(size).ok_or(VmError::NoMemory)?
        };
        Ok((start, size))
    }

    /// The highest free page-aligned gap of `size` bytes between
    /// [`MMAP_FLOOR`] and [`MMAP_CEILING`].
    fn find_gap(&self, size: u64) -> Option<u64> {
        let mut ceiling = MMAP_CEILING;
        for region in self.regions.values().rev() {
            if region.start >= ceiling {
                continue;
            }
            if region.end <= ceiling && ceiling - region.end >= size {
                return Some(ceiling - size).filter(|&start| start >= MMAP_FLOOR);
            }
            ceiling = ceiling.min(region.start);
        }
        ceiling
            .checked_sub(size)
            .filter(|&start| start >= MMAP_FLOOR)
    }

    /// `mincore(start, len)`: whether each page of the range is resident
    /// (mapped), one byte per page, or [`VmError::NoMemory`] if a page is
    /// in no region (Linux's `ENOMEM`).
    pub fn residency(&self, start: u64, len: u64, out: &mut [u8]) -> Result<(), VmError> {
        let (start, end) = user_range(start, len)?;
        for (index, page) in (start..end).step_by(PAGE_SIZE as usize).enumerate() {
            if self.region_at(page).is_none() {
                return Err(VmError::NoMemory);
            }
            if let Some(slot) = out.get_mut(index) {
                *slot = u8::from(self.space.protection(page).is_some());
            }
        }
        Ok(())
    }

    /// `munmap(start, len)`: removes the regions (or their parts) in the
    /// range and unmaps their pages. Unmapping nothing is not an error.
    pub fn unmap(&mut self, start: u64, len: u64) -> Result<(), VmError> {
        let (start, end) = user_range(start, len)?;
        self.remove_range(start, end);
        Ok(())
    }

    /// `madvise(start, len, MADV_DONTNEED)`: the range's pages are
    /// dropped; touched again, they read as zeros (demand-zero). Every
    /// page must be in a region (else [`VmError::NoMemory`], Linux's
    /// `ENOMEM`). A private file mapping also reads as zeros afterwards,
    /// where Linux would read the file again.
    pub fn discard(&mut self, start: u64, len: u64) -> Result<(), VmError> {
        let (start, end) = user_range(start, len)?;
        self.check_covered(start, end)?;
        self.space.unmap_range(start, end);
        Ok(())
    }

    /// [`VmError::NoMemory`] unless every page of `[start, end)` is in a
    /// region.
    fn check_covered(&self, start: u64, end: u64) -> Result<(), VmError> {
        let mut at = start;
        while at < end {
            let region = self.region_at(at).ok_or(VmError::NoMemory)?;
            at = region.end;
        }
        Ok(())
    }

    /// `mremap(start, old_len, new_len, flags, new_address)`: the mapping
    /// at `start` (`old_len` bytes of one region) shrinks (its tail
    /// unmapped), or grows in place when the pages after it are free (the
    /// new part demand-zero, with the region's protection). Where
    /// `placement` allows, it moves instead: [`Remap::MayMove`] when it
    /// cannot grow in place, [`Remap::To`] always, to the given address
    /// (whatever was there unmapped first). Moving keeps every page's
    /// frame and contents. Returns where the mapping now starts.
    /// [`VmError::NoMemory`] when it can neither grow in place nor move
    /// (Linux's `ENOMEM`); [`VmError::NotOneMapping`] for an old range
    /// that is not one mapping's; [`VmError::BadRange`] for overlapping
    /// ranges.
    pub fn remap(
        &mut self,
        start: u64,
        old_len: u64,
        new_len: u64,
        placement: Remap,
    ) -> Result<u64, VmError> {
        let (start, old_end) = user_range(start, old_len)?;
        let new_size = page_up(new_len)
            .filter(|&size| size > 0)
            .ok_or(VmError::BadRange)?;
        let region = *self.region_at(start).ok_or(VmError::NotOneMapping)?;
        if old_end > region.end {
            // The old range spans more than one mapping, or runs past
            // its mapping into unmapped pages.
            return Err(VmError::NotOneMapping);
        }
        let destination = match placement {
            Remap::To(destination) => {
                if destination < MMAP_MIN_ADDRESS {
                    return Err(VmError::BelowMinimum);
                }
                let (destination, destination_end) = user_range(destination, new_size)?;
                if destination < old_end && start < destination_end {
                    return Err(VmError::BadRange);
                }
                destination
            }
            Remap::InPlace | Remap::MayMove => {
                let new_end = start.checked_add(new_size).ok_or(VmError::BadRange)?;
                if new_end <= old_end {
                    self.remove_range(new_end, old_end);
                    return Ok(start);
                }
                // Growing in place: the old range must end where its
                // mapping ends, and the pages after it be free (Linux's
                // rule); the region itself grows, as Linux merges it.
                if new_end <= USER_END && old_end == region.end && !self.overlaps(old_end, new_end)
                {
                    if let Some(grown) = self.regions.get_mut(&region.start) {
                        grown.end = new_end;
                    }
                    return Ok(start);
                }
                if placement == Remap::InPlace {
                    return Err(VmError::NoMemory);
                }
                self.find_gap(new_size).ok_or(VmError::NoMemory)?
            }
        };
        // Moving: what the new range covers of the old one goes with its
        // pages; the rest of the old range is unmapped.
        let kept = new_size.min(old_end - start);
        if let Remap::To(_) = placement {
            self.remove_range(destination, destination + new_size);
        }
        self.space.move_range(start, destination, kept)?;
        // The old range's regions go (its pages have moved: nothing is
        // left mapped there to unmap), after the new one is in, which
        // keeps a shared object it maps.
        let moved_shared = region.shared.map(|shared| SharedPages {
            first_page: shared.first_page + (start - region.start) / PAGE_SIZE,
            ..shared
        });
        self.regions.insert(
            destination,
            Region {
                start: destination,
                end: destination + new_size,
                shared: moved_shared,
                file_page: region.file_page + (start - region.start) / PAGE_SIZE,
                ..region
            },
        );
        self.remove_range(start, old_end);
        Ok(destination)
    }

    fn remove_range(&mut self, start: u64, end: u64) {
        self.split_at(start);
        self.split_at(end);
        let inside: alloc::vec::Vec<u64> = self
            .regions
            .range(start..end)
            .map(|(&first, _)| first)
            .collect();
        for first in inside {
            self.regions.remove(&first);
        }
        self.space.unmap_range(start, end);
        self.drop_unmapped_objects();
        self.drop_unused_labels();
    }

    /// `mprotect(start, len, protection)`: every page in the range must be
    /// in a region (else [`VmError::NoMemory`], Linux's `ENOMEM`, also for
    /// a range beyond the user half); their regions and mapped pages take
    /// the new protection. As on Linux, an unaligned start is
    /// [`VmError::BadRange`] and an empty range changes nothing.
    pub fn protect(
        &mut self,
        start: u64,
        len: u64,
        protection: UserProtection,
    ) -> Result<(), VmError> {
        if !start.is_multiple_of(PAGE_SIZE) {
            return Err(VmError::BadRange);
        }
        if len == 0 {
            return Ok(());
        }
        let end = page_up(len)
            .and_then(|len| start.checked_add(len))
            .filter(|&end| end <= USER_END)
            .ok_or(VmError::NoMemory)?;
        if protection.is_writable()
            && self
                .regions
                .range(..end)
                .rev()
                .take_while(|(_, region)| region.end > start)
                .any(|(_, region)| !region.may_write)
        {
            return Err(VmError::NotWritable);
        }
        if end - start == PAGE_SIZE && self.protect_boundary_page(start, protection) {
            self.space.protect_range(start, end, protection);
            return Ok(());
        }
        // The whole range must be covered, without holes.
        let mut covered = start;
        while covered < end {
            covered = self.region_at(covered).ok_or(VmError::NoMemory)?.end;
        }
        let already = self
            .region_at(start)
            .is_some_and(|region| region.end >= end && region.protection == protection);
        if !already {
            self.split_at(start);
            self.split_at(end);
            for (_, region) in self.regions.range_mut(start..end) {
                region.protection = protection;
            }
            self.merge_around(start, end);
        }
        self.space.protect_range(start, end, protection);
        Ok(())
    }

    /// The quick case of changing one page's protection (Appel and Li's
    /// primitives change pages one at a time): the page is at an edge of
    /// its region and the neighbour across that edge already has the new
    /// protection, so the page just moves from one region to the other.
    /// Returns false (and changes nothing) in every other case.
    fn protect_boundary_page(&mut self, page: u64, protection: UserProtection) -> bool {
        let Some(region) = self.region_at(page).copied() else {
            return false;
        };
        if region.protection == protection {
            return true;
        }
        if region.shared.is_some() || region.label.is_some() {
            // Its neighbours would need the object's or the file's page
            // numbers: the general path splits and joins it.
            return false;
        }
        let last = region.end - PAGE_SIZE;
        if page == region.start {
            let joins_left = self
                .regions
                .range(..page)
                .next_back()
                .is_some_and(|(_, left)| {
                    left.end == page
                        && left.protection == protection
                        && left.may_write == region.may_write
                        && left.shared.is_none()
                        && left.label.is_none()
                });
            if !joins_left {
                return false;
            }
            if let Some((_, left)) = self.regions.range_mut(..page).next_back() {
                left.end += PAGE_SIZE;
            }
            self.regions.remove(&page);
            if region.end > page + PAGE_SIZE {
                self.regions.insert(
                    page + PAGE_SIZE,
                    Region {
                        start: page + PAGE_SIZE,
                        ..region
                    },
                );
            }
            return true;
        }
        if page == last {
            let Some(right) = self.regions.get(&region.end).copied() else {
                return false;
            };
            if right.protection != protection
                || right.may_write != region.may_write
                || right.shared.is_some()
                || right.label.is_some()
            {
                return false;
            }
            if let Some(shrunk) = self.regions.get_mut(&region.start) {
                shrunk.end = page;
            }
            self.regions.remove(&right.start);
            self.regions.insert(
                page,
                Region {
                    start: page,
                    ..right
                },
            );
            return true;
        }
        false
    }

    /// Joins neighbouring regions with the same protection in and around
    /// `[start, end)`, so that protecting pages one at a time and back
    /// (Appel and Li's primitives) does not leave a region per page.
    fn merge_around(&mut self, start: u64, end: u64) {
        let Some(mut key) = self
            .regions
            .range(..start)
            .next_back()
            .or_else(|| self.regions.range(start..).next())
            .map(|(&key, _)| key)
        else {
            return;
        };
        loop {
            let Some(region) = self.regions.get(&key).copied() else {
                return;
            };
            let Some((&next_key, &next)) = self.regions.range(key + 1..).next() else {
                return;
            };
            if next_key > end {
                return;
            }
            if region.joins(&next) {
                self.regions.remove(&next_key);
                if let Some(joined) = self.regions.get_mut(&key) {
                    joined.end = next.end;
                }
            } else {
                key = next_key;
            }
        }
    }
}
