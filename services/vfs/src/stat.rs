//! The `stat` and `statx` records as Linux x86_64 lays them out for user
//! space, built from an inode's [`Metadata`].

use crate::metadata::{major, minor, Metadata, Timespec};

/// Bytes of x86_64 `struct stat`.
pub const STAT_BYTES: usize = 144;
/// Bytes of `struct statx`.
pub const STATX_BYTES: usize = 256;

/// `statx` mask bit: `stx_mode`'s type bits are valid.
pub const STATX_TYPE: u32 = 0x1;
/// `statx` mask bit: `stx_mode`'s permission bits are valid.
pub const STATX_MODE: u32 = 0x2;
/// `statx` mask bit: `stx_nlink` is valid.
pub const STATX_NLINK: u32 = 0x4;
/// `statx` mask bit: `stx_uid` is valid.
pub const STATX_UID: u32 = 0x8;
/// `statx` mask bit: `stx_gid` is valid.
pub const STATX_GID: u32 = 0x10;
/// `statx` mask bit: `stx_atime` is valid.
pub const STATX_ATIME: u32 = 0x20;
/// `statx` mask bit: `stx_mtime` is valid.
pub const STATX_MTIME: u32 = 0x40;
/// `statx` mask bit: `stx_ctime` is valid.
pub const STATX_CTIME: u32 = 0x80;
/// `statx` mask bit: `stx_ino` is valid.
pub const STATX_INO: u32 = 0x100;
/// `statx` mask bit: `stx_size` is valid.
pub const STATX_SIZE: u32 = 0x200;
/// `statx` mask bit: `stx_blocks` is valid.
pub const STATX_BLOCKS: u32 = 0x400;
/// Everything `stat` also gives: what [`Stat::to_statx_bytes`] fills.
pub const STATX_BASIC_STATS: u32 = 0x7ff;

/// Linux's x86_64 `struct stat` (`arch/x86/include/uapi/asm/stat.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stat {
    /// Device holding the file.
    pub st_dev: u64,
    /// Inode number.
    pub st_ino: u64,
    /// Hard links.
    pub st_nlink: u64,
    /// Type and permissions.
    pub st_mode: u32,
    /// Owner.
    pub st_uid: u32,
    /// Group.
    pub st_gid: u32,
    /// The device a device node stands for.
    pub st_rdev: u64,
    /// Size in bytes.
    pub st_size: i64,
    /// Preferred I/O size.
    pub st_blksize: i64,
    /// Allocated 512-byte units.
    pub st_blocks: i64,
    /// Last access.
    pub st_atime: Timespec,
    /// Last modification.
    pub st_mtime: Timespec,
    /// Last status change.
    pub st_ctime: Timespec,
}

impl From<&Metadata> for Stat {
    fn from(metadata: &Metadata) -> Stat {
        // Sizes above i64::MAX cannot occur (files are limited to it).
        let signed = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
        Stat {
            st_dev: metadata.dev,
            st_ino: metadata.ino,
            st_nlink: metadata.nlink,
            st_mode: metadata.mode,
            st_uid: metadata.uid,
            st_gid: metadata.gid,
            st_rdev: metadata.rdev,
            st_size: signed(metadata.size),
            st_blksize: signed(metadata.blksize),
            st_blocks: signed(metadata.blocks),
            st_atime: metadata.atime,
            st_mtime: metadata.mtime,
            st_ctime: metadata.ctime,
        }
    }
}

fn put(buf: &mut [u8], offset: usize, bytes: &[u8]) {
    buf[offset..offset + bytes.len()].copy_from_slice(bytes);
}

impl Stat {
    /// The record exactly as x86_64 user space reads it: dev@0, ino@8,
    /// nlink@16, mode@24, uid@28, gid@32, (pad), rdev@40, size@48,
    /// blksize@56, blocks@64, atime@72, mtime@88, ctime@104 (each
    /// seconds then nanoseconds), 24 reserved bytes.
    pub fn to_bytes(&self) -> [u8; STAT_BYTES] {
        let mut buf = [0; STAT_BYTES];
        put(&mut buf, 0, &self.st_dev.to_le_bytes());
        put(&mut buf, 8, &self.st_ino.to_le_bytes());
        put(&mut buf, 16, &self.st_nlink.to_le_bytes());
        put(&mut buf, 24, &self.st_mode.to_le_bytes());
        put(&mut buf, 28, &self.st_uid.to_le_bytes());
        put(&mut buf, 32, &self.st_gid.to_le_bytes());
        put(&mut buf, 40, &self.st_rdev.to_le_bytes());
        put(&mut buf, 48, &self.st_size.to_le_bytes());
        put(&mut buf, 56, &self.st_blksize.to_le_bytes());
        put(&mut buf, 64, &self.st_blocks.to_le_bytes());
        for (offset, time) in [
            (72, self.st_atime),
            (88, self.st_mtime),
            (104, self.st_ctime),
        ] {
            put(&mut buf, offset, &time.sec.to_le_bytes());
            put(&mut buf, offset + 8, &i64::from(time.nsec).to_le_bytes());
        }
        buf
    }

    /// The `struct statx` record (`linux/stat.h`) with the
    /// [`STATX_BASIC_STATS`] fields; no birth time, attributes or mount id.
    pub fn to_statx_bytes(&self) -> [u8; STATX_BYTES] {
        let mut buf = [0; STATX_BYTES];
        put(&mut buf, 0, &STATX_BASIC_STATS.to_le_bytes());
        put(&mut buf, 4, &(self.st_blksize as u32).to_le_bytes());
        put(&mut buf, 16, &(self.st_nlink as u32).to_le_bytes());
        put(&mut buf, 20, &self.st_uid.to_le_bytes());
        put(&mut buf, 24, &self.st_gid.to_le_bytes());
        put(&mut buf, 28, &(self.st_mode as u16).to_le_bytes());
        put(&mut buf, 32, &self.st_ino.to_le_bytes());
        put(&mut buf, 40, &self.st_size.to_le_bytes());
        put(&mut buf, 48, &self.st_blocks.to_le_bytes());
        // struct statx_timestamp: i64 seconds, u32 nanoseconds, reserved.
        for (offset, time) in [
            (64, self.st_atime),
            (96, self.st_ctime),
            (112, self.st_mtime),
        ] {
            put(&mut buf, offset, &time.sec.to_le_bytes());
            put(&mut buf, offset + 8, &time.nsec.to_le_bytes());
        }
        put(&mut buf, 128, &major(self.st_rdev).to_le_bytes());
        put(&mut buf, 132, &minor(self.st_rdev).to_le_bytes());
        put(&mut buf, 136, &major(self.st_dev).to_le_bytes());
        put(&mut buf, 140, &minor(self.st_dev).to_le_bytes());
        buf
    }
}
