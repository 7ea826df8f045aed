//! The [`Vfs`]: the mount table, the device registry and the per-process
//! view ([`PathContext`]) that path operations take. The operations live in
//! `path.rs` (walking), `namespace.rs` (mkdir, unlink, rename, ...) and
//! `open.rs`.

use alloc::{sync::Arc, vec::Vec};

use spin::{Mutex, RwLock};

use crate::{
    device::{DeviceRegistry, FifoOpener},
    inode::{same_inode, FileSystem, Inode},
    metadata::{FileType, Metadata},
    Errno,
};

/// A process's file-system view (Linux's `fs_struct` plus credentials):
/// what relative and absolute paths start from, who asks, and the umask.
#[derive(Clone)]
pub struct PathContext {
    /// The root directory ("/" and the limit of ".."); `chroot` changes it.
    pub root: Arc<dyn Inode>,
    /// The current directory, where relative paths start.
    pub cwd: Arc<dyn Inode>,
    /// Effective user id (0 passes permission checks).
    pub uid: u32,
    /// Effective group id.
    pub gid: u32,
    /// Supplementary groups, sorted: group permission bits apply to
    /// their files too.
    pub groups: Arc<[u32]>,
    /// Permission bits cleared from new files and directories.
    pub umask: u32,
}

impl PathContext {
    /// Whether the asker is in group `gid`: its effective group or one of
    /// its supplementary groups.
    pub fn in_group(&self, gid: u32) -> bool {
        gid == self.gid || self.groups.binary_search(&gid).is_ok()
    }
}

/// Permission to ask for in [`Vfs::permitted`].
pub const MAY_READ: u32 = 4;
/// Permission to ask for in [`Vfs::permitted`].
pub const MAY_WRITE: u32 = 2;
/// Permission to ask for in [`Vfs::permitted`]: execute, or for a
/// directory search.
pub const MAY_EXEC: u32 = 1;

pub(crate) struct Mount {
    /// The directory mounted on.
    pub(crate) mountpoint: Arc<dyn Inode>,
    /// The mounted file system's root.
    root: Arc<dyn Inode>,
    pub(crate) fs: Arc<dyn FileSystem>,
}

/// The virtual file system: one tree of mounted file systems.
pub struct Vfs {
    pub(crate) root_fs: Arc<dyn FileSystem>,
    pub(crate) mounts: RwLock<Vec<Mount>>,
    devices: DeviceRegistry,
    /// Serialises renames so that the "not into its own subtree" check
    /// sees a tree no other rename changes (Linux's `s_vfs_rename_mutex`).
    pub(crate) rename_lock: Mutex<()>,
    /// What opens FIFOs; without one, opening a FIFO is `ENXIO`.
    pub(crate) fifo_opener: spin::Once<Arc<dyn FifoOpener>>,
}

impl Vfs {
    /// A tree with `root_fs` at "/".
    pub fn new(root_fs: Arc<dyn FileSystem>) -> Vfs {
        Vfs {
            root_fs,
            mounts: RwLock::new(Vec::new()),
            devices: DeviceRegistry::new(),
            rename_lock: Mutex::new(()),
            fifo_opener: spin::Once::new(),
        }
    }

    /// Makes `opener` open the tree's FIFOs (once; later calls are
    /// ignored).
    pub fn set_fifo_opener(&self, opener: Arc<dyn FifoOpener>) {
        self.fifo_opener.call_once(|| opener);
    }

    /// The root directory of the tree.
    pub fn root(&self) -> Arc<dyn Inode> {
        self.root_fs.root()
    }

    /// A context rooted at the tree's root, in it, for `uid`/`gid`, with
    /// umask 022 (what init starts with).
    pub fn context(&self, uid: u32, gid: u32) -> PathContext {
        PathContext {
            root: self.root(),
            cwd: self.root(),
            uid,
            gid,
            groups: Arc::from(Vec::new()),
            umask: 0o022,
        }
    }

    /// The character device drivers, consulted when a device node opens.
    pub fn devices(&self) -> &DeviceRegistry {
        &self.devices
    }

    /// Mounts `fs` on the directory `mountpoint` (as found by a walk, so
    /// the top of any earlier mount there); `ENOTDIR` for a non-directory,
    /// `EBUSY` if `fs` is already mounted or has the device number of a
    /// mounted one.
    pub fn mount(&self, mountpoint: Arc<dyn Inode>, fs: Arc<dyn FileSystem>) -> Result<(), Errno> {
        if mountpoint.file_type() != FileType::Directory {
            return Err(Errno::ENOTDIR);
        }
        let mut mounts = self.mounts.write();
        let dev = fs.dev();
        if dev == self.root_fs.dev() || mounts.iter().any(|mount| mount.fs.dev() == dev) {
            return Err(Errno::EBUSY);
        }
        let root = fs.root();
        mounts.push(Mount {
            mountpoint,
            root,
            fs,
        });
        Ok(())
    }

    /// Unmounts the file system whose root is `root` (as a walk to the
    /// mount point finds it); `EINVAL` if it is not a mount's root,
    /// `EBUSY` if something is mounted inside it.
    pub fn unmount(&self, root: &Arc<dyn Inode>) -> Result<(), Errno> {
        let mut mounts = self.mounts.write();
        let index = mounts
            .iter()
            .position(|mount| same_inode(&*mount.root, &**root))
            .ok_or(Errno::EINVAL)?;
        let dev = mounts[index].fs.dev();
        if mounts.iter().any(|mount| mount.mountpoint.dev() == dev) {
            return Err(Errno::EBUSY);
        }
        mounts.remove(index);
        Ok(())
    }

    /// If a file system is mounted on `inode`, the root of the topmost
    /// one; otherwise `inode`.
    pub(crate) fn follow_mounts(&self, mut inode: Arc<dyn Inode>) -> Arc<dyn Inode> {
        let mounts = self.mounts.read();
        // Each mount covers a distinct inode, so the chain ends; the bound
        // guards against a cycle all the same.
        for _ in 0..=mounts.len() {
            match mounts
                .iter()
                .rev()
                .find(|mount| same_inode(&*mount.mountpoint, &*inode))
            {
                Some(mount) => inode = mount.root.clone(),
                None => break,
            }
        }
        inode
    }

    /// If `inode` is the root of a mounted file system, the directory it
    /// is mounted on.
    pub(crate) fn mounted_on(&self, inode: &dyn Inode) -> Option<Arc<dyn Inode>> {
        self.mounts
            .read()
            .iter()
            .find(|mount| same_inode(&*mount.root, inode))
            .map(|mount| mount.mountpoint.clone())
    }

    /// Whether `inode` is a mount point or the root of a file system in
    /// the tree (which rmdir, rename and unlink must leave alone).
    pub(crate) fn is_busy(&self, inode: &dyn Inode) -> bool {
        let root = self.root_fs.root();
        same_inode(&*root, inode)
            || self.mounts.read().iter().any(|mount| {
                same_inode(&*mount.mountpoint, inode) || same_inode(&*mount.root, inode)
            })
    }

    /// Whether the file system holding `inode` refuses writes.
    pub fn is_read_only(&self, inode: &dyn Inode) -> bool {
        let dev = inode.dev();
        if self.root_fs.dev() == dev {
            return self.root_fs.is_read_only();
        }
        self.mounts
            .read()
            .iter()
            .find(|mount| mount.fs.dev() == dev)
            .is_some_and(|mount| mount.fs.is_read_only())
    }

    /// Whether `context` may access a file with `metadata` as `want` (a
    /// mix of [`MAY_READ`], [`MAY_WRITE`], [`MAY_EXEC`]): the owner, group
    /// or other bits, with root passing all but executing a file with no
    /// execute bit at all. The group bits apply to the effective group
    /// and the supplementary groups.
    pub fn permitted(context: &PathContext, metadata: &Metadata, want: u32) -> bool {
        if context.uid == 0 {
            let executable = metadata.is_dir() || metadata.mode & 0o111 != 0;
            return want & MAY_EXEC == 0 || executable;
        }
        let bits = if context.uid == metadata.uid {
            metadata.mode >> 6
        } else if context.in_group(metadata.gid) {
            metadata.mode >> 3
        } else {
            metadata.mode
        } & 0o7;
        bits & want == want
    }

    /// [`Vfs::permitted`] as a result: `EACCES` when not.
    pub(crate) fn check_access(
        context: &PathContext,
        inode: &dyn Inode,
        want: u32,
    ) -> Result<(), Errno> {
        if Vfs::permitted(context, &inode.metadata(), want) {
            Ok(())
        } else {
            Err(Errno::EACCES)
        }
    }

    /// The checks before changing directory `parent`'s entries: search and
    /// write permission, and a writable file system.
    pub(crate) fn check_modify(
        &self,
        context: &PathContext,
        parent: &dyn Inode,
    ) -> Result<(), Errno> {
        Vfs::check_access(context, parent, MAY_WRITE | MAY_EXEC)?;
        if self.is_read_only(parent) {
            return Err(Errno::EROFS);
        }
        Ok(())
    }
}
