//! Extended attributes: `getxattr`, `listxattr`, `setxattr`,
//! `removexattr`, each in its path, `l` (no link followed) and `f`
//! (descriptor) form.
//!
//! The values live in the file system (`vfs::Inode`'s extended
//! attribute methods; the in-memory file system keeps them as tmpfs
//! does). The rules of Linux's `fs/xattr.c` are here: the argument
//! checks and their order (target, flags, name, size), the namespaces a
//! name must start with (`security.`, `trusted.`, `user.`; others are
//! `EOPNOTSUPP`, as on a tmpfs without POSIX ACLs), and who may use which
//! (`xattr_permission`): `trusted.` needs `CAP_SYS_ADMIN`, `user.` only
//! belongs to regular files and directories and follows the file's
//! mode, `security.` is open to all.

use alloc::{sync::Arc, vec::Vec};

use linux_abi::{
    fcntl::{AT_FDCWD, AT_SYMLINK_NOFOLLOW},
    xattr::*,
};
use vfs::{AttributeWrite, Errno, FileType, Inode, Vfs, MAY_READ, MAY_WRITE};

use crate::{
    credentials::{CAP_FOWNER, CAP_SYS_ADMIN},
    fs, user, LinuxProcess,
};

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

/// The file `target` names (`ENOENT`, `EBADF`, `EFAULT`, ...).
fn inode_of(vfs: &Vfs, files: &LinuxProcess, target: Target) -> Result<Arc<dyn Inode>, Errno> {
    match target {
        Target::Path(path) => fs::inode_at(vfs, files, AT_FDCWD, path, 0),
        Target::Link(path) => fs::inode_at(vfs, files, AT_FDCWD, path, AT_SYMLINK_NOFOLLOW),
        Target::Descriptor(fd) => Ok(files.fds.get(fd as i64)?.inode().clone()),
    }
}

/// Reads an attribute name: `ERANGE` if it is empty or longer than
/// `XATTR_NAME_MAX`, `EFAULT` where it cannot be read.
fn read_name(address: u64) -> Result<Vec<u8>, Errno> {
    let name = user::read_c_string(address, XATTR_NAME_MAX + 1).map_err(|error| match error {
        Errno::ENAMETOOLONG => Errno::ERANGE,
        other => other,
    })?;
    if name.is_empty() {
        return Err(Errno::ERANGE);
    }
    Ok(name)
}

/// The namespaces the file systems here keep.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Namespace {
    Security,
    Trusted,
    User,
}

/// The namespace of `name`: `EOPNOTSUPP` for one no file system here
/// keeps (`system.`, unknown prefixes), `EINVAL` for a bare prefix (as
/// Linux's `xattr_resolve_name`).
fn namespace_of(name: &[u8]) -> Result<Namespace, Errno> {
    let namespaces = [
        (XATTR_SECURITY_PREFIX, Namespace::Security),
        (XATTR_TRUSTED_PREFIX, Namespace::Trusted),
        (XATTR_USER_PREFIX, Namespace::User),
    ];
    for (prefix, namespace) in namespaces {
        if let Some(rest) = name.strip_prefix(prefix) {
            return if rest.is_empty() {
                Err(Errno::EINVAL)
            } else {
                Ok(namespace)
            };
        }
    }
    Err(Errno::EOPNOTSUPP)
}

/// Linux's `xattr_permission`: whether the caller may read (`writes`
/// false) or change attribute `name` of `inode`.
fn check_permission(
    files: &LinuxProcess,
    inode: &dyn Inode,
    name: &[u8],
    writes: bool,
) -> Result<(), Errno> {
    let refused = if writes { Errno::EPERM } else { Errno::ENODATA };
    match namespace_of(name) {
        Ok(Namespace::Security) => return Ok(()),
        Ok(Namespace::Trusted) => {
            return if files.credentials().capable(CAP_SYS_ADMIN) {
                Ok(())
            } else {
                Err(refused)
            };
        }
        Ok(Namespace::User) => {
            let file_type = inode.file_type();
            if file_type != FileType::Regular && file_type != FileType::Directory {
                return Err(refused);
            }
            let metadata = inode.metadata();
            let context = files.context();
            // In a sticky directory only its owner may write them.
            let is_sticky = file_type == FileType::Directory && metadata.mode & 0o1000 != 0;
            if is_sticky
                && writes
                && metadata.uid != context.uid
                && !files.credentials().capable(CAP_FOWNER)
            {
                return Err(Errno::EPERM);
            }
        }
        // Refused by the file system after the mode check, as on Linux.
        Err(_) => {}
    }
    let want = if writes { MAY_WRITE } else { MAY_READ };
    if !Vfs::permitted(&files.context(), &inode.metadata(), want) {
        return Err(Errno::EACCES);
    }
    Ok(())
}

/// `getxattr(path, name, value, size)` and its forms: the value's length,
/// the value copied out unless `size` is 0; `ERANGE` if it does not fit
/// (`E2BIG` when even the largest buffer would not).
pub fn get(
    vfs: &Vfs,
    files: &LinuxProcess,
    target: Target,
    name: u64,
    value: u64,
    size: u64,
) -> Result<i64, Errno> {
    let inode = inode_of(vfs, files, target)?;
    let name = read_name(name)?;
    let size = (size as usize).min(XATTR_SIZE_MAX);
    check_permission(files, &*inode, &name, false)?;
    namespace_of(&name)?;
    let stored = inode.extended_attribute(&name)?;
    if size == 0 {
        return Ok(stored.len() as i64);
    }
    if stored.len() > size {
        return Err(if size >= XATTR_SIZE_MAX {
            Errno::E2BIG
        } else {
            Errno::ERANGE
        });
    }
    user::write(value, &stored)?;
    Ok(stored.len() as i64)
}

/// `listxattr(path, list, size)` and its forms: the names, each ending in
/// NUL (`trusted.` ones only for `CAP_SYS_ADMIN`), and their length;
/// only the length when `size` is 0; `ERANGE` if they do not fit
/// (`E2BIG` past `XATTR_LIST_MAX`).
pub fn list(
    vfs: &Vfs,
    files: &LinuxProcess,
    target: Target,
    list: u64,
    size: u64,
) -> Result<i64, Errno> {
    let inode = inode_of(vfs, files, target)?;
    let size = (size as usize).min(XATTR_LIST_MAX);
    let sees_trusted = files.credentials().capable(CAP_SYS_ADMIN);
    let mut names = Vec::new();
    for name in inode.extended_attribute_names() {
        if namespace_of(&name) == Ok(Namespace::Trusted) && !sees_trusted {
            continue;
        }
        names.extend_from_slice(&name);
        names.push(0);
    }
    if size == 0 {
        return Ok(names.len() as i64);
    }
    if names.len() > size {
        return Err(if size >= XATTR_LIST_MAX {
            Errno::E2BIG
        } else {
            Errno::ERANGE
        });
    }
    user::write(list, &names)?;
    Ok(names.len() as i64)
}

/// `setxattr(path, name, value, size, flags)` and its forms: `EINVAL` for
/// flags other than `XATTR_CREATE` or `XATTR_REPLACE`, `E2BIG` past
/// `XATTR_SIZE_MAX`, `EEXIST`/`ENODATA` as those flags say.
pub fn set(
    vfs: &Vfs,
    files: &LinuxProcess,
    target: Target,
    [name, value, size, flags]: [u64; 4],
) -> Result<i64, Errno> {
    let inode = inode_of(vfs, files, target)?;
    let how = match flags {
        0 => AttributeWrite::Any,
        XATTR_CREATE => AttributeWrite::Create,
        XATTR_REPLACE => AttributeWrite::Replace,
        _ => return Err(Errno::EINVAL),
    };
    let name = read_name(name)?;
    let size = usize::try_from(size).map_err(|_| Errno::E2BIG)?;
    if size > XATTR_SIZE_MAX {
        return Err(Errno::E2BIG);
    }
    let mut bytes = alloc::vec![0; size];
    user::read(value, &mut bytes)?;
    if vfs.is_read_only(&*inode) {
        return Err(Errno::EROFS);
    }
    check_permission(files, &*inode, &name, true)?;
    namespace_of(&name)?;
    inode.set_extended_attribute(&name, &bytes, how).map(|()| 0)
}

/// `removexattr(path, name)` and its forms: `ENODATA` if there is no such
/// attribute.
pub fn remove(vfs: &Vfs, files: &LinuxProcess, target: Target, name: u64) -> Result<i64, Errno> {
    let inode = inode_of(vfs, files, target)?;
    let name = read_name(name)?;
    if vfs.is_read_only(&*inode) {
        return Err(Errno::EROFS);
    }
    check_permission(files, &*inode, &name, true)?;
    namespace_of(&name)?;
    inode.remove_extended_attribute(&name).map(|()| 0)
}
