//! SPIN's `VirtAddr` service (SOSP'95 §4.1, figure 3): virtual address
//! ranges as capabilities. A [`VirtRange`] (SPIN's `VirtAddr.T`) is a
//! start, a length and the context it is unique in; the `Translation`
//! service maps physical pages at a range its holder was given, never at a
//! bare number, so two holders cannot be handed overlapping ranges of one
//! context.
//!
//! Ranges come from a window of each context's user half, first fit
//! ([`WINDOW_START`]..[`WINDOW_END`]), away from where the Unix model puts
//! a program, its break and its `mmap` areas.
#![no_std]

extern crate alloc;

use alloc::{collections::BTreeMap, sync::Arc, vec::Vec};
use core::{
    fmt,
    sync::atomic::{AtomicBool, Ordering},
};

use domain::{Export, Module, SymbolType};

/// Page size of every range.
pub const PAGE_SIZE: u64 = 4096;
/// First address ranges are allocated from (64 GiB).
pub const WINDOW_START: u64 = 0x10_0000_0000;
/// One past the last (128 GiB): a 64 GiB window per context.
pub const WINDOW_END: u64 = 0x20_0000_0000;

/// Why an allocation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VirtError {
    /// Zero bytes were asked for.
    Empty,
    /// No free range that large is left in the context's window.
    NoRoom {
        /// Bytes asked for.
        bytes: u64,
    },
}

impl fmt::Display for VirtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VirtError::Empty => f.write_str("a range of zero bytes"),
            VirtError::NoRoom { bytes } => {
                write!(f, "no free range of {bytes} bytes left in the context")
            }
        }
    }
}

/// A range of virtual addresses in one context: `VirtAddr.T`.
#[derive(Debug)]
pub struct VirtRange {
    context: u64,
    start: u64,
    pages: u64,
    released: AtomicBool,
}

impl VirtRange {
    /// The context (a `Translation` context's number) it belongs to.
    pub fn context(&self) -> u64 {
        self.context
    }

    /// Its first address (page aligned).
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Its length in pages.
    pub fn pages(&self) -> u64 {
        self.pages
    }

    /// One past its last address.
    pub fn end(&self) -> u64 {
        self.start + self.pages * PAGE_SIZE
    }

    /// Whether `address` is inside it.
    pub fn contains(&self, address: u64) -> bool {
        (self.start..self.end()).contains(&address)
    }

    /// Whether it was given back (a released range names nothing).
    pub fn is_released(&self) -> bool {
        self.released.load(Ordering::Acquire)
    }
}

/// The `VirtAddr` service: per context, the ranges handed out.
#[derive(Default)]
pub struct VirtAddr {
    /// Per context: start -> pages of each live range.
    ranges: spin::Mutex<BTreeMap<u64, BTreeMap<u64, u64>>>,
}

impl VirtAddr {
    /// A service with nothing allocated.
    pub fn new() -> VirtAddr {
        VirtAddr::default()
    }

    /// `VirtAddr.Allocate`: a free range of `bytes` (rounded up to pages)
    /// in `context`.
    pub fn allocate(&self, context: u64, bytes: u64) -> Result<Arc<VirtRange>, VirtError> {
        if bytes == 0 {
            return Err(VirtError::Empty);
        }
        let pages = bytes.div_ceil(PAGE_SIZE);
        let length = pages
            .checked_mul(PAGE_SIZE)
            .ok_or(VirtError::NoRoom { bytes })?;
        let mut all = self.ranges.lock();
        let ranges = all.entry(context).or_default();
        // First fit: the gap before each range, then the one after the last.
        let mut start = WINDOW_START;
        for (&used, &used_pages) in ranges.iter() {
            if used - start >= length {
                break;
            }
            start = used + used_pages * PAGE_SIZE;
        }
        if WINDOW_END - start < length {
            return Err(VirtError::NoRoom { bytes });
        }
        ranges.insert(start, pages);
        Ok(Arc::new(VirtRange {
            context,
            start,
            pages,
            released: AtomicBool::new(false),
        }))
    }

    /// `VirtAddr.Deallocate`: the range may be handed out again. Giving
    /// back a range twice does nothing.
    pub fn deallocate(&self, range: &VirtRange) {
        if range.released.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut all = self.ranges.lock();
        if let Some(ranges) = all.get_mut(&range.context) {
            ranges.remove(&range.start);
            if ranges.is_empty() {
                all.remove(&range.context);
            }
        }
    }

    /// Forgets every range of `context` (it was destroyed: `Translation`
    /// refuses mappings in a destroyed context, so its old ranges name
    /// nothing usable).
    pub fn forget_context(&self, context: u64) {
        self.ranges.lock().remove(&context);
    }

    /// Live ranges in `context`.
    pub fn ranges_in(&self, context: u64) -> usize {
        self.ranges.lock().get(&context).map_or(0, BTreeMap::len)
    }
}

/// `VirtAddr.Allocate` as the domain exports it.
pub type AllocateFn = fn(&VirtAddr, u64, u64) -> Result<Arc<VirtRange>, VirtError>;
/// `VirtAddr.Deallocate` as exported.
pub type DeallocateFn = fn(&VirtAddr, &VirtRange);

impl Module for VirtAddr {
    fn name(&self) -> &str {
        "VirtAddr"
    }

    fn exports(&self) -> Vec<Export> {
        let allocate: AllocateFn = VirtAddr::allocate;
        let deallocate: DeallocateFn = VirtAddr::deallocate;
        Vec::from([
            Export::new(
                "VirtAddr.Allocate",
                SymbolType::Type(core::any::type_name::<AllocateFn>()),
                allocate,
            ),
            Export::new(
                "VirtAddr.Deallocate",
                SymbolType::Type(core::any::type_name::<DeallocateFn>()),
                deallocate,
            ),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_do_not_overlap_and_are_reused_first_fit() {
        let service = VirtAddr::new();
        let a = service.allocate(1, 1).unwrap();
        let b = service.allocate(1, 3 * PAGE_SIZE).unwrap();
        assert_eq!(a.start(), WINDOW_START);
        assert_eq!(b.start(), a.end());
        assert_eq!(b.pages(), 3);
        // Another context has its own window.
        assert_eq!(service.allocate(2, 1).unwrap().start(), WINDOW_START);
        service.deallocate(&a);
        service.deallocate(&a);
        assert!(a.is_released());
        let c = service.allocate(1, PAGE_SIZE).unwrap();
        assert_eq!(c.start(), WINDOW_START, "the freed gap is reused");
        let d = service.allocate(1, 2 * PAGE_SIZE).unwrap();
        assert_eq!(d.start(), b.end(), "too large for no gap: after the last");
        assert_eq!(service.ranges_in(1), 3);
    }

    #[test]
    fn bad_sizes_are_refused() {
        let service = VirtAddr::new();
        assert_eq!(service.allocate(1, 0).unwrap_err(), VirtError::Empty);
        assert!(matches!(
            service.allocate(1, WINDOW_END - WINDOW_START + 1),
            Err(VirtError::NoRoom { .. })
        ));
        assert!(matches!(
            service.allocate(1, u64::MAX),
            Err(VirtError::NoRoom { .. })
        ));
        assert!(service.allocate(1, WINDOW_END - WINDOW_START).is_ok());
    }
}
