//! Shared mappings of files (`MAP_SHARED`): one [`FileMemory`] per file,
//! whose pages every shared mapping of the file maps (`vm::SharedObject`),
//! so processes see each other's writes at once. The pages are read from
//! the file on first touch and written back to it by `msync` and when the
//! last mapping goes (`munmap`, `execve`, exit), within the file's size
//! (a shared mapping never grows its file, as on Linux), and only where
//! they changed.
//!
//! `read` and `write` stay coherent with the mappings (`vfs::MappedPages`,
//! which the file layer calls): before a file with shared mappings is
//! read or written, the pages its mappings changed go back to it; after a
//! write, the mapped pages it covered take the new bytes. So a mapping's
//! write shows to `read` at once, and a `write` to the mappings, as with
//! Linux's one page cache.

#![no_std]

extern crate alloc;

use alloc::{
    collections::BTreeMap,
    sync::{Arc, Weak},
    vec::Vec,
};
use core::sync::atomic::{AtomicUsize, Ordering};

use hal::memory::{self, Frame, PAGE_SIZE};
use vfs::Inode;

/// The shared pages of one file.
pub struct FileMemory {
    inode: Arc<dyn Inode>,
    /// Its key in [`OBJECTS`].
    key: usize,
    /// The file's pages mapped so far, by page index.
    pages: spin::Mutex<Vec<Option<Frame>>>,
}

/// Every file with shared mappings, by its inode's address (the object
/// holds the inode, so the address names one inode while it lives).
static OBJECTS: spin::Mutex<BTreeMap<usize, Weak<FileMemory>>> = spin::Mutex::new(BTreeMap::new());

/// Files with shared mappings now: while there are none, `read` and
/// `write` do not look (one load).
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// The key of `inode` in [`OBJECTS`]: its address.
fn key_of(inode: &dyn Inode) -> usize {
    inode as *const dyn Inode as *const () as usize
}

/// The shared pages of `inode`'s file, if it has shared mappings.
fn existing(inode: &dyn Inode) -> Option<Arc<FileMemory>> {
    if LIVE.load(Ordering::Relaxed) == 0 {
        return None;
    }
    OBJECTS.lock().get(&key_of(inode)).and_then(Weak::upgrade)
}

/// The shared pages of `inode`'s file: the object its shared mappings
/// have, or a new one.
pub fn of(inode: &Arc<dyn Inode>) -> Arc<FileMemory> {
    let key = key_of(&**inode);
    let mut objects = OBJECTS.lock();
    if let Some(object) = objects.get(&key).and_then(Weak::upgrade) {
        return object;
    }
    let object = Arc::new(FileMemory {
        inode: inode.clone(),
        key,
        pages: spin::Mutex::new(Vec::new()),
    });
    objects.insert(key, Arc::downgrade(&object));
    LIVE.fetch_add(1, Ordering::Relaxed);
    object
}

/// Writes back what shared mappings of `inode`'s file changed, if it has
/// any: before the kernel reads the file itself (a private mapping).
pub fn sync_file(inode: &dyn Inode) {
    if let Some(object) = existing(inode) {
        vm::SharedObject::sync(&*object);
    }
}

/// The file layer's view of these pages (`vfs::MappedPages`).
struct Coherence;

impl vfs::MappedPages for Coherence {
    fn before_access(&self, inode: &dyn Inode) {
        sync_file(inode);
    }

    fn after_write(&self, inode: &dyn Inode, offset: u64, len: usize) {
        if let Some(object) = existing(inode) {
            object.refresh(offset, len as u64);
        }
    }
}

/// Makes `read` and `write` coherent with shared mappings (at boot).
pub fn init() {
    vfs::set_mapped_pages(&Coherence);
}

impl FileMemory {
    /// A frame of shared memory holding page `index` of the file (zeros
    /// past its end); `None` for a page wholly beyond the end (Linux's
    /// `SIGBUS`) or when memory runs out.
    fn read_page(&self, index: u64) -> Option<Frame> {
        let offset = index.checked_mul(PAGE_SIZE)?;
        if offset >= self.inode.metadata().size {
            return None;
        }
        let frame = memory::allocate_shared_memory_frame()?;
        self.fill(&frame, offset);
        Some(frame)
    }

    /// Fills `frame` with the file's page at `offset` (zeros past the end).
    fn fill(&self, frame: &Frame, offset: u64) {
        let mut buffer = [0u8; PAGE_SIZE as usize];
        let mut done = 0;
        while done < buffer.len() {
            match self
                .inode
                .read_at(offset + done as u64, &mut buffer[done..])
            {
                Ok(0) | Err(_) => break,
                Ok(count) => done += count,
            }
        }
        // One page at offset 0: fits.
        let _ = frame.write(0, &buffer);
    }

    /// Mapped pages over `len` bytes at `offset` read the file again (it
    /// was just written there).
    fn refresh(&self, offset: u64, len: u64) {
        let pages = self.pages.lock();
        let first = offset / PAGE_SIZE;
        let last = offset.saturating_add(len.max(1) - 1) / PAGE_SIZE;
        for index in first..=last.min(pages.len() as u64) {
            if let Some(Some(frame)) = pages.get(index as usize) {
                self.fill(frame, index * PAGE_SIZE);
            }
        }
    }
}

impl vm::SharedObject for FileMemory {
    type Frame = Frame;

    fn page(&self, index: u64) -> Option<Frame> {
        let slot = usize::try_from(index).ok()?;
        let mut pages = self.pages.lock();
        if pages.len() <= slot {
            let more = slot + 1 - pages.len();
            pages.try_reserve(more).ok()?;
            pages.resize_with(slot + 1, || None);
        }
        if pages[slot].is_none() {
            pages[slot] = Some(self.read_page(index)?);
        }
        pages[slot].as_ref().map(Frame::share)
    }

    fn sync(&self) {
        let size = self.inode.metadata().size;
        let pages = self.pages.lock();
        let mut buffer = [0u8; PAGE_SIZE as usize];
        let mut current = [0u8; PAGE_SIZE as usize];
        for (index, frame) in pages.iter().enumerate() {
            let Some(frame) = frame else { continue };
            let offset = index as u64 * PAGE_SIZE;
            if offset >= size {
                break;
            }
            let length = (size - offset).min(PAGE_SIZE) as usize;
            if frame.read(0, &mut buffer[..length]).is_err() {
                continue;
            }
            // Only pages that changed are written: a file never written
            // through its mappings stays as it was (a boot-archive file
            // keeps lending its bytes to the page cache).
            let unchanged = matches!(
                self.inode.read_at(offset, &mut current[..length]),
                Ok(count) if count == length && current[..length] == buffer[..length]
            );
            if !unchanged {
                // A file that cannot take the bytes back (a read-only
                // file system) keeps its own.
                let _ = self.inode.write_at(offset, &buffer[..length]);
            }
        }
    }
}

impl Drop for FileMemory {
    fn drop(&mut self) {
        vm::SharedObject::sync(self);
        for frame in self.pages.get_mut().drain(..).flatten() {
            memory::free_frame(frame);
        }
        let mut objects = OBJECTS.lock();
        if objects
            .get(&self.key)
            .is_some_and(|object| object.strong_count() == 0)
        {
            objects.remove(&self.key);
        }
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}
