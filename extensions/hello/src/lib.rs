//! The smallest extension: logs when the kernel loads it.
#![no_std]

#[no_mangle]
pub extern "C" fn init() {
    spindle_sdk::log("hello from a Wasm extension");
}
