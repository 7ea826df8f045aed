//! SPIN's forwarder (SOSP'95 §5.3): datagrams for a port of this host are
//! relayed, in the kernel, to a port of another host, and its answers
//! relayed back to whoever sent them.
//!
//! Two handlers on `UDP.PacketArrived`, both with declarative guards: one
//! on the forwarded port, one on the range of relay ports. Each client
//! (address and port) gets a relay port of its own, so answers find their
//! way back. UDP only: forwarding TCP means splicing two connections,
//! which the socket engine would do (not here yet).

use alloc::{collections::BTreeMap, sync::Arc, vec, vec::Vec};

use dispatch::{BindingId, Field, Guard, Handler, Install, Predicate, Principal};
use smoltcp::wire::Ipv4Address;
use spin::Mutex;

use crate::{
    frame::{LayerView, Transport},
    graph::{PortArgs, DESTINATION_PORT},
    output::MAX_UDP_DATA,
    Network,
};

/// Relay ports, above the sockets' ephemeral range (32768-60999).
pub const RELAY_PORTS: core::ops::RangeInclusive<u16> = 61000..=61999;

/// Clients remembered at most; the oldest is forgotten for a new one.
const MAX_CLIENTS: usize = 256;

/// Who a relay port speaks for.
#[derive(Default)]
struct Flows {
    by_client: BTreeMap<(Ipv4Address, u16), u16>,
    by_relay: BTreeMap<u16, (Ipv4Address, u16)>,
    order: Vec<u16>,
    next: u16,
}

/// A forwarding of one UDP port to another host's port.
pub struct Forwarder {
    network: &'static Network,
    /// The port of this host that is forwarded.
    pub port: u16,
    /// Where its datagrams go.
    pub target: (Ipv4Address, u16),
    flows: Mutex<Flows>,
    bindings: Mutex<Vec<BindingId>>,
    /// Datagrams relayed (both ways).
    relayed: core::sync::atomic::AtomicU64,
}

impl Forwarder {
    /// Starts relaying datagrams for `port` to `target`.
    pub fn install(
        network: &'static Network,
        port: u16,
        target: (Ipv4Address, u16),
    ) -> Result<Arc<Forwarder>, dispatch::Error> {
        let forwarder = Arc::new(Forwarder {
            network,
            port,
            target,
            flows: Mutex::new(Flows {
                next: *RELAY_PORTS.start(),
                ..Flows::default()
            }),
            bindings: Mutex::new(Vec::new()),
            relayed: core::sync::atomic::AtomicU64::new(0),
        });
        let udp = &network.events().udp;
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
            Field::Param(1),
            u64::from(u32::from(target.0)),
        )));
        let first = udp.install(Principal::KERNEL, to_target)?;
        let second = match udp.install(Principal::KERNEL, to_client) {
            Ok(binding) => binding,
            Err(error) => {
                let _ = udp.remove(Principal::KERNEL, first);
                return Err(error);
            }
        };
        *forwarder.bindings.lock() = vec![first, second];
        Ok(forwarder)
    }

    /// Stops relaying (its handlers are removed).
    pub fn remove(&self) {
        for binding in self.bindings.lock().drain(..) {
            let _ = self.network.events().udp.remove(Principal::KERNEL, binding);
        }
    }

    /// Datagrams relayed so far.
    pub fn relayed(&self) -> u64 {
        self.relayed.load(core::sync::atomic::Ordering::Relaxed)
    }

    fn datagram(args: &PortArgs) -> Option<(Ipv4Address, u16, Vec<u8>)> {
        let view = args.0 .0.as_any().downcast_ref::<LayerView>()?;
        let ipv4 = view.frame.ipv4?;
        let Transport::Udp {
            source_port, data, ..
        } = ipv4.transport
        else {
            return None;
        };
        let bytes = view.frame.bytes().get(data.0..data.1)?;
        Some((ipv4.source, source_port, bytes.to_vec()))
    }

    fn relay_to_target(&self, args: &PortArgs) {
        let Some((client, client_port, data)) = Self::datagram(args) else {
            return;
        };
        if data.len() > MAX_UDP_DATA {
            return;
        }
        let relay = self.relay_port(client, client_port);
        if self
            .network
            .send_udp(relay, self.target.0, self.target.1, &data)
            .is_ok()
        {
            self.relayed
                .fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        }
    }

    fn relay_to_client(&self, args: &PortArgs) {
        let Some((_, source_port, data)) = Self::datagram(args) else {
            return;
        };
        if source_port != self.target.1 {
            return;
        }
        let relay = args.3 as u16;
        let client = self.flows.lock().by_relay.get(&relay).copied();
        if let Some((client, client_port)) = client {
            if self
                .network
                .send_udp(self.port, client, client_port, &data)
                .is_ok()
            {
                self.relayed
                    .fetch_add(1, core::sync::atomic::Ordering::Relaxed);
            }
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
