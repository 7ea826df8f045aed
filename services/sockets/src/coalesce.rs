//! Receive coalescing, as Linux's GRO does in software: an in-order TCP
//! segment arriving right behind the one before it in the device's queue
//! joins it there, so a burst of full-sized segments reaches smoltcp as
//! one segment and costs one pass through its TCP engine, one
//! acknowledgment and one wakeup of the reader instead of one per
//! segment, and its bytes one copy instead of two before smoltcp's.
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
pub(crate) const MERGED_LIMIT: usize = 60 * 1024;

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
/// Returns the bytes of data appended.
pub(crate) fn append(head: &mut Vec<u8>, next: &[u8]) -> usize {
    let Some(second) = data(next) else {
        return 0;
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
    second.payload.len()
}

/// Splits the last `last` bytes of data off a merged segment `head`
/// into a segment of their own, written into `tail` (emptied first):
/// smoltcp then sees a run as two segments and acknowledges it at once,
/// where after one segment, whatever its size, its delayed ACK would
/// wait. The tail takes the PSH flag. `head` must be a merged segment
/// (from [`append`]) with more than `last` bytes of data.
pub(crate) fn split_last(head: &mut Vec<u8>, last: usize, tail: &mut Vec<u8>) {
    tail.clear();
    let Some(data) = data(head) else {
        return;
    };
    if last == 0 || last >= data.payload.len() {
        return;
    }
    let headers = head.len() - data.payload.len();
    let kept = data.payload.len() - last;
    let sequence = data.sequence.wrapping_add(kept as u32);
    let push = data.push;
    tail.extend_from_slice(&head[..headers]);
    tail.extend_from_slice(&head[headers + kept..]);
    head.truncate(headers + kept);
    for (packet, is_tail) in [(&mut *head, false), (&mut *tail, true)] {
        let total = packet.len();
        let mut ip = Ipv4Packet::new_unchecked(&mut packet[..]);
        ip.set_total_len(total as u16);
        ip.fill_checksum();
        let mut tcp = TcpPacket::new_unchecked(&mut packet[IPV4_HEADER..]);
        tcp.set_psh(push && is_tail);
        if is_tail {
            tcp.set_seq_number(smoltcp::wire::TcpSeqNumber(sequence as i32));
        }
    }
}
