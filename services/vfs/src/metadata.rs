//! What an inode is and says about itself: its type, Linux `st_mode` bits,
//! timestamps and the metadata `stat` reports.

pub use linux_abi::stat::{
    major, makedev, minor, S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG, S_IFSOCK,
};

/// The bits `chmod` may change: permissions plus set-user-id, set-group-id
/// and sticky.
pub const MODE_PERMISSION_BITS: u32 = 0o7777;

/// The type of an inode, as the `S_IF*` bits of its mode say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileType {
    /// A FIFO (named pipe).
    Fifo,
    /// A character device; `rdev` names the driver.
    CharDevice,
    /// A directory.
    Directory,
    /// A block device; `rdev` names the driver.
    BlockDevice,
    /// A regular file.
    Regular,
    /// A symbolic link.
    Symlink,
    /// A Unix-domain socket bound to a path.
    Socket,
}

impl FileType {
    /// The `S_IF*` bits of this type.
    pub const fn mode_bits(self) -> u32 {
        match self {
            FileType::Fifo => S_IFIFO,
            FileType::CharDevice => S_IFCHR,
            FileType::Directory => S_IFDIR,
            FileType::BlockDevice => S_IFBLK,
            FileType::Regular => S_IFREG,
            FileType::Symlink => S_IFLNK,
            FileType::Socket => S_IFSOCK,
        }
    }

    /// The type whose `S_IF*` bits `mode` carries, or `None` for bits that
    /// name no type (0 included).
    pub const fn from_mode(mode: u32) -> Option<FileType> {
        match mode & S_IFMT {
            S_IFIFO => Some(FileType::Fifo),
            S_IFCHR => Some(FileType::CharDevice),
            S_IFDIR => Some(FileType::Directory),
            S_IFBLK => Some(FileType::BlockDevice),
            S_IFREG => Some(FileType::Regular),
            S_IFLNK => Some(FileType::Symlink),
            S_IFSOCK => Some(FileType::Socket),
            _ => None,
        }
    }

    /// The `d_type` value of `struct linux_dirent64` (`DT_*`), which is the
    /// type bits shifted down by 12.
    pub const fn dirent_type(self) -> u8 {
        (self.mode_bits() >> 12) as u8
    }
}

/// A point in time: seconds and nanoseconds since the Unix epoch, as in
/// `struct timespec` (seconds may be negative, before 1970).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timespec {
    /// Whole seconds.
    pub sec: i64,
    /// Nanoseconds, 0..1_000_000_000.
    pub nsec: u32,
}

impl Timespec {
    /// The time `sec` seconds after the epoch.
    pub const fn from_secs(sec: i64) -> Timespec {
        Timespec { sec, nsec: 0 }
    }
}

/// An inode's metadata, the file-system-independent part of `stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metadata {
    /// The file system's device number (`st_dev`).
    pub dev: u64,
    /// The inode number, unique within the file system.
    pub ino: u64,
    /// Type (`S_IF*`) and permission bits.
    pub mode: u32,
    /// Number of hard links (directories count "." and each child's "..").
    pub nlink: u64,
    /// Owner's user id.
    pub uid: u32,
    /// Owner's group id.
    pub gid: u32,
    /// For a device node, the device it stands for ([`makedev`]).
    pub rdev: u64,
    /// Size in bytes (for a symbolic link, the target's length).
    pub size: u64,
    /// Preferred I/O size.
    pub blksize: u64,
    /// Space used, in 512-byte units.
    pub blocks: u64,
    /// Last access.
    pub atime: Timespec,
    /// Last change of the contents.
    pub mtime: Timespec,
    /// Last change of the inode (contents or metadata).
    pub ctime: Timespec,
}

impl Metadata {
    /// The type the mode's `S_IF*` bits say; regular if they name none,
    /// which no file system here produces.
    pub fn file_type(&self) -> FileType {
        FileType::from_mode(self.mode).unwrap_or(FileType::Regular)
    }

    /// Whether the inode is a directory.
    pub fn is_dir(&self) -> bool {
        self.mode & S_IFMT == S_IFDIR
    }
}

/// A time to set with [`SetAttributes`], as `utimensat` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeChange {
    /// The file system's current time (`UTIME_NOW`).
    Now,
    /// This time.
    At(Timespec),
}

/// Metadata to change in one step (`chmod`, `chown`, `utimensat`); fields
/// left `None` stay. Changing anything updates `ctime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SetAttributes {
    /// New permission bits (only [`MODE_PERMISSION_BITS`] are used).
    pub mode: Option<u32>,
    /// New owner.
    pub uid: Option<u32>,
    /// New group.
    pub gid: Option<u32>,
    /// New access time.
    pub atime: Option<TimeChange>,
    /// New modification time.
    pub mtime: Option<TimeChange>,
}
