//! ARP: the neighbour table (IPv4 address → MAC), answering requests for
//! our address, asking for unknown next hops, and holding the few packets
//! that wait for an answer.

use alloc::{collections::BTreeMap, collections::VecDeque, vec::Vec};

use smoltcp::wire::{
    ArpOperation, ArpPacket, ArpRepr, EthernetAddress, EthernetProtocol, Ipv4Address,
};

use crate::{frame::Frame, Network};

/// Neighbours remembered at most (the oldest entry goes first).
const TABLE_LIMIT: usize = 256;
/// Packets waiting for a neighbour's address at most (the oldest is
/// dropped and counted).
const WAITING_LIMIT: usize = 32;

/// The neighbour table and the packets waiting on it.
#[derive(Default)]
pub struct Neighbors {
    table: BTreeMap<Ipv4Address, [u8; 6]>,
    /// Insertion order of `table`, for eviction.
    order: VecDeque<Ipv4Address>,
    /// (next hop, IP packet) waiting for the next hop's MAC.
    waiting: VecDeque<(Ipv4Address, Vec<u8>)>,
}

impl Neighbors {
    /// The MAC of `address`, if known.
    pub fn lookup(&self, address: Ipv4Address) -> Option<[u8; 6]> {
        self.table.get(&address).copied()
    }

    /// Records `address` at `mac`; returns the packets that waited for it.
    pub fn learn(&mut self, address: Ipv4Address, mac: [u8; 6]) -> Vec<Vec<u8>> {
        if self.table.insert(address, mac).is_none() {
            self.order.push_back(address);
            if self.order.len() > TABLE_LIMIT {
                if let Some(oldest) = self.order.pop_front() {
                    self.table.remove(&oldest);
                }
            }
        }
        let mut released = Vec::new();
        self.waiting.retain(|(hop, packet)| {
            if *hop == address {
                released.push(packet.clone());
                false
            } else {
                true
            }
        });
        released
    }

    /// Keeps `packet` until `next_hop` answers; `true` if an older packet
    /// had to be dropped for room.
    pub fn wait(&mut self, next_hop: Ipv4Address, packet: Vec<u8>) -> bool {
        let dropped = self.waiting.len() >= WAITING_LIMIT;
        if dropped {
            self.waiting.pop_front();
        }
        self.waiting.push_back((next_hop, packet));
        dropped
    }

    /// Number of neighbours known.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether no neighbour is known.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

/// An ARP frame arrived: learn the sender if the request concerns us (or
/// it is known already), answer requests for our address, and send what
/// waited for the sender.
pub(crate) fn arrived(network: &'static Network, frame: &Frame) {
    let config = network.config;
    let Some(bytes) = frame.bytes().get(frame.payload..) else {
        return;
    };
    let repr = ArpPacket::new_checked(bytes)
        .ok()
        .and_then(|packet| ArpRepr::parse(&packet).ok());
    let Some(ArpRepr::EthernetIpv4 {
        operation,
        source_hardware_addr,
        source_protocol_addr,
        target_protocol_addr,
        ..
    }) = repr
    else {
        network.stats.malformed(crate::frame::Malformed::Arp);
        return;
    };
    let for_us = target_protocol_addr == config.address;
    let released = {
        let mut neighbors = network.neighbors.lock();
        if for_us || neighbors.lookup(source_protocol_addr).is_some() {
            neighbors.learn(source_protocol_addr, source_hardware_addr.0)
        } else {
            Vec::new()
        }
    };
    if for_us && operation == ArpOperation::Request {
        let reply = ArpRepr::EthernetIpv4 {
            operation: ArpOperation::Reply,
            source_hardware_addr: EthernetAddress(config.mac),
            source_protocol_addr: config.address,
            target_hardware_addr: source_hardware_addr,
            target_protocol_addr: source_protocol_addr,
        };
        network.send_arp(&reply, source_hardware_addr.0);
        network.stats.add(&network.stats.arp_answered, 1);
    }
    for packet in released {
        network.transmit_ip(source_hardware_addr.0, &packet);
    }
}

impl Network {
    /// Sends an ARP packet to `destination` (a MAC, or broadcast).
    pub(crate) fn send_arp(&self, repr: &ArpRepr, destination: [u8; 6]) {
        let len = repr.buffer_len();
        self.send_frame(destination, EthernetProtocol::Arp, len, &mut |payload| {
            repr.emit(&mut ArpPacket::new_unchecked(payload));
        });
    }

    /// Asks who has `address`.
    pub(crate) fn request_address(&self, address: Ipv4Address) {
        let request = ArpRepr::EthernetIpv4 {
            operation: ArpOperation::Request,
            source_hardware_addr: EthernetAddress(self.config.mac),
            source_protocol_addr: self.config.address,
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: address,
        };
        self.send_arp(&request, [0xff; 6]);
        self.stats.add(&self.stats.arp_requested, 1);
    }

    /// Neighbours known.
    pub fn neighbors(&self) -> usize {
        self.neighbors.lock().len()
    }
}
