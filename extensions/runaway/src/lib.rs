//! An ephemeral handler that never returns: the kernel aborts each
//! invocation when its fuel budget runs out and raises Extension.Faulted.
#![no_std]

use core::sync::atomic::{AtomicU64, Ordering};

use spindle_sdk::{Event, Mode};

/// Fuel per invocation the handler asks for.
const BUDGET: u64 = 100_000;

static SPINS: AtomicU64 = AtomicU64::new(0);

#[no_mangle]
pub extern "C" fn init() {
    if let Some(tick) = Event::find("Timer.Tick") {
        if let Err(status) = tick.install("spin", None, Mode::Ephemeral { fuel: BUDGET }) {
            spindle_sdk::log!("runaway: install failed: {:?}", status);
        }
    }
}

/// Loops forever (the counter keeps the loop from being optimized away).
#[no_mangle]
pub extern "C" fn spin(_ticks: u64) {
    loop {
        SPINS.fetch_add(1, Ordering::Relaxed);
    }
}
