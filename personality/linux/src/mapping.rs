//! What `mmap` maps of a descriptor. The kernel's core owns address
//! spaces and makes the mapping (`kernel/src/syscalls/memory.rs`); the
//! personality owns descriptors, so it answers what a descriptor's
//! mapping reads, with Linux's errors (`mmap(2)`):
//! - `EBADF` for no such descriptor;
//! - `EACCES` for a file not open for reading, or a shared writable
//!   mapping of a file not open for writing;
//! - `ENODEV` for what cannot be mapped (pipes, directories, most
//!   devices).

use alloc::sync::Arc;

use vfs::{Errno, FileType, Inode};

use crate::Personality;

/// What a mapping of a descriptor holds.
pub enum MapSource {
    /// `/dev/zero`: zero-filled memory, as if anonymous (shared or
    /// private, as asked).
    Zeros,
    /// A regular file's bytes, read with `Inode::read_at`.
    File {
        /// The file.
        inode: Arc<dyn Inode>,
        /// Whether the descriptor was opened for writing: a shared
        /// mapping may then be made writable (`mprotect`), its writes
        /// reaching the file.
        writable: bool,
    },
}

impl Personality {
    /// What process `pid` maps through descriptor `fd` (`mmap`'s fifth
    /// argument), `shared` (`MAP_SHARED`) or private, `writable`
    /// (`PROT_WRITE`) or not.
    pub fn mapping_source(
        &self,
        pid: u64,
        fd: u64,
        shared: bool,
        writable: bool,
    ) -> Result<MapSource, Errno> {
        let files = self.files(pid).ok_or(Errno::ESRCH)?;
        let file = files.fds.get(fd as i64)?;
        if !file.is_readable() || (shared && writable && !file.is_writable()) {
            return Err(Errno::EACCES);
        }
        let metadata = file.metadata();
        match metadata.file_type() {
            FileType::Regular => Ok(MapSource::File {
                inode: file.inode().clone(),
                writable: file.is_writable(),
            }),
            FileType::CharDevice if metadata.rdev == vfs::devices::ZERO_DEV => Ok(MapSource::Zeros),
            _ => Err(Errno::ENODEV),
        }
    }
}
