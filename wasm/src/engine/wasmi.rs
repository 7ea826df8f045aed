//! The wasmi engine: an interpreter, the first implementation of
//! [`Engine`].
//!
//! The version is wasmi 1.0.9 with `extra-checks` (`wasm/Cargo.toml`;
//! docs/design/0004-extension-safety.md says why not 2.0.0). wasmi runs in
//! ring 0 with `unsafe` inside, so it is part of the kernel's trusted base:
//! the fuzzers of `wasm/fuzz` test that trust on the host and in the kernel.
//!
//! Configuration and why:
//! - the feature set is [`crate::module::features`], so wasmi accepts
//!   exactly what the kernel's own validation accepted;
//! - fuel metering is on: every call gets a fuel bound (the extension's
//!   per-invocation limit or an ephemeral handler's budget);
//! - eager compilation: translation happens at load, not on a handler's
//!   first (budgeted) run, and load errors surface at load;
//! - stack limits from [`EngineConfig`]: wasmi keeps Wasm frames on its own
//!   heap stack and executes them in one loop, so deep recursion traps with
//!   `StackOverflow` without touching the kernel stack (tested on a 64 KiB
//!   thread);
//! - memory and table growth go through [`StoreLimits`];
//! - one `wasmi::Engine` per extension, created at instantiation and
//!   dropped with the instance (its module and store hold it). wasmi's
//!   engine keeps every function it ever compiled: its code map is
//!   append-only (buckets "never moved, reallocated, or freed" until the
//!   engine is dropped), so a single engine shared by all extensions grew
//!   by each loaded module's compiled code on every load/unload cycle (the
//!   kernel's 1,000-cycle test saw ~200 bytes a cycle for `hello`, ~8.5 KB
//!   for `tick-counter`; `wasm/tests/leaks.rs` measures it on the host).
//!   Extensions never shared compiled code anyway. Cost of a fresh engine,
//!   on the host: load + unload time unchanged within noise (`hello`
//!   ~35 µs, the 61 KB `big` ~1.2 ms); each loaded extension holds ~8-16 KB
//!   more (the engine's own value stack and translation buffers, kept for
//!   reuse), freed at unload with the rest.
//!
//! `Module::new` validates again: the unchecked constructor is `unsafe`
//! and this crate forbids `unsafe`; a second pass costs load time only.

use alloc::{boxed::Box, format, string::ToString, vec::Vec};

use spindle_abi::{FaultKind, Import, MEMORY_EXPORT};
use wasmi::{
    AsContext, AsContextMut, Caller, CompilationMode, Config, Func, Linker, Memory, Module, Store,
    StoreLimits, StoreLimitsBuilder, TrapCode, Val, ValType,
};

use super::{
    snapshot::{mutable_globals, Snapshot, GLOBAL_EXPORT_PREFIX},
    Engine, ExportRef, HostContext, Instance, Trap, WasmValue,
};
use crate::{
    config::{EngineConfig, Limits},
    error::LoadError,
    host,
    module::{features, ModuleInfo},
    state::ExtensionState,
};

/// The most parameters a handler or kernel procedure has (the dispatcher's
/// argument tuples stop at 8; `install` has 7).
const MAX_ARGS: usize = 8;

/// The wasmi engine: the configuration every extension's `wasmi::Engine`
/// is created with (see the module documentation for why each extension
/// gets its own).
pub struct WasmiEngine {
    config: Config,
}

impl WasmiEngine {
    /// An engine with `config`'s stack limits.
    pub fn new(config: &EngineConfig) -> Self {
        let mut wasmi_config = Config::default();
        let enabled = features();
        wasmi_config
            .consume_fuel(true)
            .compilation_mode(CompilationMode::Eager)
            .set_max_recursion_depth(config.max_call_depth)
            .set_max_stack_height(config.max_value_stack_bytes)
            .wasm_mutable_global(true)
            .wasm_sign_extension(true)
            .wasm_saturating_float_to_int(true)
            .wasm_multi_value(true)
            .wasm_multi_memory(false)
            .wasm_bulk_memory(enabled.bulk_memory())
            .wasm_reference_types(enabled.reference_types())
            .wasm_tail_call(enabled.tail_call())
            .wasm_extended_const(enabled.extended_const())
            .wasm_custom_page_sizes(false)
            .wasm_wide_arithmetic(false);
        WasmiEngine {
            config: wasmi_config,
        }
    }
}

/// What the wasmi store holds besides the instance.
struct StoreData {
    state: ExtensionState,
    memory: Option<Memory>,
    limits: StoreLimits,
    /// Exported functions resolved so far, indexed by [`ExportRef`].
    exports: Vec<(alloc::string::String, Func)>,
    instance: Option<wasmi::Instance>,
    /// The module's mutable globals: a snapshot reads them under the
    /// names `snapshot::export_mutable_globals` gave them (if the module
    /// instantiated is the rewritten one).
    mutable_globals: Vec<u32>,
}

impl Engine for WasmiEngine {
    fn instantiate(
        &self,
        bytes: &[u8],
        info: &ModuleInfo,
        imports: &[Import],
        state: ExtensionState,
        limits: &Limits,
        fuel: u64,
    ) -> Result<Box<dyn Instance>, LoadError> {
        // This extension's own engine: it lives as long as the module and
        // the store that hold it, and frees the compiled code with them.
        let engine = wasmi::Engine::new(&self.config);
        let module = Module::new(&engine, bytes).map_err(|e| LoadError::Engine(e.to_string()))?;
        let store_limits = StoreLimitsBuilder::new()
            .memory_size(usize::try_from(limits.memory_bytes()).unwrap_or(usize::MAX))
            .table_elements(limits.table_elements as usize)
            .instances(1)
            .memories(1)
            .tables(4)
            .build();
        let mut store = Store::new(
            &engine,
            StoreData {
                state,
                memory: None,
                limits: store_limits,
                exports: Vec::new(),
                instance: None,
                mutable_globals: mutable_globals(bytes),
            },
        );
        store.limiter(|data| &mut data.limits);
        let mut linker = Linker::<StoreData>::new(&engine);
        let function_imports = info.imports.iter().filter(|i| i.func_type.is_some());
        for (entry, &import) in function_imports.zip(imports) {
            let ty = wasmi::FuncType::new(
                import.spec().params.iter().map(|&t| abi_type(t)),
                import.spec().result.map(abi_type),
            );
            linker
                .func_new(
                    &entry.module,
                    &entry.name,
                    ty,
                    move |caller, params, results| call_host(caller, import, params, results),
                )
                .map_err(|e| LoadError::Engine(e.to_string()))?;
        }
        store
            .set_fuel(fuel)
            .map_err(|e| LoadError::Engine(e.to_string()))?;
        let instance =
            linker
                .instantiate_and_start(&mut store, &module)
                .map_err(|e| match trap_of(&e) {
                    Some(trap) => LoadError::InitFaulted(trap.to_string()),
                    None => LoadError::Engine(e.to_string()),
                })?;
        let memory = instance.get_memory(&store, MEMORY_EXPORT);
        store.data_mut().memory = memory;
        store.data_mut().instance = Some(instance);
        Ok(Box::new(WasmiInstance {
            store,
            last_fuel_used: 0,
        }))
    }
}

fn abi_type(ty: spindle_abi::WasmType) -> ValType {
    match ty {
        spindle_abi::WasmType::I32 => ValType::I32,
        spindle_abi::WasmType::I64 => ValType::I64,
    }
}

/// The trampoline of every kernel procedure: converts values, runs the
/// procedure, turns its trap into a wasmi host error.
fn call_host(
    caller: Caller<'_, StoreData>,
    import: Import,
    params: &[Val],
    results: &mut [Val],
) -> Result<(), wasmi::Error> {
    let mut args = [WasmValue::I32(0); MAX_ARGS];
    for (slot, param) in args.iter_mut().zip(params) {
        *slot = from_val(param);
    }
    let mut context = Context(caller);
    let args = &args[..params.len().min(MAX_ARGS)];
    match host::call(&mut context, import, args) {
        Ok(Some(value)) => {
            if let Some(slot) = results.first_mut() {
                *slot = to_val(value);
            }
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(trap) => Err(wasmi::Error::host(HostTrap(trap))),
    }
}

/// A kernel procedure's trap, carried through wasmi.
#[derive(Debug)]
struct HostTrap(Trap);

impl core::fmt::Display for HostTrap {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.0.fmt(f)
    }
}

impl wasmi::errors::HostError for HostTrap {}

fn from_val(value: &Val) -> WasmValue {
    match value {
        Val::I32(v) => WasmValue::I32(*v),
        Val::I64(v) => WasmValue::I64(*v),
        Val::F32(v) => WasmValue::F32(v.to_bits()),
        Val::F64(v) => WasmValue::F64(v.to_bits()),
        // Never in kernel procedure or handler signatures (checked at link
        // and bind); zero keeps the trampoline total.
        _ => WasmValue::I32(0),
    }
}

fn to_val(value: WasmValue) -> Val {
    match value {
        WasmValue::I32(v) => Val::I32(v),
        WasmValue::I64(v) => Val::I64(v),
        WasmValue::F32(bits) => Val::F32(wasmi::F32::from_bits(bits)),
        WasmValue::F64(bits) => Val::F64(wasmi::F64::from_bits(bits)),
    }
}

fn zero_of(ty: &ValType) -> Val {
    match ty {
        ValType::I64 => Val::I64(0),
        ValType::F32 => Val::F32(wasmi::F32::from_bits(0)),
        ValType::F64 => Val::F64(wasmi::F64::from_bits(0)),
        _ => Val::I32(0),
    }
}

/// Classifies a wasmi error as a trap, if it is one.
fn trap_of(error: &wasmi::Error) -> Option<Trap> {
    if let Some(HostTrap(trap)) = error.downcast_ref::<HostTrap>() {
        return Some(trap.clone());
    }
    let code = error.as_trap_code()?;
    let kind = match code {
        TrapCode::UnreachableCodeReached => FaultKind::Unreachable,
        TrapCode::MemoryOutOfBounds | TrapCode::TableOutOfBounds => FaultKind::OutOfBounds,
        TrapCode::IntegerDivisionByZero => FaultKind::DivisionByZero,
        TrapCode::IntegerOverflow | TrapCode::BadConversionToInteger => FaultKind::Arithmetic,
        TrapCode::StackOverflow => FaultKind::StackOverflow,
        TrapCode::IndirectCallToNull | TrapCode::BadSignature => FaultKind::IndirectCall,
        TrapCode::OutOfFuel => FaultKind::BudgetExhausted,
        _ => FaultKind::Other,
    };
    Some(Trap::new(kind, format!("{code}")))
}

fn memory_range(offset: u32, len: u32, size: usize) -> Result<core::ops::Range<usize>, Trap> {
    let start = offset as usize;
    let end = start
        .checked_add(len as usize)
        .filter(|&end| end <= size)
        .ok_or_else(|| {
            Trap::new(
                FaultKind::BadPointer,
                format!("{offset:#x}+{len} outside {size} bytes"),
            )
        })?;
    Ok(start..end)
}

fn no_memory() -> Trap {
    Trap::new(FaultKind::BadPointer, "the extension exports no memory")
}

fn read_memory(
    context: impl AsContext<Data = StoreData>,
    offset: u32,
    len: u32,
) -> Result<Vec<u8>, Trap> {
    let context = context.as_context();
    let memory = context.data().memory.ok_or_else(no_memory)?;
    let data = memory.data(context);
    Ok(data[memory_range(offset, len, data.len())?].to_vec())
}

fn write_memory(
    mut context: impl AsContextMut<Data = StoreData>,
    offset: u32,
    bytes: &[u8],
) -> Result<(), Trap> {
    let len =
        u32::try_from(bytes.len()).map_err(|_| Trap::new(FaultKind::BadPointer, "too long"))?;
    let mut context = context.as_context_mut();
    let memory = context.data().memory.ok_or_else(no_memory)?;
    let data = memory.data_mut(&mut context);
    let range = memory_range(offset, len, data.len())?;
    data[range].copy_from_slice(bytes);
    Ok(())
}

fn resolve_export(
    mut context: impl AsContextMut<Data = StoreData>,
    name: &str,
) -> Option<ExportRef> {
    let mut context = context.as_context_mut();
    if let Some(at) = context.data().exports.iter().position(|(n, _)| n == name) {
        return Some(ExportRef(at as u32));
    }
    let instance = context.data().instance?;
    let func = instance.get_func(&context, name)?;
    let exports = &mut context.data_mut().exports;
    exports.push((name.to_string(), func));
    Some(ExportRef(exports.len() as u32 - 1))
}

/// What a kernel procedure sees during a host call.
struct Context<'a>(Caller<'a, StoreData>);

impl HostContext for Context<'_> {
    fn state(&self) -> &ExtensionState {
        &self.0.data().state
    }

    fn state_mut(&mut self) -> &mut ExtensionState {
        &mut self.0.data_mut().state
    }

    fn read_memory(&self, offset: u32, len: u32) -> Result<Vec<u8>, Trap> {
        read_memory(&self.0, offset, len)
    }

    fn write_memory(&mut self, offset: u32, bytes: &[u8]) -> Result<(), Trap> {
        write_memory(&mut self.0, offset, bytes)
    }

    fn export(&mut self, name: &str) -> Option<ExportRef> {
        resolve_export(&mut self.0, name)
    }
}

/// An instantiated extension under wasmi.
struct WasmiInstance {
    store: Store<StoreData>,
    last_fuel_used: u64,
}

impl HostContext for WasmiInstance {
    fn state(&self) -> &ExtensionState {
        &self.store.data().state
    }

    fn state_mut(&mut self) -> &mut ExtensionState {
        &mut self.store.data_mut().state
    }

    fn read_memory(&self, offset: u32, len: u32) -> Result<Vec<u8>, Trap> {
        read_memory(&self.store, offset, len)
    }

    fn write_memory(&mut self, offset: u32, bytes: &[u8]) -> Result<(), Trap> {
        write_memory(&mut self.store, offset, bytes)
    }

    fn export(&mut self, name: &str) -> Option<ExportRef> {
        resolve_export(&mut self.store, name)
    }
}

impl Instance for WasmiInstance {
    fn call(
        &mut self,
        function: ExportRef,
        args: &[WasmValue],
        fuel: u64,
    ) -> Result<Option<WasmValue>, Trap> {
        let Some(&(_, func)) = self.store.data().exports.get(function.0 as usize) else {
            return Err(Trap::new(FaultKind::Other, "unknown export reference"));
        };
        let ty = func.ty(&self.store);
        if args.len() != ty.params().len() || args.len() > MAX_ARGS || ty.results().len() > 1 {
            return Err(Trap::new(FaultKind::Other, "call with the wrong arity"));
        }
        let inputs: [Val; MAX_ARGS] =
            core::array::from_fn(|i| args.get(i).map_or(Val::I32(0), |&a| to_val(a)));
        let mut outputs = [ty.results().first().map_or(Val::I32(0), zero_of)];
        let outputs = &mut outputs[..ty.results().len()];
        self.store
            .set_fuel(fuel)
            .map_err(|e| Trap::new(FaultKind::Other, e.to_string()))?;
        let result = func.call(&mut self.store, &inputs[..args.len()], outputs);
        self.last_fuel_used = fuel.saturating_sub(self.store.get_fuel().unwrap_or(0));
        match result {
            Ok(()) => Ok(outputs.first().map(from_val)),
            Err(error) => {
                Err(trap_of(&error)
                    .unwrap_or_else(|| Trap::new(FaultKind::Other, error.to_string())))
            }
        }
    }

    fn memory_bytes(&self) -> usize {
        self.store
            .data()
            .memory
            .map_or(0, |memory| memory.data_size(&self.store))
    }

    fn last_fuel_used(&self) -> u64 {
        self.last_fuel_used
    }

    fn snapshot(&self) -> Option<Snapshot> {
        let data = self.store.data();
        let instance = data.instance?;
        let memory = match data.memory {
            Some(memory) => memory.data(&self.store).to_vec(),
            // A memory wasmi does not show (not exported) cannot be moved.
            None if data.state.module.memory_pages.is_some() => return None,
            None => Vec::new(),
        };
        let mut globals = Vec::with_capacity(data.mutable_globals.len());
        for &index in &data.mutable_globals {
            let name = format!("{GLOBAL_EXPORT_PREFIX}{index}");
            let value = match instance.get_global(&self.store, &name)?.get(&self.store) {
                Val::I32(v) => u64::from(v as u32),
                Val::I64(v) => v as u64,
                Val::F32(v) => u64::from(v.to_bits()),
                Val::F64(v) => v.to_bits(),
                _ => return None,
            };
            globals.push((index, value));
        }
        Some(Snapshot {
            memory,
            globals,
            exports: data.exports.iter().map(|(name, _)| name.clone()).collect(),
        })
    }

    fn into_state(self: Box<Self>) -> ExtensionState {
        self.store.into_data().state
    }

    #[cfg(feature = "native")]
    fn into_native(
        self: Box<Self>,
    ) -> Result<Box<super::native::NativeInstance>, Box<dyn Instance>> {
        Err(self)
    }
}
