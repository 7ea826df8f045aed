//! Sockets: there are none yet. `socket` says no family is supported
//! (`EAFNOSUPPORT`, Linux's answer for a family the kernel was built
//! without), and the calls on a socket's descriptor say it is not one
//! (`ENOTSOCK`). glibc asks for a socket to reach `nscd` when it looks a
//! user up, and bash asks `getpeername` of its input at start; both go on
//! without.

use vfs::Errno;

use crate::LinuxProcess;

/// `socket(domain, type, protocol)`.
pub fn socket() -> Result<i64, Errno> {
    Err(Errno::EAFNOSUPPORT)
}

/// `getpeername(fd, addr, addrlen)`, `getsockname` and the like on a
/// descriptor: `EBADF` for none, else `ENOTSOCK`.
pub fn not_a_socket(files: &LinuxProcess, fd: u64) -> Result<i64, Errno> {
    files.fds.get(fd as i64)?;
    Err(Errno::ENOTSOCK)
}
