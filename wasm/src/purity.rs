//! The guard purity check: a Wasm guard must be side-effect free, and the
//! kernel verifies it when the guard is installed (design.md "Events": SPIN
//! trusted the compiler's FUNCTIONAL annotation; Spindle trusts no compiler).
//!
//! A function is pure when its body contains none of the instructions that
//! change state that outlives the invocation, and every function it calls
//! is pure:
//! - stores to linear memory (`*.store*`), `memory.grow`, `memory.fill`,
//!   `memory.copy`, `memory.init`, `data.drop`;
//! - `global.set`;
//! - table writes: `table.set`, `table.grow`, `table.fill`, `table.copy`,
//!   `table.init` and `elem.drop` (dropping a segment changes what a later
//!   `table.init` does, so it is a side effect too);
//! - `call_indirect`, `return_call_indirect`, `call_ref`,
//!   `return_call_ref`: the callee is not known before the call, so purity
//!   cannot be proved (refused, not guessed);
//! - a `call` of an imported function not marked pure in the import table
//!   (`spindle_abi::IMPORTS`), or of a module function that is not pure.
//!
//! `local.set`/`local.tee` are allowed: locals die with the invocation.
//! The list is complete for the features [`crate::module::features`]
//! admits; atomics, SIMD and GC instructions never pass validation.
//!
//! Each defined function is scanned once at load ([`FunctionEffects::scan`]);
//! the transitive check ([`check_pure`]) runs at install, over the functions
//! the guard can reach.

use alloc::{collections::BTreeSet, format, string::String, vec::Vec};
use core::fmt;

use wasmparser::{FunctionBody, Operator};

use crate::module::ModuleInfo;

/// What one defined function does that matters for purity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionEffects {
    /// The first state-changing instruction: (byte offset, instruction).
    pub first_side_effect: Option<(usize, &'static str)>,
    /// Direct calls: (byte offset, callee function index).
    pub calls: Vec<(usize, u32)>,
    /// Whether the body reaches nothing but its arguments and locals: no
    /// call of any kind, no linear memory, global or table instruction
    /// (reads included). Such a guard can run natively without the
    /// instance: it needs no memory, globals, table or other function
    /// (`engine::native`, the self-contained entry).
    pub is_self_contained: bool,
    /// Whether the body only reads state: no side effect, no table
    /// instruction and no `ref.func` (reads of linear memory and globals,
    /// and direct calls, are allowed; [`is_read_only`] checks the callees).
    pub only_reads: bool,
}

impl FunctionEffects {
    /// Scans one function body.
    pub fn scan(body: &FunctionBody<'_>) -> wasmparser::Result<Self> {
        let mut effects = FunctionEffects {
            is_self_contained: true,
            only_reads: true,
            ..FunctionEffects::default()
        };
        let mut reader = body.get_operators_reader()?;
        while !reader.eof() {
            let (operator, offset) = reader.read_with_offset()?;
            if reaches_state(&operator) {
                effects.is_self_contained = false;
            }
            if side_effect(&operator).is_some()
                || matches!(
                    operator,
                    Operator::TableGet { .. }
                        | Operator::TableSize { .. }
                        | Operator::RefFunc { .. }
                )
            {
                effects.only_reads = false;
            }
            match operator {
                Operator::Call { function_index } | Operator::ReturnCall { function_index } => {
                    effects.calls.push((offset, function_index));
                }
                other => {
                    if effects.first_side_effect.is_none() {
                        if let Some(name) = side_effect(&other) {
                            effects.first_side_effect = Some((offset, name));
                        }
                    }
                }
            }
        }
        Ok(effects)
    }
}

/// Whether the instruction reaches anything beyond the operand stack and
/// the locals: any call, or any linear memory, global or table
/// instruction, reading or writing.
fn reaches_state(operator: &Operator<'_>) -> bool {
    use Operator as O;
    side_effect(operator).is_some()
        || reads_memory(operator)
        || matches!(
            operator,
            O::Call { .. }
                | O::ReturnCall { .. }
                | O::GlobalGet { .. }
                | O::TableGet { .. }
                | O::TableSize { .. }
                | O::RefFunc { .. }
        )
}

/// Whether the instruction reads linear memory (a load, `memory.size`).
pub(crate) fn reads_memory(operator: &Operator<'_>) -> bool {
    use Operator as O;
    matches!(
        operator,
        O::I32Load { .. }
            | O::I64Load { .. }
            | O::F32Load { .. }
            | O::F64Load { .. }
            | O::I32Load8S { .. }
            | O::I32Load8U { .. }
            | O::I32Load16S { .. }
            | O::I32Load16U { .. }
            | O::I64Load8S { .. }
            | O::I64Load8U { .. }
            | O::I64Load16S { .. }
            | O::I64Load16U { .. }
            | O::I64Load32S { .. }
            | O::I64Load32U { .. }
            | O::MemorySize { .. }
    )
}

/// The instruction's name if it changes state that outlives the invocation
/// (or calls an unknown function).
fn side_effect(operator: &Operator<'_>) -> Option<&'static str> {
    Some(match operator {
        Operator::I32Store { .. } => "i32.store",
        Operator::I64Store { .. } => "i64.store",
        Operator::F32Store { .. } => "f32.store",
        Operator::F64Store { .. } => "f64.store",
        Operator::I32Store8 { .. } => "i32.store8",
        Operator::I32Store16 { .. } => "i32.store16",
        Operator::I64Store8 { .. } => "i64.store8",
        Operator::I64Store16 { .. } => "i64.store16",
        Operator::I64Store32 { .. } => "i64.store32",
        Operator::GlobalSet { .. } => "global.set",
        Operator::MemoryGrow { .. } => "memory.grow",
        Operator::MemoryFill { .. } => "memory.fill",
        Operator::MemoryCopy { .. } => "memory.copy",
        Operator::MemoryInit { .. } => "memory.init",
        Operator::DataDrop { .. } => "data.drop",
        Operator::TableSet { .. } => "table.set",
        Operator::TableGrow { .. } => "table.grow",
        Operator::TableFill { .. } => "table.fill",
        Operator::TableCopy { .. } => "table.copy",
        Operator::TableInit { .. } => "table.init",
        Operator::ElemDrop { .. } => "elem.drop",
        Operator::CallIndirect { .. } => "call_indirect",
        Operator::ReturnCallIndirect { .. } => "return_call_indirect",
        Operator::CallRef { .. } => "call_ref",
        Operator::ReturnCallRef { .. } => "return_call_ref",
        _ => return None,
    })
}

/// Why a function is not pure: where the offending instruction is, and how
/// the guard reaches it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Impurity {
    /// The function containing the offending instruction.
    pub function: u32,
    /// Byte offset of the instruction in the module.
    pub offset: usize,
    /// The instruction (`i32.store`, `call_indirect`, or `call` of an
    /// impure import).
    pub instruction: String,
    /// The call chain from the guard to `function` (the guard first).
    pub via: Vec<u32>,
}

impl fmt::Display for Impurity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "function {} has a side effect: `{}` at offset {:#x}",
            self.function, self.instruction, self.offset
        )?;
        if self.via.len() > 1 {
            write!(f, " (reached through calls {:?})", self.via)?;
        }
        Ok(())
    }
}

/// Whether function `root` is read-only: it and every function it can
/// call only read state ([`FunctionEffects::only_reads`]: linear memory
/// and globals, nothing else), and `admits(index)` accepts each function
/// reached, itself included: the engine's say on whether it can run that
/// function without the instance (for an import, whether the procedure
/// it resolved to changes nothing and reaches only what the extension
/// shares outside its instance, `host::reads_only`; for a defined
/// function, whether its code needs nothing the lockless entry does not
/// give, such as the float registers kept). Such code is pure and
/// leaves no trace, so running it beside the instance's other
/// invocations, and running it again when one of them changed what it
/// read, is safe (`engine::native`'s read-only entry,
/// `extension::Shared::invoke_read_only`).
pub fn is_read_only(info: &ModuleInfo, root: u32, admits: &dyn Fn(u32) -> bool) -> bool {
    let mut visited = BTreeSet::new();
    let mut stack = alloc::vec![root];
    while let Some(function) = stack.pop() {
        if !visited.insert(function) {
            continue;
        }
        if !admits(function) {
            return false;
        }
        if function < info.imported_functions {
            continue;
        }
        let Some(effects) = info.effects_of(function) else {
            return false;
        };
        if !effects.only_reads {
            return false;
        }
        stack.extend(
            effects
                .calls
                .iter()
                .map(|&(_, callee)| callee)
                .filter(|callee| !visited.contains(callee)),
        );
    }
    true
}

/// Checks that function `root` is pure. `is_pure_import(index)` says
/// whether imported function `index` was resolved to a pure procedure.
pub fn check_pure(
    info: &ModuleInfo,
    root: u32,
    is_pure_import: &dyn Fn(u32) -> bool,
) -> Result<(), Impurity> {
    // Depth-first over the call graph; `path` is the chain to the current
    // function, for the error message. Iterative: a module can nest calls
    // deeper than the kernel stack would like.
    let mut visited = BTreeSet::new();
    let mut stack: Vec<(u32, Vec<u32>)> = alloc::vec![(root, alloc::vec![root])];
    while let Some((function, path)) = stack.pop() {
        if !visited.insert(function) {
            continue;
        }
        let Some(effects) = info.effects_of(function) else {
            // An import reached as the root: only a defined function can be
            // a guard, but be precise rather than assume.
            if is_pure_import(function) {
                continue;
            }
            return Err(Impurity {
                function,
                offset: 0,
                instruction: format!("imported function {function} (not pure)"),
                via: path,
            });
        };
        if let Some((offset, instruction)) = effects.first_side_effect {
            return Err(Impurity {
                function,
                offset,
                instruction: instruction.into(),
                via: path,
            });
        }
        for &(offset, callee) in &effects.calls {
            if callee < info.imported_functions {
                if !is_pure_import(callee) {
                    let import = info
                        .imports
                        .iter()
                        .filter(|i| i.func_type.is_some())
                        .nth(callee as usize);
                    let name = import.map_or_else(
                        || format!("{callee}"),
                        |i| format!("{}.{}", i.module, i.name),
                    );
                    return Err(Impurity {
                        function,
                        offset,
                        instruction: format!("call {name} (an import not marked pure)"),
                        via: path,
                    });
                }
            } else if !visited.contains(&callee) {
                let mut next = path.clone();
                next.push(callee);
                stack.push((callee, next));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::is_read_only;
    use crate::module::ModuleInfo;

    /// Each export of a module, and whether it is read-only, with the
    /// kernel procedures admitted as `host::reads_only` says of the ones
    /// the imports name.
    fn read_only_exports(wat: &str) -> alloc::vec::Vec<(alloc::string::String, bool)> {
        let info = ModuleInfo::parse(&wat::parse_str(wat).unwrap()).unwrap();
        let procedures: alloc::vec::Vec<_> = info
            .imports
            .iter()
            .filter(|import| import.func_type.is_some())
            .map(|import| spindle_abi::Import::find(&import.module, &import.name))
            .collect();
        // Defined functions are all admitted.
        let reads_only = |index: u32| match procedures.get(index as usize) {
            Some(procedure) => procedure.is_some_and(crate::host::reads_only),
            None => true,
        };
        info.exports
            .iter()
            .filter_map(|export| {
                let function = export.function?;
                Some((
                    export.name.clone(),
                    is_read_only(&info, function, &reads_only),
                ))
            })
            .collect()
    }

    #[test]
    fn read_only_code_reads_memory_and_globals_and_calls_only_such_code() {
        let found = read_only_exports(
            r#"(module
              (import "spindle" "log" (func $log (param i32 i32) (result i32)))
              (import "spindle" "timer_now_ns" (func $now (result i64)))
              (import "spindle" "handle_kind" (func $kind (param i32) (result i32)))
              (import "spindle" "packet_read" (func $read (param i32 i32 i32 i32) (result i32)))
              (memory (export "memory") 1)
              (table 1 funcref)
              (global $g (mut i32) (i32.const 0))
              (func $reads (result i32) (i32.add (i32.load (i32.const 0)) (global.get $g)))
              (func (export "reads") (result i32) (call $reads))
              (func (export "size") (result i32) (memory.size))
              (func (export "stores") (i32.store (i32.const 0) (i32.const 1)))
              (func (export "sets") (global.set $g (i32.const 1)))
              (func (export "grows") (result i32) (memory.grow (i32.const 1)))
              (func (export "logs") (result i32) (call $log (i32.const 0) (i32.const 0)))
              (func $calls_logs (result i32) (call $log (i32.const 0) (i32.const 0)))
              (func (export "calls_a_logger") (result i32) (call $calls_logs))
              (func (export "table") (result i32) (table.size))
              (func (export "indirect") (result i32) (call_indirect (result i32) (i32.const 0)))
              (func $recent (result i32) (i64.lt_u (call $now) (i64.load (i32.const 0))))
              (func (export "clock_and_handles") (result i32)
                (i32.and (call $recent) (i32.eq (call $kind (i32.const 0)) (i32.const 1))))
              (func (export "packet_read") (result i32)
                (call $read (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 4))))"#,
        );
        let expected = [
            ("reads", true),
            ("size", true),
            ("stores", false),
            ("sets", false),
            ("grows", false),
            ("logs", false),
            ("calls_a_logger", false),
            ("table", false),
            ("indirect", false),
            // Procedures that only read, reached through a call.
            ("clock_and_handles", true),
            // Pure, but it writes linear memory.
            ("packet_read", false),
        ];
        for (name, read_only) in expected {
            let got = found.iter().find(|(n, _)| n == name).map(|(_, r)| *r);
            assert_eq!(got, Some(read_only), "{name}");
        }
    }
}
