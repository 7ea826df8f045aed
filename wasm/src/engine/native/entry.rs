//! The one place outside `hal` with `unsafe`: entering generated code and
//! the runtime procedures it calls back (docs/design/0008-native-engine.md,
//! "Entering generated code"; `xtask/src/policy.rs` allows this file and
//! no other).
//!
//! Why here and not in `hal`: `hal::native_code::CodeMemory::enter` is an
//! `unsafe fn` because `hal` cannot know that the bytes are the compiler's
//! output or that the context is well formed. This module can: [`run`]
//! takes the [`CodeMemory`] that `NativeInstance` made from
//! [`super::CompiledModule`] (built only by `Compiler::compile`) and the
//! [`Native`] whose context `Native::prepare` filled, and the callbacks
//! below only turn the context generated code passes back into that same
//! [`Native`] (or, for read-only code on a context of its own, into the
//! [`ReadingHost`] that context points at). Everything they then do is
//! safe code in `instance.rs` and `reading.rs`.
#![allow(unsafe_code)]

use alloc::sync::Arc;
use core::sync::atomic::AtomicU64;

use hal::native_code::{CodeMemory, EntryPoint, ENTRY_ARGUMENTS, REGISTER_ARGUMENTS};

use super::{
    instance::{self_contained_trap, GuardedCall, Native},
    reading::ReadingProcedures,
    vmctx::{self, TrapCode},
};
use crate::engine::Trap;

/// Machine stack generated code may use below the entry before its
/// stack-limit check traps. On top of it: at most one frame of
/// `CompileLimits::frame_bytes` (8 KiB), which a function may write before
/// its check runs, and the kernel procedures it calls. Kernel threads that
/// run extensions have 64 KiB (user threads' kernel stacks) or 256 KiB, so
/// 16 + 8 KiB below a raise leaves a procedure and the raise path room
/// above the guard page. (Nested entries, a procedure raising into
/// another extension's native handler, each get a budget of their own:
/// see docs/design/0008-native-engine.md, "Crossings", nested entries.)
pub const STACK_BUDGET_BYTES: u64 = 16 * 1024;

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
    // The stack limit: this frame's address minus the budget (a kernel
    // stack is far above 16 KiB; were it not, the limit would wrap to
    // the top of the address space and every check would trap).
    let marker = 0u8;
    let here = core::ptr::addr_of!(marker) as u64;
    let uses_floats = native.uses_floats();
    let context = &mut native.context;
    context[(vmctx::STACK_LIMIT / 8) as usize] = here.wrapping_sub(STACK_BUDGET_BYTES);
    // From here to the end of the call `native` is used only through this
    // pointer (by the callbacks), so no reference aliases it meanwhile.
    let pointer: *mut Native = native;
    // SAFETY: `pointer` comes from a live `&mut Native`; `context` is a
    // field of it.
    let context = unsafe { core::ptr::addr_of_mut!((*pointer).context) }.cast::<u64>();
    // SAFETY: `context` points to the context array; the HOST slot is
    // within it (`vmctx::HOST` < `vmctx::CONTEXT_BYTES`).
    unsafe {
        context
            .add((vmctx::HOST / 8) as usize)
            .write(pointer as u64)
    };
    // SAFETY: (1) `code` was made by `NativeInstance` from the output of
    // `Compiler::compile` and `offset` is one of its functions' starts,
    // whose type `is_enterable` checked (integer parameters, at most eight,
    // at most one integer result); (2) the context was filled by
    // `Native::fill_context`, `Native::prepare` and above: its memory
    // (which never moves; `Native::grow` updates its size), globals,
    // table and function addresses are `native`'s own, which nothing
    // resizes (a tier-up's restore fills the context again); the runtime
    // procedures are the functions below
    // (`fill_procedures`); the stack limit leaves `STACK_BUDGET_BYTES`
    // from here.
    let call = || unsafe { enter(code, offset, context, arguments, count) };
    // Code that uses floats changes the x87/SSE registers, which hold
    // the interrupted thread's (a user program's, in a system call):
    // kept around the call, and rounding set as Wasm requires.
    let raw = hal::native_code::keeping_fpu_state_if(uses_floats, call);
    // SAFETY: the call is over; `pointer` is `native` again.
    let native = unsafe { &mut *pointer };
    match (raw, native.trap_code()) {
        (Some(value), 0) => Ok(value),
        (None, _) => Err(TrapCode::Unreachable),
        (_, raw_code) => Err(TrapCode::from_raw(raw_code).unwrap_or(TrapCode::Unreachable)),
    }
}

/// A function's entry point and the code memory it is in, held
/// together: the entry point is found from the memory it keeps alive
/// ([`HeldEntry::new`]), so entering it cannot outlive the code.
pub(super) struct HeldEntry {
    /// Held, never read: the memory `entry` is in.
    _code: Arc<CodeMemory>,
    entry: EntryPoint,
}

impl HeldEntry {
    /// The function at `offset` of `code` (which must hold
    /// `Compiler::compile`'s output, as every `CodeMemory` of the engine
    /// does); `None` past its end.
    pub(super) fn new(code: Arc<CodeMemory>, offset: usize) -> Option<HeldEntry> {
        let entry = code.entry_point(offset)?;
        Some(HeldEntry { _code: code, entry })
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
/// limit and a stack limit `STACK_BUDGET_BYTES` below the context.
struct PrivateContext([u64; vmctx::CONTEXT_BYTES / 8]);

impl PrivateContext {
    /// A context with calls nested at most `max_depth` deep and `fuel`.
    #[inline(always)]
    fn new(max_depth: u32, fuel: u64) -> PrivateContext {
        let mut words = [0u64; vmctx::CONTEXT_BYTES / 8];
        words[(vmctx::FUEL / 8) as usize] = fuel;
        // MAX_DEPTH (low half), TABLE_ELEMENTS (high half): no table.
        words[(vmctx::MAX_DEPTH / 8) as usize] = u64::from(max_depth);
        PrivateContext(words)
    }

    /// Enters `function` on this context with its `count` arguments: its
    /// raw result, or the trap code it stored.
    ///
    /// # Safety
    ///
    /// `function` takes `count` parameters, and what its code (and the
    /// code it calls) can reach through this context is valid for the
    /// whole call: the words it reads and writes here are this context's,
    /// any address in it that the code uses points to memory alive for the
    /// call.
    #[inline(always)]
    unsafe fn enter(
        &mut self,
        function: &HeldEntry,
        arguments: [i64; REGISTER_ARGUMENTS],
        count: usize,
    ) -> Result<i64, TrapCode> {
        let here = self.0.as_ptr() as u64;
        // As in `run`.
        self.0[(vmctx::STACK_LIMIT / 8) as usize] = here.wrapping_sub(STACK_BUDGET_BYTES);
        // SAFETY: (1) `function.entry` is the start of a function of
        // `function._code`, alive (held) and holding `Compiler::compile`'s
        // output, whose type `is_enterable` checked, taking `count`
        // parameters (the caller's condition); (2) what the code reaches
        // through the context is valid for the call (the caller's
        // condition); the stack limit leaves `STACK_BUDGET_BYTES` from
        // here.
        let raw = unsafe { function.entry.call(self.0.as_mut_ptr(), arguments, count) };
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
        // SAFETY: the function's body reaches nothing but its arguments and
        // locals (`is_self_contained`, from the module's own scan), so its
        // code reads and writes only this context's fuel and trap words
        // and calls nothing (a leaf never reads the stack limit either);
        // the other words are set for the case the scan were wrong.
        unsafe { self.enter(function, arguments, count) }
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
/// function table from the state, and its own place for a kernel
/// procedure's trap. Still no table, no runtime procedures and no
/// instance: read-only code calls none of them.
struct ReadingContext<'a> {
    context: PrivateContext,
    /// What the reading trampolines reach, through the HOST word.
    host: ReadingHost<'a>,
}

/// What the reading trampolines get from the context they are passed:
/// the kernel procedures' reach, and where a procedure's trap waits for
/// the run to report it.
struct ReadingHost<'a> {
    procedures: &'a ReadingProcedures,
    trap: Option<Trap>,
}

impl<'a> ReadingContext<'a> {
    #[inline(always)]
    fn new(max_depth: u32, fuel: u64, state: &'a HeldState) -> ReadingContext<'a> {
        let mut reading = ReadingContext {
            context: PrivateContext::new(max_depth, fuel),
            host: ReadingHost {
                procedures: &state.procedures,
                trap: None,
            },
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
        // Set here, not in `new`: the context has stopped moving. The
        // trampolines use it only during the call below, through this
        // pointer, while nothing else touches `self.host`.
        let host = core::ptr::addr_of_mut!(self.host);
        self.context.0[(vmctx::HOST / 8) as usize] = host as u64;
        // `function` is held with its code memory, whose parameter count
        // the caller checked is `count` at its binding. It and every
        // function it can call only read linear memory and globals and
        // call functions of the module and kernel procedures that change
        // nothing (`purity::is_read_only`, from the module's own scan and
        // `host::reads_only`).
        // SAFETY: by the above, the code reads the memory within the
        // size `new` set (mapped for as long as the state's view lives,
        // and the state is borrowed for the context's life: a memory
        // never shrinks and never moves), reads the globals (the state's,
        // alive; atomics, which the instance's own invocations may write
        // meanwhile: the reads may be stale, never out of bounds), loads
        // code addresses from the reading function table (the state's,
        // alive, never changed: its functions in the same code memory as
        // `function`, its imports the reading trampolines, which use the
        // HOST word set above and the trap word), reads and writes the
        // fuel, trap and depth words of this context, and touches nothing
        // else.
        let outcome = unsafe { self.context.enter(function, arguments, count) };
        outcome.map_err(|code| match code {
            TrapCode::Host => self
                .host
                .trap
                .take()
                .unwrap_or_else(|| self_contained_trap(code)),
            code => self_contained_trap(code),
        })
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

/// Enters the function at `offset` of `code`, taking `count` of
/// `arguments`: through [`CodeMemory::entry_point`] when they all
/// fit in registers.
///
/// # Safety
///
/// As for [`CodeMemory::enter`]; `count` is the function's number of
/// parameters (`is_enterable` checked it is at most eight).
#[inline(always)]
unsafe fn enter(
    code: &CodeMemory,
    offset: usize,
    context: *mut u64,
    arguments: [i64; ENTRY_ARGUMENTS],
    count: usize,
) -> Option<i64> {
    if count <= REGISTER_ARGUMENTS {
        let [a, b, c, d, e, ..] = arguments;
        // SAFETY: the caller's conditions, and the function takes `count`
        // parameters, at most `REGISTER_ARGUMENTS`; its code memory is
        // `code`, alive for the call. With `count` a constant (an event's
        // arity, inlined), only its registers are loaded.
        unsafe {
            code.entry_point(offset)
                .map(|function| function.call(context, [a, b, c, d, e], count))
        }
    } else {
        // SAFETY: the caller's conditions.
        unsafe { code.enter(offset, context, arguments) }
    }
}

/// Puts the runtime procedures' addresses into their context slots (once
/// per instance, by `Native::fill_context`).
pub(super) fn fill_procedures(context: &mut [u64]) {
    context[(vmctx::MEMORY_GROW / 8) as usize] = memory_grow as *const () as u64;
    context[(vmctx::MEMORY_COPY / 8) as usize] = memory_copy as *const () as u64;
    context[(vmctx::MEMORY_FILL / 8) as usize] = memory_fill as *const () as u64;
}

/// The [`Native`] whose context generated code passed back.
///
/// # Safety
///
/// `context` must be the context [`run`] passed to generated code, during
/// that call: its HOST slot then holds the pointer to the [`Native`] that
/// [`run`] borrowed mutably and uses only through that pointer, and no
/// other callback is running (generated code is single-threaded and these
/// callbacks do not re-enter it).
unsafe fn native_of<'a>(context: *mut u64) -> &'a mut Native {
    // SAFETY: per the function's contract, the HOST slot holds a pointer to
    // a live `Native` nothing else references during this callback.
    unsafe { &mut *(context.add((vmctx::HOST / 8) as usize).read() as *mut Native) }
}

/// The host-call trampolines, one per kernel procedure, generated from
/// the ABI's table (`spindle_abi::for_each_import!`): generated code calls
/// the trampoline of the procedure an import resolved to with its context
/// and the procedure's arguments, each widened to 64 bits, all in
/// registers (the ninth and later words on the stack, as sysv64 passes
/// them); no import index, no argument array, no runtime values. The
/// procedure is a constant in each trampoline, so `host::call` (always
/// inlined) is reduced to that procedure's arm: no `match` per call.
macro_rules! procedure_trampolines {
    (
        $module:literal;
        $(
            $(#[doc = $doc:literal])*
            $variant:ident = $purity:ident fn $name:ident($($param:ident: $ty:ident),* $(,)?) $(-> $result:ident)?;
        )*
    ) => {
        /// One trampoline per kernel procedure, named as the procedure.
        mod trampolines {
            use spindle_abi::Import;

            use super::native_of;

            $(
                pub(super) extern "sysv64" fn $name(context: *mut u64 $(, $param: u64)*) -> u64 {
                    // SAFETY: generated code calls this only through the
                    // function table's entry of an import resolved to this
                    // procedure (set by `layout.rs` from
                    // `host_trampoline`), whose type linking matched to the
                    // procedure's, passing the context it received from
                    // `run`.
                    let native = unsafe { native_of(context) };
                    native.host_call(Import::$variant, &[$($param),*])
                }
            )*
        }

        /// The address of the host-call trampoline of kernel procedure
        /// `import`, for the function table.
        pub(super) fn host_trampoline(import: spindle_abi::Import) -> u64 {
            match import {
                $(spindle_abi::Import::$variant => trampolines::$name as *const () as u64,)*
            }
        }

        /// One reading trampoline per kernel procedure, named as the
        /// procedure: as [`trampolines`], for read-only code, which runs
        /// without the instance: they reach the [`ReadingProcedures`] of
        /// the [`ReadingContext`] that runs it (which refuse a procedure
        /// that changes anything with a trap).
        mod reading_trampolines {
            use spindle_abi::Import;

            use super::{reading_host_of, reading_trapped};

            $(
                pub(super) extern "sysv64" fn $name(context: *mut u64 $(, $param: u64)*) -> u64 {
                    // SAFETY: generated code calls this only through the
                    // reading function table's entry of an import resolved
                    // to this procedure (set by `layout.rs` from
                    // `reading_trampoline`, whose type linking matched to
                    // the procedure's), which only a `ReadingContext`
                    // points at, passing the context it received from
                    // `ReadingContext::run_read_only`.
                    let host = unsafe { reading_host_of(context) };
                    match host.procedures.call(Import::$variant, &[$($param),*]) {
                        Ok(value) => value,
                        // SAFETY: as above.
                        Err(trap) => unsafe { reading_trapped(context, host, trap) },
                    }
                }
            )*
        }

        /// The address of the reading trampoline of kernel procedure
        /// `import`, for the reading function table.
        pub(super) fn reading_trampoline(import: spindle_abi::Import) -> u64 {
            match import {
                $(spindle_abi::Import::$variant => reading_trampolines::$name as *const () as u64,)*
            }
        }
    };
}

/// The [`ReadingHost`] of the context generated code passed back to a
/// reading trampoline.
///
/// # Safety
///
/// `context` must be the context [`ReadingContext::run_read_only`] passed
/// to generated code, during that call: its HOST word then holds the
/// address of that context's [`ReadingHost`], which nothing else uses
/// during the call (generated code is single-threaded and the trampolines
/// do not re-enter it).
unsafe fn reading_host_of<'a, 'b>(context: *mut u64) -> &'a mut ReadingHost<'b> {
    // SAFETY: per the function's contract.
    unsafe { &mut *(context.add((vmctx::HOST / 8) as usize).read() as *mut ReadingHost<'b>) }
}

/// A kernel procedure called by read-only code trapped: kept in `host`
/// for the run to report, and [`TrapCode::Host`] stored in the context's
/// trap word, which generated code reads after the call.
///
/// # Safety
///
/// As for [`reading_host_of`], whose result `host` is.
#[cold]
unsafe fn reading_trapped(context: *mut u64, host: &mut ReadingHost<'_>, trap: Trap) -> u64 {
    host.trap = Some(trap);
    // SAFETY: `context` points to the context's words (the contract); the
    // trap word is within them. Its high half is the depth: kept.
    unsafe {
        let word = context.add((vmctx::TRAP / 8) as usize);
        word.write((word.read() & !0xffff_ffff) | TrapCode::Host as u64);
    }
    0
}

spindle_abi::for_each_import!(procedure_trampolines);

/// `memory.grow`: the old size in pages, or -1.
extern "sysv64" fn memory_grow(context: *mut u64, pages: u32) -> u32 {
    // SAFETY: as for `host_call`, through the MEMORY_GROW slot.
    let native = unsafe { native_of(context) };
    native.grow(pages) as u32
}

/// `memory.copy`.
extern "sysv64" fn memory_copy(context: *mut u64, destination: u32, source: u32, len: u32) {
    // SAFETY: as for `host_call`, through the MEMORY_COPY slot.
    let native = unsafe { native_of(context) };
    native.copy(destination, source, len);
}

/// `memory.fill`.
extern "sysv64" fn memory_fill(context: *mut u64, destination: u32, value: u32, len: u32) {
    // SAFETY: as for `host_call`, through the MEMORY_FILL slot.
    let native = unsafe { native_of(context) };
    native.fill(destination, value, len);
}
