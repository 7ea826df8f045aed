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
//! Entering the code (code memory, W^X, the typed entry) belongs in `hal`
//! and is not written yet: this tier is not behind [`super::Engine`] yet.

pub mod compile;
pub mod translate;
pub mod vmctx;

pub use compile::{CompileError, CompileLimits, CompiledModule, Compiler};
