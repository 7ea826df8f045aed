//! A socket: what a Linux socket descriptor holds.

use alloc::{sync::Arc, vec::Vec};
use core::net::{Ipv4Addr, SocketAddrV4};

use smoltcp::{
    iface::SocketHandle,
    socket::{tcp, udp},
    time::Duration,
    wire::{IpAddress, IpEndpoint, IpListenEndpoint, Ipv4Address},
};
use spin::Mutex;

use crate::{
    stack::{Inner, Protocol},
    SocketError, Stack,
};

/// Largest UDP payload over IPv4 (65,535 less the IP and UDP headers).
const MAX_DATAGRAM: usize = 65_507;
/// How long a connection over the network interface may hold back an
/// acknowledgement of a lone segment, for an answer to carry it (every
/// second full-sized segment is acknowledged at once all the same). Short:
/// a bulk sender's first segment waits for it (smoltcp's default of 10 ms
/// was a tenth of an 8 MiB transfer), and an answer that comes at all
/// comes within it. On loopback acknowledgements go at once: there a
/// delay would only add its length.
const INTERFACE_ACK_DELAY: Duration = Duration::from_millis(1);
/// Room in a stream's receive buffer below which a read tells the peer
/// of the room it made at once (a window update); above it, the next
/// acknowledgement does. Half the largest window a peer without window
/// scaling can be offered: it never waits on a window smaller than this
/// for want of an update.
const WINDOW_UPDATE_ROOM: usize = 32 * 1024;
/// Largest UDP payload in one Ethernet frame (1,500 less 28).
const MAX_INTERFACE_DATAGRAM: usize = 1_472;
/// Most connections a listener keeps waiting (`SOMAXCONN`, lowered: each
/// waiting listener holds its buffers).
const MAX_BACKLOG: usize = 16;

/// The kind of socket (`SOCK_DGRAM` or `SOCK_STREAM`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// UDP.
    Datagram,
    /// TCP.
    Stream,
}

/// Which directions `shutdown` ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shutdown {
    /// Receiving (`SHUT_RD`).
    Read,
    /// Sending (`SHUT_WR`): TCP sends its FIN.
    Write,
    /// Both (`SHUT_RDWR`).
    Both,
}

/// What a socket can do now without waiting (`poll`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Readiness {
    /// A receive (or `accept`) would not wait (`POLLIN`).
    pub readable: bool,
    /// A send would not wait (`POLLOUT`).
    pub writable: bool,
    /// The connection is over both ways (`POLLHUP`).
    pub hung_up: bool,
}

/// A TCP socket's state, as the descriptor sees it.
enum Tcp {
    /// Made, perhaps bound (its port taken), neither listening nor
    /// connected.
    Fresh { local: Option<SocketAddrV4> },
    /// Listening on `local`: smoltcp listeners, each taking one
    /// connection; an accepted one is replaced by a fresh listener.
    Listening {
        local: SocketAddrV4,
        backlog: Vec<SocketHandle>,
    },
    /// Connecting or connected.
    Connected {
        handle: SocketHandle,
        /// Whether this socket took its port (a connection `accept`
        /// returned shares its listener's).
        owns_port: bool,
        /// `shutdown(SHUT_RD)`: receives end.
        read_shut: bool,
        /// `shutdown(SHUT_WR)`: sends fail.
        write_shut: bool,
    },
}

enum State {
    Udp {
        handle: SocketHandle,
        local: Option<SocketAddrV4>,
        peer: Option<SocketAddrV4>,
    },
    Tcp(Tcp),
}

/// A UDP or TCP socket over a [`Stack`]. Dropping it closes it (a TCP
/// connection says goodbye in the background).
pub struct Socket {
    stack: Arc<Stack>,
    state: Mutex<State>,
    /// An error to report once (`SO_ERROR`): a connection refused.
    error: Mutex<Option<SocketError>>,
}

fn endpoint(address: SocketAddrV4) -> IpEndpoint {
    IpEndpoint::new(IpAddress::Ipv4(to_smoltcp(*address.ip())), address.port())
}

fn to_smoltcp(address: Ipv4Addr) -> Ipv4Address {
    // smoltcp's IPv4 address is core's.
    address
}

fn from_endpoint(endpoint: IpEndpoint) -> SocketAddrV4 {
    let IpAddress::Ipv4(address) = endpoint.addr;
    SocketAddrV4::new(address, endpoint.port)
}

fn listen_endpoint(address: SocketAddrV4) -> IpListenEndpoint {
    IpListenEndpoint {
        addr: (!address.ip().is_unspecified()).then(|| IpAddress::Ipv4(to_smoltcp(*address.ip()))),
        port: address.port(),
    }
}

/// The address a socket bound to "any" shows once it talks: loopback's.
const LOOPBACK: Ipv4Addr = Ipv4Addr::LOCALHOST;

impl Socket {
    /// A new socket of `kind` on `stack`, neither bound nor connected.
    pub fn new(stack: Arc<Stack>, kind: Kind) -> Socket {
        let state = match kind {
            Kind::Datagram => State::Udp {
                handle: stack.with(Inner::new_udp),
                local: None,
                peer: None,
            },
            Kind::Stream => State::Tcp(Tcp::Fresh { local: None }),
        };
        Socket {
            stack,
            state: Mutex::new(state),
            error: Mutex::new(None),
        }
    }

    /// Its kind.
    pub fn kind(&self) -> Kind {
        match *self.state.lock() {
            State::Udp { .. } => Kind::Datagram,
            State::Tcp(_) => Kind::Stream,
        }
    }

    /// `bind(address)`: a port of 0 takes a free one.
    pub fn bind(&self, address: SocketAddrV4) -> Result<(), SocketError> {
        if !self.stack.binds(*address.ip()) {
            return Err(SocketError::AddressNotAvailable);
        }
        let mut state = self.state.lock();
        self.stack.with(|inner| match &mut *state {
            State::Udp { handle, local, .. } => {
                if local.is_some() {
                    return Err(SocketError::AlreadyBound);
                }
                let port = inner.take_port(Protocol::Udp, address.port())?;
                let bound = SocketAddrV4::new(*address.ip(), port);
                if inner
                    .sockets
                    .get_mut::<udp::Socket>(*handle)
                    .bind(listen_endpoint(bound))
                    .is_err()
                {
                    inner.release_port(Protocol::Udp, port);
                    return Err(SocketError::AddressNotAvailable);
                }
                *local = Some(bound);
                Ok(())
            }
            State::Tcp(Tcp::Fresh { local }) if local.is_none() => {
                let port = inner.take_port(Protocol::Tcp, address.port())?;
                *local = Some(SocketAddrV4::new(*address.ip(), port));
                Ok(())
            }
            State::Tcp(_) => Err(SocketError::AlreadyBound),
        })
    }

    /// `connect(address)`. UDP: the peer datagrams go to by default, and
    /// the only one they are taken from. TCP: starts the connection and
    /// says [`SocketError::InProgress`]; [`Socket::connection`] tells how
    /// it went.
    pub fn connect(&self, address: SocketAddrV4) -> Result<(), SocketError> {
        // Linux takes 0.0.0.0 as this machine.
        let address = if address.ip().is_unspecified() {
            SocketAddrV4::new(LOOPBACK, address.port())
        } else {
            address
        };
        if !self.stack.reaches(address) {
            return Err(if address.port() == 0 {
                SocketError::Refused
            } else {
                SocketError::Unreachable
            });
        }
        let mut state = self.state.lock();
        self.stack.with(|inner| match &mut *state {
            State::Udp {
                handle,
                local,
                peer,
            } => {
                if local.is_none() {
                    let port = inner.take_port(Protocol::Udp, 0)?;
                    let bound = SocketAddrV4::new(self.stack.source_for(*address.ip()), port);
                    let socket = inner.sockets.get_mut::<udp::Socket>(*handle);
                    if socket.bind(listen_endpoint(bound)).is_err() {
                        inner.release_port(Protocol::Udp, port);
                        return Err(SocketError::AddressNotAvailable);
                    }
                    *local = Some(bound);
                }
                *peer = Some(address);
                Ok(())
            }
            State::Tcp(Tcp::Fresh { local }) => {
                let bound = match *local {
                    Some(bound) => bound,
                    None => SocketAddrV4::new(
                        self.stack.source_for(*address.ip()),
                        inner.take_port(Protocol::Tcp, 0)?,
                    ),
                };
                let handle = inner.new_tcp();
                if !address.ip().is_loopback() {
                    inner
                        .sockets
                        .get_mut::<tcp::Socket>(handle)
                        .set_ack_delay(Some(INTERFACE_ACK_DELAY));
                }
                let (sockets, iface) = (&mut inner.sockets, &mut inner.iface);
                let started = sockets.get_mut::<tcp::Socket>(handle).connect(
                    iface.context(),
                    endpoint(address),
                    listen_endpoint(bound),
                );
                if started.is_err() {
                    inner.remove(handle);
                    if local.is_none() {
                        inner.release_port(Protocol::Tcp, bound.port());
                    }
                    return Err(SocketError::Unreachable);
                }
                *state = State::Tcp(Tcp::Connected {
                    handle,
                    owns_port: true,
                    read_shut: false,
                    write_shut: false,
                });
                Err(SocketError::InProgress)
            }
            State::Tcp(Tcp::Connected { handle, .. }) => {
                match inner.sockets.get::<tcp::Socket>(*handle).state() {
                    tcp::State::SynSent | tcp::State::SynReceived => Err(SocketError::InProgress),
                    _ => Err(SocketError::AlreadyConnected),
                }
            }
            State::Tcp(Tcp::Listening { .. }) => Err(SocketError::AlreadyConnected),
        })
    }

    /// How a TCP `connect` is going: done (`Ok`), still under way
    /// ([`SocketError::WouldBlock`]), or failed (refused, kept for
    /// `SO_ERROR` too).
    pub fn connection(&self) -> Result<(), SocketError> {
        let state = self.state.lock();
        let State::Tcp(Tcp::Connected { handle, .. }) = &*state else {
            return Err(SocketError::NotConnected);
        };
        let outcome =
            self.stack.with(
                |inner| match inner.sockets.get::<tcp::Socket>(*handle).state() {
                    tcp::State::SynSent | tcp::State::SynReceived => Err(SocketError::WouldBlock),
                    tcp::State::Closed => Err(SocketError::Refused),
                    _ => Ok(()),
                },
            );
        if outcome == Err(SocketError::Refused) {
            *self.error.lock() = Some(SocketError::Refused);
        }
        outcome
    }

    /// The error to report once (`SO_ERROR`), taken.
    pub fn take_error(&self) -> Option<SocketError> {
        self.error.lock().take()
    }

    /// `listen(backlog)` on a TCP socket (bound to a free port first if it
    /// is not bound).
    pub fn listen(&self, backlog: usize) -> Result<(), SocketError> {
        let backlog = backlog.clamp(1, MAX_BACKLOG);
        let mut state = self.state.lock();
        self.stack.with(|inner| {
            let local = match &mut *state {
                State::Udp { .. } => return Err(SocketError::NotSupported),
                State::Tcp(Tcp::Connected { .. }) => return Err(SocketError::AlreadyConnected),
                State::Tcp(Tcp::Listening { .. }) => return Ok(()),
                State::Tcp(Tcp::Fresh { local }) => match *local {
                    Some(local) => local,
                    None => {
                        SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, inner.take_port(Protocol::Tcp, 0)?)
                    }
                },
            };
            let mut listeners = Vec::new();
            for _ in 0..backlog {
                listeners.push(new_listener(inner, local)?);
            }
            *state = State::Tcp(Tcp::Listening {
                local,
                backlog: listeners,
            });
            Ok(())
        })
    }

    /// `accept`: a connection that has arrived, as a socket of its own,
    /// and where it comes from; [`SocketError::WouldBlock`] if none has.
    pub fn accept(&self) -> Result<(Socket, SocketAddrV4), SocketError> {
        let mut state = self.state.lock();
        let State::Tcp(Tcp::Listening { local, backlog }) = &mut *state else {
            return Err(SocketError::NotListening);
        };
        let local = *local;
        self.stack.with(|inner| {
            let arrived = backlog.iter().position(|&handle| {
                let socket = inner.sockets.get::<tcp::Socket>(handle);
                !matches!(socket.state(), tcp::State::Listen | tcp::State::SynReceived)
            });
            let Some(index) = arrived else {
                return Err(SocketError::WouldBlock);
            };
            let replacement = new_listener(inner, local)?;
            let handle = core::mem::replace(&mut backlog[index], replacement);
            let peer = inner
                .sockets
                .get::<tcp::Socket>(handle)
                .remote_endpoint()
                .map(from_endpoint)
                .unwrap_or(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0));
            if !peer.ip().is_loopback() {
                inner
                    .sockets
                    .get_mut::<tcp::Socket>(handle)
                    .set_ack_delay(Some(INTERFACE_ACK_DELAY));
            }
            let accepted = Socket {
                stack: self.stack.clone(),
                state: Mutex::new(State::Tcp(Tcp::Connected {
                    handle,
                    owns_port: false,
                    read_shut: false,
                    write_shut: false,
                })),
                error: Mutex::new(None),
            };
            Ok((accepted, peer))
        })
    }

    /// Sends `data` (to `to`, for a datagram, else to the peer): how much
    /// went; [`SocketError::WouldBlock`] when nothing could go now.
    pub fn send(&self, data: &[u8], to: Option<SocketAddrV4>) -> Result<usize, SocketError> {
        let mut state = self.state.lock();
        match &mut *state {
            State::Udp {
                handle,
                local,
                peer,
            } => {
                let destination = to.or(*peer).ok_or(SocketError::NoDestination)?;
                let destination = if destination.ip().is_unspecified() {
                    SocketAddrV4::new(LOOPBACK, destination.port())
                } else {
                    destination
                };
                if !self.stack.reaches(destination) {
                    return Err(SocketError::Unreachable);
                }
                // Off loopback a datagram must fit one frame (Spindle does
                // not fragment).
                let limit = if destination.ip().is_loopback() {
                    MAX_DATAGRAM
                } else {
                    MAX_INTERFACE_DATAGRAM
                };
                if data.len() > limit {
                    return Err(SocketError::MessageTooLong);
                }
                self.stack.with(|inner| {
                    if local.is_none() {
                        let port = inner.take_port(Protocol::Udp, 0)?;
                        let bound = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port);
                        let socket = inner.sockets.get_mut::<udp::Socket>(*handle);
                        if socket.bind(listen_endpoint(bound)).is_err() {
                            inner.release_port(Protocol::Udp, port);
                            return Err(SocketError::AddressNotAvailable);
                        }
                        *local = Some(bound);
                    }
                    let socket = inner.sockets.get_mut::<udp::Socket>(*handle);
                    // A socket bound to any address sends from the one
                    // facing the destination (smoltcp would take its first).
                    let source = self.stack.source_for(*destination.ip());
                    let metadata = udp::UdpMetadata {
                        endpoint: endpoint(destination),
                        local_address: Some(IpAddress::Ipv4(source)),
                        meta: Default::default(),
                    };
                    match socket.send_slice(data, metadata) {
                        Ok(()) => Ok(data.len()),
                        Err(udp::SendError::BufferFull) => Err(SocketError::WouldBlock),
                        Err(udp::SendError::Unaddressable) => Err(SocketError::Unreachable),
                    }
                })
            }
            State::Tcp(Tcp::Connected {
                handle, write_shut, ..
            }) => {
                if *write_shut {
                    return Err(SocketError::BrokenPipe);
                }
                self.stack.with(|inner| {
                    let socket = inner.sockets.get_mut::<tcp::Socket>(*handle);
                    match socket.state() {
                        tcp::State::SynSent | tcp::State::SynReceived => {
                            return Err(SocketError::WouldBlock)
                        }
                        tcp::State::Closed => return Err(SocketError::BrokenPipe),
                        _ => {}
                    }
                    if !socket.may_send() {
                        return Err(SocketError::BrokenPipe);
                    }
                    match socket.send_slice(data) {
                        Ok(0) if !data.is_empty() => Err(SocketError::WouldBlock),
                        Ok(sent) => Ok(sent),
                        Err(_) => Err(SocketError::BrokenPipe),
                    }
                })
            }
            State::Tcp(_) => Err(SocketError::NotConnected),
        }
    }

    /// Milliseconds until its stack must be moved forward for its
    /// timers (see [`Stack::poll_delay_ms`]): how long a thread waiting
    /// on this socket may block before it must look again.
    pub fn timer_delay_ms(&self) -> Option<u64> {
        self.stack.poll_delay_ms()
    }

    /// Receives into `buffer` (leaving it queued if `peek`): how many
    /// bytes (a datagram longer than `buffer` is cut, as on Linux, and its
    /// whole length is returned second), and where they came from. A
    /// stream at its end gives 0.
    pub fn receive(
        &self,
        buffer: &mut [u8],
        peek: bool,
    ) -> Result<(usize, usize, Option<SocketAddrV4>), SocketError> {
        let mut state = self.state.lock();
        match &mut *state {
            State::Udp { handle, peer, .. } => self.stack.with(|inner| {
                let socket = inner.sockets.get_mut::<udp::Socket>(*handle);
                loop {
                    let (payload, metadata) = if peek {
                        socket
                            .peek()
                            .map(|(payload, metadata)| (payload, *metadata))
                    } else {
                        socket.recv()
                    }
                    .map_err(|_| SocketError::WouldBlock)?;
                    let from = from_endpoint(metadata.endpoint);
                    // A connected socket takes datagrams from its peer only.
                    if peer.is_some_and(|peer| peer != from) {
                        if peek {
                            let _ = socket.recv();
                        }
                        continue;
                    }
                    let count = payload.len().min(buffer.len());
                    buffer[..count].copy_from_slice(&payload[..count]);
                    return Ok((count, payload.len(), Some(from)));
                }
            }),
            State::Tcp(Tcp::Connected {
                handle, read_shut, ..
            }) => {
                if *read_shut {
                    return Ok((0, 0, None));
                }
                self.stack.with_maybe_after(|inner| {
                    let socket = inner.sockets.get_mut::<tcp::Socket>(*handle);
                    let peer = socket.remote_endpoint().map(from_endpoint);
                    if socket.can_recv() {
                        // Room the peer may already send into: while it
                        // is ample, the room this read makes is told with
                        // the next acknowledgement, not a packet of its
                        // own (Linux too updates a window only when it
                        // grew enough).
                        let room = socket.recv_capacity() - socket.recv_queue();
                        let received = if peek {
                            socket.peek_slice(buffer)
                        } else {
                            socket.recv_slice(buffer)
                        };
                        let count = received.unwrap_or(0);
                        return (Ok((count, count, peer)), room < WINDOW_UPDATE_ROOM);
                    }
                    let result = match socket.state() {
                        tcp::State::SynSent | tcp::State::SynReceived => {
                            Err(SocketError::WouldBlock)
                        }
                        _ if buffer.is_empty() => Ok((0, 0, peer)),
                        _ if socket.may_recv() => Err(SocketError::WouldBlock),
                        // The peer's FIN (or our close): the end.
                        _ => Ok((0, 0, peer)),
                    };
                    (result, true)
                })
            }
            State::Tcp(_) => Err(SocketError::NotConnected),
        }
    }

    /// `shutdown(how)`.
    pub fn shutdown(&self, how: Shutdown) -> Result<(), SocketError> {
        let mut state = self.state.lock();
        match &mut *state {
            State::Tcp(Tcp::Connected {
                handle,
                read_shut,
                write_shut,
                ..
            }) => {
                if matches!(how, Shutdown::Read | Shutdown::Both) {
                    *read_shut = true;
                }
                if matches!(how, Shutdown::Write | Shutdown::Both) && !*write_shut {
                    *write_shut = true;
                    self.stack
                        .with(|inner| inner.sockets.get_mut::<tcp::Socket>(*handle).close());
                }
                Ok(())
            }
            State::Udp { peer: Some(_), .. } => Ok(()),
            _ => Err(SocketError::NotConnected),
        }
    }

    /// Its own address (`getsockname`): 0.0.0.0:0 before it is bound.
    pub fn local_address(&self) -> SocketAddrV4 {
        let unbound = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0);
        let state = self.state.lock();
        match &*state {
            State::Udp { local, .. } => local.unwrap_or(unbound),
            State::Tcp(Tcp::Fresh { local }) => local.unwrap_or(unbound),
            State::Tcp(Tcp::Listening { local, .. }) => *local,
            State::Tcp(Tcp::Connected { handle, .. }) => self.stack.with(|inner| {
                inner
                    .sockets
                    .get::<tcp::Socket>(*handle)
                    .local_endpoint()
                    .map_or(unbound, from_endpoint)
            }),
        }
    }

    /// Its peer's address (`getpeername`).
    pub fn peer_address(&self) -> Result<SocketAddrV4, SocketError> {
        let state = self.state.lock();
        match &*state {
            State::Udp { peer, .. } => peer.ok_or(SocketError::NotConnected),
            State::Tcp(Tcp::Connected { handle, .. }) => self.stack.with(|inner| {
                let socket = inner.sockets.get::<tcp::Socket>(*handle);
                match socket.state() {
                    tcp::State::SynSent | tcp::State::Closed => None,
                    _ => socket.remote_endpoint().map(from_endpoint),
                }
                .ok_or(SocketError::NotConnected)
            }),
            State::Tcp(_) => Err(SocketError::NotConnected),
        }
    }

    /// What it can do now.
    pub fn readiness(&self) -> Readiness {
        let state = self.state.lock();
        // A question: nothing to send after it.
        self.stack.with_maybe_after(|inner| {
            (
                match &*state {
                    State::Udp { handle, .. } => {
                        let socket = inner.sockets.get::<udp::Socket>(*handle);
                        Readiness {
                            readable: socket.can_recv(),
                            writable: socket.can_send(),
                            hung_up: false,
                        }
                    }
                    State::Tcp(Tcp::Fresh { .. }) => Readiness {
                        readable: false,
                        writable: true,
                        hung_up: true,
                    },
                    State::Tcp(Tcp::Listening { backlog, .. }) => Readiness {
                        readable: backlog.iter().any(|&handle| {
                            !matches!(
                                inner.sockets.get::<tcp::Socket>(handle).state(),
                                tcp::State::Listen | tcp::State::SynReceived
                            )
                        }),
                        writable: false,
                        hung_up: false,
                    },
                    State::Tcp(Tcp::Connected {
                        handle,
                        read_shut,
                        write_shut,
                        ..
                    }) => {
                        let socket = inner.sockets.get::<tcp::Socket>(*handle);
                        let connecting = matches!(
                            socket.state(),
                            tcp::State::SynSent | tcp::State::SynReceived
                        );
                        let at_end = !connecting && (!socket.may_recv() || *read_shut);
                        let send_over = !connecting && (!socket.may_send() || *write_shut);
                        Readiness {
                            readable: socket.can_recv() || at_end,
                            writable: !connecting && (socket.can_send() || send_over),
                            hung_up: at_end && send_over,
                        }
                    }
                },
                false,
            )
        })
    }

    /// `TCP_NODELAY`: whether small sends go at once (Nagle's algorithm
    /// off).
    pub fn set_no_delay(&self, no_delay: bool) {
        self.with_tcp(|socket| socket.set_nagle_enabled(!no_delay));
    }

    /// `SO_KEEPALIVE`.
    pub fn set_keep_alive(&self, keep_alive: bool) {
        let interval = keep_alive.then(|| Duration::from_secs(75));
        self.with_tcp(|socket| socket.set_keep_alive(interval));
    }

    fn with_tcp(&self, f: impl FnOnce(&mut tcp::Socket<'static>)) {
        let state = self.state.lock();
        if let State::Tcp(Tcp::Connected { handle, .. }) = &*state {
            self.stack
                .with(|inner| f(inner.sockets.get_mut::<tcp::Socket>(*handle)));
        }
    }
}

/// A smoltcp listener on `local`.
fn new_listener(inner: &mut Inner, local: SocketAddrV4) -> Result<SocketHandle, SocketError> {
    let handle = inner.new_tcp();
    if inner
        .sockets
        .get_mut::<tcp::Socket>(handle)
        .listen(listen_endpoint(local))
        .is_err()
    {
        inner.remove(handle);
        return Err(SocketError::AddressNotAvailable);
    }
    Ok(handle)
}

impl Drop for Socket {
    fn drop(&mut self) {
        let state =
            core::mem::replace(self.state.get_mut(), State::Tcp(Tcp::Fresh { local: None }));
        self.stack.with(|inner| match state {
            State::Udp { handle, local, .. } => {
                inner.remove(handle);
                if let Some(local) = local {
                    inner.release_port(Protocol::Udp, local.port());
                }
            }
            State::Tcp(Tcp::Fresh { local }) => {
                if let Some(local) = local {
                    inner.release_port(Protocol::Tcp, local.port());
                }
            }
            State::Tcp(Tcp::Listening { local, backlog }) => {
                for handle in backlog {
                    // A connection that arrived and was never accepted is
                    // reset, as Linux resets it.
                    inner.sockets.get_mut::<tcp::Socket>(handle).abort();
                    inner.close_tcp(handle, None);
                }
                inner.release_port(Protocol::Tcp, local.port());
            }
            State::Tcp(Tcp::Connected {
                handle, owns_port, ..
            }) => {
                let port = inner
                    .sockets
                    .get::<tcp::Socket>(handle)
                    .listen_endpoint()
                    .port;
                inner.close_tcp(handle, owns_port.then_some(port));
            }
        });
    }
}
