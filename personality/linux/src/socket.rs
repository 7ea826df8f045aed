//! Sockets: the `AF_INET` family over the `sockets` service (UDP and TCP
//! on smoltcp, over the loopback interface). A socket is an open file
//! whose driver is a [`SocketFile`], on a socket inode of the
//! personality's hidden file system, so `read`, `write`, `close`, `poll`,
//! `select`, `dup` and `fork` work on it as on any descriptor.
//!
//! `AF_UNIX` sockets are `unix_socket`'s: each call here hands an
//! `AF_UNIX` descriptor to `unix_calls`, `unix_messages` or
//! `unix_options`. Other families are `EAFNOSUPPORT`, and the socket
//! calls on a descriptor that is not a socket are `ENOTSOCK`.
//!
//! Blocking calls block on [`SOCKET_EVENTS`], one wait queue for every
//! socket: the stack wakes it whenever an operation moved packets or
//! changed a socket's state (loopback traffic, a close), and the kernel's
//! network thread after packets came in (see `sockets::set_change_hook`
//! and [`wake_network_waiters`]). A waiter blocks no longer than until
//! the stack's next timer (a retransmission, a delayed acknowledgement),
//! since on loopback its own look is what runs the timers. Blocking calls
//! honour `O_NONBLOCK` (`EAGAIN`, `EINPROGRESS` for `connect`), and end
//! with `EINTR` when a signal is to be taken. A send to a peer that is
//! gone is `EPIPE`; `write` on such a socket also raises `SIGPIPE`, as
//! for pipes, but `send`, `sendto` and `sendmsg` do not (as if
//! `MSG_NOSIGNAL` were always given).

use alloc::sync::Arc;
use core::net::{Ipv4Addr, SocketAddrV4};

use linux_abi::socket::{
    MessageHeader, SockaddrIn, AF_INET, AF_UNIX, IPPROTO_TCP, IPPROTO_UDP, MSG_DONTWAIT, MSG_PEEK,
    MSG_TRUNC, MSG_WAITFORONE, SHUT_RD, SHUT_RDWR, SHUT_WR, SOCK_CLOEXEC, SOCK_DGRAM,
    SOCK_NONBLOCK, SOCK_STREAM, SOCK_TYPE_MASK, SOL_SOCKET, SO_BROADCAST, SO_ERROR, SO_KEEPALIVE,
    SO_LINGER, SO_RCVBUF, SO_RCVTIMEO, SO_REUSEADDR, SO_REUSEPORT, SO_SNDBUF, SO_SNDTIMEO, SO_TYPE,
    TCP_NODELAY,
};
use sockets::{Kind, Readiness as SocketReadiness, Shutdown, Socket, SocketError, Stack};
use vfs::{flags, Device, Errno, Inode, NewNode, NodeKind, OpenFile, Readiness};

use crate::{
    machine::{Blocking, Clock, Machine},
    unix_calls::{self, LocalSockets},
    unix_messages, unix_options, user,
    wait::{wait_on_any, FileWaitQueue},
    LinuxProcess,
};

/// What `SO_SNDBUF` and `SO_RCVBUF` report (the stack's buffers).
const BUFFER_BYTES: i32 = 64 * 1024;

/// A socket as an open file's driver.
pub struct SocketFile {
    socket: Socket,
}

impl SocketFile {
    /// The socket.
    pub fn socket(&self) -> &Socket {
        &self.socket
    }
}

/// Waits for `attempt` while it would block, unless `nonblocking`
/// (`EAGAIN`); `EINTR` if a signal is to be taken meanwhile.
fn waiting<T>(
    socket: &Socket,
    nonblocking: bool,
    mut attempt: impl FnMut() -> Result<T, SocketError>,
) -> Result<T, Errno> {
    let outcome = wait_for_socket(socket, || match attempt() {
        Err(SocketError::WouldBlock) if !nonblocking => None,
        other => Some(other),
    })?;
    outcome.map_err(errno)
}

/// Tries `attempt` until it answers (`Some`), blocking on
/// [`SOCKET_EVENTS`] in between, each block no longer than until
/// `socket`'s stack has a timer due (asked only when about to block: it
/// looks at every socket, which a call that need not wait should not
/// pay for); `EINTR` if a signal is to be taken meanwhile.
fn wait_for_socket<T>(socket: &Socket, mut attempt: impl FnMut() -> Option<T>) -> Result<T, Errno> {
    let timer_due = || {
        socket
            .timer_delay_ms()
            .map(|ms| Machine::uptime_ns().saturating_add(ms.max(1) * 1_000_000))
    };
    loop {
        // No deadline: only an answer or EINTR ends the wait.
        if let Some(answer) = wait_on_any(&SOCKET_EVENTS, "socket", None, timer_due, &mut attempt)?
        {
            return Ok(answer);
        }
    }
}

/// Threads waiting on sockets (and `poll`s of sockets): woken when the
/// stack changed (`sockets::set_change_hook`) or packets arrived.
pub static SOCKET_EVENTS: FileWaitQueue = FileWaitQueue::new();

/// How long [`wait_for_the_network`] blocks at most: its callers (the
/// kernel's own servers) look again then, whatever woke them.
const KERNEL_WAIT_NS: u64 = 1_000_000;

/// Waits for the sockets to change (the kernel's own servers, which look
/// at their sockets themselves): blocks on [`SOCKET_EVENTS`] for a
/// millisecond at most, woken as soon as a packet arrives or the stack
/// changes (so a server's latency is the interrupt's, not the sleep's);
/// `EINTR` if the caller must stop. `round` counts the waits of one
/// operation (unused: kept for the callers' loops).
pub fn wait_for_the_network(round: &mut u32) -> Result<(), Errno> {
    *round = round.saturating_add(1);
    if crate::pipe::interrupted() {
        return Err(Errno::EINTR);
    }
    let me = Machine::current_thread();
    Machine::prepare_to_wait();
    vfs::WaitQueue::register(&SOCKET_EVENTS, me);
    Machine::block_prepared(
        "network",
        Some(Machine::uptime_ns().saturating_add(KERNEL_WAIT_NS)),
    );
    vfs::WaitQueue::unregister(&SOCKET_EVENTS, me);
    Ok(())
}

/// Wakes the threads waiting on sockets: the kernel's network thread
/// calls it after handing packets to the socket stack, and the stack
/// after an operation changed it.
pub fn wake_network_waiters() {
    SOCKET_EVENTS.wake_all();
}

/// Linux's errno for `error`.
fn errno(error: SocketError) -> Errno {
    match error {
        SocketError::WouldBlock => Errno::EAGAIN,
        SocketError::InProgress => Errno::EINPROGRESS,
        SocketError::AddressInUse => Errno::EADDRINUSE,
        SocketError::AddressNotAvailable => Errno::EADDRNOTAVAIL,
        SocketError::Unreachable => Errno::ENETUNREACH,
        SocketError::Refused => Errno::ECONNREFUSED,
        SocketError::Reset => Errno::ECONNRESET,
        SocketError::AlreadyBound | SocketError::NotListening => Errno::EINVAL,
        SocketError::AlreadyConnected => Errno::EISCONN,
        SocketError::NotConnected => Errno::ENOTCONN,
        SocketError::NotSupported => Errno::EOPNOTSUPP,
        SocketError::BrokenPipe => Errno::EPIPE,
        SocketError::MessageTooLong => Errno::EMSGSIZE,
        SocketError::NoMemory => Errno::ENOMEM,
        SocketError::NoDestination => Errno::EDESTADDRREQ,
    }
}

impl Device for SocketFile {
    fn read(&self, _offset: u64, buf: &mut [u8], nonblocking: bool) -> Result<usize, Errno> {
        waiting(&self.socket, nonblocking, || {
            self.socket.receive(buf, false)
        })
        .map(|(count, _, _)| count)
    }

    fn write(&self, _offset: u64, buf: &[u8], nonblocking: bool) -> Result<usize, Errno> {
        send_all(&self.socket, buf, None, nonblocking)
    }

    fn readiness(&self) -> Readiness {
        let SocketReadiness {
            readable,
            writable,
            hung_up,
        } = self.socket.readiness();
        Readiness {
            readable,
            writable,
            hung_up,
            error: false,
        }
    }

    fn wait_queue(&self) -> Option<&dyn vfs::WaitQueue> {
        Some(&SOCKET_EVENTS)
    }

    fn as_any(&self) -> Option<&dyn core::any::Any> {
        Some(self)
    }
}

/// Sends `data`: a datagram whole, a stream all of it (waiting for room
/// unless `nonblocking`, which sends what fits).
fn send_all(
    socket: &Socket,
    data: &[u8],
    to: Option<SocketAddrV4>,
    nonblocking: bool,
) -> Result<usize, Errno> {
    if socket.kind() == Kind::Datagram {
        return waiting(socket, nonblocking, || socket.send(data, to));
    }
    let mut done = 0;
    // Sends what fits; an answer once all is sent or the send must stop,
    // `None` to wait for room.
    let attempt = || loop {
        match socket.send(&data[done..], to) {
            Ok(count) => {
                done += count;
                if done == data.len() {
                    return Some(Ok(done));
                }
            }
            Err(SocketError::WouldBlock) if nonblocking => {
                return Some(if done > 0 {
                    Ok(done)
                } else {
                    Err(Errno::EAGAIN)
                });
            }
            Err(SocketError::WouldBlock) => return None,
            Err(error) => {
                return Some(if done > 0 {
                    Ok(done)
                } else {
                    Err(errno(error))
                });
            }
        }
    };
    match wait_for_socket(socket, attempt) {
        Ok(answer) => answer,
        // Interrupted after some bytes went: those count.
        Err(error) => {
            if done > 0 {
                Ok(done)
            } else {
                Err(error)
            }
        }
    }
}

/// The socket behind descriptor `fd`: `EBADF`, or `ENOTSOCK` for
/// another file; with the open file (its `O_NONBLOCK`).
fn socket_of(files: &LinuxProcess, fd: u64) -> Result<(Arc<OpenFile>, Arc<dyn Device>), Errno> {
    let file = files.fds.get(fd as i64)?;
    let device = file.device().cloned().ok_or(Errno::ENOTSOCK)?;
    device
        .as_any()
        .and_then(|any| any.downcast_ref::<SocketFile>())
        .ok_or(Errno::ENOTSOCK)?;
    Ok((file, device))
}

/// `EBADF` or `ENOTSOCK` unless `fd` is a socket of either family.
fn is_socket(files: &LinuxProcess, fd: u64) -> Result<(), Errno> {
    if unix_calls::socket_of(files, fd)?.is_some() {
        return Ok(());
    }
    socket_of(files, fd).map(|_| ())
}

/// Runs `f` on the socket behind `fd`, with whether the file is
/// non-blocking.
fn with_socket<T>(
    files: &LinuxProcess,
    fd: u64,
    f: impl FnOnce(&Socket, bool) -> Result<T, Errno>,
) -> Result<T, Errno> {
    let (file, device) = socket_of(files, fd)?;
    let nonblocking = file.flags() & flags::O_NONBLOCK != 0;
    let socket = device
        .as_any()
        .and_then(|any| any.downcast_ref::<SocketFile>())
        .ok_or(Errno::ENOTSOCK)?;
    f(socket.socket(), nonblocking)
}

/// Reads a `struct sockaddr_in` of `length` bytes at `address`:
/// `EINVAL` if too short, `EAFNOSUPPORT` for another family.
fn read_address(address: u64, length: u64) -> Result<SocketAddrV4, Errno> {
    if length < SockaddrIn::BYTES as u64 {
        return Err(Errno::EINVAL);
    }
    let mut bytes = [0u8; SockaddrIn::BYTES];
    user::read(address, &mut bytes)?;
    let address = SockaddrIn::from_bytes(&bytes).ok_or(Errno::EAFNOSUPPORT)?;
    Ok(SocketAddrV4::new(
        Ipv4Addr::from(address.address),
        address.port,
    ))
}

/// Writes `value` as a `struct sockaddr_in` at `address`, cut to the
/// room `*length_at` says, and the whole length back there (nothing if
/// `address` is 0, as `accept` allows).
fn write_address(value: SocketAddrV4, address: u64, length_at: u64) -> Result<(), Errno> {
    if address == 0 {
        return Ok(());
    }
    let mut length = [0u8; 4];
    user::read(length_at, &mut length)?;
    let room = i32::from_le_bytes(length);
    if room < 0 {
        return Err(Errno::EINVAL);
    }
    let bytes = SockaddrIn {
        port: value.port(),
        address: value.ip().octets(),
    }
    .to_bytes();
    let count = (room as usize).min(SockaddrIn::BYTES);
    user::write(address, &bytes[..count])?;
    user::write(length_at, &(SockaddrIn::BYTES as i32).to_le_bytes())
}

/// Makes an open file for `socket` on a socket inode of `directory`
/// (unlinked at once) and installs it.
fn install(
    directory: &Arc<dyn Inode>,
    files: &LinuxProcess,
    socket: Socket,
    nonblocking: bool,
    close_on_exec: bool,
) -> Result<i64, Errno> {
    let name = alloc::format!("socket-{:p}", &socket as *const Socket);
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
    let file = OpenFile::new(
        inode,
        flags::O_RDWR | status,
        Some(Arc::new(SocketFile { socket })),
    );
    files
        .fds
        .install(Arc::new(file), 0, close_on_exec)
        .map(i64::from)
}

/// `socket(domain, type, protocol)`.
pub fn socket(
    stack: &Arc<Stack>,
    local: &LocalSockets<'_>,
    files: &LinuxProcess,
    domain: u64,
    kind: u64,
    protocol: u64,
) -> Result<i64, Errno> {
    if domain == u64::from(AF_UNIX) {
        return unix_calls::socket(local, files, kind, protocol);
    }
    if domain != u64::from(AF_INET) {
        return Err(Errno::EAFNOSUPPORT);
    }
    if kind & !(SOCK_TYPE_MASK | SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let kind_of = match (kind & SOCK_TYPE_MASK, protocol) {
        (SOCK_STREAM, 0 | IPPROTO_TCP) => Kind::Stream,
        (SOCK_DGRAM, 0 | IPPROTO_UDP) => Kind::Datagram,
        (SOCK_STREAM | SOCK_DGRAM, _) => return Err(Errno::EPROTONOSUPPORT),
        _ => return Err(Errno::ESOCKTNOSUPPORT),
    };
    let socket = Socket::new(stack.clone(), kind_of);
    install(
        local.directory,
        files,
        socket,
        kind & SOCK_NONBLOCK != 0,
        kind & SOCK_CLOEXEC != 0,
    )
}

/// `bind(fd, addr, addrlen)`.
pub fn bind(
    local: &LocalSockets<'_>,
    files: &LinuxProcess,
    fd: u64,
    address: u64,
    length: u64,
) -> Result<i64, Errno> {
    if let Some((_, unix)) = unix_calls::socket_of(files, fd)? {
        return unix_calls::bind(local, files, &unix, address, length);
    }
    with_socket(files, fd, |socket, _| {
        let address = read_address(address, length)?;
        socket.bind(address).map(|()| 0).map_err(errno)
    })
}

/// `connect(fd, addr, addrlen)`: a stream waits until connected (unless
/// non-blocking: `EINPROGRESS`).
pub fn connect(
    local: &LocalSockets<'_>,
    files: &LinuxProcess,
    fd: u64,
    address: u64,
    length: u64,
) -> Result<i64, Errno> {
    if let Some((file, unix)) = unix_calls::socket_of(files, fd)? {
        return unix_calls::connect(local, files, &file, &unix, address, length);
    }
    with_socket(files, fd, |socket, nonblocking| {
        let address = read_address(address, length)?;
        match socket.connect(address) {
            Ok(()) => Ok(0),
            Err(SocketError::InProgress) if nonblocking => Err(Errno::EINPROGRESS),
            Err(SocketError::InProgress) => {
                waiting(socket, false, || socket.connection()).map(|()| 0)
            }
            Err(error) => Err(errno(error)),
        }
    })
}

/// `listen(fd, backlog)`.
pub fn listen(files: &LinuxProcess, fd: u64, backlog: u64) -> Result<i64, Errno> {
    if let Some((_, unix)) = unix_calls::socket_of(files, fd)? {
        return unix_calls::listen(files, &unix, backlog);
    }
    with_socket(files, fd, |socket, _| {
        let backlog = (backlog as i32).max(0) as usize;
        socket.listen(backlog).map(|()| 0).map_err(errno)
    })
}

/// `accept4(fd, addr, addrlen, flags)` (and `accept`, flags 0).
pub fn accept4(
    local: &LocalSockets<'_>,
    files: &LinuxProcess,
    fd: u64,
    address: u64,
    length_at: u64,
    accept_flags: u64,
) -> Result<i64, Errno> {
    if let Some((file, unix)) = unix_calls::socket_of(files, fd)? {
        return unix_calls::accept4(local, files, &file, &unix, address, length_at, accept_flags);
    }
    if accept_flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let (socket, peer) = with_socket(files, fd, |socket, nonblocking| {
        waiting(socket, nonblocking, || socket.accept())
    })?;
    write_address(peer, address, length_at)?;
    install(
        local.directory,
        files,
        socket,
        accept_flags & SOCK_NONBLOCK != 0,
        accept_flags & SOCK_CLOEXEC != 0,
    )
}

/// `sendto(fd, buf, len, flags, dest_addr, addrlen)` (and `send`).
#[allow(clippy::too_many_arguments)]
pub fn sendto(
    local: &LocalSockets<'_>,
    files: &LinuxProcess,
    fd: u64,
    buffer: u64,
    length: u64,
    send_flags: u64,
    address: u64,
    address_length: u64,
) -> Result<i64, Errno> {
    if let Some((file, socket)) = unix_calls::socket_of(files, fd)? {
        let target = unix_messages::Target {
            file: &file,
            socket: &socket,
        };
        return unix_messages::sendto(
            local,
            files,
            &target,
            buffer,
            length,
            send_flags,
            address,
            address_length,
        );
    }
    with_socket(files, fd, |socket, nonblocking| {
        let to = if address != 0 {
            Some(read_address(address, address_length)?)
        } else {
            None
        };
        let length = usize::try_from(length).map_err(|_| Errno::EINVAL)?;
        let mut data = alloc::vec::Vec::new();
        data.try_reserve_exact(length).map_err(|_| Errno::ENOMEM)?;
        data.resize(length, 0);
        user::read(buffer, &mut data)?;
        let nonblocking = nonblocking || send_flags & MSG_DONTWAIT != 0;
        send_all(socket, &data, to, nonblocking).map(|count| count as i64)
    })
}

/// `recvfrom(fd, buf, len, flags, src_addr, addrlen)` (and `recv`).
pub fn recvfrom(
    files: &LinuxProcess,
    fd: u64,
    buffer: u64,
    length: u64,
    receive_flags: u64,
    address: u64,
    length_at: u64,
) -> Result<i64, Errno> {
    if let Some((file, socket)) = unix_calls::socket_of(files, fd)? {
        let target = unix_messages::Target {
            file: &file,
            socket: &socket,
        };
        return unix_messages::recvfrom(&target, buffer, length, receive_flags, address, length_at);
    }
    with_socket(files, fd, |socket, nonblocking| {
        let length = usize::try_from(length)
            .map_err(|_| Errno::EINVAL)?
            .min(1 << 20);
        let mut data = alloc::vec::Vec::new();
        data.try_reserve_exact(length).map_err(|_| Errno::ENOMEM)?;
        data.resize(length, 0);
        let nonblocking = nonblocking || receive_flags & MSG_DONTWAIT != 0;
        let peek = receive_flags & MSG_PEEK != 0;
        let (count, whole, from) =
            waiting(socket, nonblocking, || socket.receive(&mut data, peek))?;
        user::write(buffer, &data[..count])?;
        if let Some(from) = from {
            write_address(from, address, length_at)?;
        }
        // `MSG_TRUNC` asks for a datagram's whole length.
        Ok(if receive_flags & MSG_TRUNC != 0 {
            whole
        } else {
            count
        } as i64)
    })
}

/// Reads the `struct msghdr` at `at`.
pub(crate) fn read_message_header(at: u64) -> Result<MessageHeader, Errno> {
    let mut bytes = [0u8; MessageHeader::BYTES];
    user::read(at, &mut bytes)?;
    Ok(MessageHeader::from_bytes(&bytes))
}

/// `sendmsg(fd, msg, flags)`: the vectors gathered into one send.
pub fn sendmsg(
    local: &LocalSockets<'_>,
    files: &LinuxProcess,
    fd: u64,
    message: u64,
    send_flags: u64,
) -> Result<i64, Errno> {
    if let Some((file, socket)) = unix_calls::socket_of(files, fd)? {
        let target = unix_messages::Target {
            file: &file,
            socket: &socket,
        };
        return unix_messages::sendmsg(local, files, &target, message, send_flags);
    }
    let header = read_message_header(message)?;
    let data = gather(header.vectors, header.vector_count)?;
    with_socket(files, fd, |socket, nonblocking| {
        let to = if header.name != 0 {
            Some(read_address(header.name, u64::from(header.name_length))?)
        } else {
            None
        };
        let nonblocking = nonblocking || send_flags & MSG_DONTWAIT != 0;
        send_all(socket, &data, to, nonblocking).map(|count| count as i64)
    })
}

/// `recvmsg(fd, msg, flags)`: one receive scattered over the vectors; no
/// control messages (`msg_controllen` is set to 0).
pub fn recvmsg(
    files: &LinuxProcess,
    fd: u64,
    message: u64,
    receive_flags: u64,
) -> Result<i64, Errno> {
    if let Some((file, socket)) = unix_calls::socket_of(files, fd)? {
        let target = unix_messages::Target {
            file: &file,
            socket: &socket,
        };
        return unix_messages::recvmsg(files, &target, message, receive_flags);
    }
    let header = read_message_header(message)?;
    let total = vectors_length(header.vectors, header.vector_count)?;
    with_socket(files, fd, |socket, nonblocking| {
        let mut data = alloc::vec::Vec::new();
        data.try_reserve_exact(total).map_err(|_| Errno::ENOMEM)?;
        data.resize(total, 0);
        let nonblocking = nonblocking || receive_flags & MSG_DONTWAIT != 0;
        let peek = receive_flags & MSG_PEEK != 0;
        let (count, whole, from) =
            waiting(socket, nonblocking, || socket.receive(&mut data, peek))?;
        scatter(header.vectors, header.vector_count, &data[..count])?;
        if let (Some(from), true) = (from, header.name != 0) {
            // `msg_namelen` is at offset 8: room in, length out.
            write_address(
                from,
                header.name,
                message + MessageHeader::NAME_LENGTH_OFFSET,
            )?;
        }
        // msg_controllen (offset 40) = 0; msg_flags (offset 48).
        user::write(
            message + MessageHeader::CONTROL_LENGTH_OFFSET,
            &0u64.to_le_bytes(),
        )?;
        let truncated = if whole > count { MSG_TRUNC as u32 } else { 0 };
        user::write(
            message + MessageHeader::FLAGS_OFFSET,
            &truncated.to_le_bytes(),
        )?;
        Ok(count as i64)
    })
}

/// `struct mmsghdr`: a `struct msghdr` (56 bytes), then the `msg_len`
/// the call fills in (4 bytes and padding).
const MMSGHDR_BYTES: u64 = 64;
const MMSGHDR_LENGTH_OFFSET: u64 = 56;
/// The most messages one `sendmmsg`/`recvmmsg` handles (`UIO_MAXIOV`);
/// Linux cuts a longer vector there rather than failing.
const MMSG_MAX: u64 = 1024;

/// The address of the `index`th `struct mmsghdr` of the vector at
/// `vector` (`EFAULT` past the end of the address space).
fn mmsghdr_at(vector: u64, index: u64) -> Result<u64, Errno> {
    index
        .checked_mul(MMSGHDR_BYTES)
        .and_then(|offset| vector.checked_add(offset))
        .filter(|address| address.checked_add(MMSGHDR_BYTES).is_some())
        .ok_or(Errno::EFAULT)
}

/// Runs `one` (a `sendmsg` or `recvmsg`) on each of the first `count`
/// messages (cut at [`MMSG_MAX`]) of the `struct mmsghdr` vector at
/// `vector`, storing each one's byte count in its `msg_len`, until one
/// fails or `more` says to stop. Returns how many were done; a failure is
/// the call's error only when no message was done, as in Linux (a later
/// one ends the batch, and the caller sees it on its next call).
fn each_message(
    vector: u64,
    count: u64,
    mut one: impl FnMut(u64, u64) -> Result<i64, Errno>,
    mut more: impl FnMut() -> bool,
) -> Result<i64, Errno> {
    let mut done = 0;
    while done < count.min(MMSG_MAX) {
        let outcome = mmsghdr_at(vector, done).and_then(|header| {
            let bytes = one(header, done)?;
            user::write(
                header + MMSGHDR_LENGTH_OFFSET,
                &(bytes as u32).to_le_bytes(),
            )
        });
        match outcome {
            Ok(()) => done += 1,
            Err(error) if done == 0 => return Err(error),
            Err(_) => break,
        }
        if !more() {
            break;
        }
    }
    Ok(done as i64)
}

/// `sendmmsg(fd, msgvec, vlen, flags)`: [`sendmsg`] of each message of
/// the vector; returns how many were sent (`EBADF`/`ENOTSOCK` for the
/// descriptor before the vector is looked at).
pub fn sendmmsg(
    local: &LocalSockets<'_>,
    files: &LinuxProcess,
    fd: u64,
    vector: u64,
    count: u64,
    send_flags: u64,
) -> Result<i64, Errno> {
    is_socket(files, fd)?;
    each_message(
        vector,
        count,
        |header, _| sendmsg(local, files, fd, header, send_flags),
        || true,
    )
}

/// `recvmmsg(fd, msgvec, vlen, flags, timeout)`: [`recvmsg`] into each
/// message of the vector; returns how many were received. With
/// `MSG_WAITFORONE` only the first receive blocks. The `timeout` is
/// checked after each message, as in Linux (a receive that blocks is not
/// cut short by it); `EINVAL` for a malformed one, `EFAULT` for a bad
/// pointer.
pub fn recvmmsg(
    files: &LinuxProcess,
    fd: u64,
    vector: u64,
    count: u64,
    receive_flags: u64,
    timeout: u64,
) -> Result<i64, Errno> {
    is_socket(files, fd)?;
    let deadline =
        crate::poll::timespec_ns(timeout)?.map(|ns| Machine::uptime_ns().saturating_add(ns));
    let wait_for_one = receive_flags & MSG_WAITFORONE != 0;
    let flags = receive_flags & !MSG_WAITFORONE;
    each_message(
        vector,
        count,
        |header, index| {
            let nonblocking = if wait_for_one && index > 0 {
                MSG_DONTWAIT
            } else {
                0
            };
            recvmsg(files, fd, header, flags | nonblocking)
        },
        || deadline.is_none_or(|deadline| Machine::uptime_ns() < deadline),
    )
}

/// The total length of `count` `iovec`s at `vectors` of a `struct
/// msghdr` (`EMSGSIZE` past `UIO_MAXIOV`, as Linux's `__copy_msghdr`;
/// a total beyond 1 MiB per call is cut there).
pub(crate) fn vectors_length(vectors: u64, count: u64) -> Result<usize, Errno> {
    if count > MMSG_MAX {
        return Err(Errno::EMSGSIZE);
    }
    let mut total = 0usize;
    for index in 0..count {
        let (_, length) = user::read_iovec(vectors, index)?;
        total = total.saturating_add(usize::try_from(length).map_err(|_| Errno::EINVAL)?);
    }
    Ok(total.min(1 << 20))
}

/// The bytes of `count` `iovec`s at `vectors`, in order.
pub(crate) fn gather(vectors: u64, count: u64) -> Result<alloc::vec::Vec<u8>, Errno> {
    let total = vectors_length(vectors, count)?;
    let mut data = alloc::vec::Vec::new();
    data.try_reserve_exact(total).map_err(|_| Errno::ENOMEM)?;
    for index in 0..count {
        let (base, length) = user::read_iovec(vectors, index)?;
        let length = (length as usize).min(total - data.len());
        let start = data.len();
        data.resize(start + length, 0);
        user::read(base, &mut data[start..])?;
    }
    Ok(data)
}

/// Spreads `data` over `count` `iovec`s at `vectors`.
pub(crate) fn scatter(vectors: u64, count: u64, data: &[u8]) -> Result<(), Errno> {
    let mut done = 0;
    for index in 0..count {
        if done == data.len() {
            break;
        }
        let (base, length) = user::read_iovec(vectors, index)?;
        let chunk = (length as usize).min(data.len() - done);
        user::write(base, &data[done..done + chunk])?;
        done += chunk;
    }
    Ok(())
}

/// `shutdown(fd, how)`.
pub fn shutdown(files: &LinuxProcess, fd: u64, how: u64) -> Result<i64, Errno> {
    if let Some((_, unix)) = unix_calls::socket_of(files, fd)? {
        return unix_calls::shutdown(&unix, how);
    }
    let how = match how {
        SHUT_RD => Shutdown::Read,
        SHUT_WR => Shutdown::Write,
        SHUT_RDWR => Shutdown::Both,
        _ => return Err(Errno::EINVAL),
    };
    with_socket(files, fd, |socket, _| {
        socket.shutdown(how).map(|()| 0).map_err(errno)
    })
}

/// `getsockname(fd, addr, addrlen)`.
pub fn getsockname(
    files: &LinuxProcess,
    fd: u64,
    address: u64,
    length_at: u64,
) -> Result<i64, Errno> {
    if let Some((_, unix)) = unix_calls::socket_of(files, fd)? {
        return unix_calls::getsockname(&unix, address, length_at);
    }
    with_socket(files, fd, |socket, _| {
        write_address(socket.local_address(), address, length_at).map(|()| 0)
    })
}

/// `getpeername(fd, addr, addrlen)`.
pub fn getpeername(
    files: &LinuxProcess,
    fd: u64,
    address: u64,
    length_at: u64,
) -> Result<i64, Errno> {
    if let Some((_, unix)) = unix_calls::socket_of(files, fd)? {
        return unix_calls::getpeername(&unix, address, length_at);
    }
    with_socket(files, fd, |socket, _| {
        let peer = socket.peer_address().map_err(errno)?;
        write_address(peer, address, length_at).map(|()| 0)
    })
}

/// Reads an `int` option value of `length` bytes at `value`.
fn read_int(value: u64, length: u64) -> Result<i32, Errno> {
    if length < 4 {
        return Err(Errno::EINVAL);
    }
    let mut bytes = [0u8; 4];
    user::read(value, &mut bytes)?;
    Ok(i32::from_le_bytes(bytes))
}

/// `setsockopt(fd, level, name, value, length)`: `TCP_NODELAY` and
/// `SO_KEEPALIVE` change the socket; the common others (`SO_REUSEADDR`,
/// buffer sizes, timeouts, `SO_LINGER`, ...) are accepted and change
/// nothing; unknown ones are `ENOPROTOOPT`.
pub fn setsockopt(
    files: &LinuxProcess,
    fd: u64,
    level: u64,
    name: u64,
    value: u64,
    length: u64,
) -> Result<i64, Errno> {
    if let Some((_, unix)) = unix_calls::socket_of(files, fd)? {
        return unix_options::setsockopt(&unix, level, name, value, length);
    }
    with_socket(files, fd, |socket, _| match (level, name) {
        (IPPROTO_TCP, TCP_NODELAY) => {
            socket.set_no_delay(read_int(value, length)? != 0);
            Ok(0)
        }
        (SOL_SOCKET, SO_KEEPALIVE) => {
            socket.set_keep_alive(read_int(value, length)? != 0);
            Ok(0)
        }
        (
            SOL_SOCKET,
            SO_REUSEADDR | SO_REUSEPORT | SO_BROADCAST | SO_SNDBUF | SO_RCVBUF | SO_LINGER
            | SO_RCVTIMEO | SO_SNDTIMEO,
        ) => Ok(0),
        _ => Err(Errno::ENOPROTOOPT),
    })
}

/// `getsockopt(fd, level, name, value, length)`: `SO_TYPE`, `SO_ERROR`
/// (taken), the buffer sizes, and 0 for the accepted flags.
pub fn getsockopt(
    files: &LinuxProcess,
    fd: u64,
    level: u64,
    name: u64,
    value: u64,
    length_at: u64,
) -> Result<i64, Errno> {
    if let Some((_, unix)) = unix_calls::socket_of(files, fd)? {
        return unix_options::getsockopt(&unix, level, name, value, length_at);
    }
    with_socket(files, fd, |socket, _| {
        let answer: i32 = match (level, name) {
            (SOL_SOCKET, SO_TYPE) => match socket.kind() {
                Kind::Stream => SOCK_STREAM as i32,
                Kind::Datagram => SOCK_DGRAM as i32,
            },
            (SOL_SOCKET, SO_ERROR) => socket.take_error().map_or(0, |error| errno(error).as_i32()),
            (SOL_SOCKET, SO_SNDBUF | SO_RCVBUF) => BUFFER_BYTES,
            (SOL_SOCKET, SO_REUSEADDR | SO_REUSEPORT | SO_KEEPALIVE | SO_BROADCAST)
            | (IPPROTO_TCP, TCP_NODELAY) => 0,
            _ => return Err(Errno::ENOPROTOOPT),
        };
        let mut room = [0u8; 4];
        user::read(length_at, &mut room)?;
        let room = i32::from_le_bytes(room);
        if room < 0 {
            return Err(Errno::EINVAL);
        }
        let bytes = answer.to_le_bytes();
        let count = (room as usize).min(bytes.len());
        user::write(value, &bytes[..count])?;
        user::write(length_at, &(count as i32).to_le_bytes())?;
        Ok(0)
    })
}
