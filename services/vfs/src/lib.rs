//! The virtual file system of Spindle's Linux personality, and the
//! in-memory file system that the initramfs is unpacked into.
//!
//! Linux semantics throughout: errors are Linux [`Errno`] values, modes
//! are `S_IF*` bits, `stat`/`statx` and `getdents64` records have the
//! x86_64 user-space layout, and path resolution follows `namei`'s rules
//! (".." stops at the root and crosses mount points, 40 symbolic links at
//! most, `NAME_MAX` 255, `PATH_MAX` 4096).
//!
//! The pieces:
//! - [`FileSystem`] and [`Inode`]: what a file system implements; [`RamFs`]
//!   is the first, a disk file system comes later.
//! - [`Vfs`]: the mount table and device registry, with the operations on
//!   paths ([`Vfs::resolve`], [`Vfs::open`], [`Vfs::mkdir`],
//!   [`Vfs::rename`], ...) taking a per-process [`PathContext`], and the
//!   way back from inodes and open files to paths ([`Vfs::path_of`],
//!   [`Vfs::open_file_path`], [`Vfs::mounts`]) that `getcwd` and `/proc`
//!   need.
//! - [`OpenFile`]: an open file description (offset, flags, `read`,
//!   `write`, `lseek`, `getdents64`).
//! - [`Device`]: character device drivers; [`devices`] has the memory
//!   devices (`null`, `zero`, `full`, `urandom`).
//! - [`populate_from_cpio`]: the initramfs into a [`RamFs`], files
//!   borrowing from the archive until written.
//!
//! No crate was taken for the file system: the no_std VFS crates found
//! (e.g. `vfs`, `rust-fatfs` and the like) are either `std`-only, bring
//! their own error types instead of Linux errnos, or model paths as UTF-8
//! strings where Linux names are bytes. Locks are `spin`'s, as everywhere
//! in the kernel.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

mod cpio;
mod device;
pub mod devices;
mod dirent;
mod file;
pub mod flags;
mod inode;
mod mapped;
mod metadata;
mod names;
mod namespace;
mod open;
mod path;
mod ramfs;
pub mod stat;
mod vfs;

#[cfg(test)]
mod tests;

pub use cpio::{populate_from_cpio, PopulateError};
pub use device::{Device, DeviceRegistry, FifoOpener, Readiness, WaitQueue};
pub use dirent::{
    decode_dirents64, dirent64_length, encode_dirent64, Dirent64, DIRENT64_HEADER_BYTES,
};
pub use file::{OpenFile, ReleaseObserver};
pub use inode::{
    same_inode, Allocation, AttributeWrite, DirEntry, FileSystem, Inode, NewNode, NodeKind,
};
pub use linux_abi::Errno;
pub use mapped::{set_mapped_pages, MappedPages};
pub use metadata::{
    major, makedev, minor, FileType, Metadata, SetAttributes, TimeChange, Timespec,
    MODE_PERMISSION_BITS, S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG, S_IFSOCK,
};
pub use names::MountEntry;
pub use path::{LastComponent, ParentAndName, MAX_SYMLINK_FOLLOWS, NAME_MAX, PATH_MAX};
pub use ramfs::{Clock, RamFs, RamInode};
pub use stat::{Stat, Statx, STATX_BASIC_STATS, STATX_BYTES, STAT_BYTES};
pub use vfs::{PathContext, Vfs, MAY_EXEC, MAY_READ, MAY_WRITE};
