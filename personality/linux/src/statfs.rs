//! File-system statistics: `statfs` and `fstatfs`.
//!
//! Every file system here is in memory, so each reports itself as Linux's
//! `tmpfs` does, with no block counts (programs such as `df` show it as
//! empty; the memory it uses is the kernel heap's). Programs ask mostly
//! for the type: libselinux looks for `selinuxfs` at `/sys/fs/selinux`
//! (not there: `ENOENT`), coreutils for remote file systems.

use linux_abi::fcntl::AT_FDCWD;
use vfs::{Errno, Inode, Vfs};

use crate::{fs, user, LinuxProcess};

/// `TMPFS_MAGIC` (`linux/magic.h`).
const TMPFS_MAGIC: u64 = 0x0102_1994;
/// `ST_VALID`: `f_flags` is filled in.
const ST_VALID: u64 = 0x20;
/// Bytes of `struct statfs` on x86_64.
const STATFS_BYTES: usize = 120;

/// The `struct statfs` of the file system `inode` is on.
fn record(inode: &dyn Inode) -> [u8; STATFS_BYTES] {
    let dev = inode.dev();
    let words: [(usize, u64); 6] = [
        (0, TMPFS_MAGIC),
        (8, 4096), // f_bsize
        // f_blocks .. f_ffree stay 0; f_fsid is the device number.
        (56, dev),
        (64, vfs::NAME_MAX as u64), // f_namelen
        (72, 4096),                 // f_frsize
        (80, ST_VALID),
    ];
    let mut bytes = [0u8; STATFS_BYTES];
    for (offset, value) in words {
        bytes[offset..offset + 8].copy_from_slice(&value.to_le_bytes());
    }
    bytes
}

/// `statfs(path, buf)`.
pub fn statfs(vfs: &Vfs, files: &LinuxProcess, path: u64, buffer: u64) -> Result<i64, Errno> {
    let inode = fs::inode_at(vfs, files, AT_FDCWD, path, 0)?;
    user::write(buffer, &record(&*inode))?;
    Ok(0)
}

/// `fstatfs(fd, buf)`.
pub fn fstatfs(files: &LinuxProcess, fd: u64, buffer: u64) -> Result<i64, Errno> {
    let file = files.fds.get(fd as i64)?;
    user::write(buffer, &record(&**file.inode()))?;
    Ok(0)
}
