//! Linux error numbers (`asm-generic/errno-base.h` and `errno.h`): the
//! currency of every fallible operation in the VFS, the services and the
//! Linux personality, so that they reach user space unchanged.

use core::fmt;

/// A Linux error number, e.g. [`Errno::ENOENT`] (2).
///
/// A struct around the number rather than an enum so that a value the
/// kernel receives from elsewhere (or a new constant) needs no new variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Errno(i32);

/// Defines each error as an [`Errno`] constant and the table behind
/// [`Errno::name`] and [`Errno::message`], from one list so that a number,
/// its name and its text cannot disagree. The messages are glibc's
/// `strerror` texts, the ones Linux users know.
macro_rules! errors {
    ($($name:ident = $value:literal, $message:literal,)*) => {
        impl Errno {
            $(
                #[doc = concat!("`", stringify!($name), "` (", stringify!($value), "): ", $message, ".")]
                pub const $name: Errno = Errno($value);
            )*
        }

        /// `(errno, name, message)` for every named constant.
        const TABLE: &[(i32, &str, &str)] = &[
            $(($value, stringify!($name), $message),)*
        ];
    };
}

errors! {
    EPERM = 1, "Operation not permitted",
    ENOENT = 2, "No such file or directory",
    ESRCH = 3, "No such process",
    EINTR = 4, "Interrupted system call",
    EIO = 5, "Input/output error",
    ENXIO = 6, "No such device or address",
    E2BIG = 7, "Argument list too long",
    ENOEXEC = 8, "Exec format error",
    EBADF = 9, "Bad file descriptor",
    ECHILD = 10, "No child processes",
    EAGAIN = 11, "Resource temporarily unavailable",
    ENOMEM = 12, "Cannot allocate memory",
    EACCES = 13, "Permission denied",
    EFAULT = 14, "Bad address",
    ENOTBLK = 15, "Block device required",
    EBUSY = 16, "Device or resource busy",
    EEXIST = 17, "File exists",
    EXDEV = 18, "Invalid cross-device link",
    ENODEV = 19, "No such device",
    ENOTDIR = 20, "Not a directory",
    EISDIR = 21, "Is a directory",
    EINVAL = 22, "Invalid argument",
    ENFILE = 23, "Too many open files in system",
    EMFILE = 24, "Too many open files",
    ENOTTY = 25, "Inappropriate ioctl for device",
    ETXTBSY = 26, "Text file busy",
    EFBIG = 27, "File too large",
    ENOSPC = 28, "No space left on device",
    ESPIPE = 29, "Illegal seek",
    EROFS = 30, "Read-only file system",
    EMLINK = 31, "Too many links",
    EPIPE = 32, "Broken pipe",
    EDOM = 33, "Numerical argument out of domain",
    ERANGE = 34, "Numerical result out of range",
    EDEADLK = 35, "Resource deadlock avoided",
    ENAMETOOLONG = 36, "File name too long",
    ENOLCK = 37, "No locks available",
    ENOSYS = 38, "Function not implemented",
    ENOTEMPTY = 39, "Directory not empty",
    ELOOP = 40, "Too many levels of symbolic links",
    EIDRM = 43, "Identifier removed",
    ENODATA = 61, "No data available",
    EOVERFLOW = 75, "Value too large for defined data type",
    ENOTSOCK = 88, "Socket operation on non-socket",
    EDESTADDRREQ = 89, "Destination address required",
    EMSGSIZE = 90, "Message too long",
    EPROTOTYPE = 91, "Protocol wrong type for socket",
    ENOPROTOOPT = 92, "Protocol not available",
    EPROTONOSUPPORT = 93, "Protocol not supported",
    ESOCKTNOSUPPORT = 94, "Socket type not supported",
    EOPNOTSUPP = 95, "Operation not supported",
    EAFNOSUPPORT = 97, "Address family not supported by protocol",
    EADDRINUSE = 98, "Address already in use",
    EADDRNOTAVAIL = 99, "Cannot assign requested address",
    ENETUNREACH = 101, "Network is unreachable",
    ECONNRESET = 104, "Connection reset by peer",
    ENOBUFS = 105, "No buffer space available",
    EISCONN = 106, "Transport endpoint is already connected",
    ENOTCONN = 107, "Transport endpoint is not connected",
    ETIMEDOUT = 110, "Connection timed out",
    ECONNREFUSED = 111, "Connection refused",
    EALREADY = 114, "Operation already in progress",
    EINPROGRESS = 115, "Operation now in progress",
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
    pub const fn as_negative(self) -> i64 {
        -(self.0 as i64)
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
