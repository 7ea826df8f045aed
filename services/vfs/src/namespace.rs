//! Operations on names, with Linux's rules and errors: `mkdir`, `mknod`,
//! `symlink`, `link`, `unlink`, `rmdir`, `rename`, `readlink`, `stat`,
//! `chmod`/`chown`/`utimensat` and `truncate`.

use alloc::{sync::Arc, vec::Vec};

use crate::{
    inode::{same_inode, Inode, NewNode, NodeKind},
    metadata::{FileType, Metadata, SetAttributes, MODE_PERMISSION_BITS},
    path::{LastComponent, ParentAndName, PATH_MAX},
    vfs::{PathContext, Vfs, MAY_EXEC, MAY_WRITE},
    Errno,
};

impl Vfs {
    /// Checks for making a name: an ordinary last component (`EEXIST` for
    /// "/", "." and ".."), write access, and a trailing slash only when
    /// making a directory (`ENOENT` otherwise, as Linux says when the name
    /// is free).
    fn prepare_create(
        &self,
        context: &PathContext,
        target: &ParentAndName,
        is_directory: bool,
    ) -> Result<Vec<u8>, Errno> {
        let LastComponent::Name(name) = &target.last else {
            return Err(Errno::EEXIST);
        };
        if target.trailing_slash && !is_directory {
            return match target.parent.lookup(name) {
                Ok(_) => Err(Errno::EEXIST),
                Err(Errno::ENOENT) => Err(Errno::ENOENT),
                Err(error) => Err(error),
            };
        }
        self.check_modify(context, &*target.parent)?;
        Ok(name.clone())
    }

    /// Makes `node` at `path` (the umask applied to its permissions).
    fn create_node(
        &self,
        context: &PathContext,
        path: &[u8],
        kind: NodeKind<'_>,
        permissions: u32,
    ) -> Result<Arc<dyn Inode>, Errno> {
        let target = self.resolve_parent(context, path)?;
        let is_directory = kind == NodeKind::Directory;
        let name = self.prepare_create(context, &target, is_directory)?;
        let node = new_node(context, &*target.parent, kind, permissions);
        target.parent.create(&name, node)
    }

    /// `mkdir(path, mode)`.
    pub fn mkdir(
        &self,
        context: &PathContext,
        path: &[u8],
        mode: u32,
    ) -> Result<Arc<dyn Inode>, Errno> {
        // mkdir keeps the sticky bit but not set-user/group-id.
        self.create_node(context, path, NodeKind::Directory, mode & 0o1777)
    }

    /// `mknod(path, mode, rdev)`: `mode`'s type bits choose a regular file
    /// (or none: regular), character or block device, FIFO or socket
    /// (`EINVAL` for directories and links, `EPERM` for devices made by
    /// anyone but root).
    pub fn mknod(
        &self,
        context: &PathContext,
        path: &[u8],
        mode: u32,
        rdev: u64,
    ) -> Result<Arc<dyn Inode>, Errno> {
        let kind = match FileType::from_mode(mode) {
            None if mode & crate::metadata::S_IFMT == 0 => NodeKind::Regular,
            Some(FileType::Regular) => NodeKind::Regular,
            Some(FileType::CharDevice) => NodeKind::CharDevice(rdev),
            Some(FileType::BlockDevice) => NodeKind::BlockDevice(rdev),
            Some(FileType::Fifo) => NodeKind::Fifo,
            Some(FileType::Socket) => NodeKind::Socket,
            // Directories are made by mkdir, as Linux's `may_mknod` says.
            Some(FileType::Directory) => return Err(Errno::EPERM),
            _ => return Err(Errno::EINVAL),
        };
        if matches!(kind, NodeKind::CharDevice(_) | NodeKind::BlockDevice(_)) && context.uid != 0 {
            return Err(Errno::EPERM);
        }
        self.create_node(context, path, kind, mode & MODE_PERMISSION_BITS)
    }

    /// `symlink(target, path)`: `ENOENT` for an empty target,
    /// `ENAMETOOLONG` for one of `PATH_MAX` bytes or more.
    pub fn symlink(
        &self,
        context: &PathContext,
        target: &[u8],
        path: &[u8],
    ) -> Result<Arc<dyn Inode>, Errno> {
        if target.is_empty() {
            return Err(Errno::ENOENT);
        }
        if target.len() >= PATH_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        self.create_node(context, path, NodeKind::Symlink(target), 0o777)
    }

    /// `link(old, new)` (`linkat` with `follow` for `AT_SYMLINK_FOLLOW`):
    /// `EPERM` for a directory, `EXDEV` across file systems, `EEXIST` if
    /// `new` exists.
    pub fn link(
        &self,
        context: &PathContext,
        old_path: &[u8],
        new_path: &[u8],
        follow: bool,
    ) -> Result<(), Errno> {
        let old = self.resolve(context, old_path, follow)?;
        if old.file_type() == FileType::Directory {
            return Err(Errno::EPERM);
        }
        let target = self.resolve_parent(context, new_path)?;
        let name = self.prepare_create(context, &target, false)?;
        if old.dev() != target.parent.dev() {
            return Err(Errno::EXDEV);
        }
        target.parent.link(&name, &old)
    }

    /// `unlink(path)`: `EISDIR` for a directory (Linux's choice over
    /// POSIX's `EPERM`), `ENOTDIR` for "file/".
    pub fn unlink(&self, context: &PathContext, path: &[u8]) -> Result<(), Errno> {
        let target = self.resolve_parent(context, path)?;
        let LastComponent::Name(name) = &target.last else {
            return Err(Errno::EISDIR);
        };
        let victim = target.parent.lookup(name)?;
        if victim.file_type() == FileType::Directory {
            return Err(Errno::EISDIR);
        }
        if target.trailing_slash {
            return Err(Errno::ENOTDIR);
        }
        self.check_modify(context, &*target.parent)?;
        target.parent.unlink(name)
    }

    /// `rmdir(path)`: `EINVAL` for ".", `ENOTEMPTY` for "..", `EBUSY` for
    /// a root or mount point, `ENOTDIR`, `ENOTEMPTY`.
    pub fn rmdir(&self, context: &PathContext, path: &[u8]) -> Result<(), Errno> {
        let target = self.resolve_parent(context, path)?;
        let name = match &target.last {
            LastComponent::Name(name) => name,
            LastComponent::Dot => return Err(Errno::EINVAL),
            LastComponent::DotDot => return Err(Errno::ENOTEMPTY),
            LastComponent::Root => return Err(Errno::EBUSY),
        };
        let victim = self.follow_mounts(target.parent.lookup(name)?);
        if victim.file_type() != FileType::Directory {
            return Err(Errno::ENOTDIR);
        }
        if self.is_busy(&*victim) || same_inode(&*victim, &*context.root) {
            return Err(Errno::EBUSY);
        }
        self.check_modify(context, &*target.parent)?;
        target.parent.rmdir(name)
    }

    /// `rename(old, new)` with Linux's rules: a file replaces a file, a
    /// directory only an empty directory (`ENOTDIR`, `EISDIR`,
    /// `ENOTEMPTY`), `EINVAL` for a directory into its own subtree, `EXDEV`
    /// across file systems, `EBUSY` for ".", "..", "/" and mount points;
    /// two names of one file: nothing happens.
    pub fn rename(
        &self,
        context: &PathContext,
        old_path: &[u8],
        new_path: &[u8],
    ) -> Result<(), Errno> {
        let old = self.resolve_parent(context, old_path)?;
        let new = self.resolve_parent(context, new_path)?;
        let (LastComponent::Name(old_name), LastComponent::Name(new_name)) = (&old.last, &new.last)
        else {
            return Err(Errno::EBUSY);
        };
        if old.parent.dev() != new.parent.dev() {
            return Err(Errno::EXDEV);
        }
        let _rename = self.rename_lock.lock();
        let source = old.parent.lookup(old_name)?;
        let moves_directory = source.file_type() == FileType::Directory;
        if !moves_directory && (old.trailing_slash || new.trailing_slash) {
            return Err(Errno::ENOTDIR);
        }
        let replaced = match new.parent.lookup(new_name) {
            Ok(inode) => Some(inode),
            Err(Errno::ENOENT) => None,
            Err(error) => return Err(error),
        };
        if self.is_busy(&*source)
            || replaced
                .as_ref()
                .is_some_and(|inode| self.is_busy(&**inode))
        {
            return Err(Errno::EBUSY);
        }
        if moves_directory && self.is_within(&new.parent, &source)? {
            return Err(Errno::EINVAL);
        }
        self.check_modify(context, &*old.parent)?;
        self.check_modify(context, &*new.parent)?;
        old.parent.rename(old_name, &new.parent, new_name)
    }

    /// `renameat2(old, new, RENAME_EXCHANGE)`: swaps the two names in one
    /// step. Both must exist (`ENOENT`); `ENOTDIR` for a trailing slash on
    /// a non-directory; `EXDEV` across file systems; `EBUSY` for ".",
    /// "..", "/" and mount points; `EINVAL` if either is a directory that
    /// holds the other's place.
    pub fn exchange(
        &self,
        context: &PathContext,
        old_path: &[u8],
        new_path: &[u8],
    ) -> Result<(), Errno> {
        let old = self.resolve_parent(context, old_path)?;
        let new = self.resolve_parent(context, new_path)?;
        let (LastComponent::Name(old_name), LastComponent::Name(new_name)) = (&old.last, &new.last)
        else {
            return Err(Errno::EBUSY);
        };
        if old.parent.dev() != new.parent.dev() {
            return Err(Errno::EXDEV);
        }
        let _rename = self.rename_lock.lock();
        let first = old.parent.lookup(old_name)?;
        let second = new.parent.lookup(new_name)?;
        for (inode, trailing_slash) in [(&first, old.trailing_slash), (&second, new.trailing_slash)]
        {
            if trailing_slash && inode.file_type() != FileType::Directory {
                return Err(Errno::ENOTDIR);
            }
        }
        if self.is_busy(&*first) || self.is_busy(&*second) {
            return Err(Errno::EBUSY);
        }
        for (moved, destination) in [(&first, &new.parent), (&second, &old.parent)] {
            if moved.file_type() == FileType::Directory && self.is_within(destination, moved)? {
                return Err(Errno::EINVAL);
            }
        }
        self.check_modify(context, &*old.parent)?;
        self.check_modify(context, &*new.parent)?;
        old.parent.exchange(old_name, &new.parent, new_name)
    }

    /// Whether `directory` is `ancestor` or inside it (in one file system:
    /// follows ".." up to the file system's root).
    fn is_within(
        &self,
        directory: &Arc<dyn Inode>,
        ancestor: &Arc<dyn Inode>,
    ) -> Result<bool, Errno> {
        let mut current = directory.clone();
        loop {
            if same_inode(&*current, &**ancestor) {
                return Ok(true);
            }
            let parent = current.lookup(b"..")?;
            if same_inode(&*parent, &*current) {
                return Ok(false);
            }
            current = parent;
        }
    }

    /// `readlink(path)`: the target of the symbolic link at `path`
    /// (`EINVAL` if it is not one).
    pub fn readlink(&self, context: &PathContext, path: &[u8]) -> Result<Vec<u8>, Errno> {
        self.resolve(context, path, false)?.readlink()
    }

    /// `stat(path)` (`follow`) or `lstat(path)`.
    pub fn stat(
        &self,
        context: &PathContext,
        path: &[u8],
        follow: bool,
    ) -> Result<Metadata, Errno> {
        Ok(self.resolve(context, path, follow)?.metadata())
    }

    /// `chmod`, `chown` and `utimensat` in one: only the owner or root may
    /// change mode or times to given values (`EPERM`), only root may change
    /// the owner or give the file a group it is not in; setting times to
    /// "now" also lets anyone with write access do it.
    pub fn set_attributes(
        &self,
        context: &PathContext,
        inode: &Arc<dyn Inode>,
        changes: &SetAttributes,
    ) -> Result<(), Errno> {
        if self.is_read_only(&**inode) {
            return Err(Errno::EROFS);
        }
        let metadata = inode.metadata();
        let is_owner = context.uid == 0 || context.uid == metadata.uid;
        let only_now = changes.mode.is_none()
            && changes.uid.is_none()
            && changes.gid.is_none()
            && [changes.atime, changes.mtime]
                .iter()
                .all(|time| matches!(time, None | Some(crate::metadata::TimeChange::Now)));
        if only_now && !is_owner {
            return Vfs::check_access(context, &**inode, MAY_WRITE);
        }
        if !is_owner {
            return Err(Errno::EPERM);
        }
        let changes_owner = changes.uid.is_some_and(|uid| uid != metadata.uid);
        let changes_group = changes
            .gid
            .is_some_and(|gid| gid != metadata.gid && !context.in_group(gid));
        if context.uid != 0 && (changes_owner || changes_group) {
            return Err(Errno::EPERM);
        }
        inode.set_attributes(changes)
    }

    /// `truncate(path, length)`: `EISDIR` for a directory, `EINVAL` for
    /// other non-regular files, `EACCES` without write permission.
    pub fn truncate(&self, context: &PathContext, path: &[u8], length: i64) -> Result<(), Errno> {
        let length = u64::try_from(length).map_err(|_| Errno::EINVAL)?;
        let inode = self.resolve(context, path, true)?;
        match inode.file_type() {
            FileType::Directory => return Err(Errno::EISDIR),
            FileType::Regular => {}
            _ => return Err(Errno::EINVAL),
        }
        Vfs::check_access(context, &*inode, MAY_WRITE)?;
        if self.is_read_only(&*inode) {
            return Err(Errno::EROFS);
        }
        inode.truncate(length)
    }

    /// The directory for `chdir(path)`/`chroot(path)`: `ENOTDIR` for a
    /// non-directory, `EACCES` without search permission.
    pub fn directory(&self, context: &PathContext, path: &[u8]) -> Result<Arc<dyn Inode>, Errno> {
        let inode = self.resolve(context, path, true)?;
        if inode.file_type() != FileType::Directory {
            return Err(Errno::ENOTDIR);
        }
        Vfs::check_access(context, &*inode, MAY_EXEC)?;
        Ok(inode)
    }
}

/// The set-group-id bit of a mode.
const S_ISGID: u32 = 0o2000;

/// A node to make in `parent` for `context` (Linux's `inode_init_owner`):
/// owned by the asker's user, and by its group unless the directory is
/// set-group-id, whose group it then takes (a directory also the bit).
/// A set-group-id, group-executable file made in another group by a
/// non-root asker loses the bit. The umask applies.
pub(crate) fn new_node<'a>(
    context: &PathContext,
    parent: &dyn Inode,
    kind: NodeKind<'a>,
    permissions: u32,
) -> NewNode<'a> {
    let mut permissions = permissions & !context.umask & MODE_PERMISSION_BITS;
    let directory = parent.metadata();
    let gid = if directory.mode & S_ISGID != 0 {
        if kind == NodeKind::Directory {
            permissions |= S_ISGID;
        }
        directory.gid
    } else {
        context.gid
    };
    if kind != NodeKind::Directory
        && permissions & S_ISGID != 0
        && permissions & 0o010 != 0
        && context.uid != 0
        && !context.in_group(gid)
    {
        permissions &= !S_ISGID;
    }
    NewNode {
        kind,
        permissions,
        uid: context.uid,
        gid,
    }
}
