//! The calls on paths: `openat` (and `open`, `creat`), the `stat` family
//! and `statx`, `faccessat`, `mkdirat`, `unlinkat` (`unlink`, `rmdir`),
//! `renameat2`, `linkat`, `symlinkat`, `readlinkat`, `truncate`,
//! `fchmodat`, `fchownat` (`chown`, `lchown`), `utimensat` (`utimes`,
//! `futimesat`, `utime`), `getcwd`, `chdir`, `fchdir`, `chroot`.
//!
//! A relative path starts at the directory a descriptor names (`dirfd`),
//! or at the current directory for `AT_FDCWD`; an absolute one ignores
//! `dirfd`.

use alloc::{sync::Arc, vec::Vec};

use linux_abi::{
    fcntl::*,
    // The record as user space passes it, apart from the VFS's Timespec.
    time::{Timespec as UserTimespec, Timeval, UTIME_NOW, UTIME_OMIT},
};
use vfs::{
    same_inode, stat::Stat, Errno, FileType, Inode, PathContext, SetAttributes, TimeChange,
    Timespec, Vfs,
};

use crate::{user, LinuxProcess};

/// `faccessat` modes: existence only, or read/write/execute bits.
const F_OK: u64 = 0;

/// Whether a `dirfd` argument is `AT_FDCWD`: an `int`, so only the low 32
/// bits count (glibc passes -100 zero-extended).
fn is_cwd(dirfd: u64) -> bool {
    dirfd as i32 == AT_FDCWD as i32
}

/// The context a path given with `dirfd` resolves in.
fn context_at(files: &LinuxProcess, dirfd: u64, path: &[u8]) -> Result<PathContext, Errno> {
    let mut context = files.context();
    if path.first() == Some(&b'/') || is_cwd(dirfd) {
        return Ok(context);
    }
    let directory = files.fds.get_raw(dirfd as i64)?.inode().clone();
    if directory.file_type() != FileType::Directory {
        return Err(Errno::ENOTDIR);
    }
    context.cwd = directory;
    Ok(context)
}

/// The inode a `*at` call with `AT_EMPTY_PATH` and an empty path names:
/// the descriptor's own file.
fn empty_path_inode(files: &LinuxProcess, dirfd: u64) -> Result<Arc<dyn Inode>, Errno> {
    if is_cwd(dirfd) {
        return Ok(files.context().cwd);
    }
    Ok(files.fds.get_raw(dirfd as i64)?.inode().clone())
}

/// Reads the path argument, allowing an empty one with `AT_EMPTY_PATH`.
fn path_argument(address: u64, at_flags: u64) -> Result<Vec<u8>, Errno> {
    if at_flags & AT_EMPTY_PATH != 0 {
        return user::read_c_string(address, vfs::PATH_MAX);
    }
    user::read_path(address)
}

/// `openat(dirfd, path, flags, mode)`: a new descriptor (lowest free).
pub fn openat(
    vfs: &Vfs,
    files: &LinuxProcess,
    dirfd: u64,
    path: u64,
    open_flags: u64,
    mode: u64,
) -> Result<i64, Errno> {
    let path = user::read_path(path)?;
    let context = context_at(files, dirfd, &path)?;
    let open_flags = open_flags as u32;
    let file = vfs.open(&context, &path, open_flags, mode as u32 & 0o7777)?;
    let cloexec = open_flags & vfs::flags::O_CLOEXEC != 0;
    files.fds.install(file, 0, cloexec).map(i64::from)
}

/// The inode `(dirfd, path, flags)` names, for the `stat` family.
pub(crate) fn inode_at(
    vfs: &Vfs,
    files: &LinuxProcess,
    dirfd: u64,
    path: u64,
    at_flags: u64,
) -> Result<Arc<dyn Inode>, Errno> {
    let path = path_argument(path, at_flags)?;
    if path.is_empty() {
        return empty_path_inode(files, dirfd);
    }
    let context = context_at(files, dirfd, &path)?;
    vfs.resolve(&context, &path, at_flags & AT_SYMLINK_NOFOLLOW == 0)
}

/// `newfstatat(dirfd, path, statbuf, flags)` (and `stat`, `lstat`).
pub fn fstatat(
    vfs: &Vfs,
    files: &LinuxProcess,
    dirfd: u64,
    path: u64,
    buffer: u64,
    at_flags: u64,
) -> Result<i64, Errno> {
    if at_flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT) != 0 {
        return Err(Errno::EINVAL);
    }
    let inode = inode_at(vfs, files, dirfd, path, at_flags)?;
    user::write(buffer, &Stat::from(&inode.metadata()).to_bytes())?;
    Ok(0)
}

/// `statx(dirfd, path, flags, mask, statxbuf)`: every basic field is
/// filled whatever the mask asks (Linux may return more than asked).
/// As Linux's `do_statx`, before the path is looked at: `EINVAL` for
/// unknown flags, for both sync types at once, and for a mask with
/// `STATX__RESERVED`. Flags and mask are `unsigned int`s.
pub fn statx(
    vfs: &Vfs,
    files: &LinuxProcess,
    dirfd: u64,
    path: u64,
    at_flags: u64,
    mask: u64,
    buffer: u64,
) -> Result<i64, Errno> {
    let at_flags = u64::from(at_flags as u32);
    let known = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_EMPTY_PATH | AT_STATX_SYNC_TYPE;
    if at_flags & !known != 0
        || at_flags & AT_STATX_SYNC_TYPE == AT_STATX_SYNC_TYPE
        || u64::from(mask as u32) & STATX_RESERVED != 0
    {
        return Err(Errno::EINVAL);
    }
    let at_flags = at_flags & (AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH);
    let inode = inode_at(vfs, files, dirfd, path, at_flags)?;
    let stat = Stat::from(&inode.metadata());
    user::write(buffer, &vfs::Statx::from(&stat).to_bytes())?;
    Ok(0)
}

/// `faccessat2(dirfd, path, mode, flags)` (and `access`, `faccessat`).
pub fn faccessat(
    vfs: &Vfs,
    files: &LinuxProcess,
    dirfd: u64,
    path: u64,
    mode: u64,
    at_flags: u64,
) -> Result<i64, Errno> {
    if mode & !7 != 0 || at_flags & !(AT_SYMLINK_NOFOLLOW | AT_EACCESS | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let inode = inode_at(vfs, files, dirfd, path, at_flags)?;
    if mode == F_OK {
        return Ok(0);
    }
    let context = files.context();
    if Vfs::permitted(&context, &inode.metadata(), mode as u32) {
        Ok(0)
    } else {
        Err(Errno::EACCES)
    }
}

/// `mkdirat(dirfd, path, mode)`.
pub fn mkdirat(
    vfs: &Vfs,
    files: &LinuxProcess,
    dirfd: u64,
    path: u64,
    mode: u64,
) -> Result<i64, Errno> {
    let path = user::read_path(path)?;
    let context = context_at(files, dirfd, &path)?;
    vfs.mkdir(&context, &path, mode as u32).map(|_| 0)
}

/// `mknodat(dirfd, path, mode, dev)` (and `mknod`): a regular file,
/// FIFO, socket or (for root) device node. `dev` is the kernel's 32-bit
/// encoding (`new_decode_dev`), which for every device number Spindle
/// has is the C library's `makedev` value cut to 32 bits.
pub fn mknodat(
    vfs: &Vfs,
    files: &LinuxProcess,
    dirfd: u64,
    path: u64,
    mode: u64,
    dev: u64,
) -> Result<i64, Errno> {
    let path = user::read_path(path)?;
    let context = context_at(files, dirfd, &path)?;
    let dev = u64::from(dev as u32);
    let rdev = linux_abi::stat::makedev(linux_abi::stat::major(dev), linux_abi::stat::minor(dev));
    vfs.mknod(&context, &path, mode as u32, rdev).map(|_| 0)
}

/// `unlinkat(dirfd, path, flags)` (and `unlink`, `rmdir`).
pub fn unlinkat(
    vfs: &Vfs,
    files: &LinuxProcess,
    dirfd: u64,
    path: u64,
    at_flags: u64,
) -> Result<i64, Errno> {
    if at_flags & !AT_REMOVEDIR != 0 {
        return Err(Errno::EINVAL);
    }
    let path = user::read_path(path)?;
    let context = context_at(files, dirfd, &path)?;
    if at_flags & AT_REMOVEDIR != 0 {
        vfs.rmdir(&context, &path)?;
    } else {
        vfs.unlink(&context, &path)?;
    }
    Ok(0)
}

/// Two paths in one context (for `rename` and `link`, which the VFS
/// resolves in one): when their directories differ, the second is made
/// absolute from its directory's path.
fn two_paths(
    vfs: &Vfs,
    files: &LinuxProcess,
    old_dirfd: u64,
    old: u64,
    new_dirfd: u64,
    new: u64,
) -> Result<(PathContext, Vec<u8>, Vec<u8>), Errno> {
    let old = user::read_path(old)?;
    let mut new = user::read_path(new)?;
    let context = context_at(files, old_dirfd, &old)?;
    let new_context = context_at(files, new_dirfd, &new)?;
    if new.first() != Some(&b'/') && !same_inode(&*context.cwd, &*new_context.cwd) {
        let mut absolute = vfs.path_of(&new_context, &new_context.cwd)?;
        absolute.push(b'/');
        absolute.append(&mut new);
        new = absolute;
    }
    Ok((context, old, new))
}

/// `renameat2(olddirfd, old, newdirfd, new, flags)` (and `rename`,
/// `renameat`): `RENAME_NOREPLACE` is honoured, exchange is `EINVAL`.
pub fn renameat(
    vfs: &Vfs,
    files: &LinuxProcess,
    old_dirfd: u64,
    old: u64,
    new_dirfd: u64,
    new: u64,
    rename_flags: u64,
) -> Result<i64, Errno> {
    // RENAME_WHITEOUT needs whiteout nodes (overlay file systems) that
    // no file system here has: EINVAL, as Linux says for such a one.
    let exchanges = rename_flags & RENAME_EXCHANGE != 0;
    let no_replace = rename_flags & RENAME_NOREPLACE != 0;
    if rename_flags & !(RENAME_NOREPLACE | RENAME_EXCHANGE) != 0 || (exchanges && no_replace) {
        return Err(Errno::EINVAL);
    }
    let (context, old, new) = two_paths(vfs, files, old_dirfd, old, new_dirfd, new)?;
    if exchanges {
        return vfs.exchange(&context, &old, &new).map(|()| 0);
    }
    if no_replace && vfs.resolve(&context, &new, false).is_ok() {
        return Err(Errno::EEXIST);
    }
    vfs.rename(&context, &old, &new).map(|()| 0)
}

/// `linkat(olddirfd, old, newdirfd, new, flags)` (and `link`).
pub fn linkat(
    vfs: &Vfs,
    files: &LinuxProcess,
    old_dirfd: u64,
    old: u64,
    new_dirfd: u64,
    new: u64,
    at_flags: u64,
) -> Result<i64, Errno> {
    if at_flags & !(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let (context, old, new) = two_paths(vfs, files, old_dirfd, old, new_dirfd, new)?;
    vfs.link(&context, &old, &new, at_flags & AT_SYMLINK_FOLLOW != 0)
        .map(|()| 0)
}

/// `symlinkat(target, dirfd, path)` (and `symlink`).
pub fn symlinkat(
    vfs: &Vfs,
    files: &LinuxProcess,
    target: u64,
    dirfd: u64,
    path: u64,
) -> Result<i64, Errno> {
    let target = user::read_path(target)?;
    let path = user::read_path(path)?;
    let context = context_at(files, dirfd, &path)?;
    vfs.symlink(&context, &target, &path).map(|_| 0)
}

/// `readlinkat(dirfd, path, buf, size)` (and `readlink`): the target,
/// cut to `size`, without a NUL.
pub fn readlinkat(
    vfs: &Vfs,
    files: &LinuxProcess,
    dirfd: u64,
    path: u64,
    buffer: u64,
    size: u64,
) -> Result<i64, Errno> {
    if size as i64 <= 0 {
        return Err(Errno::EINVAL);
    }
    // An empty path names `dirfd`'s own file (Linux's `LOOKUP_EMPTY`
    // for `readlinkat`, without a flag): a link opened with
    // `O_PATH | O_NOFOLLOW`; for anything else Linux's `do_readlinkat`
    // answers `ENOENT`, as for an empty path elsewhere.
    let path = user::read_c_string(path, vfs::PATH_MAX)?;
    let target = if path.is_empty() {
        let inode = empty_path_inode(files, dirfd)?;
        if inode.file_type() != FileType::Symlink {
            return Err(Errno::ENOENT);
        }
        inode.readlink()?
    } else {
        let context = context_at(files, dirfd, &path)?;
        vfs.readlink(&context, &path)?
    };
    let length = target.len().min(size as usize);
    user::write(buffer, &target[..length])?;
    Ok(length as i64)
}

/// `truncate(path, length)`.
pub fn truncate(vfs: &Vfs, files: &LinuxProcess, path: u64, length: u64) -> Result<i64, Errno> {
    let path = user::read_path(path)?;
    vfs.truncate(&files.context(), &path, length as i64)
        .map(|()| 0)
}

/// `fchmodat(dirfd, path, mode)` (and `chmod`).
pub fn fchmodat(
    vfs: &Vfs,
    files: &LinuxProcess,
    dirfd: u64,
    path: u64,
    mode: u64,
) -> Result<i64, Errno> {
    let inode = inode_at(vfs, files, dirfd, path, 0)?;
    let changes = SetAttributes {
        mode: Some(mode as u32 & 0o7777),
        ..SetAttributes::default()
    };
    vfs.set_attributes(&files.context(), &inode, &changes)
        .map(|()| 0)
}

/// `S_ISUID`, `S_ISGID` and `S_IXGRP`: what a change of owner clears.
const S_ISUID: u32 = 0o4000;
const S_ISGID: u32 = 0o2000;
const S_IXGRP: u32 = 0o010;

/// An owner argument of the `chown` family: a `uid_t`/`gid_t`, where -1
/// leaves the owner as it is.
fn owner_argument(id: u64) -> Option<u32> {
    let id = id as u32;
    (id != u32::MAX).then_some(id)
}

/// Changes `inode`'s owner and group (`None`: unchanged). As on Linux, a
/// non-directory loses its set-user-id bit, and its set-group-id bit if
/// group-executable, whoever asks and even when neither id changes;
/// `ctime` moves.
pub(crate) fn change_owner(
    vfs: &Vfs,
    files: &LinuxProcess,
    inode: &Arc<dyn Inode>,
    uid: u64,
    gid: u64,
) -> Result<i64, Errno> {
    let mut changes = SetAttributes {
        uid: owner_argument(uid),
        gid: owner_argument(gid),
        ..SetAttributes::default()
    };
    let mode = inode.metadata().mode;
    if inode.file_type() != FileType::Directory {
        let mut kept = mode & 0o7777 & !S_ISUID;
        if mode & S_IXGRP != 0 {
            kept &= !S_ISGID;
        }
        if kept != mode & 0o7777 {
            changes.mode = Some(kept);
        }
    }
    vfs.set_attributes(&files.context(), inode, &changes)
        .map(|()| 0)
}

/// `fchownat(dirfd, path, uid, gid, flags)` (and `chown`, `lchown`).
pub fn fchownat(
    vfs: &Vfs,
    files: &LinuxProcess,
    dirfd: u64,
    path: u64,
    uid: u64,
    gid: u64,
    at_flags: u64,
) -> Result<i64, Errno> {
    if at_flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let inode = inode_at(vfs, files, dirfd, path, at_flags)?;
    change_owner(vfs, files, &inode, uid, gid)
}

/// New access and modification times: `None` leaves one as it is.
type Times = [Option<TimeChange>; 2];

/// Sets the times of what `(dirfd, path, flags)` names, or (for a null
/// `path`, Linux's `futimens`) of the file `dirfd` names itself: `times`
/// `None` means both now. `EFAULT` for a null path with `AT_FDCWD`.
fn set_times(
    vfs: &Vfs,
    files: &LinuxProcess,
    dirfd: u64,
    path: u64,
    times: Option<Times>,
    at_flags: u64,
) -> Result<i64, Errno> {
    if at_flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let inode = if path == 0 && !is_cwd(dirfd) {
        if at_flags != 0 {
            return Err(Errno::EINVAL);
        }
        files.fds.get(dirfd as i64)?.inode().clone()
    } else {
        inode_at(vfs, files, dirfd, path, at_flags)?
    };
    let [atime, mtime] = times.unwrap_or([Some(TimeChange::Now); 2]);
    let changes = SetAttributes {
        atime,
        mtime,
        ..SetAttributes::default()
    };
    vfs.set_attributes(&files.context(), &inode, &changes)
        .map(|()| 0)
}

/// Reads two `struct timespec` of `utimensat`: each a time, `UTIME_NOW`
/// or `UTIME_OMIT` in `tv_nsec`; `EINVAL` for other nanoseconds outside
/// 0..1e9.
fn read_timespecs(address: u64) -> Result<Times, Errno> {
    let mut records = [[0u8; UserTimespec::BYTES]; 2];
    user::read(address, records.as_flattened_mut())?;
    let mut times = [None; 2];
    for (time, record) in times.iter_mut().zip(&records) {
        let UserTimespec {
            sec: seconds,
            nsec: nanoseconds,
        } = UserTimespec::from_bytes(record);
        *time = match nanoseconds {
            UTIME_OMIT => None,
            UTIME_NOW => Some(TimeChange::Now),
            0..=999_999_999 => Some(TimeChange::At(Timespec {
                sec: seconds,
                nsec: nanoseconds as u32,
            })),
            _ => return Err(Errno::EINVAL),
        };
    }
    Ok(times)
}

/// `utimensat(dirfd, path, times, flags)`: both times `UTIME_OMIT` does
/// nothing, without even looking the path up (as Linux).
pub fn utimensat(
    vfs: &Vfs,
    files: &LinuxProcess,
    dirfd: u64,
    path: u64,
    times: u64,
    at_flags: u64,
) -> Result<i64, Errno> {
    let times = if times == 0 {
        None
    } else {
        Some(read_timespecs(times)?)
    };
    if times == Some([None, None]) {
        return Ok(0);
    }
    set_times(vfs, files, dirfd, path, times, at_flags)
}

/// `futimesat(dirfd, path, times)` (and `utimes`): `times` are two
/// `struct timeval` (microseconds outside 0..1e6 are `EINVAL`), or null
/// for now.
pub fn futimesat(
    vfs: &Vfs,
    files: &LinuxProcess,
    dirfd: u64,
    path: u64,
    times: u64,
) -> Result<i64, Errno> {
    let times = if times == 0 {
        None
    } else {
        let mut records = [[0u8; Timeval::BYTES]; 2];
        user::read(times, records.as_flattened_mut())?;
        let mut read = [None; 2];
        for (time, record) in read.iter_mut().zip(&records) {
            let Timeval {
                sec: seconds,
                usec: microseconds,
            } = Timeval::from_bytes(record);
            if !(0..1_000_000).contains(&microseconds) {
                return Err(Errno::EINVAL);
            }
            *time = Some(TimeChange::At(Timespec {
                sec: seconds,
                nsec: microseconds as u32 * 1000,
            }));
        }
        Some(read)
    };
    set_times(vfs, files, dirfd, path, times, 0)
}

/// `utime(path, times)`: `times` is a `struct utimbuf` (access and
/// modification seconds), or null for now.
pub fn utime(vfs: &Vfs, files: &LinuxProcess, path: u64, times: u64) -> Result<i64, Errno> {
    let times = if times == 0 {
        None
    } else {
        let seconds = user::read_u64s::<2>(times)?;
        Some(seconds.map(|seconds| Some(TimeChange::At(Timespec::from_secs(seconds as i64)))))
    };
    set_times(vfs, files, AT_FDCWD, path, times, 0)
}

/// `getcwd(buf, size)`: the path with its NUL; `ERANGE` if it does not
/// fit; the length (with the NUL) on success, as the system call returns.
pub fn getcwd(vfs: &Vfs, files: &LinuxProcess, buffer: u64, size: u64) -> Result<i64, Errno> {
    let context = files.context();
    let mut path = vfs.path_of(&context, &context.cwd)?;
    path.push(0);
    if path.len() as u64 > size {
        return Err(Errno::ERANGE);
    }
    user::write(buffer, &path)?;
    Ok(path.len() as i64)
}

/// `chdir(path)`.
pub fn chdir(vfs: &Vfs, files: &LinuxProcess, path: u64) -> Result<i64, Errno> {
    let path = user::read_path(path)?;
    let directory = vfs.directory(&files.context(), &path)?;
    files.set_cwd(directory);
    Ok(0)
}

/// `chroot(path)`: the calling process's "/" becomes the directory
/// `path` names (its current directory stays). Linux's order: the
/// lookup's errors (`ENOENT`, `ENOTDIR`, ...), `EACCES` without search
/// permission on it, then `EPERM` without `CAP_SYS_CHROOT`.
pub fn chroot(vfs: &Vfs, files: &LinuxProcess, path: u64) -> Result<i64, Errno> {
    let path = user::read_path(path)?;
    let directory = vfs.directory(&files.context(), &path)?;
    if !files
        .credentials()
        .capable(crate::credentials::CAP_SYS_CHROOT)
    {
        return Err(Errno::EPERM);
    }
    files.paths.lock().root = directory;
    Ok(0)
}

/// `fchdir(fd)`.
pub fn fchdir(files: &LinuxProcess, fd: u64) -> Result<i64, Errno> {
    let directory = files.fds.get_raw(fd as i64)?.inode().clone();
    if directory.file_type() != FileType::Directory {
        return Err(Errno::ENOTDIR);
    }
    files.set_cwd(directory);
    Ok(0)
}
