//! `open(path, flags, mode)`: finding or making the file and checking the
//! open-time flags (`O_CREAT`, `O_EXCL`, `O_TRUNC`, `O_DIRECTORY`,
//! `O_NOFOLLOW`) before an [`OpenFile`] is made.

use alloc::sync::Arc;

use crate::{
    file::OpenFile,
    flags::{
        O_ACCMODE, O_CREAT, O_DIRECTORY, O_EXCL, O_NOFOLLOW, O_PATH, O_RDONLY, O_TMPFILE, O_TRUNC,
        O_WRONLY,
    },
    inode::{Inode, NodeKind},
    metadata::FileType,
    path::LastComponent,
    vfs::{PathContext, Vfs, MAY_READ, MAY_WRITE},
    Errno,
};

impl Vfs {
    /// `open(path, flags, mode)` relative to the context's current
    /// directory; the umask is the context's. A FIFO opens through the
    /// registered [`crate::FifoOpener`] (`ENXIO` without one); a socket or
    /// block device cannot be opened (`ENXIO`), except with `O_PATH` (see
    /// [`Vfs::open_path_only`]); `O_TMPFILE` cannot be asked for
    /// (`EOPNOTSUPP`).
    pub fn open(
        &self,
        context: &PathContext,
        path: &[u8],
        flags: u32,
        mode: u32,
    ) -> Result<Arc<OpenFile>, Errno> {
        self.open_at(context, &context.cwd, path, flags, mode)
    }

    /// `openat`: as [`Vfs::open`], relative to directory `start`.
    pub fn open_at(
        &self,
        context: &PathContext,
        start: &Arc<dyn Inode>,
        path: &[u8],
        flags: u32,
        mode: u32,
    ) -> Result<Arc<OpenFile>, Errno> {
        if flags & O_TMPFILE == O_TMPFILE {
            return Err(Errno::EOPNOTSUPP);
        }
        if flags & O_PATH != 0 {
            return self.open_path_only(context, start, path, flags);
        }
        if flags & O_ACCMODE == O_ACCMODE {
            return Err(Errno::EINVAL);
        }
        let (inode, created, opened_as) = if flags & O_CREAT != 0 {
            self.open_or_create(context, start, path, flags, mode)?
        } else {
            let follow = flags & O_NOFOLLOW == 0;
            let (inode, opened_as) = self.resolve_at_naming(context, start, path, follow)?;
            (inode, false, opened_as)
        };
        let file_type = inode.file_type();
        if file_type == FileType::Symlink {
            // Only reached with O_NOFOLLOW.
            return Err(Errno::ELOOP);
        }
        if flags & O_DIRECTORY != 0 && file_type != FileType::Directory {
            return Err(Errno::ENOTDIR);
        }
        let access = flags & O_ACCMODE;
        let writes = access != O_RDONLY;
        if file_type == FileType::Directory && (writes || flags & O_CREAT != 0) {
            return Err(Errno::EISDIR);
        }
        if !created {
            // A file just made may be opened as asked whatever its mode.
            let mut want = 0;
            if access != O_WRONLY {
                want |= MAY_READ;
            }
            if writes || flags & O_TRUNC != 0 {
                want |= MAY_WRITE;
            }
            Vfs::check_access(context, &*inode, want)?;
        }
        if (writes || flags & O_TRUNC != 0) && self.is_read_only(&*inode) {
            return Err(Errno::EROFS);
        }
        let device = match file_type {
            FileType::CharDevice => Some(self.devices().get(inode.metadata().rdev)?),
            FileType::Fifo => match self.fifo_opener.get() {
                Some(opener) => Some(opener.open_fifo(&inode, flags)?),
                None => return Err(Errno::ENXIO),
            },
            FileType::BlockDevice | FileType::Socket => return Err(Errno::ENXIO),
            _ => None,
        };
        if flags & O_TRUNC != 0 && file_type == FileType::Regular && !created {
            inode.truncate(0)?;
        }
        let file = OpenFile::new(inode, flags, device);
        Ok(Arc::new(match opened_as {
            Some((directory, name)) => file.with_name(directory, name),
            None => file,
        }))
    }

    /// `open(path, O_PATH | ...)`: a description that names the file
    /// without opening it for I/O (Linux's `FMODE_PATH`): any type of file,
    /// no permission asked of it (only search permission on the way), no
    /// device opened, the symbolic link itself with `O_NOFOLLOW`. Flags
    /// other than `O_DIRECTORY`, `O_NOFOLLOW` and `O_CLOEXEC` are ignored,
    /// as Linux's `build_open_flags` does.
    fn open_path_only(
        &self,
        context: &PathContext,
        start: &Arc<dyn Inode>,
        path: &[u8],
        flags: u32,
    ) -> Result<Arc<OpenFile>, Errno> {
        let follow = flags & O_NOFOLLOW == 0;
        let (inode, opened_as) = self.resolve_at_naming(context, start, path, follow)?;
        if flags & O_DIRECTORY != 0 && inode.file_type() != FileType::Directory {
            return Err(Errno::ENOTDIR);
        }
        let kept = flags & (O_PATH | O_DIRECTORY | O_NOFOLLOW);
        let file = OpenFile::new(inode, kept, None);
        Ok(Arc::new(match opened_as {
            Some((directory, name)) => file.with_name(directory, name),
            None => file,
        }))
    }

    /// The `O_CREAT` path: the existing file (following a symbolic link in
    /// last position unless `O_NOFOLLOW`, even a dangling one, where Linux
    /// creates the target) or a new regular file; whether it was made; the
    /// directory it is in and its name there.
    fn open_or_create(
        &self,
        context: &PathContext,
        start: &Arc<dyn Inode>,
        path: &[u8],
        flags: u32,
        mode: u32,
    ) -> Result<(Arc<dyn Inode>, bool, crate::path::WalkEnd), Errno> {
        let mut target = self.resolve_parent_at(context, start, path)?;
        let mut follows = 0;
        loop {
            let name = match &target.last {
                LastComponent::Name(name) => name.clone(),
                // "/", "." and "..": directories.
                _ => return Err(Errno::EISDIR),
            };
            if target.trailing_slash {
                return Err(Errno::EISDIR);
            }
            match target.parent.lookup(&name) {
                Ok(existing) => {
                    if flags & O_EXCL != 0 {
                        return Err(Errno::EEXIST);
                    }
                    let existing = self.follow_mounts(existing);
                    if existing.file_type() == FileType::Directory {
                        // Refused with EISDIR by the caller.
                        return Ok((existing, false, None));
                    }
                    if existing.file_type() != FileType::Symlink {
                        return Ok((existing, false, Some((target.parent.clone(), name))));
                    }
                    if flags & O_NOFOLLOW != 0 {
                        return Err(Errno::ELOOP);
                    }
                    follows += 1;
                    if follows > crate::path::MAX_SYMLINK_FOLLOWS {
                        return Err(Errno::ELOOP);
                    }
                    let link = existing.readlink()?;
                    let parent = target.parent.clone();
                    target = self.resolve_parent_at(context, &parent, &link)?;
                }
                Err(Errno::ENOENT) => {
                    self.check_modify(context, &*target.parent)?;
                    let node = crate::namespace::new_node(
                        context,
                        &*target.parent,
                        NodeKind::Regular,
                        mode,
                    );
                    return match target.parent.create(&name, node) {
                        Ok(inode) => Ok((inode, true, Some((target.parent.clone(), name)))),
                        // Made by someone else meanwhile: open theirs.
                        Err(Errno::EEXIST) if flags & O_EXCL == 0 => {
                            let inode = target.parent.lookup(&name)?;
                            Ok((inode, false, Some((target.parent.clone(), name))))
                        }
                        Err(error) => Err(error),
                    };
                }
                Err(error) => return Err(error),
            }
        }
    }
}
