//! A short-circuit of `getuid` whose answer is computed in floating
//! point, for the test that a system call handled by native Wasm code
//! leaves the calling program's x87/SSE registers as they were
//! (`user/fpukept.c`). Wasm's floats round to nearest: then one third
//! times three is exactly one and the answer is 1000. Run with the
//! program's rounding mode instead (upward, as the test program sets
//! it), the product is above one and the answer 1001.
#![no_std]

// Keeps the SDK linked (its panic handler).
use spindle_sdk as _;

/// `MachineTrap.Syscall(strand, number, a0..a5) -> i64`, bound for one
/// call number of one process.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn on_syscall(
    _strand: u64,
    number: u64,
    _a0: u64,
    _a1: u64,
    _a2: u64,
    _a3: u64,
    _a4: u64,
    _a5: u64,
) -> i64 {
    // Three, from the call number (getuid's, 102), so the compiler
    // cannot fold the arithmetic: the division runs in the handler.
    let three = core::hint::black_box(number as f64 / 34.0);
    let third = 1.0 / three;
    if third * three == 1.0 {
        1000
    } else {
        1001
    }
}
