//! How the runtime enters generated code and what its callbacks reach:
//! safe Rust over the `native_entry` crate, which holds the `unsafe`
//! (docs/design/0008-native-engine.md, "Entering generated code").
//!
//! `native_entry` lends a host to generated code for one call and turns
//! the context passed back to a callback into that host again. Here are
//! the hosts (a [`Native`] instance; the [`ReadingHost`] of read-only
//! code, on a context of its own), the procedures its callbacks run on
//! them (kernel procedures, `memory.grow`, `memory.copy`, `memory.fill`),
//! the private contexts of self-contained and read-only code, and the
//! reading of the trap word after a call. What `native_entry` trusts is
//! kept here: [`run`] and the held entries take only code memories that
//! `NativeInstance` made from [`super::CompiledModule`] (built only by
//! `Compiler::compile`), at function starts whose type `is_enterable`
//! checked, and the contexts are filled by `Native::fill_context`,
//! `Native::prepare` and [`ReadingContext::new`], with the trampolines of
//! their own host.

use alloc::sync::Arc;
use core::sync::atomic::AtomicU64;

use hal::native_code::CodeMemory;
use native_entry::{ContextHost, Host, Procedure, ENTRY_ARGUMENTS, REGISTER_ARGUMENTS};
pub use native_entry::{HeldEntry, STACK_BUDGET_BYTES};

use super::{
    instance::{self_contained_trap, GuardedCall, Native, CONTEXT_WORDS},
    reading::ReadingProcedures,
    vmctx::{self, TrapCode},
};
use crate::engine::Trap;

impl Host for Native {
    type Of<'a> = Native;
}

impl ContextHost for Native {
    #[inline(always)]
    fn context(native: &mut Native) -> &mut [u64] {
        &mut native.context
    }
}

/// Runs the function at `offset` of `code` with `native`'s context (which
/// `Native::fill_context` and `Native::prepare` filled) and `arguments`:
/// its raw result, or the trap code generated code stored.
/// `count` is how many of `arguments` the function takes (the rest are
/// zeros): up to [`REGISTER_ARGUMENTS`] go in registers only.
#[inline]
pub(super) fn run(
    code: &CodeMemory,
    native: &mut Native,
    offset: usize,
    arguments: [i64; ENTRY_ARGUMENTS],
    count: usize,
) -> Result<i64, TrapCode> {
    // `native_entry`'s contract: (1) `code` was made by `NativeInstance`
    // from the output of `Compiler::compile` and `offset` is one of its
    // functions' starts, whose type `is_enterable` checked (integer
    // parameters, at most eight, at most one integer result); (2) the
    // context was filled by `Native::fill_context` and `Native::prepare`:
    // its memory (which never moves; `Native::grow` updates its size),
    // globals, table and function addresses are `native`'s own, which
    // nothing resizes (a tier-up's restore fills the context again); the
    // runtime procedures and imports are the trampolines of `Native`
    // (`fill_procedures`, `host_trampoline`).
    let uses_floats = native.uses_floats();
    let raw = native_entry::run::<Native>(code, offset, native, arguments, count, uses_floats);
    match (raw, native.trap_code()) {
        (Some(value), 0) => Ok(value),
        (None, _) => Err(TrapCode::Unreachable),
        (_, raw_code) => Err(TrapCode::from_raw(raw_code).unwrap_or(TrapCode::Unreachable)),
    }
}

/// A context of its own for self-contained code (one whose body
/// `purity::FunctionEffects::is_self_contained` found to reach no memory,
/// global, table or other function): no instance, no lock, nothing
/// shared with the instance's other invocations. Such code is a leaf (it
/// calls nothing), so it reads only the fuel and writes only the trap
/// word; the rest is set for the case the scan were wrong: no memory (a
/// size of 0 bytes and a fast end of 0, which sends every access to the
/// exact check, so an access would trap as out of bounds), no globals,
/// table, function table or runtime procedures, no instance, the depth
/// limit and a stack limit `STACK_BUDGET_BYTES` below the entry.
struct PrivateContext([u64; CONTEXT_WORDS]);

impl PrivateContext {
    /// A context with calls nested at most `max_depth` deep and `fuel`.
    #[inline(always)]
    fn new(max_depth: u32, fuel: u64) -> PrivateContext {
        let mut words = [0u64; CONTEXT_WORDS];
        words[(vmctx::FUEL / 8) as usize] = fuel;
        // MAX_DEPTH (low half), TABLE_ELEMENTS (high half): no table.
        words[(vmctx::MAX_DEPTH / 8) as usize] = u64::from(max_depth);
        PrivateContext(words)
    }

    /// The trap code generated code stored after a call that returned
    /// `raw`: `raw`, or the trap.
    #[inline(always)]
    fn outcome(&self, raw: i64) -> Result<i64, TrapCode> {
        match self.0[(vmctx::TRAP / 8) as usize] as u32 {
            0 => Ok(raw),
            code => Err(TrapCode::from_raw(code).unwrap_or(TrapCode::Unreachable)),
        }
    }

    /// Runs the self-contained `function` on this context with its
    /// `count` arguments (its parameter count, checked at its binding):
    /// its raw result, or the trap code it stored.
    #[inline(always)]
    fn run(
        &mut self,
        function: &HeldEntry,
        arguments: [i64; REGISTER_ARGUMENTS],
        count: usize,
    ) -> Result<i64, TrapCode> {
        // `native_entry`'s contract: the function's body reaches nothing
        // but its arguments and locals (`is_self_contained`, from the
        // module's own scan), so its code reads and writes only this
        // context's fuel and trap words and calls nothing (a leaf never
        // reads the stack limit either); the other words are set for the
        // case the scan were wrong. It uses no floats (checked when it
        // was made, `Native::self_contained`).
        let raw = native_entry::run_alone(function, &mut self.0, arguments, count);
        self.outcome(raw)
    }
}

/// What read-only code (`purity::is_read_only`: it and all it calls only
/// read linear memory and globals, and call only kernel procedures that
/// change nothing) reaches of its instance, held: the memory's pages, the
/// globals, the reading function table and what the procedures reach
/// stay where they are for as long as this lives, whatever becomes of the
/// instance.
pub(super) struct HeldState {
    procedures: ReadingProcedures,
    globals: Arc<[AtomicU64]>,
    functions: Arc<[u64]>,
}

impl HeldState {
    /// The state of an instance whose globals are `globals`, whose
    /// reading function table (module functions: addresses in the code
    /// memory of the entries run with it; imports: the reading
    /// trampolines, [`reading_trampoline`]) is `functions`, and whose
    /// memory and kernel procedures `procedures` reaches.
    pub(super) fn new(
        procedures: ReadingProcedures,
        globals: Arc<[AtomicU64]>,
        functions: Arc<[u64]>,
    ) -> HeldState {
        HeldState {
            procedures,
            globals,
            functions,
        }
    }
}

/// A private context for read-only code of the instance whose state it
/// borrows (see [`HeldState`]): as [`PrivateContext::new`], with the
/// memory (its size when the context is made), globals and reading
/// function table from the state; the host the reading trampolines reach
/// (the context is its field: they set its trap word). Still no table, no
/// runtime procedures and no instance: read-only code calls none of them.
struct ReadingHost<'a> {
    context: PrivateContext,
    /// What the kernel procedures reach.
    procedures: &'a ReadingProcedures,
    /// A procedure's trap, waiting for the run to report it.
    trap: Option<Trap>,
}

/// The kind of host read-only code is run with: a [`ReadingHost`].
enum Reading {}

impl Host for Reading {
    type Of<'a> = ReadingHost<'a>;
}

impl ContextHost for Reading {
    #[inline(always)]
    fn context<'b>(host: &'b mut ReadingHost<'_>) -> &'b mut [u64] {
        &mut host.context.0
    }
}

/// The private context of read-only code.
type ReadingContext<'a> = ReadingHost<'a>;

impl<'a> ReadingHost<'a> {
    #[inline(always)]
    fn new(max_depth: u32, fuel: u64, state: &'a HeldState) -> ReadingContext<'a> {
        let mut reading = ReadingHost {
            context: PrivateContext::new(max_depth, fuel),
            procedures: &state.procedures,
            trap: None,
        };
        // Filled in place (a context built apart was copied in whole).
        let words = &mut reading.context.0;
        let memory = state.procedures.memory();
        vmctx::set_memory(words, memory.base(), memory.len());
        words[(vmctx::GLOBALS / 8) as usize] = state.globals.as_ptr() as u64;
        words[(vmctx::FUNCTIONS / 8) as usize] = state.functions.as_ptr() as u64;
        reading
    }

    /// Runs the read-only `function` of the state's instance with its
    /// `count` arguments: its raw result, or its trap (a kernel
    /// procedure's own, or the one generated code stored).
    #[inline(always)]
    fn run_read_only(
        &mut self,
        function: &HeldEntry,
        arguments: [i64; REGISTER_ARGUMENTS],
        count: usize,
    ) -> Result<i64, Trap> {
        // `native_entry`'s contract: `function` is held with its code
        // memory, whose parameter count the caller checked is `count` at
        // its binding (float registers, if its code uses them, are kept
        // by `ReadOnly::call`). It and every function it
        // can call only read linear memory and globals and call functions
        // of the module and kernel procedures that change nothing
        // (`purity::is_read_only`, from the module's own scan and
        // `host::reads_only`). So the code reads the memory within the
        // size `new` set (mapped for as long as the state's view lives,
        // and the state is borrowed for the context's life: a memory
        // never shrinks and never moves), reads the globals (the state's,
        // alive; atomics, which the instance's own invocations may write
        // meanwhile: the reads may be stale, never out of bounds), loads
        // code addresses from the reading function table (the state's,
        // alive, never changed: its functions in the same code memory as
        // `function`, its imports the reading trampolines of this kind of
        // host), reads and writes the fuel, trap and depth words of this
        // context, and touches nothing else.
        let raw = native_entry::run_held::<Reading>(function, self, arguments, count);
        self.context.outcome(raw).map_err(|code| match code {
            TrapCode::Host => self
                .trap
                .take()
                .unwrap_or_else(|| self_contained_trap(code)),
            code => self_contained_trap(code),
        })
    }

    /// A kernel procedure called by read-only code trapped: kept for the
    /// run to report, and [`TrapCode::Host`] stored in the context's trap
    /// word, which generated code reads after the call.
    #[cold]
    fn trapped(&mut self, trap: Trap) -> u64 {
        self.trap = Some(trap);
        // Its high half is the depth: kept.
        let word = &mut self.context.0[(vmctx::TRAP / 8) as usize];
        *word = (*word & !0xffff_ffff) | TrapCode::Host as u64;
        0
    }
}

/// Runs the read-only `function` (see [`HeldState`]) of the instance
/// whose state is `state`, with `fuel`, calls nested at most `max_depth`
/// deep and its `count` `arguments`, on a context of its own and without
/// the instance: its raw result, or its trap. What it reads may be
/// changed meanwhile by the instance's own invocations: the caller tells
/// (`extension::Shared::invoke_read_only`) and discards the outcome then.
#[inline(always)]
pub(super) fn run_read_only(
    function: &HeldEntry,
    state: &HeldState,
    max_depth: u32,
    fuel: u64,
    arguments: [i64; REGISTER_ARGUMENTS],
    count: usize,
) -> Result<i64, Trap> {
    ReadingContext::new(max_depth, fuel, state).run_read_only(function, arguments, count)
}

/// Runs the read-only `guard` of the instance whose state is `state` with
/// `guard_fuel`; then, if `still_valid()` says nothing of the instance
/// changed meanwhile (`None` if it did: the guard's outcome is thrown
/// away) and the guard returned non-zero, the self-contained `handler`
/// with `handler_fuel`, both on one private context with the same
/// `count` `arguments`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn run_read_only_guarded(
    guard: &HeldEntry,
    state: &HeldState,
    handler: &HeldEntry,
    max_depth: u32,
    guard_fuel: u64,
    handler_fuel: u64,
    arguments: [i64; REGISTER_ARGUMENTS],
    count: usize,
    still_valid: impl FnOnce() -> bool,
) -> Option<GuardedCall> {
    let mut reading = ReadingContext::new(max_depth, guard_fuel, state);
    let decided = reading.run_read_only(guard, arguments, count);
    if !still_valid() {
        return None;
    }
    match decided {
        Ok(held) if held as i32 != 0 => {}
        Ok(_) => return Some(GuardedCall::Declined),
        Err(trap) => return Some(GuardedCall::GuardTrapped(trap)),
    }
    // The guard left the trap word clear; the handler reads only its
    // fuel (its own budget) and writes only the trap word.
    let context = &mut reading.context;
    context.0[(vmctx::FUEL / 8) as usize] = handler_fuel;
    Some(GuardedCall::Ran(
        context
            .run(handler, arguments, count)
            .map_err(self_contained_trap),
    ))
}

/// Runs the self-contained `function` (see [`PrivateContext`]) with
/// `fuel`, calls nested at most `max_depth` deep and its `count`
/// `arguments`: its raw result, or the trap code it stored.
#[inline(always)]
pub(super) fn run_self_contained(
    function: &HeldEntry,
    max_depth: u32,
    fuel: u64,
    arguments: [i64; REGISTER_ARGUMENTS],
    count: usize,
) -> Result<i64, TrapCode> {
    PrivateContext::new(max_depth, fuel).run(function, arguments, count)
}

/// Runs the self-contained `guard` with `guard_fuel` and, if it returned
/// non-zero, the self-contained `handler` with `handler_fuel`, both on
/// one private context with the same `count` `arguments`.
#[inline(always)]
pub(super) fn run_self_contained_guarded(
    guard: &HeldEntry,
    handler: &HeldEntry,
    max_depth: u32,
    guard_fuel: u64,
    handler_fuel: u64,
    arguments: [i64; REGISTER_ARGUMENTS],
    count: usize,
) -> GuardedCall {
    let mut context = PrivateContext::new(max_depth, guard_fuel);
    match context.run(guard, arguments, count) {
        Ok(held) if held as i32 != 0 => {}
        Ok(_) => return GuardedCall::Declined,
        Err(code) => return GuardedCall::GuardTrapped(self_contained_trap(code)),
    }
    // The guard left the trap word clear and the rest as it found it (a
    // leaf writes only fuel and trap): only the fuel is the handler's own.
    context.0[(vmctx::FUEL / 8) as usize] = handler_fuel;
    GuardedCall::Ran(
        context
            .run(handler, arguments, count)
            .map_err(self_contained_trap),
    )
}

/// `memory.grow`: the old size in pages, or -1.
struct MemoryGrow;

impl Procedure<Native> for MemoryGrow {
    const ARGUMENTS: usize = 1;
    #[inline(always)]
    fn call(native: &mut Native, arguments: &[u64]) -> u64 {
        u64::from(native.grow(arguments[0] as u32) as u32)
    }
}

/// `memory.copy`.
struct MemoryCopy;

impl Procedure<Native> for MemoryCopy {
    const ARGUMENTS: usize = 3;
    #[inline(always)]
    fn call(native: &mut Native, arguments: &[u64]) -> u64 {
        let [destination, source, len] = [0, 1, 2].map(|at| arguments[at] as u32);
        native.copy(destination, source, len);
        0
    }
}

/// `memory.fill`.
struct MemoryFill;

impl Procedure<Native> for MemoryFill {
    const ARGUMENTS: usize = 3;
    #[inline(always)]
    fn call(native: &mut Native, arguments: &[u64]) -> u64 {
        let [destination, value, len] = [0, 1, 2].map(|at| arguments[at] as u32);
        native.fill(destination, value, len);
        0
    }
}

/// Puts the runtime procedures' addresses into their context slots (once
/// per instance, by `Native::fill_context`): the trampolines of
/// `Native`, since the instance's context is run with it ([`run`]).
pub(super) fn fill_procedures(context: &mut [u64]) {
    context[(vmctx::MEMORY_GROW / 8) as usize] = native_entry::trampoline::<Native, MemoryGrow>();
    context[(vmctx::MEMORY_COPY / 8) as usize] = native_entry::trampoline::<Native, MemoryCopy>();
    context[(vmctx::MEMORY_FILL / 8) as usize] = native_entry::trampoline::<Native, MemoryFill>();
}

/// The kernel procedures as runtime procedures, one type per procedure
/// generated from the ABI's table (`spindle_abi::for_each_import!`), and
/// their trampolines: generated code calls the trampoline of the
/// procedure an import resolved to with its context and the procedure's
/// arguments, each widened to 64 bits, all in registers (the ninth and
/// later words on the stack, as sysv64 passes them); no import index, no
/// argument array, no runtime values. The procedure is a constant in each
/// trampoline, so `host::call` (always inlined) is reduced to that
/// procedure's arm: no `match` per call.
macro_rules! procedure_trampolines {
    (
        $module:literal;
        $(
            $(#[doc = $doc:literal])*
            $variant:ident = $purity:ident fn $name:ident($($param:ident: $ty:ident),* $(,)?) $(-> $result:ident)?;
        )*
    ) => {
        /// One type per kernel procedure, named as its [`Import`] variant:
        /// the procedure on the instance ([`Native`]) and, for read-only
        /// code, on its [`ReadingHost`] (whose procedures refuse one that
        /// changes anything with a trap).
        mod procedures {
            use native_entry::Procedure;
            use spindle_abi::Import;

            use super::{Native, Reading, ReadingHost};

            $(
                pub(super) struct $variant;

                impl Procedure<Native> for $variant {
                    const ARGUMENTS: usize = <[&str]>::len(&[$(stringify!($param)),*]);
                    #[inline(always)]
                    fn call(native: &mut Native, arguments: &[u64]) -> u64 {
                        native.host_call(Import::$variant, arguments)
                    }
                }

                impl Procedure<Reading> for $variant {
                    const ARGUMENTS: usize = <[&str]>::len(&[$(stringify!($param)),*]);
                    #[inline(always)]
                    fn call(host: &mut ReadingHost<'_>, arguments: &[u64]) -> u64 {
                        match host.procedures.call(Import::$variant, arguments) {
                            Ok(value) => value,
                            Err(trap) => host.trapped(trap),
                        }
                    }
                }
            )*
        }

        /// The address of the host-call trampoline of kernel procedure
        /// `import`, for the function table.
        pub(super) fn host_trampoline(import: spindle_abi::Import) -> u64 {
            match import {
                $(spindle_abi::Import::$variant => {
                    native_entry::trampoline::<Native, procedures::$variant>()
                })*
            }
        }

        /// The address of the reading trampoline of kernel procedure
        /// `import`, for the reading function table: as
        /// [`host_trampoline`], for read-only code, which runs without the
        /// instance: it reaches the [`ReadingProcedures`] of the
        /// [`ReadingHost`] that runs it.
        pub(super) fn reading_trampoline(import: spindle_abi::Import) -> u64 {
            match import {
                $(spindle_abi::Import::$variant => {
                    native_entry::trampoline::<Reading, procedures::$variant>()
                })*
            }
        }
    };
}

spindle_abi::for_each_import!(procedure_trampolines);
