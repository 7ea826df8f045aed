//! Linux x86_64 `open` flags and `lseek` whence values
//! (`asm-generic/fcntl.h`, `linux/fs.h`).

/// Open for reading only.
pub const O_RDONLY: u32 = 0;
/// Open for writing only.
pub const O_WRONLY: u32 = 1;
/// Open for reading and writing.
pub const O_RDWR: u32 = 2;
/// The access-mode bits.
pub const O_ACCMODE: u32 = 3;
/// Create the file if it does not exist.
pub const O_CREAT: u32 = 0o100;
/// With `O_CREAT`: fail with `EEXIST` if it exists.
pub const O_EXCL: u32 = 0o200;
/// Do not make a terminal the controlling terminal.
pub const O_NOCTTY: u32 = 0o400;
/// Truncate a regular file to length 0.
pub const O_TRUNC: u32 = 0o1000;
/// Every write goes to the end of the file.
pub const O_APPEND: u32 = 0o2000;
/// Reads and writes that would block fail with `EAGAIN`.
pub const O_NONBLOCK: u32 = 0o4000;
/// Synchronous data writes (no effect on a memory file system).
pub const O_DSYNC: u32 = 0o10000;
/// Bypass caches (accepted and ignored).
pub const O_DIRECT: u32 = 0o40000;
/// Large-file support (always on for 64-bit processes).
pub const O_LARGEFILE: u32 = 0o100000;
/// Fail with `ENOTDIR` unless the path is a directory.
pub const O_DIRECTORY: u32 = 0o200000;
/// Fail with `ELOOP` if the last component is a symbolic link.
pub const O_NOFOLLOW: u32 = 0o400000;
/// Do not update the access time.
pub const O_NOATIME: u32 = 0o1000000;
/// Close on exec; a file descriptor flag, kept by the descriptor table and
/// not by the open file description.
pub const O_CLOEXEC: u32 = 0o2000000;
/// Synchronous writes (no effect on a memory file system).
pub const O_SYNC: u32 = 0o4010000;
/// Open a location only, not the file (not supported yet:
/// [`Vfs::open`](crate::Vfs::open) fails with `EINVAL`).
pub const O_PATH: u32 = 0o10000000;
/// Make an unnamed temporary file (not supported: `EOPNOTSUPP`).
pub const O_TMPFILE: u32 = 0o20200000;

/// The status flags `fcntl(F_SETFL)` may change (Linux's `SETFL_MASK`
/// minus the ones that mean nothing here).
pub const SETTABLE_STATUS_FLAGS: u32 = O_APPEND | O_NONBLOCK | O_NOATIME | O_DIRECT;

/// `lseek` from the start.
pub const SEEK_SET: u32 = 0;
/// `lseek` from the current offset.
pub const SEEK_CUR: u32 = 1;
/// `lseek` from the end.
pub const SEEK_END: u32 = 2;
/// `lseek` to the next data at or after the offset.
pub const SEEK_DATA: u32 = 3;
/// `lseek` to the next hole at or after the offset.
pub const SEEK_HOLE: u32 = 4;
