//! What an inode is and says about itself: its type, Linux `st_mode` bits,
//! timestamps and the metadata `stat` reports.

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
