//! Shared memory: the objects `MAP_SHARED` regions map.

use alloc::vec::Vec;

use hal::memory::{self, Frame};
use spin::Mutex;

/// Memory several address spaces map together: anonymous shared memory,
/// or a file's pages. Each page is one frame of shared memory
/// (`hal::memory::allocate_shared_memory_frame`), which every mapping
/// writes directly.
pub trait SharedObject: Send + Sync {
    /// A hold on the frame of page `index` (made on first use), which the
    /// caller maps and then frees (`hal::memory::free_frame`); `None`
    /// beyond the object's end or when memory runs out.
    fn page(&self, index: u64) -> Option<Frame>;
    /// Writes the pages back to where they came from (`msync`); nothing
    /// for anonymous memory.
    fn sync(&self) {}
}

/// Anonymous shared memory (`MAP_SHARED | MAP_ANONYMOUS`): zeroed pages,
/// made on first touch, that live as long as a mapping of them does.
pub struct AnonymousMemory {
    pages: Mutex<Vec<Option<Frame>>>,
}

impl AnonymousMemory {
    /// `pages` pages of shared memory, none made yet.
    pub fn new(pages: u64) -> Option<AnonymousMemory> {
        let mut table = Vec::new();
        table.try_reserve_exact(usize::try_from(pages).ok()?).ok()?;
        table.resize_with(pages as usize, || None);
        Some(AnonymousMemory {
            pages: Mutex::new(table),
        })
    }
}

impl SharedObject for AnonymousMemory {
    fn page(&self, index: u64) -> Option<Frame> {
        let mut pages = self.pages.lock();
        let slot = pages.get_mut(usize::try_from(index).ok()?)?;
        if slot.is_none() {
            *slot = Some(memory::allocate_shared_memory_frame()?);
        }
        slot.as_ref().map(Frame::share)
    }
}

impl Drop for AnonymousMemory {
    fn drop(&mut self) {
        for frame in self.pages.get_mut().drain(..).flatten() {
            memory::free_frame(frame);
        }
    }
}
