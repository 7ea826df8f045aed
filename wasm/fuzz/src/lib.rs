//! Fuzzing the extension runtime: what the host fuzzer (`tests/loader.rs`)
//! and the kernel's fuzz mode (`spindle.mode=fuzz`) share, so a case that
//! fails in one replays in the other.
//!
//! A case is named by a seed and a number. From them come, independently:
//! - the module (`generate::case`, host only: wasm-smith modules that
//!   import the kernel procedures, mutations of them, and random bytes);
//! - the run ([`Rng::for_case`] with [`Stream::Run`]): the limits and the
//!   arguments every export is called with ([`values`]).
//!
//! [`exercise()`] drives one module through everything an extension can do
//! (load, bind its exports as handlers and guards, raise the event, call
//! every export with varied arguments, unload) and checks the runtime's
//! contract on each step: a refusal says why, a call ends in a result or
//! a contained trap, and unload takes everything back.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;
#[cfg(feature = "generate")]
extern crate std;

pub mod exercise;
#[cfg(feature = "generate")]
pub mod generate;
pub mod rng;
pub mod values;

pub use exercise::{exercise, Outcome, Target, Violation};
pub use rng::{Rng, Stream};
