//! The seam between the runtime and the code that executes WebAssembly.
//!
//! design.md "Extensions": "the engine sits behind a seam: an interpreter
//! (wasmi) first; native code generation next". An [`Engine`] instantiates
//! a module the runtime has already validated and linked; the resulting
//! [`Instance`] calls exported functions under a fuel bound and gives the
//! kernel procedures (`crate::host`) a [`HostContext`]: the extension's
//! state and checked access to its linear memory. Nothing above this module
//! names wasmi.

use alloc::{boxed::Box, string::String, sync::Arc, vec::Vec};
use core::fmt;

use spindle_abi::{FaultKind, Import};

use crate::{config::Limits, error::LoadError, module::ModuleInfo, state::ExtensionState};

#[cfg(feature = "native")]
pub mod native;
pub mod snapshot;
pub mod wasmi;

pub use snapshot::{Snapshot, Takeover};

/// A Wasm value crossing the seam (floats as their bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WasmValue {
    /// `i32`.
    I32(i32),
    /// `i64`.
    I64(i64),
    /// `f32`, as bits.
    F32(u32),
    /// `f64`, as bits.
    F64(u64),
}

impl WasmValue {
    /// Its type.
    pub fn ty(&self) -> crate::module::WasmType {
        use crate::module::WasmType;
        match self {
            WasmValue::I32(_) => WasmType::I32,
            WasmValue::I64(_) => WasmType::I64,
            WasmValue::F32(_) => WasmType::F32,
            WasmValue::F64(_) => WasmType::F64,
        }
    }
}

/// As a person reads it: the number and its type, `3 (i64)`; floats as
/// their value.
impl fmt::Display for WasmValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            WasmValue::I32(value) => write!(f, "{value} (i32)"),
            WasmValue::I64(value) => write!(f, "{value} (i64)"),
            WasmValue::F32(bits) => write!(f, "{} (f32)", f32::from_bits(bits)),
            WasmValue::F64(bits) => write!(f, "{} (f64)", f64::from_bits(bits)),
        }
    }
}

/// The most integer arguments of the typed entry
/// ([`Instance::call_integers`]): the dispatcher's argument tuples stop at
/// 8, and so does native code's entry.
pub const MAX_INTEGER_ARGUMENTS: usize = 8;

/// An exported function, resolved once so calls need no name lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExportRef(pub(crate) u32);

/// Why an invocation was aborted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trap {
    /// The kind, as the `Extension.Faulted` event reports it.
    pub kind: FaultKind,
    /// Details for the console.
    pub message: String,
}

impl Trap {
    /// A trap of `kind`.
    pub fn new(kind: FaultKind, message: impl Into<String>) -> Self {
        Trap {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for Trap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.describe(), self.message)
    }
}

/// What a kernel procedure sees of the extension that called it (and what
/// the runtime uses to bind exports).
pub trait HostContext {
    /// The extension's kernel-side state.
    fn state(&self) -> &ExtensionState;
    /// The same, mutable.
    fn state_mut(&mut self) -> &mut ExtensionState;
    /// Copies `len` bytes at `offset` out of linear memory; a range outside
    /// it is a [`FaultKind::BadPointer`] trap.
    fn read_memory(&self, offset: u32, len: u32) -> Result<Vec<u8>, Trap>;
    /// Copies `bytes` into linear memory at `offset`.
    fn write_memory(&mut self, offset: u32, bytes: &[u8]) -> Result<(), Trap>;
    /// The exported function `name`, resolved for calls.
    fn export(&mut self, name: &str) -> Option<ExportRef>;
    /// A way to call `function` without the instance, when the engine has
    /// one and the function is self-contained
    /// (`purity::FunctionEffects::is_self_contained`: it reaches no
    /// memory, global, table or other function, so calls of it share
    /// nothing with the instance's other invocations). Guards take it.
    fn self_contained(&self, _function: ExportRef) -> Option<Arc<SelfContained>> {
        None
    }
    /// A way to call `function` without the instance lock, when the
    /// engine has one and the function is read-only but not
    /// self-contained (`purity::is_read_only`: it and all it calls only
    /// read linear memory and globals): it changes nothing, so it can run
    /// beside the instance's other invocations, and again if one of them
    /// changed what it read meanwhile.
    fn read_only(&self, _function: ExportRef) -> Option<Arc<ReadOnly>> {
        None
    }
}

/// A self-contained function's code, callable without its instance (see
/// [`HostContext::self_contained`]): native code's (the one engine that
/// has it), called directly rather than through a trait object, so a
/// guard's call of it is inlined.
#[cfg(feature = "native")]
pub use native::{GuardedCall, ReadOnly, SelfContained};

/// The most parameters a self-contained function may take to be called
/// without its instance (all in registers).
pub const SELF_CONTAINED_ARGUMENTS: usize = 5;

/// Without the native engine no function is self-contained: nothing of
/// this type exists.
#[cfg(not(feature = "native"))]
pub enum SelfContained {}

/// Without the native engine no function runs without its instance:
/// nothing of this type exists.
#[cfg(not(feature = "native"))]
pub enum ReadOnly {}

#[cfg(not(feature = "native"))]
impl ReadOnly {
    /// As the native engine's: never called, since none exists.
    pub fn params(&self) -> usize {
        match *self {}
    }

    /// As the native engine's: never called, since none exists.
    pub fn call(
        &self,
        _args: [i64; SELF_CONTAINED_ARGUMENTS],
        _count: usize,
        _fuel: u64,
    ) -> Result<i64, Trap> {
        match *self {}
    }

    /// As the native engine's: never called, since none exists.
    pub fn call_guarded(
        &self,
        _handler: &SelfContained,
        _args: [i64; SELF_CONTAINED_ARGUMENTS],
        _count: usize,
        _guard_fuel: u64,
        _handler_fuel: u64,
        _still_valid: impl FnOnce() -> bool,
    ) -> Option<GuardedCall> {
        match *self {}
    }
}

/// Without the native engine: never made, as no [`SelfContained`] is.
#[cfg(not(feature = "native"))]
pub enum GuardedCall {
    /// The guard returned zero.
    Declined,
    /// The guard trapped.
    GuardTrapped(Trap),
    /// The handler ran.
    Ran(Result<i64, Trap>),
}

#[cfg(not(feature = "native"))]
impl SelfContained {
    /// As the native engine's: never called, since none exists.
    pub fn params(&self) -> usize {
        match *self {}
    }

    /// As the native engine's: never called, since none exists.
    pub fn call(
        &self,
        _args: [i64; SELF_CONTAINED_ARGUMENTS],
        _count: usize,
        _fuel: u64,
    ) -> Result<i64, Trap> {
        match *self {}
    }

    /// As the native engine's: never called, since none exists.
    pub fn call_guarded(
        &self,
        _handler: &SelfContained,
        _args: [i64; SELF_CONTAINED_ARGUMENTS],
        _count: usize,
        _guard_fuel: u64,
        _handler_fuel: u64,
    ) -> GuardedCall {
        match *self {}
    }
}

/// An instantiated extension.
pub trait Instance: HostContext + Send {
    /// Calls `function` with `args`, allowing it `fuel` units of work.
    fn call(
        &mut self,
        function: ExportRef,
        args: &[WasmValue],
        fuel: u64,
    ) -> Result<Option<WasmValue>, Trap>;
    /// The typed entry: calls `function` with integer `args` (an `i32`
    /// as its value sign- or zero-extended, an `i64` as is) and `fuel`,
    /// without [`WasmValue`]s; its result as an integer (an `i32`
    /// sign-extended, 0 when it has none). `args` holds `count` arguments
    /// then zeros. `None` when this engine has no such entry: the caller
    /// converts and uses [`Instance::call`].
    fn call_integers(
        &mut self,
        _function: ExportRef,
        _args: &[i64; MAX_INTEGER_ARGUMENTS],
        _count: usize,
        _fuel: u64,
    ) -> Option<Result<i64, Trap>> {
        None
    }
    /// This instance as native code, whose typed entry
    /// ([`native::NativeInstance::call_typed`]) the runtime inlines into
    /// its invocation, or, for other engines, itself back. Asked once,
    /// when the extension takes the instance (`extension::Loaded`), so
    /// that an invocation makes no virtual call to find out.
    #[cfg(feature = "native")]
    fn into_native(self: Box<Self>) -> Result<Box<native::NativeInstance>, Box<dyn Instance>>;
    /// Bytes of linear memory currently allocated.
    fn memory_bytes(&self) -> usize;
    /// Fuel consumed by the last [`Instance::call`].
    fn last_fuel_used(&self) -> u64;
    /// What the code changed, to move the extension to another tier;
    /// `None` when this engine cannot read all of it.
    fn snapshot(&self) -> Option<Snapshot> {
        None
    }
    /// Ends the instance, giving back the extension's state (a tier-up
    /// hands it to the new instance).
    fn into_state(self: Box<Self>) -> ExtensionState;
}

/// Executes WebAssembly.
pub trait Engine: Send + Sync {
    /// Instantiates a validated module whose imports (function imports
    /// only, in order) resolved to the kernel procedures `imports`. The
    /// start function, if any, runs with `fuel`.
    fn instantiate(
        &self,
        bytes: &[u8],
        info: &ModuleInfo,
        imports: &[Import],
        state: ExtensionState,
        limits: &Limits,
        fuel: u64,
    ) -> Result<Box<dyn Instance>, LoadError>;

    /// Prepares an instance of the module to take over a running one (a
    /// tier-up): everything that can fail (compilation, code memory,
    /// setup) happens here, without the extension's lock. Engines that
    /// cannot refuse.
    fn prepare_takeover(
        &self,
        _bytes: &[u8],
        _info: &alloc::sync::Arc<ModuleInfo>,
        _imports: &[Import],
        _limits: &Limits,
    ) -> Result<Box<dyn Takeover>, LoadError> {
        Err(LoadError::Engine(
            "this engine takes over no instance".into(),
        ))
    }
}
