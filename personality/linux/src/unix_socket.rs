//! `AF_UNIX` stream sockets, as far as `socketpair` makes them: two
//! connected ends, each reading one pipe's queue and writing the
//! other's (`pipe::ends`), so reads, writes, `poll`, `epoll`, a closed
//! peer (end of file for the reader, `EPIPE` and `SIGPIPE` for the
//! writer) behave as Linux's. `socket(AF_UNIX, SOCK_STREAM)` makes an
//! end that is not connected: writes are `ENOTCONN`, reads `EINVAL`,
//! and `poll` reports it writable and hung up, as Linux does for one.
//!
//! There are no names yet (`bind` and `connect` to a path): the other
//! socket calls on these descriptors are `ENOTSOCK` (glibc's `connect`
//! to `nscd` then fails, and it goes on without, as when the family was
//! missing). Datagram and sequenced-packet types are
//! `ESOCKTNOSUPPORT`.

use alloc::sync::Arc;

use linux_abi::socket::{AF_UNIX, SOCK_CLOEXEC, SOCK_NONBLOCK, SOCK_STREAM, SOCK_TYPE_MASK};
use vfs::{flags, Device, Errno, Inode, NewNode, NodeKind, OpenFile, Readiness};

use crate::{
    pipe::{ends, ReadEnd, WriteEnd},
    user, LinuxProcess,
};

/// A connected end: what the peer writes arrives on `incoming`; what
/// this end writes leaves on `outgoing`.
struct ConnectedEnd {
    incoming: ReadEnd,
    outgoing: WriteEnd,
}

impl Device for ConnectedEnd {
    fn read(&self, offset: u64, buf: &mut [u8], nonblocking: bool) -> Result<usize, Errno> {
        self.incoming.read(offset, buf, nonblocking)
    }

    fn write(&self, offset: u64, buf: &[u8], nonblocking: bool) -> Result<usize, Errno> {
        self.outgoing.write(offset, buf, nonblocking)
    }

    fn readiness(&self) -> Readiness {
        let incoming = self.incoming.readiness();
        let outgoing = self.outgoing.readiness();
        Readiness {
            readable: incoming.readable,
            writable: outgoing.writable,
            // The peer closed: nothing more will come, and nothing can go.
            hung_up: incoming.hung_up,
            error: false,
        }
    }

    /// The end itself: it stands for both queues' waiters.
    fn wait_queue(&self) -> Option<&dyn vfs::WaitQueue> {
        Some(self)
    }
}

impl vfs::WaitQueue for ConnectedEnd {
    fn register(&self, thread: u64) {
        for queue in self.queues() {
            queue.register(thread);
        }
    }

    fn unregister(&self, thread: u64) {
        for queue in self.queues() {
            queue.unregister(thread);
        }
    }

    fn wake_count(&self) -> u64 {
        self.queues()
            .map(|queue| queue.wake_count())
            .fold(0, u64::wrapping_add)
    }
}

impl ConnectedEnd {
    /// The queues of bytes arriving and of room to write.
    fn queues(&self) -> impl Iterator<Item = &dyn vfs::WaitQueue> {
        [self.incoming.wait_queue(), self.outgoing.wait_queue()]
            .into_iter()
            .flatten()
    }
}

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

/// The socket type and flags of `kind` (`socket`'s and `socketpair`'s
/// `type`): `EINVAL` for unknown flags, `ESOCKTNOSUPPORT` for a type
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

/// `socketpair(domain, type, protocol, sv)`: two connected `AF_UNIX`
/// stream ends, their descriptors written to `sv` (`EAFNOSUPPORT` for
/// another family; `EFAULT` closes both again).
pub fn socketpair(
    directory: &Arc<dyn Inode>,
    process: &LinuxProcess,
    domain: u64,
    kind: u64,
    protocol: u64,
    pair: u64,
) -> Result<i64, Errno> {
    if domain != u64::from(AF_UNIX) {
        return Err(Errno::EAFNOSUPPORT);
    }
    let (nonblocking, close_on_exec) = stream_flags(kind, protocol)?;
    let (first_in, second_out) = ends();
    let (second_in, first_out) = ends();
    let first = ConnectedEnd {
        incoming: first_in,
        outgoing: first_out,
    };
    let second = ConnectedEnd {
        incoming: second_in,
        outgoing: second_out,
    };
    let first = socket_file(directory, nonblocking, Arc::new(first))?;
    let second = socket_file(directory, nonblocking, Arc::new(second))?;
    let first_fd = process.fds.install(first, 0, close_on_exec)?;
    let second_fd = match process.fds.install(second, 0, close_on_exec) {
        Ok(fd) => fd,
        Err(error) => {
            let _ = process.fds.close(i64::from(first_fd));
            return Err(error);
        }
    };
    let mut descriptors = [0u8; 8];
    descriptors[..4].copy_from_slice(&first_fd.to_le_bytes());
    descriptors[4..].copy_from_slice(&second_fd.to_le_bytes());
    if let Err(error) = user::write(pair, &descriptors) {
        let _ = process.fds.close(i64::from(first_fd));
        let _ = process.fds.close(i64::from(second_fd));
        return Err(error);
    }
    Ok(0)
}
