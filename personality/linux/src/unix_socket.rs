//! `AF_UNIX` sockets: the [`UnixSocket`] behind every local socket's
//! open file (those `socket` makes and both ends of a `socketpair`), and
//! its states as Linux has them (`net/unix/af_unix.c`):
//!
//! ```text
//!   unconnected ──bind──▶ named ──listen──▶ listening ──accept──▶ (a new, connected socket)
//!        │                  │
//!        └──────connect─────┴──▶ connected (a stream or sequenced-packet pair)
//! ```
//!
//! A name is independent of the state: any socket may be bound once
//! (`EINVAL` after), to a path (a socket node in the file tree, made with
//! the caller's credentials and umask; `EADDRINUSE` if the path exists),
//! to an abstract name, or to an automatic abstract one (`bind` of the
//! family alone); [`crate::unix_names`] maps names to sockets. The open
//! file's device cannot change, so the state lives inside the socket.
//!
//! `connect` of a stream or sequenced-packet socket queues a new socket
//! on the listener, already connected to the caller through a
//! [`crate::unix_connection`] pair; `accept` takes it. A datagram socket
//! made by `socket` has its own receive queue ([`crate::unix_datagram`]),
//! which any sender reaches by name; its `connect` just sets the default
//! peer. `socketpair`'s datagram ends are a pair like the others.
//!
//! Every socket has one wait queue, woken whenever anything changes for
//! it (data, room, a connection queued or taken, a close): its readers,
//! writers, `accept`s, blocked `connect`s to it and `poll`s wait there.

use alloc::{
    collections::VecDeque,
    sync::{Arc, Weak},
    vec::Vec,
};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use linux_abi::socket::SOMAXCONN;
use vfs::{Device, Errno, Inode, PathContext, Readiness, Vfs, MAY_WRITE, S_IFSOCK};

use crate::{
    unix_address::UnixAddress,
    unix_connection::{self, End, PairKind, PeerCredentials, ReceiveOptions, Received},
    unix_datagram::{self, Datagram, Inbox},
    unix_names::{NodeKey, Registry},
    wait::{wait_on, FileWaitQueue},
};

/// The names of a personality's `AF_UNIX` sockets.
pub type UnixNames = Registry<UnixSocket>;

/// The smallest send and receive buffers `SO_SNDBUF`/`SO_RCVBUF` leave
/// (Linux's `SOCK_MIN_SNDBUF` and `SOCK_MIN_RCVBUF`).
const MIN_SEND_BUFFER_BYTES: usize = 4608;
const MIN_RECEIVE_BUFFER_BYTES: usize = 2304;
/// The largest value `SO_SNDBUF`/`SO_RCVBUF` take before doubling
/// (Linux's `net.core.wmem_max` and `rmem_max`).
const MAX_BUFFER_REQUEST_BYTES: usize = 212_992;

/// Who makes a call that names sockets: where paths resolve, with whose
/// permissions, and the caller's credentials (what a peer's
/// `SO_PEERCRED` reports).
pub struct Caller<'a> {
    /// The file tree.
    pub vfs: &'a Vfs,
    /// The caller's view of it (root, directory, ids, umask).
    pub context: PathContext,
    /// The caller's process and effective ids.
    pub credentials: PeerCredentials,
    /// The registry of names.
    pub names: &'a Arc<UnixNames>,
}

/// A socket's name and whether it holds it in the registry (an accepted
/// socket reports its listener's name without holding it).
#[derive(Clone)]
struct Binding {
    address: UnixAddress,
    /// The socket node it bound, if it bound a path.
    node: Option<NodeKey>,
    /// Whether it holds `address` in the registry.
    is_holder: bool,
}

/// A connected socket's side of the connection.
struct Connection {
    end: Arc<End>,
    /// The peer's name when it connected.
    peer_name: UnixAddress,
    /// The peer's credentials when it connected (`SO_PEERCRED`).
    peer: PeerCredentials,
}

/// Where a socket is in its life.
enum State {
    /// Neither listening nor connected (a datagram socket made by
    /// `socket` stays here: its peer is its `default_peer`).
    Unconnected,
    /// `listen`ed: connections wait in `pending` for `accept`, at most
    /// `backlog + 1` of them (Linux's `unix_recvq_full`).
    Listening {
        backlog: usize,
        pending: VecDeque<Arc<UnixSocket>>,
    },
    /// One end of a pair.
    Connected(Connection),
}

/// An `AF_UNIX` socket.
pub struct UnixSocket {
    kind: PairKind,
    /// Its waiters (see the module's doc).
    events: Arc<FileWaitQueue>,
    names: Arc<UnixNames>,
    state: spin::Mutex<State>,
    binding: spin::Mutex<Binding>,
    /// A datagram socket's receive queue (unused by the others).
    inbox: Inbox,
    /// A datagram socket's `connect`ed peer.
    default_peer: spin::Mutex<Option<Weak<UnixSocket>>>,
    /// Its own credentials: whoever made it, or last listened on it.
    credentials: spin::Mutex<PeerCredentials>,
    /// `shutdown` of a socket that is not connected: `[read, write]`.
    is_shut: [AtomicBool; 2],
    /// `SO_PASSCRED`.
    passes_credentials: AtomicBool,
    /// Its last descriptor closed: nothing reaches it any more.
    is_closed: AtomicBool,
    /// `SO_SNDBUF` and `SO_RCVBUF`, as `getsockopt` reports them.
    buffer_bytes: [AtomicUsize; 2],
}

impl UnixSocket {
    /// A new unconnected socket of `kind`, made by `credentials`.
    pub fn new(
        kind: PairKind,
        names: &Arc<UnixNames>,
        credentials: PeerCredentials,
    ) -> Arc<UnixSocket> {
        Self::with_state(
            kind,
            names,
            credentials,
            State::Unconnected,
            Arc::new(FileWaitQueue::new()),
        )
    }

    fn with_state(
        kind: PairKind,
        names: &Arc<UnixNames>,
        credentials: PeerCredentials,
        state: State,
        events: Arc<FileWaitQueue>,
    ) -> Arc<UnixSocket> {
        Arc::new(UnixSocket {
            kind,
            events,
            names: names.clone(),
            state: spin::Mutex::new(state),
            binding: spin::Mutex::new(Binding {
                address: UnixAddress::Unnamed,
                node: None,
                is_holder: false,
            }),
            inbox: Inbox::default(),
            default_peer: spin::Mutex::new(None),
            credentials: spin::Mutex::new(credentials),
            is_shut: [AtomicBool::new(false), AtomicBool::new(false)],
            passes_credentials: AtomicBool::new(false),
            is_closed: AtomicBool::new(false),
            buffer_bytes: [
                AtomicUsize::new(unix_connection::BUFFER_BYTES),
                AtomicUsize::new(unix_connection::BUFFER_BYTES),
            ],
        })
    }

    /// Two sockets of `kind` connected to each other (`socketpair`),
    /// both made by `credentials`.
    pub fn pair(
        kind: PairKind,
        names: &Arc<UnixNames>,
        credentials: PeerCredentials,
    ) -> (Arc<UnixSocket>, Arc<UnixSocket>) {
        let events = [
            Arc::new(FileWaitQueue::new()),
            Arc::new(FileWaitQueue::new()),
        ];
        let (first, second) = unix_connection::connect(kind, events.clone());
        let [first_events, second_events] = events;
        let connected = |end: End| {
            State::Connected(Connection {
                end: Arc::new(end),
                peer_name: UnixAddress::Unnamed,
                peer: credentials,
            })
        };
        (
            Self::with_state(kind, names, credentials, connected(first), first_events),
            Self::with_state(kind, names, credentials, connected(second), second_events),
        )
    }

    /// What it carries.
    pub fn kind(&self) -> PairKind {
        self.kind
    }

    /// Its wait queue.
    pub fn events(&self) -> &FileWaitQueue {
        &self.events
    }

    /// Its name (`getsockname`).
    pub fn name(&self) -> UnixAddress {
        self.binding.lock().address.clone()
    }

    /// Its peer's name (`getpeername`): `ENOTCONN` if it has no peer.
    pub fn peer_name(&self) -> Result<UnixAddress, Errno> {
        if let State::Connected(connection) = &*self.state.lock() {
            return Ok(connection.peer_name.clone());
        }
        let peer = self.default_peer.lock().as_ref().and_then(Weak::upgrade);
        peer.map(|peer| peer.name()).ok_or(Errno::ENOTCONN)
    }

    /// Its peer's credentials (`SO_PEERCRED`): nobody's if it has none.
    pub fn peer_credentials(&self) -> PeerCredentials {
        match &*self.state.lock() {
            State::Connected(connection) => connection.peer,
            _ => PeerCredentials::NOBODY,
        }
    }

    /// Whether it listens (`SO_ACCEPTCONN`).
    pub fn is_listening(&self) -> bool {
        matches!(&*self.state.lock(), State::Listening { .. })
    }

    /// Takes its pending error (`SO_ERROR`).
    pub fn take_error(&self) -> Option<Errno> {
        self.connected_end().and_then(|end| end.take_error())
    }

    /// `SO_PASSCRED`.
    pub fn passes_credentials(&self) -> bool {
        self.passes_credentials.load(Ordering::Relaxed)
    }

    /// Sets `SO_PASSCRED`.
    pub fn set_passes_credentials(&self, passes: bool) {
        self.passes_credentials.store(passes, Ordering::Relaxed);
    }

    /// `SO_SNDBUF` (`receive` false) or `SO_RCVBUF` (`receive` true).
    pub fn buffer_bytes(&self, receive: bool) -> usize {
        self.buffer_bytes[usize::from(receive)].load(Ordering::Relaxed)
    }

    /// Sets `SO_SNDBUF` or `SO_RCVBUF` as Linux does: the request, cut
    /// to the limit, doubled (for the bookkeeping), and at least the
    /// minimum.
    pub fn set_buffer_bytes(&self, receive: bool, requested: i32) {
        let requested = usize::try_from(requested).unwrap_or(0);
        let minimum = if receive {
            MIN_RECEIVE_BUFFER_BYTES
        } else {
            MIN_SEND_BUFFER_BYTES
        };
        let value = (requested.min(MAX_BUFFER_REQUEST_BYTES) * 2).max(minimum);
        self.buffer_bytes[usize::from(receive)].store(value, Ordering::Relaxed);
    }

    fn connected_end(&self) -> Option<Arc<End>> {
        match &*self.state.lock() {
            State::Connected(connection) => Some(connection.end.clone()),
            _ => None,
        }
    }

    /// `bind`: names it `address` (see the module's doc). A path's node
    /// is made first, as Linux does, and removed again if the socket
    /// turns out to be named already.
    pub fn bind(self: &Arc<Self>, caller: &Caller<'_>, address: UnixAddress) -> Result<(), Errno> {
        let node = match &address {
            UnixAddress::Path(path) => {
                let mode = S_IFSOCK | 0o777;
                let node = caller
                    .vfs
                    .mknod(&caller.context, path, mode, 0)
                    .map_err(|error| {
                        if error == Errno::EEXIST {
                            Errno::EADDRINUSE
                        } else {
                            error
                        }
                    })?;
                Some((node.dev(), node.ino()))
            }
            _ => None,
        };
        let mut binding = self.binding.lock();
        if binding.address.is_named() {
            drop(binding);
            if let UnixAddress::Path(path) = &address {
                let _ = caller.vfs.unlink(&caller.context, path);
            }
            return Err(Errno::EINVAL);
        }
        let address = match address {
            UnixAddress::Unnamed => UnixAddress::Abstract(self.names.bind_automatic(self)?),
            UnixAddress::Abstract(name) => {
                self.names.bind_abstract(&name, self)?;
                UnixAddress::Abstract(name)
            }
            UnixAddress::Path(path) => {
                if let Some(node) = node {
                    self.names.bind_node(node, self);
                }
                UnixAddress::Path(path)
            }
        };
        *binding = Binding {
            address,
            node,
            is_holder: true,
        };
        Ok(())
    }

    /// `bind` of the family alone, when a call needs a name and the
    /// socket has none.
    fn autobind(self: &Arc<Self>) -> Result<(), Errno> {
        let mut binding = self.binding.lock();
        if !binding.address.is_named() {
            let name = self.names.bind_automatic(self)?;
            *binding = Binding {
                address: UnixAddress::Abstract(name),
                node: None,
                is_holder: true,
            };
        }
        Ok(())
    }

    /// `listen(backlog)`: `EOPNOTSUPP` for datagrams, `EINVAL` unbound
    /// or connected; listening again changes the backlog. The listener
    /// takes the caller's credentials (what connecting peers see).
    pub fn listen(&self, backlog: u64, caller: PeerCredentials) -> Result<(), Errno> {
        if self.kind == PairKind::Datagram {
            return Err(Errno::EOPNOTSUPP);
        }
        if !self.binding.lock().address.is_named() {
            return Err(Errno::EINVAL);
        }
        // An `int`, compared unsigned: a negative backlog is the most.
        let backlog = u64::from(backlog as u32).min(SOMAXCONN) as usize;
        let mut state = self.state.lock();
        match &mut *state {
            State::Unconnected => {
                *state = State::Listening {
                    backlog,
                    pending: VecDeque::new(),
                }
            }
            State::Listening {
                backlog: current, ..
            } => *current = backlog,
            State::Connected(_) => return Err(Errno::EINVAL),
        }
        drop(state);
        *self.credentials.lock() = caller;
        // Connections waiting for room may fit now.
        self.events.wake_all();
        Ok(())
    }

    /// `connect` of a stream or sequenced-packet socket to `listener`:
    /// queues a new socket connected to this one and returns once it is
    /// queued. `ECONNREFUSED` if it does not listen, `EAGAIN` when its
    /// backlog is full and the caller does not wait, `EISCONN` if this
    /// socket is connected, `EINVAL` if it listens (Linux's order).
    pub fn connect(
        self: &Arc<Self>,
        listener: &Arc<UnixSocket>,
        caller: PeerCredentials,
        nonblocking: bool,
    ) -> Result<(), Errno> {
        if Arc::ptr_eq(self, listener) {
            return Err(if self.is_listening() {
                Errno::EINVAL
            } else {
                Errno::ECONNREFUSED
            });
        }
        if self.passes_credentials() {
            self.autobind()?;
        }
        let attempt = || {
            let mut listener_state = listener.state.lock();
            let State::Listening { backlog, pending } = &mut *listener_state else {
                return Some(Err(Errno::ECONNREFUSED));
            };
            if pending.len() > *backlog {
                return nonblocking.then_some(Err(Errno::EAGAIN));
            }
            let mut state = self.state.lock();
            match &*state {
                State::Unconnected => {}
                State::Connected(_) => return Some(Err(Errno::EISCONN)),
                State::Listening { .. } => return Some(Err(Errno::EINVAL)),
            }
            let accepted_events = Arc::new(FileWaitQueue::new());
            let (mine, theirs) =
                unix_connection::connect(self.kind, [self.events.clone(), accepted_events.clone()]);
            let listener_credentials = *listener.credentials.lock();
            let listener_name = listener.name();
            let accepted = Self::with_state(
                self.kind,
                &self.names,
                listener_credentials,
                State::Connected(Connection {
                    end: Arc::new(theirs),
                    peer_name: self.name(),
                    peer: caller,
                }),
                accepted_events,
            );
            *accepted.binding.lock() = Binding {
                address: listener_name.clone(),
                node: None,
                is_holder: false,
            };
            pending.push_back(accepted);
            *state = State::Connected(Connection {
                end: Arc::new(mine),
                peer_name: listener_name,
                peer: listener_credentials,
            });
            Some(Ok(()))
        };
        let outcome = wait_on(&listener.events, "unix socket connect", None, attempt)?;
        let outcome = outcome.unwrap_or(Err(Errno::ECONNREFUSED));
        if outcome.is_ok() {
            listener.events.wake_all();
        }
        outcome
    }

    /// `connect` of a datagram socket: `peer` becomes where sends without
    /// an address go and the only sender it receives from (`None`:
    /// `AF_UNSPEC`, no default peer). `EPERM` if `peer` has another
    /// default peer itself.
    pub fn connect_datagram(self: &Arc<Self>, peer: Option<Arc<UnixSocket>>) -> Result<(), Errno> {
        if let Some(peer) = &peer {
            if !peer.may_receive_from(self) {
                return Err(Errno::EPERM);
            }
            if self.passes_credentials() {
                self.autobind()?;
            }
        }
        *self.default_peer.lock() = peer.as_ref().map(Arc::downgrade);
        Ok(())
    }

    /// Whether a datagram from `sender` may come in: it has no default
    /// peer, or `sender` is it (Linux's `unix_may_send`).
    fn may_receive_from(&self, sender: &Arc<UnixSocket>) -> bool {
        let peer = self.default_peer.lock().as_ref().and_then(Weak::upgrade);
        peer.is_none_or(|peer| Arc::ptr_eq(&peer, sender))
    }

    /// `accept`: the next queued connection and its peer's name, waiting
    /// for one unless `nonblocking` (`EAGAIN`). `EOPNOTSUPP` for
    /// datagrams, `EINVAL` if it does not listen.
    pub fn accept(&self, nonblocking: bool) -> Result<(Arc<UnixSocket>, UnixAddress), Errno> {
        if self.kind == PairKind::Datagram {
            return Err(Errno::EOPNOTSUPP);
        }
        let attempt = || {
            let mut state = self.state.lock();
            let State::Listening { pending, .. } = &mut *state else {
                return Some(Err(Errno::EINVAL));
            };
            match pending.pop_front() {
                Some(accepted) => Some(Ok(accepted)),
                None => nonblocking.then_some(Err(Errno::EAGAIN)),
            }
        };
        let accepted = wait_on(&self.events, "unix socket accept", None, attempt)?
            .unwrap_or(Err(Errno::EAGAIN))?;
        // A connection waiting for room in the backlog may go now.
        self.events.wake_all();
        let peer_name = accepted.peer_name().unwrap_or(UnixAddress::Unnamed);
        Ok((accepted, peer_name))
    }

    /// Sends `data` (with `rights`) as `caller`: on a connection, or for
    /// a datagram socket to `to` (looked up by the caller's view) or its
    /// default peer. Streams and sequenced packets refuse an address
    /// (`EISCONN` connected, `EOPNOTSUPP` not; a sequenced-packet socket
    /// ignores it, as Linux does); `ENOTCONN` with nowhere to send.
    pub fn send(
        self: &Arc<Self>,
        caller: &Caller<'_>,
        data: &[u8],
        to: Option<&UnixAddress>,
        rights: Vec<Arc<vfs::OpenFile>>,
        nonblocking: bool,
    ) -> Result<usize, Errno> {
        let end = self.connected_end();
        if self.kind == PairKind::Stream && to.is_some() {
            return Err(if end.is_some() {
                Errno::EISCONN
            } else {
                Errno::EOPNOTSUPP
            });
        }
        if let Some(end) = end {
            return end.send(data, rights, caller.credentials, nonblocking);
        }
        if self.kind != PairKind::Datagram {
            return Err(Errno::ENOTCONN);
        }
        let target = match to {
            Some(address) => Some(find(caller, address)?),
            None => None,
        };
        self.send_datagram(target, data, rights, caller.credentials, nonblocking)
    }

    /// Sends datagram `data` from this unconnected datagram socket to
    /// `target`, or to its default peer (`ENOTCONN` without one,
    /// `ECONNREFUSED` if it closed): `EPROTOTYPE` for a socket of
    /// another type, `EPERM` for one that takes datagrams from another
    /// peer only, `EPIPE` for one shut for reading; waits for room unless
    /// `nonblocking` (`EAGAIN`).
    fn send_datagram(
        self: &Arc<Self>,
        target: Option<Arc<UnixSocket>>,
        data: &[u8],
        rights: Vec<Arc<vfs::OpenFile>>,
        sender: PeerCredentials,
        nonblocking: bool,
    ) -> Result<usize, Errno> {
        if !unix_datagram::fits_at_all(data.len()) {
            return Err(Errno::EMSGSIZE);
        }
        if self.is_shut[1].load(Ordering::SeqCst) {
            return Err(Errno::EPIPE);
        }
        let target = match target {
            Some(target) => target,
            None => {
                let peer = self.default_peer.lock().clone().ok_or(Errno::ENOTCONN)?;
                peer.upgrade().ok_or(Errno::ECONNREFUSED)?
            }
        };
        if target.kind != PairKind::Datagram {
            return Err(Errno::EPROTOTYPE);
        }
        if !matches!(&*target.state.lock(), State::Unconnected) || !target.may_receive_from(self) {
            return Err(Errno::EPERM);
        }
        if self.passes_credentials() || target.passes_credentials() {
            self.autobind()?;
        }
        let mut datagram = Some(Datagram {
            bytes: data.to_vec(),
            from: self.name(),
            rights,
            sender,
        });
        let attempt = || {
            if target.is_closed.load(Ordering::SeqCst) {
                return Some(Err(Errno::ECONNREFUSED));
            }
            if target.is_shut[0].load(Ordering::SeqCst) {
                return Some(Err(Errno::EPIPE));
            }
            let queued = datagram.take()?;
            match target.inbox.deliver(queued) {
                Ok(()) => Some(Ok(data.len())),
                Err(back) => {
                    datagram = Some(back);
                    nonblocking.then_some(Err(Errno::EAGAIN))
                }
            }
        };
        let outcome = wait_on(&target.events, "unix datagram send", None, attempt)?
            .unwrap_or(Err(Errno::EAGAIN));
        if outcome.is_ok() {
            target.events.wake_all();
        }
        outcome
    }

    /// Receives into `buf`, and the sender's name for a datagram socket:
    /// `EINVAL` for a stream socket not connected, `ENOTCONN` for a
    /// sequenced-packet one.
    pub fn receive(
        &self,
        buf: &mut [u8],
        options: ReceiveOptions,
    ) -> Result<(Received, Option<UnixAddress>), Errno> {
        if let Some(end) = self.connected_end() {
            let received = end.receive(buf, options)?;
            let from = self.peer_name().ok();
            return Ok((received, from));
        }
        match self.kind {
            PairKind::Stream => return Err(Errno::EINVAL),
            PairKind::SequencedPacket => return Err(Errno::ENOTCONN),
            PairKind::Datagram => {}
        }
        let attempt = || {
            if let Some((received, from)) = self.inbox.receive(buf, options) {
                return Some(Ok((received, Some(from))));
            }
            if self.is_shut[0].load(Ordering::SeqCst) {
                let nothing = Received {
                    count: 0,
                    whole: 0,
                    rights: Vec::new(),
                    sender: None,
                };
                return Some(Ok((nothing, None)));
            }
            options.nonblocking.then_some(Err(Errno::EAGAIN))
        };
        let outcome = wait_on(&self.events, "unix datagram receive", None, attempt)?
            .unwrap_or(Err(Errno::EAGAIN));
        // Senders waiting for room may send now.
        self.events.wake_all();
        outcome
    }

    /// `shutdown`: no more receiving and/or sending. Linux takes it on a
    /// socket that is not connected too.
    pub fn shutdown(&self, read: bool, write: bool) {
        match self.connected_end() {
            Some(end) => end.shutdown(read, write),
            None => {
                if read {
                    self.is_shut[0].store(true, Ordering::SeqCst);
                }
                if write {
                    self.is_shut[1].store(true, Ordering::SeqCst);
                }
                self.events.wake_all();
            }
        }
    }

    /// What `poll` sees (Linux's `unix_poll` and `unix_dgram_poll`).
    pub fn readiness(&self) -> Readiness {
        let state = self.state.lock();
        match &*state {
            State::Connected(connection) => connection.end.readiness(),
            State::Listening { pending, .. } => Readiness {
                readable: !pending.is_empty(),
                writable: false,
                hung_up: false,
                error: false,
            },
            State::Unconnected if self.kind == PairKind::Datagram => {
                drop(state);
                let peer = self.default_peer.lock().as_ref().and_then(Weak::upgrade);
                let is_read_shut = self.is_shut[0].load(Ordering::SeqCst);
                let is_write_shut = self.is_shut[1].load(Ordering::SeqCst);
                Readiness {
                    readable: self.inbox.has_datagrams() || is_read_shut,
                    writable: peer.is_none_or(|peer| peer.inbox.has_room()),
                    hung_up: is_read_shut && is_write_shut,
                    error: false,
                }
            }
            // A connection-based socket that is not connected is hung up
            // (and writable: a write fails at once).
            State::Unconnected => Readiness {
                readable: false,
                writable: true,
                hung_up: true,
                error: false,
            },
        }
    }
}

impl UnixSocket {
    /// Its last descriptor closed (or it was never given one): its name
    /// is released, the connections queued on it are reset, its
    /// connection (its end of the pair) goes, and whoever waits on it
    /// (a `connect` waiting for backlog room, a datagram sender) looks
    /// again and finds it gone. A thread still inside a call on it
    /// keeps what that call holds until it returns.
    fn close(&self) {
        self.is_closed.store(true, Ordering::SeqCst);
        let binding = self.binding.lock().clone();
        if binding.is_holder {
            match (&binding.address, binding.node) {
                (UnixAddress::Path(_), Some(node)) => self.names.release_node(node, self),
                (UnixAddress::Abstract(name), _) => self.names.release_abstract(name, self),
                _ => {}
            }
        }
        let state = core::mem::replace(&mut *self.state.lock(), State::Unconnected);
        if let State::Listening { pending, .. } = &state {
            for accepted in pending {
                if let Some(end) = accepted.connected_end() {
                    end.reset_peer();
                }
            }
        }
        drop(state);
        drop(self.inbox.clear());
        self.events.wake_all();
    }
}

impl Drop for UnixSocket {
    fn drop(&mut self) {
        if !self.is_closed.load(Ordering::SeqCst) {
            self.close();
        }
    }
}

impl Drop for UnixSocketFile {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// The socket `address` names for `caller`: a path must lead to a
/// socket node the caller may write (`EACCES`), bound by a live socket
/// (`ECONNREFUSED` otherwise, as for an abstract name nobody holds);
/// path errors as the path walk gives them; `EINVAL` for no name.
pub fn find(caller: &Caller<'_>, address: &UnixAddress) -> Result<Arc<UnixSocket>, Errno> {
    match address {
        UnixAddress::Unnamed => Err(Errno::EINVAL),
        UnixAddress::Abstract(name) => caller.names.find_abstract(name).ok_or(Errno::ECONNREFUSED),
        UnixAddress::Path(path) => {
            let node: Arc<dyn Inode> = caller.vfs.resolve(&caller.context, path, true)?;
            if !Vfs::permitted(&caller.context, &node.metadata(), MAY_WRITE) {
                return Err(Errno::EACCES);
            }
            if node.file_type() != vfs::FileType::Socket {
                return Err(Errno::ECONNREFUSED);
            }
            caller
                .names
                .find_node((node.dev(), node.ino()))
                .ok_or(Errno::ECONNREFUSED)
        }
    }
}

/// The open file's device: the socket (shared with the registry, a
/// listener's queue and peers, which the device alone does not own).
pub struct UnixSocketFile(pub Arc<UnixSocket>);

impl Device for UnixSocketFile {
    /// `read` is `recv` without flags.
    fn read(&self, _offset: u64, buf: &mut [u8], nonblocking: bool) -> Result<usize, Errno> {
        let options = ReceiveOptions {
            nonblocking,
            ..ReceiveOptions::default()
        };
        self.0
            .receive(buf, options)
            .map(|(received, _)| received.count)
    }

    /// `write` is `send` without flags or address, from the socket's
    /// own credentials (a `write` has no caller at hand; `sendmsg` gives
    /// the caller's).
    fn write(&self, _offset: u64, buf: &[u8], nonblocking: bool) -> Result<usize, Errno> {
        let sender = *self.0.credentials.lock();
        match self.0.connected_end() {
            Some(end) => end.send(buf, Vec::new(), sender, nonblocking),
            None if self.0.kind == PairKind::Datagram => {
                self.0
                    .send_datagram(None, buf, Vec::new(), sender, nonblocking)
            }
            None => Err(Errno::ENOTCONN),
        }
    }

    fn readiness(&self) -> Readiness {
        self.0.readiness()
    }

    fn wait_queue(&self) -> Option<&dyn vfs::WaitQueue> {
        Some(self.0.events())
    }

    fn is_seekable(&self) -> bool {
        false
    }

    fn as_any(&self) -> Option<&dyn core::any::Any> {
        Some(self)
    }
}
