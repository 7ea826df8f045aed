//! `socket(AF_UNIX, SOCK_STREAM)`: an end that is not connected (the
//! connected pairs `socketpair` makes are `unix_pair`'s). Its writes are
//! `ENOTCONN`, its reads `EINVAL`, and `poll` reports it writable and
//! hung up, as Linux does for one.
//!
//! There are no names yet (`bind` and `connect` to a path): the other
//! socket calls on these descriptors are `ENOTSOCK` (glibc's `connect`
//! to `nscd` then fails, and it goes on without, as when the family was
//! missing). Datagram and sequenced-packet types are
//! `ESOCKTNOSUPPORT`.

use alloc::sync::Arc;

use linux_abi::socket::{SOCK_CLOEXEC, SOCK_NONBLOCK, SOCK_STREAM, SOCK_TYPE_MASK};
use vfs::{flags, Device, Errno, Inode, NewNode, NodeKind, OpenFile, Readiness};

use crate::LinuxProcess;

/// An end that is not connected (`socket` without `connect`).
struct UnconnectedEnd {
    /// Never woken: nothing changes an end that cannot connect yet.
    changed: crate::wait::FileWaitQueue,
}

impl Device for UnconnectedEnd {
    fn read(&self, _offset: u64, _buf: &mut [u8], _nonblocking: bool) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }

    fn write(&self, _offset: u64, _buf: &[u8], _nonblocking: bool) -> Result<usize, Errno> {
        Err(Errno::ENOTCONN)
    }

    fn readiness(&self) -> Readiness {
        Readiness {
            readable: false,
            writable: true,
            hung_up: true,
            error: false,
        }
    }

    fn wait_queue(&self) -> Option<&dyn vfs::WaitQueue> {
        Some(&self.changed)
    }
}

/// The socket type and flags of `kind` (`socket`'s `type`): `EINVAL` for unknown flags, `ESOCKTNOSUPPORT` for a type
/// other than a stream, `EPROTONOSUPPORT` for a protocol other than 0.
fn stream_flags(kind: u64, protocol: u64) -> Result<(bool, bool), Errno> {
    if kind & !(SOCK_TYPE_MASK | SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    if kind & SOCK_TYPE_MASK != SOCK_STREAM {
        return Err(Errno::ESOCKTNOSUPPORT);
    }
    if protocol != 0 {
        return Err(Errno::EPROTONOSUPPORT);
    }
    Ok((kind & SOCK_NONBLOCK != 0, kind & SOCK_CLOEXEC != 0))
}

/// An open file for `device` on a socket inode made in `directory` (and
/// unlinked at once).
fn socket_file(
    directory: &Arc<dyn Inode>,
    nonblocking: bool,
    device: Arc<dyn Device>,
) -> Result<Arc<OpenFile>, Errno> {
    let name = alloc::format!("unix-{:p}", Arc::as_ptr(&device) as *const u8);
    let inode = directory.create(
        name.as_bytes(),
        NewNode {
            kind: NodeKind::Socket,
            permissions: 0o777,
            uid: 0,
            gid: 0,
        },
    )?;
    let _ = directory.unlink(name.as_bytes());
    let status = if nonblocking { flags::O_NONBLOCK } else { 0 };
    Ok(Arc::new(OpenFile::new(
        inode,
        flags::O_RDWR | status,
        Some(device),
    )))
}

/// `socket(AF_UNIX, type, protocol)`: an unconnected stream end.
pub fn socket(
    directory: &Arc<dyn Inode>,
    process: &LinuxProcess,
    kind: u64,
    protocol: u64,
) -> Result<i64, Errno> {
    let (nonblocking, close_on_exec) = stream_flags(kind, protocol)?;
    let device = Arc::new(UnconnectedEnd {
        changed: crate::wait::FileWaitQueue::new(),
    });
    let file = socket_file(directory, nonblocking, device)?;
    Ok(i64::from(process.fds.install(file, 0, close_on_exec)?))
}
