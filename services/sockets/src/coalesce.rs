//! Receive coalescing, as Linux's GRO does in software: in-order TCP
//! segments of one connection waiting in the device's queue are handed to
//! smoltcp as one segment, so a burst of full-sized segments costs one
//! pass through its TCP engine, one acknowledgment and one wakeup of the
//! reader instead of one per segment.
//!
//! Only plain data segments merge: IPv4 without options, the same
//! addresses and ports, the same acknowledgment number, window and TCP
//! options, sequence numbers that follow each other, and no flag but ACK
//! (PSH allowed on the segment that joins last). Every TCP segment's
//! checksum is verified when it enters the queue ([`verify`]), so the
//! stack's device tells smoltcp not to verify TCP checksums again; a
//! merged segment's TCP checksum is not recomputed (nothing reads it),
//! its IP header checksum is.

use alloc::vec::Vec;

use smoltcp::wire::{IpProtocol, Ipv4Packet, TcpPacket};

/// Largest IP packet a merge makes (the IPv4 length field's limit, less
/// a segment's worth of room).
const MERGED_LIMIT: usize = 60 * 1024;

/// Bytes of an IPv4 header without options.
const IPV4_HEADER: usize = 20;

/// Whether `packet`, if it is a TCP/IPv4 segment, has a correct checksum
/// (anything else is not this module's to judge: `true`).
pub(crate) fn verify(packet: &[u8]) -> bool {
    let Ok(ip) = Ipv4Packet::new_checked(packet) else {
        return true;
    };
    if ip.next_header() != IpProtocol::Tcp {
        return true;
    }
    if TcpPacket::new_checked(ip.payload()).is_err() {
        return false;
    }
    crate::checksum::verifies(
        ip.src_addr().octets(),
        ip.dst_addr().octets(),
        IpProtocol::Tcp.into(),
        ip.payload(),
    )
}

/// The parts of a data segment that decide whether it merges.
struct Data<'a> {
    addresses: &'a [u8],
    ports: &'a [u8],
    ack_number: &'a [u8],
    window: &'a [u8],
    options: &'a [u8],
    sequence: u32,
    payload: &'a [u8],
    /// Flags other than ACK and PSH are set, or ACK is not.
    unusual: bool,
    push: bool,
}

/// `packet` as a TCP data segment of an IPv4 packet without options, or
/// `None`.
fn data(packet: &[u8]) -> Option<Data<'_>> {
    let ip = Ipv4Packet::new_checked(packet).ok()?;
    if ip.next_header() != IpProtocol::Tcp || usize::from(ip.header_len()) != IPV4_HEADER {
        return None;
    }
    let total = usize::from(ip.total_len());
    let segment = packet.get(IPV4_HEADER..total)?;
    let tcp = TcpPacket::new_checked(segment).ok()?;
    let header_len = usize::from(tcp.header_len());
    let payload = &segment[header_len..];
    if payload.is_empty() {
        return None;
    }
    Some(Data {
        addresses: &packet[12..20],
        ports: &segment[0..4],
        ack_number: &segment[8..12],
        window: &segment[14..16],
        options: &segment[20..header_len],
        sequence: tcp.seq_number().0 as u32,
        payload,
        unusual: !tcp.ack() || tcp.syn() || tcp.fin() || tcp.rst() || tcp.urg(),
        push: tcp.psh(),
    })
}

/// Whether `next` continues `head` and can join it: both plain data
/// segments of the same connection, `next` starting where `head` ends,
/// `head` without PSH, the result within [`MERGED_LIMIT`].
pub(crate) fn continues(head: &[u8], next: &[u8]) -> bool {
    let (Some(first), Some(second)) = (data(head), data(next)) else {
        return false;
    };
    !first.unusual
        && !second.unusual
        && !first.push
        && first.addresses == second.addresses
        && first.ports == second.ports
        && first.ack_number == second.ack_number
        && first.window == second.window
        && first.options == second.options
        && first.sequence.wrapping_add(first.payload.len() as u32) == second.sequence
        && head.len() + second.payload.len() <= MERGED_LIMIT
}

/// Appends `next`'s data to `head` (the caller checked [`continues`]):
/// the IP length and header checksum follow, and PSH if `next` had it.
pub(crate) fn append(head: &mut Vec<u8>, next: &[u8]) {
    let Some(second) = data(next) else {
        return;
    };
    // Anything past the head's IP length (padding) is cut first.
    let head_len = Ipv4Packet::new_unchecked(&head[..]).total_len();
    head.truncate(usize::from(head_len));
    head.extend_from_slice(second.payload);
    let total = head.len();
    let mut ip = Ipv4Packet::new_unchecked(&mut head[..]);
    ip.set_total_len(total as u16);
    ip.fill_checksum();
    if second.push {
        TcpPacket::new_unchecked(&mut head[IPV4_HEADER..]).set_psh(true);
    }
}
