//! A UDP RPC service in the kernel (SPIN's in-kernel RPC example): each
//! datagram to port 5300 is a call, answered from the handler.
//!
//! Call: `procedure: u32, call id: u32, arguments` (little-endian).
//! Answer: `call id: u32, status: u32, result`. Procedures:
//! - 1 `add(a: u64, b: u64) -> u64` (wrapping);
//! - 2 `uptime() -> u64`, the kernel's nanoseconds since boot;
//! - 3 `count() -> u64`, calls answered so far by this instance (state
//!   kept in the extension between calls).
//!
//! Status 0 is success, 1 an unknown procedure, 2 arguments too short.
#![no_std]

use core::sync::atomic::{AtomicU64, Ordering};

use spindle_sdk::{Event, Mode, Packet};

/// The service's port.
const RPC_PORT: u64 = 5300;
/// `UDP.PacketArrived`'s destination-port parameter.
const DESTINATION_PORT: u32 = 3;

const OK: u32 = 0;
const NO_SUCH_PROCEDURE: u32 = 1;
const SHORT_ARGUMENTS: u32 = 2;

static CALLS: AtomicU64 = AtomicU64::new(0);

#[no_mangle]
pub extern "C" fn init() {
    let Some(udp) = Event::find("UDP.PacketArrived") else {
        spindle_sdk::log("udp-rpc: no UDP.PacketArrived (no network interface)");
        return;
    };
    match udp
        .install("on_call", None, Mode::Synchronous)
        .and_then(|binding| binding.guard_equals(DESTINATION_PORT, RPC_PORT))
    {
        Ok(()) => spindle_sdk::log("udp-rpc: serving calls on UDP port 5300"),
        Err(status) => {
            spindle_sdk::log!("udp-rpc: cannot serve port 5300 (status {})", status.code())
        }
    }
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// The handler: one call, one answer.
#[no_mangle]
pub extern "C" fn on_call(packet: i32, _source: i32, _source_port: i32, _destination_port: i32) {
    let packet = Packet(packet);
    let mut call = [0u8; 64];
    let len = packet.read(0, &mut call);
    let call = &call[..len];
    let (Some(procedure), Some(id)) = (u32_at(call, 0), u32_at(call, 4)) else {
        return; // Not even a header: nothing to answer to.
    };
    let arguments = &call[8..];
    let (status, result) = match procedure {
        1 => match (u64_at(arguments, 0), u64_at(arguments, 8)) {
            (Some(a), Some(b)) => (OK, a.wrapping_add(b)),
            _ => (SHORT_ARGUMENTS, 0),
        },
        2 => (OK, spindle_sdk::now_ns()),
        3 => (OK, CALLS.load(Ordering::Relaxed) + 1),
        _ => (NO_SUCH_PROCEDURE, 0),
    };
    let mut answer = [0u8; 16];
    answer[..4].copy_from_slice(&id.to_le_bytes());
    answer[4..8].copy_from_slice(&status.to_le_bytes());
    answer[8..].copy_from_slice(&result.to_le_bytes());
    if packet.reply(&answer).is_ok() {
        CALLS.fetch_add(1, Ordering::Relaxed);
    }
}

/// Calls answered so far.
#[no_mangle]
pub extern "C" fn calls() -> u64 {
    CALLS.load(Ordering::Relaxed)
}
