//! The page cache: the pages of files whose bytes never change, each held
//! once in a frame and mapped read-only into every address space that
//! maps the file.
//!
//! Without it, `execve` of busybox copied its 2 MiB into fresh frames
//! every time; Linux maps its page cache instead. The files cached are
//! those the file system lends as a `&'static [u8]` (`Inode::borrowed_contents`:
//! a boot-archive file not yet written to). The same slice always holds
//! the same bytes, so the slice itself (its address and length) is the
//! key, and an entry never goes stale: a file that is written stops
//! lending its bytes and is no longer looked up under that key.
//!
//! Sharing is safe because a cached frame is only ever mapped read-only:
//! [`PageCache::map`] refuses a writable protection, and hal keeps a
//! frame that another owner shares read-only under `mprotect` (a write to
//! a private writable mapping of it faults and gets a private copy:
//! copy-on-write). The cache owns one reference to each frame; a mapping
//! owns another, so clearing the cache never frees a page still mapped.
//!
//! The cache holds at most a fixed number of frames; past it, pages are
//! still mapped, each as a private copy, so a full cache costs speed,
//! never correctness.
#![no_std]

extern crate alloc;

use alloc::{collections::BTreeMap, vec::Vec};
use core::sync::atomic::{AtomicUsize, Ordering};

use hal::{
    address_space::{AddressSpace, UserProtection},
    memory::{self, Frame, MapError, PAGE_SIZE},
};
use spin::Mutex;

/// A cached file: its bytes' address and length.
type FileKey = (usize, usize);

/// Why pages could not be mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheError {
    /// A writable protection was asked for: cached frames are shared.
    Writable,
    /// A page asked for lies beyond the file's last page.
    BeyondFile,
    /// Mapping failed (no memory, or the page was mapped already).
    Map(MapError),
}

impl core::fmt::Display for CacheError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CacheError::Writable => f.write_str("cached pages are mapped read-only"),
            CacheError::BeyondFile => f.write_str("a page beyond the end of the file"),
            CacheError::Map(error) => write!(f, "mapping failed: {error}"),
        }
    }
}

impl From<MapError> for CacheError {
    fn from(error: MapError) -> Self {
        CacheError::Map(error)
    }
}

/// The page cache.
pub struct PageCache {
    /// Each file's pages, by page index, filled on first use.
    files: Mutex<BTreeMap<FileKey, Vec<Option<Frame>>>>,
    /// Frames the cache holds.
    held: AtomicUsize,
    /// The most frames it may hold.
    limit: usize,
}

/// The number of pages `bytes` spans.
fn page_count(bytes: &[u8]) -> usize {
    bytes.len().div_ceil(PAGE_SIZE as usize)
}

/// A frame holding page `index` of `file` (zeros past the file's end).
fn filled_frame(file: &[u8], index: usize) -> Result<Frame, MapError> {
    let frame = memory::allocate_frame().ok_or(MapError::OutOfFrames)?;
    let start = index * PAGE_SIZE as usize;
    let end = (start + PAGE_SIZE as usize).min(file.len());
    if let Some(bytes) = file.get(start..end) {
        // Fits: at most one page, at offset 0.
        let _ = frame.write(0, bytes);
    }
    Ok(frame)
}

impl PageCache {
    /// An empty cache that will hold at most `limit` frames.
    pub const fn new(limit: usize) -> Self {
        PageCache {
            files: Mutex::new(BTreeMap::new()),
            held: AtomicUsize::new(0),
            limit,
        }
    }

    /// Frames the cache holds now.
    pub fn frames_held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Files with at least one page cached.
    pub fn files_cached(&self) -> usize {
        self.files.lock().len()
    }

    /// Maps `count` pages of `file`, from page `first` on, at `virt` in
    /// `space` (page aligned) with `protection`, which must not be
    /// writable. Pages are shared with the cache (filled on first use);
    /// when the cache is full, each page gets a private copy instead.
    /// On an error, the pages mapped before it stay mapped: the caller
    /// drops the address space, or unmaps the range.
    pub fn map(
        &self,
        space: &AddressSpace,
        file: &'static [u8],
        first: usize,
        virt: u64,
        count: usize,
        protection: UserProtection,
    ) -> Result<(), CacheError> {
        if protection.is_writable() {
            return Err(CacheError::Writable);
        }
        let pages = page_count(file);
        if first.checked_add(count).is_none_or(|end| end > pages) {
            return Err(CacheError::BeyondFile);
        }
        let mut files = self.files.lock();
        let key = (file.as_ptr() as usize, file.len());
        let cached = files.entry(key).or_default();
        if cached.len() < pages {
            cached.resize_with(pages, || None);
        }
        for (step, index) in (first..first + count).enumerate() {
            let page = virt + step as u64 * PAGE_SIZE;
            if cached[index].is_none() && self.held.load(Ordering::Relaxed) < self.limit {
                cached[index] = Some(filled_frame(file, index)?);
                self.held.fetch_add(1, Ordering::Relaxed);
            }
            match &cached[index] {
                Some(frame) => space.map_frame(page, frame, protection)?,
                None => {
                    // Full: a private copy, mapped and let go by us (the
                    // page tables then own it alone).
                    let frame = filled_frame(file, index)?;
                    let mapped = space.map_frame(page, &frame, protection);
                    memory::free_frame(frame);
                    mapped?;
                }
            }
        }
        if cached.iter().all(Option::is_none) {
            files.remove(&key);
        }
        Ok(())
    }

    /// Holds on `count` pages of `file` from page `first` on, in order:
    /// each a hold on the cached frame (filled on first use), or a
    /// private copy when the cache is full. The caller maps them
    /// read-only (a writable private mapping copies a page on its first
    /// write) and frees its holds after (`hal::memory::free_frame`).
    pub fn frames(
        &self,
        file: &'static [u8],
        first: usize,
        count: usize,
    ) -> Result<Vec<Frame>, CacheError> {
        let pages = page_count(file);
        if first.checked_add(count).is_none_or(|end| end > pages) {
            return Err(CacheError::BeyondFile);
        }
        let mut holds = Vec::new();
        if holds.try_reserve_exact(count).is_err() {
            return Err(CacheError::Map(MapError::OutOfFrames));
        }
        let mut files = self.files.lock();
        let key = (file.as_ptr() as usize, file.len());
        let cached = files.entry(key).or_default();
        if cached.len() < pages {
            cached.resize_with(pages, || None);
        }
        let mut result = Ok(());
        for (index, slot) in cached.iter_mut().enumerate().skip(first).take(count) {
            if slot.is_none() && self.held.load(Ordering::Relaxed) < self.limit {
                match filled_frame(file, index) {
                    Ok(frame) => {
                        *slot = Some(frame);
                        self.held.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(error) => {
                        result = Err(CacheError::Map(error));
                        break;
                    }
                }
            }
            let hold = match slot {
                Some(frame) => Ok(frame.share()),
                None => filled_frame(file, index),
            };
            match hold {
                Ok(frame) => holds.push(frame),
                Err(error) => {
                    result = Err(CacheError::Map(error));
                    break;
                }
            }
        }
        if cached.iter().all(Option::is_none) {
            files.remove(&key);
        }
        drop(files);
        match result {
            Ok(()) => Ok(holds),
            Err(error) => {
                for frame in holds {
                    memory::free_frame(frame);
                }
                Err(error)
            }
        }
    }

    /// Lets go of every cached frame (pages still mapped stay, owned by
    /// their mappings); returns how many the cache held.
    pub fn clear(&self) -> usize {
        let files = core::mem::take(&mut *self.files.lock());
        let mut released = 0;
        for frame in files.into_values().flatten().flatten() {
            memory::free_frame(frame);
            released += 1;
        }
        self.held.fetch_sub(released, Ordering::Relaxed);
        released
    }
}
