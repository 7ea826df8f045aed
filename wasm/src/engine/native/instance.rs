//! A compiled module instantiated: its context, its `layout::Layout`
//! (memory, globals, table, function addresses), the extension's state,
//! and the runtime procedures generated code calls (kernel procedures, `memory.grow`,
//! `memory.copy`, `memory.fill`). All safe Rust: the few lines that enter
//! generated code and turn its context back into a [`Native`] are in
//! [`super::entry`].

use alloc::{boxed::Box, format, string::String, sync::Arc, vec::Vec};

use hal::native_code::{CodeMemory, ENTRY_ARGUMENTS, REGISTER_ARGUMENTS};
use spindle_abi::{FaultKind, Import};

use super::{
    super::snapshot::{Snapshot, Takeover},
    compile::CompiledModule,
    entry,
    layout::{refuse, Layout},
    reading::ReadingProcedures,
    vmctx::{self, TrapCode},
};
use crate::{
    config::{Limits, WASM_PAGE_BYTES},
    engine::{
        ExportRef, HostContext, Instance, Trap, WasmValue, MAX_INTEGER_ARGUMENTS,
        SELF_CONTAINED_ARGUMENTS,
    },
    host,
    module::{ModuleInfo, WasmType},
    state::ExtensionState,
};

// The typed entry passes its argument array to generated code as is.
const _: () = assert!(ENTRY_ARGUMENTS == MAX_INTEGER_ARGUMENTS);

/// Words of the context.
pub(super) const CONTEXT_WORDS: usize = vmctx::CONTEXT_BYTES / 8;

/// Whether a function of type `ty` can be entered from the runtime: at
/// most [`ENTRY_ARGUMENTS`] parameters and one result, integers or floats
/// (a function with floats through its integer entry,
/// `super::integer_entry`, which the compiler made for every such
/// export).
pub(super) fn is_enterable(ty: &crate::module::FuncType) -> bool {
    ty.params.len() <= ENTRY_ARGUMENTS
        && ty.results.len() <= 1
        && ty
            .params
            .iter()
            .chain(&ty.results)
            .all(|t| *t != WasmType::Other)
}

/// A value for a parameter of type `ty` as the runtime passes it to
/// generated code: in a 64-bit register, a float as its bits (the
/// integer entry turns them back); `None` if it is of another type.
#[inline]
fn raw_argument(value: WasmValue, ty: WasmType) -> Option<i64> {
    match (value, ty) {
        (WasmValue::I32(value), WasmType::I32) => Some(i64::from(value)),
        (WasmValue::I64(value), WasmType::I64) => Some(value),
        (WasmValue::F32(bits), WasmType::F32) => Some(i64::from(bits)),
        (WasmValue::F64(bits), WasmType::F64) => Some(bits as i64),
        _ => None,
    }
}

/// A call with a value of the wrong type (wasmi refuses it the same way).
#[cold]
fn wrong_types() -> Trap {
    Trap::new(FaultKind::Other, "call with the wrong types")
}

/// A raw result of generated code as a value of type `ty` (generated
/// code leaves the upper half of an `i32` undefined).
fn typed_result(raw: i64, ty: WasmType) -> WasmValue {
    match ty {
        WasmType::I64 => WasmValue::I64(raw),
        WasmType::F32 => WasmValue::F32(raw as u32),
        WasmType::F64 => WasmValue::F64(raw as u64),
        WasmType::I32 | WasmType::Other => WasmValue::I32(raw as i32),
    }
}

/// An export resolved for calls.
struct ResolvedExport {
    name: String,
    /// Its function index.
    function: u32,
    /// How many parameters it takes.
    params: usize,
    /// Their types, which a call's arguments must have.
    param_types: Vec<WasmType>,
    /// Its result type, if any.
    result: Option<WasmType>,
    /// Whether the runtime can enter it (see [`is_enterable`]).
    is_enterable: bool,
    /// Where its code starts, for the typed entry.
    offset: usize,
}

/// What generated code reaches through its context, and the extension's
/// state: everything the runtime procedures need.
pub(super) struct Native {
    /// The context generated code receives (laid out as [`vmctx`] says).
    pub(super) context: [u64; CONTEXT_WORDS],
    layout: Layout,
    /// Exports resolved so far, by [`ExportRef`]: what a call needs of
    /// each, looked up once.
    exports: Vec<ResolvedExport>,
    /// A kernel procedure's trap, until the entry reports it.
    pub(super) host_trap: Option<Trap>,
    state: ExtensionState,
    /// The code (shared with [`NativeInstance`]), for self-contained
    /// guards, which keep it alive without the instance.
    code: Arc<CodeMemory>,
}

impl Layout {
    /// The instance state around this layout, owning `state`, its
    /// context filled (see [`Native::fill_context`]).
    pub(super) fn into_native(self, state: ExtensionState, code: Arc<CodeMemory>) -> Native {
        let mut native = Native {
            context: [0; CONTEXT_WORDS],
            layout: self,
            exports: Vec::new(),
            host_trap: None,
            state,
            code,
        };
        native.fill_context();
        native
    }
}

impl Native {
    /// Fills the context words that stay the same from call to call: the
    /// addresses of the memory, table, function table and globals (their
    /// vectors are never resized but by `Native::grow`, which updates the
    /// memory's words itself, and by a tier-up's restore, after which
    /// this runs again), the call-depth limit and table size, and the
    /// runtime procedures. A call then sets only its fuel, the trap and
    /// depth word and the stack limit ([`Native::prepare`] and the entry).
    pub(super) fn fill_context(&mut self) {
        let context = &mut self.context;
        vmctx::set_memory(context, self.layout.memory.base(), self.layout.memory.len());
        // MAX_DEPTH (low half), TABLE_ELEMENTS (high half).
        context[(vmctx::MAX_DEPTH / 8) as usize] =
            u64::from(self.layout.max_depth) | ((self.layout.table.len() as u64 / 2) << 32);
        context[(vmctx::TABLE_BASE / 8) as usize] = self.layout.table.as_ptr() as u64;
        context[(vmctx::FUNCTIONS / 8) as usize] = self.layout.functions.as_ptr() as u64;
        context[(vmctx::GLOBALS / 8) as usize] = self.layout.globals.as_ptr() as u64;
        entry::fill_procedures(context);
    }

    /// Arms the context for a call with `fuel` (the stack limit and the
    /// instance's address are the entry's to set).
    #[inline]
    pub(super) fn prepare(&mut self, fuel: u64) {
        let context = &mut self.context;
        context[(vmctx::FUEL / 8) as usize] = fuel.min(i64::MAX as u64);
        // TRAP (low half) and DEPTH (high half) both start at zero.
        context[(vmctx::TRAP / 8) as usize] = 0;
        // `host_trap` is not cleared here: a kernel procedure's trap sets
        // it together with `TrapCode::Host`, which the entry reports by
        // taking it, so a value left over (by a host test's `call_raw`)
        // is never reported for another call, only replaced.
    }

    /// Whether some function of the module uses floats (see
    /// `CompiledFunction::uses_floats`).
    #[inline(always)]
    pub(super) fn uses_floats(&self) -> bool {
        self.layout.uses_floats
    }

    /// Fuel left after a call (zero when it ran out).
    pub(super) fn fuel_left(&self) -> u64 {
        (self.context[(vmctx::FUEL / 8) as usize] as i64).max(0) as u64
    }

    /// The trap code generated code stored, if any.
    pub(super) fn trap_code(&self) -> u32 {
        self.context[(vmctx::TRAP / 8) as usize] as u32
    }

    fn set_trap(&mut self, code: TrapCode) {
        let word = &mut self.context[(vmctx::TRAP / 8) as usize];
        *word = (*word & !0xffff_ffff) | u64::from(code as u32);
    }

    /// `memory.grow`: the old size in pages, or -1.
    pub(super) fn grow(&mut self, pages: u32) -> i32 {
        let memory = &mut self.layout.memory;
        let old_pages = memory.len() / WASM_PAGE_BYTES as usize;
        let new_bytes = (old_pages as u64 + u64::from(pages)) * WASM_PAGE_BYTES;
        if new_bytes > memory.max_bytes() as u64 || !memory.grow(new_bytes as usize) {
            return -1;
        }
        // The memory stays where it is, but its size changed: generated
        // code reloads its words after every call.
        vmctx::set_memory(&mut self.context, memory.base(), memory.len());
        old_pages as i32
    }

    fn range(&self, start: u32, len: u32) -> Option<core::ops::Range<usize>> {
        let end = start as usize + len as usize;
        (end <= self.layout.memory.len()).then_some(start as usize..end)
    }

    /// `memory.copy`; out of bounds sets the trap.
    pub(super) fn copy(&mut self, destination: u32, source: u32, len: u32) {
        match (self.range(destination, len), self.range(source, len)) {
            (Some(to), Some(from)) => self
                .layout
                .memory
                .as_mut_slice()
                .copy_within(from, to.start),
            _ => self.set_trap(TrapCode::MemoryOutOfBounds),
        }
    }

    /// `memory.fill`; out of bounds sets the trap.
    pub(super) fn fill(&mut self, destination: u32, value: u32, len: u32) {
        match self.range(destination, len) {
            Some(range) => self.layout.memory.as_mut_slice()[range].fill(value as u8),
            None => self.set_trap(TrapCode::MemoryOutOfBounds),
        }
    }

    /// A call of kernel procedure `procedure` with `arguments` (each
    /// widened to 64 bits, as many as it takes); its result, or zero after
    /// setting the trap. Always inlined into the trampolines of
    /// `entry.rs`, each with its procedure as a constant.
    #[inline(always)]
    pub(super) fn host_call(&mut self, procedure: Import, arguments: &[u64]) -> u64 {
        match host::call(self, procedure, arguments) {
            Ok(result) => raw_result(result),
            Err(trap) => self.host_trapped(trap),
        }
    }

    /// A kernel procedure trapped: kept for the entry, which reports it.
    #[cold]
    fn host_trapped(&mut self, trap: Trap) -> u64 {
        self.host_trap = Some(trap);
        self.set_trap(TrapCode::Host);
        0
    }

    fn memory_range(&self, offset: u32, len: u32) -> Result<core::ops::Range<usize>, Trap> {
        if !self.layout.memory_exported {
            return Err(Trap::new(
                FaultKind::BadPointer,
                "the extension exports no memory",
            ));
        }
        self.range(offset, len).ok_or_else(|| {
            Trap::new(
                FaultKind::BadPointer,
                format!(
                    "{offset:#x}+{len} outside {} bytes",
                    self.layout.memory.len()
                ),
            )
        })
    }
}

impl HostContext for Native {
    fn state(&self) -> &ExtensionState {
        &self.state
    }

    fn state_mut(&mut self) -> &mut ExtensionState {
        &mut self.state
    }

    fn read_memory(&self, offset: u32, len: u32) -> Result<Vec<u8>, Trap> {
        Ok(self.layout.memory.as_slice()[self.memory_range(offset, len)?].to_vec())
    }

    fn write_memory(&mut self, offset: u32, bytes: &[u8]) -> Result<(), Trap> {
        let len =
            u32::try_from(bytes.len()).map_err(|_| Trap::new(FaultKind::BadPointer, "too long"))?;
        let range = self.memory_range(offset, len)?;
        self.layout.memory.as_mut_slice()[range].copy_from_slice(bytes);
        Ok(())
    }

    fn export(&mut self, name: &str) -> Option<ExportRef> {
        if let Some(at) = self.exports.iter().position(|export| export.name == name) {
            return Some(ExportRef(at as u32));
        }
        let function = self.layout.info.exported_function(name)?;
        let ty = self.layout.info.function_type(function)?;
        let offset = self.layout.offsets.get(function as usize).copied();
        let resolved = ResolvedExport {
            name: name.into(),
            function,
            params: ty.params.len(),
            param_types: ty.params.clone(),
            result: ty.results.first().copied(),
            is_enterable: is_enterable(ty) && offset.is_some(),
            offset: offset.unwrap_or(usize::MAX),
        };
        self.exports.push(resolved);
        Some(ExportRef(self.exports.len() as u32 - 1))
    }

    fn self_contained(&self, function: ExportRef) -> Option<Arc<SelfContained>> {
        let (export, entry) = self.lockless_entry(function, |effects, function| {
            // Code that uses floats keeps the interrupted thread's x87/SSE
            // registers (`entry::run`): only the locked entry does that.
            effects.is_self_contained
                && self.layout.function_floats.get(function as usize) == Some(&false)
        })?;
        Some(Arc::new(SelfContained {
            entry,
            max_depth: self.layout.max_depth,
            params: export.params,
        }))
    }

    fn read_only(&self, function: ExportRef) -> Option<Arc<ReadOnly>> {
        // Imports: procedures that only read. Defined functions: any;
        // whether one that can be reached uses floats is noted, so that
        // the run keeps the interrupted thread's float registers.
        let layout = &self.layout;
        let uses_floats = core::cell::Cell::new(false);
        let runs_lockless = |index: u32| match layout.imports.get(index as usize) {
            Some(&import) => host::reads_only(import),
            None => {
                if layout.function_floats.get(index as usize) != Some(&false) {
                    uses_floats.set(true);
                }
                true
            }
        };
        let (export, entry) = self.lockless_entry(function, |effects, function| {
            // Self-contained code has the faster way (no state to point
            // at).
            !effects.is_self_contained
                && crate::purity::is_read_only(&layout.info, function, &runs_lockless)
        })?;
        let procedures = ReadingProcedures::new(
            self.state.handles.clone(),
            self.state.services.clone(),
            self.layout.memory.view(),
            self.layout.memory_exported,
            self.state.extension.clone(),
        );
        Some(Arc::new(ReadOnly {
            entry,
            state: entry::HeldState::new(
                procedures,
                self.layout.globals.clone(),
                self.layout.reading_functions.clone(),
            ),
            max_depth: self.layout.max_depth,
            params: export.params,
            uses_floats: uses_floats.get(),
        }))
    }
}

impl Native {
    /// The export `function` and its entry point, for a way to call it
    /// without the instance lock: if it is enterable with all its
    /// arguments in registers and `qualifies(effects, index)` says its
    /// scan allows it.
    fn lockless_entry(
        &self,
        function: ExportRef,
        qualifies: impl FnOnce(&crate::purity::FunctionEffects, u32) -> bool,
    ) -> Option<(&ResolvedExport, entry::HeldEntry)> {
        let export = self.exports.get(function.0 as usize)?;
        let effects = self.layout.info.effects_of(export.function)?;
        if !export.is_enterable
            || export.params > SELF_CONTAINED_ARGUMENTS
            || !qualifies(effects, export.function)
        {
            return None;
        }
        let offset = *self.layout.offsets.get(export.function as usize)?;
        Some((export, entry::HeldEntry::new(self.code.clone(), offset)?))
    }
}

/// A read-only exported function (see `HostContext::read_only`): run on
/// a context of its own that points at its instance's memory, globals
/// and function table, which it keeps, with the code, alive itself.
pub struct ReadOnly {
    entry: entry::HeldEntry,
    state: entry::HeldState,
    max_depth: u32,
    params: usize,
    /// Whether it, or code it calls, uses floats: its runs then keep the
    /// interrupted thread's x87/SSE registers (`keeping_fpu_state`).
    uses_floats: bool,
}

impl ReadOnly {
    /// How many parameters it takes (at most
    /// [`SELF_CONTAINED_ARGUMENTS`]).
    pub fn params(&self) -> usize {
        self.params
    }

    /// Calls it without its instance, with `fuel` (at most `i64::MAX`)
    /// and the first `count` of `args`, where `count` is
    /// [`ReadOnly::params`]: its raw integer result (the upper half of an
    /// `i32` undefined). What it reads may change under it meanwhile:
    /// the caller checks that no invocation of the instance ran beside it
    /// (`extension::Shared::invoke_read_only`) before it uses the outcome.
    #[inline(always)]
    pub fn call(
        &self,
        args: [i64; SELF_CONTAINED_ARGUMENTS],
        count: usize,
        fuel: u64,
    ) -> Result<i64, Trap> {
        hal::native_code::keeping_fpu_state_if(self.uses_floats, || {
            entry::run_read_only(&self.entry, &self.state, self.max_depth, fuel, args, count)
        })
    }

    /// Calls this function, a guard, with `guard_fuel` and, if
    /// `still_valid()` then says no invocation of the instance ran beside
    /// it (`None` otherwise: the guard's outcome is thrown away) and it
    /// returned non-zero, the self-contained `handler` (of the same
    /// module) with `handler_fuel`: both with the first `count` of `args`
    /// (both functions' parameter count) on one private context.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn call_guarded(
        &self,
        handler: &SelfContained,
        args: [i64; SELF_CONTAINED_ARGUMENTS],
        count: usize,
        guard_fuel: u64,
        handler_fuel: u64,
        still_valid: impl FnOnce() -> bool,
    ) -> Option<GuardedCall> {
        let max_depth = self.max_depth.max(handler.max_depth);
        let run = || {
            entry::run_read_only_guarded(
                &self.entry,
                &self.state,
                &handler.entry,
                max_depth,
                guard_fuel,
                handler_fuel,
                args,
                count,
                still_valid,
            )
        };
        // The handler is self-contained, so without floats: only the
        // guard's code may need them kept.
        hal::native_code::keeping_fpu_state_if(self.uses_floats, run)
    }
}

// A self-contained function's arguments all go in registers.
const _: () = assert!(SELF_CONTAINED_ARGUMENTS == REGISTER_ARGUMENTS);

/// A self-contained exported function (see `HostContext::self_contained`),
/// run on a context of its own by `entry::run_self_contained`. It keeps
/// the code alive itself; its entry point is found once, when it is made.
pub struct SelfContained {
    /// Its entry point, with the code memory it keeps alive.
    entry: entry::HeldEntry,
    max_depth: u32,
    params: usize,
}

/// What a self-contained guard and handler called as one
/// ([`SelfContained::call_guarded`]) gave.
pub enum GuardedCall {
    /// The guard returned zero: the handler did not run.
    Declined,
    /// The guard trapped: the handler did not run.
    GuardTrapped(Trap),
    /// The guard held and the handler ran: its raw result (as
    /// [`SelfContained::call`] gives it) or its trap.
    Ran(Result<i64, Trap>),
}

impl SelfContained {
    /// How many parameters it takes (at most
    /// [`SELF_CONTAINED_ARGUMENTS`]).
    pub fn params(&self) -> usize {
        self.params
    }

    /// Calls it with `fuel` (at most `i64::MAX`; more is no fuel) and the
    /// first `count` of `args`, where `count` is [`SelfContained::params`]
    /// (the caller checks it once, when it binds the function; a constant
    /// there makes the call pass exactly those registers): its raw integer
    /// result, whose upper half is undefined for an `i32`.
    #[inline(always)]
    pub fn call(
        &self,
        args: [i64; SELF_CONTAINED_ARGUMENTS],
        count: usize,
        fuel: u64,
    ) -> Result<i64, Trap> {
        entry::run_self_contained(&self.entry, self.max_depth, fuel, args, count)
            .map_err(self_contained_trap)
    }

    /// Calls this function, a guard, with `guard_fuel` and, if it returned
    /// non-zero, `handler` (of the same module) with `handler_fuel`, both
    /// with the first `count` of `args` and on one private context: one
    /// context armed for the two calls. As for [`SelfContained::call`],
    /// `count` is both functions' parameter count.
    #[inline(always)]
    pub fn call_guarded(
        &self,
        handler: &SelfContained,
        args: [i64; SELF_CONTAINED_ARGUMENTS],
        count: usize,
        guard_fuel: u64,
        handler_fuel: u64,
    ) -> GuardedCall {
        // The deeper limit of the two (the same module's: the same).
        let max_depth = self.max_depth.max(handler.max_depth);
        entry::run_self_contained_guarded(
            &self.entry,
            &handler.entry,
            max_depth,
            guard_fuel,
            handler_fuel,
            args,
            count,
        )
    }
}

/// A kernel procedure's result as generated code receives it: in the low
/// bits of a 64-bit register (an `i32` zero-extended, a float as its
/// bits), zero for none.
#[inline(always)]
pub(super) fn raw_result(result: Option<WasmValue>) -> u64 {
    match result {
        Some(WasmValue::I32(value)) => u64::from(value as u32),
        Some(WasmValue::I64(value)) => value as u64,
        Some(WasmValue::F32(bits)) => u64::from(bits),
        Some(WasmValue::F64(bits)) => bits,
        None => 0,
    }
}

/// A self-contained function's trap, as the runtime reports it.
#[cold]
#[inline(never)]
pub(super) fn self_contained_trap(code: TrapCode) -> Trap {
    Trap::new(code.fault_kind(), describe(code))
}

/// A module compiled into code memory and set up, waiting for the
/// extension state it will own: what a tier-up prepares off the
/// extension's lock.
pub struct Prepared {
    code: CodeMemory,
    layout: Layout,
}

impl Prepared {
    /// Copies `compiled` into code memory and sets up the module `bytes`
    /// (read as `info`); `Err` says why it cannot run natively.
    pub(super) fn new(
        compiled: &CompiledModule,
        bytes: &[u8],
        imports: &[Import],
        info: alloc::sync::Arc<ModuleInfo>,
        limits: &Limits,
        max_depth: u32,
    ) -> Result<Prepared, String> {
        for export in &info.exports {
            let Some(function) = export.function else {
                continue;
            };
            // A kernel procedure exported again has no code here: calls of
            // it go through the trampoline from generated code only.
            if function < info.imported_functions {
                return Err(refuse("a kernel procedure exported again"));
            }
            match info.function_type(function) {
                Some(ty) if is_enterable(ty) => {}
                _ => return Err(refuse("an export with float or many values")),
            }
        }
        let code = CodeMemory::new(&compiled.code).ok_or_else(|| refuse("no code memory"))?;
        let layout = Layout::new(&code, compiled, bytes, imports, info, limits, max_depth)?;
        Ok(Prepared { code, layout })
    }

    fn into_instance(self, state: ExtensionState) -> NativeInstance {
        let code = Arc::new(self.code);
        NativeInstance {
            native: Box::new(self.layout.into_native(state, code.clone())),
            code,
            fuel_given: 0,
        }
    }
}

impl Takeover for Prepared {
    fn accepts(&mut self, snapshot: &Snapshot) -> bool {
        self.layout.accepts(snapshot)
    }

    fn finish(self: Box<Self>, snapshot: Snapshot, state: ExtensionState) -> Box<dyn Instance> {
        let mut prepared = *self;
        prepared.layout.restore(&snapshot.memory, snapshot.globals);
        // `into_native` fills the context from the restored vectors.
        let mut instance = prepared.into_instance(state);
        // The same export references as the old instance's, in order.
        for name in &snapshot.exports {
            let _ = instance.native.export(name);
        }
        Box::new(instance)
    }
}

/// An extension running as native code.
pub struct NativeInstance {
    /// Dropped after `native` (field order), though nothing runs then.
    native: Box<Native>,
    code: Arc<CodeMemory>,
    /// The fuel the last call started with (what it used is computed
    /// from it when asked, off the call's path).
    fuel_given: u64,
}

impl NativeInstance {
    /// Sets up `compiled` for the module `bytes` (validated as
    /// `state.module`) whose imports resolved to `imports`, and runs its
    /// start function with `fuel`. `Err` says why it cannot run natively.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        compiled: &CompiledModule,
        bytes: &[u8],
        imports: &[Import],
        state: ExtensionState,
        limits: &Limits,
        max_depth: u32,
        fuel: u64,
    ) -> Result<Result<NativeInstance, Trap>, String> {
        let prepared = Prepared::new(
            compiled,
            bytes,
            imports,
            state.module.clone(),
            limits,
            max_depth,
        )?;
        let start = prepared.layout.start;
        let mut instance = prepared.into_instance(state);
        if let Some(start) = start {
            if (start as usize) < instance.native.layout.info.imported_functions as usize {
                return Err(refuse("an imported start function"));
            }
            if let Err(trap) = instance.call_function(start, &[], fuel) {
                return Ok(Err(trap));
            }
        }
        Ok(Ok(instance))
    }

    /// Calls function `index` with `args` (already checked against its
    /// type) under `fuel`; its raw integer result.
    fn call_function(&mut self, index: u32, args: &[i64], fuel: u64) -> Result<i64, Trap> {
        let offset = *self
            .native
            .layout
            .offsets
            .get(index as usize)
            .ok_or_else(|| Trap::new(FaultKind::Other, "no such function"))?;
        let mut arguments = [0i64; ENTRY_ARGUMENTS];
        let count = args.len().min(ENTRY_ARGUMENTS);
        arguments[..count].copy_from_slice(&args[..count]);
        self.native.prepare(fuel);
        self.fuel_given = fuel;
        let result = entry::run(&self.code, &mut self.native, offset, arguments, count);
        match result {
            Ok(value) => Ok(value),
            Err(code) => Err(self.trap(code)),
        }
    }

    /// The typed entry in one function, inlined into the runtime's
    /// invocation (`Shared::invoke_integers`, which locks the instance and
    /// counts the call around it): the export's code start and result
    /// type looked up once, the context armed (fuel, trap and depth, stack
    /// limit, the instance's address), generated code entered, the result
    /// or trap read back. `args` holds `count` arguments, then zeros.
    #[inline(always)]
    pub(crate) fn call_typed(
        &mut self,
        function: ExportRef,
        args: &[i64; MAX_INTEGER_ARGUMENTS],
        count: usize,
        fuel: u64,
    ) -> Result<i64, Trap> {
        let native = &mut *self.native;
        let export = match native.exports.get(function.0 as usize) {
            Some(export) if export.is_enterable && export.params == count => export,
            _ => return Err(wrong_call()),
        };
        let (offset, result_type) = (export.offset, export.result);
        native.prepare(fuel);
        self.fuel_given = fuel;
        match entry::run(&self.code, native, offset, *args, count) {
            // Generated code leaves the upper half of an `i32` undefined.
            Ok(raw) if result_type == Some(WasmType::I32) => Ok(i64::from(raw as i32)),
            Ok(raw) => Ok(raw),
            Err(code) => Err(self.trap(code)),
        }
    }

    /// The trap generated code stopped with, as the runtime reports it.
    #[cold]
    #[inline(never)]
    fn trap(&mut self, code: TrapCode) -> Trap {
        match code {
            TrapCode::Host => self
                .native
                .host_trap
                .take()
                .unwrap_or_else(|| Trap::new(FaultKind::Other, "a kernel procedure trapped")),
            code => Trap::new(code.fault_kind(), describe(code)),
        }
    }

    /// Calls the exported function `name` with raw `arguments` (integers,
    /// floats as their bits) and `fuel` (host tests): its raw result (an
    /// `i32` sign-extended, a float's bits zero-extended), or the trap's
    /// code.
    #[cfg(not(target_os = "none"))]
    pub(super) fn call_raw(
        &mut self,
        name: &str,
        arguments: &[i64],
        fuel: u64,
    ) -> Result<Result<Option<i64>, TrapCode>, String> {
        let info = self.native.layout.info.clone();
        let index = info
            .exported_function(name)
            .ok_or_else(|| refuse("no such export"))?;
        let ty = info.function_type(index).ok_or_else(|| refuse("no type"))?;
        if arguments.len() != ty.params.len() || !is_enterable(ty) {
            return Err(refuse("this signature"));
        }
        let offset = self.native.layout.offsets[index as usize];
        let mut padded = [0i64; ENTRY_ARGUMENTS];
        padded[..arguments.len()].copy_from_slice(arguments);
        self.native.prepare(fuel);
        match entry::run(
            &self.code,
            &mut self.native,
            offset,
            padded,
            arguments.len(),
        ) {
            Ok(raw) => Ok(Ok(ty.results.first().map(|t| match t {
                WasmType::I32 => i64::from(raw as i32),
                WasmType::F32 => i64::from(raw as u32),
                _ => raw,
            }))),
            Err(code) => Ok(Err(code)),
        }
    }

    /// Linear memory as it is now (host tests).
    #[cfg(not(target_os = "none"))]
    pub(super) fn memory(&self) -> &[u8] {
        self.native.layout.memory.as_slice()
    }
}

/// A typed call of an export that is not enterable or with the wrong
/// number of arguments (the runtime checks both at bind, so never).
#[cold]
fn wrong_call() -> Trap {
    Trap::new(FaultKind::Other, "call with the wrong arity")
}

/// A trap's message, as wasmi words it.
fn describe(code: TrapCode) -> &'static str {
    match code {
        TrapCode::Unreachable => "wasm `unreachable` instruction executed",
        TrapCode::MemoryOutOfBounds => "out of bounds memory access",
        TrapCode::DivisionByZero => "integer divide by zero",
        TrapCode::IntegerOverflow => "integer overflow",
        TrapCode::BadConversion => "invalid conversion to integer",
        TrapCode::StackOverflow => "call stack exhausted",
        TrapCode::TableOutOfBounds => "undefined element: out of bounds table access",
        TrapCode::IndirectCallToNull => "uninitialized element",
        TrapCode::BadSignature => "indirect call type mismatch",
        TrapCode::OutOfFuel => "all fuel consumed by WebAssembly",
        TrapCode::Host => "a kernel procedure trapped",
    }
}

impl HostContext for NativeInstance {
    fn state(&self) -> &ExtensionState {
        self.native.state()
    }

    fn state_mut(&mut self) -> &mut ExtensionState {
        self.native.state_mut()
    }

    fn read_memory(&self, offset: u32, len: u32) -> Result<Vec<u8>, Trap> {
        self.native.read_memory(offset, len)
    }

    fn write_memory(&mut self, offset: u32, bytes: &[u8]) -> Result<(), Trap> {
        self.native.write_memory(offset, bytes)
    }

    fn export(&mut self, name: &str) -> Option<ExportRef> {
        self.native.export(name)
    }

    fn self_contained(&self, function: ExportRef) -> Option<Arc<SelfContained>> {
        self.native.self_contained(function)
    }

    fn read_only(&self, function: ExportRef) -> Option<Arc<ReadOnly>> {
        self.native.read_only(function)
    }
}

impl Instance for NativeInstance {
    fn call(
        &mut self,
        function: ExportRef,
        args: &[WasmValue],
        fuel: u64,
    ) -> Result<Option<WasmValue>, Trap> {
        let Some(export) = self.native.exports.get(function.0 as usize) else {
            return Err(Trap::new(FaultKind::Other, "unknown export reference"));
        };
        let (index, result_type) = (export.function, export.result);
        if args.len() != export.params || !export.is_enterable {
            return Err(Trap::new(FaultKind::Other, "call with the wrong arity"));
        }
        let mut raw = [0i64; ENTRY_ARGUMENTS];
        for ((slot, arg), ty) in raw.iter_mut().zip(args).zip(&export.param_types) {
            *slot = raw_argument(*arg, *ty).ok_or_else(wrong_types)?;
        }
        let result = self.call_function(index, &raw[..args.len()], fuel)?;
        Ok(result_type.map(|ty| typed_result(result, ty)))
    }

    #[inline]
    fn call_integers(
        &mut self,
        function: ExportRef,
        args: &[i64; MAX_INTEGER_ARGUMENTS],
        count: usize,
        fuel: u64,
    ) -> Option<Result<i64, Trap>> {
        Some(self.call_typed(function, args, count, fuel))
    }

    fn into_native(self: Box<Self>) -> Result<Box<NativeInstance>, Box<dyn Instance>> {
        Ok(self)
    }

    fn memory_bytes(&self) -> usize {
        self.native.layout.memory.len()
    }

    fn last_fuel_used(&self) -> u64 {
        // The context keeps the last call's fuel until the next call.
        self.fuel_given.saturating_sub(self.native.fuel_left())
    }

    fn into_state(self: Box<Self>) -> ExtensionState {
        let instance = *self;
        instance.native.state
    }
}
