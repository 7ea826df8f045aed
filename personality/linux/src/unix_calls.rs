//! The socket calls on `AF_UNIX` descriptors that make, name and
//! connect sockets: `socket`, `bind`, `listen`, `connect`, `accept4`,
//! `shutdown`, `getsockname`, `getpeername`. `socket.rs` sends a call
//! here when the descriptor is a [`UnixSocket`]'s (data calls are
//! `unix_messages`', options `unix_options`').

use alloc::sync::Arc;

use linux_abi::socket::{
    AF_UNSPEC, SHUT_RD, SHUT_RDWR, SHUT_WR, SOCKADDR_UN_BYTES, SOCK_CLOEXEC, SOCK_NONBLOCK,
    SOCK_TYPE_MASK,
};
use vfs::{flags, Errno, Inode, OpenFile, Vfs};

use crate::{
    unix_address::UnixAddress,
    unix_connection::PairKind,
    unix_pair::{credentials_of, socket_file, unix_kind},
    unix_socket::{find, Caller, UnixNames, UnixSocket, UnixSocketFile},
    user, LinuxProcess,
};

/// What the `AF_UNIX` calls need of the personality: the file tree
/// (paths), the hidden directory socket inodes are made in, and the
/// registry of names.
pub struct LocalSockets<'a> {
    /// The file tree.
    pub vfs: &'a Vfs,
    /// Where sockets' own inodes are made.
    pub directory: &'a Arc<dyn Inode>,
    /// Which socket each name stands for.
    pub names: &'a Arc<UnixNames>,
}

impl LocalSockets<'_> {
    /// The caller `process`, as calls that name sockets see it.
    pub fn caller(&self, process: &LinuxProcess) -> Caller<'_> {
        Caller {
            vfs: self.vfs,
            context: process.context(),
            credentials: credentials_of(process),
            names: self.names,
        }
    }
}

/// An `AF_UNIX` socket's descriptor: its open file (for `O_NONBLOCK`)
/// and the socket.
pub type UnixDescriptor = (Arc<OpenFile>, Arc<UnixSocket>);

/// The `AF_UNIX` socket behind descriptor `fd`: `EBADF` for no
/// descriptor, `None` for another file.
pub fn socket_of(files: &LinuxProcess, fd: u64) -> Result<Option<UnixDescriptor>, Errno> {
    let file = files.fds.get(fd as i64)?;
    let socket = file
        .device()
        .and_then(|device| device.as_any())
        .and_then(|any| any.downcast_ref::<UnixSocketFile>())
        .map(|device| device.0.clone());
    Ok(socket.map(|socket| (file, socket)))
}

/// Whether `file` does not block (`O_NONBLOCK`).
pub fn is_nonblocking(file: &OpenFile) -> bool {
    file.flags() & flags::O_NONBLOCK != 0
}

/// Reads the `length`-byte `struct sockaddr_un` at `address`: `EINVAL`
/// for a length out of range (before the memory is read) or another
/// family, `EFAULT` for memory that is not there.
pub fn read_address(address: u64, length: u64) -> Result<UnixAddress, Errno> {
    // An `int`: a negative length is out of range too.
    let length = usize::try_from(length as u32 as i32).map_err(|_| Errno::EINVAL)?;
    if length > SOCKADDR_UN_BYTES {
        return Err(Errno::EINVAL);
    }
    let mut bytes = alloc::vec![0u8; length];
    user::read(address, &mut bytes)?;
    UnixAddress::parse(&bytes)
}

/// Writes `name` at `address`, cut to the room the `int` at `length_at`
/// says, and its whole length back there (`EINVAL` for a negative room,
/// as Linux's `move_addr_to_user`).
pub fn write_address(name: &UnixAddress, address: u64, length_at: u64) -> Result<(), Errno> {
    let mut room = [0u8; 4];
    user::read(length_at, &mut room)?;
    let room = usize::try_from(i32::from_le_bytes(room)).map_err(|_| Errno::EINVAL)?;
    let bytes = name.to_bytes();
    user::write(address, &bytes[..room.min(bytes.len())])?;
    user::write(length_at, &(bytes.len() as u32).to_le_bytes())
}

/// `socket(AF_UNIX, type, protocol)`: an unconnected socket, made by
/// the caller.
pub fn socket(
    local: &LocalSockets<'_>,
    process: &LinuxProcess,
    kind: u64,
    protocol: u64,
) -> Result<i64, Errno> {
    if kind & !(SOCK_TYPE_MASK | SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let pair_kind = unix_kind(kind & SOCK_TYPE_MASK, protocol)?;
    let socket = UnixSocket::new(pair_kind, local.names, credentials_of(process));
    let status = if kind & SOCK_NONBLOCK != 0 {
        flags::O_NONBLOCK
    } else {
        0
    };
    let file = socket_file(local.directory, socket, status)?;
    let close_on_exec = kind & SOCK_CLOEXEC != 0;
    Ok(i64::from(process.fds.install(file, 0, close_on_exec)?))
}

/// `bind(fd, addr, addrlen)`.
pub fn bind(
    local: &LocalSockets<'_>,
    process: &LinuxProcess,
    socket: &Arc<UnixSocket>,
    address: u64,
    length: u64,
) -> Result<i64, Errno> {
    let name = read_address(address, length)?;
    socket.bind(&local.caller(process), name).map(|()| 0)
}

/// `listen(fd, backlog)`.
pub fn listen(process: &LinuxProcess, socket: &UnixSocket, backlog: u64) -> Result<i64, Errno> {
    socket.listen(backlog, credentials_of(process)).map(|()| 0)
}

/// `connect(fd, addr, addrlen)`: a stream or sequenced-packet socket
/// connects to a listener (waiting for room in its backlog unless
/// non-blocking); a datagram socket takes a default peer (`AF_UNSPEC`:
/// none).
pub fn connect(
    local: &LocalSockets<'_>,
    process: &LinuxProcess,
    file: &OpenFile,
    socket: &Arc<UnixSocket>,
    address: u64,
    length: u64,
) -> Result<i64, Errno> {
    if socket.kind() == PairKind::Datagram && is_unspecified(address, length)? {
        return socket.connect_datagram(None).map(|()| 0);
    }
    let name = read_address(address, length)?;
    if !name.is_named() {
        return Err(Errno::EINVAL);
    }
    let caller = local.caller(process);
    let target = find(&caller, &name)?;
    if target.kind() != socket.kind() {
        return Err(Errno::EPROTOTYPE);
    }
    if socket.kind() == PairKind::Datagram {
        return socket.connect_datagram(Some(target)).map(|()| 0);
    }
    socket
        .connect(&target, caller.credentials, is_nonblocking(file))
        .map(|()| 0)
}

/// Whether `connect`'s address is of family `AF_UNSPEC` (dissolving a
/// datagram socket's association).
fn is_unspecified(address: u64, length: u64) -> Result<bool, Errno> {
    if (length as u32) < 2 {
        return Ok(false);
    }
    let mut family = [0u8; 2];
    user::read(address, &mut family)?;
    Ok(u16::from_le_bytes(family) == AF_UNSPEC)
}

/// `accept4(fd, addr, addrlen, flags)` (and `accept`): a new descriptor
/// for the next connection, and its peer's name.
pub fn accept4(
    local: &LocalSockets<'_>,
    process: &LinuxProcess,
    file: &OpenFile,
    socket: &UnixSocket,
    address: u64,
    length_at: u64,
    accept_flags: u64,
) -> Result<i64, Errno> {
    if accept_flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let (accepted, peer_name) = socket.accept(is_nonblocking(file))?;
    let status = if accept_flags & SOCK_NONBLOCK != 0 {
        flags::O_NONBLOCK
    } else {
        0
    };
    // `accept` may leave the address out.
    if address != 0 {
        write_address(&peer_name, address, length_at)?;
    }
    let accepted = socket_file(local.directory, accepted, status)?;
    let close_on_exec = accept_flags & SOCK_CLOEXEC != 0;
    Ok(i64::from(process.fds.install(
        accepted,
        0,
        close_on_exec,
    )?))
}

/// `shutdown(fd, how)`: `EINVAL` for an unknown `how`.
pub fn shutdown(socket: &UnixSocket, how: u64) -> Result<i64, Errno> {
    let (read, write) = match how {
        SHUT_RD => (true, false),
        SHUT_WR => (false, true),
        SHUT_RDWR => (true, true),
        _ => return Err(Errno::EINVAL),
    };
    socket.shutdown(read, write);
    Ok(0)
}

/// `getsockname(fd, addr, addrlen)`.
pub fn getsockname(socket: &UnixSocket, address: u64, length_at: u64) -> Result<i64, Errno> {
    write_name(&socket.name(), address, length_at)
}

/// `getpeername(fd, addr, addrlen)`: `ENOTCONN` without a peer.
pub fn getpeername(socket: &UnixSocket, address: u64, length_at: u64) -> Result<i64, Errno> {
    write_name(&socket.peer_name()?, address, length_at)
}

/// Writes `name` for `getsockname`/`getpeername`.
fn write_name(name: &UnixAddress, address: u64, length_at: u64) -> Result<i64, Errno> {
    write_address(name, address, length_at).map(|()| 0)
}
