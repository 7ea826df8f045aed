//! Output: Ethernet frames through the [`Link`](crate::Link), IPv4
//! packets routed to their next hop (the destination on our network, else
//! the gateway), UDP datagrams and whole IP packets from the sockets.
//!
//! A frame is written in place in the page the device sends from; only a
//! packet that must wait for ARP is copied.

use extension_interface::ReplyError;
use smoltcp::{
    phy::ChecksumCapabilities,
    wire::{
        EthernetAddress, EthernetFrame, EthernetProtocol, EthernetRepr, IpAddress, IpProtocol,
        Ipv4Address, Ipv4Packet, Ipv4Repr, UdpPacket, UdpRepr,
    },
};

use alloc::sync::Arc;

use crate::{
    frame::{Frame, ETHERNET_HEADER},
    Network,
};

/// Largest IP packet a frame carries (Ethernet's MTU).
pub const MTU: usize = 1500;
/// Bytes of an IPv4 header without options.
const IPV4_HEADER: usize = 20;
/// Bytes of a UDP header.
const UDP_HEADER: usize = 8;
/// Largest UDP data in one frame.
pub const MAX_UDP_DATA: usize = MTU - IPV4_HEADER - UDP_HEADER;
/// Hop limit of packets we originate.
const TTL: u8 = 64;

impl Network {
    /// Sends an Ethernet frame with `len` bytes of payload written by
    /// `fill`; `false` if the device refused it.
    pub(crate) fn send_frame(
        &self,
        destination: [u8; 6],
        ethertype: EthernetProtocol,
        len: usize,
        fill: &mut dyn FnMut(&mut [u8]),
    ) -> bool {
        let header = EthernetRepr {
            src_addr: EthernetAddress(self.config.mac),
            dst_addr: EthernetAddress(destination),
            ethertype,
        };
        let sent = self.link.transmit(ETHERNET_HEADER + len, &mut |frame| {
            header.emit(&mut EthernetFrame::new_unchecked(&mut *frame));
            fill(&mut frame[ETHERNET_HEADER..]);
        });
        let counter = if sent {
            &self.stats.frames_sent
        } else {
            &self.stats.send_failed
        };
        self.stats.add(counter, 1);
        sent
    }

    /// Sends a complete IP packet to the neighbour at `mac`.
    pub(crate) fn transmit_ip(&self, mac: [u8; 6], packet: &[u8]) -> bool {
        self.send_frame(mac, EthernetProtocol::Ipv4, packet.len(), &mut |payload| {
            payload.copy_from_slice(packet)
        })
    }

    /// The next hop towards `destination`: itself on our network (or a
    /// broadcast), else the gateway.
    fn next_hop(&self, destination: Ipv4Address) -> Ipv4Address {
        if self.config.is_local(destination) || destination == Ipv4Address::BROADCAST {
            destination
        } else {
            self.config.gateway
        }
    }

    /// Sends an IP packet of `len` bytes that `fill` writes (header
    /// included) to `destination`, unless a handler of a send event
    /// refuses it. `false` if it was not sent.
    ///
    /// While no extension handles a send event (the usual case), the
    /// events cost one test and the packet is written in place; otherwise
    /// it is built apart, shown to the send events' handlers, and copied
    /// to the device if they let it go.
    pub(crate) fn route(
        &'static self,
        destination: Ipv4Address,
        len: usize,
        fill: &mut dyn FnMut(&mut [u8]),
    ) -> bool {
        if len > MTU {
            return false;
        }
        if !self.events.send_is_observed() {
            return self.route_unobserved(destination, len, fill);
        }
        let mut bytes = alloc::vec![0; ETHERNET_HEADER + len];
        fill(&mut bytes[ETHERNET_HEADER..]);
        let frame = match Frame::outgoing(self, bytes) {
            Ok(frame) => Arc::new(frame),
            Err(reason) => {
                self.stats.malformed(reason);
                return false;
            }
        };
        if !crate::graph::sending(&frame) {
            self.stats.add(&self.stats.send_refused, 1);
            return false;
        }
        let Some(packet) = frame.ip_packet() else {
            return false;
        };
        self.route_unobserved(destination, len, &mut |out| out.copy_from_slice(packet))
    }

    /// [`Network::route`] without the send events: in place when the next
    /// hop's MAC is known, else kept (copied) while ARP asks for it.
    fn route_unobserved(
        &self,
        destination: Ipv4Address,
        len: usize,
        fill: &mut dyn FnMut(&mut [u8]),
    ) -> bool {
        let hop = self.next_hop(destination);
        let broadcast = hop == Ipv4Address::BROADCAST
            || (self.config.accepts(hop) && hop != self.config.address);
        let mac = if broadcast {
            Some([0xff; 6])
        } else {
            self.neighbors.lock().lookup(hop)
        };
        match mac {
            Some(mac) => self.send_frame(mac, EthernetProtocol::Ipv4, len, fill),
            None => {
                let mut packet = alloc::vec![0; len];
                fill(&mut packet);
                if self.neighbors.lock().wait(hop, packet) {
                    self.stats.add(&self.stats.arp_waiting_dropped, 1);
                }
                self.request_address(hop);
                true
            }
        }
    }

    /// Sends an IP packet from the sockets (header included, addressed by
    /// them). `false` if it is malformed or too long.
    pub fn send_ip_packet(&'static self, packet: &[u8]) -> bool {
        let Ok(header) = Ipv4Packet::new_checked(packet) else {
            return false;
        };
        let destination = header.dst_addr();
        self.route(destination, packet.len(), &mut |out| {
            out.copy_from_slice(packet)
        })
    }

    /// Sends an IPv4 packet from our address with `payload_len` bytes of
    /// `protocol` payload that `fill` writes.
    pub(crate) fn send_ip(
        &'static self,
        destination: Ipv4Address,
        protocol: IpProtocol,
        payload_len: usize,
        fill: &mut dyn FnMut(&mut [u8]),
    ) -> bool {
        let header = Ipv4Repr {
            src_addr: self.config.address,
            dst_addr: destination,
            next_header: protocol,
            payload_len,
            hop_limit: TTL,
        };
        let ident = self
            .next_ident
            .fetch_add(1, core::sync::atomic::Ordering::Relaxed) as u16;
        self.route(destination, IPV4_HEADER + payload_len, &mut |packet| {
            let mut ip = Ipv4Packet::new_unchecked(&mut *packet);
            header.emit(&mut ip, &ChecksumCapabilities::default());
            ip.set_ident(ident);
            ip.fill_checksum();
            fill(&mut packet[IPV4_HEADER..]);
        })
    }

    /// Sends a UDP datagram of `data` from our `source_port` to
    /// `destination`:`destination_port`.
    pub fn send_udp(
        &'static self,
        source_port: u16,
        destination: Ipv4Address,
        destination_port: u16,
        data: &[u8],
    ) -> Result<(), ReplyError> {
        if data.len() > MAX_UDP_DATA {
            return Err(ReplyError::TooLong);
        }
        let header = UdpRepr {
            src_port: source_port,
            dst_port: destination_port,
        };
        let (from, to) = (
            IpAddress::Ipv4(self.config.address),
            IpAddress::Ipv4(destination),
        );
        let sent = self.send_ip(
            destination,
            IpProtocol::Udp,
            UDP_HEADER + data.len(),
            &mut |out| {
                header.emit(
                    &mut UdpPacket::new_unchecked(&mut *out),
                    &from,
                    &to,
                    data.len(),
                    |payload| payload.copy_from_slice(data),
                    &ChecksumCapabilities::default(),
                );
            },
        );
        if sent {
            Ok(())
        } else {
            Err(ReplyError::NotSent)
        }
    }
}
