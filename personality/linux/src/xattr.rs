//! Extended attributes: `getxattr`, `listxattr`, `setxattr`,
//! `removexattr`, each in its path, `l` (no link followed) and `f`
//! (descriptor) form.
//!
//! The in-memory file system keeps no extended attributes, and answers
//! as Linux's `tmpfs` does for a file without any: reading one is
//! `ENODATA`, the list is empty, and setting one is `EOPNOTSUPP`. That is
//! what coreutils' `ls -l` asks (for ACLs and SELinux labels) and takes as
//! "none".

use linux_abi::fcntl::{AT_FDCWD, AT_SYMLINK_NOFOLLOW};
use vfs::{Errno, Vfs};

use crate::{fs, user, LinuxProcess};

/// Longest attribute name (`XATTR_NAME_MAX`).
const NAME_MAX: usize = 255;

/// What an attribute call names: a path (following a last symbolic link
/// or not) or a descriptor.
#[derive(Clone, Copy)]
pub enum Target {
    /// A path, following its last link.
    Path(u64),
    /// A path, not following its last link (the `l` forms).
    Link(u64),
    /// A descriptor (the `f` forms).
    Descriptor(u64),
}

/// Checks that the target exists (`ENOENT`, `EBADF`, ...) and the name is
/// readable and not too long (`EFAULT`, `ERANGE`).
fn check(vfs: &Vfs, files: &LinuxProcess, target: Target, name: Option<u64>) -> Result<(), Errno> {
    match target {
        Target::Path(path) => fs::inode_at(vfs, files, AT_FDCWD, path, 0).map(drop)?,
        Target::Link(path) => {
            fs::inode_at(vfs, files, AT_FDCWD, path, AT_SYMLINK_NOFOLLOW).map(drop)?
        }
        Target::Descriptor(fd) => files.fds.get(fd as i64).map(drop)?,
    }
    if let Some(name) = name {
        let name = user::read_c_string(name, NAME_MAX + 1).map_err(|error| match error {
            Errno::ENAMETOOLONG => Errno::ERANGE,
            other => other,
        })?;
        if name.is_empty() {
            return Err(Errno::ERANGE);
        }
    }
    Ok(())
}

/// `getxattr(path, name, value, size)` and its forms: no such attribute.
pub fn get(vfs: &Vfs, files: &LinuxProcess, target: Target, name: u64) -> Result<i64, Errno> {
    check(vfs, files, target, Some(name))?;
    Err(Errno::ENODATA)
}

/// `listxattr(path, list, size)` and its forms: an empty list.
pub fn list(vfs: &Vfs, files: &LinuxProcess, target: Target) -> Result<i64, Errno> {
    check(vfs, files, target, None)?;
    Ok(0)
}

/// `setxattr(path, name, value, size, flags)` and its forms: not
/// supported.
pub fn set(vfs: &Vfs, files: &LinuxProcess, target: Target, name: u64) -> Result<i64, Errno> {
    check(vfs, files, target, Some(name))?;
    Err(Errno::EOPNOTSUPP)
}

/// `removexattr(path, name)` and its forms: no such attribute.
pub fn remove(vfs: &Vfs, files: &LinuxProcess, target: Target, name: u64) -> Result<i64, Errno> {
    check(vfs, files, target, Some(name))?;
    Err(Errno::ENODATA)
}
