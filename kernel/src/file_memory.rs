//! Shared mappings of files (`MAP_SHARED`): one [`FileMemory`] per file,
//! whose pages every shared mapping of the file maps (`vm::SharedObject`),
//! so processes see each other's writes at once. The pages are read from
//! the file on first touch and written back to it by `msync` and when the
//! last mapping goes (`munmap`, `execve`, exit), within the file's size
//! (a shared mapping never grows its file, as on Linux).
//!
//! `read` and `write` on the file do not go through these pages: between
//! a write to the mapping and its write-back, `read` returns the file's
//! older bytes (Linux's page cache would have them agree).

use alloc::{
    collections::BTreeMap,
    sync::{Arc, Weak},
    vec::Vec,
};

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

/// The shared pages of `inode`'s file: the object its shared mappings
/// have, or a new one.
pub fn of(inode: &Arc<dyn Inode>) -> Arc<FileMemory> {
    let key = Arc::as_ptr(inode) as *const () as usize;
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
    object
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
        let _ = frame.write(0, &buffer[..done]);
        Some(frame)
    }
}

impl vm::SharedObject for FileMemory {
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
            let mut current = [0u8; PAGE_SIZE as usize];
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
    }
}
