//! The graph on the host: frames in through `Network::receive`, frames out
//! through a recording link.

extern crate std;

use alloc::{boxed::Box, sync::Arc, vec, vec::Vec};
use std::sync::Mutex;

use dispatch::{Field, Guard, Handler, Install, Predicate, Principal};
use smoltcp::{
    phy::ChecksumCapabilities,
    wire::{
        ArpOperation, ArpPacket, ArpRepr, EthernetAddress, EthernetFrame, EthernetProtocol,
        EthernetRepr, Icmpv4Packet, IpAddress, IpProtocol, Ipv4Address, Ipv4Packet, Ipv4Repr,
        TcpPacket, TcpSeqNumber, UdpPacket, UdpRepr,
    },
};

use crate::{graph, InterfaceConfig, Link, Network};

const OUR_MAC: [u8; 6] = [0x52, 0x54, 0, 0x12, 0x34, 0x56];
const PEER_MAC: [u8; 6] = [0x52, 0x55, 10, 0, 2, 2];
const PEER: Ipv4Address = Ipv4Address::new(10, 0, 2, 2);
const US: Ipv4Address = Ipv4Address::new(10, 0, 2, 15);

#[derive(Default)]
struct Recorder {
    frames: Mutex<Vec<Vec<u8>>>,
}

impl Link for Recorder {
    fn transmit(&self, len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool {
        let mut frame = vec![0; len];
        fill(&mut frame);
        self.frames.lock().unwrap().push(frame);
        true
    }
}

impl Recorder {
    fn take(&self) -> Vec<Vec<u8>> {
        core::mem::take(&mut *self.frames.lock().unwrap())
    }
}

fn network() -> (&'static Network, Arc<Recorder>) {
    let recorder = Arc::new(Recorder::default());
    let network = Network::start(InterfaceConfig::qemu_user(OUR_MAC), recorder.clone());
    (network, recorder)
}

fn ethernet(ethertype: EthernetProtocol, payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![0; 14 + payload.len()];
    EthernetRepr {
        src_addr: EthernetAddress(PEER_MAC),
        dst_addr: EthernetAddress(OUR_MAC),
        ethertype,
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut frame));
    frame[14..].copy_from_slice(payload);
    frame
}

fn ip(protocol: IpProtocol, payload: &[u8]) -> Vec<u8> {
    ip_from(PEER, protocol, payload)
}

fn ip_from(source: Ipv4Address, protocol: IpProtocol, payload: &[u8]) -> Vec<u8> {
    let mut packet = vec![0; 20 + payload.len()];
    Ipv4Repr {
        src_addr: source,
        dst_addr: US,
        next_header: protocol,
        payload_len: payload.len(),
        hop_limit: 64,
    }
    .emit(
        &mut Ipv4Packet::new_unchecked(&mut packet),
        &ChecksumCapabilities::default(),
    );
    packet[20..].copy_from_slice(payload);
    ethernet(EthernetProtocol::Ipv4, &packet)
}

fn udp(source_port: u16, destination_port: u16, data: &[u8]) -> Vec<u8> {
    udp_from(PEER, source_port, destination_port, data)
}

fn udp_from(source: Ipv4Address, source_port: u16, destination_port: u16, data: &[u8]) -> Vec<u8> {
    let mut datagram = vec![0; 8 + data.len()];
    UdpRepr {
        src_port: source_port,
        dst_port: destination_port,
    }
    .emit(
        &mut UdpPacket::new_unchecked(&mut datagram[..]),
        &IpAddress::Ipv4(source),
        &IpAddress::Ipv4(US),
        data.len(),
        |out| out.copy_from_slice(data),
        &ChecksumCapabilities::default(),
    );
    ip_from(source, IpProtocol::Udp, &datagram)
}

/// The UDP datagram in a sent frame: (source address, destination
/// address, source port, destination port, data).
fn sent_udp(frame: &[u8]) -> (Ipv4Address, Ipv4Address, u16, u16, Vec<u8>) {
    let frame = EthernetFrame::new_checked(frame).unwrap();
    let packet = Ipv4Packet::new_checked(frame.payload()).unwrap();
    let datagram = UdpPacket::new_checked(packet.payload()).unwrap();
    assert!(datagram.verify_checksum(
        &IpAddress::Ipv4(packet.src_addr()),
        &IpAddress::Ipv4(packet.dst_addr())
    ));
    (
        packet.src_addr(),
        packet.dst_addr(),
        datagram.src_port(),
        datagram.dst_port(),
        datagram.payload().to_vec(),
    )
}

fn arp_reply_from_peer() -> Vec<u8> {
    let mut packet = vec![0; 28];
    ArpRepr::EthernetIpv4 {
        operation: ArpOperation::Reply,
        source_hardware_addr: EthernetAddress(PEER_MAC),
        source_protocol_addr: PEER,
        target_hardware_addr: EthernetAddress(OUR_MAC),
        target_protocol_addr: US,
    }
    .emit(&mut ArpPacket::new_unchecked(&mut packet[..]));
    ethernet(EthernetProtocol::Arp, &packet)
}

fn receive(network: &'static Network, frame: Vec<u8>) {
    network.receive(Box::new(frame));
}

#[test]
fn arp_requests_for_our_address_are_answered_and_teach_the_sender() {
    let (network, link) = network();
    let mut packet = vec![0; 28];
    ArpRepr::EthernetIpv4 {
        operation: ArpOperation::Request,
        source_hardware_addr: EthernetAddress(PEER_MAC),
        source_protocol_addr: PEER,
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: US,
    }
    .emit(&mut ArpPacket::new_unchecked(&mut packet[..]));
    receive(network, ethernet(EthernetProtocol::Arp, &packet));
    let sent = link.take();
    assert_eq!(sent.len(), 1);
    let frame = EthernetFrame::new_checked(&sent[0][..]).unwrap();
    assert_eq!(frame.dst_addr().0, PEER_MAC);
    let reply = ArpRepr::parse(&ArpPacket::new_checked(frame.payload()).unwrap()).unwrap();
    let ArpRepr::EthernetIpv4 {
        operation,
        source_hardware_addr,
        source_protocol_addr,
        target_protocol_addr,
        ..
    } = reply
    else {
        panic!("not an ethernet/ipv4 arp reply")
    };
    assert_eq!(operation, ArpOperation::Reply);
    assert_eq!(source_hardware_addr.0, OUR_MAC);
    assert_eq!(source_protocol_addr, US);
    assert_eq!(target_protocol_addr, PEER);
    assert_eq!(network.neighbors(), 1);
    assert_eq!(network.stats().arp_answered, 1);
}

#[test]
fn an_echo_request_waits_for_arp_then_is_answered() {
    let (network, link) = network();
    let mut message = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1, b'p', b'i', b'n', b'g'];
    let mut icmp = Icmpv4Packet::new_unchecked(&mut message[..]);
    icmp.fill_checksum();
    receive(network, ip(IpProtocol::Icmp, &message));
    // The peer is unknown: an ARP request goes out, the reply waits.
    let sent = link.take();
    assert_eq!(sent.len(), 1, "one ARP request");
    assert_eq!(
        EthernetFrame::new_checked(&sent[0][..])
            .unwrap()
            .ethertype(),
        EthernetProtocol::Arp
    );
    receive(network, arp_reply_from_peer());
    let sent = link.take();
    assert_eq!(sent.len(), 1, "the echo reply, released");
    let frame = EthernetFrame::new_checked(&sent[0][..]).unwrap();
    assert_eq!(frame.dst_addr().0, PEER_MAC);
    let packet = Ipv4Packet::new_checked(frame.payload()).unwrap();
    assert!(packet.verify_checksum());
    assert_eq!(packet.dst_addr(), PEER);
    assert_eq!(packet.src_addr(), US);
    let reply = Icmpv4Packet::new_checked(packet.payload()).unwrap();
    assert_eq!(u8::from(reply.msg_type()), 0, "echo reply");
    assert!(reply.verify_checksum());
    assert_eq!(
        &packet.payload()[4..],
        &message[4..],
        "identifier, sequence, data"
    );
    assert_eq!(network.stats().echo_answered, 1);
}

#[test]
fn udp_goes_to_the_handler_of_its_port_and_otherwise_to_the_sockets() {
    let (network, link) = network();
    receive(network, arp_reply_from_peer());
    let _ = link.take();
    let to_sockets: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let sink = to_sockets.clone();
    network.attach_sockets(Arc::new(move |packet: &[u8]| {
        sink.lock().unwrap().push(packet.to_vec())
    }));
    // An echo on port 7: read the data, answer it.
    let echo = Install::new(Handler::new(|args: &graph::PortArgs| {
        let mut data = vec![0; args.0 .0.len()];
        let read = args.0 .0.read(0, &mut data);
        assert_eq!(read, data.len());
        args.0 .0.reply(&data).unwrap();
    }))
    .guard(Guard::when(Predicate::equals(
        Field::Param(graph::DESTINATION_PORT),
        7,
    )));
    network
        .events()
        .udp
        .install(Principal::KERNEL, echo)
        .unwrap();
    receive(network, udp(40000, 7, b"hello, echo"));
    let sent = link.take();
    assert_eq!(sent.len(), 1);
    let frame = EthernetFrame::new_checked(&sent[0][..]).unwrap();
    let packet = Ipv4Packet::new_checked(frame.payload()).unwrap();
    let datagram = UdpPacket::new_checked(packet.payload()).unwrap();
    assert_eq!((datagram.src_port(), datagram.dst_port()), (7, 40000));
    assert_eq!(datagram.payload(), b"hello, echo");
    assert!(datagram.verify_checksum(&IpAddress::Ipv4(US), &IpAddress::Ipv4(PEER)));
    assert!(to_sockets.lock().unwrap().is_empty(), "the handler took it");
    // Port 9 has no handler: the sockets get the IP packet.
    receive(network, udp(40000, 9, b"for a socket"));
    assert!(link.take().is_empty());
    let delivered = to_sockets.lock().unwrap();
    assert_eq!(delivered.len(), 1);
    let packet = Ipv4Packet::new_checked(&delivered[0][..]).unwrap();
    assert_eq!(&packet.payload()[8..], b"for a socket");
}

#[test]
fn malformed_frames_are_counted_and_dropped() {
    let (network, link) = network();
    let good = udp(1, 2, b"data");
    receive(network, good[..10].to_vec());
    let mut bad_ip_checksum = good.clone();
    bad_ip_checksum[14 + 10] ^= 0xff;
    receive(network, bad_ip_checksum);
    let mut bad_udp_checksum = good.clone();
    *bad_udp_checksum.last_mut().unwrap() ^= 0xff;
    receive(network, bad_udp_checksum);
    let mut truncated_ip = good.clone();
    truncated_ip.truncate(14 + 24);
    receive(network, truncated_ip);
    let mut fragment = good.clone();
    {
        let mut packet = Ipv4Packet::new_unchecked(&mut fragment[14..]);
        packet.set_more_frags(true);
        packet.fill_checksum();
    }
    receive(network, fragment);
    let stats = network.stats();
    assert_eq!(stats.malformed_total(), 5, "{:?}", stats.lines());
    assert!(link.take().is_empty(), "nothing answered");
}

/// Random and mutated frames: no panic, every frame counted somewhere.
/// `SPINDLE_NET_FRAMES` and `SPINDLE_NET_SEED` make it longer (`./x fuzz
/// --net`).
#[test]
fn random_frames_never_panic() {
    let (network, _link) = network();
    let frames: u32 = std::env::var("SPINDLE_NET_FRAMES")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(20_000);
    let seed: u64 = std::env::var("SPINDLE_NET_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(0x2545_f491_4f6c_dd1d);
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let seeds = [
        udp(1234, 7, b"abcdef"),
        ip(IpProtocol::Icmp, &[8, 0, 0, 0]),
        arp_reply_from_peer(),
    ];
    for round in 0..frames {
        let mut frame = if round % 4 == 0 {
            (0..(next() % 200) as usize).map(|_| next() as u8).collect()
        } else {
            seeds[round as usize % seeds.len()].clone()
        };
        for _ in 0..(next() % 4) {
            if !frame.is_empty() {
                let at = (next() as usize) % frame.len();
                frame[at] = next() as u8;
            }
        }
        if next() % 5 == 0 {
            let keep = (next() as usize) % (frame.len() + 1);
            frame.truncate(keep);
        }
        receive(network, frame);
    }
    let stats = network.stats();
    assert_eq!(stats.frames_received, u64::from(frames));
    std::println!(
        "{frames} frames: {} malformed, {} for other hosts, {} echo answers",
        stats.malformed_total(),
        stats.not_for_us,
        stats.echo_answered
    );
}

/// The forwarder relays a client's datagram to the target through the
/// gateway, from a relay port, and the target's answer back to the client
/// from the forwarded port; removed, it relays nothing.
#[test]
fn the_forwarder_relays_both_ways_and_stops_when_removed() {
    let (network, link) = network();
    receive(network, arp_reply_from_peer());
    let _ = link.take();
    let target = Ipv4Address::new(192, 0, 2, 53);
    let forwarder = crate::forwarder::Forwarder::install(
        network,
        crate::forwarder::Protocol::Udp,
        5353,
        (target, 53),
    )
    .unwrap();
    receive(network, udp(40000, 5353, b"question"));
    let sent = link.take();
    assert_eq!(sent.len(), 1);
    let (from, to, relay, port, data) = sent_udp(&sent[0]);
    assert_eq!((from, to, port), (US, target, 53));
    assert!(crate::forwarder::RELAY_PORTS.contains(&relay));
    assert_eq!(data, b"question");
    assert_eq!(
        EthernetFrame::new_checked(&sent[0][..])
            .unwrap()
            .dst_addr()
            .0,
        PEER_MAC,
        "off our network: through the gateway"
    );
    receive(network, udp_from(target, 53, relay, b"answer"));
    let sent = link.take();
    assert_eq!(sent.len(), 1);
    let (from, to, source_port, client_port, data) = sent_udp(&sent[0]);
    assert_eq!(
        (from, to, source_port, client_port),
        (US, PEER, 5353, 40000)
    );
    assert_eq!(data, b"answer");
    assert_eq!(forwarder.relayed(), 2);
    // A stranger writing to the relay port is not relayed.
    receive(
        network,
        udp_from(Ipv4Address::new(192, 0, 2, 99), 53, relay, b"forged"),
    );
    assert!(link.take().is_empty());
    forwarder.remove();
    receive(network, udp(40000, 5353, b"question"));
    assert!(link.take().is_empty(), "removed: no relay");
}

/// A TCP segment from `source`:`source_port` to our `destination_port`
/// (sequence and acknowledgment numbers as given, flags ACK and PSH).
fn tcp_from(
    source: Ipv4Address,
    source_port: u16,
    destination_port: u16,
    sequence: u32,
    data: &[u8],
) -> Vec<u8> {
    let mut segment = vec![0; 20 + data.len()];
    {
        let mut tcp = TcpPacket::new_unchecked(&mut segment[..]);
        tcp.set_src_port(source_port);
        tcp.set_dst_port(destination_port);
        tcp.set_seq_number(TcpSeqNumber(sequence as i32));
        tcp.set_ack_number(TcpSeqNumber(7));
        tcp.set_header_len(20);
        tcp.set_ack(true);
        tcp.set_psh(true);
        tcp.set_window_len(4096);
        tcp.payload_mut().copy_from_slice(data);
        tcp.fill_checksum(&IpAddress::Ipv4(source), &IpAddress::Ipv4(US));
    }
    ip_from(source, IpProtocol::Tcp, &segment)
}

/// The TCP segment in a sent frame, its checksums checked: (source
/// address, destination address, source port, destination port,
/// sequence number, data).
fn sent_tcp(frame: &[u8]) -> (Ipv4Address, Ipv4Address, u16, u16, u32, Vec<u8>) {
    let frame = EthernetFrame::new_checked(frame).unwrap();
    let packet = Ipv4Packet::new_checked(frame.payload()).unwrap();
    assert!(packet.verify_checksum());
    let segment = TcpPacket::new_checked(packet.payload()).unwrap();
    assert!(segment.verify_checksum(
        &IpAddress::Ipv4(packet.src_addr()),
        &IpAddress::Ipv4(packet.dst_addr())
    ));
    (
        packet.src_addr(),
        packet.dst_addr(),
        segment.src_port(),
        segment.dst_port(),
        segment.seq_number().0 as u32,
        segment.payload().to_vec(),
    )
}

/// A TCP forwarder redirects a client's segments to the target from a
/// relay port, sequence numbers and data untouched, and the target's
/// segments back to the client from the forwarded port; a second client
/// gets another relay port; segments from a stranger to a relay port, or
/// for a port nobody forwards, go to the sockets instead.
#[test]
fn the_tcp_forwarder_redirects_segments_both_ways() {
    let (network, link) = network();
    let delivered = Arc::new(Mutex::new(0usize));
    let counted = delivered.clone();
    network.attach_sockets(Arc::new(move |_| *counted.lock().unwrap() += 1));
    receive(network, arp_reply_from_peer());
    let _ = link.take();
    let target = Ipv4Address::new(192, 0, 2, 80);
    let forwarder = crate::forwarder::Forwarder::install(
        network,
        crate::forwarder::Protocol::Tcp,
        8080,
        (target, 80),
    )
    .unwrap();
    receive(
        network,
        tcp_from(PEER, 40000, 8080, 1000, b"GET / HTTP/1.0\r\n\r\n"),
    );
    let sent = link.take();
    assert_eq!(sent.len(), 1);
    let (from, to, relay, port, sequence, data) = sent_tcp(&sent[0]);
    assert_eq!((from, to, port, sequence), (US, target, 80, 1000));
    assert!(crate::forwarder::RELAY_PORTS.contains(&relay));
    assert_eq!(data, b"GET / HTTP/1.0\r\n\r\n");
    receive(
        network,
        tcp_from(target, 80, relay, 5000, b"HTTP/1.0 200 OK\r\n"),
    );
    let sent = link.take();
    assert_eq!(sent.len(), 1);
    let (from, to, source_port, client_port, sequence, data) = sent_tcp(&sent[0]);
    assert_eq!(
        (from, to, source_port, client_port, sequence),
        (US, PEER, 8080, 40000, 5000)
    );
    assert_eq!(data, b"HTTP/1.0 200 OK\r\n");
    receive(network, tcp_from(PEER, 40001, 8080, 1, b"x"));
    let (_, _, other_relay, ..) = sent_tcp(&link.take()[0]);
    assert_ne!(
        other_relay, relay,
        "a second client has a relay port of its own"
    );
    assert_eq!(forwarder.relayed(), 3);
    assert_eq!(*delivered.lock().unwrap(), 0);
    receive(
        network,
        tcp_from(Ipv4Address::new(192, 0, 2, 99), 80, relay, 9, b"forged"),
    );
    receive(network, tcp_from(target, 81, relay, 9, b"other port"));
    receive(network, tcp_from(PEER, 40000, 8081, 1, b"not forwarded"));
    assert!(link.take().is_empty());
    assert_eq!(*delivered.lock().unwrap(), 3, "not relayed: to the sockets");
    forwarder.remove();
    receive(network, tcp_from(PEER, 40000, 8080, 1, b"after"));
    assert!(link.take().is_empty(), "removed: no relay");
    assert_eq!(forwarder.relayed(), 3);
}

/// The send side: `UDP.PacketSend` handlers see the datagram's data and
/// ports before it goes, one guarded on destination port 9 refuses its
/// datagrams (counted, never on the link); `IP.PacketSend` sees every
/// packet sent, ICMP echo replies included; with the handlers removed,
/// packets go in place again and nothing is refused.
#[test]
fn send_events_see_outgoing_packets_and_a_handler_can_refuse_them() {
    let (network, link) = network();
    receive(network, arp_reply_from_peer());
    let _ = link.take();
    // (destination address, destination port, data) of each datagram.
    type Seen = Vec<(u32, u32, Vec<u8>)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let record = seen.clone();
    let observe = Install::new(Handler::new(move |args: &graph::PortArgs| {
        let mut data = vec![0; args.0 .0.len()];
        args.0 .0.read(0, &mut data);
        assert!(
            args.0 .0.reply(b"no").is_err(),
            "no replies on the send side"
        );
        record.lock().unwrap().push((args.1, args.3, data));
        true
    }));
    let refuse = Install::new(Handler::new(|_: &graph::PortArgs| false)).guard(Guard::when(
        Predicate::equals(Field::Param(graph::DESTINATION_PORT), 9),
    ));
    let ip_sent = Arc::new(Mutex::new(Vec::new()));
    let count = ip_sent.clone();
    let ip_observe = Install::new(Handler::new(move |args: &graph::IpArgs| {
        count.lock().unwrap().push((args.1, args.3));
        true
    }));
    let events = network.events();
    let bindings = [
        events.udp_send.install(Principal::KERNEL, observe).unwrap(),
        events.udp_send.install(Principal::KERNEL, refuse).unwrap(),
    ];
    let ip_binding = events
        .ip_send
        .install(Principal::KERNEL, ip_observe)
        .unwrap();

    network.send_udp(7, PEER, 10, b"allowed").unwrap();
    let sent = link.take();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent_udp(&sent[0]), (US, PEER, 7, 10, b"allowed".to_vec()));
    assert!(network.send_udp(7, PEER, 9, b"refused").is_err());
    assert!(link.take().is_empty(), "refused: not sent");
    assert_eq!(network.stats().send_refused, 1);
    let peer = u32::from(PEER);
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            (peer, 10, b"allowed".to_vec()),
            (peer, 9, b"refused".to_vec())
        ]
    );
    receive(network, ip(IpProtocol::Icmp, &echo_request_message()));
    assert_eq!(link.take().len(), 1, "the echo reply goes");
    assert_eq!(
        *ip_sent.lock().unwrap(),
        vec![(17, peer), (1, peer)],
        "IP.PacketSend saw the datagram allowed and the echo reply"
    );

    for binding in bindings {
        events.udp_send.remove(Principal::KERNEL, binding).unwrap();
    }
    events
        .ip_send
        .remove(Principal::KERNEL, ip_binding)
        .unwrap();
    network.send_udp(7, PEER, 9, b"unobserved").unwrap();
    assert_eq!(link.take().len(), 1);
    assert_eq!(network.stats().send_refused, 1);
}

/// An ICMP echo request with a valid checksum.
fn echo_request_message() -> Vec<u8> {
    let mut message = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1, b'p', b'i', b'n', b'g'];
    Icmpv4Packet::new_unchecked(&mut message[..]).fill_checksum();
    message
}
