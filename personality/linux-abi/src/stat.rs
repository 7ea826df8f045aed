//! File status as `stat`, `fstat`, `newfstatat` and `statx` give it:
//! `struct stat` (x86_64), `struct statx`, the `S_IF*` type bits of a
//! mode, and the `dev_t` encoding of device numbers.

use crate::{bytes::put, time::Timespec};

/// `S_IFMT`: the type bits of a mode.
pub const S_IFMT: u32 = 0o170_000;
/// `S_IFSOCK`: a socket.
pub const S_IFSOCK: u32 = 0o140_000;
/// `S_IFLNK`: a symbolic link.
pub const S_IFLNK: u32 = 0o120_000;
/// `S_IFREG`: a regular file.
pub const S_IFREG: u32 = 0o100_000;
/// `S_IFBLK`: a block device.
pub const S_IFBLK: u32 = 0o060_000;
/// `S_IFDIR`: a directory.
pub const S_IFDIR: u32 = 0o040_000;
/// `S_IFCHR`: a character device.
pub const S_IFCHR: u32 = 0o020_000;
/// `S_IFIFO`: a FIFO (named pipe).
pub const S_IFIFO: u32 = 0o010_000;

/// Encodes a device number the way Linux's user-space `makedev` does (the
/// `st_rdev` layout: 12 bits of major and 20 of minor, split for
/// compatibility with the old 8/8 format).
pub const fn makedev(major: u32, minor: u32) -> u64 {
    let major = major as u64;
    let minor = minor as u64;
    (minor & 0xff) | ((major & 0xfff) << 8) | ((minor & !0xff) << 12) | ((major & !0xfff) << 32)
}

/// The major number of a device number made by [`makedev`].
pub const fn major(dev: u64) -> u32 {
    (((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff)) as u32
}

/// The minor number of a device number made by [`makedev`].
pub const fn minor(dev: u64) -> u32 {
    ((dev & 0xff) | ((dev >> 12) & !0xff)) as u32
}

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
/// Everything `stat` also gives: what [`Statx::from`] a [`Stat`] fills.
pub const STATX_BASIC_STATS: u32 = 0x7ff;

/// Bytes of x86_64 `struct stat`.
pub const STAT_BYTES: usize = 144;
/// Bytes of `struct statx`.
pub const STATX_BYTES: usize = 256;

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

impl Stat {
    /// The record exactly as x86_64 user space reads it: dev@0, ino@8,
    /// nlink@16, mode@24, uid@28, gid@32, (pad), rdev@40, size@48,
    /// blksize@56, blocks@64, atime@72, mtime@88, ctime@104 (each a
    /// `timespec`), 24 reserved bytes.
    pub fn to_bytes(&self) -> [u8; STAT_BYTES] {
        let mut buf = [0; STAT_BYTES];
        put(&mut buf, 0, self.st_dev.to_le_bytes());
        put(&mut buf, 8, self.st_ino.to_le_bytes());
        put(&mut buf, 16, self.st_nlink.to_le_bytes());
        put(&mut buf, 24, self.st_mode.to_le_bytes());
        put(&mut buf, 28, self.st_uid.to_le_bytes());
        put(&mut buf, 32, self.st_gid.to_le_bytes());
        put(&mut buf, 40, self.st_rdev.to_le_bytes());
        put(&mut buf, 48, self.st_size.to_le_bytes());
        put(&mut buf, 56, self.st_blksize.to_le_bytes());
        put(&mut buf, 64, self.st_blocks.to_le_bytes());
        put(&mut buf, 72, self.st_atime.to_bytes());
        put(&mut buf, 88, self.st_mtime.to_bytes());
        put(&mut buf, 104, self.st_ctime.to_bytes());
        buf
    }
}

/// `struct statx_timestamp`: seconds and nanoseconds (16 bytes, the last
/// 4 reserved).
fn statx_timestamp(time: Timespec) -> [u8; 16] {
    let mut bytes = [0; 16];
    put(&mut bytes, 0, time.sec.to_le_bytes());
    // tv_nsec is a u32 here: 0..1e9 fits.
    put(&mut bytes, 8, (time.nsec as u32).to_le_bytes());
    bytes
}

/// `struct statx` (`linux/stat.h`) with the fields Spindle fills: no
/// birth time, attributes or mount id (their mask bits are clear).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Statx {
    /// `stx_mask`: which fields are valid (`STATX_*`).
    pub mask: u32,
    /// `stx_blksize`: preferred I/O size.
    pub blksize: u32,
    /// `stx_nlink`: hard links.
    pub nlink: u32,
    /// `stx_uid`: owner.
    pub uid: u32,
    /// `stx_gid`: group.
    pub gid: u32,
    /// `stx_mode`: type and permissions.
    pub mode: u16,
    /// `stx_ino`: inode number.
    pub ino: u64,
    /// `stx_size`: size in bytes.
    pub size: u64,
    /// `stx_blocks`: allocated 512-byte units.
    pub blocks: u64,
    /// `stx_atime`: last access.
    pub atime: Timespec,
    /// `stx_ctime`: last status change.
    pub ctime: Timespec,
    /// `stx_mtime`: last modification.
    pub mtime: Timespec,
    /// `stx_rdev_major`, `stx_rdev_minor`: the device a node stands for.
    pub rdev: (u32, u32),
    /// `stx_dev_major`, `stx_dev_minor`: the device holding the file.
    pub dev: (u32, u32),
}

impl Statx {
    /// The record as user space reads it: mask@0, blksize@4, nlink@16,
    /// uid@20, gid@24, mode@28, ino@32, size@40, blocks@48, atime@64,
    /// (btime@80), ctime@96, mtime@112, rdev major/minor@128, dev
    /// major/minor@136; the rest zero.
    pub fn to_bytes(&self) -> [u8; STATX_BYTES] {
        let mut buf = [0; STATX_BYTES];
        put(&mut buf, 0, self.mask.to_le_bytes());
        put(&mut buf, 4, self.blksize.to_le_bytes());
        put(&mut buf, 16, self.nlink.to_le_bytes());
        put(&mut buf, 20, self.uid.to_le_bytes());
        put(&mut buf, 24, self.gid.to_le_bytes());
        put(&mut buf, 28, self.mode.to_le_bytes());
        put(&mut buf, 32, self.ino.to_le_bytes());
        put(&mut buf, 40, self.size.to_le_bytes());
        put(&mut buf, 48, self.blocks.to_le_bytes());
        put(&mut buf, 64, statx_timestamp(self.atime));
        put(&mut buf, 96, statx_timestamp(self.ctime));
        put(&mut buf, 112, statx_timestamp(self.mtime));
        put(&mut buf, 128, self.rdev.0.to_le_bytes());
        put(&mut buf, 132, self.rdev.1.to_le_bytes());
        put(&mut buf, 136, self.dev.0.to_le_bytes());
        put(&mut buf, 140, self.dev.1.to_le_bytes());
        buf
    }
}

impl From<&Stat> for Statx {
    /// The [`STATX_BASIC_STATS`] fields of `stat`, as `statx` gives them.
    fn from(stat: &Stat) -> Statx {
        // Narrowing as Linux does (`stx_nlink` and `stx_blksize` are u32,
        // `stx_mode` u16); sizes and counts are never negative.
        Statx {
            mask: STATX_BASIC_STATS,
            blksize: stat.st_blksize as u32,
            nlink: stat.st_nlink as u32,
            uid: stat.st_uid,
            gid: stat.st_gid,
            mode: stat.st_mode as u16,
            ino: stat.st_ino,
            size: stat.st_size as u64,
            blocks: stat.st_blocks as u64,
            atime: stat.st_atime,
            ctime: stat.st_ctime,
            mtime: stat.st_mtime,
            rdev: (major(stat.st_rdev), minor(stat.st_rdev)),
            dev: (major(stat.st_dev), minor(stat.st_dev)),
        }
    }
}
