//! The contract between generated code and the runtime: the layout of the
//! per-instance context (`vmctx`) every generated function receives as its
//! first argument, and the trap codes generated code stores in it.
//!
//! Generated code never faults the CPU on a Wasm trap: it stores a
//! [`TrapCode`] at [`TRAP`] and returns; every call site reloads [`TRAP`]
//! and returns at once when it is set, so a trap unwinds by ordinary
//! returns to the entry, which reads it (docs/design/0008-native-engine.md
//! says why this rather than a fault-recovery path in `hal`).

use spindle_abi::FaultKind;

/// Offset of the linear memory's base address (`u64`).
pub const MEMORY_BASE: i32 = 0;
/// Offset of the linear memory's size in bytes (`u64`).
pub const MEMORY_BYTES: i32 = 8;
/// The widest access (`i64.load`), which [`MEMORY_FAST_END`] leaves room
/// for.
pub const FAST_CHECK_BYTES: i64 = 8;

/// Writes linear memory's words (its `base` address, its size of `len`
/// bytes and the fast limit) into `context`, after the memory was created
/// or grown.
pub fn set_memory(context: &mut [u64], base: u64, len: usize) {
    context[(MEMORY_BASE / 8) as usize] = base;
    context[(MEMORY_BYTES / 8) as usize] = len as u64;
    // At most 4 GiB: no overflow, and a memory under 8 bytes gets a
    // negative end no access is below.
    context[(MEMORY_FAST_END / 8) as usize] = (len as i64 - FAST_CHECK_BYTES + 1) as u64;
}

/// Offset of the fuel left (`i64`); below zero is a budget trap.
pub const FUEL: i32 = 16;
/// Offset of the trap code (`u32`, [`TrapCode`]; zero while none).
pub const TRAP: i32 = 24;
/// Offset of the current Wasm call depth (`u32`).
pub const DEPTH: i32 = 28;
/// Offset of the deepest call depth allowed (`u32`).
pub const MAX_DEPTH: i32 = 32;
/// Offset of the number of elements of table 0 (`u32`).
pub const TABLE_ELEMENTS: i32 = 36;
/// Offset of the address of table 0's elements (`u64`), each a
/// [`TABLE_ENTRY_BYTES`]-byte pair: the canonical signature id (`u32`,
/// [`NULL_SIGNATURE`] for a null element), padding, the code address
/// (`u64`).
pub const TABLE_BASE: i32 = 40;
/// Offset of the address of the function table (`u64`): one code address
/// (`u64`) per function index, imports (their trampolines) first.
pub const FUNCTIONS: i32 = 48;
/// Offset of the address of the globals (`u64`): one 8-byte slot each.
pub const GLOBALS: i32 = 56;
/// Offset of the runtime's `memory.grow` (`fn(vmctx, pages: i32) -> i32`).
pub const MEMORY_GROW: i32 = 64;
/// Offset of the runtime's `memory.copy` (`fn(vmctx, dst, src, len)`), which
/// sets [`TRAP`] when a range is out of bounds.
pub const MEMORY_COPY: i32 = 72;
/// Offset of the runtime's `memory.fill` (`fn(vmctx, dst, value, len)`),
/// which sets [`TRAP`] when the range is out of bounds.
pub const MEMORY_FILL: i32 = 80;
/// Offset of the fast bounds limit (`i64`): the memory's size in bytes
/// minus [`FAST_CHECK_BYTES`] minus one, so that an access at
/// `index + offset` (signed) below it is in bounds whatever its size.
/// Kept in the context rather than computed by generated code because
/// Cranelift recomputes an `iadd_imm` at every use, even inside a loop;
/// a load stays where it is. Zero (a context nobody filled) sends every
/// access to the exact check. [`set_memory`] writes it with the size.
pub const MEMORY_FAST_END: i32 = 88;
/// Offset of the lowest stack address generated code may use (`u64`): a
/// function whose frame reaches below it traps with
/// [`TrapCode::StackOverflow`] instead of running off the kernel stack.
/// The entry (`native_entry`) sets it, so the offset is that crate's.
pub const STACK_LIMIT: i32 = native_entry::STACK_LIMIT;
/// Offset of the runtime's own pointer to the instance (`u64`), which the
/// runtime procedures above and the host-call trampolines use (in a
/// read-only run's context, to what its reading trampolines reach);
/// generated code never reads it. The entry (`native_entry`) sets it and
/// its callbacks read it, so the offset is that crate's.
pub const HOST: i32 = native_entry::HOST;
/// Bytes of the context.
pub const CONTEXT_BYTES: usize = 112;

// The entry's two words follow the others and end the context.
const _: () = assert!(
    MEMORY_FAST_END + 8 == STACK_LIMIT
        && STACK_LIMIT + 8 == HOST
        && HOST as usize + 8 == CONTEXT_BYTES
);
/// Most arguments of a kernel procedure (the widest host-call
/// trampoline).
pub const HOST_ARGUMENTS: usize = 8;

/// Bytes of one table element.
pub const TABLE_ENTRY_BYTES: i64 = 16;
/// Offset of the code address within a table element.
pub const TABLE_ENTRY_CODE: i32 = 8;
/// The signature id of a null table element.
pub const NULL_SIGNATURE: u32 = u32::MAX;

/// Why generated code stopped, as it stores it at [`TRAP`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum TrapCode {
    /// `unreachable` ran.
    Unreachable = 1,
    /// A load or store outside linear memory.
    MemoryOutOfBounds = 2,
    /// Integer division or remainder by zero.
    DivisionByZero = 3,
    /// Signed division overflow.
    IntegerOverflow = 4,
    /// A float-to-integer conversion of NaN.
    BadConversion = 5,
    /// Wasm calls nested deeper than the limit.
    StackOverflow = 6,
    /// `call_indirect` on an element outside the table.
    TableOutOfBounds = 7,
    /// `call_indirect` on a null element.
    IndirectCallToNull = 8,
    /// `call_indirect` on a function of another type.
    BadSignature = 9,
    /// The fuel ran out.
    OutOfFuel = 10,
    /// A kernel procedure trapped (the runtime keeps its trap).
    Host = 11,
}

impl TrapCode {
    /// Every code, for decoding.
    pub const ALL: [TrapCode; 11] = [
        TrapCode::Unreachable,
        TrapCode::MemoryOutOfBounds,
        TrapCode::DivisionByZero,
        TrapCode::IntegerOverflow,
        TrapCode::BadConversion,
        TrapCode::StackOverflow,
        TrapCode::TableOutOfBounds,
        TrapCode::IndirectCallToNull,
        TrapCode::BadSignature,
        TrapCode::OutOfFuel,
        TrapCode::Host,
    ];

    /// The code generated code stored, if it is one.
    pub fn from_raw(raw: u32) -> Option<TrapCode> {
        TrapCode::ALL.into_iter().find(|code| *code as u32 == raw)
    }

    /// The fault the `Extension.Faulted` event reports, as wasmi's traps map
    /// to it in `engine::wasmi`.
    pub fn fault_kind(self) -> FaultKind {
        match self {
            TrapCode::Unreachable => FaultKind::Unreachable,
            TrapCode::MemoryOutOfBounds | TrapCode::TableOutOfBounds => FaultKind::OutOfBounds,
            TrapCode::DivisionByZero => FaultKind::DivisionByZero,
            TrapCode::IntegerOverflow | TrapCode::BadConversion => FaultKind::Arithmetic,
            TrapCode::StackOverflow => FaultKind::StackOverflow,
            TrapCode::IndirectCallToNull | TrapCode::BadSignature => FaultKind::IndirectCall,
            TrapCode::OutOfFuel => FaultKind::BudgetExhausted,
            // The runtime reports the procedure's own trap instead.
            TrapCode::Host => FaultKind::Other,
        }
    }
}
