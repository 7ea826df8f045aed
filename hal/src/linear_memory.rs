//! Linear memory for the native Wasm engine: reserved at its maximum, so
//! that it never moves (docs/design/0008-native-engine.md, "Read-only
//! code without the lock").
//!
//! A Wasm memory grows (`memory.grow`); in a `Vec` it could move, and
//! code reading it beside the instance's owner would then read freed
//! memory. A [`LinearMemory`] instead reserves address space for its
//! maximum when it is made and maps fresh zeroed pages as it grows: its
//! base never changes and its pages stay mapped until the last
//! [`MemoryView`] of it is gone. In the kernel the pages are in their own
//! region (`memory::LINEAR_BASE`), one 4 GiB slot per memory
//! (the most a 32-bit Wasm memory can hold); on the host (the runtime's
//! tests) an inaccessible `mmap` whose pages are made read-write with
//! `mprotect` as it grows.
//!
//! Safe Rust reaches the bytes only through the one owner
//! ([`LinearMemory::as_slice`], [`LinearMemory::as_mut_slice`], which
//! follow the borrow rules); a [`MemoryView`] gives out an address and a
//! length, which only the (unsafe) entry into generated code can use, and
//! copies ([`MemoryView::copy_out`]), never references.

use alloc::{sync::Arc, vec::Vec};
use core::sync::atomic::{AtomicUsize, Ordering};

/// The most bytes a linear memory may reserve: 4 GiB, the most a 32-bit
/// Wasm memory can address.
pub const MAX_BYTES: usize = 4 << 30;

/// The reserved pages and how many bytes of them are in use, shared by
/// the owner and its views.
struct Region {
    pages: backing::Reservation,
    /// Bytes in use (all mapped); grows, never shrinks.
    len: AtomicUsize,
}

/// A Wasm linear memory that never moves: the owner, through which alone
/// its bytes are read and written from Rust.
pub struct LinearMemory {
    region: Arc<Region>,
    max_bytes: usize,
}

/// A shared view of a [`LinearMemory`]: its address and its current
/// length, and its pages kept mapped while the view lives. For code that
/// reads the memory beside its owner (generated code, entered through
/// `unsafe`, and the kernel procedures it calls, which get copies).
#[derive(Clone)]
pub struct MemoryView {
    region: Arc<Region>,
}

impl LinearMemory {
    /// A memory of `len` zeroed bytes that can grow to `max_bytes`
    /// (at most [`MAX_BYTES`]); `None` when `len` is above `max_bytes`
    /// or no address space or memory is left.
    pub fn new(len: usize, max_bytes: usize) -> Option<LinearMemory> {
        if len > max_bytes || max_bytes > MAX_BYTES {
            return None;
        }
        let pages = backing::Reservation::new(max_bytes)?;
        if !pages.make_usable(0, len) {
            return None;
        }
        Some(LinearMemory {
            region: Arc::new(Region {
                pages,
                len: AtomicUsize::new(len),
            }),
            max_bytes,
        })
    }

    /// Bytes in use.
    pub fn len(&self) -> usize {
        self.region.len.load(Ordering::Relaxed)
    }

    /// Whether no byte is in use.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most bytes it can grow to.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// The address of its first byte (the same for its whole life).
    pub fn base(&self) -> u64 {
        self.region.pages.base()
    }

    /// Grows it to `new_len` zeroed bytes in all (at most
    /// [`LinearMemory::max_bytes`], not less than now); `false`, and
    /// nothing changed, when that is too much or no memory is left. The
    /// bytes already there stay where they are.
    pub fn grow(&mut self, new_len: usize) -> bool {
        let len = self.len();
        if new_len < len || new_len > self.max_bytes {
            return false;
        }
        if !self.region.pages.make_usable(len, new_len) {
            return false;
        }
        // Release: a view that reads the new length finds its pages mapped.
        self.region.len.store(new_len, Ordering::Release);
        true
    }

    /// The bytes in use.
    pub fn as_slice(&self) -> &[u8] {
        let len = self.len();
        if len == 0 {
            return &[];
        }
        // SAFETY: the first `len` bytes from `base` are mapped read-write
        // for this region alone (`make_usable`) and stay mapped while
        // `self.region` lives; Rust reaches them only through this owner
        // (views give out addresses, not references), so a shared borrow
        // of `self` is a shared borrow of the bytes.
        unsafe { core::slice::from_raw_parts(self.base() as *const u8, len) }
    }

    /// The bytes in use, to change.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        let len = self.len();
        if len == 0 {
            return &mut [];
        }
        // SAFETY: as for `as_slice`; `&mut self` is the one way to them,
        // so the borrow is exclusive.
        unsafe { core::slice::from_raw_parts_mut(self.base() as *mut u8, len) }
    }

    /// A view of it, for code that reads it beside this owner.
    pub fn view(&self) -> MemoryView {
        MemoryView {
            region: self.region.clone(),
        }
    }
}

impl MemoryView {
    /// The address of the memory's first byte.
    pub fn base(&self) -> u64 {
        self.region.pages.base()
    }

    /// Bytes in use now (all mapped, and mapped for as long as this view
    /// lives: the memory never shrinks).
    pub fn len(&self) -> usize {
        self.region.len.load(Ordering::Acquire)
    }

    /// Whether no byte is in use.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of the `len` bytes at `offset`, or `None` when they are not
    /// all in use. The owner may be writing them meanwhile (a view is
    /// read beside it): the copy may then mix bytes from before and after
    /// the write, and its reader must not rely on it (read-only code's
    /// outcome is thrown away when an invocation of its instance
    /// overlapped it, as a sequence lock's reader does).
    pub fn copy_out(&self, offset: usize, len: usize) -> Option<Vec<u8>> {
        let end = offset.checked_add(len)?;
        if end > self.len() {
            return None;
        }
        let first = self.base() as *const u8;
        let mut bytes = Vec::with_capacity(len);
        for at in offset..end {
            // SAFETY: the byte is one of the first `len()` bytes, mapped
            // (`make_usable`) for as long as `self.region` lives: a memory
            // never shrinks. It is read as a value, never borrowed, and
            // volatile, one byte at a time, because the owner may write it
            // meanwhile (through `as_mut_slice` or generated code): the
            // read then sees the old or the new byte, either a valid `u8`.
            bytes.push(unsafe { core::ptr::read_volatile(first.add(at)) });
        }
        Some(bytes)
    }
}

/// Bytes of linear memory mapped now (whole pages), for leak checks.
pub fn mapped_bytes() -> usize {
    backing::MAPPED_BYTES.load(Ordering::Relaxed)
}

#[cfg(target_os = "none")]
mod backing {
    //! The kernel's linear memories: 4 GiB slots of the linear-memory
    //! region, pages mapped from fresh (zeroed) frames as a memory grows.

    use core::sync::atomic::{AtomicUsize, Ordering};

    use crate::{
        memory::{self, LINEAR_BASE, LINEAR_END, PAGE_SIZE},
        slots::Slots,
    };

    /// Address space of one memory.
    const SLOT_BYTES: u64 = super::MAX_BYTES as u64;
    const SLOT_COUNT: usize = ((LINEAR_END - LINEAR_BASE) / SLOT_BYTES) as usize;

    /// Which slots are taken.
    static SLOTS: Slots<{ SLOT_COUNT.div_ceil(64) }> = Slots::new(SLOT_COUNT);
    /// Bytes mapped by live memories.
    pub(super) static MAPPED_BYTES: AtomicUsize = AtomicUsize::new(0);

    /// One slot, with the pages mapped at its start.
    pub(super) struct Reservation {
        slot: usize,
        /// Pages mapped from the slot's start.
        pages: AtomicUsize,
    }

    impl Reservation {
        pub(super) fn new(_max_bytes: usize) -> Option<Reservation> {
            Some(Reservation {
                slot: SLOTS.take()?,
                pages: AtomicUsize::new(0),
            })
        }

        pub(super) fn base(&self) -> u64 {
            LINEAR_BASE + self.slot as u64 * SLOT_BYTES
        }

        /// Maps the pages `len..new_len` needs beyond those mapped (the
        /// owner alone calls it, `&mut`, so calls never overlap).
        pub(super) fn make_usable(&self, _len: usize, new_len: usize) -> bool {
            let mapped = self.pages.load(Ordering::Relaxed) as u64;
            let wanted = (new_len as u64).div_ceil(PAGE_SIZE);
            if wanted <= mapped {
                return true;
            }
            if memory::map_internal(self.base() + mapped * PAGE_SIZE, wanted - mapped).is_err() {
                return false;
            }
            self.pages.store(wanted as usize, Ordering::Relaxed);
            MAPPED_BYTES.fetch_add(((wanted - mapped) * PAGE_SIZE) as usize, Ordering::Relaxed);
            true
        }
    }

    impl Drop for Reservation {
        fn drop(&mut self) {
            // The last owner or view is gone: nothing reads the pages.
            let pages = self.pages.load(Ordering::Relaxed) as u64;
            memory::unmap_internal(self.base(), pages);
            MAPPED_BYTES.fetch_sub((pages * PAGE_SIZE) as usize, Ordering::Relaxed);
            SLOTS.release(self.slot);
        }
    }
}

#[cfg(not(target_os = "none"))]
mod backing {
    //! The host's linear memories, for the runtime's tests: an
    //! inaccessible anonymous mapping of the maximum, made read-write as
    //! the memory grows.

    use core::{
        ffi::c_void,
        sync::atomic::{AtomicUsize, Ordering},
    };

    const PAGE_BYTES: usize = 4096;
    const PROT_NONE: i32 = 0;
    const PROT_READ: i32 = 1;
    const PROT_WRITE: i32 = 2;
    const MAP_PRIVATE: i32 = 2;
    const MAP_ANONYMOUS: i32 = 0x20;
    const MAP_NORESERVE: i32 = 0x4000;

    extern "C" {
        fn mmap(
            addr: *mut c_void,
            len: usize,
            prot: i32,
            flags: i32,
            fd: i32,
            offset: i64,
        ) -> *mut c_void;
        fn mprotect(addr: *mut c_void, len: usize, prot: i32) -> i32;
        fn munmap(addr: *mut c_void, len: usize) -> i32;
    }

    /// Bytes made usable by live memories.
    pub(super) static MAPPED_BYTES: AtomicUsize = AtomicUsize::new(0);

    /// One mapping of the maximum (at least a page).
    pub(super) struct Reservation {
        base: *mut c_void,
        reserved_bytes: usize,
        /// Bytes made read-write from `base`.
        usable_bytes: AtomicUsize,
    }

    // SAFETY: the mapping is owned by this value; its bytes are reached
    // from Rust only through the one `LinearMemory` (borrow rules), the
    // rest of this type is an address and atomics.
    unsafe impl Send for Reservation {}
    // SAFETY: as above.
    unsafe impl Sync for Reservation {}

    impl Reservation {
        pub(super) fn new(max_bytes: usize) -> Option<Reservation> {
            let reserved_bytes = max_bytes.div_ceil(PAGE_BYTES).max(1) * PAGE_BYTES;
            // SAFETY: a new anonymous private mapping touches no existing
            // memory; failure is checked below.
            let base = unsafe {
                mmap(
                    core::ptr::null_mut(),
                    reserved_bytes,
                    PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            if base as isize == -1 || base.is_null() {
                return None;
            }
            Some(Reservation {
                base,
                reserved_bytes,
                usable_bytes: AtomicUsize::new(0),
            })
        }

        pub(super) fn base(&self) -> u64 {
            self.base as u64
        }

        /// Makes the pages `len..new_len` needs read-write (the owner
        /// alone calls it, `&mut`, so calls never overlap).
        pub(super) fn make_usable(&self, _len: usize, new_len: usize) -> bool {
            let usable = self.usable_bytes.load(Ordering::Relaxed);
            let wanted = new_len.div_ceil(PAGE_BYTES) * PAGE_BYTES;
            if wanted <= usable {
                return true;
            }
            if wanted > self.reserved_bytes {
                return false;
            }
            // SAFETY: `[base + usable, base + wanted)` is inside our own
            // mapping and held by no Rust object; anonymous pages read as
            // zeros.
            let changed = unsafe {
                mprotect(
                    self.base.cast::<u8>().add(usable).cast(),
                    wanted - usable,
                    PROT_READ | PROT_WRITE,
                )
            };
            if changed != 0 {
                return false;
            }
            self.usable_bytes.store(wanted, Ordering::Relaxed);
            MAPPED_BYTES.fetch_add(wanted - usable, Ordering::Relaxed);
            true
        }
    }

    impl Drop for Reservation {
        fn drop(&mut self) {
            // SAFETY: the mapping is ours and nothing refers to it any more
            // (the last owner or view is gone).
            unsafe { munmap(self.base, self.reserved_bytes) };
            MAPPED_BYTES.fetch_sub(self.usable_bytes.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }
}

#[cfg(all(test, not(target_os = "none")))]
mod tests {
    use super::*;

    /// The tests of this module, one at a time: [`mapped_bytes`] counts
    /// every memory of the process, so a test that checks it must not see
    /// another test's memories come and go.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    #[test]
    fn grows_in_place_with_zeros_and_keeps_its_bytes() {
        let _serial = one_at_a_time();
        let mut memory = LinearMemory::new(65536, 4 * 65536).expect("a memory");
        let base = memory.base();
        assert_eq!(memory.len(), 65536);
        assert!(memory.as_slice().iter().all(|&b| b == 0));
        memory.as_mut_slice()[65535] = 7;
        let view = memory.view();
        assert!(memory.grow(3 * 65536));
        assert_eq!(memory.base(), base, "a grown memory must not move");
        assert_eq!(view.len(), 3 * 65536);
        assert_eq!(memory.as_slice()[65535], 7);
        assert!(memory.as_slice()[65536..].iter().all(|&b| b == 0));
        assert!(!memory.grow(5 * 65536), "beyond the maximum");
        assert!(!memory.grow(65536), "a memory never shrinks");
        assert_eq!(memory.len(), 3 * 65536);
    }

    #[test]
    fn a_view_keeps_the_pages_after_the_owner_is_gone() {
        let _serial = one_at_a_time();
        let before = mapped_bytes();
        let memory = LinearMemory::new(8192, 8192).expect("a memory");
        let view = memory.view();
        drop(memory);
        assert_eq!(view.len(), 8192);
        assert_eq!(mapped_bytes(), before + 8192, "the view keeps the pages");
        drop(view);
        assert_eq!(mapped_bytes(), before, "the last view lets them go");
        assert!(
            LinearMemory::new(1, 0).is_none(),
            "a length above the maximum"
        );
        assert!(LinearMemory::new(0, MAX_BYTES + 1).is_none());
        let empty = LinearMemory::new(0, 0).expect("an empty memory");
        assert!(empty.as_slice().is_empty());
    }

    #[test]
    fn a_view_copies_out_only_bytes_in_use() {
        let _serial = one_at_a_time();
        let mut memory = LinearMemory::new(65536, 2 * 65536).expect("a memory");
        memory.as_mut_slice()[65530..65536].copy_from_slice(b"spindl");
        let view = memory.view();
        assert_eq!(view.copy_out(65530, 6).as_deref(), Some(&b"spindl"[..]));
        assert_eq!(view.copy_out(65530, 7), None, "one byte past the end");
        assert_eq!(view.copy_out(usize::MAX, 2), None, "an offset that wraps");
        assert_eq!(view.copy_out(65536, 0).as_deref(), Some(&[][..]));
        assert!(memory.grow(2 * 65536));
        assert_eq!(
            view.copy_out(65530, 7).as_deref(),
            Some(&b"spindl\0"[..]),
            "the grown bytes, zero"
        );
    }
}
