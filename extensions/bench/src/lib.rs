//! What the extension benchmarks call (`wasm_runtime::bench`): an empty
//! handler, an always-true guard, a guard that reads a limit from the
//! extension's memory, a guard that reads the clock and a counting
//! handler for `Bench.Event(u64)`, and
//! a loop of `n` empty kernel calls
//! (`spindle.null_call`), and the RFC 1071 checksum of a 1,500-byte
//! packet.
#![no_std]

use core::sync::atomic::{AtomicU64, Ordering};

/// What [`count`] added up.
static TOTAL: AtomicU64 = AtomicU64::new(0);

/// The empty handler.
#[no_mangle]
pub extern "C" fn handler(_value: u64) {}

/// The guard: always true, side-effect free.
#[no_mangle]
pub extern "C" fn guard(_value: u64) -> i32 {
    1
}

/// The limit [`below_limit`] compares with, set by [`set_limit`].
static LIMIT: AtomicU64 = AtomicU64::new(0);

/// A guard that reads the extension's state, as real filters do: holds
/// for values below the limit in linear memory. Read-only (a load, no
/// store), so native code runs it without the instance lock.
#[no_mangle]
pub extern "C" fn below_limit(value: u64) -> i32 {
    i32::from(value < LIMIT.load(Ordering::Relaxed))
}

/// Sets the limit [`below_limit`] compares with.
#[no_mangle]
pub extern "C" fn set_limit(limit: u64) {
    LIMIT.store(limit, Ordering::Relaxed);
}

/// The time [`before_deadline`] compares the clock with, set by
/// [`set_deadline`].
static DEADLINE: AtomicU64 = AtomicU64::new(0);

/// A guard that asks the kernel the time, as a time-window or rate
/// filter does: holds while the clock (`spindle.timer_now_ns`) is before
/// the deadline in linear memory. The procedure changes nothing, so
/// native code runs this guard without the instance lock too.
#[no_mangle]
pub extern "C" fn before_deadline(_value: u64) -> i32 {
    i32::from(spindle_sdk::now_ns() < DEADLINE.load(Ordering::Relaxed))
}

/// Sets the deadline [`before_deadline`] compares the clock with, in
/// nanoseconds since boot.
#[no_mangle]
pub extern "C" fn set_deadline(deadline_ns: u64) {
    DEADLINE.store(deadline_ns, Ordering::Relaxed);
}

/// A handler that does what real ones do, touch the extension's state:
/// adds the event's value to a total in linear memory.
#[no_mangle]
pub extern "C" fn count(value: u64) {
    TOTAL.fetch_add(value, Ordering::Relaxed);
}

/// The total [`count`] added up.
#[no_mangle]
pub extern "C" fn total() -> u64 {
    TOTAL.load(Ordering::Relaxed)
}

/// Makes `n` Wasm-to-kernel calls of the empty procedure.
#[no_mangle]
pub extern "C" fn null_calls(n: u32) {
    for _ in 0..n {
        spindle_sdk::null_call();
    }
}

/// Bytes of the checksum benchmark's packet (an Ethernet MTU).
const PACKET_BYTES: usize = 1500;

/// The packet: the same bytes as `wasm_runtime::bench::packet` builds in
/// the kernel, so both checksums must agree.
static PACKET: [u8; PACKET_BYTES] = packet();

const fn packet() -> [u8; PACKET_BYTES] {
    let mut bytes = [0u8; PACKET_BYTES];
    let mut at = 0;
    while at < PACKET_BYTES {
        bytes[at] = (at.wrapping_mul(7).wrapping_add(13) ^ (at >> 3)) as u8;
        at += 1;
    }
    bytes
}

/// The RFC 1071 Internet checksum of the first `len` bytes of the packet
/// (the same function as `wasm_runtime::bench::checksum`, for
/// `ext.checksum_1500` against `ext.checksum_1500.rust`).
#[no_mangle]
pub extern "C" fn checksum(len: u32) -> u32 {
    // Through black_box so the compiler cannot fold the constant packet.
    let packet: &[u8] = core::hint::black_box(&PACKET[..]);
    let bytes = &packet[..(len as usize).min(PACKET_BYTES)];
    let mut sum: u32 = 0;
    let mut pairs = bytes.chunks_exact(2);
    for pair in &mut pairs {
        sum += u32::from(u16::from_be_bytes([pair[0], pair[1]]));
    }
    if let [last] = pairs.remainder() {
        sum += u32::from(*last) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    u32::from(!(sum as u16))
}
