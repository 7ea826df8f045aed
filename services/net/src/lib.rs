//! SPIN's protocol graph (SOSP'95 §5.3, figure 5): each layer of the
//! network stack raises an event for the next, and extensions install
//! guarded handlers on the layer they care about.
//!
//! ```text
//! NIC ─▶ Ether.PacketArrived ─▶ (ARP) ─▶ IP.PacketArrived ─▶ ICMP.PacketArrived ─▶ echo reply
//!                                                        ├─▶ UDP.PacketArrived  ─▶ extensions by port | sockets (default)
//!                                                        └─▶ TCP.PacketArrived  ─▶ extensions by port | sockets (default)
//! ```
//!
//! - [`frame`]: frames parsed and checked once on arrival, and the
//!   per-layer views handlers get as packets (`extension_interface::PacketRef`:
//!   a capability, never a pointer);
//! - [`graph`]: the events, their intrinsic handlers (each layer raising
//!   the next) and the defaults (UDP and TCP go to the sockets when no
//!   extension takes them);
//! - [`arp`]: the neighbour table, answering and asking;
//! - [`forwarder`]: SPIN's forwarder, UDP datagrams or TCP segments for a port relayed
//!   to another host and back, in the kernel;
//! - [`output`]: IPv4, UDP and ICMP output through the interface's
//!   [`Link`];
//! - [`stats`]: counters of everything received, sent and dropped.
//!
//! Guards on ports and protocols are declarative (parameters of the
//! events), so the dispatcher's decision index picks the handler of a
//! port without evaluating every guard.
#![cfg_attr(not(test), no_std)]

extern crate alloc;

pub mod arp;
pub mod forwarder;
pub mod frame;
pub mod graph;
pub mod output;
pub mod stats;

#[cfg(test)]
mod tests;

use alloc::{boxed::Box, sync::Arc};

pub use frame::{FrameBuffer, Malformed};
use smoltcp::wire::Ipv4Address;
pub use stats::Stats;

/// What sends frames: the network interface's driver.
pub trait Link: Send + Sync {
    /// Sends a frame of `len` bytes that `fill` writes in place; `false`
    /// if it could not be sent (device busy, frame too long).
    fn transmit(&self, len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool;
}

/// Where IP packets for the sockets go (the socket stack's input).
pub type SocketInput = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// An interface's addressing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InterfaceConfig {
    /// The interface's MAC address.
    pub mac: [u8; 6],
    /// Its IPv4 address.
    pub address: Ipv4Address,
    /// The prefix length of its network.
    pub prefix: u8,
    /// The router for everything off that network.
    pub gateway: Ipv4Address,
}

impl InterfaceConfig {
    /// QEMU's user-mode network: 10.0.2.15/24 behind the router 10.0.2.2.
    pub fn qemu_user(mac: [u8; 6]) -> Self {
        InterfaceConfig {
            mac,
            address: Ipv4Address::new(10, 0, 2, 15),
            prefix: 24,
            gateway: Ipv4Address::new(10, 0, 2, 2),
        }
    }

    /// Whether `address` is on the interface's network.
    pub fn is_local(&self, address: Ipv4Address) -> bool {
        let mask = u32::MAX
            .checked_shl(32 - u32::from(self.prefix))
            .unwrap_or(0);
        (u32::from(address) & mask) == (u32::from(self.address) & mask)
    }

    /// Whether `address` is this interface's or a broadcast it receives.
    pub fn accepts(&self, address: Ipv4Address) -> bool {
        let mask = u32::MAX
            .checked_shl(32 - u32::from(self.prefix))
            .unwrap_or(0);
        address == self.address
            || address == Ipv4Address::BROADCAST
            || u32::from(address) == (u32::from(self.address) | !mask)
    }
}

/// One network interface and its protocol graph.
pub struct Network {
    config: InterfaceConfig,
    link: Arc<dyn Link>,
    events: graph::Events,
    neighbors: spin::Mutex<arp::Neighbors>,
    sockets: spin::Once<SocketInput>,
    stats: stats::Counters,
    next_ident: core::sync::atomic::AtomicU32,
}

impl Network {
    /// The protocol graph of an interface with `config`, sending through
    /// `link`. Leaked: events and their handlers live as long as the
    /// kernel (packets refer to their network by a static reference).
    pub fn start(config: InterfaceConfig, link: Arc<dyn Link>) -> &'static Network {
        let network: &'static Network = Box::leak(Box::new(Network {
            config,
            link,
            events: graph::Events::new(),
            neighbors: spin::Mutex::new(arp::Neighbors::default()),
            sockets: spin::Once::new(),
            stats: stats::Counters::default(),
            next_ident: core::sync::atomic::AtomicU32::new(1),
        }));
        network.events.install_kernel_handlers();
        network
    }

    /// The addressing.
    pub fn config(&self) -> InterfaceConfig {
        self.config
    }

    /// The graph's events.
    pub fn events(&self) -> &graph::Events {
        &self.events
    }

    /// Connects the sockets: UDP and TCP packets no extension takes, and
    /// ICMP other than echo requests, go to `input` as IP packets.
    pub fn attach_sockets(&self, input: SocketInput) {
        self.sockets.call_once(|| input);
    }

    /// The counters.
    pub fn stats(&self) -> Stats {
        self.stats.snapshot()
    }

    /// A received frame enters the graph: parsed and checked, then
    /// `Ether.PacketArrived` is raised (which raises the layers above).
    /// Malformed frames are counted and dropped.
    pub fn receive(&'static self, buffer: Box<dyn FrameBuffer>) {
        self.stats.add(&self.stats.frames_received, 1);
        match frame::Frame::parse(self, buffer) {
            Ok(frame) => graph::arrived(self, Arc::new(frame)),
            Err(reason) => self.stats.malformed(reason),
        }
    }

    pub(crate) fn deliver_to_sockets(&self, ip_packet: &[u8]) {
        match self.sockets.get() {
            Some(input) => input(ip_packet),
            None => self.stats.add(&self.stats.no_listener, 1),
        }
    }
}
