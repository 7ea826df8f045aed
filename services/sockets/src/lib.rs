//! Internet sockets (UDP and TCP over IPv4) for the Linux personality.
//!
//! A [`Stack`] is smoltcp's interface and socket set over the loopback
//! device (127.0.0.1/8); a [`Socket`] is what a Linux socket descriptor
//! holds: a UDP socket, or a TCP socket that is fresh, listening (with
//! its backlog of smoltcp listeners) or connected. smoltcp's TCP engine
//! is used as SPIN used the OSF/1 one: a trusted module that the
//! personality drives.
//!
//! Every operation here is non-blocking: it moves the stack forward
//! ([`Stack::poll`]: packets through the loopback device, timers), tries,
//! and says [`SocketError::WouldBlock`] when it would have to wait. The
//! personality waits (and honours `O_NONBLOCK`, signals and timeouts)
//! around these calls, as it does for pipes.
//!
//! Addresses are checked as Linux checks them: a socket binds to 0.0.0.0,
//! an address of the loopback network or the interface's, ports below
//! 1024 are everyone's (every process is root), a port in use is
//! `EADDRINUSE`, and a destination off the loopback network is
//! unreachable until a network interface is attached
//! ([`Stack::attach_interface`]; the protocol graph then carries its
//! packets, see `services/net`).
#![no_std]

extern crate alloc;

mod checksum;
mod coalesce;
mod device;
mod socket;
mod stack;

pub use device::Output;
pub use socket::{Kind, Readiness, Shutdown, Socket};
pub use stack::{set_change_hook, Stack};

/// Why a socket operation did not happen (the personality gives each its
/// errno).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SocketError {
    /// It would have to wait (`EAGAIN`, or wait if blocking).
    WouldBlock,
    /// A connection is being made (`EINPROGRESS` for a non-blocking
    /// `connect`; `EALREADY` when asked again).
    InProgress,
    /// The port is taken (`EADDRINUSE`).
    AddressInUse,
    /// Not an address of this machine (`EADDRNOTAVAIL`).
    AddressNotAvailable,
    /// No route to it (`ENETUNREACH`).
    Unreachable,
    /// Nobody listens there (`ECONNREFUSED`).
    Refused,
    /// The connection was reset (`ECONNRESET`).
    Reset,
    /// Already bound, or connected (`EINVAL` / `EISCONN`).
    AlreadyBound,
    /// Already connected (`EISCONN`).
    AlreadyConnected,
    /// Not connected (`ENOTCONN`).
    NotConnected,
    /// Not a listening socket (`EINVAL` for `accept`).
    NotListening,
    /// The operation does not apply to this kind of socket
    /// (`EOPNOTSUPP`).
    NotSupported,
    /// The other end is gone, or sending was shut down (`EPIPE`).
    BrokenPipe,
    /// A datagram too large for the socket's buffer (`EMSGSIZE`).
    MessageTooLong,
    /// No memory for the socket's buffers (`ENOMEM`).
    NoMemory,
    /// No destination for a datagram (`EDESTADDRREQ`).
    NoDestination,
}

impl core::fmt::Display for SocketError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            SocketError::WouldBlock => "it would have to wait",
            SocketError::InProgress => "a connection is being made",
            SocketError::AddressInUse => "the address is in use",
            SocketError::AddressNotAvailable => "not an address of this machine",
            SocketError::Unreachable => "the network is unreachable",
            SocketError::Refused => "the connection was refused",
            SocketError::Reset => "the connection was reset",
            SocketError::AlreadyBound => "the socket is bound already",
            SocketError::AlreadyConnected => "the socket is connected already",
            SocketError::NotConnected => "the socket is not connected",
            SocketError::NotListening => "the socket is not listening",
            SocketError::NotSupported => "not supported on this kind of socket",
            SocketError::BrokenPipe => "the other end is gone",
            SocketError::MessageTooLong => "the datagram is too long",
            SocketError::NoMemory => "no memory for the socket",
            SocketError::NoDestination => "the datagram has no destination",
        })
    }
}

#[cfg(test)]
mod tests;
