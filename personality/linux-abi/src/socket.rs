//! Socket addresses: `struct sockaddr_in`, and the address family and
//! socket type numbers (`linux/socket.h`, `linux/in.h`).

use crate::bytes::{get, put};

/// `AF_UNIX`: local sockets (also `PF_UNIX`, the protocol `socket`
/// takes with it).
pub const AF_UNIX: u16 = 1;
/// `AF_INET`: IPv4.
pub const AF_INET: u16 = 2;
/// One past the highest address family (`NPROTO`): a family outside
/// `0..AF_MAX` is `EAFNOSUPPORT` before the type is looked at.
pub const AF_MAX: u32 = 46;

/// `SOCK_STREAM`: a byte stream.
pub const SOCK_STREAM: u64 = 1;
/// `SOCK_DGRAM`: datagrams.
pub const SOCK_DGRAM: u64 = 2;
/// `SOCK_RAW`: raw packets (an `AF_UNIX` socket takes it as
/// `SOCK_DGRAM`).
pub const SOCK_RAW: u64 = 3;
/// `SOCK_SEQPACKET`: a connection that keeps message boundaries.
pub const SOCK_SEQPACKET: u64 = 5;
/// One past the highest socket type (`SOCK_MAX`): a type at or above it
/// is `EINVAL`.
pub const SOCK_MAX: u64 = 10;
/// The bits of `socket`'s `type` argument that say the type.
pub const SOCK_TYPE_MASK: u64 = 0xf;
/// `SOCK_NONBLOCK`: the new descriptors are non-blocking.
pub const SOCK_NONBLOCK: u64 = 0o4000;
/// `SOCK_CLOEXEC`: the new descriptors are closed on `execve`.
pub const SOCK_CLOEXEC: u64 = 0o2000000;
/// `IPPROTO_TCP`.
pub const IPPROTO_TCP: u64 = 6;
/// `IPPROTO_UDP`.
pub const IPPROTO_UDP: u64 = 17;

/// `struct sockaddr_in`: an IPv4 address and port (16 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SockaddrIn {
    /// `sin_port`, as a number (it is big-endian in the record).
    pub port: u16,
    /// `sin_addr`: the address's four bytes, in network order.
    pub address: [u8; 4],
}

impl SockaddrIn {
    /// Bytes of a `struct sockaddr_in`.
    pub const BYTES: usize = 16;

    /// The record as user space reads it: family@0 (`AF_INET`, native
    /// order), port@2 and address@4 in network order, 8 bytes of zero.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        put(&mut bytes, 0, AF_INET.to_le_bytes());
        put(&mut bytes, 2, self.port.to_be_bytes());
        put(&mut bytes, 4, self.address);
        bytes
    }

    /// The address user space wrote; `None` if its family is not
    /// `AF_INET`.
    pub fn from_bytes(bytes: &[u8; Self::BYTES]) -> Option<SockaddrIn> {
        if u16::from_le_bytes(get(bytes, 0)) != AF_INET {
            return None;
        }
        Some(SockaddrIn {
            port: u16::from_be_bytes(get(bytes, 2)),
            address: get(bytes, 4),
        })
    }
}

/// `SOMAXCONN`: the most connections a listener queues (`listen`'s
/// backlog is cut to it, and a negative one means it).
pub const SOMAXCONN: u64 = 4096;

/// `offsetof(struct sockaddr_un, sun_path)`: the family's two bytes,
/// all an unnamed `AF_UNIX` address has.
pub const SUN_PATH_OFFSET: usize = 2;
/// `sizeof(struct sockaddr_un)`: the family and 108 bytes of path.
pub const SOCKADDR_UN_BYTES: usize = 110;
/// `AF_UNSPEC`: `connect` to it dissolves a datagram socket's default
/// peer.
pub const AF_UNSPEC: u16 = 0;

/// `send`/`recv` flags (`linux/socket.h`): out-of-band data.
pub const MSG_OOB: u64 = 0x1;
/// Look at what is queued without taking it.
pub const MSG_PEEK: u64 = 0x2;
/// `recvmsg`'s `msg_flags`: control data did not fit.
pub const MSG_CTRUNC: u64 = 0x8;
/// The datagram was longer than the buffer (and `recv` asks for its
/// whole length).
pub const MSG_TRUNC: u64 = 0x20;
/// Do not block for this call alone.
pub const MSG_DONTWAIT: u64 = 0x40;
/// End of record (accepted, meaningless for `AF_UNIX`).
pub const MSG_EOR: u64 = 0x80;
/// Wait until the whole buffer is filled (streams).
pub const MSG_WAITALL: u64 = 0x100;
/// No `SIGPIPE` for a send to a closed peer.
pub const MSG_NOSIGNAL: u64 = 0x4000;
/// `recvmmsg`: block for the first message only.
pub const MSG_WAITFORONE: u64 = 0x10000;
/// Descriptors received with `SCM_RIGHTS` are close-on-exec.
pub const MSG_CMSG_CLOEXEC: u64 = 0x4000_0000;

/// `shutdown`'s `how`: no more receiving.
pub const SHUT_RD: u64 = 0;
/// No more sending.
pub const SHUT_WR: u64 = 1;
/// Neither.
pub const SHUT_RDWR: u64 = 2;

/// `getsockopt`/`setsockopt` level of the socket itself (also the
/// control-message level of `SCM_RIGHTS` and `SCM_CREDENTIALS`).
pub const SOL_SOCKET: u64 = 1;
/// `SO_REUSEADDR`.
pub const SO_REUSEADDR: u64 = 2;
/// `SO_TYPE`: the socket's type.
pub const SO_TYPE: u64 = 3;
/// `SO_ERROR`: the pending error, taken.
pub const SO_ERROR: u64 = 4;
/// `SO_BROADCAST`.
pub const SO_BROADCAST: u64 = 6;
/// `SO_SNDBUF`: the send buffer's bytes.
pub const SO_SNDBUF: u64 = 7;
/// `SO_RCVBUF`: the receive buffer's bytes.
pub const SO_RCVBUF: u64 = 8;
/// `SO_KEEPALIVE`.
pub const SO_KEEPALIVE: u64 = 9;
/// `SO_LINGER`.
pub const SO_LINGER: u64 = 13;
/// `SO_REUSEPORT`.
pub const SO_REUSEPORT: u64 = 15;
/// `SO_PASSCRED`: receive the sender's credentials.
pub const SO_PASSCRED: u64 = 16;
/// `SO_PEERCRED`: the peer's `struct ucred`.
pub const SO_PEERCRED: u64 = 17;
/// `SO_RCVTIMEO`.
pub const SO_RCVTIMEO: u64 = 20;
/// `SO_SNDTIMEO`.
pub const SO_SNDTIMEO: u64 = 21;
/// `SO_ACCEPTCONN`: whether the socket listens.
pub const SO_ACCEPTCONN: u64 = 30;
/// `SO_SNDBUFFORCE`: `SO_SNDBUF` past the limit (privileged).
pub const SO_SNDBUFFORCE: u64 = 32;
/// `SO_RCVBUFFORCE`: `SO_RCVBUF` past the limit (privileged).
pub const SO_RCVBUFFORCE: u64 = 33;
/// `SO_PROTOCOL`: the socket's protocol.
pub const SO_PROTOCOL: u64 = 38;
/// `SO_DOMAIN`: the socket's family.
pub const SO_DOMAIN: u64 = 39;
/// `TCP_NODELAY` (level `IPPROTO_TCP`).
pub const TCP_NODELAY: u64 = 1;

/// Control message: descriptors passed along.
pub const SCM_RIGHTS: u32 = 1;
/// Control message: the sender's `struct ucred`.
pub const SCM_CREDENTIALS: u32 = 2;
/// `sizeof(struct cmsghdr)`: length (8), level (4), type (4).
pub const CMSGHDR_BYTES: usize = 16;
/// `sizeof(struct ucred)`: pid, uid, gid (4 bytes each).
pub const UCRED_BYTES: usize = 12;
/// `SCM_MAX_FD`: the most descriptors one `SCM_RIGHTS` message carries.
pub const SCM_MAX_FD: usize = 253;

/// `struct msghdr` (56 bytes): where `sendmsg`/`recvmsg` find the
/// name, the vectors and the control data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MessageHeader {
    /// `msg_name`: the address buffer (0 for none).
    pub name: u64,
    /// `msg_namelen` (an `int`).
    pub name_length: u32,
    /// `msg_iov`: the `struct iovec` array.
    pub vectors: u64,
    /// `msg_iovlen`.
    pub vector_count: u64,
    /// `msg_control`: the control-message buffer.
    pub control: u64,
    /// `msg_controllen`.
    pub control_length: u64,
    /// `msg_flags` (an `int`; only `recvmsg` writes it).
    pub flags: u32,
}

impl MessageHeader {
    /// Bytes of a `struct msghdr`.
    pub const BYTES: usize = 56;
    /// Offset of `msg_namelen`, which `recvmsg` writes back.
    pub const NAME_LENGTH_OFFSET: u64 = 8;
    /// Offset of `msg_controllen`, which `recvmsg` writes back.
    pub const CONTROL_LENGTH_OFFSET: u64 = 40;
    /// Offset of `msg_flags`, which `recvmsg` writes back.
    pub const FLAGS_OFFSET: u64 = 48;

    /// The header user space wrote.
    pub fn from_bytes(bytes: &[u8; Self::BYTES]) -> MessageHeader {
        MessageHeader {
            name: u64::from_le_bytes(get(bytes, 0)),
            name_length: u32::from_le_bytes(get(bytes, 8)),
            vectors: u64::from_le_bytes(get(bytes, 16)),
            vector_count: u64::from_le_bytes(get(bytes, 24)),
            control: u64::from_le_bytes(get(bytes, 32)),
            control_length: u64::from_le_bytes(get(bytes, 40)),
            flags: u32::from_le_bytes(get(bytes, 48)),
        }
    }
}

/// `CMSG_ALIGN(length)`: control messages start on 8-byte boundaries.
pub const fn cmsg_align(length: usize) -> usize {
    (length + 7) & !7
}
