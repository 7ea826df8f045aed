//! Host tests: sockets talking over the loopback interface.

extern crate std;

use alloc::sync::Arc;
use core::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicU64, Ordering};

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
    use std::{sync::Mutex, vec::Vec};
    let stack = Arc::new(Stack::new(ticking));
    let remote = SocketAddrV4::new(Ipv4Addr::new(10, 0, 2, 2), 5000);
    let socket = Socket::new(stack.clone(), Kind::Datagram);
    assert_eq!(
        socket.send(b"early", Some(remote)),
        Err(SocketError::Unreachable)
    );
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
