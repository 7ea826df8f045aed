//! Counts `Timer.Tick` events: installs its own handler at init through
//! the kernel's `install` procedure.
#![no_std]

use core::sync::atomic::{AtomicU64, Ordering};

use spindle_sdk::{Event, Mode};

static TICKS: AtomicU64 = AtomicU64::new(0);

#[no_mangle]
pub extern "C" fn init() {
    match Event::find("Timer.Tick").map(|tick| tick.install("on_tick", None, Mode::Synchronous)) {
        Some(Ok(_)) => spindle_sdk::log("tick-counter: installed on Timer.Tick"),
        Some(Err(status)) => spindle_sdk::log!("tick-counter: install failed: {:?}", status),
        None => spindle_sdk::log("tick-counter: no Timer.Tick granted"),
    }
}

/// The handler: `Timer.Tick(ticks: u64)`.
#[no_mangle]
pub extern "C" fn on_tick(_ticks: u64) {
    TICKS.fetch_add(1, Ordering::Relaxed);
}

/// Ticks seen so far.
#[no_mangle]
pub extern "C" fn count() -> u64 {
    TICKS.load(Ordering::Relaxed)
}

/// Tries to raise `Timer.Tick` itself (granted only to install handlers
/// on): returns 0 if the raise went through, else the refusal's status
/// code (`Denied`, -3, is what the kernel must answer).
#[no_mangle]
pub extern "C" fn raise_tick() -> i32 {
    match Event::find("Timer.Tick").map(|tick| tick.raise(&[0])) {
        Some(Ok(_)) => 0,
        Some(Err(status)) => status.code(),
        None => spindle_sdk::Status::NotFound.code(),
    }
}

/// Looks for `MachineTrap.Syscall`, which this extension was not granted:
/// 0 if found, else the status code (`NotFound`, -1).
#[no_mangle]
pub extern "C" fn find_syscall_event() -> i32 {
    match Event::find("MachineTrap.Syscall") {
        Some(_) => 0,
        None => spindle_sdk::Status::NotFound.code(),
    }
}
