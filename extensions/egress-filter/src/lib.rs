//! A send-side filter in the kernel: the output half of SPIN's protocol
//! graph as events. At init it installs two handlers:
//! - `refuse` on `UDP.PacketSend`, declaratively guarded on destination
//!   port 9 (discard): it returns 0, so no datagram to port 9 leaves this
//!   host, whichever program or extension sends it;
//! - `count` on `IP.PacketSend`: every IPv4 packet sent, counted by
//!   protocol; it returns 1 (let it go).
//!
//! A send event's handlers all vote: one 0 keeps the packet from going.
#![no_std]

use core::sync::atomic::{AtomicU64, Ordering};

use spindle_sdk::{Event, Mode, Packet};

/// The port whose datagrams are refused (discard, RFC 863).
const REFUSED_PORT: u64 = 9;
/// `UDP.PacketSend(packet, destination address, source port, destination
/// port)`: the parameter holding the destination port.
const DESTINATION_PORT: u32 = 3;

static REFUSED: AtomicU64 = AtomicU64::new(0);
static REFUSED_BYTES: AtomicU64 = AtomicU64::new(0);
static SENT_UDP: AtomicU64 = AtomicU64::new(0);
static SENT_TCP: AtomicU64 = AtomicU64::new(0);
static SENT_OTHER: AtomicU64 = AtomicU64::new(0);

#[no_mangle]
pub extern "C" fn init() {
    let (Some(udp), Some(ip)) = (Event::find("UDP.PacketSend"), Event::find("IP.PacketSend"))
    else {
        spindle_sdk::log("egress-filter: no send events (no network interface)");
        return;
    };
    let refusing = udp
        .install("refuse", None, Mode::Synchronous)
        .and_then(|binding| binding.guard_equals(DESTINATION_PORT, REFUSED_PORT));
    let counting = ip.install("count", None, Mode::Synchronous);
    match (refusing, counting) {
        (Ok(()), Ok(_)) => spindle_sdk::log(
            "egress-filter: refusing UDP datagrams to port 9, counting packets sent",
        ),
        (Err(status), _) | (_, Err(status)) => spindle_sdk::log!(
            "egress-filter: cannot install its handlers (status {})",
            status.code()
        ),
    }
}

/// `UDP.PacketSend` for port 9: refused.
#[no_mangle]
pub extern "C" fn refuse(
    packet: i32,
    _destination: i32,
    _source_port: i32,
    _destination_port: i32,
) -> i32 {
    REFUSED.fetch_add(1, Ordering::Relaxed);
    REFUSED_BYTES.fetch_add(Packet(packet).len() as u64, Ordering::Relaxed);
    0
}

/// `IP.PacketSend`: counted by protocol, let go.
#[no_mangle]
pub extern "C" fn count(_packet: i32, protocol: i32, _source: i32, _destination: i32) -> i32 {
    let counter = match protocol {
        17 => &SENT_UDP,
        6 => &SENT_TCP,
        _ => &SENT_OTHER,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    1
}

/// Datagrams refused so far.
#[no_mangle]
pub extern "C" fn refused() -> u64 {
    REFUSED.load(Ordering::Relaxed)
}

/// Data bytes of the datagrams refused so far.
#[no_mangle]
pub extern "C" fn refused_bytes() -> u64 {
    REFUSED_BYTES.load(Ordering::Relaxed)
}

/// UDP datagrams let go so far (`spindle ext call egress-filter
/// sent_udp`).
#[no_mangle]
pub extern "C" fn sent_udp() -> u64 {
    SENT_UDP.load(Ordering::Relaxed)
}

/// TCP segments let go so far.
#[no_mangle]
pub extern "C" fn sent_tcp() -> u64 {
    SENT_TCP.load(Ordering::Relaxed)
}

/// Other packets (ICMP...) let go so far.
#[no_mangle]
pub extern "C" fn sent_other() -> u64 {
    SENT_OTHER.load(Ordering::Relaxed)
}
