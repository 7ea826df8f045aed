//! Linux error numbers (`asm-generic/errno-base.h` and `errno.h`), the
//! currency of every fallible operation here so that the Linux personality
//! can hand them to user space unchanged.

use core::fmt;

/// A Linux error number, e.g. [`Errno::ENOENT`] (2).
///
/// A struct around the number rather than an enum so that a value the
/// kernel receives from elsewhere (or a new constant) needs no new variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Errno(i32);

/// `(errno, name, message)` for every named constant; the messages are
/// glibc's `strerror` texts, the ones Linux users know.
const TABLE: &[(i32, &str, &str)] = &[
    (1, "EPERM", "Operation not permitted"),
    (2, "ENOENT", "No such file or directory"),
    (3, "ESRCH", "No such process"),
    (4, "EINTR", "Interrupted system call"),
    (5, "EIO", "Input/output error"),
    (6, "ENXIO", "No such device or address"),
    (7, "E2BIG", "Argument list too long"),
    (8, "ENOEXEC", "Exec format error"),
    (9, "EBADF", "Bad file descriptor"),
    (10, "ECHILD", "No child processes"),
    (11, "EAGAIN", "Resource temporarily unavailable"),
    (12, "ENOMEM", "Cannot allocate memory"),
    (13, "EACCES", "Permission denied"),
    (14, "EFAULT", "Bad address"),
    (15, "ENOTBLK", "Block device required"),
    (16, "EBUSY", "Device or resource busy"),
    (17, "EEXIST", "File exists"),
    (18, "EXDEV", "Invalid cross-device link"),
    (19, "ENODEV", "No such device"),
    (20, "ENOTDIR", "Not a directory"),
    (21, "EISDIR", "Is a directory"),
    (22, "EINVAL", "Invalid argument"),
    (23, "ENFILE", "Too many open files in system"),
    (24, "EMFILE", "Too many open files"),
    (25, "ENOTTY", "Inappropriate ioctl for device"),
    (26, "ETXTBSY", "Text file busy"),
    (27, "EFBIG", "File too large"),
    (28, "ENOSPC", "No space left on device"),
    (29, "ESPIPE", "Illegal seek"),
    (30, "EROFS", "Read-only file system"),
    (31, "EMLINK", "Too many links"),
    (32, "EPIPE", "Broken pipe"),
    (33, "EDOM", "Numerical argument out of domain"),
    (34, "ERANGE", "Numerical result out of range"),
    (35, "EDEADLK", "Resource deadlock avoided"),
    (36, "ENAMETOOLONG", "File name too long"),
    (37, "ENOLCK", "No locks available"),
    (38, "ENOSYS", "Function not implemented"),
    (39, "ENOTEMPTY", "Directory not empty"),
    (40, "ELOOP", "Too many levels of symbolic links"),
    (61, "ENODATA", "No data available"),
    (75, "EOVERFLOW", "Value too large for defined data type"),
    (88, "ENOTSOCK", "Socket operation on non-socket"),
    (89, "EDESTADDRREQ", "Destination address required"),
    (90, "EMSGSIZE", "Message too long"),
    (92, "ENOPROTOOPT", "Protocol not available"),
    (93, "EPROTONOSUPPORT", "Protocol not supported"),
    (94, "ESOCKTNOSUPPORT", "Socket type not supported"),
    (95, "EOPNOTSUPP", "Operation not supported"),
    (
        97,
        "EAFNOSUPPORT",
        "Address family not supported by protocol",
    ),
    (98, "EADDRINUSE", "Address already in use"),
    (99, "EADDRNOTAVAIL", "Cannot assign requested address"),
    (101, "ENETUNREACH", "Network is unreachable"),
    (104, "ECONNRESET", "Connection reset by peer"),
    (106, "EISCONN", "Transport endpoint is already connected"),
    (107, "ENOTCONN", "Transport endpoint is not connected"),
    (111, "ECONNREFUSED", "Connection refused"),
    (114, "EALREADY", "Operation already in progress"),
    (115, "EINPROGRESS", "Operation now in progress"),
];

macro_rules! errno_constants {
    ($($name:ident = $value:literal,)*) => {
        impl Errno {
            $(
                #[doc = concat!("`", stringify!($name), "` (", stringify!($value), ").")]
                pub const $name: Errno = Errno($value);
            )*
        }
    };
}

errno_constants! {
    EPERM = 1,
    ENOENT = 2,
    ESRCH = 3,
    EINTR = 4,
    EIO = 5,
    ENXIO = 6,
    E2BIG = 7,
    ENOEXEC = 8,
    EBADF = 9,
    ECHILD = 10,
    EAGAIN = 11,
    ENOMEM = 12,
    EACCES = 13,
    EFAULT = 14,
    ENOTBLK = 15,
    EBUSY = 16,
    EEXIST = 17,
    EXDEV = 18,
    ENODEV = 19,
    ENOTDIR = 20,
    EISDIR = 21,
    EINVAL = 22,
    ENFILE = 23,
    EMFILE = 24,
    ENOTTY = 25,
    ETXTBSY = 26,
    EFBIG = 27,
    ENOSPC = 28,
    ESPIPE = 29,
    EROFS = 30,
    EMLINK = 31,
    EPIPE = 32,
    EDOM = 33,
    ERANGE = 34,
    EDEADLK = 35,
    ENAMETOOLONG = 36,
    ENOLCK = 37,
    ENOSYS = 38,
    ENOTEMPTY = 39,
    ELOOP = 40,
    ENODATA = 61,
    EOVERFLOW = 75,
    ENOTSOCK = 88,
    EDESTADDRREQ = 89,
    EMSGSIZE = 90,
    ENOPROTOOPT = 92,
    EPROTONOSUPPORT = 93,
    ESOCKTNOSUPPORT = 94,
    EOPNOTSUPP = 95,
    EAFNOSUPPORT = 97,
    EADDRINUSE = 98,
    EADDRNOTAVAIL = 99,
    ENETUNREACH = 101,
    ECONNRESET = 104,
    EISCONN = 106,
    ENOTCONN = 107,
    ECONNREFUSED = 111,
    EALREADY = 114,
    EINPROGRESS = 115,
}

impl Errno {
    /// `EWOULDBLOCK`, Linux's other name for [`Errno::EAGAIN`].
    pub const EWOULDBLOCK: Errno = Errno::EAGAIN;

    /// The error with number `value` (positive, as in `errno`), or `None`
    /// outside Linux's range 1..=4095.
    pub const fn new(value: i32) -> Option<Errno> {
        if value >= 1 && value <= 4095 {
            Some(Errno(value))
        } else {
            None
        }
    }

    /// The positive number, as user space sees it in `errno`.
    pub const fn as_i32(self) -> i32 {
        self.0
    }

    /// The negated number, as a system call returns it in `rax`.
    pub const fn as_negative(self) -> isize {
        -(self.0 as isize)
    }

    /// The constant's name, e.g. `"ENOENT"`, if it is one of the named ones.
    pub fn name(self) -> Option<&'static str> {
        TABLE
            .iter()
            .find(|(value, _, _)| *value == self.0)
            .map(|(_, name, _)| *name)
    }

    /// The Linux message, e.g. `"No such file or directory"`, if known.
    pub fn message(self) -> Option<&'static str> {
        TABLE
            .iter()
            .find(|(value, _, _)| *value == self.0)
            .map(|(_, _, message)| *message)
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.message() {
            Some(message) => f.write_str(message),
            // glibc's wording for numbers it has no text for.
            None => write!(f, "Unknown error {}", self.0),
        }
    }
}
