//! A compiled module set up as its sections say: linear memory and
//! active data, globals from constant initializers, table 0 from active
//! element segments, function addresses in code memory; what a tier-up
//! copies a running instance's memory and globals into. Safe Rust; the
//! instance around it is `instance.rs`.

use alloc::{format, string::String, sync::Arc, vec, vec::Vec};
use core::sync::atomic::{AtomicU64, Ordering};

use hal::{linear_memory::LinearMemory, native_code::CodeMemory};
use spindle_abi::{Import, MEMORY_EXPORT};
use wasmparser::{DataKind, ElementItems, ElementKind, Operator, Parser, Payload};

use super::{super::snapshot::Snapshot, compile::CompiledModule, vmctx};
use crate::{
    config::{Limits, WASM_PAGE_BYTES},
    module::ModuleInfo,
};

/// Why a module cannot be set up natively (it stays on the interpreter).
pub(super) fn refuse(what: &str) -> String {
    format!("not run natively yet: {what}")
}

/// The value of a constant expression: a `const`, or the extended
/// constant expressions' integer `add`, `sub` and `mul` of constants
/// (wasmi evaluates them the same way; reading only the first operator
/// gave a different value, which the differential fuzzer found).
fn constant(expression: &wasmparser::ConstExpr<'_>) -> Result<u64, String> {
    let mut reader = expression.get_operators_reader();
    let mut stack: Vec<u64> = Vec::new();
    loop {
        let operator = reader.read().map_err(|e| String::from(e.message()))?;
        let value = match operator {
            Operator::I32Const { value } => u64::from(value as u32),
            Operator::I64Const { value } => value as u64,
            Operator::F32Const { value } => u64::from(value.bits()),
            Operator::F64Const { value } => value.bits(),
            Operator::End => break,
            ref arithmetic => {
                let (Some(b), Some(a)) = (stack.pop(), stack.pop()) else {
                    return Err(refuse("a malformed constant initializer"));
                };
                let (a32, b32) = (a as u32, b as u32);
                match arithmetic {
                    Operator::I32Add => u64::from(a32.wrapping_add(b32)),
                    Operator::I32Sub => u64::from(a32.wrapping_sub(b32)),
                    Operator::I32Mul => u64::from(a32.wrapping_mul(b32)),
                    Operator::I64Add => a.wrapping_add(b),
                    Operator::I64Sub => a.wrapping_sub(b),
                    Operator::I64Mul => a.wrapping_mul(b),
                    _ => return Err(refuse("a non-constant initializer")),
                }
            }
        };
        stack.push(value);
    }
    match stack[..] {
        [value] => Ok(value),
        _ => Err(refuse("a malformed constant initializer")),
    }
}

/// A compiled module set up as its sections say, before it has an
/// extension's state (a tier-up prepares one off the extension's lock).
pub(super) struct Layout {
    /// Linear memory (empty without one), reserved at its maximum so
    /// that it never moves: read-only code reads it beside the instance
    /// (`instance::ReadOnly`).
    pub(super) memory: LinearMemory,
    /// Whether the module exports its memory (kernel procedures read and
    /// write only an exported memory, as under wasmi).
    pub(super) memory_exported: bool,
    /// One 8-byte slot per global, which generated code reads and
    /// writes; shared with read-only code (atomics, so that the runtime's
    /// own reads and writes of them are never a data race with it).
    pub(super) globals: Arc<[AtomicU64]>,
    /// Table 0: (signature id, code address) pairs.
    pub(super) table: Vec<u64>,
    /// Code address of every function (imports: the host-call trampoline
    /// of their procedure, `entry::host_trampoline`); never changed once
    /// set up.
    pub(super) functions: Arc<[u64]>,
    /// The same for read-only code, which runs without the instance: its
    /// imports are the reading trampolines of their procedures
    /// (`entry::reading_trampoline`), which reach what the extension
    /// shares outside its instance. Never changed once set up.
    pub(super) reading_functions: Arc<[u64]>,
    /// The kernel procedure each imported function resolved to.
    pub(super) imports: Vec<Import>,
    /// Where the runtime enters every function, with integers in
    /// registers: the offset of its code, or of its integer entry if it
    /// takes or returns floats (`super::integer_entry`; imports: unused).
    pub(super) offsets: Vec<usize>,
    /// Whether each function's code uses floats (imports: no), and
    /// whether any does (`CompiledFunction::uses_floats`).
    pub(super) function_floats: Vec<bool>,
    pub(super) uses_floats: bool,
    /// The module's reading, for types and exports.
    pub(super) info: alloc::sync::Arc<ModuleInfo>,
    /// Deepest Wasm call nesting.
    pub(super) max_depth: u32,
    /// The start function, if any.
    pub(super) start: Option<u32>,
}

impl Layout {
    /// Sets up `compiled` (whose code is in `code`) as the module `bytes`
    /// (read as `info`) says: memory and data, globals, table and elements.
    pub(super) fn new(
        code: &CodeMemory,
        compiled: &CompiledModule,
        bytes: &[u8],
        imports: &[Import],
        info: alloc::sync::Arc<ModuleInfo>,
        limits: &Limits,
        max_depth: u32,
    ) -> Result<Layout, String> {
        let (initial_pages, max_pages) = info.memory_pages.unwrap_or((0, Some(0)));
        let limit_pages = u64::from(limits.memory_pages);
        let max_pages = max_pages.unwrap_or(limit_pages).min(limit_pages);
        if initial_pages > max_pages {
            return Err(refuse("a memory above the limit"));
        }
        let mut memory = LinearMemory::new(
            (initial_pages * WASM_PAGE_BYTES) as usize,
            (max_pages * WASM_PAGE_BYTES) as usize,
        )
        .ok_or_else(|| refuse("no room for its linear memory"))?;
        let mut globals = Vec::new();
        let mut table: Vec<u64> = Vec::new();
        let mut function_types = Vec::new();
        let mut start = None;
        let imported = info.imported_functions as usize;
        // Imports: the trampoline of the procedure each resolved to, which
        // generated code calls with the arguments in registers. The code
        // was compiled for the procedures the imports' names give (their
        // trap checks depend on it): a resolver that chose others keeps
        // the module on the interpreter.
        let resolved_as_compiled = imports.len() == info.imported_functions as usize
            && imports
                .iter()
                .zip(&compiled.imports)
                .all(|(&resolved, &compiled)| compiled == Some(resolved))
            && compiled.imports.len() == imports.len();
        if !resolved_as_compiled {
            return Err(refuse("imports resolved to other procedures than named"));
        }
        let mut functions: Vec<u64> = imports
            .iter()
            .map(|&import| super::entry::host_trampoline(import))
            .collect();
        let mut reading_functions: Vec<u64> = imports
            .iter()
            .map(|&import| super::entry::reading_trampoline(import))
            .collect();
        let mut offsets = vec![0usize; imported];
        let mut function_floats = vec![false; imported];
        for function in &compiled.functions {
            function_floats.push(function.uses_floats);
            let address = code
                .address(function.offset)
                .ok_or_else(|| refuse("code outside its memory"))?;
            functions.push(address);
            reading_functions.push(address);
            offsets.push(function.offset);
        }
        for &(function, offset) in &compiled.integer_entries {
            if let Some(entered_at) = offsets.get_mut(function as usize) {
                *entered_at = offset;
            }
        }
        for payload in Parser::new(0).parse_all(bytes) {
            let payload = payload.map_err(|e| String::from(e.message()))?;
            match payload {
                Payload::StartSection { func, .. } => start = Some(func),
                Payload::FunctionSection(reader) => {
                    for index in reader {
                        function_types.push(index.map_err(|e| String::from(e.message()))?);
                    }
                }
                Payload::TableSection(reader) => {
                    for table_type in reader {
                        let table_type = table_type.map_err(|e| String::from(e.message()))?;
                        if table.is_empty() {
                            let elements = table_type.ty.initial;
                            if elements > u64::from(limits.table_elements) {
                                return Err(refuse("a table above the limit"));
                            }
                            table = vec![0; elements as usize * 2];
                            for element in 0..elements as usize {
                                table[element * 2] = u64::from(vmctx::NULL_SIGNATURE);
                            }
                        }
                    }
                }
                Payload::GlobalSection(reader) => {
                    for global in reader {
                        let global = global.map_err(|e| String::from(e.message()))?;
                        globals.push(constant(&global.init_expr)?);
                    }
                }
                Payload::ElementSection(reader) => {
                    for element in reader {
                        let element = element.map_err(|e| String::from(e.message()))?;
                        let ElementKind::Active {
                            table_index,
                            offset_expr,
                        } = element.kind
                        else {
                            continue;
                        };
                        if table_index.unwrap_or(0) != 0 {
                            return Err(refuse("tables other than 0"));
                        }
                        let ElementItems::Functions(items) = element.items else {
                            return Err(refuse("element expressions"));
                        };
                        let first = constant(&offset_expr)? as u32 as usize;
                        for (at, function) in items.into_iter().enumerate() {
                            let function = function.map_err(|e| String::from(e.message()))?;
                            let slot = first + at;
                            let Some(defined) = (function as usize).checked_sub(imported) else {
                                return Err(refuse("an imported function in a table"));
                            };
                            let type_index = *function_types
                                .get(defined)
                                .ok_or_else(|| refuse("element function"))?;
                            let signature = compiled.signature_ids[type_index as usize];
                            let address = functions[function as usize];
                            let entry = table
                                .get_mut(slot * 2..slot * 2 + 2)
                                .ok_or_else(|| refuse("element outside the table"))?;
                            entry[0] = u64::from(signature);
                            entry[1] = address;
                        }
                    }
                }
                Payload::DataSection(reader) => {
                    for data in reader {
                        let data = data.map_err(|e| String::from(e.message()))?;
                        if let DataKind::Active { offset_expr, .. } = data.kind {
                            let first = constant(&offset_expr)? as u32 as usize;
                            memory
                                .as_mut_slice()
                                .get_mut(first..first + data.data.len())
                                .ok_or_else(|| refuse("data outside memory"))?
                                .copy_from_slice(data.data);
                        }
                    }
                }
                _ => {}
            }
        }
        let memory_exported = info
            .exports
            .iter()
            .any(|export| export.name == MEMORY_EXPORT && export.function.is_none());
        Ok(Layout {
            memory,
            memory_exported,
            globals: globals.into_iter().map(AtomicU64::new).collect(),
            table,
            functions: functions.into(),
            reading_functions: reading_functions.into(),
            imports: imports.to_vec(),
            offsets,
            function_floats,
            uses_floats: compiled.uses_floats,
            info,
            max_depth,
            start,
        })
    }

    /// Whether `snapshot` fits (memory within the limit, in whole pages,
    /// not smaller than the module's initial memory; globals that exist),
    /// with the memory grown to the snapshot's size when it does, so that
    /// [`Layout::restore`] cannot fail.
    pub(super) fn accepts(&mut self, snapshot: &Snapshot) -> bool {
        snapshot
            .memory
            .len()
            .is_multiple_of(WASM_PAGE_BYTES as usize)
            && snapshot
                .globals
                .iter()
                .all(|&(index, _)| (index as usize) < self.globals.len())
            && (snapshot.memory.len() == self.memory.len()
                || self.memory.grow(snapshot.memory.len()))
    }

    /// Takes a snapshot's memory and globals (after [`Layout::accepts`],
    /// which made the memory its size).
    pub(super) fn restore(&mut self, memory: &[u8], globals: Vec<(u32, u64)>) {
        let bytes = self.memory.as_mut_slice();
        let len = bytes.len().min(memory.len());
        bytes[..len].copy_from_slice(&memory[..len]);
        for (index, value) in globals {
            if let Some(slot) = self.globals.get(index as usize) {
                slot.store(value, Ordering::Relaxed);
            }
        }
    }
}
