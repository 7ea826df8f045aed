//! The native-code engine: the Wasm the kernel validated, translated by us
//! to Cranelift IR and compiled to x86_64 in the kernel
//! (docs/design/0008-native-engine.md).
//!
//! - [`vmctx`]: the context layout and trap codes generated code shares
//!   with the runtime;
//! - [`translate`]: Wasm operators to Cranelift IR, with the bounds, fuel,
//!   depth, stack and signature checks;
//! - [`single_pass`]: Wasm operators straight to x86_64 in one pass, for
//!   functions without loops (Cranelift compiles the rest);
//! - [`compile`]: the module to position-independent machine code, under
//!   [`compile::CompileLimits`];
//! - [`integer_entry`]: the entries through which the runtime calls an
//!   export that takes or returns floats, with integers;
//! - `layout`: a compiled module set up (memory, globals, table);
//! - `instance`: around it, the runtime procedures generated code calls,
//!   [`Instance`](super::Instance);
//! - `reading`: the kernel procedures read-only code calls without the
//!   instance lock;
//! - `entry`: the few `unsafe` lines that enter generated code and turn
//!   its context back into the instance (or the reading procedures) in
//!   the callbacks;
//! - [`engine`]: [`NativeEngine`], the tier behind [`super::Engine`];
//! - `run` (host only): a compiled module without imports called by name,
//!   for the differential tests.

pub mod compile;
mod counted;
pub mod engine;
mod entry;
mod instance;
pub mod integer_entry;
mod layout;
mod reading;
#[cfg(not(target_os = "none"))]
pub mod run;
pub mod single_pass;
pub mod translate;
pub mod vmctx;

pub use compile::{Backend, CompileError, CompileLimits, CompiledModule, Compiler};
pub use engine::NativeEngine;
pub use entry::STACK_BUDGET_BYTES;
pub use instance::{GuardedCall, NativeInstance, ReadOnly, SelfContained};
