//! `struct statfs` (`statfs`, `fstatfs`) on x86_64: 120 bytes.

use crate::bytes::put;

/// `TMPFS_MAGIC` (`linux/magic.h`): `f_type` of an in-memory file system.
pub const TMPFS_MAGIC: i64 = 0x0102_1994;
/// `ST_VALID`: `f_flags` is filled in.
pub const ST_VALID: i64 = 0x20;

/// x86_64 `struct statfs` (`asm-generic/statfs.h`, 64-bit longs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Statfs {
    /// `f_type`: the file system's magic number.
    pub fs_type: i64,
    /// `f_bsize`: the preferred block size.
    pub bsize: i64,
    /// `f_blocks`: blocks in all, in `f_frsize` units.
    pub blocks: u64,
    /// `f_bfree`: free blocks.
    pub bfree: u64,
    /// `f_bavail`: free blocks for unprivileged users.
    pub bavail: u64,
    /// `f_files`: inodes in all.
    pub files: u64,
    /// `f_ffree`: free inodes.
    pub ffree: u64,
    /// `f_fsid`: the file system's id.
    pub fsid: u64,
    /// `f_namelen`: the longest file name.
    pub namelen: i64,
    /// `f_frsize`: the fragment size.
    pub frsize: i64,
    /// `f_flags`: mount flags (`ST_*`).
    pub flags: i64,
}

impl Statfs {
    /// Bytes of a `struct statfs`.
    pub const BYTES: usize = 120;

    /// The record as user space reads it: type@0, bsize@8, blocks@16,
    /// bfree@24, bavail@32, files@40, ffree@48, fsid@56, namelen@64,
    /// frsize@72, flags@80, 32 spare bytes.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        put(&mut bytes, 0, self.fs_type.to_le_bytes());
        put(&mut bytes, 8, self.bsize.to_le_bytes());
        put(&mut bytes, 16, self.blocks.to_le_bytes());
        put(&mut bytes, 24, self.bfree.to_le_bytes());
        put(&mut bytes, 32, self.bavail.to_le_bytes());
        put(&mut bytes, 40, self.files.to_le_bytes());
        put(&mut bytes, 48, self.ffree.to_le_bytes());
        put(&mut bytes, 56, self.fsid.to_le_bytes());
        put(&mut bytes, 64, self.namelen.to_le_bytes());
        put(&mut bytes, 72, self.frsize.to_le_bytes());
        put(&mut bytes, 80, self.flags.to_le_bytes());
        bytes
    }
}
