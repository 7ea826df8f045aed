//! A received frame and what its headers say, parsed once on arrival with
//! `smoltcp::wire`'s checked readers; and the per-layer views of it that
//! handlers receive as packets.
//!
//! Parsing checks every length and the IPv4 header and UDP checksums
//! before any layer sees the frame: a malformed frame is counted under
//! its reason and dropped, never half-delivered.

use alloc::{boxed::Box, sync::Arc};
use core::{any::Any, ops::Range};

use extension_interface::{PacketAccess, ReplyError};
use smoltcp::wire::{
    EthernetFrame, EthernetProtocol, Icmpv4Packet, IpAddress, IpProtocol, Ipv4Address, Ipv4Packet,
    TcpPacket, UdpPacket,
};

use crate::Network;

/// Bytes of an Ethernet header.
pub(crate) const ETHERNET_HEADER: usize = 14;

/// The bytes of a received frame, wherever the driver keeps them (the
/// kernel lends the DMA page the device wrote; tests use a `Vec`).
pub trait FrameBuffer: Send + Sync {
    /// The frame, destination MAC first.
    fn bytes(&self) -> &[u8];
}

impl FrameBuffer for alloc::vec::Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
}

/// Why a frame was dropped as malformed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// Shorter than an Ethernet header.
    Ethernet,
    /// An IPv4 header that is truncated, has a bad length or version.
    Ipv4Header,
    /// An IPv4 header whose checksum is wrong.
    Ipv4Checksum,
    /// A fragment (Spindle does not reassemble).
    Fragment,
    /// A UDP header that is truncated or has a bad length.
    Udp,
    /// A UDP checksum that is wrong.
    UdpChecksum,
    /// A TCP header that is truncated or has a bad data offset.
    Tcp,
    /// An ICMP message shorter than its header.
    Icmp,
    /// An ARP packet that is truncated or not Ethernet/IPv4.
    Arp,
}

/// The transport header of an IPv4 packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// ICMP, with the message type.
    Icmp {
        /// The ICMP type (8 = echo request).
        kind: u8,
    },
    /// UDP, with its ports and the data's range in the frame.
    Udp {
        /// Source port.
        source_port: u16,
        /// Destination port.
        destination_port: u16,
        /// Where the datagram's data lies in the frame.
        data: (usize, usize),
    },
    /// TCP, with its ports.
    Tcp {
        /// Source port.
        source_port: u16,
        /// Destination port.
        destination_port: u16,
    },
    /// Another protocol (its number).
    Other(u8),
}

/// The IPv4 header of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Info {
    /// Where the IP packet lies in the frame (header through payload;
    /// Ethernet padding excluded).
    pub packet: (usize, usize),
    /// Offset of the payload (after the header and its options).
    pub payload: usize,
    /// Source address.
    pub source: Ipv4Address,
    /// Destination address.
    pub destination: Ipv4Address,
    /// The transport header.
    pub transport: Transport,
}

/// A received frame with its parsed headers.
pub struct Frame {
    pub(crate) network: &'static Network,
    buffer: Box<dyn FrameBuffer>,
    /// The EtherType.
    pub ethertype: u16,
    /// The source MAC address.
    pub source_mac: [u8; 6],
    /// Offset of the Ethernet payload.
    pub(crate) payload: usize,
    /// The IPv4 header, for IPv4 frames.
    pub ipv4: Option<Ipv4Info>,
    /// Whether this host is sending the frame (a send event's packet),
    /// rather than receiving it.
    pub outgoing: bool,
}

impl Frame {
    /// Parses `buffer`, checking lengths and checksums.
    pub(crate) fn parse(
        network: &'static Network,
        buffer: Box<dyn FrameBuffer>,
    ) -> Result<Frame, Malformed> {
        let bytes = buffer.bytes();
        let ethernet = EthernetFrame::new_checked(bytes).map_err(|_| Malformed::Ethernet)?;
        let ethertype = u16::from(ethernet.ethertype());
        let source_mac = ethernet.src_addr().0;
        let payload = EthernetFrame::<&[u8]>::header_len();
        let ipv4 = if ethernet.ethertype() == EthernetProtocol::Ipv4 {
            Some(parse_ipv4(bytes, payload)?)
        } else {
            None
        };
        Ok(Frame {
            network,
            buffer,
            ethertype,
            source_mac,
            payload,
            ipv4,
            outgoing: false,
        })
    }

    /// An IP packet this host is about to send, parsed as a received
    /// frame would be so that send handlers see the same layer views as
    /// receive handlers. The packet starts at byte [`ETHERNET_HEADER`] of
    /// `frame`, behind room for an Ethernet header (written here: no
    /// addresses, type IPv4). `Err` if the packet is malformed.
    pub(crate) fn outgoing(
        network: &'static Network,
        mut frame: alloc::vec::Vec<u8>,
    ) -> Result<Frame, Malformed> {
        let header = frame
            .get_mut(..ETHERNET_HEADER)
            .ok_or(Malformed::Ethernet)?;
        header.fill(0);
        header[12..].copy_from_slice(&u16::from(EthernetProtocol::Ipv4).to_be_bytes());
        let mut frame = Frame::parse(network, Box::new(frame))?;
        frame.outgoing = true;
        Ok(frame)
    }

    /// The whole frame.
    pub fn bytes(&self) -> &[u8] {
        self.buffer.bytes()
    }

    /// The IP packet (header through payload), if this is IPv4.
    pub fn ip_packet(&self) -> Option<&[u8]> {
        let ipv4 = self.ipv4?;
        self.bytes().get(ipv4.packet.0..ipv4.packet.1)
    }
}

fn parse_ipv4(bytes: &[u8], start: usize) -> Result<Ipv4Info, Malformed> {
    let rest = &bytes[start..];
    let packet = Ipv4Packet::new_checked(rest).map_err(|_| Malformed::Ipv4Header)?;
    if packet.version() != 4 {
        return Err(Malformed::Ipv4Header);
    }
    if !packet.verify_checksum() {
        return Err(Malformed::Ipv4Checksum);
    }
    if packet.more_frags() || packet.frag_offset() != 0 {
        return Err(Malformed::Fragment);
    }
    let header_len = usize::from(packet.header_len());
    let total_len = usize::from(packet.total_len());
    let source = packet.src_addr();
    let destination = packet.dst_addr();
    let payload = &rest[header_len..total_len];
    let payload_start = start + header_len;
    let transport = match packet.next_header() {
        IpProtocol::Icmp => {
            let icmp = Icmpv4Packet::new_checked(payload).map_err(|_| Malformed::Icmp)?;
            Transport::Icmp {
                kind: u8::from(icmp.msg_type()),
            }
        }
        IpProtocol::Udp => {
            let udp = UdpPacket::new_checked(payload).map_err(|_| Malformed::Udp)?;
            let (from, to) = (IpAddress::Ipv4(source), IpAddress::Ipv4(destination));
            // A zero checksum means "none" in UDP over IPv4.
            if udp.checksum() != 0 && !udp.verify_checksum(&from, &to) {
                return Err(Malformed::UdpChecksum);
            }
            let data_start = payload_start + 8;
            Transport::Udp {
                source_port: udp.src_port(),
                destination_port: udp.dst_port(),
                data: (data_start, payload_start + usize::from(udp.len())),
            }
        }
        IpProtocol::Tcp => {
            let tcp = TcpPacket::new_checked(payload).map_err(|_| Malformed::Tcp)?;
            Transport::Tcp {
                source_port: tcp.src_port(),
                destination_port: tcp.dst_port(),
            }
        }
        other => Transport::Other(u8::from(other)),
    };
    Ok(Ipv4Info {
        packet: (start, start + total_len),
        payload: payload_start,
        source,
        destination,
        transport,
    })
}

/// The layer a packet view belongs to: what "the packet" is for the
/// handlers of that layer's event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    /// The whole Ethernet frame.
    Ethernet,
    /// The IP packet, header included.
    Ip,
    /// The ICMP message, header included.
    Icmp,
    /// The UDP datagram's data.
    Udp,
    /// The TCP segment, header included.
    Tcp,
}

/// A frame as one layer's handlers see it (a [`PacketAccess`]).
pub struct LayerView {
    /// The frame.
    pub frame: Arc<Frame>,
    /// The layer.
    pub layer: Layer,
}

impl LayerView {
    fn range(&self) -> Range<usize> {
        let whole = 0..self.frame.bytes().len();
        let Some(ipv4) = self.frame.ipv4 else {
            return whole;
        };
        match (self.layer, ipv4.transport) {
            (Layer::Ethernet, _) => whole,
            (Layer::Ip, _) => ipv4.packet.0..ipv4.packet.1,
            (Layer::Udp, Transport::Udp { data, .. }) => data.0..data.1,
            (Layer::Icmp | Layer::Tcp | Layer::Udp, _) => ipv4.payload..ipv4.packet.1,
        }
    }
}

impl PacketAccess for LayerView {
    fn len(&self) -> usize {
        self.range().len()
    }

    fn read(&self, offset: usize, out: &mut [u8]) -> usize {
        let range = self.range();
        let bytes = &self.frame.bytes()[range];
        let Some(available) = bytes.get(offset..) else {
            return 0;
        };
        let count = available.len().min(out.len());
        out[..count].copy_from_slice(&available[..count]);
        count
    }

    fn reply(&self, data: &[u8]) -> Result<(), ReplyError> {
        if self.frame.outgoing {
            return Err(ReplyError::NoReply);
        }
        let (Layer::Udp, Some(ipv4)) = (self.layer, self.frame.ipv4) else {
            return Err(ReplyError::NoReply);
        };
        let Transport::Udp {
            source_port,
            destination_port,
            ..
        } = ipv4.transport
        else {
            return Err(ReplyError::NoReply);
        };
        self.frame
            .network
            .send_udp(destination_port, ipv4.source, source_port, data)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
