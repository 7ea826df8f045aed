//! File-system statistics: `statfs` and `fstatfs`.
//!
//! Every file system here is in memory, so each reports itself as Linux's
//! `tmpfs` does, with no block counts (programs such as `df` show it as
//! empty; the memory it uses is the kernel heap's). Programs ask mostly
//! for the type: libselinux looks for `selinuxfs` at `/sys/fs/selinux`
//! (not there: `ENOENT`), coreutils for remote file systems.

use linux_abi::{
    fcntl::AT_FDCWD,
    statfs::{Statfs, ST_VALID, TMPFS_MAGIC},
};
use vfs::{Errno, Inode, Vfs};

use crate::{fs, user, LinuxProcess};

/// The `struct statfs` of the file system `inode` is on.
fn record(inode: &dyn Inode) -> [u8; Statfs::BYTES] {
    Statfs {
        fs_type: TMPFS_MAGIC,
        bsize: 4096,
        // No block or inode counts; the id is the device number.
        fsid: inode.dev(),
        namelen: vfs::NAME_MAX as i64,
        frsize: 4096,
        flags: ST_VALID,
        ..Statfs::default()
    }
    .to_bytes()
}

/// `statfs(path, buf)`.
pub fn statfs(vfs: &Vfs, files: &LinuxProcess, path: u64, buffer: u64) -> Result<i64, Errno> {
    let inode = fs::inode_at(vfs, files, AT_FDCWD, path, 0)?;
    user::write(buffer, &record(&*inode))?;
    Ok(0)
}

/// `fstatfs(fd, buf)`.
pub fn fstatfs(files: &LinuxProcess, fd: u64, buffer: u64) -> Result<i64, Errno> {
    let file = files.fds.get_raw(fd as i64)?;
    user::write(buffer, &record(&**file.inode()))?;
    Ok(0)
}
