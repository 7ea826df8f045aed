//! Raises its own event from deep inside its handler. Loaded several
//! times, the copies nest into one another as extensions raising into
//! each other do: a raise of `Test.Nest` runs the first copy's handler,
//! which goes `DEPTH` calls deep and raises `Test.Nest` again, which runs
//! the next copy's (the first is busy), and so on. The kernel test
//! `nested_raises_stop_before_the_kernel_stack_runs_out` checks that the
//! nesting is stopped, contained, before the kernel stack runs out.
#![no_std]

use spindle_sdk::{Event, Mode};

/// Calls the handler goes down before it raises: each a frame of native
/// code on the kernel stack.
const DEPTH: u32 = 150;

#[no_mangle]
pub extern "C" fn init() {
    if let Some(nest) = Event::find("Test.Nest") {
        if let Err(status) = nest.install("nest", None, Mode::Synchronous) {
            spindle_sdk::log!("nest: install failed: {:?}", status);
        }
    }
}

/// The handler: how many copies answered below this one (the raise's
/// result plus one), 0 when its raise found none.
#[no_mangle]
pub extern "C" fn nest(level: u64) -> u64 {
    down(DEPTH, level)
}

/// Goes `calls` calls deep, then raises `Test.Nest` with `level + 1`.
#[inline(never)]
fn down(calls: u32, level: u64) -> u64 {
    if calls == 0 {
        return match Event::find("Test.Nest").map(|nest| nest.raise(&[level + 1])) {
            Some(Ok(below)) => below + 1,
            _ => 0,
        };
    }
    // Not a tail call: each level keeps its frame.
    core::hint::black_box(down(calls - 1, core::hint::black_box(level))) + 0
}
