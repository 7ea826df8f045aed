//! The events of the protocol graph, their intrinsic handlers (each layer
//! raising the next) and defaults (the sockets, when no extension takes a
//! packet), and the kernel's own handler on it: ICMP echo.
//!
//! Every event's first parameter is the packet (a [`PacketRef`]: to a Wasm
//! handler, a handle lent for the invocation); the others are the header
//! fields handlers guard on, so guards on them are declarative and the
//! dispatcher indexes them.

use alloc::sync::Arc;

use dispatch::{Authority, Event, Field, Guard, Handler, Install, Predicate, Principal};
use extension_interface::PacketRef;
use smoltcp::wire::{EthernetProtocol, IpProtocol};

use crate::{
    frame::{Frame, Layer, LayerView, Transport},
    Network,
};

/// `Ether.PacketArrived(packet, ethertype)`.
pub type EtherArgs = (PacketRef, u32);
/// `IP.PacketArrived(packet, protocol, source, destination)` (addresses as
/// big-endian numbers: 10.0.2.15 is 0x0a00020f).
pub type IpArgs = (PacketRef, u32, u32, u32);
/// `ICMP.PacketArrived(packet, type, source)`.
pub type IcmpArgs = (PacketRef, u32, u32);
/// `UDP.PacketArrived` and `TCP.PacketArrived`: `(packet, source address,
/// source port, destination port)`. The send events `UDP.PacketSend` and
/// `TCP.PacketSend` have the same parameters with the *destination*
/// address second: the other host's address, in both directions.
pub type PortArgs = (PacketRef, u32, u32, u32);

/// The parameter of `UDP.PacketArrived` and `TCP.PacketArrived` holding
/// the destination port (what a server guards on).
pub const DESTINATION_PORT: usize = 3;
/// The parameter of `ICMP.PacketArrived` holding the message type.
pub const ICMP_TYPE: usize = 1;
/// ICMP echo request.
const ECHO_REQUEST: u8 = 8;
/// ICMP echo reply.
const ECHO_REPLY: u8 = 0;

/// Event names, as extensions find them.
pub const ETHER_ARRIVED: &str = "Ether.PacketArrived";
/// See [`ETHER_ARRIVED`].
pub const IP_ARRIVED: &str = "IP.PacketArrived";
/// See [`ETHER_ARRIVED`].
pub const ICMP_ARRIVED: &str = "ICMP.PacketArrived";
/// See [`ETHER_ARRIVED`].
pub const UDP_ARRIVED: &str = "UDP.PacketArrived";
/// See [`ETHER_ARRIVED`].
pub const TCP_ARRIVED: &str = "TCP.PacketArrived";
/// The send side: every IPv4 packet this host sends, before it is routed.
pub const IP_SEND: &str = "IP.PacketSend";
/// See [`IP_SEND`]: UDP datagrams, before `IP.PacketSend`.
pub const UDP_SEND: &str = "UDP.PacketSend";
/// See [`IP_SEND`]: TCP segments, before `IP.PacketSend`.
pub const TCP_SEND: &str = "TCP.PacketSend";
/// The parameter of `UDP.PacketSend` and `TCP.PacketSend` holding the
/// source port (what a server's outgoing traffic is guarded on).
pub const SOURCE_PORT: usize = 2;

/// The graph's events.
pub struct Events {
    /// Every frame.
    pub ether: Arc<Event<EtherArgs, ()>>,
    /// IPv4 packets for this host.
    pub ip: Arc<Event<IpArgs, ()>>,
    /// ICMP messages.
    pub icmp: Arc<Event<IcmpArgs, ()>>,
    /// UDP datagrams.
    pub udp: Arc<Event<PortArgs, ()>>,
    /// TCP segments.
    pub tcp: Arc<Event<PortArgs, ()>>,
    /// IPv4 packets this host sends; a handler returning `false` keeps
    /// the packet from being sent.
    pub ip_send: Arc<Event<IpArgs, bool>>,
    /// UDP datagrams this host sends (see [`Events::ip_send`]).
    pub udp_send: Arc<Event<PortArgs, bool>>,
    /// TCP segments this host sends (see [`Events::ip_send`]).
    pub tcp_send: Arc<Event<PortArgs, bool>>,
    icmp_authority: Authority,
    udp_authority: Authority,
    tcp_authority: Authority,
}

impl Events {
    pub(crate) fn new() -> Self {
        let (ether, _) = Event::builder(ETHER_ARRIVED)
            .intrinsic(ether_intrinsic)
            .build();
        let (ip, _) = Event::builder(IP_ARRIVED).intrinsic(ip_intrinsic).build();
        let (icmp, icmp_authority) = Event::builder(ICMP_ARRIVED).build();
        let (udp, udp_authority) = Event::builder(UDP_ARRIVED).build();
        let (tcp, tcp_authority) = Event::builder(TCP_ARRIVED).build();
        Events {
            ip_send: Arc::new(send_event(IP_SEND)),
            udp_send: Arc::new(send_event(UDP_SEND)),
            tcp_send: Arc::new(send_event(TCP_SEND)),
            ether: Arc::new(ether),
            ip: Arc::new(ip),
            icmp: Arc::new(icmp),
            udp: Arc::new(udp),
            tcp: Arc::new(tcp),
            icmp_authority,
            udp_authority,
            tcp_authority,
        }
    }

    /// The defaults (to the sockets) and the kernel's echo handler.
    pub(crate) fn install_kernel_handlers(&self) {
        let to_sockets = |args: &PortArgs| {
            if let Some(view) = view_of(&args.0) {
                deliver(&view.frame);
            }
        };
        // The authorities are the events' own: these cannot fail.
        let _ = self
            .udp
            .set_default(&self.udp_authority, Some(Handler::new(to_sockets)));
        let _ = self
            .tcp
            .set_default(&self.tcp_authority, Some(Handler::new(to_sockets)));
        let _ = self.icmp.set_default(
            &self.icmp_authority,
            Some(Handler::new(|args: &IcmpArgs| {
                if let Some(view) = view_of(&args.0) {
                    deliver(&view.frame);
                }
            })),
        );
        let echo = Install::new(Handler::new(answer_echo).named("icmp-echo")).guard(Guard::when(
            Predicate::equals(Field::Param(ICMP_TYPE), u64::from(ECHO_REQUEST)),
        ));
        let _ = self.icmp.install(Principal::KERNEL, echo);
    }
}

/// A send event: its intrinsic lets the packet go, and the results of
/// all handlers are folded with "and": one refusal keeps it from going.
fn send_event<A: dispatch::EventArgs>(name: &'static str) -> Event<A, bool> {
    let (event, authority) = Event::builder(name).intrinsic(|_: &A| true).build();
    // The authority is the event's own: this cannot fail.
    let _ = event.set_result_handler(&authority, Some(Arc::new(|a: bool, b: bool| a && b)));
    event
}

impl Events {
    /// Whether an extension handles a send event: only then is an
    /// outgoing packet built apart (a copy) and the send events raised.
    pub(crate) fn send_is_observed(&self) -> bool {
        !(self.ip_send.is_intrinsic_only()
            && self.udp_send.is_intrinsic_only()
            && self.tcp_send.is_intrinsic_only())
    }
}

/// Raises the send events for a packet this host is about to send:
/// `UDP.PacketSend` or `TCP.PacketSend`, then `IP.PacketSend`. Whether
/// every handler let it go (a raise whose handlers all faulted does not).
pub(crate) fn sending(frame: &Arc<Frame>) -> bool {
    let Some(ipv4) = frame.ipv4 else {
        return false;
    };
    let events = &frame.network.events;
    let destination = u32::from(ipv4.destination);
    let transport = match ipv4.transport {
        Transport::Udp {
            source_port,
            destination_port,
            ..
        } => Some((&events.udp_send, Layer::Udp, source_port, destination_port)),
        Transport::Tcp {
            source_port,
            destination_port,
        } => Some((&events.tcp_send, Layer::Tcp, source_port, destination_port)),
        _ => None,
    };
    if let Some((event, layer, source_port, destination_port)) = transport {
        let mut args = (
            packet(frame, layer),
            destination,
            u32::from(source_port),
            u32::from(destination_port),
        );
        if !event.raise(&mut args).unwrap_or(false) {
            return false;
        }
    }
    let mut args = (
        packet(frame, Layer::Ip),
        u32::from(protocol_number(ipv4.transport)),
        u32::from(ipv4.source),
        destination,
    );
    events.ip_send.raise(&mut args).unwrap_or(false)
}

/// The IP protocol number of a transport.
fn protocol_number(transport: Transport) -> u8 {
    match transport {
        Transport::Icmp { .. } => u8::from(IpProtocol::Icmp),
        Transport::Udp { .. } => u8::from(IpProtocol::Udp),
        Transport::Tcp { .. } => u8::from(IpProtocol::Tcp),
        Transport::Other(protocol) => protocol,
    }
}

/// The layer view behind a packet parameter, if the graph made it.
fn view_of(packet: &PacketRef) -> Option<&LayerView> {
    packet.0.as_any().downcast_ref::<LayerView>()
}

fn packet(frame: &Arc<Frame>, layer: Layer) -> PacketRef {
    PacketRef(Arc::new(LayerView {
        frame: frame.clone(),
        layer,
    }))
}

/// A frame arrived: raises `Ether.PacketArrived`.
///
/// Each layer builds its event's packet argument (a capability, an
/// allocation) only when some handler could see it: while an event has
/// its intrinsic alone, `raise` would call just that, so the layer calls
/// the intrinsic's body itself; while `UDP.PacketArrived` or
/// `TCP.PacketArrived` has no handler, the layer does what its default
/// does (the sockets). The events paper's shortcut (003 §3), taken before
/// the arguments are made.
pub(crate) fn arrived(network: &'static Network, frame: Arc<Frame>) {
    let event = &network.events.ether;
    if event.is_intrinsic_only() {
        return ether_layer(&frame);
    }
    let mut args = (packet(&frame, Layer::Ethernet), u32::from(frame.ethertype));
    // No handler and no intrinsic is impossible; a faulting extension's
    // handler is the dispatcher's to count.
    let _ = event.raise(&mut args);
}

/// `Ether.PacketArrived`'s intrinsic.
fn ether_intrinsic(args: &EtherArgs) {
    if let Some(view) = view_of(&args.0) {
        ether_layer(&view.frame);
    }
}

/// ARP is answered here, IPv4 for us goes up as `IP.PacketArrived`.
fn ether_layer(frame: &Arc<Frame>) {
    let network = frame.network;
    match EthernetProtocol::from(frame.ethertype) {
        EthernetProtocol::Arp => crate::arp::arrived(network, frame),
        EthernetProtocol::Ipv4 => {
            let Some(ipv4) = frame.ipv4 else {
                return;
            };
            if !network.config.accepts(ipv4.destination) {
                network.stats.add(&network.stats.not_for_us, 1);
                return;
            }
            let event = &network.events.ip;
            if event.is_intrinsic_only() {
                return ip_layer(frame);
            }
            let mut args = (
                packet(frame, Layer::Ip),
                u32::from(protocol_number(ipv4.transport)),
                u32::from(ipv4.source),
                u32::from(ipv4.destination),
            );
            let _ = event.raise(&mut args);
        }
        _ => network.stats.add(&network.stats.other_ethertype, 1),
    }
}

/// `IP.PacketArrived`'s intrinsic.
fn ip_intrinsic(args: &IpArgs) {
    if let Some(view) = view_of(&args.0) {
        ip_layer(&view.frame);
    }
}

/// Raises the transport's event.
fn ip_layer(frame: &Arc<Frame>) {
    let network = frame.network;
    let Some(ipv4) = frame.ipv4 else {
        return;
    };
    let source = u32::from(ipv4.source);
    match ipv4.transport {
        Transport::Icmp { kind } => {
            let mut args = (packet(frame, Layer::Icmp), u32::from(kind), source);
            let _ = network.events.icmp.raise(&mut args);
        }
        Transport::Udp {
            source_port,
            destination_port,
            ..
        }
        | Transport::Tcp {
            source_port,
            destination_port,
        } => {
            let (event, layer) = match ipv4.transport {
                Transport::Udp { .. } => (&network.events.udp, Layer::Udp),
                _ => (&network.events.tcp, Layer::Tcp),
            };
            if event.is_unhandled() {
                return deliver(frame);
            }
            let mut args = (
                packet(frame, layer),
                source,
                u32::from(source_port),
                u32::from(destination_port),
            );
            let _ = event.raise(&mut args);
        }
        Transport::Other(_) => network.stats.add(&network.stats.other_protocol, 1),
    }
}

/// The IP packet of `frame` to the sockets.
fn deliver(frame: &Frame) {
    if let Some(ip_packet) = frame.ip_packet() {
        frame.network.deliver_to_sockets(ip_packet);
    }
}

/// The kernel's ICMP echo handler (guarded on type 8): the same message
/// back with type 0 and its checksum fixed.
fn answer_echo(args: &IcmpArgs) {
    let Some(view) = view_of(&args.0) else {
        return;
    };
    let frame = &view.frame;
    let (network, Some(ipv4)) = (frame.network, frame.ipv4) else {
        return;
    };
    let Some(message) = frame.bytes().get(ipv4.payload..ipv4.packet.1) else {
        return;
    };
    let sent = network.send_ip(ipv4.source, IpProtocol::Icmp, message.len(), &mut |out| {
        out.copy_from_slice(message);
        let mut reply = smoltcp::wire::Icmpv4Packet::new_unchecked(&mut *out);
        reply.set_msg_type(smoltcp::wire::Icmpv4Message::from(ECHO_REPLY));
        reply.fill_checksum();
    });
    if sent {
        network.stats.add(&network.stats.echo_answered, 1);
    }
}
