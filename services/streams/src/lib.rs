//! The stream service: TCP connections as events, so that a protocol over
//! TCP (an HTTP server) can be an extension. SPIN's HTTP server was a
//! kernel extension on the TCP engine's events; Spindle's extensions are
//! Wasm modules, which get packets and not pointers, so a connection's
//! data is lent to them as a packet is.
//!
//! - [`Service`] owns the event `TCP.StreamData(stream, local port, remote
//!   address, remote port) -> u32` and makes [`Listener`]s;
//! - a [`Listener`] accepts the connections of one port on the kernel's
//!   socket stack; [`Listener::step`] (called by a kernel thread) reads
//!   what arrived on each, raises the event with everything not yet
//!   consumed, and sends what the handlers queued;
//! - the stream (`stream::Stream`) is what handlers hold: its data
//!   readable with `packet_read`, `packet_reply` appending bytes to the
//!   answer and `packet_reply_file` a range of a file (sent from the file,
//!   never copied through the extension's memory);
//! - the handler's result says what happens next ([`Next`]): wait for more
//!   data (a request not complete yet: the same bytes and the new ones
//!   come with the next raise), the data consumed and the connection kept,
//!   or the answer complete and the connection closed once it is sent.
#![cfg_attr(not(test), no_std)]

extern crate alloc;

mod connection;
mod stream;

#[cfg(test)]
mod tests;

use alloc::{sync::Arc, vec::Vec};
use core::{
    net::{Ipv4Addr, SocketAddrV4},
    sync::atomic::{AtomicBool, Ordering},
};

use dispatch::{Authority, Event, Handler};
use extension_interface::PacketRef;
use sockets::{Kind, Socket, SocketError, Stack};

use connection::Connection;

/// `TCP.StreamData(stream, local port, remote address, remote port)`:
/// the remote address as a big-endian number (10.0.2.2 is 0x0a000202).
pub type StreamArgs = (PacketRef, u32, u32, u32);

/// The event's name, as extensions find it.
pub const STREAM_DATA: &str = "TCP.StreamData";
/// The parameter holding the local port (what a server guards on).
pub const LOCAL_PORT: usize = 1;

/// Most connections a listener keeps open at once; more wait in the
/// socket's backlog.
pub const MAX_CONNECTIONS: usize = 64;
/// Most bytes of a connection held unconsumed (a request a handler keeps
/// asking more of): past it the connection is closed.
pub const MAX_PENDING_BYTES: usize = 64 << 10;
/// Most bytes of answers queued on a connection (file ranges not
/// counted: they are sent from the file).
pub const MAX_QUEUED_BYTES: usize = 4 << 20;
/// How long a connection may stay silent with nothing to send before it
/// is closed, in nanoseconds.
pub const IDLE_TIMEOUT_NS: u64 = 10_000_000_000;
/// Pending connections the listening socket keeps.
const BACKLOG: usize = 32;

/// What a handler of `TCP.StreamData` returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Next {
    /// Not enough data yet: keep it, raise again with more.
    MoreData = 0,
    /// The answer is complete: close the connection once it is sent.
    Close = 1,
    /// The data is consumed (dropped); keep the connection.
    KeepOpen = 2,
}

impl Next {
    /// The value a handler returned; anything unknown closes.
    pub fn from_result(result: u32) -> Next {
        match result {
            0 => Next::MoreData,
            2 => Next::KeepOpen,
            _ => Next::Close,
        }
    }
}

/// The stream service of one socket stack.
pub struct Service {
    stack: Arc<Stack>,
    event: Arc<Event<StreamArgs, u32>>,
    clock: fn() -> u64,
}

impl Service {
    /// The service over `stack`, reading time (nanoseconds) from `clock`.
    /// With no handler taking a connection's data, it is closed.
    pub fn new(stack: Arc<Stack>, clock: fn() -> u64) -> Service {
        let (event, authority) = Event::builder(STREAM_DATA).build();
        set_defaults(&event, &authority);
        Service {
            stack,
            event: Arc::new(event),
            clock,
        }
    }

    /// The event, to grant to extensions.
    pub fn event(&self) -> &Arc<Event<StreamArgs, u32>> {
        &self.event
    }

    /// Listens on `port` (every address).
    pub fn listen(&self, port: u16) -> Result<Listener, SocketError> {
        let socket = Socket::new(self.stack.clone(), Kind::Stream);
        socket.bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port))?;
        socket.listen(BACKLOG)?;
        Ok(Listener {
            port,
            socket: spin::Mutex::new(Some(socket)),
            closed: AtomicBool::new(false),
            event: self.event.clone(),
            clock: self.clock,
            connections: spin::Mutex::new(Vec::new()),
            counters: spin::Mutex::new(Counters::default()),
        })
    }
}

/// No handler: close. Several handlers: the strongest wish wins (close
/// over keep over wait), so one handler answering ends the exchange.
fn set_defaults(event: &Event<StreamArgs, u32>, authority: &Authority) {
    // The authority is the event's own: these cannot fail.
    let _ = event.set_default(
        authority,
        Some(Handler::new(|_: &StreamArgs| Next::Close as u32)),
    );
    let strength = |next: u32| match Next::from_result(next) {
        Next::MoreData => 0,
        Next::KeepOpen => 1,
        Next::Close => 2,
    };
    let _ = event.set_result_handler(
        authority,
        Some(Arc::new(
            move |a: u32, b: u32| {
                if strength(b) >= strength(a) {
                    b
                } else {
                    a
                }
            },
        )),
    );
}

/// What a listener has done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Connections accepted.
    pub accepted: u64,
    /// Raises of `TCP.StreamData`.
    pub raised: u64,
    /// Connections closed after their answer.
    pub answered: u64,
    /// Connections closed for silence, too much pending data, or the
    /// peer's end before an answer.
    pub dropped: u64,
}

/// One port's connections.
pub struct Listener {
    port: u16,
    /// The listening socket; `None` once closed.
    socket: spin::Mutex<Option<Socket>>,
    closed: AtomicBool,
    event: Arc<Event<StreamArgs, u32>>,
    clock: fn() -> u64,
    connections: spin::Mutex<Vec<Connection>>,
    counters: spin::Mutex<Counters>,
}

impl Listener {
    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// What it has done so far.
    pub fn counters(&self) -> Counters {
        *self.counters.lock()
    }

    /// Connections open.
    pub fn open_connections(&self) -> usize {
        self.connections.lock().len()
    }

    /// Accepts waiting connections, raises the event for the data that
    /// arrived, sends what is queued, closes what is done. Whether
    /// anything moved (the caller waits for the network when not).
    pub fn step(&self) -> bool {
        let now = (self.clock)();
        let mut connections = self.connections.lock();
        if self.closed.load(Ordering::Acquire) {
            connections.clear();
            return false;
        }
        let mut counters = self.counters.lock();
        let mut moved = false;
        if let Some(socket) = self.socket.lock().as_ref() {
            while connections.len() < MAX_CONNECTIONS {
                match socket.accept() {
                    Ok((socket, remote)) => {
                        counters.accepted += 1;
                        connections.push(Connection::new(socket, remote, now));
                        moved = true;
                    }
                    Err(_) => break,
                }
            }
        }
        connections.retain_mut(|connection| {
            let progress = connection.step(self.port, &self.event, now, &mut counters);
            moved |= progress.moved;
            !progress.finished
        });
        if self.closed.load(Ordering::Acquire) {
            // Closed by a handler of this very step.
            connections.clear();
        }
        moved
    }

    /// Stops listening now: the port is free when this returns. Open
    /// connections end now too, or at the end of the step running (a
    /// handler may close its own listener).
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        drop(self.socket.lock().take());
        if let Some(mut connections) = self.connections.try_lock() {
            connections.clear();
        }
    }

    /// Whether [`Listener::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // Connections still open end with the listener (reset by the
        // sockets' own drop); the listening socket closes with it.
        self.connections.lock().clear();
    }
}
