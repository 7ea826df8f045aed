//! The in-memory file system (Linux's ramfs/tmpfs): every inode lives in
//! the heap, directories are ordered maps of names to inodes, and a regular
//! file's bytes are either a `Vec` or a borrowed `&'static [u8]`.
//!
//! Borrowed contents are how the initramfs is mounted without doubling its
//! memory: a file filled from the boot archive points into the archive and
//! is copied only on its first write or growth (copy-on-write). Shrinking
//! keeps borrowing a prefix.
//!
//! Locking: each inode's state sits under its own `RwLock`, and every
//! change to the tree's shape (create, link, unlink, rmdir, rename) first
//! takes the file system's `tree` mutex. So structure-changing operations
//! see a tree nobody else is changing and may take directory locks one
//! after another; no code path holds two inode locks at once, so no lock
//! order is needed. Access times are not updated on reads (as with the
//! `noatime` mount option), which keeps reads on a shared lock.

use alloc::{collections::BTreeMap, sync::Arc, sync::Weak, vec::Vec};
use core::{
    any::Any,
    sync::atomic::{AtomicU64, Ordering},
};

use spin::{Mutex, RwLock};

use crate::{
    inode::{Allocation, AttributeWrite, DirEntry, FileSystem, Inode, NewNode, NodeKind},
    metadata::{FileType, Metadata, SetAttributes, TimeChange, Timespec, MODE_PERMISSION_BITS},
    Errno,
};

/// The source of the current time for timestamps.
pub type Clock = Arc<dyn Fn() -> Timespec + Send + Sync>;

/// Block size reported in `st_blksize` (and the unit `st_blocks` counts
/// allocation in).
const BLOCK_SIZE: u64 = 4096;
/// Size reported per directory entry, as tmpfs does (`BOGO_DIRENT_SIZE`),
/// so that `st_size` of a directory grows with its contents.
const DIRECTORY_ENTRY_SIZE: u64 = 20;

struct Shared {
    dev: u64,
    next_ino: AtomicU64,
    clock: Clock,
    /// Serialises changes to the tree's shape (see the module doc).
    tree: Mutex<()>,
    max_file_size: u64,
}

impl Shared {
    fn now(&self) -> Timespec {
        (self.clock)()
    }
}

/// An in-memory file system instance.
pub struct RamFs {
    shared: Arc<Shared>,
    root: Arc<RamInode>,
}

/// A regular file's bytes.
enum Data {
    /// Borrowed from memory that outlives the file system (the boot
    /// archive); copied on first write.
    Static(&'static [u8]),
    /// Owned.
    Owned(Vec<u8>),
}

impl Data {
    fn bytes(&self) -> &[u8] {
        match self {
            Data::Static(bytes) => bytes,
            Data::Owned(bytes) => bytes,
        }
    }

    /// The owned bytes, copying borrowed ones first, with room for
    /// `capacity` bytes in all; `ENOSPC` when memory runs out (a huge
    /// sparse write must not abort the kernel).
    fn owned(&mut self, capacity: usize) -> Result<&mut Vec<u8>, Errno> {
        if let Data::Static(bytes) = *self {
            let mut copy = Vec::new();
            copy.try_reserve_exact(capacity.max(bytes.len()))
                .map_err(|_| Errno::ENOSPC)?;
            copy.extend_from_slice(bytes);
            *self = Data::Owned(copy);
        }
        match self {
            Data::Owned(bytes) => {
                let extra = capacity.saturating_sub(bytes.len());
                bytes.try_reserve(extra).map_err(|_| Errno::ENOSPC)?;
                Ok(bytes)
            }
            // Made owned just above.
            Data::Static(_) => Err(Errno::EIO),
        }
    }
}

struct Directory {
    entries: BTreeMap<Vec<u8>, Arc<RamInode>>,
    /// The parent; the root's is itself. Weak so that the tree has no
    /// reference cycles.
    parent: Weak<RamInode>,
}

impl Directory {
    /// Removes entry `name`. A map whose last entry goes is replaced by a
    /// new one: a `BTreeMap` keeps its root node after its last removal,
    /// and a directory emptied (as `/tmp` often is) should hold nothing.
    fn remove(&mut self, name: &[u8]) {
        self.entries.remove(name);
        if self.entries.is_empty() {
            self.entries = BTreeMap::new();
        }
    }
}

enum Body {
    Directory(Directory),
    Regular(Data),
    Symlink(Vec<u8>),
    /// Device nodes, FIFOs and sockets: metadata only.
    Special,
}

struct State {
    mode: u32,
    nlink: u64,
    uid: u32,
    gid: u32,
    rdev: u64,
    atime: Timespec,
    mtime: Timespec,
    ctime: Timespec,
    body: Body,
    /// Extended attributes by whole name (`user.*`, `security.*`, ...).
    attributes: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl State {
    fn directory(&self) -> Result<&Directory, Errno> {
        match &self.body {
            Body::Directory(directory) => Ok(directory),
            _ => Err(Errno::ENOTDIR),
        }
    }

    fn directory_mut(&mut self) -> Result<&mut Directory, Errno> {
        match &mut self.body {
            Body::Directory(directory) => Ok(directory),
            _ => Err(Errno::ENOTDIR),
        }
    }

    fn touch_contents(&mut self, now: Timespec) {
        self.mtime = now;
        self.ctime = now;
    }
}

/// One inode of a [`RamFs`].
pub struct RamInode {
    ino: u64,
    file_type: FileType,
    shared: Arc<Shared>,
    /// This inode's own `Arc`, for `lookup(".")`.
    me: Weak<RamInode>,
    state: RwLock<State>,
}

fn check_name(name: &[u8]) -> Result<(), Errno> {
    if name.is_empty() || name == b"." || name == b".." || name.contains(&b'/') || name.contains(&0)
    {
        return Err(Errno::EINVAL);
    }
    if name.len() > crate::path::NAME_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    Ok(())
}

impl RamFs {
    /// An empty file system with device number `dev` whose root directory
    /// has mode 0755 and owner root, taking times from `clock`.
    pub fn new(dev: u64, clock: Clock) -> Arc<RamFs> {
        RamFs::with_max_file_size(dev, clock, i64::MAX as u64)
    }

    /// As [`RamFs::new`], with writes and truncations beyond `max_file_size`
    /// bytes failing with `EFBIG` (Linux's `s_maxbytes`).
    pub fn with_max_file_size(dev: u64, clock: Clock, max_file_size: u64) -> Arc<RamFs> {
        let shared = Arc::new(Shared {
            dev,
            next_ino: AtomicU64::new(2),
            clock,
            tree: Mutex::new(()),
            max_file_size,
        });
        let now = shared.now();
        let root = Arc::new_cyclic(|me: &Weak<RamInode>| RamInode {
            ino: 1,
            file_type: FileType::Directory,
            shared: shared.clone(),
            me: me.clone(),
            state: RwLock::new(State {
                mode: FileType::Directory.mode_bits() | 0o755,
                nlink: 2,
                uid: 0,
                gid: 0,
                rdev: 0,
                atime: now,
                mtime: now,
                ctime: now,
                body: Body::Directory(Directory {
                    entries: BTreeMap::new(),
                    parent: me.clone(),
                }),
                attributes: BTreeMap::new(),
            }),
        });
        Arc::new(RamFs { shared, root })
    }

    /// The root directory as a [`RamInode`].
    pub fn root_inode(&self) -> &Arc<RamInode> {
        &self.root
    }
}

impl FileSystem for RamFs {
    fn root(&self) -> Arc<dyn Inode> {
        self.root.clone()
    }

    fn dev(&self) -> u64 {
        self.shared.dev
    }

    fn type_name(&self) -> &'static str {
        "ramfs"
    }
}

impl RamInode {
    fn me(&self) -> Result<Arc<RamInode>, Errno> {
        // Only fails while the inode is being dropped, when nobody can
        // call a method on it.
        self.me.upgrade().ok_or(Errno::ENOENT)
    }

    /// `inode` as one of this file system's inodes, or `EXDEV`.
    fn ours<'a>(&self, inode: &'a Arc<dyn Inode>) -> Result<&'a RamInode, Errno> {
        match inode.as_any().downcast_ref::<RamInode>() {
            Some(ram) if Arc::ptr_eq(&ram.shared, &self.shared) => Ok(ram),
            _ => Err(Errno::EXDEV),
        }
    }

    fn child(&self, name: &[u8]) -> Result<Arc<RamInode>, Errno> {
        let state = self.state.read();
        state
            .directory()?
            .entries
            .get(name)
            .cloned()
            .ok_or(Errno::ENOENT)
    }

    fn is_empty_directory(&self) -> bool {
        match &self.state.read().body {
            Body::Directory(directory) => directory.entries.is_empty(),
            _ => false,
        }
    }

    /// Makes this regular file's contents `data`, borrowed until the first
    /// write (see the module doc); `EINVAL` for other types.
    pub fn set_static_contents(&self, data: &'static [u8]) -> Result<(), Errno> {
        let now = self.shared.now();
        let mut state = self.state.write();
        match &mut state.body {
            Body::Regular(contents) => *contents = Data::Static(data),
            _ => return Err(Errno::EINVAL),
        }
        state.touch_contents(now);
        Ok(())
    }

    /// Writes `buf` at `offset`, or at the end if `None` (found under the
    /// same lock, so appends from several descriptions never overlap);
    /// the count written and the offset after it.
    fn write_locked(&self, offset: Option<u64>, buf: &[u8]) -> Result<(usize, u64), Errno> {
        let now = self.shared.now();
        let mut state = self.state.write();
        let Body::Regular(data) = &mut state.body else {
            return Err(self.data_error());
        };
        let offset = offset.unwrap_or(data.bytes().len() as u64);
        let max = self.shared.max_file_size;
        if offset >= max && !buf.is_empty() {
            return Err(Errno::EFBIG);
        }
        // Linux writes what fits below the limit.
        let count = (buf.len() as u64).min(max.saturating_sub(offset)) as usize;
        if count == 0 {
            return Ok((0, offset));
        }
        let end = usize::try_from(offset + count as u64).map_err(|_| Errno::EFBIG)?;
        let start = end - count;
        let bytes = data.owned(end)?;
        if bytes.len() < end {
            // A write past the end leaves a hole that reads as zeros.
            bytes.resize(end, 0);
        }
        bytes[start..end].copy_from_slice(&buf[..count]);
        state.touch_contents(now);
        Ok((count, end as u64))
    }

    /// Whether this regular file still borrows its contents (no private
    /// copy has been made).
    pub fn is_borrowing(&self) -> bool {
        matches!(self.state.read().body, Body::Regular(Data::Static(_)))
    }
}

impl Inode for RamInode {
    fn dev(&self) -> u64 {
        self.shared.dev
    }

    fn ino(&self) -> u64 {
        self.ino
    }

    fn file_type(&self) -> FileType {
        self.file_type
    }

    fn metadata(&self) -> Metadata {
        let state = self.state.read();
        let (size, allocated) = match &state.body {
            Body::Directory(directory) => (
                (directory.entries.len() as u64 + 2) * DIRECTORY_ENTRY_SIZE,
                0,
            ),
            Body::Regular(data) => {
                let size = data.bytes().len() as u64;
                (size, size.div_ceil(BLOCK_SIZE) * BLOCK_SIZE)
            }
            Body::Symlink(target) => (target.len() as u64, 0),
            Body::Special => (0, 0),
        };
        Metadata {
            dev: self.shared.dev,
            ino: self.ino,
            mode: state.mode,
            nlink: state.nlink,
            uid: state.uid,
            gid: state.gid,
            rdev: state.rdev,
            size,
            blksize: BLOCK_SIZE,
            blocks: allocated / 512,
            atime: state.atime,
            mtime: state.mtime,
            ctime: state.ctime,
        }
    }

    fn borrowed_contents(&self) -> Option<&'static [u8]> {
        match self.state.read().body {
            Body::Regular(Data::Static(bytes)) => Some(bytes),
            _ => None,
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn lookup(&self, name: &[u8]) -> Result<Arc<dyn Inode>, Errno> {
        let state = self.state.read();
        let directory = state.directory()?;
        let found = match name {
            b"." => self.me.upgrade(),
            b".." => directory.parent.upgrade(),
            _ => directory.entries.get(name).cloned(),
        };
        found
            .map(|inode| inode as Arc<dyn Inode>)
            .ok_or(Errno::ENOENT)
    }

    fn create(&self, name: &[u8], node: NewNode<'_>) -> Result<Arc<dyn Inode>, Errno> {
        check_name(name)?;
        let _tree = self.shared.tree.lock();
        let now = self.shared.now();
        let mut state = self.state.write();
        if state.nlink == 0 {
            // Creating in a removed directory.
            return Err(Errno::ENOENT);
        }
        let me = self.me.clone();
        let directory = state.directory_mut()?;
        if directory.entries.contains_key(name) {
            return Err(Errno::EEXIST);
        }
        let file_type = node.kind.file_type();
        let (body, nlink, rdev) = match node.kind {
            NodeKind::Directory => (
                Body::Directory(Directory {
                    entries: BTreeMap::new(),
                    parent: me,
                }),
                2,
                0,
            ),
            NodeKind::Regular => (Body::Regular(Data::Owned(Vec::new())), 1, 0),
            NodeKind::Symlink(target) => (Body::Symlink(target.to_vec()), 1, 0),
            NodeKind::CharDevice(rdev) | NodeKind::BlockDevice(rdev) => (Body::Special, 1, rdev),
            NodeKind::Fifo | NodeKind::Socket => (Body::Special, 1, 0),
        };
        let permissions = if file_type == FileType::Symlink {
            // Linux symbolic links are always 0777.
            0o777
        } else {
            node.permissions & MODE_PERMISSION_BITS
        };
        let inode = Arc::new_cyclic(|me| RamInode {
            ino: self.shared.next_ino.fetch_add(1, Ordering::Relaxed),
            file_type,
            shared: self.shared.clone(),
            me: me.clone(),
            state: RwLock::new(State {
                mode: file_type.mode_bits() | permissions,
                nlink,
                uid: node.uid,
                gid: node.gid,
                rdev,
                atime: now,
                mtime: now,
                ctime: now,
                body,
                attributes: BTreeMap::new(),
            }),
        });
        directory.entries.insert(name.to_vec(), inode.clone());
        if file_type == FileType::Directory {
            // The child's "..".
            state.nlink += 1;
        }
        state.touch_contents(now);
        Ok(inode)
    }

    fn link(&self, name: &[u8], target: &Arc<dyn Inode>) -> Result<(), Errno> {
        check_name(name)?;
        let target = self.ours(target)?;
        if target.file_type == FileType::Directory {
            return Err(Errno::EPERM);
        }
        let target = target.me()?;
        let _tree = self.shared.tree.lock();
        let now = self.shared.now();
        {
            let mut state = self.state.write();
            if state.nlink == 0 {
                return Err(Errno::ENOENT);
            }
            let directory = state.directory_mut()?;
            if directory.entries.contains_key(name) {
                return Err(Errno::EEXIST);
            }
            if target.state.read().nlink == 0 {
                // An open but deleted file cannot get a name back.
                return Err(Errno::ENOENT);
            }
            directory.entries.insert(name.to_vec(), target.clone());
            state.touch_contents(now);
        }
        let mut target_state = target.state.write();
        target_state.nlink += 1;
        target_state.ctime = now;
        Ok(())
    }

    fn unlink(&self, name: &[u8]) -> Result<(), Errno> {
        check_name(name)?;
        let _tree = self.shared.tree.lock();
        let child = self.child(name)?;
        if child.file_type == FileType::Directory {
            return Err(Errno::EISDIR);
        }
        let now = self.shared.now();
        {
            let mut state = self.state.write();
            state.directory_mut()?.remove(name);
            state.touch_contents(now);
        }
        let mut child_state = child.state.write();
        child_state.nlink = child_state.nlink.saturating_sub(1);
        child_state.ctime = now;
        Ok(())
    }

    fn rmdir(&self, name: &[u8]) -> Result<(), Errno> {
        check_name(name)?;
        let _tree = self.shared.tree.lock();
        let child = self.child(name)?;
        if child.file_type != FileType::Directory {
            return Err(Errno::ENOTDIR);
        }
        if !child.is_empty_directory() {
            return Err(Errno::ENOTEMPTY);
        }
        let now = self.shared.now();
        {
            let mut state = self.state.write();
            state.directory_mut()?.remove(name);
            state.nlink = state.nlink.saturating_sub(1);
            state.touch_contents(now);
        }
        let mut child_state = child.state.write();
        child_state.nlink = 0;
        child_state.ctime = now;
        Ok(())
    }

    fn rename(
        &self,
        old_name: &[u8],
        new_parent: &Arc<dyn Inode>,
        new_name: &[u8],
    ) -> Result<(), Errno> {
        check_name(old_name)?;
        check_name(new_name)?;
        let new_parent = self.ours(new_parent)?;
        let _tree = self.shared.tree.lock();
        let source = self.child(old_name)?;
        let target = match new_parent.child(new_name) {
            Ok(target) => Some(target),
            Err(Errno::ENOENT) => None,
            Err(error) => return Err(error),
        };
        if new_parent.state.read().nlink == 0 {
            return Err(Errno::ENOENT);
        }
        let moves_directory = source.file_type == FileType::Directory;
        if let Some(target) = &target {
            if Arc::ptr_eq(target, &source) {
                // Two names of one inode: Linux does nothing.
                return Ok(());
            }
            let target_is_directory = target.file_type == FileType::Directory;
            if moves_directory && !target_is_directory {
                return Err(Errno::ENOTDIR);
            }
            if !moves_directory && target_is_directory {
                return Err(Errno::EISDIR);
            }
            if target_is_directory && !target.is_empty_directory() {
                return Err(Errno::ENOTEMPTY);
            }
        }
        let now = self.shared.now();
        let same_parent = core::ptr::eq(self, new_parent);
        // Insert first so the new name never disappears (the old file
        // is replaced in one step).
        {
            let mut state = new_parent.state.write();
            state
                .directory_mut()?
                .entries
                .insert(new_name.to_vec(), source.clone());
            if moves_directory && !same_parent {
                state.nlink += 1;
            }
            if target
                .as_ref()
                .is_some_and(|target| target.file_type == FileType::Directory)
            {
                state.nlink = state.nlink.saturating_sub(1);
            }
            state.touch_contents(now);
        }
        {
            let mut state = self.state.write();
            state.directory_mut()?.remove(old_name);
            if moves_directory && !same_parent {
                state.nlink = state.nlink.saturating_sub(1);
            }
            state.touch_contents(now);
        }
        if let Some(target) = target {
            let mut state = target.state.write();
            state.nlink = if target.file_type == FileType::Directory {
                0
            } else {
                state.nlink.saturating_sub(1)
            };
            state.ctime = now;
        }
        let mut state = source.state.write();
        if let Body::Directory(directory) = &mut state.body {
            directory.parent = new_parent.me.clone();
        }
        state.ctime = now;
        Ok(())
    }

    fn exchange(
        &self,
        name: &[u8],
        other_parent: &Arc<dyn Inode>,
        other_name: &[u8],
    ) -> Result<(), Errno> {
        check_name(name)?;
        check_name(other_name)?;
        let other_parent = self.ours(other_parent)?;
        let _tree = self.shared.tree.lock();
        let first = self.child(name)?;
        let second = other_parent.child(other_name)?;
        if Arc::ptr_eq(&first, &second) {
            return Ok(());
        }
        let now = self.shared.now();
        let same_parent = core::ptr::eq(self, other_parent);
        let is_directory = |inode: &RamInode| inode.file_type == FileType::Directory;
        // Each parent's link count follows the directories it holds
        // (their ".." entries); swapped within one parent nothing moves.
        let links_gained = |gained: &RamInode, lost: &RamInode| {
            i64::from(is_directory(gained)) - i64::from(is_directory(lost))
        };
        {
            let mut state = self.state.write();
            state
                .directory_mut()?
                .entries
                .insert(name.to_vec(), second.clone());
            if !same_parent {
                state.nlink = state
                    .nlink
                    .saturating_add_signed(links_gained(&second, &first));
            }
            state.touch_contents(now);
        }
        {
            let mut state = other_parent.state.write();
            state
                .directory_mut()?
                .entries
                .insert(other_name.to_vec(), first.clone());
            if !same_parent {
                state.nlink = state
                    .nlink
                    .saturating_add_signed(links_gained(&first, &second));
            }
            state.touch_contents(now);
        }
        for (moved, parent) in [(&first, other_parent), (&second, self)] {
            let mut state = moved.state.write();
            if let Body::Directory(directory) = &mut state.body {
                directory.parent = parent.me.clone();
            }
            state.ctime = now;
        }
        Ok(())
    }

    fn readdir(
        &self,
        offset: u64,
        sink: &mut dyn FnMut(DirEntry<'_>, u64) -> bool,
    ) -> Result<(), Errno> {
        let state = self.state.read();
        let directory = state.directory()?;
        if offset == 0 {
            let dot = DirEntry {
                ino: self.ino,
                file_type: FileType::Directory,
                name: b".",
            };
            if !sink(dot, 1) {
                return Ok(());
            }
        }
        if offset <= 1 {
            let parent_ino = directory
                .parent
                .upgrade()
                .map_or(self.ino, |parent| parent.ino);
            let dot_dot = DirEntry {
                ino: parent_ino,
                file_type: FileType::Directory,
                name: b"..",
            };
            if !sink(dot_dot, 2) {
                return Ok(());
            }
        }
        let skip = usize::try_from(offset.saturating_sub(2)).unwrap_or(usize::MAX);
        for (index, (name, inode)) in directory.entries.iter().enumerate().skip(skip) {
            let entry = DirEntry {
                ino: inode.ino,
                file_type: inode.file_type,
                name,
            };
            if !sink(entry, index as u64 + 3) {
                break;
            }
        }
        Ok(())
    }

    fn readlink(&self) -> Result<Vec<u8>, Errno> {
        match &self.state.read().body {
            Body::Symlink(target) => Ok(target.clone()),
            _ => Err(Errno::EINVAL),
        }
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let state = self.state.read();
        let Body::Regular(data) = &state.body else {
            return Err(self.data_error());
        };
        let bytes = data.bytes();
        let Ok(start) = usize::try_from(offset) else {
            return Ok(0);
        };
        let Some(available) = bytes.get(start..) else {
            return Ok(0);
        };
        let count = available.len().min(buf.len());
        buf[..count].copy_from_slice(&available[..count]);
        Ok(count)
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> Result<usize, Errno> {
        self.write_locked(Some(offset), buf).map(|(count, _)| count)
    }

    fn append(&self, buf: &[u8]) -> Result<(usize, u64), Errno> {
        self.write_locked(None, buf)
    }

    /// Memory is not reserved ahead here (nothing to allocate): growing
    /// the file is all mode 0 does, and a hole is zeros written over.
    fn allocate(&self, how: Allocation, offset: u64, length: u64) -> Result<(), Errno> {
        let end = offset.checked_add(length).ok_or(Errno::EFBIG)?;
        if end > self.shared.max_file_size {
            return Err(Errno::EFBIG);
        }
        let end = usize::try_from(end).map_err(|_| Errno::EFBIG)?;
        let now = self.shared.now();
        let mut state = self.state.write();
        let Body::Regular(data) = &mut state.body else {
            return Err(self.data_error());
        };
        match how {
            Allocation::Other => return Err(Errno::EOPNOTSUPP),
            Allocation::KeepSize => return Ok(()),
            Allocation::Extend => {
                if end <= data.bytes().len() {
                    return Ok(());
                }
                data.owned(end)?.resize(end, 0);
            }
            Allocation::PunchHole => {
                let start = usize::try_from(offset).unwrap_or(usize::MAX);
                let length = data.bytes().len();
                let end = end.min(length);
                if start >= end {
                    return Ok(());
                }
                data.owned(length)?[start..end].fill(0);
            }
        }
        state.touch_contents(now);
        Ok(())
    }

    fn truncate(&self, size: u64) -> Result<(), Errno> {
        if size > self.shared.max_file_size {
            return Err(Errno::EFBIG);
        }
        let size = usize::try_from(size).map_err(|_| Errno::EFBIG)?;
        let now = self.shared.now();
        let mut state = self.state.write();
        let Body::Regular(data) = &mut state.body else {
            return Err(self.data_error());
        };
        match data {
            Data::Static(bytes) if size <= bytes.len() => *bytes = &bytes[..size],
            _ => data.owned(size)?.resize(size, 0),
        }
        state.touch_contents(now);
        Ok(())
    }

    fn set_attributes(&self, changes: &SetAttributes) -> Result<(), Errno> {
        let now = self.shared.now();
        let mut state = self.state.write();
        if let Some(mode) = changes.mode {
            state.mode = (state.mode & !MODE_PERMISSION_BITS) | (mode & MODE_PERMISSION_BITS);
        }
        if let Some(uid) = changes.uid {
            state.uid = uid;
        }
        if let Some(gid) = changes.gid {
            state.gid = gid;
        }
        let resolve = |change: TimeChange| match change {
            TimeChange::Now => now,
            TimeChange::At(time) => time,
        };
        if let Some(atime) = changes.atime {
            state.atime = resolve(atime);
        }
        if let Some(mtime) = changes.mtime {
            state.mtime = resolve(mtime);
        }
        state.ctime = now;
        Ok(())
    }

    fn extended_attribute(&self, name: &[u8]) -> Result<Vec<u8>, Errno> {
        let state = self.state.read();
        state.attributes.get(name).cloned().ok_or(Errno::ENODATA)
    }

    fn set_extended_attribute(
        &self,
        name: &[u8],
        value: &[u8],
        how: AttributeWrite,
    ) -> Result<(), Errno> {
        let now = self.shared.now();
        let mut state = self.state.write();
        let exists = state.attributes.contains_key(name);
        match how {
            AttributeWrite::Create if exists => return Err(Errno::EEXIST),
            AttributeWrite::Replace if !exists => return Err(Errno::ENODATA),
            _ => {}
        }
        state.attributes.insert(name.to_vec(), value.to_vec());
        state.ctime = now;
        Ok(())
    }

    fn remove_extended_attribute(&self, name: &[u8]) -> Result<(), Errno> {
        let now = self.shared.now();
        let mut state = self.state.write();
        state.attributes.remove(name).ok_or(Errno::ENODATA)?;
        state.ctime = now;
        Ok(())
    }

    fn extended_attribute_names(&self) -> Vec<Vec<u8>> {
        self.state.read().attributes.keys().cloned().collect()
    }
}
