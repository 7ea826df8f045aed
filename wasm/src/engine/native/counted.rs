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
//!
//! The same count lets the bounds checks of accesses through a pointer
//! stepped once per iteration be made once, before the loop
//! ([`hoisted_loop`]).

use alloc::vec::Vec;

use wasmparser::{MemArg, Operator, OperatorsReader};

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
    reader: OperatorsReader<'_>,
) -> Result<Option<CountedLoop>, TranslateError> {
    Ok(counted_body(reader)?.map(|(counted, _, _)| counted))
}

/// A loop body: each operator with its nesting depth inside the loop.
type Body<'a> = Vec<(Operator<'a>, u32)>;

/// [`counted_loop`], with the body read and the index of its back edge.
fn counted_body(
    mut reader: OperatorsReader<'_>,
) -> Result<Option<(CountedLoop, Body<'_>, usize)>, TranslateError> {
    // The body, each operator with its nesting depth inside the loop.
    let mut body: Body<'_> = Vec::new();
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
    Ok(Some((CountedLoop { counter, step }, body, back_edge)))
}

/// Most pointers whose range a hoisted loop checks before it starts.
const MAX_HOISTED_RANGES: usize = 8;

/// Largest step of a hoisted pointer (so that `iterations * step`, at
/// most 2^32 * 2^16, cannot overflow 64 bits).
const MAX_POINTER_STEP: i32 = 1 << 16;

/// A counted loop whose accesses through stepped pointers are checked
/// once, before its first iteration (docs/design/0008-native-engine.md,
/// "What the translation guarantees", linear memory).
///
/// Its body is translated twice: a copy with every access checked, run
/// when the ranges below are not all inside memory, and a copy in which
/// the accesses of `unchecked` are not checked, run when they are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct HoistedLoop {
    /// The counter and its step.
    pub(super) counted: CountedLoop,
    /// The ranges to check before the loop, all of which must hold.
    pub(super) ranges: Vec<PointerRange>,
    /// Indexes, in the body (the operators after the `loop`), of the
    /// loads and stores whose address the ranges cover, ascending.
    pub(super) unchecked: Vec<usize>,
}

/// The bytes an access through a stepped pointer reaches over all of a
/// counted loop's iterations: with `p0` the pointer's value at the `loop`
/// and `n` the iterations, `[p0, p0 + (n - 1 + after_step) * step +
/// extent)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PointerRange {
    /// The `i32` local holding the pointer.
    pub(super) local: u32,
    /// What each iteration adds to it (1 to 2^16).
    pub(super) step: i32,
    /// Whether the accesses come after the step in the body (so the
    /// pointer has been stepped once more when they run).
    pub(super) after_step: bool,
    /// The largest `offset + size` of the accesses.
    pub(super) extent: u64,
}

/// Whether the loop whose body `reader` starts at is counted and has
/// accesses whose bounds checks can be hoisted before it.
///
/// An access qualifies when its address is a `local.get $p` just before
/// it (for a store, with one plain push of the value between), `$p` being
/// stepped by one top-level `local.get $p  i32.const k  i32.add
/// local.set $p` before the back edge (0 < k <= 2^16) and written nowhere
/// else in the body, and the access itself comes before the back edge.
/// The loop can only leave through its back edge or a trap (`counted.rs`),
/// nothing in it calls or grows memory, and everything at its top level
/// before the back edge runs once per iteration in order, so in iteration
/// `i` (from 0) `$p` is `p0 + (i + after_step) * k`, in wrapping `i32`
/// arithmetic; when the range's end is at most the memory's size the
/// values never wrap and every such access is in bounds.
pub(super) fn hoisted_loop(
    reader: OperatorsReader<'_>,
) -> Result<Option<HoistedLoop>, TranslateError> {
    let Some((counted, body, back_edge)) = counted_body(reader)? else {
        return Ok(None);
    };
    // The stepped pointers: (local, step, index of the `local.set`).
    let mut pointers: Vec<(u32, i32, usize)> = Vec::new();
    for at in 0..back_edge.saturating_sub(4 + 3) {
        if let [(Operator::LocalGet { local_index: read }, 0), (Operator::I32Const { value: step }, 0), (Operator::I32Add, 0), (
            Operator::LocalSet {
                local_index: written,
            },
            0,
        )] = &body[at..at + 4]
        {
            if read == written && (1..=MAX_POINTER_STEP).contains(step) {
                pointers.push((*read, *step, at + 3));
            }
        }
    }
    // Written exactly once, by its step.
    pointers.retain(|&(local, _, set_at)| {
        !body.iter().enumerate().any(|(at, (operator, _))| {
            at != set_at
                && matches!(operator,
                    Operator::LocalSet { local_index } | Operator::LocalTee { local_index }
                        if *local_index == local)
        })
    });
    if pointers.is_empty() {
        return Ok(None);
    }
    let mut ranges: Vec<PointerRange> = Vec::new();
    let mut unchecked = Vec::new();
    for at in 0..back_edge {
        let Some((memarg, size, is_store)) = access(&body[at].0) else {
            continue;
        };
        let address_at = if is_store {
            let plain_value = at >= 2
                && matches!(
                    body[at - 1].0,
                    Operator::LocalGet { .. }
                        | Operator::I32Const { .. }
                        | Operator::I64Const { .. }
                );
            if !plain_value {
                continue;
            }
            at - 2
        } else if at >= 1 {
            at - 1
        } else {
            continue;
        };
        let Operator::LocalGet { local_index } = body[address_at].0 else {
            continue;
        };
        let Some(&(local, step, set_at)) = pointers.iter().find(|p| p.0 == local_index) else {
            continue;
        };
        if memarg.memory != 0 || memarg.offset > u64::from(u32::MAX) {
            continue;
        }
        let after_step = at > set_at;
        let extent = memarg.offset + size;
        let full = ranges.len() == MAX_HOISTED_RANGES;
        match ranges
            .iter_mut()
            .find(|r| r.local == local && r.after_step == after_step)
        {
            Some(range) => range.extent = range.extent.max(extent),
            None if !full => ranges.push(PointerRange {
                local,
                step,
                after_step,
                extent,
            }),
            None => continue,
        }
        unchecked.push(at);
    }
    if unchecked.is_empty() {
        return Ok(None);
    }
    Ok(Some(HoistedLoop {
        counted,
        ranges,
        unchecked,
    }))
}

/// A load's or store's memory argument, size in bytes and whether it
/// stores.
fn access(operator: &Operator<'_>) -> Option<(MemArg, u64, bool)> {
    use Operator as O;
    Some(match *operator {
        O::I32Load8S { memarg } | O::I32Load8U { memarg } => (memarg, 1, false),
        O::I64Load8S { memarg } | O::I64Load8U { memarg } => (memarg, 1, false),
        O::I32Load16S { memarg } | O::I32Load16U { memarg } => (memarg, 2, false),
        O::I64Load16S { memarg } | O::I64Load16U { memarg } => (memarg, 2, false),
        O::I32Load { memarg } | O::F32Load { memarg } => (memarg, 4, false),
        O::I64Load32S { memarg } | O::I64Load32U { memarg } => (memarg, 4, false),
        O::I64Load { memarg } | O::F64Load { memarg } => (memarg, 8, false),
        O::I32Store8 { memarg } | O::I64Store8 { memarg } => (memarg, 1, true),
        O::I32Store16 { memarg } | O::I64Store16 { memarg } => (memarg, 2, true),
        O::I32Store { memarg } | O::F32Store { memarg } => (memarg, 4, true),
        O::I64Store32 { memarg } => (memarg, 4, true),
        O::I64Store { memarg } | O::F64Store { memarg } => (memarg, 8, true),
        _ => return None,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The hoisting plan of the first `loop` of the only function of
    /// `wat`.
    fn plan_of(wat: &str) -> Option<HoistedLoop> {
        let bytes = wat::parse_str(wat).unwrap();
        for payload in wasmparser::Parser::new(0).parse_all(&bytes) {
            if let wasmparser::Payload::CodeSectionEntry(body) = payload.unwrap() {
                let mut reader = body.get_operators_reader().unwrap();
                while !matches!(reader.read().unwrap(), Operator::Loop { .. }) {}
                return hoisted_loop(reader).unwrap();
            }
        }
        panic!("no function");
    }

    fn module(body: &str) -> String {
        format!(
            "(module (memory 1) (func (param $p i32) (param $q i32) (param $c i32) \
             (local $t i32) {body}))"
        )
    }

    #[test]
    fn accesses_through_a_stepped_pointer_are_hoisted_with_their_side_of_the_step() {
        let plan = plan_of(&module(
            "(loop $l
               (local.set $t (i32.load16_u offset=6 (local.get $p)))
               (local.set $p (i32.add (local.get $p) (i32.const 2)))
               (i64.store offset=1 (local.get $p) (i64.const 0))
               (i32.store8 (local.get $q) (local.get $t))
               (br_if $l (local.tee $c (i32.add (local.get $c) (i32.const 2)))))",
        ))
        .expect("hoisted");
        assert_eq!(
            plan.counted,
            CountedLoop {
                counter: 2,
                step: 2
            }
        );
        assert_eq!(
            plan.ranges,
            [
                PointerRange {
                    local: 0,
                    step: 2,
                    after_step: false,
                    extent: 8
                },
                PointerRange {
                    local: 0,
                    step: 2,
                    after_step: true,
                    extent: 9
                },
            ]
        );
        // The two accesses through `$p` (not the store through `$q`,
        // which is not stepped).
        assert_eq!(plan.unchecked, [1, 9]);
    }

    #[test]
    fn pointers_written_elsewhere_computed_or_stepped_too_far_are_not_hoisted() {
        // `$p` written inside the body besides its step.
        assert_eq!(
            plan_of(&module(
                "(loop $l
                   (local.set $t (i32.load (local.get $p)))
                   (local.set $p (i32.add (local.get $p) (i32.const 4)))
                   (if (local.get $t) (then (local.set $p (i32.const 0))))
                   (br_if $l (local.tee $c (i32.add (local.get $c) (i32.const 1)))))"
            )),
            None
        );
        // Stepped inside a nested block (not once per iteration).
        assert_eq!(
            plan_of(&module(
                "(loop $l
                   (local.set $t (i32.load (local.get $p)))
                   (if (local.get $t)
                     (then (local.set $p (i32.add (local.get $p) (i32.const 4)))))
                   (br_if $l (local.tee $c (i32.add (local.get $c) (i32.const 1)))))"
            )),
            None
        );
        // The address is computed, not the pointer itself.
        assert_eq!(
            plan_of(&module(
                "(loop $l
                   (local.set $t (i32.load (i32.add (local.get $p) (local.get $q))))
                   (local.set $p (i32.add (local.get $p) (i32.const 4)))
                   (br_if $l (local.tee $c (i32.add (local.get $c) (i32.const 1)))))"
            )),
            None
        );
        // A step beyond 2^16, and a negative one.
        for step in [65_537, -4] {
            assert_eq!(
                plan_of(&module(&format!(
                    "(loop $l
                       (local.set $t (i32.load (local.get $p)))
                       (local.set $p (i32.add (local.get $p) (i32.const {step})))
                       (br_if $l (local.tee $c (i32.add (local.get $c) (i32.const 1)))))"
                ))),
                None
            );
        }
        // Not counted (it can leave before the back edge).
        assert_eq!(
            plan_of(&module(
                "(block $out (loop $l
                   (br_if $out (i32.load (local.get $p)))
                   (local.set $p (i32.add (local.get $p) (i32.const 4)))
                   (br_if $l (local.tee $c (i32.add (local.get $c) (i32.const 1))))))"
            )),
            None
        );
    }
}
