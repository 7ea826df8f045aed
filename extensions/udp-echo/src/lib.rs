//! A UDP echo server (RFC 862) in the kernel, as SPIN's in-kernel UDP
//! echo: at init it installs `on_datagram` on `UDP.PacketArrived` with a
//! declarative guard on the destination port (7), so the dispatcher hands
//! it the datagrams of that port only and the sockets never see them.
//! Each datagram's data goes straight back to its sender.
#![no_std]

use core::sync::atomic::{AtomicU64, Ordering};

use spindle_sdk::{Event, Mode, Packet};

/// The echo port (RFC 862).
const ECHO_PORT: u64 = 7;
/// `UDP.PacketArrived(packet, source address, source port, destination
/// port)`: the parameter holding the destination port.
const DESTINATION_PORT: u32 = 3;
/// The most data one datagram of an Ethernet frame carries.
const MAX_DATA: usize = 1472;

static ECHOED: AtomicU64 = AtomicU64::new(0);

#[no_mangle]
pub extern "C" fn init() {
    let Some(udp) = Event::find("UDP.PacketArrived") else {
        spindle_sdk::log("udp-echo: no UDP.PacketArrived (no network interface)");
        return;
    };
    let installed = udp
        .install("on_datagram", None, Mode::Synchronous)
        .and_then(|binding| binding.guard_equals(DESTINATION_PORT, ECHO_PORT));
    match installed {
        Ok(()) => spindle_sdk::log("udp-echo: answering UDP port 7"),
        Err(status) => {
            spindle_sdk::log!("udp-echo: cannot serve port 7 (status {})", status.code())
        }
    }
}

/// The handler: the datagram's data back to its sender.
#[no_mangle]
pub extern "C" fn on_datagram(
    packet: i32,
    _source: i32,
    _source_port: i32,
    _destination_port: i32,
) {
    let packet = Packet(packet);
    let mut data = [0u8; MAX_DATA];
    let len = packet.read(0, &mut data);
    if packet.reply(&data[..len]).is_ok() {
        ECHOED.fetch_add(1, Ordering::Relaxed);
    }
}

/// Datagrams answered so far.
#[no_mangle]
pub extern "C" fn echoed() -> u64 {
    ECHOED.load(Ordering::Relaxed)
}
