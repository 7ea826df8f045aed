//! Extended attributes (`linux/xattr.h`, `linux/limits.h`): `setxattr`'s
//! flags, the size limits and the namespace prefixes.

/// `setxattr` flag: fail with `EEXIST` if the attribute exists.
pub const XATTR_CREATE: u64 = 1;
/// `setxattr` flag: fail with `ENODATA` if it does not.
pub const XATTR_REPLACE: u64 = 2;
/// Longest attribute name, without its NUL (`XATTR_NAME_MAX`).
pub const XATTR_NAME_MAX: usize = 255;
/// Largest attribute value (`XATTR_SIZE_MAX`).
pub const XATTR_SIZE_MAX: usize = 65_536;
/// Largest list of names `listxattr` returns (`XATTR_LIST_MAX`).
pub const XATTR_LIST_MAX: usize = 65_536;

/// The `security.` namespace (for security modules).
pub const XATTR_SECURITY_PREFIX: &[u8] = b"security.";
/// The `system.` namespace (POSIX ACLs).
pub const XATTR_SYSTEM_PREFIX: &[u8] = b"system.";
/// The `trusted.` namespace (`CAP_SYS_ADMIN` only).
pub const XATTR_TRUSTED_PREFIX: &[u8] = b"trusted.";
/// The `user.` namespace (regular files and directories).
pub const XATTR_USER_PREFIX: &[u8] = b"user.";
