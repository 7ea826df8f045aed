//! Path resolution (Linux's `namei`): absolute and relative paths, ".",
//! "..", repeated and trailing slashes, symbolic links and mount points.
//!
//! The walk is iterative: meeting a symbolic link splices its target in
//! front of the rest of the path, so nesting costs no stack (a kernel
//! stack is small) and one counter limits all follows of a lookup to 40,
//! as in Linux.

use alloc::{sync::Arc, vec::Vec};

use crate::{
    inode::{same_inode, Inode},
    metadata::FileType,
    vfs::{PathContext, Vfs, MAY_EXEC},
    Errno,
};

/// Longest file name component (`NAME_MAX`).
pub const NAME_MAX: usize = 255;
/// Size of the longest path including its NUL (`PATH_MAX`); a path of this
/// many bytes or more is `ENAMETOOLONG`.
pub const PATH_MAX: usize = 4096;
/// Symbolic links one lookup may follow before `ELOOP` (`MAXSYMLINKS`).
pub const MAX_SYMLINK_FOLLOWS: usize = 40;

/// The last component of a path, as [`Vfs::resolve_parent`] splits it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LastComponent {
    /// An ordinary name.
    Name(Vec<u8>),
    /// "." — the directory itself.
    Dot,
    /// ".." — the parent.
    DotDot,
    /// The path was "/" (or only slashes): the root has no name.
    Root,
}

/// A path split into the directory holding its last component and that
/// component, for operations that make or remove names.
pub struct ParentAndName {
    /// The directory (symbolic links in it followed, mounts crossed).
    pub parent: Arc<dyn Inode>,
    /// The last component.
    pub last: LastComponent,
    /// Whether the path ended in '/' (which asks for a directory).
    pub trailing_slash: bool,
}

/// Rejects a path that is empty (`ENOENT`) or too long (`ENAMETOOLONG`).
fn check_path(path: &[u8]) -> Result<(), Errno> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    if path.len() >= PATH_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    Ok(())
}

/// Where a walk ended: the directory holding the final inode and its name
/// there (`None` when the path ended in "/", "." or "..", which name
/// directories).
pub(crate) type WalkEnd = Option<(Arc<dyn Inode>, Vec<u8>)>;

/// One walk's running state, shared across the symbolic links it follows.
struct Walk {
    follows: usize,
    /// Set by a walk that records where it ended: the directory holding
    /// the final inode and its name there (`None` when the path ended in
    /// "/", "." or "..", which name directories).
    last: WalkEnd,
    /// Whether to record `last` (only `open` asks, for `/proc`'s links).
    records_last: bool,
}

impl Walk {
    fn new() -> Walk {
        Walk {
            follows: 0,
            last: None,
            records_last: false,
        }
    }

    /// Counts a follow; `ELOOP` past the limit.
    fn follow(&mut self) -> Result<(), Errno> {
        self.follows += 1;
        if self.follows > MAX_SYMLINK_FOLLOWS {
            return Err(Errno::ELOOP);
        }
        Ok(())
    }
}

impl Vfs {
    /// The inode at `path`, following a symbolic link in last position if
    /// `follow_last` (one in the middle, or before a trailing slash, is
    /// always followed).
    pub fn resolve(
        &self,
        context: &PathContext,
        path: &[u8],
        follow_last: bool,
    ) -> Result<Arc<dyn Inode>, Errno> {
        check_path(path)?;
        self.walk(
            context,
            context.cwd.clone(),
            path,
            follow_last,
            &mut Walk::new(),
        )
    }

    /// As [`Vfs::resolve`], relative to directory `start` instead of the
    /// current directory (the `*at` system calls' `dirfd`).
    pub fn resolve_at(
        &self,
        context: &PathContext,
        start: &Arc<dyn Inode>,
        path: &[u8],
        follow_last: bool,
    ) -> Result<Arc<dyn Inode>, Errno> {
        check_path(path)?;
        if start.file_type() != FileType::Directory && path.first() != Some(&b'/') {
            return Err(Errno::ENOTDIR);
        }
        self.walk(context, start.clone(), path, follow_last, &mut Walk::new())
    }

    /// As [`Vfs::resolve_at`], also giving the directory the inode was
    /// found in and its name there, after following symbolic links and
    /// mounts (`None` if the path ended in "/", "." or ".."): what an
    /// open file remembers to say its path later (`/proc/PID/fd`).
    pub fn resolve_at_naming(
        &self,
        context: &PathContext,
        start: &Arc<dyn Inode>,
        path: &[u8],
        follow_last: bool,
    ) -> Result<(Arc<dyn Inode>, WalkEnd), Errno> {
        check_path(path)?;
        if start.file_type() != FileType::Directory && path.first() != Some(&b'/') {
            return Err(Errno::ENOTDIR);
        }
        let mut walk = Walk {
            records_last: true,
            ..Walk::new()
        };
        let inode = self.walk(context, start.clone(), path, follow_last, &mut walk)?;
        Ok((inode, walk.last))
    }

    /// Splits `path` into its directory (resolved) and last component.
    pub fn resolve_parent(
        &self,
        context: &PathContext,
        path: &[u8],
    ) -> Result<ParentAndName, Errno> {
        check_path(path)?;
        self.parent_and_name(context, context.cwd.clone(), path, &mut Walk::new())
    }

    /// As [`Vfs::resolve_parent`], relative to directory `start`.
    pub fn resolve_parent_at(
        &self,
        context: &PathContext,
        start: &Arc<dyn Inode>,
        path: &[u8],
    ) -> Result<ParentAndName, Errno> {
        check_path(path)?;
        if start.file_type() != FileType::Directory && path.first() != Some(&b'/') {
            return Err(Errno::ENOTDIR);
        }
        self.parent_and_name(context, start.clone(), path, &mut Walk::new())
    }

    fn parent_and_name(
        &self,
        context: &PathContext,
        start: Arc<dyn Inode>,
        path: &[u8],
        walk: &mut Walk,
    ) -> Result<ParentAndName, Errno> {
        let trimmed_length = path
            .iter()
            .rposition(|byte| *byte != b'/')
            .map_or(0, |at| at + 1);
        let trailing_slash = trimmed_length < path.len();
        let trimmed = &path[..trimmed_length];
        if trimmed.is_empty() {
            // Only slashes: the root.
            return Ok(ParentAndName {
                parent: context.root.clone(),
                last: LastComponent::Root,
                trailing_slash,
            });
        }
        let (directory, name) = match trimmed.iter().rposition(|byte| *byte == b'/') {
            Some(slash) => (&trimmed[..=slash], &trimmed[slash + 1..]),
            None => (&b""[..], trimmed),
        };
        if name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        let parent = if directory.is_empty() {
            start
        } else {
            self.walk(context, start, directory, true, walk)?
        };
        if parent.file_type() != FileType::Directory {
            return Err(Errno::ENOTDIR);
        }
        let last = match name {
            b"." => LastComponent::Dot,
            b".." => LastComponent::DotDot,
            _ => LastComponent::Name(name.to_vec()),
        };
        if last != LastComponent::Dot && last != LastComponent::DotDot {
            // The caller will look the name up in `parent`.
            Vfs::check_access(context, &*parent, MAY_EXEC)?;
        }
        Ok(ParentAndName {
            parent,
            last,
            trailing_slash,
        })
    }

    /// The parent of directory `current` for "..": stays at the context's
    /// root, and from the root of a mounted file system goes to the
    /// mount point's parent.
    fn dot_dot(
        &self,
        context: &PathContext,
        mut current: Arc<dyn Inode>,
    ) -> Result<Arc<dyn Inode>, Errno> {
        loop {
            if same_inode(&*current, &*context.root) {
                return Ok(current);
            }
            match self.mounted_on(&*current) {
                Some(mountpoint) => current = mountpoint,
                None => break,
            }
        }
        let parent = current.lookup(b"..")?;
        Ok(self.follow_mounts(parent))
    }

    /// The core walk from `start` (or the root, for an absolute path).
    fn walk(
        &self,
        context: &PathContext,
        start: Arc<dyn Inode>,
        path: &[u8],
        follow_last: bool,
        walk: &mut Walk,
    ) -> Result<Arc<dyn Inode>, Errno> {
        let mut rest: Vec<u8> = path.to_vec();
        let mut position = 0;
        let mut current = if rest.first() == Some(&b'/') {
            context.root.clone()
        } else {
            start
        };
        loop {
            while rest.get(position) == Some(&b'/') {
                position += 1;
            }
            if position >= rest.len() {
                return Ok(current);
            }
            let end = rest[position..]
                .iter()
                .position(|byte| *byte == b'/')
                .map_or(rest.len(), |at| position + at);
            let name = &rest[position..end];
            if name.len() > NAME_MAX {
                return Err(Errno::ENAMETOOLONG);
            }
            if current.file_type() != FileType::Directory {
                return Err(Errno::ENOTDIR);
            }
            Vfs::check_access(context, &*current, MAY_EXEC)?;
            // Whatever follows this component: "" at the end, otherwise
            // starting with '/' (a trailing slash counts, asking for a
            // directory).
            let after = end;
            if walk.records_last {
                // Whatever this component names, it is not (yet) a
                // name in a directory the walk ends in.
                walk.last = None;
            }
            match name {
                b"." => {}
                b".." => current = self.dot_dot(context, current)?,
                _ => {
                    let child = self.follow_mounts(current.lookup(name)?);
                    let is_end = after >= rest.len();
                    if child.file_type() == FileType::Symlink && (!is_end || follow_last) {
                        walk.follow()?;
                        let target = child.readlink()?;
                        if target.is_empty() {
                            return Err(Errno::ENOENT);
                        }
                        if target.first() == Some(&b'/') {
                            current = context.root.clone();
                        }
                        let mut spliced = target;
                        spliced.extend_from_slice(&rest[after..]);
                        if spliced.len() >= PATH_MAX * (MAX_SYMLINK_FOLLOWS + 1) {
                            return Err(Errno::ENAMETOOLONG);
                        }
                        rest = spliced;
                        position = 0;
                        continue;
                    }
                    if child.file_type() != FileType::Directory && !is_end {
                        // "file/" or "file/more".
                        return Err(Errno::ENOTDIR);
                    }
                    if walk.records_last && after >= rest.len() {
                        walk.last = Some((current.clone(), name.to_vec()));
                    }
                    current = child;
                }
            }
            position = after;
        }
    }
}
