//! `socketpair(AF_UNIX, type, protocol, sv)`: two connected local
//! sockets (see `unix_socket` and `unix_connection`), each an open file
//! on a socket inode of the personality's hidden file system (so `fstat`
//! says `S_IFSOCK`); and the making of such files for every `AF_UNIX`
//! socket.

use alloc::{format, sync::Arc};
use core::sync::atomic::{AtomicU64, Ordering};

use linux_abi::socket::{
    AF_INET, AF_MAX, AF_UNIX, IPPROTO_TCP, IPPROTO_UDP, SOCK_CLOEXEC, SOCK_DGRAM, SOCK_MAX,
    SOCK_NONBLOCK, SOCK_RAW, SOCK_SEQPACKET, SOCK_STREAM, SOCK_TYPE_MASK,
};
use vfs::{flags, Errno, Inode, NewNode, NodeKind, OpenFile};

pub use crate::unix_connection::PairKind;
use crate::{
    unix_connection::PeerCredentials,
    unix_socket::{UnixNames, UnixSocket, UnixSocketFile},
    user, LinuxProcess,
};

/// The kind of socket `socket(AF_UNIX, type, protocol)` and
/// `socketpair` make, or their error: `EPROTONOSUPPORT` for a protocol
/// other than 0 or `PF_UNIX`, `ESOCKTNOSUPPORT` for a type `AF_UNIX`
/// lacks (Linux's `unix_create`; `SOCK_RAW` is taken as `SOCK_DGRAM`).
pub(crate) fn unix_kind(kind: u64, protocol: u64) -> Result<PairKind, Errno> {
    if protocol != 0 && protocol != u64::from(AF_UNIX) {
        return Err(Errno::EPROTONOSUPPORT);
    }
    match kind {
        SOCK_STREAM => Ok(PairKind::Stream),
        SOCK_DGRAM | SOCK_RAW => Ok(PairKind::Datagram),
        SOCK_SEQPACKET => Ok(PairKind::SequencedPacket),
        _ => Err(Errno::ESOCKTNOSUPPORT),
    }
}

/// What `socketpair(AF_INET, ...)` says: `EOPNOTSUPP` for a type and
/// protocol `socket` would take (IPv4 sockets come one at a time), else
/// the error `socket` gives.
fn inet_error(kind: u64, protocol: u64) -> Errno {
    match (kind, protocol) {
        (SOCK_STREAM, 0 | IPPROTO_TCP) | (SOCK_DGRAM, 0 | IPPROTO_UDP) => Errno::EOPNOTSUPP,
        (SOCK_STREAM | SOCK_DGRAM | SOCK_RAW, _) => Errno::EPROTONOSUPPORT,
        _ => Errno::ESOCKTNOSUPPORT,
    }
}

/// Numbers the hidden socket nodes.
static NEXT_NODE: AtomicU64 = AtomicU64::new(1);

/// An open file with `status_flags` for `socket`, on a socket inode made
/// in `directory` (and unlinked at once).
pub(crate) fn socket_file(
    directory: &Arc<dyn Inode>,
    socket: Arc<UnixSocket>,
    status_flags: u32,
) -> Result<Arc<OpenFile>, Errno> {
    let name = format!("unix-{}", NEXT_NODE.fetch_add(1, Ordering::Relaxed));
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
    Ok(Arc::new(OpenFile::new(
        inode,
        flags::O_RDWR | status_flags,
        Some(Arc::new(UnixSocketFile(socket))),
    )))
}

/// The credentials a socket made by `process` carries: its id and
/// effective ids.
pub(crate) fn credentials_of(process: &LinuxProcess) -> PeerCredentials {
    let credentials = process.credentials();
    PeerCredentials {
        pid: process.pid as u32,
        uid: credentials.users.effective,
        gid: credentials.groups.effective,
    }
}

/// Two connected sockets of `kind` as open files with `status_flags`,
/// made by `credentials`.
pub fn make_pair(
    directory: &Arc<dyn Inode>,
    names: &Arc<UnixNames>,
    kind: PairKind,
    credentials: PeerCredentials,
    status_flags: u32,
) -> Result<(Arc<OpenFile>, Arc<OpenFile>), Errno> {
    let (first, second) = UnixSocket::pair(kind, names, credentials);
    Ok((
        socket_file(directory, first, status_flags)?,
        socket_file(directory, second, status_flags)?,
    ))
}

/// `socketpair(domain, type, protocol, sv)`: `EINVAL` for flags other
/// than `SOCK_NONBLOCK` and `SOCK_CLOEXEC` or a type past `SOCK_MAX`,
/// `EAFNOSUPPORT` for a family other than `AF_UNIX` and `AF_INET`,
/// `EFAULT` (and no descriptors left open) for a bad `sv`.
pub fn socketpair(
    directory: &Arc<dyn Inode>,
    names: &Arc<UnixNames>,
    files: &LinuxProcess,
    domain: u64,
    kind: u64,
    protocol: u64,
    fds: u64,
) -> Result<i64, Errno> {
    if kind & !(SOCK_TYPE_MASK | SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let socket_type = kind & SOCK_TYPE_MASK;
    // Linux's `__sock_create` order: the family's range, the type's,
    // then the family itself. The domain is an `int`.
    let domain = domain as i32;
    if !(0..AF_MAX as i32).contains(&domain) {
        return Err(Errno::EAFNOSUPPORT);
    }
    if socket_type >= SOCK_MAX {
        return Err(Errno::EINVAL);
    }
    let pair_kind = match u16::try_from(domain) {
        Ok(AF_UNIX) => unix_kind(socket_type, protocol)?,
        Ok(AF_INET) => return Err(inet_error(socket_type, protocol)),
        _ => return Err(Errno::EAFNOSUPPORT),
    };
    let status = if kind & SOCK_NONBLOCK != 0 {
        flags::O_NONBLOCK
    } else {
        0
    };
    let (first, second) = make_pair(directory, names, pair_kind, credentials_of(files), status)?;
    let cloexec = kind & SOCK_CLOEXEC != 0;
    let first_fd = files.fds.install(first, 0, cloexec)?;
    let second_fd = match files.fds.install(second, 0, cloexec) {
        Ok(fd) => fd,
        Err(error) => {
            let _ = files.fds.close(i64::from(first_fd));
            return Err(error);
        }
    };
    let mut pair = [0u8; 8];
    pair[..4].copy_from_slice(&first_fd.to_le_bytes());
    pair[4..].copy_from_slice(&second_fd.to_le_bytes());
    if let Err(error) = user::write(fds, &pair) {
        let _ = files.fds.close(i64::from(first_fd));
        let _ = files.fds.close(i64::from(second_fd));
        return Err(error);
    }
    Ok(0)
}
