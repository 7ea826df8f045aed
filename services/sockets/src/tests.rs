//! Host tests: sockets talking over the loopback interface.

extern crate std;

use alloc::sync::Arc;
use core::net::{Ipv4Addr, SocketAddrV4};
use std::{
    sync::{
        atomic::{AtomicU64, Ordering},
        Mutex,
    },
    vec::Vec,
};

use crate::{Kind, Shutdown, Socket, SocketError, Stack};

/// A clock that advances a millisecond each time it is read.
fn ticking() -> u64 {
    static NOW: AtomicU64 = AtomicU64::new(0);
    NOW.fetch_add(1, Ordering::Relaxed)
}

fn loopback(port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)
}

/// Retries `attempt` while it would block (the stack moves on each try).
fn until_ready<T>(mut attempt: impl FnMut() -> Result<T, SocketError>) -> Result<T, SocketError> {
    for _ in 0..1000 {
        match attempt() {
            Err(SocketError::WouldBlock) => continue,
            other => return other,
        }
    }
    Err(SocketError::WouldBlock)
}

#[test]
fn udp_datagrams_go_both_ways_and_a_connected_socket_hears_only_its_peer() {
    let stack = Arc::new(Stack::new(ticking));
    let server = Socket::new(stack.clone(), Kind::Datagram);
    server.bind(loopback(0)).unwrap();
    let server_address = server.local_address();
    assert!(
        server_address.port() >= 32768,
        "an ephemeral port: {server_address}"
    );
    let client = Socket::new(stack.clone(), Kind::Datagram);
    client.connect(server_address).unwrap();
    assert_eq!(client.send(b"0123456789abcdef", None), Ok(16));
    let mut buffer = [0u8; 64];
    let (count, whole, from) = until_ready(|| server.receive(&mut buffer, false)).unwrap();
    assert_eq!((&buffer[..count], whole), (&b"0123456789abcdef"[..], 16));
    let from = from.unwrap();
    assert_eq!(from, client.local_address());
    assert_eq!(server.send(b"reply", Some(from)), Ok(5));
    let (count, _, _) = until_ready(|| client.receive(&mut buffer, false)).unwrap();
    assert_eq!(&buffer[..count], b"reply");
    // A third socket's datagram is not taken by the connected client.
    let stranger = Socket::new(stack.clone(), Kind::Datagram);
    stranger.send(b"x", Some(client.local_address())).unwrap();
    stack.poll();
    assert_eq!(
        client.receive(&mut buffer, false),
        Err(SocketError::WouldBlock)
    );
    // A datagram longer than the buffer is cut, its length told.
    client.send(&[7u8; 100], None).unwrap();
    let mut small = [0u8; 10];
    let (count, whole, _) = until_ready(|| server.receive(&mut small, false)).unwrap();
    assert_eq!((count, whole), (10, 100));
}

#[test]
fn ports_and_addresses_are_checked() {
    let stack = Arc::new(Stack::new(ticking));
    let first = Socket::new(stack.clone(), Kind::Datagram);
    first.bind(loopback(5000)).unwrap();
    let second = Socket::new(stack.clone(), Kind::Datagram);
    assert_eq!(second.bind(loopback(5000)), Err(SocketError::AddressInUse));
    assert_eq!(
        second.bind(SocketAddrV4::new(Ipv4Addr::new(10, 0, 2, 15), 1)),
        Err(SocketError::AddressNotAvailable)
    );
    assert_eq!(
        second.send(b"x", Some(SocketAddrV4::new(Ipv4Addr::new(8, 8, 8, 8), 53))),
        Err(SocketError::Unreachable)
    );
    assert_eq!(second.send(b"x", None), Err(SocketError::NoDestination));
    drop(first);
    second
        .bind(loopback(5000))
        .expect("a closed socket's port is free again");
    assert_eq!(second.bind(loopback(5001)), Err(SocketError::AlreadyBound));
}

#[test]
fn tcp_connects_transfers_both_ways_and_closes() {
    let stack = Arc::new(Stack::new(ticking));
    let listener = Socket::new(stack.clone(), Kind::Stream);
    listener.bind(loopback(8080)).unwrap();
    listener.listen(4).unwrap();
    assert_eq!(listener.accept().err(), Some(SocketError::WouldBlock));
    let client = Socket::new(stack.clone(), Kind::Stream);
    assert_eq!(client.connect(loopback(8080)), Err(SocketError::InProgress));
    until_ready(|| client.connection()).unwrap();
    assert!(
        listener.readiness().readable,
        "a connection waits to be accepted"
    );
    let (server, peer) = until_ready(|| listener.accept()).unwrap();
    assert_eq!(peer, client.local_address());
    assert_eq!(client.peer_address(), Ok(loopback(8080)));
    // 200 KiB each way, more than the buffers hold: sends and receives
    // take turns, as two processes would.
    let data: alloc::vec::Vec<u8> = (0..200 * 1024).map(|i| (i * 7 % 251) as u8).collect();
    let mut received = alloc::vec::Vec::new();
    let mut sent = 0;
    let mut buffer = [0u8; 4096];
    while received.len() < data.len() {
        if sent < data.len() {
            if let Ok(count) = client.send(&data[sent..], None) {
                sent += count;
            }
        }
        if let Ok((count, _, _)) = server.receive(&mut buffer, false) {
            received.extend_from_slice(&buffer[..count]);
        }
    }
    assert!(received == data, "the bytes arrive intact and in order");
    assert_eq!(server.send(b"back", None), Ok(4));
    let (count, _, _) = until_ready(|| client.receive(&mut buffer, false)).unwrap();
    assert_eq!(&buffer[..count], b"back");
    // The client shuts its sending down: the server reads the end.
    client.shutdown(Shutdown::Write).unwrap();
    assert_eq!(
        until_ready(|| server.receive(&mut buffer, false)).map(|r| r.0),
        Ok(0)
    );
    assert_eq!(client.send(b"more", None), Err(SocketError::BrokenPipe));
    drop(server);
    drop(client);
    drop(listener);
    for _ in 0..100 {
        stack.poll();
    }
    assert!(
        stack.socket_count() <= 2,
        "closed sockets go (at most two in TIME-WAIT): {} left",
        stack.socket_count()
    );
}

#[test]
fn a_connection_to_a_closed_port_is_refused() {
    let stack = Arc::new(Stack::new(ticking));
    let client = Socket::new(stack.clone(), Kind::Stream);
    assert_eq!(client.connect(loopback(9)), Err(SocketError::InProgress));
    assert_eq!(
        until_ready(|| client.connection()),
        Err(SocketError::Refused)
    );
    assert_eq!(client.take_error(), Some(SocketError::Refused));
    assert_eq!(client.take_error(), None, "reported once");
}

#[test]
fn a_stream_closed_with_bytes_still_to_send_delivers_them_all() {
    let stack = Arc::new(Stack::new(ticking));
    let listener = Socket::new(stack.clone(), Kind::Stream);
    listener.bind(loopback(7000)).unwrap();
    listener.listen(1).unwrap();
    let client = Socket::new(stack.clone(), Kind::Stream);
    let _ = client.connect(loopback(7000));
    until_ready(|| client.connection()).unwrap();
    let (server, _) = until_ready(|| listener.accept()).unwrap();
    // The server end shuts its sending down first, as `nc -l` does when
    // its input ends.
    server.shutdown(Shutdown::Write).unwrap();
    let data: alloc::vec::Vec<u8> = (0..300 * 1024).map(|i| (i % 253) as u8).collect();
    let mut sent = 0;
    let mut received = alloc::vec::Vec::new();
    let mut buffer = [0u8; 8192];
    while sent < data.len() {
        if let Ok(count) = client.send(&data[sent..], None) {
            sent += count;
        }
        if let Ok((count, _, _)) = server.receive(&mut buffer, false) {
            received.extend_from_slice(&buffer[..count]);
        }
    }
    drop(client);
    loop {
        match server.receive(&mut buffer, false) {
            Ok((0, _, _)) => break,
            Ok((count, _, _)) => received.extend_from_slice(&buffer[..count]),
            Err(SocketError::WouldBlock) => continue,
            Err(error) => panic!("receive: {error}"),
        }
    }
    assert_eq!(
        received.len(),
        data.len(),
        "every byte sent before the close arrives"
    );
    assert!(received == data);
}

/// With an interface attached, a datagram to a remote host leaves through
/// its output from the interface's address, and an answer coming in
/// through `Stack::receive` reaches the socket; loopback still loops.
#[test]
fn datagrams_to_remote_hosts_go_through_the_attached_interface() {
    let stack = Arc::new(Stack::new(ticking));
    let remote = SocketAddrV4::new(Ipv4Addr::new(10, 0, 2, 2), 5000);
    let socket = Socket::new(stack.clone(), Kind::Datagram);
    assert_eq!(
        socket.send(b"early", Some(remote)),
        Err(SocketError::Unreachable)
    );
    let sent = attach_recording(&stack);
    assert_eq!(socket.send(b"hello", Some(remote)), Ok(5));
    let packets = core::mem::take(&mut *sent.lock().unwrap());
    assert_eq!(packets.len(), 1);
    let packet = &packets[0];
    assert_eq!(
        &packet[12..16],
        &[10, 0, 2, 15],
        "from the interface's address"
    );
    assert_eq!(&packet[16..20], &[10, 0, 2, 2]);
    assert_eq!(&packet[28..], b"hello");
    let local_port = u16::from_be_bytes([packet[20], packet[21]]);
    // The answer: the same packet with addresses and ports swapped.
    let mut answer = packet.clone();
    answer[12..16].copy_from_slice(&[10, 0, 2, 2]);
    answer[16..20].copy_from_slice(&[10, 0, 2, 15]);
    answer[20..22].copy_from_slice(&5000u16.to_be_bytes());
    answer[22..24].copy_from_slice(&local_port.to_be_bytes());
    answer[26..28].copy_from_slice(&[0, 0]); // no UDP checksum
    answer[10..12].copy_from_slice(&[0, 0]);
    let checksum = ip_checksum(&answer[..20]);
    answer[10..12].copy_from_slice(&checksum.to_be_bytes());
    stack.receive(&answer);
    stack.poll();
    let mut buffer = [0; 16];
    let (len, _, from) = until_ready(|| socket.receive(&mut buffer, false)).unwrap();
    assert_eq!(&buffer[..len], b"hello");
    assert_eq!(from, Some(remote));
    // Loopback is still loopback.
    let other = Socket::new(stack.clone(), Kind::Datagram);
    other.bind(loopback(0)).unwrap();
    assert_eq!(socket.send(b"local", Some(other.local_address())), Ok(5));
    assert!(
        sent.lock().unwrap().is_empty(),
        "nothing left through the interface"
    );
}

/// Attaches the interface 10.0.2.15/24 (router 10.0.2.2) to `stack`,
/// its output recorded: the packets sent through it.
fn attach_recording(stack: &Stack) -> Arc<Mutex<Vec<Vec<u8>>>> {
    let sent: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let output = sent.clone();
    stack.attach_interface(
        Ipv4Addr::new(10, 0, 2, 15),
        24,
        Ipv4Addr::new(10, 0, 2, 2),
        Arc::new(move |packet: &[u8]| {
            output.lock().unwrap().push(packet.to_vec());
            true
        }),
    );
    sent
}

fn ip_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|pair| u32::from(u16::from_be_bytes([pair[0], pair[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A TCP/IPv4 packet from 10.0.2.2:80 to 10.0.2.15:`port`, checksums
/// filled.
fn segment_from_remote(
    port: u16,
    sequence: u32,
    ack: u32,
    flags: u8,
    data: &[u8],
) -> std::vec::Vec<u8> {
    use smoltcp::wire::{IpAddress, IpProtocol, Ipv4Packet, TcpPacket, TcpSeqNumber};
    let (remote, local) = (Ipv4Addr::new(10, 0, 2, 2), Ipv4Addr::new(10, 0, 2, 15));
    let mut packet = std::vec![0u8; 40 + data.len()];
    {
        let mut ip = Ipv4Packet::new_unchecked(&mut packet[..]);
        ip.set_version(4);
        ip.set_header_len(20);
        ip.set_total_len((40 + data.len()) as u16);
        ip.set_hop_limit(64);
        ip.set_next_header(IpProtocol::Tcp);
        ip.set_src_addr(remote);
        ip.set_dst_addr(local);
        ip.fill_checksum();
    }
    let mut tcp = TcpPacket::new_unchecked(&mut packet[20..]);
    tcp.set_src_port(80);
    tcp.set_dst_port(port);
    tcp.set_seq_number(TcpSeqNumber(sequence as i32));
    tcp.set_ack_number(TcpSeqNumber(ack as i32));
    tcp.set_header_len(20);
    tcp.set_syn(flags & 0x02 != 0);
    tcp.set_psh(flags & 0x08 != 0);
    tcp.set_ack(flags & 0x10 != 0);
    tcp.set_window_len(65535);
    tcp.payload_mut().copy_from_slice(data);
    tcp.fill_checksum(&IpAddress::Ipv4(remote), &IpAddress::Ipv4(local));
    packet
}

/// (local port, sequence, acknowledgment, flags) of a TCP packet sent.
fn sent_segment(packet: &[u8]) -> (u16, u32, u32, u8) {
    let tcp = &packet[20..];
    (
        u16::from_be_bytes([tcp[0], tcp[1]]),
        u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]),
        u32::from_be_bytes([tcp[8], tcp[9], tcp[10], tcp[11]]),
        tcp[13],
    )
}

/// A TCP connection from the stack to 10.0.2.2:80 over the recorded
/// interface, the remote's side played by hand (its SYN-ACK with initial
/// sequence number `their_isn`): the socket, its local port and its
/// initial sequence number; what it sent so far is taken.
fn connected_to_remote(
    stack: &Arc<Stack>,
    sent: &Mutex<Vec<Vec<u8>>>,
    their_isn: u32,
) -> (Socket, u16, u32) {
    let take = || core::mem::take(&mut *sent.lock().unwrap());
    let client = Socket::new(stack.clone(), Kind::Stream);
    let remote = SocketAddrV4::new(Ipv4Addr::new(10, 0, 2, 2), 80);
    assert_eq!(client.connect(remote), Err(SocketError::InProgress));
    stack.poll();
    let syn = take();
    let (port, our_isn, _, flags) = sent_segment(&syn[0]);
    assert_eq!(flags & 0x02, 0x02, "a SYN first");
    stack.receive(&segment_from_remote(
        port,
        their_isn,
        our_isn + 1,
        0x12,
        &[],
    ));
    until_ready(|| client.connection()).unwrap();
    stack.poll();
    let _ = take();
    (client, port, our_isn)
}

/// A burst of in-order segments from the interface reaches smoltcp
/// merged (as Linux's GRO): the data arrives intact and in order, and is
/// acknowledged at once, by one or two ACKs rather than one per two
/// segments; a segment with a bad TCP checksum is dropped, never read.
#[test]
fn a_burst_of_segments_is_merged_read_intact_and_acknowledged_at_once() {
    let stack = Arc::new(Stack::new(ticking));
    let sent = attach_recording(&stack);
    let take = || core::mem::take(&mut *sent.lock().unwrap());
    let their_isn = 7_000u32;
    let (client, port, our_isn) = connected_to_remote(&stack, &sent, their_isn);

    let data: Vec<u8> = (0..20_000).map(|i| (i * 13 % 251) as u8).collect();
    for (index, chunk) in data.chunks(1000).enumerate() {
        let flags = if index == 19 { 0x18 } else { 0x10 };
        let sequence = their_isn + 1 + (index * 1000) as u32;
        stack.receive(&segment_from_remote(
            port,
            sequence,
            our_isn + 1,
            flags,
            chunk,
        ));
    }
    stack.poll();
    assert_eq!(
        stack.coalesced_segments(),
        19,
        "every segment after the first joined it (and the last was split \
         off again for smoltcp)"
    );
    let acks = take();
    assert!(
        (1..=2).contains(&acks.len()),
        "{} packets answered the burst",
        acks.len()
    );
    let (_, _, acknowledged, flags) = sent_segment(acks.last().unwrap());
    assert_eq!((acknowledged, flags & 0x10), (their_isn + 1 + 20_000, 0x10));
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    while received.len() < data.len() {
        let (count, _, _) = until_ready(|| client.receive(&mut buffer, false)).unwrap();
        received.extend_from_slice(&buffer[..count]);
    }
    assert!(received == data, "the bytes arrive intact and in order");

    let dropped = stack.dropped_packets();
    let mut corrupt = segment_from_remote(port, their_isn + 20_001, our_isn + 1, 0x18, b"bad");
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0xff;
    stack.receive(&corrupt);
    stack.poll();
    assert_eq!(stack.dropped_packets(), dropped + 1);
    assert_eq!(
        client.receive(&mut buffer, false),
        Err(SocketError::WouldBlock),
        "a corrupt segment is never read"
    );
}

/// A burst longer than one merge reaches smoltcp as several runs, each
/// split before its last segment (so each is acknowledged at once); a
/// segment out of order starts a run of its own rather than joining the
/// one before; the bytes arrive intact and in order either way.
#[test]
fn long_bursts_and_segments_out_of_order_merge_into_runs_read_intact() {
    let stack = Arc::new(Stack::new(ticking));
    let sent = attach_recording(&stack);
    let take = || core::mem::take(&mut *sent.lock().unwrap());
    let their_isn = 90_000u32;
    let (client, port, our_isn) = connected_to_remote(&stack, &sent, their_isn);

    // 100 segments of 1,460 bytes: 146,000 bytes, three merges' worth,
    // with segments 40 and 41 swapped.
    let data: Vec<u8> = (0..146_000).map(|i| (i * 7 % 253) as u8).collect();
    let mut order: Vec<usize> = (0..100).collect();
    order.swap(40, 41);
    for index in order {
        let chunk = &data[index * 1460..(index + 1) * 1460];
        let sequence = their_isn + 1 + (index * 1460) as u32;
        stack.receive(&segment_from_remote(
            port,
            sequence,
            our_isn + 1,
            0x10,
            chunk,
        ));
    }
    stack.poll();
    let merged = stack.coalesced_segments();
    assert!(
        (90..98).contains(&merged),
        "{merged} of 100 segments joined the one before them"
    );
    let acks = take();
    let (_, _, acknowledged, _) = sent_segment(acks.last().expect("the burst is acknowledged"));
    assert_eq!(
        acknowledged,
        their_isn + 1 + 146_000,
        "every byte acknowledged"
    );
    let mut received = Vec::new();
    let mut buffer = [0u8; 8192];
    while received.len() < data.len() {
        let (count, _, _) = until_ready(|| client.receive(&mut buffer, false)).unwrap();
        received.extend_from_slice(&buffer[..count]);
    }
    assert!(received == data, "the bytes arrive intact and in order");
}

/// Connections one after another: beyond 32 in TIME-WAIT the oldest are
/// ended, and their sockets (kept as spares) serve the next connections,
/// each starting afresh (no byte of the one before); none is left behind
/// but the TIME-WAITs.
#[test]
fn sockets_closed_and_reused_start_afresh() {
    let stack = Arc::new(Stack::new(ticking));
    let listener = Socket::new(stack.clone(), Kind::Stream);
    listener.bind(loopback(8081)).unwrap();
    listener.listen(4).unwrap();
    let mut buffer = [0u8; 64];
    for round in 0..60u8 {
        let client = Socket::new(stack.clone(), Kind::Stream);
        assert_eq!(client.connect(loopback(8081)), Err(SocketError::InProgress));
        until_ready(|| client.connection()).unwrap();
        let (server, _) = until_ready(|| listener.accept()).unwrap();
        client.set_no_delay(round % 2 == 0);
        let message = [round; 10];
        assert_eq!(client.send(&message, None), Ok(10));
        let (count, _, _) = until_ready(|| server.receive(&mut buffer, false)).unwrap();
        assert_eq!(
            &buffer[..count],
            &message,
            "round {round}: only its own bytes"
        );
        drop(client);
        assert_eq!(
            until_ready(|| server.receive(&mut buffer, false)).map(|r| r.0),
            Ok(0)
        );
        drop(server);
        for _ in 0..20 {
            stack.poll();
        }
    }
    drop(listener);
    for _ in 0..100 {
        stack.poll();
    }
    let left = stack.socket_count();
    assert!(
        (30..=34).contains(&left),
        "{left} left: 32 in TIME-WAIT expected"
    );
}
