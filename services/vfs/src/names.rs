//! The way back from an inode to a path: [`Vfs::path_of`] (`getcwd`, the
//! `cwd` links of `/proc`), [`Vfs::open_file_path`] (what `/proc/PID/fd`
//! links say) and [`Vfs::mounts`] (`/proc/mounts`).
//!
//! Inodes here do not know their names (a RamFs directory keeps only its
//! parent), so a directory's path is found as `getcwd` always found it on
//! Unix: walk ".." to the root, looking each directory up by inode number
//! in its parent. A file's name is the one it was opened by, which the
//! open file remembers ([`OpenFile::opened_as`]).

use alloc::{format, sync::Arc, vec::Vec};

use crate::{
    file::OpenFile,
    inode::{same_inode, FileSystem, Inode},
    metadata::FileType,
    path::PATH_MAX,
    vfs::{PathContext, Vfs},
    Errno,
};

/// One mounted file system, as [`Vfs::mounts`] lists it.
pub struct MountEntry {
    /// The directory it is mounted on; `None` for the tree's root.
    pub mountpoint: Option<Arc<dyn Inode>>,
    /// The file system.
    pub fs: Arc<dyn FileSystem>,
}

impl Vfs {
    /// The absolute path of `directory` as `context` sees it (from its
    /// root), found by walking ".." up and looking each directory up by
    /// inode number in its parent; crossing a mount, the name is the
    /// mount point's. `ENOENT` if a directory on the way was removed. A
    /// directory outside the context's root is named from the tree's
    /// root.
    pub fn path_of(
        &self,
        context: &PathContext,
        directory: &Arc<dyn Inode>,
    ) -> Result<Vec<u8>, Errno> {
        let mut names: Vec<Vec<u8>> = Vec::new();
        let mut current = directory.clone();
        let mut start = context.clone();
        // Each step goes one directory up; a path has fewer than PATH_MAX
        // components, so the bound only stops a corrupted tree.
        for _ in 0..PATH_MAX {
            if same_inode(&*current, &*context.root) {
                break;
            }
            start.cwd = current.clone();
            let parent = self.resolve(&start, b"..", true)?;
            if same_inode(&*parent, &*current) {
                break;
            }
            // A mounted file system's root is listed in the parent under
            // the inode it covers.
            let listed = self
                .mounted_on(&*current)
                .unwrap_or_else(|| current.clone());
            let wanted = listed.ino();
            let mut found = None;
            parent.readdir(0, &mut |entry, _| {
                if entry.ino == wanted && entry.name != b"." && entry.name != b".." {
                    found = Some(entry.name.to_vec());
                    false
                } else {
                    true
                }
            })?;
            // A directory its parent does not list was removed.
            names.push(found.ok_or(Errno::ENOENT)?);
            current = parent;
        }
        let mut path = Vec::new();
        for name in names.iter().rev() {
            path.push(b'/');
            path.extend_from_slice(name);
        }
        if path.is_empty() {
            path.push(b'/');
        }
        Ok(path)
    }

    /// What Linux's `/proc/PID/fd/N` link says of `file`, as `context`
    /// sees the tree:
    /// - a directory: its path ([`Vfs::path_of`]);
    /// - a file opened by name: its directory's path and the name, with
    ///   " (deleted)" once its last link is gone (a rename since the open
    ///   is not seen: the name stays the one it was opened by);
    /// - a pipe: `pipe:[INODE]`; a socket: `socket:[INODE]`;
    /// - anything else without a name: `anon_inode:[INODE]`.
    pub fn open_file_path(&self, context: &PathContext, file: &OpenFile) -> Vec<u8> {
        let inode = file.inode();
        let deleted = |mut path: Vec<u8>| {
            path.extend_from_slice(b" (deleted)");
            path
        };
        if inode.file_type() == FileType::Directory {
            if let Ok(path) = self.path_of(context, inode) {
                return path;
            }
        }
        if let Some((directory, name)) = file.opened_as() {
            let mut path = match self.path_of(context, directory) {
                Ok(path) => path,
                // The directory itself was removed.
                Err(_) => return deleted(name.to_vec()),
            };
            if path != b"/" {
                path.push(b'/');
            }
            path.extend_from_slice(name);
            return if inode.metadata().nlink == 0 {
                deleted(path)
            } else {
                path
            };
        }
        let ino = inode.ino();
        match inode.file_type() {
            FileType::Fifo => format!("pipe:[{ino}]").into_bytes(),
            FileType::Socket => format!("socket:[{ino}]").into_bytes(),
            FileType::Directory => deleted(Vec::new()),
            _ => format!("anon_inode:[{ino}]").into_bytes(),
        }
    }

    /// The mounted file systems: the root's first, then each mount in the
    /// order it was made.
    pub fn mounts(&self) -> Vec<MountEntry> {
        let mut entries = alloc::vec![MountEntry {
            mountpoint: None,
            fs: self.root_fs.clone(),
        }];
        for mount in self.mounts.read().iter() {
            entries.push(MountEntry {
                mountpoint: Some(mount.mountpoint.clone()),
                fs: mount.fs.clone(),
            });
        }
        entries
    }
}
