//! SPIN's forwarder (SOSP'95 §5.3): packets for a port of this host are
//! redirected, in the kernel, to a port of another host, and its answers
//! sent back to whoever sent them. UDP datagrams and TCP segments alike.
//!
//! Two handlers on `UDP.PacketArrived` or `TCP.PacketArrived`, both with
//! declarative guards: one on the forwarded port, one on the range of
//! relay ports and the target's address and port. Each client (address
//! and port) gets a relay port of its own, so answers find their way back.
//! A packet is relayed by rewriting its addresses and ports (and fixing
//! the checksums) as it is copied into the frame the device sends: the
//! forwarder keeps no connection state, so a TCP connection through it is
//! the client's and the target's alone (their handshake, windows,
//! retransmissions and close), as SPIN's forwarder redirected segments
//! without terminating them.

use alloc::{collections::BTreeMap, sync::Arc, vec, vec::Vec};
use core::sync::atomic::{AtomicU64, Ordering};

use dispatch::{BindingId, Event, Field, Guard, Handler, Install, Predicate, Principal};
use smoltcp::wire::{IpAddress, Ipv4Address, Ipv4Packet, TcpPacket, UdpPacket};
use spin::Mutex;

use crate::{
    frame::{LayerView, Transport},
    graph::{PortArgs, DESTINATION_PORT},
    Network,
};

/// Relay ports, above the sockets' ephemeral range (32768-60999).
pub const RELAY_PORTS: core::ops::RangeInclusive<u16> = 61000..=61999;

/// Clients remembered at most; the oldest is forgotten for a new one.
const MAX_CLIENTS: usize = 256;

/// The parameter of the port events holding the source address.
const SOURCE_ADDRESS: usize = 1;
/// The parameter of the port events holding the source port.
const SOURCE_PORT: usize = 2;

/// The transport a forwarder relays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// UDP datagrams.
    Udp,
    /// TCP segments.
    Tcp,
}

impl Protocol {
    /// The protocol's name as users write it.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Udp => "UDP",
            Protocol::Tcp => "TCP",
        }
    }
}

/// Who a relay port speaks for.
#[derive(Default)]
struct Flows {
    by_client: BTreeMap<(Ipv4Address, u16), u16>,
    by_relay: BTreeMap<u16, (Ipv4Address, u16)>,
    order: Vec<u16>,
    next: u16,
}

/// A forwarding of one UDP or TCP port to another host's port.
pub struct Forwarder {
    network: &'static Network,
    /// What it relays.
    pub protocol: Protocol,
    /// The port of this host that is forwarded.
    pub port: u16,
    /// Where its packets go.
    pub target: (Ipv4Address, u16),
    flows: Mutex<Flows>,
    bindings: Mutex<Vec<BindingId>>,
    /// Packets relayed (both ways).
    relayed: AtomicU64,
}

/// The packet of a port event, with what the forwarder needs of it.
struct Arrived<'a> {
    /// The whole IP packet.
    packet: &'a [u8],
    source: Ipv4Address,
    source_port: u16,
    destination_port: u16,
}

impl Forwarder {
    /// Starts relaying `protocol` packets for `port` to `target`.
    pub fn install(
        network: &'static Network,
        protocol: Protocol,
        port: u16,
        target: (Ipv4Address, u16),
    ) -> Result<Arc<Forwarder>, dispatch::Error> {
        let forwarder = Arc::new(Forwarder {
            network,
            protocol,
            port,
            target,
            flows: Mutex::new(Flows {
                next: *RELAY_PORTS.start(),
                ..Flows::default()
            }),
            bindings: Mutex::new(Vec::new()),
            relayed: AtomicU64::new(0),
        });
        let event = forwarder.event();
        let outbound = forwarder.clone();
        let to_target = Install::new(
            Handler::new(move |args: &PortArgs| outbound.relay_to_target(args)).named("forwarder"),
        )
        .guard(Guard::when(Predicate::equals(
            Field::Param(DESTINATION_PORT),
            u64::from(port),
        )));
        let inbound = forwarder.clone();
        let to_client = Install::new(
            Handler::new(move |args: &PortArgs| inbound.relay_to_client(args)).named("forwarder"),
        )
        .guard(Guard::when(Predicate::in_range(
            Field::Param(DESTINATION_PORT),
            u64::from(*RELAY_PORTS.start()),
            u64::from(*RELAY_PORTS.end()),
        )))
        .guard(Guard::when(Predicate::equals(
            Field::Param(SOURCE_ADDRESS),
            u64::from(u32::from(target.0)),
        )))
        .guard(Guard::when(Predicate::equals(
            Field::Param(SOURCE_PORT),
            u64::from(target.1),
        )));
        let first = event.install(Principal::KERNEL, to_target)?;
        let second = match event.install(Principal::KERNEL, to_client) {
            Ok(binding) => binding,
            Err(error) => {
                let _ = event.remove(Principal::KERNEL, first);
                return Err(error);
            }
        };
        *forwarder.bindings.lock() = vec![first, second];
        Ok(forwarder)
    }

    fn event(&self) -> &'static Event<PortArgs, ()> {
        let events = self.network.events();
        match self.protocol {
            Protocol::Udp => &events.udp,
            Protocol::Tcp => &events.tcp,
        }
    }

    /// Stops relaying (its handlers are removed).
    pub fn remove(&self) {
        let event = self.event();
        for binding in self.bindings.lock().drain(..) {
            let _ = event.remove(Principal::KERNEL, binding);
        }
    }

    /// Packets relayed so far.
    pub fn relayed(&self) -> u64 {
        self.relayed.load(Ordering::Relaxed)
    }

    fn arrived(args: &PortArgs) -> Option<Arrived<'_>> {
        let view = args.0 .0.as_any().downcast_ref::<LayerView>()?;
        let ipv4 = view.frame.ipv4?;
        let (source_port, destination_port) = match ipv4.transport {
            Transport::Udp {
                source_port,
                destination_port,
                ..
            }
            | Transport::Tcp {
                source_port,
                destination_port,
            } => (source_port, destination_port),
            _ => return None,
        };
        Some(Arrived {
            packet: view.frame.ip_packet()?,
            source: ipv4.source,
            source_port,
            destination_port,
        })
    }

    fn relay_to_target(&self, args: &PortArgs) {
        let Some(arrived) = Self::arrived(args) else {
            return;
        };
        let relay = self.relay_port(arrived.source, arrived.source_port);
        let from = (self.network.config.address, relay);
        self.relay(arrived.packet, from, self.target);
    }

    fn relay_to_client(&self, args: &PortArgs) {
        let Some(arrived) = Self::arrived(args) else {
            return;
        };
        let client = self
            .flows
            .lock()
            .by_relay
            .get(&arrived.destination_port)
            .copied();
        if let Some(client) = client {
            let from = (self.network.config.address, self.port);
            self.relay(arrived.packet, from, client);
        }
    }

    /// Sends `packet` again from `from` to `to`: a copy with the
    /// addresses, ports and checksums rewritten.
    fn relay(&self, packet: &[u8], from: (Ipv4Address, u16), to: (Ipv4Address, u16)) {
        let protocol = self.protocol;
        let sent = self.network.route(to.0, packet.len(), &mut |out| {
            out.copy_from_slice(packet);
            rewrite(protocol, out, from, to);
        });
        if sent {
            self.relayed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The relay port of a client (a new one for a new client, the oldest
    /// client's reused when all are taken).
    fn relay_port(&self, client: Ipv4Address, client_port: u16) -> u16 {
        let mut flows = self.flows.lock();
        if let Some(&relay) = flows.by_client.get(&(client, client_port)) {
            return relay;
        }
        let relay = if flows.order.len() >= MAX_CLIENTS {
            let oldest = flows.order.remove(0);
            if let Some(old) = flows.by_relay.remove(&oldest) {
                flows.by_client.remove(&old);
            }
            oldest
        } else {
            let relay = flows.next;
            flows.next = if relay == *RELAY_PORTS.end() {
                *RELAY_PORTS.start()
            } else {
                relay + 1
            };
            relay
        };
        flows.by_client.insert((client, client_port), relay);
        flows.by_relay.insert(relay, (client, client_port));
        flows.order.push(relay);
        relay
    }
}

/// Readdresses the IP packet `packet` (checked on arrival: its lengths
/// hold) from `from` to `to`, with both checksums computed again.
fn rewrite(
    protocol: Protocol,
    packet: &mut [u8],
    from: (Ipv4Address, u16),
    to: (Ipv4Address, u16),
) {
    let mut ip = Ipv4Packet::new_unchecked(&mut *packet);
    ip.set_src_addr(from.0);
    ip.set_dst_addr(to.0);
    ip.fill_checksum();
    let header_len = usize::from(ip.header_len());
    let (source, destination) = (IpAddress::Ipv4(from.0), IpAddress::Ipv4(to.0));
    let payload = &mut packet[header_len..];
    match protocol {
        Protocol::Udp => {
            let mut udp = UdpPacket::new_unchecked(payload);
            udp.set_src_port(from.1);
            udp.set_dst_port(to.1);
            udp.fill_checksum(&source, &destination);
        }
        Protocol::Tcp => {
            let mut tcp = TcpPacket::new_unchecked(payload);
            tcp.set_src_port(from.1);
            tcp.set_dst_port(to.1);
            tcp.fill_checksum(&source, &destination);
        }
    }
}
