//! What the extension benchmarks call (`wasm_runtime::bench`): an empty
//! handler and an always-true guard for `Bench.Event(u64)`, and a loop of
//! `n` empty kernel calls (`spindle.null_call`).
#![no_std]

/// The empty handler.
#[no_mangle]
pub extern "C" fn handler(_value: u64) {}

/// The guard: always true, side-effect free.
#[no_mangle]
pub extern "C" fn guard(_value: u64) -> i32 {
    1
}

/// Makes `n` Wasm-to-kernel calls of the empty procedure.
#[no_mangle]
pub extern "C" fn null_calls(n: u32) {
    for _ in 0..n {
        spindle_sdk::null_call();
    }
}
