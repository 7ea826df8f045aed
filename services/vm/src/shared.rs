//! Shared memory: the objects `MAP_SHARED` regions map.

use alloc::vec::Vec;
use core::marker::PhantomData;

use spin::Mutex;

use crate::PageTables;

/// Memory several address spaces map together: anonymous shared memory,
/// or a file's pages. Each page is one frame of shared memory
/// ([`PageTables::allocate_shared_memory_frame`]), which every mapping
/// writes directly.
pub trait SharedObject: Send + Sync {
    /// The frames it hands out: its page tables' ([`PageTables::Frame`]).
    type Frame;
    /// A hold on the frame of page `index` (made on first use), which the
    /// caller maps and then frees ([`PageTables::free_frame`]); `None`
    /// beyond the object's end or when memory runs out.
    fn page(&self, index: u64) -> Option<Self::Frame>;
    /// Writes the pages back to where they came from (`msync`); nothing
    /// for anonymous memory.
    fn sync(&self) {}
}

/// Anonymous shared memory (`MAP_SHARED | MAP_ANONYMOUS`): zeroed pages,
/// made on first touch, that live as long as a mapping of them does.
/// `P` is the page tables whose frames it is made of.
pub struct AnonymousMemory<P: PageTables> {
    pages: Mutex<Vec<Option<P::Frame>>>,
    /// Only `P`'s frame functions are used: no `P` is held, so the
    /// memory is `Send` and `Sync` whatever `P` is.
    page_tables: PhantomData<fn() -> P>,
}

impl<P: PageTables> AnonymousMemory<P> {
    /// `pages` pages of shared memory, none made yet.
    pub fn new(pages: u64) -> Option<Self> {
        let mut table = Vec::new();
        table.try_reserve_exact(usize::try_from(pages).ok()?).ok()?;
        table.resize_with(pages as usize, || None);
        Some(AnonymousMemory {
            pages: Mutex::new(table),
            page_tables: PhantomData,
        })
    }
}

impl<P: PageTables> SharedObject for AnonymousMemory<P> {
    type Frame = P::Frame;

    fn page(&self, index: u64) -> Option<P::Frame> {
        let mut pages = self.pages.lock();
        let slot = pages.get_mut(usize::try_from(index).ok()?)?;
        if slot.is_none() {
            *slot = Some(P::allocate_shared_memory_frame()?);
        }
        slot.as_ref().map(P::share_frame)
    }
}

impl<P: PageTables> Drop for AnonymousMemory<P> {
    fn drop(&mut self) {
        for frame in self.pages.get_mut().drain(..).flatten() {
            P::free_frame(frame);
        }
    }
}
