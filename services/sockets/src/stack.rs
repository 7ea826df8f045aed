//! The stack: smoltcp's interface and sockets over the stack's device
//! (loopback, and the network interface once attached), the ports in use,
//! and the TCP sockets closing in the background.

use alloc::{boxed::Box, collections::BTreeSet, vec, vec::Vec};

use core::{
    net::Ipv4Addr,
    sync::atomic::{AtomicU32, Ordering},
};

use smoltcp::{
    iface::{Config, Interface, PollResult, SocketHandle, SocketSet},
    socket::{tcp, udp},
    time::Instant,
    wire::{HardwareAddress, IpAddress, IpCidr},
};
use spin::Mutex;

use crate::{
    device::{Output, StackDevice},
    SocketError,
};

/// Bytes of a TCP socket's receive buffer. Beyond 64 KiB smoltcp offers
/// window scaling, so a peer may have this much in flight: with one
/// round trip of the user-mode network (about 2 ms under TCG) a 64 KiB
/// window alone held TCP below 300 Mbit/s.
pub(crate) const TCP_RECEIVE_BYTES: usize = 256 * 1024;
/// Bytes of a TCP socket's send buffer.
pub(crate) const TCP_SEND_BYTES: usize = 64 * 1024;
/// Closed TCP sockets kept for reuse at most.
const SPARE_TCP_SOCKETS: usize = 16;
/// Connections kept in TIME-WAIT at most; the oldest beyond are ended
/// early, as Linux does past `tcp_max_tw_buckets`. A smoltcp socket keeps
/// its buffers in TIME-WAIT (Linux keeps a small record), so a server
/// closing a thousand connections a second would otherwise hold some
/// 3 GiB for the 10 seconds TIME-WAIT lasts.
const MAX_TIME_WAIT: usize = 32;
/// Bytes of a UDP socket's receive and send buffers each.
const UDP_BUFFER_BYTES: usize = 64 * 1024;
/// Datagrams a UDP socket's buffers hold at most.
const UDP_DATAGRAMS: usize = 64;
/// Ephemeral ports, as Linux's `ip_local_port_range`.
const EPHEMERAL_PORTS: core::ops::RangeInclusive<u16> = 32768..=60999;
/// Rounds of [`Stack::poll`] at most per call. A round takes in every
/// packet the loopback device holds, then sends what the sockets have;
/// a round that sent nothing left the device empty, and ends the call.
const POLL_ROUNDS: usize = 16;

/// A protocol's port space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Protocol {
    Udp,
    Tcp,
}

/// What the stack's lock guards.
pub(crate) struct Inner {
    pub(crate) iface: Interface,
    pub(crate) device: StackDevice,
    pub(crate) sockets: SocketSet<'static>,
    /// Ports bound, per protocol.
    ports: BTreeSet<(Protocol, u16)>,
    /// Where the next ephemeral port search starts.
    next_ephemeral: u16,
    /// TCP sockets their descriptors closed, finishing their goodbyes
    /// (FIN, TIME-WAIT), with the port each gives back once closed;
    /// removed then.
    closing: Vec<(SocketHandle, Option<u16>)>,
    /// Closed TCP sockets kept in the set for the next connections: a
    /// socket's buffers (320 KiB) are then reused rather than allocated
    /// and zeroed again, which cost a small HTTP request a third of its
    /// time.
    spare_tcp: Vec<SocketHandle>,
}

/// A network stack: the loopback interface and its sockets.
pub struct Stack {
    inner: Mutex<Inner>,
    /// The network interface's address (0: none attached).
    interface: AtomicU32,
    /// Milliseconds since some fixed point (the kernel's clock).
    clock: Box<dyn Fn() -> u64 + Send + Sync>,
}

impl Stack {
    /// A stack over the loopback device, answering 127.0.0.1/8, timed by
    /// `clock` (milliseconds).
    pub fn new(clock: impl Fn() -> u64 + Send + Sync + 'static) -> Stack {
        let mut device = StackDevice::new();
        let now = Instant::from_millis(clock() as i64);
        let mut iface = Interface::new(Config::new(HardwareAddress::Ip), &mut device, now);
        iface.update_ip_addrs(|addresses| {
            // Room for one address: the loopback network's.
            let _ = addresses.push(IpCidr::new(IpAddress::v4(127, 0, 0, 1), 8));
        });
        Stack {
            inner: Mutex::new(Inner {
                iface,
                device,
                sockets: SocketSet::new(Vec::new()),
                ports: BTreeSet::new(),
                next_ephemeral: *EPHEMERAL_PORTS.start(),
                closing: Vec::new(),
                spare_tcp: Vec::new(),
            }),
            interface: AtomicU32::new(0),
            clock: Box::new(clock),
        }
    }

    /// Attaches the network interface: the stack answers `address` (on a
    /// network of `prefix` bits), routes everything off loopback through
    /// `gateway`, and sends such packets with `output`.
    pub fn attach_interface(
        &self,
        address: Ipv4Addr,
        prefix: u8,
        gateway: Ipv4Addr,
        output: Output,
    ) {
        let mut inner = self.inner.lock();
        inner.iface.update_ip_addrs(|addresses| {
            let _ = addresses.push(IpCidr::new(IpAddress::Ipv4(address), prefix));
        });
        let _ = inner.iface.routes_mut().add_default_ipv4_route(gateway);
        inner.device.attach(address, output);
        self.interface.store(u32::from(address), Ordering::Release);
    }

    /// The network interface's address, if one is attached.
    pub fn interface_address(&self) -> Option<Ipv4Addr> {
        match self.interface.load(Ordering::Acquire) {
            0 => None,
            address => Some(Ipv4Addr::from(address)),
        }
    }

    /// An IP packet from the network interface (one the protocol graph
    /// hands to the sockets): queued for the next [`Stack::poll`] (the
    /// interface's thread polls once after a batch of frames, rather than
    /// twice per packet).
    pub fn receive(&self, packet: &[u8]) {
        self.inner.lock().device.push_inbound(packet);
    }

    /// Packets the stack's device dropped (queues full, no route, bad
    /// TCP checksums).
    pub fn dropped_packets(&self) -> u64 {
        self.inner.lock().device.dropped
    }

    /// TCP segments from the interface merged into the one before them
    /// before smoltcp saw them (see `coalesce.rs`).
    pub fn coalesced_segments(&self) -> u64 {
        self.inner.lock().device.coalesced
    }

    /// Whether a socket may bind to `address`: any, loopback, or the
    /// interface's.
    pub(crate) fn binds(&self, address: Ipv4Addr) -> bool {
        address.is_unspecified()
            || address.is_loopback()
            || Some(address) == self.interface_address()
    }

    /// Whether `address` can be sent to: loopback always, anything else
    /// once an interface is attached.
    pub(crate) fn reaches(&self, address: core::net::SocketAddrV4) -> bool {
        address.port() != 0
            && !address.ip().is_unspecified()
            && (address.ip().is_loopback() || self.interface_address().is_some())
    }

    /// The local address a socket talking to `destination` uses.
    pub(crate) fn source_for(&self, destination: Ipv4Addr) -> Ipv4Addr {
        match self.interface_address() {
            Some(address) if !destination.is_loopback() => address,
            _ => Ipv4Addr::LOCALHOST,
        }
    }

    /// Runs `f` on the stack after moving it forward (when packets wait
    /// for it); moves it forward again after, so that what `f` sent is
    /// delivered.
    ///
    /// The poll before `f` is skipped when no packet waits: it would only
    /// run timers, which the poll after `f` runs too (and the kernel's
    /// `net` thread when a timer is due, within 10 ms). A program reading
    /// a stream in small pieces then pays one pass over the sockets per
    /// call, not two.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        let mut inner = self.inner.lock();
        let now = Instant::from_millis((self.clock)() as i64);
        let mut changed = false;
        if inner.device.has_waiting() {
            changed |= inner.poll(now);
        }
        let result = f(&mut inner);
        changed |= inner.poll(now);
        drop(inner);
        if changed {
            tell_of_change();
        }
        result
    }

    /// Runs `f` on the stack after moving it forward (when packets wait
    /// for it), as [`Stack::with`] does; moves it forward again after only
    /// if `f` says so (its second result): a question (is the socket
    /// readable?) or a read that changes nothing the peer must hear of
    /// sends nothing, and a pass over every socket per call was most of
    /// what a program reading a stream in small pieces paid.
    pub(crate) fn with_maybe_after<R>(&self, f: impl FnOnce(&mut Inner) -> (R, bool)) -> R {
        let mut inner = self.inner.lock();
        let now = Instant::from_millis((self.clock)() as i64);
        let mut changed = false;
        if inner.device.has_waiting() {
            changed |= inner.poll(now);
        }
        let (result, poll_after) = f(&mut inner);
        if poll_after {
            changed |= inner.poll(now);
        }
        drop(inner);
        if changed {
            tell_of_change();
        }
        result
    }

    /// Moves the stack forward: queued packets through the loopback
    /// device, TCP's timers; sockets closed by their descriptors and now
    /// done go.
    pub fn poll(&self) {
        self.with(|_| ());
    }

    /// Milliseconds until the stack must be polled again for its timers
    /// (a delayed acknowledgement, a retransmission), rounded up; `None`
    /// if no timer runs.
    pub fn poll_delay_ms(&self) -> Option<u64> {
        let mut inner = self.inner.lock();
        let now = Instant::from_millis((self.clock)() as i64);
        let Inner { iface, sockets, .. } = &mut *inner;
        iface
            .poll_delay(now, sockets)
            .map(|delay| delay.total_micros().div_ceil(1000))
    }

    /// Sockets in the stack now, spares kept for reuse not counted (tests:
    /// none may outlive its descriptor once closed and done).
    pub fn socket_count(&self) -> usize {
        self.with(|inner| inner.sockets.iter().count() - inner.spare_tcp.len())
    }
}

/// What [`set_change_hook`] installed.
static CHANGE_HOOK: spin::Once<fn()> = spin::Once::new();

/// Has `hook` called (once installed; later calls are ignored) after an
/// operation on any stack moved packets or changed a socket's state:
/// the personality wakes the threads waiting on sockets then, instead of
/// having them look every millisecond. Called holding no stack lock.
pub fn set_change_hook(hook: fn()) {
    CHANGE_HOOK.call_once(|| hook);
}

fn tell_of_change() {
    if let Some(hook) = CHANGE_HOOK.get() {
        hook();
    }
}

impl Inner {
    /// Moves the stack forward; whether a packet went anywhere or a
    /// socket's state changed (what a waiter may be waiting for).
    fn poll(&mut self, now: Instant) -> bool {
        let mut changed = false;
        for _ in 0..POLL_ROUNDS {
            if self.iface.poll(now, &mut self.device, &mut self.sockets) == PollResult::None {
                break;
            }
            changed = true;
        }
        self.reap_closed();
        changed
    }

    /// Removes the closing TCP sockets that are done, and ends the oldest
    /// TIME-WAITs beyond [`MAX_TIME_WAIT`].
    fn reap_closed(&mut self) {
        let mut waiting = 0;
        for &(handle, _) in self.closing.iter().rev() {
            let socket = self.sockets.get_mut::<tcp::Socket>(handle);
            if socket.state() == tcp::State::TimeWait {
                waiting += 1;
                if waiting > MAX_TIME_WAIT {
                    socket.abort();
                }
            }
        }
        let sockets = &mut self.sockets;
        let ports = &mut self.ports;
        let spare = &mut self.spare_tcp;
        self.closing.retain(|&(handle, port)| {
            let socket = sockets.get_mut::<tcp::Socket>(handle);
            // Data for a socket nobody can read any more: Linux answers
            // with a reset, and so the sender learns (EPIPE, ECONNRESET).
            if socket.recv_queue() > 0 {
                socket.abort();
            }
            if socket.state() != tcp::State::Closed {
                return true;
            }
            if spare.len() < SPARE_TCP_SOCKETS {
                spare.push(handle);
            } else {
                sockets.remove(handle);
            }
            if let Some(port) = port {
                ports.remove(&(Protocol::Tcp, port));
            }
            false
        });
    }

    /// Takes `port` (0: an ephemeral one) for `protocol`.
    pub(crate) fn take_port(&mut self, protocol: Protocol, port: u16) -> Result<u16, SocketError> {
        if port != 0 {
            if !self.ports.insert((protocol, port)) {
                return Err(SocketError::AddressInUse);
            }
            return Ok(port);
        }
        let count = EPHEMERAL_PORTS.len() as u16;
        for step in 0..count {
            let offset = (self.next_ephemeral - EPHEMERAL_PORTS.start() + step) % count;
            let candidate = EPHEMERAL_PORTS.start() + offset;
            if self.ports.insert((protocol, candidate)) {
                self.next_ephemeral = EPHEMERAL_PORTS.start() + (offset + 1) % count;
                return Ok(candidate);
            }
        }
        Err(SocketError::AddressInUse)
    }

    /// Gives `port` back.
    pub(crate) fn release_port(&mut self, protocol: Protocol, port: u16) {
        self.ports.remove(&(protocol, port));
    }

    /// A new UDP socket in the set.
    pub(crate) fn new_udp(&mut self) -> SocketHandle {
        let buffer = || {
            udp::PacketBuffer::new(
                vec![udp::PacketMetadata::EMPTY; UDP_DATAGRAMS],
                vec![0; UDP_BUFFER_BYTES],
            )
        };
        self.sockets.add(udp::Socket::new(buffer(), buffer()))
    }

    /// A new TCP socket in the set, acknowledging at once (on loopback a
    /// delayed ACK would only add its delay).
    pub(crate) fn new_tcp(&mut self) -> SocketHandle {
        if let Some(handle) = self.spare_tcp.pop() {
            // Closed, so its next `listen` or `connect` starts it afresh
            // (smoltcp resets its state and buffers); the settings a
            // socket call may have changed go back to a new socket's.
            let socket = self.sockets.get_mut::<tcp::Socket>(handle);
            socket.set_ack_delay(None);
            socket.set_nagle_enabled(true);
            socket.set_keep_alive(None);
            socket.set_timeout(None);
            socket.set_hop_limit(None);
            return handle;
        }
        let mut socket = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0; TCP_RECEIVE_BYTES]),
            tcp::SocketBuffer::new(vec![0; TCP_SEND_BYTES]),
        );
        socket.set_ack_delay(None);
        self.sockets.add(socket)
    }

    /// A TCP socket whose descriptor is gone: it says goodbye in the
    /// background and goes when closed; `port` (if it owns one) stays
    /// taken until then.
    pub(crate) fn close_tcp(&mut self, handle: SocketHandle, port: Option<u16>) {
        let socket = self.sockets.get_mut::<tcp::Socket>(handle);
        match socket.state() {
            // Never connected, or a listener: nothing to say.
            tcp::State::Closed | tcp::State::Listen | tcp::State::SynSent => {
                socket.abort();
            }
            // Closed with bytes unread: a reset, as on Linux.
            _ if socket.recv_queue() > 0 => socket.abort(),
            _ => socket.close(),
        }
        self.closing.push((handle, port));
    }

    /// Removes a socket at once.
    pub(crate) fn remove(&mut self, handle: SocketHandle) {
        self.sockets.remove(handle);
    }
}
