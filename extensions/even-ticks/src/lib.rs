//! A guard and handler pair on `Timer.Tick`: the guard `is_even` only reads
//! its argument, so the kernel's purity check accepts it; the handler counts
//! the ticks it lets through. `bad_guard` writes memory: installing it as a
//! guard is refused (see `try_bad_guard`).
#![no_std]

use core::sync::atomic::{AtomicU64, Ordering};

use spindle_sdk::{Event, Mode, Status};

static EVEN: AtomicU64 = AtomicU64::new(0);
static LAST: AtomicU64 = AtomicU64::new(0);

#[no_mangle]
pub extern "C" fn init() {
    if let Some(tick) = Event::find("Timer.Tick") {
        if let Err(status) = tick.install("on_even_tick", Some("is_even"), Mode::Synchronous) {
            spindle_sdk::log!("even-ticks: install failed: {:?}", status);
        }
    }
}

/// The guard: side-effect free.
#[no_mangle]
pub extern "C" fn is_even(ticks: u64) -> i32 {
    (ticks % 2 == 0) as i32
}

/// The handler.
#[no_mangle]
pub extern "C" fn on_even_tick(_ticks: u64) {
    EVEN.fetch_add(1, Ordering::Relaxed);
}

/// Not a valid guard: it stores to memory.
#[no_mangle]
pub extern "C" fn bad_guard(ticks: u64) -> i32 {
    LAST.store(ticks, Ordering::Relaxed);
    1
}

/// Tries to install `bad_guard`; returns the status (expected: NotPure).
#[no_mangle]
pub extern "C" fn try_bad_guard() -> i32 {
    match Event::find("Timer.Tick")
        .map(|tick| tick.install("on_even_tick", Some("bad_guard"), Mode::Synchronous))
    {
        Some(Ok(_)) => Status::Ok.code(),
        Some(Err(status)) => status.code(),
        None => Status::NotFound.code(),
    }
}

/// The last tick `bad_guard` saw (read here so the store is not dead code).
#[no_mangle]
pub extern "C" fn last() -> u64 {
    LAST.load(Ordering::Relaxed)
}

/// Even ticks seen.
#[no_mangle]
pub extern "C" fn count() -> u64 {
    EVEN.load(Ordering::Relaxed)
}
