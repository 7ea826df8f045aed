//! Handlers that fault on `Timer.Tick`, chosen by `mode` (set with
//! `set_mode`): 0 unreachable, 1 division by zero, 2 out-of-bounds load,
//! 3 a revoked (never granted) handle. The kernel aborts the invocation,
//! raises Extension.Faulted, and the rest of the system carries on.
#![no_std]

use core::sync::atomic::{AtomicU32, Ordering};

use spindle_sdk::{Event, Mode};

static MODE: AtomicU32 = AtomicU32::new(0);
static DIVISOR: AtomicU32 = AtomicU32::new(0);

#[no_mangle]
pub extern "C" fn init() {
    if let Some(tick) = Event::find("Timer.Tick") {
        let _ = tick.install("on_tick", None, Mode::Synchronous);
    }
}

/// Selects how the next ticks fault.
#[no_mangle]
pub extern "C" fn set_mode(mode: u32) {
    MODE.store(mode, Ordering::Relaxed);
}

#[no_mangle]
pub extern "C" fn on_tick(ticks: u64) {
    match MODE.load(Ordering::Relaxed) {
        0 => core::arch::wasm32::unreachable(),
        1 => {
            // Wasm's i32.div_u traps on zero; Rust would panic first, so go
            // through wrapping arithmetic the compiler cannot fold.
            let divisor = DIVISOR.load(Ordering::Relaxed);
            let quotient = (ticks as u32).checked_div(divisor);
            if quotient.is_none() {
                core::arch::wasm32::unreachable()
            }
        }
        2 => {
            let address = core::hint::black_box(0xffff_fff0usize) as *const u64;
            // SAFETY: deliberately not: the load is outside linear memory and
            // traps in the engine, which is what this extension demonstrates.
            let _ = unsafe { core::ptr::read_volatile(address) };
        }
        _ => {
            // SAFETY: a plain integer argument; the handle is bad on purpose.
            unsafe {
                spindle_sdk::raw::handle_kind(0x7fff_0000);
            }
        }
    }
}
