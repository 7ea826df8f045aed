//! The data calls on `AF_UNIX` descriptors: `sendto` (`send`),
//! `recvfrom` (`recv`), `sendmsg` and `recvmsg` (and through them
//! `sendmmsg` and `recvmmsg`), with their control messages: descriptors
//! passed with `SCM_RIGHTS` (installed in the receiver as new
//! descriptors), and the sender's credentials with `SCM_CREDENTIALS`
//! when the receiver set `SO_PASSCRED` (what a sender puts in one is
//! checked for form and otherwise left: the kernel always reports the
//! real sender).
//!
//! A send to a peer that is gone is `EPIPE` with `SIGPIPE` for the
//! calling thread, unless `MSG_NOSIGNAL` (Linux's `unix_stream_sendmsg`).

use alloc::{sync::Arc, vec, vec::Vec};

use linux_abi::{
    signal::SIGPIPE,
    socket::{
        cmsg_align, MessageHeader, CMSGHDR_BYTES, MSG_CMSG_CLOEXEC, MSG_CTRUNC, MSG_DONTWAIT,
        MSG_NOSIGNAL, MSG_OOB, MSG_PEEK, MSG_TRUNC, MSG_WAITALL, SCM_CREDENTIALS, SCM_MAX_FD,
        SCM_RIGHTS, SOL_SOCKET, UCRED_BYTES,
    },
};
use vfs::{Errno, OpenFile};

use crate::{
    signal::{current_thread, SignalInfo, Source},
    socket::{gather, read_message_header, scatter, vectors_length},
    unix_address::UnixAddress,
    unix_calls::{is_nonblocking, read_address, write_address, LocalSockets},
    unix_connection::{PairKind, PeerCredentials, ReceiveOptions, Received, BUFFER_BYTES},
    unix_socket::UnixSocket,
    user, LinuxProcess,
};

/// The largest control buffer `sendmsg` reads (Linux refuses more than
/// `INT_MAX`; far less is ever meaningful here).
const MAX_CONTROL_BYTES: u64 = 1 << 16;

/// A descriptor of `SCM_RIGHTS`: an `int`.
const FD_BYTES: usize = 4;

/// The socket a data call works on, with its descriptor's file.
pub struct Target<'a> {
    /// The descriptor's open file (its `O_NONBLOCK`).
    pub file: &'a OpenFile,
    /// The socket.
    pub socket: &'a Arc<UnixSocket>,
}

/// Sends `data` (with `rights`) to `to` or the peer; `SIGPIPE` with
/// `EPIPE` unless `MSG_NOSIGNAL`.
fn send(
    local: &LocalSockets<'_>,
    process: &LinuxProcess,
    target: &Target<'_>,
    data: &[u8],
    to: Option<UnixAddress>,
    rights: Vec<Arc<OpenFile>>,
    send_flags: u64,
) -> Result<i64, Errno> {
    if send_flags & MSG_OOB != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let nonblocking = is_nonblocking(target.file) || send_flags & MSG_DONTWAIT != 0;
    let caller = local.caller(process);
    let outcome = target
        .socket
        .send(&caller, data, to.as_ref(), rights, nonblocking);
    if outcome == Err(Errno::EPIPE) && send_flags & MSG_NOSIGNAL == 0 {
        let info = SignalInfo {
            signal: SIGPIPE,
            source: Source::Kernel,
        };
        process
            .signals
            .lock()
            .post_to_thread(current_thread(), info);
    }
    outcome.map(|count| count as i64)
}

/// The address argument of a send: none for a null pointer or a zero
/// length (as Linux's `move_addr_to_kernel` leaves it).
fn send_address(address: u64, length: u64) -> Result<Option<UnixAddress>, Errno> {
    if address == 0 || length as u32 == 0 {
        return Ok(None);
    }
    read_address(address, length).map(Some)
}

/// A user buffer's bytes: `ENOMEM` if they cannot be held.
fn user_bytes(address: u64, length: u64) -> Result<Vec<u8>, Errno> {
    let length = usize::try_from(length).map_err(|_| Errno::EINVAL)?;
    let mut data = Vec::new();
    data.try_reserve_exact(length).map_err(|_| Errno::ENOMEM)?;
    data.resize(length, 0);
    user::read(address, &mut data)?;
    Ok(data)
}

/// `sendto(fd, buf, len, flags, dest_addr, addrlen)` (and `send`).
#[allow(clippy::too_many_arguments)]
pub fn sendto(
    local: &LocalSockets<'_>,
    process: &LinuxProcess,
    target: &Target<'_>,
    buffer: u64,
    length: u64,
    send_flags: u64,
    address: u64,
    address_length: u64,
) -> Result<i64, Errno> {
    let to = send_address(address, address_length)?;
    let data = user_bytes(buffer, length)?;
    send(local, process, target, &data, to, Vec::new(), send_flags)
}

/// `sendmsg(fd, msg, flags)`: the vectors gathered into one send, with
/// the descriptors of its `SCM_RIGHTS` messages.
pub fn sendmsg(
    local: &LocalSockets<'_>,
    process: &LinuxProcess,
    target: &Target<'_>,
    message: u64,
    send_flags: u64,
) -> Result<i64, Errno> {
    let header = read_message_header(message)?;
    let to = send_address(header.name, u64::from(header.name_length))?;
    let rights = read_control(process, header.control, header.control_length)?;
    let data = gather(header.vectors, header.vector_count)?;
    send(local, process, target, &data, to, rights, send_flags)
}

/// The descriptors the control messages at `control` pass: `EINVAL` for
/// a malformed message or more than `SCM_MAX_FD` descriptors, `EBADF`
/// for one that is not open. Messages of other levels are skipped, as
/// Linux's `__scm_send` does.
fn read_control(
    process: &LinuxProcess,
    control: u64,
    length: u64,
) -> Result<Vec<Arc<OpenFile>>, Errno> {
    let mut rights = Vec::new();
    if length == 0 {
        return Ok(rights);
    }
    if length > MAX_CONTROL_BYTES {
        return Err(Errno::ENOBUFS);
    }
    let bytes = user_bytes(control, length)?;
    let mut offset = 0;
    while offset + CMSGHDR_BYTES <= bytes.len() {
        let field = |at: usize, size: usize| {
            let mut value = [0u8; 8];
            value[..size].copy_from_slice(&bytes[offset + at..offset + at + size]);
            u64::from_le_bytes(value)
        };
        let message_length = field(0, 8);
        let (level, kind) = (field(8, 4), field(12, 4) as u32);
        let end = usize::try_from(message_length)
            .ok()
            .and_then(|length| offset.checked_add(length))
            .filter(|&end| end <= bytes.len());
        let Some(end) = end.filter(|_| message_length >= CMSGHDR_BYTES as u64) else {
            return Err(Errno::EINVAL);
        };
        if level == SOL_SOCKET {
            let payload = &bytes[offset + CMSGHDR_BYTES..end];
            match kind {
                SCM_RIGHTS => {
                    let fds: Vec<i32> = payload
                        .chunks_exact(FD_BYTES)
                        .map(|fd| i32::from_le_bytes([fd[0], fd[1], fd[2], fd[3]]))
                        .collect();
                    if rights.len() + fds.len() > SCM_MAX_FD {
                        return Err(Errno::EINVAL);
                    }
                    for fd in fds {
                        rights.push(process.fds.get(i64::from(fd))?);
                    }
                }
                SCM_CREDENTIALS if payload.len() == UCRED_BYTES => {}
                _ => return Err(Errno::EINVAL),
            }
        }
        offset = cmsg_align(end);
    }
    Ok(rights)
}

/// Receives into a buffer of `length` bytes (a datagram never holds
/// more than [`BUFFER_BYTES`], and a stream returns what it has).
fn receive(
    target: &Target<'_>,
    length: usize,
    receive_flags: u64,
) -> Result<(Vec<u8>, Received, Option<UnixAddress>), Errno> {
    if receive_flags & MSG_OOB != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let mut data = vec![0u8; length.min(BUFFER_BYTES)];
    let options = ReceiveOptions {
        nonblocking: is_nonblocking(target.file) || receive_flags & MSG_DONTWAIT != 0,
        peek: receive_flags & MSG_PEEK != 0,
        wait_all: receive_flags & MSG_WAITALL != 0,
    };
    let (received, from) = target.socket.receive(&mut data, options)?;
    Ok((data, received, from))
}

/// Writes the sender's name for a receive: its name, or length 0 for an
/// unnamed sender (Linux's `unix_copy_addr` leaves it empty).
fn write_sender(from: Option<&UnixAddress>, address: u64, length_at: u64) -> Result<(), Errno> {
    match from {
        Some(name) if name.is_named() => write_address(name, address, length_at),
        _ => user::write(length_at, &0u32.to_le_bytes()),
    }
}

/// What a receive returns: the whole message's length with `MSG_TRUNC`
/// on a message-based socket, else the bytes copied.
fn received_length(socket: &UnixSocket, received: &Received, receive_flags: u64) -> i64 {
    let wants_whole = receive_flags & MSG_TRUNC != 0 && socket.kind() != PairKind::Stream;
    (if wants_whole {
        received.whole
    } else {
        received.count
    }) as i64
}

/// `recvfrom(fd, buf, len, flags, src_addr, addrlen)` (and `recv`).
pub fn recvfrom(
    target: &Target<'_>,
    buffer: u64,
    length: u64,
    receive_flags: u64,
    address: u64,
    length_at: u64,
) -> Result<i64, Errno> {
    let length = usize::try_from(length).map_err(|_| Errno::EINVAL)?;
    let (data, received, from) = receive(target, length, receive_flags)?;
    user::write(buffer, &data[..received.count])?;
    if address != 0 {
        write_sender(from.as_ref(), address, length_at)?;
    }
    Ok(received_length(target.socket, &received, receive_flags))
}

/// `recvmsg(fd, msg, flags)`: one receive scattered over the vectors,
/// the sender's name, and the control messages (credentials with
/// `SO_PASSCRED`, then passed descriptors, installed as new ones:
/// `MSG_CTRUNC` for what does not fit, and those descriptors close).
pub fn recvmsg(
    process: &LinuxProcess,
    target: &Target<'_>,
    message: u64,
    receive_flags: u64,
) -> Result<i64, Errno> {
    let header = read_message_header(message)?;
    let total = vectors_length(header.vectors, header.vector_count)?;
    let (data, received, from) = receive(target, total, receive_flags)?;
    scatter(header.vectors, header.vector_count, &data[..received.count])?;
    if header.name != 0 {
        write_sender(
            from.as_ref(),
            header.name,
            message + MessageHeader::NAME_LENGTH_OFFSET,
        )?;
    } else {
        user::write(
            message + MessageHeader::NAME_LENGTH_OFFSET,
            &0u32.to_le_bytes(),
        )?;
    }
    let mut control = ControlWriter {
        at: header.control,
        room: usize::try_from(header.control_length).unwrap_or(usize::MAX),
        used: 0,
        is_truncated: false,
    };
    if target.socket.passes_credentials() {
        let sender = received.sender.unwrap_or(PeerCredentials::NOBODY);
        control.put(SCM_CREDENTIALS, &sender.to_bytes())?;
    }
    let length = received_length(target.socket, &received, receive_flags);
    let is_cut = received.whole > received.count && target.socket.kind() != PairKind::Stream;
    if !received.rights.is_empty() {
        let close_on_exec = receive_flags & MSG_CMSG_CLOEXEC != 0;
        control.put_rights(process, received.rights, close_on_exec)?;
    }
    user::write(
        message + MessageHeader::CONTROL_LENGTH_OFFSET,
        &(control.used as u64).to_le_bytes(),
    )?;
    let mut message_flags = 0;
    if is_cut {
        message_flags |= MSG_TRUNC;
    }
    if control.is_truncated {
        message_flags |= MSG_CTRUNC;
    }
    user::write(
        message + MessageHeader::FLAGS_OFFSET,
        &(message_flags as u32).to_le_bytes(),
    )?;
    Ok(length)
}

/// Fills a `recvmsg` control buffer with messages, as Linux's
/// `put_cmsg` and `scm_detach_fds` do.
struct ControlWriter {
    /// Where the next message goes.
    at: u64,
    /// Bytes left.
    room: usize,
    /// Bytes used (each message's aligned length, cut to the buffer).
    used: usize,
    /// Whether something did not fit (`MSG_CTRUNC`).
    is_truncated: bool,
}

impl ControlWriter {
    /// Puts one message of `kind` at level `SOL_SOCKET`, or marks the
    /// buffer truncated if it does not fit whole.
    fn put(&mut self, kind: u32, payload: &[u8]) -> Result<(), Errno> {
        let length = CMSGHDR_BYTES + payload.len();
        if self.room < length {
            self.is_truncated = true;
            return Ok(());
        }
        let mut bytes = Vec::with_capacity(length);
        bytes.extend_from_slice(&(length as u64).to_le_bytes());
        bytes.extend_from_slice(&(SOL_SOCKET as u32).to_le_bytes());
        bytes.extend_from_slice(&kind.to_le_bytes());
        bytes.extend_from_slice(payload);
        user::write(self.at, &bytes)?;
        let space = cmsg_align(length).min(self.room);
        self.at += space as u64;
        self.room -= space;
        self.used += space;
        Ok(())
    }

    /// Installs as many of `rights` as fit as new descriptors and puts
    /// their numbers in an `SCM_RIGHTS` message; the rest close.
    fn put_rights(
        &mut self,
        process: &LinuxProcess,
        rights: Vec<Arc<OpenFile>>,
        close_on_exec: bool,
    ) -> Result<(), Errno> {
        let fitting = self.room.saturating_sub(CMSGHDR_BYTES) / FD_BYTES;
        if fitting < rights.len() {
            self.is_truncated = true;
        }
        let mut fds = Vec::new();
        for file in rights.into_iter().take(fitting) {
            match process.fds.install(file, 0, close_on_exec) {
                Ok(fd) => fds.extend_from_slice(&fd.to_le_bytes()),
                Err(_) => {
                    self.is_truncated = true;
                    break;
                }
            }
        }
        if fds.is_empty() {
            return Ok(());
        }
        self.put(SCM_RIGHTS, &fds)
    }
}
