//! The `AT_*` arguments of the `*at` calls (`linux/fcntl.h`), as the
//! 64-bit register values the calls receive.

/// `AT_FDCWD`: "relative to the current directory" (-100 as a register).
pub const AT_FDCWD: u64 = -100i64 as u64;
/// `AT_SYMLINK_NOFOLLOW`: do not follow a symbolic link at the end.
pub const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
/// `AT_REMOVEDIR` (`unlinkat`): remove a directory.
pub const AT_REMOVEDIR: u64 = 0x200;
/// `AT_EACCESS` (`faccessat2`): check with the effective ids. The same
/// bit as `AT_REMOVEDIR`: each call gives it its own meaning.
pub const AT_EACCESS: u64 = 0x200;
/// `AT_SYMLINK_FOLLOW` (`linkat`): follow a symbolic link at the end.
pub const AT_SYMLINK_FOLLOW: u64 = 0x400;
/// `AT_NO_AUTOMOUNT`: do not trigger an automount (meaningless here, but
/// allowed).
pub const AT_NO_AUTOMOUNT: u64 = 0x800;
/// `AT_EMPTY_PATH`: the descriptor itself when the path is empty.
pub const AT_EMPTY_PATH: u64 = 0x1000;

/// `renameat2`: fail with `EEXIST` rather than replace the new name.
pub const RENAME_NOREPLACE: u64 = 1;
/// `renameat2`: swap the two names.
pub const RENAME_EXCHANGE: u64 = 2;
/// `renameat2`: leave a whiteout at the old name (overlay file systems).
pub const RENAME_WHITEOUT: u64 = 4;

/// `fallocate`: leave the size as it is.
pub const FALLOC_FL_KEEP_SIZE: u64 = 0x01;
/// `fallocate`: free the range (with `FALLOC_FL_KEEP_SIZE` only).
pub const FALLOC_FL_PUNCH_HOLE: u64 = 0x02;
/// `fallocate`: no longer used; accepted.
pub const FALLOC_FL_NO_HIDE_STALE: u64 = 0x04;
/// `fallocate`: remove the range, moving what follows down.
pub const FALLOC_FL_COLLAPSE_RANGE: u64 = 0x08;
/// `fallocate`: make the range zeros.
pub const FALLOC_FL_ZERO_RANGE: u64 = 0x10;
/// `fallocate`: insert a hole, moving what follows up.
pub const FALLOC_FL_INSERT_RANGE: u64 = 0x20;
/// `fallocate`: unshare blocks shared with other files.
pub const FALLOC_FL_UNSHARE_RANGE: u64 = 0x40;
/// Every mode bit Linux knows (`FALLOC_FL_SUPPORTED_MASK`).
pub const FALLOC_FL_SUPPORTED_MASK: u64 = FALLOC_FL_KEEP_SIZE
    | FALLOC_FL_PUNCH_HOLE
    | FALLOC_FL_NO_HIDE_STALE
    | FALLOC_FL_COLLAPSE_RANGE
    | FALLOC_FL_ZERO_RANGE
    | FALLOC_FL_INSERT_RANGE
    | FALLOC_FL_UNSHARE_RANGE;

/// `statx`: the bits that say how to sync with a remote file system
/// (`AT_STATX_FORCE_SYNC | AT_STATX_DONT_SYNC`; both at once is
/// `EINVAL`).
pub const AT_STATX_SYNC_TYPE: u64 = 0x6000;
/// `statx`'s mask bit kept for a future extension (`STATX__RESERVED`):
/// `EINVAL`.
pub const STATX_RESERVED: u64 = 0x8000_0000;

/// `close_range`: give the caller a descriptor table of its own first
/// (one it shared through `CLONE_FILES`).
pub const CLOSE_RANGE_UNSHARE: u64 = 1 << 1;
/// `close_range`: mark the descriptors close-on-exec instead of closing
/// them.
pub const CLOSE_RANGE_CLOEXEC: u64 = 1 << 2;
