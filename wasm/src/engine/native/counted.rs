//! Counted loops: loops whose number of iterations is known when they
//! start, so that their fuel is charged once, before the first iteration,
//! instead of at every header (docs/design/0008-native-engine.md, "What
//! the translation guarantees", fuel).
//!
//! The shape recognized is the one compilers emit for `for` loops over a
//! length (the checksum's): a body whose only way back to the header is a
//! final `br_if 0` on a counter stepped by a power of two,
//!
//! ```text
//! loop
//!   ...                               ;; no branch out, no return, no call
//!   local.get $c  i32.const k  i32.add  local.tee $c  br_if 0
//!   ...                               ;; the exit path, run once
//! end
//! ```
//!
//! with `$c` written nowhere else in the body. Each iteration either
//! reaches that `br_if` or traps, so the body runs exactly the number of
//! steps that take `$c` from its value at the `loop` to zero (modulo
//! 2^32), or traps first: the same count the per-header charges would
//! have taken. A counter that never reaches zero is a loop that can only
//! end by running out of fuel, so it traps with `OutOfFuel` at once.

use wasmparser::{Operator, OperatorsReader};

use super::translate::TranslateError;

/// Most operators of a loop body scanned for the shape (a longer body
/// keeps its per-header charge; this bounds the scan of nested loops).
const MAX_SCANNED_OPERATORS: usize = 4096;

/// A loop recognized as counted: its counter local and step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct CountedLoop {
    /// The `i32` local stepped toward zero.
    pub(super) counter: u32,
    /// What each iteration adds to it: ±1, ±2, ±4 or ±8.
    pub(super) step: i32,
}

impl CountedLoop {
    /// The power of two the step is, in bits (0 to 3).
    pub(super) fn step_shift(self) -> u32 {
        self.step.unsigned_abs().trailing_zeros()
    }
}

/// Whether the loop whose body `reader` starts at (just after its `loop`
/// operator) has the counted shape; `reader` is a copy, left wherever the
/// scan stopped.
pub(super) fn counted_loop(
    mut reader: OperatorsReader<'_>,
) -> Result<Option<CountedLoop>, TranslateError> {
    // The body, each operator with its nesting depth inside the loop.
    let mut body: alloc::vec::Vec<(Operator<'_>, u32)> = alloc::vec::Vec::new();
    let mut depth: u32 = 0;
    loop {
        if body.len() == MAX_SCANNED_OPERATORS || reader.eof() {
            return Ok(None);
        }
        let operator = reader
            .read()
            .map_err(|e| TranslateError::Malformed(e.message().into()))?;
        match operator {
            Operator::End if depth == 0 => break,
            Operator::End => {
                depth -= 1;
                body.push((operator, depth + 1));
                continue;
            }
            Operator::Block { .. } | Operator::Loop { .. } | Operator::If { .. } => {
                body.push((operator, depth));
                depth += 1;
                continue;
            }
            _ => body.push((operator, depth)),
        }
    }
    // The back edge: the first operator that branches to the header or out
    // of the loop must be the final `br_if 0`, at the top level.
    let Some(back_edge) = body
        .iter()
        .position(|(operator, depth)| leaves_or_repeats(operator, *depth))
    else {
        return Ok(None);
    };
    if !matches!(body[back_edge], (Operator::BrIf { relative_depth: 0 }, 0)) || back_edge < 4 {
        return Ok(None);
    }
    let (counter, step) = match &body[back_edge - 4..back_edge] {
        [(Operator::LocalGet { local_index: read }, 0), (Operator::I32Const { value: step }, 0), (Operator::I32Add, 0), (
            Operator::LocalTee {
                local_index: written,
            },
            0,
        )] if read == written => (*read, *step),
        _ => return Ok(None),
    };
    if !matches!(step.unsigned_abs(), 1 | 2 | 4 | 8) {
        return Ok(None);
    }
    // Nothing before the back edge may call (a callee could take the
    // fuel the loop was charged for first; kept out for simplicity), and
    // nothing after it may branch to the header again.
    let calls = body[..back_edge]
        .iter()
        .any(|(operator, _)| is_call(operator));
    let repeats = body[back_edge + 1..]
        .iter()
        .any(|(operator, depth)| branches_to_header(operator, *depth));
    // The counter is written only by the back edge's `local.tee`.
    let written_elsewhere = body.iter().enumerate().any(|(at, (operator, _))| {
        at != back_edge - 1
            && matches!(operator,
                Operator::LocalSet { local_index } | Operator::LocalTee { local_index }
                    if *local_index == counter)
    });
    if calls || repeats || written_elsewhere {
        return Ok(None);
    }
    Ok(Some(CountedLoop { counter, step }))
}

/// Whether `operator`, at `depth` inside the loop body, may branch to the
/// loop's header or out of the loop (or return).
fn leaves_or_repeats(operator: &Operator<'_>, depth: u32) -> bool {
    match operator {
        Operator::Br { relative_depth } | Operator::BrIf { relative_depth } => {
            *relative_depth >= depth
        }
        Operator::BrTable { targets } => {
            targets.default() >= depth || targets.targets().any(|t| t.map_or(true, |t| t >= depth))
        }
        Operator::BrOnNull { .. } | Operator::BrOnNonNull { .. } => true,
        Operator::Return
        | Operator::ReturnCall { .. }
        | Operator::ReturnCallIndirect { .. }
        | Operator::ReturnCallRef { .. } => true,
        _ => false,
    }
}

/// Whether `operator`, at `depth` inside the loop body, may branch to the
/// loop's header.
fn branches_to_header(operator: &Operator<'_>, depth: u32) -> bool {
    match operator {
        Operator::Br { relative_depth } | Operator::BrIf { relative_depth } => {
            *relative_depth == depth
        }
        Operator::BrTable { targets } => {
            targets.default() == depth || targets.targets().any(|t| t.map_or(true, |t| t == depth))
        }
        Operator::BrOnNull { .. } | Operator::BrOnNonNull { .. } => true,
        _ => false,
    }
}

/// Whether `operator` calls a function or a runtime procedure that could
/// use fuel or grow memory.
fn is_call(operator: &Operator<'_>) -> bool {
    matches!(
        operator,
        Operator::Call { .. }
            | Operator::CallIndirect { .. }
            | Operator::CallRef { .. }
            | Operator::MemoryGrow { .. }
    )
}
