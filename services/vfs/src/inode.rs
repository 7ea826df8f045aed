//! The interface between the VFS and a file system: [`FileSystem`] (one
//! mounted instance) and [`Inode`] (one file in it). The in-memory
//! [`RamFs`](crate::RamFs) is the first implementation; a disk file system
//! implements the same pair.
//!
//! Division of labour (as in Linux's VFS): the file system enforces what
//! needs an atomic view of its own tree (existence, `EEXIST`, emptiness,
//! type rules of rename, link counts); the VFS does what is independent of
//! the file system (path walking, mount points, permissions, `EXDEV`,
//! "a directory into itself", names "." and "..").

use alloc::{sync::Arc, vec::Vec};
use core::any::Any;

use crate::{
    metadata::{FileType, Metadata, SetAttributes},
    Errno,
};

/// One entry of a directory listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirEntry<'a> {
    /// The entry's inode number.
    pub ino: u64,
    /// The entry's type.
    pub file_type: FileType,
    /// The entry's name (no '/' or NUL; "." and ".." included).
    pub name: &'a [u8],
}

/// What `fallocate` asks of a regular file's range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allocation {
    /// Allocate it, growing the file to its end if shorter (mode 0).
    Extend,
    /// Allocate it without changing the size (`FALLOC_FL_KEEP_SIZE`).
    KeepSize,
    /// Free it: its bytes within the file read as zeros, the size stays
    /// (`FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`).
    PunchHole,
    /// A mode no file system here does (zeroing, collapsing, inserting
    /// or unsharing a range): `EOPNOTSUPP` from each, as from tmpfs.
    Other,
}

/// How [`Inode::set_extended_attribute`] may set an attribute
/// (`setxattr`'s flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttributeWrite {
    /// Make it or replace it (no flag).
    Any,
    /// Only make it: `EEXIST` if it is there (`XATTR_CREATE`).
    Create,
    /// Only replace it: `ENODATA` if it is not (`XATTR_REPLACE`).
    Replace,
}

/// What [`Inode::create`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind<'a> {
    /// An empty regular file.
    Regular,
    /// An empty directory.
    Directory,
    /// A symbolic link to this target.
    Symlink(&'a [u8]),
    /// A character device node for this device number.
    CharDevice(u64),
    /// A block device node for this device number.
    BlockDevice(u64),
    /// A FIFO.
    Fifo,
    /// A socket node.
    Socket,
}

impl NodeKind<'_> {
    /// The type of inode this kind makes.
    pub fn file_type(&self) -> FileType {
        match self {
            NodeKind::Regular => FileType::Regular,
            NodeKind::Directory => FileType::Directory,
            NodeKind::Symlink(_) => FileType::Symlink,
            NodeKind::CharDevice(_) => FileType::CharDevice,
            NodeKind::BlockDevice(_) => FileType::BlockDevice,
            NodeKind::Fifo => FileType::Fifo,
            NodeKind::Socket => FileType::Socket,
        }
    }
}

/// A new inode's kind, permissions and owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewNode<'a> {
    /// What to make.
    pub kind: NodeKind<'a>,
    /// Permission bits (the caller has applied the umask).
    pub permissions: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
}

/// One mounted file system instance.
pub trait FileSystem: Send + Sync {
    /// Its root directory.
    fn root(&self) -> Arc<dyn Inode>;
    /// Its device number (`st_dev` of every inode in it); unique among
    /// mounted file systems, since `(dev, ino)` identifies a file.
    fn dev(&self) -> u64;
    /// The type's name as `/proc/mounts` shows it, e.g. `"ramfs"`.
    fn type_name(&self) -> &'static str;
    /// Whether writes are refused with `EROFS`.
    fn is_read_only(&self) -> bool {
        false
    }
}

/// One file (of any type) in a file system.
///
/// Names passed in are single components: never empty, never "." or ".."
/// (except to [`Inode::lookup`]), without '/' or NUL, at most 255 bytes;
/// the VFS checks that. Directory operations on a non-directory fail with
/// `ENOTDIR`, data operations on a directory with `EISDIR`; the defaults
/// give those answers so that a simple file system implements only what
/// it has.
pub trait Inode: Send + Sync + Any {
    /// The file system's device number.
    fn dev(&self) -> u64;
    /// The inode number.
    fn ino(&self) -> u64;
    /// The inode's type, which never changes.
    fn file_type(&self) -> FileType;
    /// A snapshot of the metadata.
    fn metadata(&self) -> Metadata;
    /// `self` as `Any`, so that a file system can recognise its own inodes
    /// (e.g. the target directory of a rename).
    fn as_any(&self) -> &dyn Any;
    /// The file's whole contents when they are borrowed from memory that
    /// never changes while the file borrows it (a file of the boot
    /// archive not yet written to), else `None`. A cache may key on the
    /// slice: the same slice always holds the same bytes.
    fn borrowed_contents(&self) -> Option<&'static [u8]> {
        None
    }

    /// The child `name`; "." is the directory itself and ".." its parent
    /// (the root's parent is the root).
    fn lookup(&self, _name: &[u8]) -> Result<Arc<dyn Inode>, Errno> {
        Err(Errno::ENOTDIR)
    }
    /// Makes child `name` (`EEXIST` if there is one).
    fn create(&self, _name: &[u8], _node: NewNode<'_>) -> Result<Arc<dyn Inode>, Errno> {
        Err(Errno::ENOTDIR)
    }
    /// Makes `name` another hard link to `target` (an inode of this file
    /// system, not a directory).
    fn link(&self, _name: &[u8], _target: &Arc<dyn Inode>) -> Result<(), Errno> {
        Err(Errno::ENOTDIR)
    }
    /// Removes the non-directory `name` (`EISDIR` for a directory).
    fn unlink(&self, _name: &[u8]) -> Result<(), Errno> {
        Err(Errno::ENOTDIR)
    }
    /// Removes the empty directory `name` (`ENOTDIR`, `ENOTEMPTY`).
    fn rmdir(&self, _name: &[u8]) -> Result<(), Errno> {
        Err(Errno::ENOTDIR)
    }
    /// Moves `old_name` to `new_name` in `new_parent` (a directory of this
    /// file system), replacing a file there, or an empty directory if the
    /// moved inode is a directory (`ENOTDIR`, `EISDIR`, `ENOTEMPTY`
    /// otherwise). Renaming a name to another link of the same inode does
    /// nothing. The VFS has ruled out a directory into its own subtree.
    fn rename(
        &self,
        _old_name: &[u8],
        _new_parent: &Arc<dyn Inode>,
        _new_name: &[u8],
    ) -> Result<(), Errno> {
        Err(Errno::ENOTDIR)
    }
    /// Allocates or frees the bytes `offset..offset + length` of a
    /// regular file (`fallocate`); the caller has checked the file type
    /// and that the range ends within `i64`. `EOPNOTSUPP` where the file
    /// system cannot.
    fn allocate(&self, _how: Allocation, _offset: u64, _length: u64) -> Result<(), Errno> {
        Err(Errno::EOPNOTSUPP)
    }
    /// Swaps `name` here and `other_name` in `other_parent` (a directory
    /// of this file system) in one step (`renameat2`'s
    /// `RENAME_EXCHANGE`): both must exist (`ENOENT`). `EINVAL` where the
    /// file system cannot (Linux's answer for one without the
    /// operation). The VFS has ruled out a directory into its own
    /// subtree.
    fn exchange(
        &self,
        _name: &[u8],
        _other_parent: &Arc<dyn Inode>,
        _other_name: &[u8],
    ) -> Result<(), Errno> {
        Err(Errno::EINVAL)
    }
    /// Calls `sink(entry, next_offset)` for the entries from position
    /// `offset` on ("." is 0, ".." 1), until it returns `false` or the
    /// entries run out. `next_offset` is where a later call resumes.
    /// Positions are indexes, so entries added or removed between calls
    /// may be skipped or seen twice (POSIX leaves that unspecified); the
    /// others are listed once.
    fn readdir(
        &self,
        _offset: u64,
        _sink: &mut dyn FnMut(DirEntry<'_>, u64) -> bool,
    ) -> Result<(), Errno> {
        Err(Errno::ENOTDIR)
    }

    /// A symbolic link's target (`EINVAL` for other types).
    fn readlink(&self) -> Result<Vec<u8>, Errno> {
        Err(Errno::EINVAL)
    }
    /// Reads from byte `offset`; 0 at or past the end.
    fn read_at(&self, _offset: u64, _buf: &mut [u8]) -> Result<usize, Errno> {
        Err(self.data_error())
    }
    /// Writes at byte `offset`, growing the file; a gap past the old end
    /// reads as zeros.
    fn write_at(&self, _offset: u64, _buf: &[u8]) -> Result<usize, Errno> {
        Err(self.data_error())
    }
    /// Writes at the end of the file, found atomically with the write (for
    /// `O_APPEND`); the count written and the offset after it. The default
    /// reads the size first, which is only atomic for a single writer.
    fn append(&self, buf: &[u8]) -> Result<(usize, u64), Errno> {
        let end = self.metadata().size;
        let count = self.write_at(end, buf)?;
        Ok((count, end + count as u64))
    }
    /// Sets the size, cutting or zero-extending.
    fn truncate(&self, _size: u64) -> Result<(), Errno> {
        Err(self.data_error())
    }
    /// Changes mode, owner or times.
    fn set_attributes(&self, changes: &SetAttributes) -> Result<(), Errno>;

    /// Extended attribute `name` (its whole name, namespace prefix
    /// included): its value, `ENODATA` if it has none. The default keeps
    /// none. Who may read which namespace is the caller's rule.
    fn extended_attribute(&self, _name: &[u8]) -> Result<Vec<u8>, Errno> {
        Err(Errno::ENODATA)
    }
    /// Sets extended attribute `name` to `value` as `how` allows;
    /// `EOPNOTSUPP` where the file system keeps none (the default).
    fn set_extended_attribute(
        &self,
        _name: &[u8],
        _value: &[u8],
        _how: AttributeWrite,
    ) -> Result<(), Errno> {
        Err(Errno::EOPNOTSUPP)
    }
    /// Removes extended attribute `name` (`ENODATA` if it has none).
    fn remove_extended_attribute(&self, _name: &[u8]) -> Result<(), Errno> {
        Err(Errno::ENODATA)
    }
    /// The names of its extended attributes, in a stable order.
    fn extended_attribute_names(&self) -> Vec<Vec<u8>> {
        Vec::new()
    }

    /// The error for a data operation this inode does not support: `EISDIR`
    /// for a directory, `EINVAL` otherwise (as Linux gives for `truncate`
    /// of a device node).
    fn data_error(&self) -> Errno {
        if self.file_type() == FileType::Directory {
            Errno::EISDIR
        } else {
            Errno::EINVAL
        }
    }
}

/// Whether `a` and `b` are the same file (same device and inode number).
pub fn same_inode(a: &dyn Inode, b: &dyn Inode) -> bool {
    a.dev() == b.dev() && a.ino() == b.ino()
}
