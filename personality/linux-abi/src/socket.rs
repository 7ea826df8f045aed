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
