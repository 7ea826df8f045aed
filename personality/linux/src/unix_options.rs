//! `getsockopt` and `setsockopt` on `AF_UNIX` descriptors: the options
//! of level `SOL_SOCKET` a local socket has (Linux's `sk_getsockopt` and
//! `sk_setsockopt`); any other level is `EOPNOTSUPP`, as `AF_UNIX` has
//! no options of its own, and an unknown option `ENOPROTOOPT`.

use linux_abi::socket::{
    AF_UNIX, SOCK_DGRAM, SOCK_SEQPACKET, SOCK_STREAM, SOL_SOCKET, SO_ACCEPTCONN, SO_BROADCAST,
    SO_DOMAIN, SO_ERROR, SO_KEEPALIVE, SO_LINGER, SO_PASSCRED, SO_PEERCRED, SO_PROTOCOL, SO_RCVBUF,
    SO_RCVBUFFORCE, SO_RCVTIMEO, SO_REUSEADDR, SO_REUSEPORT, SO_SNDBUF, SO_SNDBUFFORCE,
    SO_SNDTIMEO, SO_TYPE,
};
use vfs::Errno;

use crate::{unix_connection::PairKind, unix_socket::UnixSocket, user};

/// `SO_TYPE`'s answer for `kind`.
fn socket_type(kind: PairKind) -> u64 {
    match kind {
        PairKind::Stream => SOCK_STREAM,
        PairKind::Datagram => SOCK_DGRAM,
        PairKind::SequencedPacket => SOCK_SEQPACKET,
    }
}

/// `getsockopt(fd, level, name, value, length)`: the answer cut to the
/// room the `int` at `length_at` says (`EINVAL` if negative), and the
/// length written back there.
pub fn getsockopt(
    socket: &UnixSocket,
    level: u64,
    name: u64,
    value: u64,
    length_at: u64,
) -> Result<i64, Errno> {
    if level != SOL_SOCKET {
        return Err(Errno::EOPNOTSUPP);
    }
    let mut room = [0u8; 4];
    user::read(length_at, &mut room)?;
    let room = usize::try_from(i32::from_le_bytes(room)).map_err(|_| Errno::EINVAL)?;
    let int = |value: u64| (value as i32).to_le_bytes().to_vec();
    let answer = match name {
        SO_TYPE => int(socket_type(socket.kind())),
        SO_ERROR => int(socket.take_error().map_or(0, |error| error.as_i32() as u64)),
        SO_PEERCRED => socket.peer_credentials().to_bytes().to_vec(),
        SO_SNDBUF => int(socket.buffer_bytes(false) as u64),
        SO_RCVBUF => int(socket.buffer_bytes(true) as u64),
        SO_DOMAIN => int(u64::from(AF_UNIX)),
        SO_PROTOCOL => int(0),
        SO_ACCEPTCONN => int(u64::from(socket.is_listening())),
        SO_PASSCRED => int(u64::from(socket.passes_credentials())),
        SO_REUSEADDR | SO_REUSEPORT | SO_KEEPALIVE | SO_BROADCAST => int(0),
        _ => return Err(Errno::ENOPROTOOPT),
    };
    let count = room.min(answer.len());
    user::write(value, &answer[..count])?;
    user::write(length_at, &(count as u32).to_le_bytes())?;
    Ok(0)
}

/// Reads an `int` option value of `length` bytes at `value` (`EINVAL`
/// if shorter).
fn read_int(value: u64, length: u64) -> Result<i32, Errno> {
    if (length as u32) < 4 {
        return Err(Errno::EINVAL);
    }
    let mut bytes = [0u8; 4];
    user::read(value, &mut bytes)?;
    Ok(i32::from_le_bytes(bytes))
}

/// `setsockopt(fd, level, name, value, length)`: `SO_PASSCRED` and the
/// buffer sizes change the socket; the common flags and timeouts are
/// taken and change nothing a local socket does.
pub fn setsockopt(
    socket: &UnixSocket,
    level: u64,
    name: u64,
    value: u64,
    length: u64,
) -> Result<i64, Errno> {
    if level != SOL_SOCKET {
        return Err(Errno::EOPNOTSUPP);
    }
    match name {
        SO_PASSCRED => socket.set_passes_credentials(read_int(value, length)? != 0),
        SO_SNDBUF | SO_SNDBUFFORCE => socket.set_buffer_bytes(false, read_int(value, length)?),
        SO_RCVBUF | SO_RCVBUFFORCE => socket.set_buffer_bytes(true, read_int(value, length)?),
        SO_REUSEADDR | SO_REUSEPORT | SO_KEEPALIVE | SO_BROADCAST => {
            read_int(value, length)?;
        }
        SO_LINGER | SO_RCVTIMEO | SO_SNDTIMEO => {}
        _ => return Err(Errno::ENOPROTOOPT),
    }
    Ok(0)
}
