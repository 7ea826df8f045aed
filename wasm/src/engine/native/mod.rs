//! The native-code engine's compiler: the Wasm the kernel validated,
//! translated by us to Cranelift IR and compiled to x86_64 in the kernel
//! (docs/design/0008-native-engine.md).
//!
//! - [`vmctx`]: the context layout and trap codes generated code shares
//!   with the runtime;
//! - [`translate`]: Wasm operators to Cranelift IR, with the bounds, fuel,
//!   depth and signature checks;
//! - [`compile`]: the module to position-independent machine code, under
//!   [`compile::CompileLimits`].
//!
//! - `run` (host only): a compiled module without imports set up and
//!   called through `hal::native_code`, for the differential tests.
//!
//! The kernel's code memory and the [`super::Engine`] implementation are
//! not written yet (docs/design/0008-native-engine.md, "What is left").

pub mod compile;
#[cfg(not(target_os = "none"))]
pub mod run;
pub mod translate;
pub mod vmctx;

pub use compile::{CompileError, CompileLimits, CompiledModule, Compiler};
