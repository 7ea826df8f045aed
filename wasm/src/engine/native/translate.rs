//! Wasm function bodies to Cranelift IR, one operator at a time.
//!
//! The body was validated by [`crate::module::ModuleInfo::parse`] before
//! it gets here, so operand types and stack heights are known to be right;
//! what this pass adds is the safety the machine does not give:
//! - every linear-memory access is checked against the memory's current
//!   size, loaded from the context (explicit checks; no guard region),
//!   at the access or, in a hoisted loop (`counted.rs`), once before it
//!   for all its iterations;
//! - fuel is charged at function entry and at every loop header;
//! - the call depth is counted at entry and checked against the limit;
//! - `call_indirect` checks the table bound and the element's signature;
//! - division, remainder and float-to-integer conversion are checked
//!   before the instruction that would fault;
//! - a trap stores its code in the context and returns (see [`super::vmctx`]).
//!
//! Operators outside what is translated yet give [`TranslateError::Unsupported`]:
//! such a module stays on the interpreter tier.

use alloc::{string::String, vec::Vec};

use cranelift_codegen::ir::{
    condcodes::{FloatCC, IntCC},
    types, AbiParam, Block, InstBuilder, MemFlagsData, Signature, Type, Value,
};
use cranelift_frontend::{FunctionBuilder, Switch, Variable};
use wasmparser::{BlockType, FunctionBody, MemArg, Operator, ValType};

use super::{
    counted::{counted_loop, hoisted_loop, CountedLoop, HoistedLoop},
    vmctx::{self, TrapCode},
};
use crate::module::{FuncType, WasmType};

/// Why a body was not translated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TranslateError {
    /// An operator or type the native tier does not translate yet.
    Unsupported(String),
    /// A limit of [`super::compile::CompileLimits`] was exceeded.
    Limit(String),
    /// The body could not be read (it was validated, so this is a bug).
    Malformed(String),
}

/// What translation needs to know about the module.
pub struct ModuleEnv<'a> {
    /// Every type of the type section.
    pub types: &'a [FuncType],
    /// The canonical signature id of each type (the first structurally
    /// equal type's index), what `call_indirect` compares.
    pub signature_ids: &'a [u32],
    /// The type of every function, imported first.
    pub functions: &'a [FuncType],
    /// How many of [`ModuleEnv::functions`] are imported (kernel
    /// procedures, called through the context's host-call trampoline).
    pub imported_functions: u32,
    /// For each import, whether its kernel procedure may trap (else no
    /// trap check follows its calls).
    pub imports_may_trap: &'a [bool],
    /// The type of every global.
    pub globals: &'a [WasmType],
    /// The calling convention of the target.
    pub call_conv: cranelift_codegen::isa::CallConv,
    /// What the frontend needs to know of the target.
    pub frontend: cranelift_codegen::isa::TargetFrontendConfig,
    /// Most locals a function may declare.
    pub max_locals: u32,
    /// Deepest block nesting.
    pub max_nesting: usize,
}

/// The Cranelift type of a Wasm value type.
pub fn clif_type(ty: WasmType) -> Result<Type, TranslateError> {
    match ty {
        WasmType::I32 => Ok(types::I32),
        WasmType::I64 => Ok(types::I64),
        WasmType::F32 => Ok(types::F32),
        WasmType::F64 => Ok(types::F64),
        WasmType::Other => Err(TranslateError::Unsupported("reference types".into())),
    }
}

/// The native signature of a Wasm function type: the context first.
pub fn signature(
    ty: &FuncType,
    call_conv: cranelift_codegen::isa::CallConv,
) -> Result<Signature, TranslateError> {
    let mut signature = Signature::new(call_conv);
    signature.params.push(AbiParam::new(types::I64));
    for &param in &ty.params {
        signature.params.push(AbiParam::new(clif_type(param)?));
    }
    for &result in &ty.results {
        signature.returns.push(AbiParam::new(clif_type(result)?));
    }
    Ok(signature)
}

/// What a branch to a control frame targets.
struct Frame {
    /// Where `br` goes: the loop header, or the end of a block or `if`.
    branch_target: Block,
    /// Values a branch carries: the loop's parameters, else the results.
    branch_arity: usize,
    /// The block after `end`, taking the results as parameters.
    end: Block,
    /// Result types.
    results: Vec<Type>,
    /// Operand stack height below the frame's parameters.
    height: usize,
    /// For an `if`: the else block and the parameters it starts with;
    /// `None` once `else` was seen or for other frames.
    else_block: Option<(Block, Vec<Value>)>,
}

/// Translates one function body.
pub struct Translator<'a, 'b> {
    env: &'a ModuleEnv<'a>,
    builder: FunctionBuilder<'b>,
    vmctx: Value,
    locals: Vec<Variable>,
    stack: Vec<Value>,
    frames: Vec<Frame>,
    /// Nested blocks entered while the code is unreachable.
    unreachable_depth: usize,
    is_unreachable: bool,
    /// The function's exit: decrements the depth and returns.
    exit: Block,
    /// Stores the trap code (its parameter) and returns zeros.
    trap: Block,
    /// Returns zeros (a callee already stored a trap code).
    propagate: Block,
    results: Vec<Type>,
    depth_on_entry: Value,
    /// Whether the body calls the runtime's memory procedures.
    calls_runtime: bool,
    /// The fuel left, kept in a register: loaded on entry, stored back
    /// before every Wasm call (the callee charges the context's), reloaded
    /// after it, and stored at the exit and on a trap. So a loop header's
    /// charge is a subtraction and a branch, not a load and a store.
    fuel: Variable,
    /// Linear memory in registers (see [`MemoryRegisters`]).
    memory: MemoryRegisters,
    /// The loop about to be translated, when it is counted: its fuel is
    /// charged once before it rather than at its header (`counted.rs`).
    counted_loop: Option<CountedLoop>,
    /// The loop about to be translated is a copy of a hoisted loop's body
    /// (`counted.rs`, [`HoistedLoop`]): its fuel was charged and its
    /// ranges checked before, and it ends at this block, shared by both
    /// copies.
    hoisted_end: Option<Block>,
    /// The access about to be translated is covered by a range checked
    /// before its loop: no check of its own.
    unchecked_access: bool,
    /// Whether the body reaches linear memory at all (else the
    /// variables of `memory` are never loaded).
    uses_memory: bool,
    /// The function calls nothing: no depth or stack check (see
    /// [`translate`]).
    is_leaf: bool,
}

fn unsupported(what: &str) -> TranslateError {
    TranslateError::Unsupported(what.into())
}

fn malformed(error: wasmparser::BinaryReaderError) -> TranslateError {
    TranslateError::Malformed(error.message().into())
}

fn trusted() -> MemFlagsData {
    MemFlagsData::trusted()
}

/// Translates `body` of a function of type `ty` into `builder`'s function;
/// whether it calls the runtime's memory procedures (`memory.grow`,
/// `memory.copy`, `memory.fill`).
pub fn translate(
    env: &ModuleEnv<'_>,
    ty: &FuncType,
    body: &FunctionBody<'_>,
    builder: FunctionBuilder<'_>,
) -> Result<bool, TranslateError> {
    let mut builder = builder;
    let entry = builder.create_block();
    builder.append_block_params_for_function_params(entry);
    builder.switch_to_block(entry);
    let params = builder.block_params(entry).to_vec();
    let vmctx = params[0];
    let mut locals = Vec::new();
    for (&param_type, &value) in ty.params.iter().zip(&params[1..]) {
        let var = builder.declare_var(clif_type(param_type)?);
        builder.def_var(var, value);
        locals.push(var);
    }
    let mut reader = body.get_locals_reader().map_err(malformed)?;
    let mut declared: u32 = 0;
    for _ in 0..reader.get_count() {
        let (count, local_type) = reader.read().map_err(malformed)?;
        declared = declared.saturating_add(count);
        if declared > env.max_locals {
            return Err(TranslateError::Limit("too many locals".into()));
        }
        let wasm_type = WasmType::from(local_type);
        let clif = clif_type(wasm_type)?;
        for _ in 0..count {
            let var = builder.declare_var(clif);
            let zero = zero_of(&mut builder, clif);
            builder.def_var(var, zero);
            locals.push(var);
        }
    }
    let results: Vec<Type> = ty
        .results
        .iter()
        .map(|&r| clif_type(r))
        .collect::<Result<_, _>>()?;
    let exit = builder.create_block();
    for &result in &results {
        builder.append_block_param(exit, result);
    }
    let trap = builder.create_block();
    builder.append_block_param(trap, types::I32);
    let propagate = builder.create_block();

    // Fuel and memory in registers (see `Translator::fuel`), defined
    // first so that every path, the trap's included, sees them.
    let fuel = builder.declare_var(types::I64);
    let fuel_on_entry = builder
        .ins()
        .load(types::I64, trusted(), vmctx, vmctx::FUEL);
    builder.def_var(fuel, fuel_on_entry);
    let memory = MemoryRegisters {
        base: builder.declare_var(types::I64),
        bytes: builder.declare_var(types::I64),
        fast_end: builder.declare_var(types::I64),
    };
    let uses_memory = uses_memory(body)?;
    if uses_memory {
        memory.load(&mut builder, vmctx);
    }

    // A leaf (no call of any kind: Wasm, kernel or runtime procedure)
    // adds one frame to its caller's and none below it, so neither limit
    // needs it to check: its frame, at most `CompileLimits::frame_bytes`,
    // lies at most that far below a caller that passed its stack check
    // (or the entry), the same worst case as any function's frame written
    // before its check; and it deepens the call chain by one, calling
    // nothing deeper. So a leaf has no depth or stack check (most
    // handlers and guards are leaves).
    let is_leaf = !makes_calls(body)?;
    // Call depth: checked and counted on entry, restored at the exit
    // (neither read nor written by a leaf).
    let (depth, too_deep) = if is_leaf {
        (builder.ins().iconst(types::I32, 0), None)
    } else {
        let depth = builder
            .ins()
            .load(types::I32, trusted(), vmctx, vmctx::DEPTH);
        let max_depth = builder
            .ins()
            .load(types::I32, trusted(), vmctx, vmctx::MAX_DEPTH);
        let too_deep = builder
            .ins()
            .icmp(IntCC::UnsignedGreaterThanOrEqual, depth, max_depth);
        (depth, Some(too_deep))
    };
    let mut translator = Translator {
        env,
        builder,
        vmctx,
        locals,
        stack: Vec::new(),
        frames: Vec::new(),
        unreachable_depth: 0,
        is_unreachable: false,
        exit,
        trap,
        propagate,
        results: results.clone(),
        depth_on_entry: depth,
        calls_runtime: false,
        fuel,
        memory,
        counted_loop: None,
        hoisted_end: None,
        unchecked_access: false,
        uses_memory,
        is_leaf: false,
    };
    if let Some(too_deep) = too_deep {
        translator.trap_if(too_deep, TrapCode::StackOverflow);
        // The machine stack: this frame is already allocated, so the check
        // is that it stays above the limit the runtime set (which leaves
        // room below for one more frame and the kernel procedures).
        let stack_pointer = translator.builder.ins().get_stack_pointer(types::I64);
        let stack_limit =
            translator
                .builder
                .ins()
                .load(types::I64, trusted(), vmctx, vmctx::STACK_LIMIT);
        let below =
            translator
                .builder
                .ins()
                .icmp(IntCC::UnsignedLessThan, stack_pointer, stack_limit);
        translator.trap_if(below, TrapCode::StackOverflow);
        let deeper = translator.builder.ins().iadd_imm_s(depth, 1);
        translator
            .builder
            .ins()
            .store(trusted(), deeper, vmctx, vmctx::DEPTH);
    }
    translator.is_leaf = is_leaf;
    translator.charge_fuel();
    translator.frames.push(Frame {
        branch_target: exit,
        branch_arity: results.len(),
        end: exit,
        results,
        height: 0,
        else_block: None,
    });

    let mut operators = body.get_operators_reader().map_err(malformed)?;
    // The hoisted loop being translated (never more than one at a time,
    // so a loop nested in another is translated twice at most).
    let mut hoisting: Option<Hoisting<'_>> = None;
    while !operators.eof() {
        let operator = operators.read().map_err(malformed)?;
        let is_plain_loop = matches!(
            operator,
            Operator::Loop {
                blockty: BlockType::Empty
            }
        ) && !translator.is_unreachable;
        if is_plain_loop && hoisting.is_none() {
            if let Some(plan) = hoisted_loop(operators.clone())? {
                let (fast, end) = translator.enter_hoisted_loop(&plan);
                translator.hoisted_end = Some(end);
                translator.operator(operator)?;
                hoisting = Some(Hoisting {
                    body: operators.clone(),
                    frames: translator.frames.len(),
                    fast,
                    end,
                    unchecked: plan.unchecked,
                    at: None,
                });
                continue;
            }
        }
        if is_plain_loop {
            translator.counted_loop = counted_loop(operators.clone())?;
        }
        if let Some(hoisting) = &mut hoisting {
            if let Some(at) = &mut hoisting.at {
                translator.unchecked_access = hoisting.unchecked.binary_search(at).is_ok();
                *at += 1;
            }
        }
        let swapped = match operator {
            Operator::I32Load16U { .. } if !translator.is_unreachable => {
                byte_swap_after(operators.clone())
            }
            _ => None,
        };
        translator.operator(operator)?;
        translator.unchecked_access = false;
        if let Some(local_index) = swapped {
            // The load's value, then `local.tee`, then the swap in place
            // of the eight operators that compute it.
            translator.operator(Operator::LocalTee { local_index })?;
            translator.swap_bytes16();
            for _ in 0..BYTE_SWAP_OPERATORS {
                operators.read().map_err(malformed)?;
            }
            if let Some(at) = hoisting.as_mut().and_then(|h| h.at.as_mut()) {
                *at += BYTE_SWAP_OPERATORS;
            }
        }
        let Some(current) = &mut hoisting else {
            continue;
        };
        if translator.frames.len() >= current.frames {
            continue;
        }
        // The loop's own `end`: after the checked copy, the same body
        // again from the start, with the covered accesses unchecked.
        if current.at.is_some() {
            hoisting = None;
            continue;
        }
        operators = current.body.clone();
        translator.builder.switch_to_block(current.fast);
        translator.is_unreachable = false;
        translator.hoisted_end = Some(current.end);
        translator.operator(Operator::Loop {
            blockty: BlockType::Empty,
        })?;
        current.at = Some(0);
    }
    let calls_runtime = translator.calls_runtime;
    translator.finish();
    Ok(calls_runtime)
}

/// Operators after an `i32.load16_u` that [`byte_swap_after`] replaces.
const BYTE_SWAP_OPERATORS: usize = 9;

/// Whether the operators after an `i32.load16_u` (at `reader`) swap its
/// two bytes, as compilers emit `u16::from_be_bytes` (the checksum's
/// loop): `local.tee $t  i32.const 8  i32.shl  local.get $t  i32.const 8
/// i32.shr_u  i32.or  i32.const 0xffff  i32.and`. The value is below
/// 2^16, so the result is its two bytes swapped, one 16-bit rotate
/// instead of five operations; `$t` is still written. Gives `$t`.
fn byte_swap_after(mut reader: wasmparser::OperatorsReader<'_>) -> Option<u32> {
    let mut next = [const { None }; BYTE_SWAP_OPERATORS];
    for slot in &mut next {
        *slot = Some(reader.read().ok()?);
    }
    match next {
        [Some(Operator::LocalTee { local_index: tee }), Some(Operator::I32Const { value: 8 }), Some(Operator::I32Shl), Some(Operator::LocalGet { local_index: get }), Some(Operator::I32Const { value: 8 }), Some(Operator::I32ShrU), Some(Operator::I32Or), Some(Operator::I32Const { value: 0xffff }), Some(Operator::I32And)]
            if tee == get =>
        {
            Some(tee)
        }
        _ => None,
    }
}

/// A hoisted loop (`counted.rs`, [`HoistedLoop`]) while its two copies
/// are translated: first the checked one, then the fast one.
struct Hoisting<'a> {
    /// The operators of the body, from just after the `loop`.
    body: wasmparser::OperatorsReader<'a>,
    /// How many frames are open inside the loop (its own included).
    frames: usize,
    /// Where the fast copy starts (its ranges held).
    fast: Block,
    /// Where both copies end.
    end: Block,
    /// The body indexes of the accesses not checked in the fast copy.
    unchecked: Vec<usize>,
    /// In the fast copy, the index of the next operator of the body.
    at: Option<usize>,
}

/// Whether `body` has an operator that reaches linear memory (a load, a
/// store, or a `memory.*` instruction).
fn uses_memory(body: &FunctionBody<'_>) -> Result<bool, TranslateError> {
    let mut operators = body.get_operators_reader().map_err(malformed)?;
    while !operators.eof() {
        let operator = operators.read().map_err(malformed)?;
        if crate::purity::reads_memory(&operator) || writes_memory(&operator) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether `body` calls anything: a Wasm function (directly, through the
/// table or in tail position), a kernel procedure, or one of the runtime's
/// memory procedures (`memory.grow`, `memory.copy`, `memory.fill`,
/// `memory.init`). A function that does not is a leaf (see
/// [`translate`]). Anything else that would call out is refused by the
/// translation.
pub(super) fn makes_calls(body: &FunctionBody<'_>) -> Result<bool, TranslateError> {
    use Operator as O;
    let mut operators = body.get_operators_reader().map_err(malformed)?;
    while !operators.eof() {
        let operator = operators.read().map_err(malformed)?;
        if matches!(
            operator,
            O::Call { .. }
                | O::CallIndirect { .. }
                | O::ReturnCall { .. }
                | O::ReturnCallIndirect { .. }
                | O::CallRef { .. }
                | O::ReturnCallRef { .. }
                | O::MemoryGrow { .. }
                | O::MemoryCopy { .. }
                | O::MemoryFill { .. }
                | O::MemoryInit { .. }
        ) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether the instruction writes linear memory (a store, `memory.grow`,
/// `memory.fill`, `memory.copy`, `memory.init`).
fn writes_memory(operator: &Operator<'_>) -> bool {
    use Operator as O;
    matches!(
        operator,
        O::I32Store { .. }
            | O::I64Store { .. }
            | O::F32Store { .. }
            | O::F64Store { .. }
            | O::I32Store8 { .. }
            | O::I32Store16 { .. }
            | O::I64Store8 { .. }
            | O::I64Store16 { .. }
            | O::I64Store32 { .. }
            | O::MemoryGrow { .. }
            | O::MemoryCopy { .. }
            | O::MemoryFill { .. }
            | O::MemoryInit { .. }
    )
}

/// Linear memory's base address and size, kept in registers: loaded on
/// entry and reloaded after each call that may grow the memory (Wasm
/// calls and `memory.grow`; kernel procedures never resize it), so a
/// loop's bounds checks load nothing.
#[derive(Clone, Copy)]
struct MemoryRegisters {
    /// Host address of byte 0.
    base: Variable,
    /// Size in bytes.
    bytes: Variable,
    /// [`vmctx::MEMORY_FAST_END`]: an access at `index + offset` below it
    /// is in bounds whatever its size, so one limit in a register serves
    /// every access (see `Translator::address`).
    fast_end: Variable,
}

impl MemoryRegisters {
    /// (Re)loads the memory's base and size from the context.
    fn load(self, builder: &mut FunctionBuilder<'_>, vmctx: Value) {
        let base = builder
            .ins()
            .load(types::I64, trusted(), vmctx, vmctx::MEMORY_BASE);
        builder.def_var(self.base, base);
        let bytes = builder
            .ins()
            .load(types::I64, trusted(), vmctx, vmctx::MEMORY_BYTES);
        builder.def_var(self.bytes, bytes);
        let fast_end = builder
            .ins()
            .load(types::I64, trusted(), vmctx, vmctx::MEMORY_FAST_END);
        builder.def_var(self.fast_end, fast_end);
    }
}

fn zero_of(builder: &mut FunctionBuilder<'_>, ty: Type) -> Value {
    match ty {
        types::F32 => builder.ins().f32const(0.0),
        types::F64 => builder.ins().f64const(0.0),
        _ => builder.ins().iconst(ty, 0),
    }
}

impl Translator<'_, '_> {
    /// Builds the exit, trap and propagation blocks once the body is done.
    fn finish(mut self) {
        // The exit: the depth goes back to what it was on entry (a leaf
        // did not change it).
        self.builder.switch_to_block(self.exit);
        let values = self.builder.block_params(self.exit).to_vec();
        if !self.is_leaf {
            self.builder
                .ins()
                .store(trusted(), self.depth_on_entry, self.vmctx, vmctx::DEPTH);
        }
        self.store_fuel();
        self.builder.ins().return_(&values);

        self.builder.switch_to_block(self.trap);
        let code = self.builder.block_params(self.trap)[0];
        // What is left (negative when it ran out) tells the runtime how
        // much the call used.
        self.store_fuel();
        self.builder
            .ins()
            .store(trusted(), code, self.vmctx, vmctx::TRAP);
        self.builder.ins().jump(self.propagate, &[]);

        self.builder.switch_to_block(self.propagate);
        let zeros: Vec<Value> = self
            .results
            .clone()
            .into_iter()
            .map(|ty| zero_of(&mut self.builder, ty))
            .collect();
        self.builder.ins().return_(&zeros);
        self.builder.seal_all_blocks();
        self.builder.finalize(self.env.frontend);
    }

    fn pop(&mut self) -> Value {
        // Validation guarantees an operand is there.
        self.stack
            .pop()
            .unwrap_or_else(|| self.builder.ins().iconst(types::I32, 0))
    }

    fn pop2(&mut self) -> (Value, Value) {
        let b = self.pop();
        let a = self.pop();
        (a, b)
    }

    fn push(&mut self, value: Value) {
        self.stack.push(value);
    }

    fn pop_n(&mut self, n: usize) -> Vec<Value> {
        let at = self.stack.len().saturating_sub(n);
        self.stack.split_off(at)
    }

    fn peek_n(&self, n: usize) -> Vec<Value> {
        let at = self.stack.len().saturating_sub(n);
        self.stack[at..].to_vec()
    }

    /// Goes to the trap block with `code` when `condition` is non-zero,
    /// through a cold block of its own that sets the code: the hot path
    /// is the compare and the branch, without materializing the code
    /// before it (two instructions of a checksum loop's 22).
    fn trap_if(&mut self, condition: Value, code: TrapCode) {
        let next = self.builder.create_block();
        let cold = self.builder.create_block();
        self.builder.set_cold_block(cold);
        self.builder.ins().brif(condition, cold, &[], next, &[]);
        self.builder.switch_to_block(cold);
        let code = self
            .builder
            .ins()
            .iconst(types::I32, i64::from(code as u32));
        self.builder.ins().jump(self.trap, &[code.into()]);
        self.builder.switch_to_block(next);
    }

    /// Traps unconditionally; what follows is unreachable.
    fn trap_now(&mut self, code: TrapCode) {
        let code = self
            .builder
            .ins()
            .iconst(types::I32, i64::from(code as u32));
        self.builder.ins().jump(self.trap, &[code.into()]);
        self.is_unreachable = true;
    }

    /// Writes the fuel variable back to the context.
    fn store_fuel(&mut self) {
        let fuel = self.builder.use_var(self.fuel);
        self.builder
            .ins()
            .store(trusted(), fuel, self.vmctx, vmctx::FUEL);
    }

    /// Replaces the `i32` on the stack, below 2^16, with its two low
    /// bytes swapped (see [`byte_swap_after`]).
    fn swap_bytes16(&mut self) {
        let value = self.pop();
        let narrow = self.builder.ins().ireduce(types::I16, value);
        let swapped = self.builder.ins().rotl_imm_u(narrow, 8);
        let wide = self.builder.ins().uextend(types::I32, swapped);
        self.push(wide);
    }

    /// Takes one unit of fuel; below zero, traps.
    fn charge_fuel(&mut self) {
        let fuel = self.builder.use_var(self.fuel);
        let left = self.builder.ins().iadd_imm_s(fuel, -1);
        self.charged(left);
    }

    /// The fuel after a charge is `left`; below zero, traps.
    fn charged(&mut self, left: Value) {
        self.builder.def_var(self.fuel, left);
        let empty = self
            .builder
            .ins()
            .icmp_imm_s(IntCC::SignedLessThan, left, 0);
        self.trap_if(empty, TrapCode::OutOfFuel);
    }

    /// Charges a counted loop's fuel before its first iteration: one unit
    /// per iteration, the number of steps of `counted.step` that take its
    /// counter from its value now to zero (modulo 2^32); a counter that
    /// never reaches zero (not a multiple of the step) runs out of fuel
    /// at once. Below zero, traps.
    fn charge_counted_loop(&mut self, counted: CountedLoop) -> Value {
        let counter = self.builder.use_var(self.locals[counted.counter as usize]);
        // The distance to zero in the step's direction, modulo 2^32.
        let distance = if counted.step > 0 {
            self.builder.ins().ineg(counter)
        } else {
            counter
        };
        let distance = self.builder.ins().uextend(types::I64, distance);
        let shift = counted.step_shift();
        if shift > 0 {
            let remainder = self.builder.ins().band_imm_u(distance, (1i64 << shift) - 1);
            let endless = self.builder.ins().icmp_imm_s(IntCC::NotEqual, remainder, 0);
            self.trap_if(endless, TrapCode::OutOfFuel);
        }
        // A distance of zero is a whole turn: 2^32 / |step| iterations.
        let steps = self.builder.ins().ushr_imm_u(distance, i64::from(shift));
        let whole_turn = self.builder.ins().iconst(types::I64, 1i64 << (32 - shift));
        let is_zero = self.builder.ins().icmp_imm_s(IntCC::Equal, steps, 0);
        let iterations = self.builder.ins().select(is_zero, whole_turn, steps);
        // Fuel is at most i64::MAX and the count at most 2^32: no overflow.
        let fuel = self.builder.use_var(self.fuel);
        let left = self.builder.ins().isub(fuel, iterations);
        self.charged(left);
        iterations
    }

    /// Before a hoisted loop: charges its fuel as a counted loop's, then
    /// checks its ranges (`counted.rs`, [`PointerRange`]): for each,
    /// `p0 + (iterations - 1 + after_step) * step + extent <= bytes`, in
    /// 64 bits (`p0` below 2^32, the product below 2^48, the extent below
    /// 2^33: no overflow). All holding, the fast copy runs (the block
    /// returned first); else the checked copy, which starts here. The
    /// second block is where both end.
    ///
    /// [`PointerRange`]: super::counted::PointerRange
    fn enter_hoisted_loop(&mut self, plan: &HoistedLoop) -> (Block, Block) {
        let iterations = self.charge_counted_loop(plan.counted);
        let last = self.builder.ins().iadd_imm_s(iterations, -1);
        let bytes = self.builder.use_var(self.memory.bytes);
        let mut all_inside: Option<Value> = None;
        for range in &plan.ranges {
            let p0 = self.builder.use_var(self.locals[range.local as usize]);
            let p0 = self.builder.ins().uextend(types::I64, p0);
            let steps = if range.after_step { iterations } else { last };
            let distance = self.builder.ins().imul_imm_s(steps, i64::from(range.step));
            let end = self.builder.ins().iadd(p0, distance);
            let end = self.builder.ins().iadd_imm_s(end, range.extent as i64);
            let inside = self
                .builder
                .ins()
                .icmp(IntCC::UnsignedLessThanOrEqual, end, bytes);
            all_inside = Some(match all_inside {
                Some(before) => self.builder.ins().band(before, inside),
                None => inside,
            });
        }
        let fast = self.builder.create_block();
        let checked = self.builder.create_block();
        let end = self.builder.create_block();
        match all_inside {
            Some(inside) => {
                self.builder.ins().brif(inside, fast, &[], checked, &[]);
            }
            None => {
                self.builder.ins().jump(checked, &[]);
            }
        }
        self.builder.switch_to_block(checked);
        (fast, end)
    }

    /// After a call: a trap the callee stored returns from here too.
    fn check_trap_after_call(&mut self) {
        let code = self
            .builder
            .ins()
            .load(types::I32, trusted(), self.vmctx, vmctx::TRAP);
        let next = self.builder.create_block();
        self.builder
            .ins()
            .brif(code, self.propagate, &[], next, &[]);
        self.builder.switch_to_block(next);
    }

    /// The checked host address of `size` bytes at the Wasm address on the
    /// stack plus `memarg`'s offset.
    ///
    /// Two steps, so that the hot path compares with a register:
    /// `index + offset < bytes - 7` (the fast end,
    /// [`vmctx::MEMORY_FAST_END`], signed: the index and the offset are
    /// below 2^32, the memory at most 4 GiB, so nothing overflows in 64
    /// bits, and a memory under 8 bytes has an end no access is below)
    /// proves any access of up to 8 bytes in bounds. At or above it (the
    /// last bytes of memory, or outside), a cold block makes the exact
    /// check `index + offset + size <= bytes` and traps or goes on. Every
    /// access is checked exactly as before; only the order of the
    /// compares changed.
    fn address(&mut self, memarg: &MemArg, size: i64) -> Value {
        let index = self.pop();
        let index = self.builder.ins().uextend(types::I64, index);
        // Offsets are below 2^32 without memory64.
        let offset = memarg.offset as i64;
        if core::mem::take(&mut self.unchecked_access) {
            // Covered by its loop's range check (`enter_hoisted_loop`).
            let base = self.builder.use_var(self.memory.base);
            let address = self.builder.ins().iadd(base, index);
            return self.builder.ins().iadd_imm_s(address, offset);
        }
        let at = if offset == 0 {
            index
        } else {
            self.builder.ins().iadd_imm_s(index, offset)
        };
        let fast_end = self.builder.use_var(self.memory.fast_end);
        let beyond_fast = self
            .builder
            .ins()
            .icmp(IntCC::SignedGreaterThanOrEqual, at, fast_end);
        let exact = self.builder.create_block();
        let checked = self.builder.create_block();
        self.builder.set_cold_block(exact);
        self.builder
            .ins()
            .brif(beyond_fast, exact, &[], checked, &[]);
        self.builder.switch_to_block(exact);
        let end = self.builder.ins().iadd_imm_s(at, size);
        let bytes = self.builder.use_var(self.memory.bytes);
        let outside = self
            .builder
            .ins()
            .icmp(IntCC::UnsignedGreaterThan, end, bytes);
        self.trap_if(outside, TrapCode::MemoryOutOfBounds);
        self.builder.ins().jump(checked, &[]);
        self.builder.switch_to_block(checked);
        let base = self.builder.use_var(self.memory.base);
        let address = self.builder.ins().iadd(base, index);
        self.builder.ins().iadd_imm_s(address, offset)
    }

    fn heap_flags() -> MemFlagsData {
        let mut flags = MemFlagsData::new();
        flags.set_notrap();
        flags
    }

    fn load(&mut self, memarg: &MemArg, ty: Type, size: i64, extend: Option<(Type, bool)>) {
        let address = self.address(memarg, size);
        // The extending loads in one instruction each (a narrow load then
        // an extension left a second `movzx` in the checksum's loop).
        let flags = Self::heap_flags();
        let ins = self.builder.ins();
        let value = match extend {
            None => ins.load(ty, flags, address, 0),
            Some((types::I8, false)) => ins.uload8(ty, flags, address, 0),
            Some((types::I8, true)) => ins.sload8(ty, flags, address, 0),
            Some((types::I16, false)) => ins.uload16(ty, flags, address, 0),
            Some((types::I16, true)) => ins.sload16(ty, flags, address, 0),
            Some((_, false)) => ins.uload32(flags, address, 0),
            Some((_, true)) => ins.sload32(flags, address, 0),
        };
        self.push(value);
    }

    fn store(&mut self, memarg: &MemArg, size: i64, narrow: Option<Type>) {
        let value = self.pop();
        let address = self.address(memarg, size);
        let value = match narrow {
            Some(narrow) => self.builder.ins().ireduce(narrow, value),
            None => value,
        };
        self.builder
            .ins()
            .store(Self::heap_flags(), value, address, 0);
    }

    /// Parameter and result types of a block type.
    fn block_signature(&self, ty: BlockType) -> Result<(Vec<Type>, Vec<Type>), TranslateError> {
        match ty {
            BlockType::Empty => Ok((Vec::new(), Vec::new())),
            BlockType::Type(value) => Ok((Vec::new(), alloc::vec![clif_type(value.into())?])),
            BlockType::FuncType(index) => {
                let ty = self
                    .env
                    .types
                    .get(index as usize)
                    .ok_or_else(|| unsupported("type index"))?;
                let params = ty
                    .params
                    .iter()
                    .map(|&t| clif_type(t))
                    .collect::<Result<_, _>>()?;
                let results = ty
                    .results
                    .iter()
                    .map(|&t| clif_type(t))
                    .collect::<Result<_, _>>()?;
                Ok((params, results))
            }
        }
    }

    fn new_block_with(&mut self, params: &[Type]) -> Block {
        let block = self.builder.create_block();
        for &param in params {
            self.builder.append_block_param(block, param);
        }
        block
    }

    fn push_frame(&mut self, frame: Frame) -> Result<(), TranslateError> {
        if self.frames.len() >= self.env.max_nesting {
            return Err(TranslateError::Limit("blocks nested too deeply".into()));
        }
        self.frames.push(frame);
        Ok(())
    }

    /// Jumps to the target of a branch to `relative_depth`, carrying the
    /// top values (they stay on the stack for a conditional branch).
    fn branch_args(&self, relative_depth: u32) -> Option<(Block, Vec<Value>)> {
        let frame = self
            .frames
            .get(self.frames.len().checked_sub(1 + relative_depth as usize)?)?;
        Some((frame.branch_target, self.peek_n(frame.branch_arity)))
    }

    fn args(values: &[Value]) -> Vec<cranelift_codegen::ir::BlockArg> {
        values.iter().map(|&v| v.into()).collect()
    }

    /// The control operators while the code is unreachable: only nesting
    /// and the current frame's `else` and `end` matter.
    fn skip(&mut self, operator: &Operator<'_>) {
        match operator {
            Operator::Block { .. } | Operator::Loop { .. } | Operator::If { .. } => {
                self.unreachable_depth += 1;
            }
            Operator::Else if self.unreachable_depth == 0 => self.else_(),
            Operator::End if self.unreachable_depth == 0 => self.end(),
            Operator::End => self.unreachable_depth -= 1,
            _ => {}
        }
    }

    fn else_(&mut self) {
        let Some(frame) = self.frames.last_mut() else {
            return;
        };
        let Some((else_block, params)) = frame.else_block.take() else {
            return;
        };
        let end = frame.end;
        let arity = frame.results.len();
        let height = frame.height;
        if !self.is_unreachable {
            let values = self.pop_n(arity);
            self.builder.ins().jump(end, &Self::args(&values));
        }
        self.stack.truncate(height);
        self.stack.extend(params);
        self.is_unreachable = false;
        self.builder.switch_to_block(else_block);
    }

    fn end(&mut self) {
        let Some(frame) = self.frames.pop() else {
            return;
        };
        if !self.is_unreachable {
            let values = self.pop_n(frame.results.len());
            self.builder.ins().jump(frame.end, &Self::args(&values));
        }
        if let Some((else_block, params)) = frame.else_block {
            // An `if` without `else`: its parameters are its results.
            self.builder.switch_to_block(else_block);
            self.builder.ins().jump(frame.end, &Self::args(&params));
        }
        self.stack.truncate(frame.height);
        if frame.end == self.exit {
            // The function's own end: nothing follows.
            self.is_unreachable = true;
            return;
        }
        self.builder.switch_to_block(frame.end);
        let results = self.builder.block_params(frame.end).to_vec();
        self.stack.extend(results);
        self.is_unreachable = false;
    }

    fn call(&mut self, function_index: u32) -> Result<(), TranslateError> {
        let ty = self
            .env
            .functions
            .get(function_index as usize)
            .ok_or_else(|| unsupported("function index"))?
            .clone();
        if function_index < self.env.imported_functions {
            return self.host_call(function_index, &ty);
        }
        let table = self
            .builder
            .ins()
            .load(types::I64, trusted(), self.vmctx, vmctx::FUNCTIONS);
        let code = self.builder.ins().load(
            types::I64,
            trusted(),
            table,
            (function_index as i32).saturating_mul(8),
        );
        self.call_code(code, &ty)
    }

    fn call_code(&mut self, code: Value, ty: &FuncType) -> Result<(), TranslateError> {
        let signature = signature(ty, self.env.call_conv)?;
        let signature = self.builder.import_signature(signature);
        let mut args = alloc::vec![self.vmctx];
        args.extend(self.pop_n(ty.params.len()));
        // The callee charges the context's fuel and may grow the memory.
        self.store_fuel();
        let call = self.builder.ins().call_indirect(signature, code, &args);
        let results = self.builder.inst_results(call).to_vec();
        let fuel = self
            .builder
            .ins()
            .load(types::I64, trusted(), self.vmctx, vmctx::FUEL);
        self.builder.def_var(self.fuel, fuel);
        self.reload_memory();
        self.check_trap_after_call();
        self.stack.extend(results);
        Ok(())
    }

    /// Linear memory may have grown (and moved): its variables again.
    fn reload_memory(&mut self) {
        if !self.uses_memory {
            return;
        }
        self.memory.load(&mut self.builder, self.vmctx);
    }

    fn call_indirect(&mut self, type_index: u32, table: u32) -> Result<(), TranslateError> {
        if table != 0 {
            return Err(unsupported("call_indirect on a table other than 0"));
        }
        let ty = self
            .env
            .types
            .get(type_index as usize)
            .ok_or_else(|| unsupported("type index"))?
            .clone();
        let expected = *self
            .env
            .signature_ids
            .get(type_index as usize)
            .ok_or_else(|| unsupported("type index"))?;
        let element = self.pop();
        let elements =
            self.builder
                .ins()
                .load(types::I32, trusted(), self.vmctx, vmctx::TABLE_ELEMENTS);
        let outside = self
            .builder
            .ins()
            .icmp(IntCC::UnsignedGreaterThanOrEqual, element, elements);
        self.trap_if(outside, TrapCode::TableOutOfBounds);
        let base = self
            .builder
            .ins()
            .load(types::I64, trusted(), self.vmctx, vmctx::TABLE_BASE);
        let element = self.builder.ins().uextend(types::I64, element);
        let offset = self
            .builder
            .ins()
            .imul_imm_s(element, vmctx::TABLE_ENTRY_BYTES);
        let entry = self.builder.ins().iadd(base, offset);
        let signature_id = self.builder.ins().load(types::I32, trusted(), entry, 0);
        let null = self.builder.ins().icmp_imm_s(
            IntCC::Equal,
            signature_id,
            i64::from(vmctx::NULL_SIGNATURE as i32),
        );
        self.trap_if(null, TrapCode::IndirectCallToNull);
        let wrong = self.builder.ins().icmp_imm_s(
            IntCC::NotEqual,
            signature_id,
            i64::from(expected as i32),
        );
        self.trap_if(wrong, TrapCode::BadSignature);
        let code = self
            .builder
            .ins()
            .load(types::I64, trusted(), entry, vmctx::TABLE_ENTRY_CODE);
        self.call_code(code, &ty)
    }

    /// Calls kernel procedure `import` through its host-call trampoline
    /// (`entry.rs`, one per procedure), whose address is the import's
    /// entry in the function table: the context and the arguments (kernel
    /// procedures take `i32` and `i64` only, at most
    /// [`vmctx::HOST_ARGUMENTS`]), each widened to 64 bits, in registers;
    /// the result comes back as an `i64`. The trap word is reloaded after
    /// the call only if the procedure may trap.
    fn host_call(&mut self, import: u32, ty: &FuncType) -> Result<(), TranslateError> {
        if ty.params.len() > vmctx::HOST_ARGUMENTS || ty.results.len() > 1 {
            return Err(unsupported("a kernel procedure of this arity"));
        }
        let integer = |t: &WasmType| matches!(t, WasmType::I32 | WasmType::I64);
        if !ty.params.iter().all(integer) || !ty.results.iter().all(integer) {
            return Err(unsupported("a kernel procedure with non-integer values"));
        }
        self.calls_runtime = true;
        let mut signature = Signature::new(self.env.call_conv);
        signature.params.push(AbiParam::new(types::I64));
        let mut args = alloc::vec![self.vmctx];
        for (arg, &param) in self.pop_n(ty.params.len()).into_iter().zip(&ty.params) {
            signature.params.push(AbiParam::new(types::I64));
            args.push(if param == WasmType::I32 {
                self.builder.ins().uextend(types::I64, arg)
            } else {
                arg
            });
        }
        signature.returns.push(AbiParam::new(types::I64));
        let signature = self.builder.import_signature(signature);
        let table = self
            .builder
            .ins()
            .load(types::I64, trusted(), self.vmctx, vmctx::FUNCTIONS);
        let code = self.builder.ins().load(
            types::I64,
            trusted(),
            table,
            (import as i32).saturating_mul(8),
        );
        let call = self.builder.ins().call_indirect(signature, code, &args);
        let result = self.builder.inst_results(call)[0];
        let may_trap = self
            .env
            .imports_may_trap
            .get(import as usize)
            .copied()
            .unwrap_or(true);
        if may_trap {
            self.check_trap_after_call();
        }
        if let Some(&result_type) = ty.results.first() {
            let value = if result_type == WasmType::I32 {
                self.builder.ins().ireduce(types::I32, result)
            } else {
                result
            };
            self.push(value);
        }
        Ok(())
    }

    /// Calls one of the runtime's memory procedures at `slot`.
    fn memory_call(&mut self, slot: i32, arity: usize, returns: bool) {
        self.calls_runtime = true;
        let mut signature = Signature::new(self.env.call_conv);
        signature.params.push(AbiParam::new(types::I64));
        for _ in 0..arity {
            signature.params.push(AbiParam::new(types::I32));
        }
        if returns {
            signature.returns.push(AbiParam::new(types::I32));
        }
        let signature = self.builder.import_signature(signature);
        let code = self
            .builder
            .ins()
            .load(types::I64, trusted(), self.vmctx, slot);
        let mut args = alloc::vec![self.vmctx];
        args.extend(self.pop_n(arity));
        let call = self.builder.ins().call_indirect(signature, code, &args);
        let results = self.builder.inst_results(call).to_vec();
        self.check_trap_after_call();
        self.stack.extend(results);
    }

    fn global_slot(&mut self, index: u32) -> Result<(Value, Type), TranslateError> {
        let ty = *self
            .env
            .globals
            .get(index as usize)
            .ok_or_else(|| unsupported("global index"))?;
        let ty = clif_type(ty)?;
        let globals = self
            .builder
            .ins()
            .load(types::I64, trusted(), self.vmctx, vmctx::GLOBALS);
        let slot = self
            .builder
            .ins()
            .iadd_imm_s(globals, i64::from(index).saturating_mul(8));
        Ok((slot, ty))
    }

    /// Integer division and remainder, checked first.
    fn divide(&mut self, ty: Type, signed: bool, remainder: bool) {
        let (a, b) = self.pop2();
        let zero = self.builder.ins().icmp_imm_s(IntCC::Equal, b, 0);
        self.trap_if(zero, TrapCode::DivisionByZero);
        let result = if signed {
            let minimum = if ty == types::I32 {
                i64::from(i32::MIN)
            } else {
                i64::MIN
            };
            let is_minimum = self.builder.ins().icmp_imm_s(IntCC::Equal, a, minimum);
            let minus_one = self.builder.ins().icmp_imm_s(IntCC::Equal, b, -1);
            let overflow = self.builder.ins().band(is_minimum, minus_one);
            if remainder {
                // MIN % -1 is 0, as x % 1 is: divide by 1 instead.
                let one = self.builder.ins().iconst(ty, 1);
                let divisor = self.builder.ins().select(minus_one, one, b);
                self.builder.ins().srem(a, divisor)
            } else {
                self.trap_if(overflow, TrapCode::IntegerOverflow);
                self.builder.ins().sdiv(a, b)
            }
        } else if remainder {
            self.builder.ins().urem(a, b)
        } else {
            self.builder.ins().udiv(a, b)
        };
        self.push(result);
    }

    /// A trapping float-to-integer conversion: NaN and values outside
    /// `(lower, upper)` (both exclusive) trap before the conversion.
    fn truncate(&mut self, to: Type, signed: bool, lower: f64, upper: f64) {
        let value = self.pop();
        let from = self.builder.func.dfg.value_type(value);
        let nan = self.builder.ins().fcmp(FloatCC::Unordered, value, value);
        self.trap_if(nan, TrapCode::BadConversion);
        let (low, high) = if from == types::F32 {
            (
                self.builder.ins().f32const(lower as f32),
                self.builder.ins().f32const(upper as f32),
            )
        } else {
            (
                self.builder.ins().f64const(lower),
                self.builder.ins().f64const(upper),
            )
        };
        let too_low = self
            .builder
            .ins()
            .fcmp(FloatCC::LessThanOrEqual, value, low);
        let too_high = self
            .builder
            .ins()
            .fcmp(FloatCC::GreaterThanOrEqual, value, high);
        let outside = self.builder.ins().bor(too_low, too_high);
        self.trap_if(outside, TrapCode::IntegerOverflow);
        let result = if signed {
            self.builder.ins().fcvt_to_sint_sat(to, value)
        } else {
            self.builder.ins().fcvt_to_uint_sat(to, value)
        };
        self.push(result);
    }

    fn compare(&mut self, cc: IntCC) {
        let (a, b) = self.pop2();
        let bit = self.builder.ins().icmp(cc, a, b);
        let result = self.builder.ins().uextend(types::I32, bit);
        self.push(result);
    }

    fn compare_float(&mut self, cc: FloatCC) {
        let (a, b) = self.pop2();
        let bit = self.builder.ins().fcmp(cc, a, b);
        let result = self.builder.ins().uextend(types::I32, bit);
        self.push(result);
    }

    fn binary(&mut self, op: fn(&mut FunctionBuilder<'_>, Value, Value) -> Value) {
        let (a, b) = self.pop2();
        let result = op(&mut self.builder, a, b);
        self.push(result);
    }

    fn unary(&mut self, op: fn(&mut FunctionBuilder<'_>, Value) -> Value) {
        let a = self.pop();
        let result = op(&mut self.builder, a);
        self.push(result);
    }

    /// Translates one operator.
    fn operator(&mut self, operator: Operator<'_>) -> Result<(), TranslateError> {
        // Set by `translate` for this very operator (a `loop`) only.
        let counted = self.counted_loop.take();
        if self.is_unreachable {
            self.skip(&operator);
            return Ok(());
        }
        use Operator as O;
        match operator {
            O::Unreachable => self.trap_now(TrapCode::Unreachable),
            O::Nop => {}
            O::Block { blockty } => {
                let (params, results) = self.block_signature(blockty)?;
                let end = self.new_block_with(&results);
                let height = self.stack.len().saturating_sub(params.len());
                self.push_frame(Frame {
                    branch_target: end,
                    branch_arity: results.len(),
                    end,
                    results,
                    height,
                    else_block: None,
                })?;
            }
            O::Loop { blockty } => {
                let hoisted_end = self.hoisted_end.take();
                if let Some(counted) = counted {
                    self.charge_counted_loop(counted);
                }
                let (params, results) = self.block_signature(blockty)?;
                let header = self.new_block_with(&params);
                let end = match hoisted_end {
                    Some(end) => end,
                    None => self.new_block_with(&results),
                };
                let values = self.pop_n(params.len());
                self.builder.ins().jump(header, &Self::args(&values));
                self.builder.switch_to_block(header);
                let height = self.stack.len();
                self.stack
                    .extend(self.builder.block_params(header).to_vec());
                self.push_frame(Frame {
                    branch_target: header,
                    branch_arity: params.len(),
                    end,
                    results,
                    height,
                    else_block: None,
                })?;
                if counted.is_none() && hoisted_end.is_none() {
                    self.charge_fuel();
                }
            }
            O::If { blockty } => {
                let (params, results) = self.block_signature(blockty)?;
                let condition = self.pop();
                let then_block = self.builder.create_block();
                let else_block = self.builder.create_block();
                let end = self.new_block_with(&results);
                self.builder
                    .ins()
                    .brif(condition, then_block, &[], else_block, &[]);
                self.builder.switch_to_block(then_block);
                let height = self.stack.len().saturating_sub(params.len());
                let param_values = self.peek_n(params.len());
                self.push_frame(Frame {
                    branch_target: end,
                    branch_arity: results.len(),
                    end,
                    results,
                    height,
                    else_block: Some((else_block, param_values)),
                })?;
            }
            O::Else => self.else_(),
            O::End => self.end(),
            O::Br { relative_depth } => {
                let (target, values) = self
                    .branch_args(relative_depth)
                    .ok_or_else(|| unsupported("branch depth"))?;
                self.builder.ins().jump(target, &Self::args(&values));
                self.is_unreachable = true;
            }
            O::BrIf { relative_depth } => {
                let condition = self.pop();
                let (target, values) = self
                    .branch_args(relative_depth)
                    .ok_or_else(|| unsupported("branch depth"))?;
                let next = self.builder.create_block();
                self.builder
                    .ins()
                    .brif(condition, target, &Self::args(&values), next, &[]);
                self.builder.switch_to_block(next);
            }
            O::BrTable { targets } => {
                let index = self.pop();
                let mut switch = Switch::new();
                let mut edges: Vec<(u32, Block)> = Vec::new();
                let mut edge_to =
                    |translator: &mut Self, depth: u32| -> Result<Block, TranslateError> {
                        if let Some(&(_, block)) = edges.iter().find(|(d, _)| *d == depth) {
                            return Ok(block);
                        }
                        let block = translator.builder.create_block();
                        edges.push((depth, block));
                        Ok(block)
                    };
                for (entry, depth) in targets.targets().enumerate() {
                    let depth = depth.map_err(malformed)?;
                    let block = edge_to(self, depth)?;
                    switch.set_entry(entry as u128, block);
                }
                let default = edge_to(self, targets.default())?;
                switch.emit(&mut self.builder, index, default);
                for (depth, block) in edges {
                    let (target, values) = self
                        .branch_args(depth)
                        .ok_or_else(|| unsupported("branch depth"))?;
                    self.builder.switch_to_block(block);
                    self.builder.ins().jump(target, &Self::args(&values));
                }
                self.is_unreachable = true;
            }
            O::Return => {
                let values = self.peek_n(self.results.len());
                self.builder.ins().jump(self.exit, &Self::args(&values));
                self.is_unreachable = true;
            }
            O::Call { function_index } => self.call(function_index)?,
            O::CallIndirect {
                type_index,
                table_index,
            } => self.call_indirect(type_index, table_index)?,
            O::Drop => {
                self.pop();
            }
            O::Select | O::TypedSelect { .. } => {
                let condition = self.pop();
                let (a, b) = self.pop2();
                let result = self.builder.ins().select(condition, a, b);
                self.push(result);
            }
            O::LocalGet { local_index } => {
                let var = *self
                    .locals
                    .get(local_index as usize)
                    .ok_or_else(|| unsupported("local index"))?;
                let value = self.builder.use_var(var);
                self.push(value);
            }
            O::LocalSet { local_index } | O::LocalTee { local_index } => {
                let var = *self
                    .locals
                    .get(local_index as usize)
                    .ok_or_else(|| unsupported("local index"))?;
                let value = self.pop();
                self.builder.def_var(var, value);
                if matches!(operator, O::LocalTee { .. }) {
                    self.push(value);
                }
            }
            O::GlobalGet { global_index } => {
                let (slot, ty) = self.global_slot(global_index)?;
                let value = self.builder.ins().load(ty, trusted(), slot, 0);
                self.push(value);
            }
            O::GlobalSet { global_index } => {
                let (slot, _) = self.global_slot(global_index)?;
                let value = self.pop();
                self.builder.ins().store(trusted(), value, slot, 0);
            }
            O::I32Load { memarg } => self.load(&memarg, types::I32, 4, None),
            O::I64Load { memarg } => self.load(&memarg, types::I64, 8, None),
            O::F32Load { memarg } => self.load(&memarg, types::F32, 4, None),
            O::F64Load { memarg } => self.load(&memarg, types::F64, 8, None),
            O::I32Load8S { memarg } => self.load(&memarg, types::I32, 1, Some((types::I8, true))),
            O::I32Load8U { memarg } => self.load(&memarg, types::I32, 1, Some((types::I8, false))),
            O::I32Load16S { memarg } => self.load(&memarg, types::I32, 2, Some((types::I16, true))),
            O::I32Load16U { memarg } => {
                self.load(&memarg, types::I32, 2, Some((types::I16, false)))
            }
            O::I64Load8S { memarg } => self.load(&memarg, types::I64, 1, Some((types::I8, true))),
            O::I64Load8U { memarg } => self.load(&memarg, types::I64, 1, Some((types::I8, false))),
            O::I64Load16S { memarg } => self.load(&memarg, types::I64, 2, Some((types::I16, true))),
            O::I64Load16U { memarg } => {
                self.load(&memarg, types::I64, 2, Some((types::I16, false)))
            }
            O::I64Load32S { memarg } => self.load(&memarg, types::I64, 4, Some((types::I32, true))),
            O::I64Load32U { memarg } => {
                self.load(&memarg, types::I64, 4, Some((types::I32, false)))
            }
            O::I32Store { memarg } | O::F32Store { memarg } => self.store(&memarg, 4, None),
            O::I64Store { memarg } | O::F64Store { memarg } => self.store(&memarg, 8, None),
            O::I32Store8 { memarg } | O::I64Store8 { memarg } => {
                self.store(&memarg, 1, Some(types::I8))
            }
            O::I32Store16 { memarg } | O::I64Store16 { memarg } => {
                self.store(&memarg, 2, Some(types::I16))
            }
            O::I64Store32 { memarg } => self.store(&memarg, 4, Some(types::I32)),
            O::MemorySize { mem: 0 } => {
                let bytes = self.builder.use_var(self.memory.bytes);
                let pages = self.builder.ins().ushr_imm_u(bytes, 16);
                let pages = self.builder.ins().ireduce(types::I32, pages);
                self.push(pages);
            }
            O::MemoryGrow { mem: 0 } => {
                self.memory_call(vmctx::MEMORY_GROW, 1, true);
                self.reload_memory();
            }
            O::MemoryCopy {
                dst_mem: 0,
                src_mem: 0,
            } => self.memory_call(vmctx::MEMORY_COPY, 3, false),
            O::MemoryFill { mem: 0 } => self.memory_call(vmctx::MEMORY_FILL, 3, false),
            O::I32Const { value } => {
                let value = self.builder.ins().iconst(types::I32, i64::from(value));
                self.push(value);
            }
            O::I64Const { value } => {
                let value = self.builder.ins().iconst(types::I64, value);
                self.push(value);
            }
            O::F32Const { value } => {
                let value = self.builder.ins().f32const(f32::from_bits(value.bits()));
                self.push(value);
            }
            O::F64Const { value } => {
                let value = self.builder.ins().f64const(f64::from_bits(value.bits()));
                self.push(value);
            }
            O::I32Eqz | O::I64Eqz => {
                let a = self.pop();
                let bit = self.builder.ins().icmp_imm_s(IntCC::Equal, a, 0);
                let result = self.builder.ins().uextend(types::I32, bit);
                self.push(result);
            }
            O::I32Eq | O::I64Eq => self.compare(IntCC::Equal),
            O::I32Ne | O::I64Ne => self.compare(IntCC::NotEqual),
            O::I32LtS | O::I64LtS => self.compare(IntCC::SignedLessThan),
            O::I32LtU | O::I64LtU => self.compare(IntCC::UnsignedLessThan),
            O::I32GtS | O::I64GtS => self.compare(IntCC::SignedGreaterThan),
            O::I32GtU | O::I64GtU => self.compare(IntCC::UnsignedGreaterThan),
            O::I32LeS | O::I64LeS => self.compare(IntCC::SignedLessThanOrEqual),
            O::I32LeU | O::I64LeU => self.compare(IntCC::UnsignedLessThanOrEqual),
            O::I32GeS | O::I64GeS => self.compare(IntCC::SignedGreaterThanOrEqual),
            O::I32GeU | O::I64GeU => self.compare(IntCC::UnsignedGreaterThanOrEqual),
            O::F32Eq | O::F64Eq => self.compare_float(FloatCC::Equal),
            O::F32Ne | O::F64Ne => self.compare_float(FloatCC::NotEqual),
            O::F32Lt | O::F64Lt => self.compare_float(FloatCC::LessThan),
            O::F32Gt | O::F64Gt => self.compare_float(FloatCC::GreaterThan),
            O::F32Le | O::F64Le => self.compare_float(FloatCC::LessThanOrEqual),
            O::F32Ge | O::F64Ge => self.compare_float(FloatCC::GreaterThanOrEqual),
            O::I32Clz | O::I64Clz => self.unary(|b, a| b.ins().clz(a)),
            O::I32Ctz | O::I64Ctz => self.unary(|b, a| b.ins().ctz(a)),
            O::I32Popcnt | O::I64Popcnt => self.unary(|b, a| b.ins().popcnt(a)),
            O::I32Add | O::I64Add => self.binary(|b, x, y| b.ins().iadd(x, y)),
            O::I32Sub | O::I64Sub => self.binary(|b, x, y| b.ins().isub(x, y)),
            O::I32Mul | O::I64Mul => self.binary(|b, x, y| b.ins().imul(x, y)),
            O::I32DivS => self.divide(types::I32, true, false),
            O::I32DivU => self.divide(types::I32, false, false),
            O::I32RemS => self.divide(types::I32, true, true),
            O::I32RemU => self.divide(types::I32, false, true),
            O::I64DivS => self.divide(types::I64, true, false),
            O::I64DivU => self.divide(types::I64, false, false),
            O::I64RemS => self.divide(types::I64, true, true),
            O::I64RemU => self.divide(types::I64, false, true),
            O::I32And | O::I64And => self.binary(|b, x, y| b.ins().band(x, y)),
            O::I32Or | O::I64Or => self.binary(|b, x, y| b.ins().bor(x, y)),
            O::I32Xor | O::I64Xor => self.binary(|b, x, y| b.ins().bxor(x, y)),
            // Cranelift masks shift and rotate amounts as Wasm does.
            O::I32Shl | O::I64Shl => self.binary(|b, x, y| b.ins().ishl(x, y)),
            O::I32ShrS | O::I64ShrS => self.binary(|b, x, y| b.ins().sshr(x, y)),
            O::I32ShrU | O::I64ShrU => self.binary(|b, x, y| b.ins().ushr(x, y)),
            O::I32Rotl | O::I64Rotl => self.binary(|b, x, y| b.ins().rotl(x, y)),
            O::I32Rotr | O::I64Rotr => self.binary(|b, x, y| b.ins().rotr(x, y)),
            O::F32Abs | O::F64Abs => self.unary(|b, a| b.ins().fabs(a)),
            O::F32Neg | O::F64Neg => self.unary(|b, a| b.ins().fneg(a)),
            O::F32Ceil | O::F64Ceil => self.unary(|b, a| b.ins().ceil(a)),
            O::F32Floor | O::F64Floor => self.unary(|b, a| b.ins().floor(a)),
            O::F32Trunc | O::F64Trunc => self.unary(|b, a| b.ins().trunc(a)),
            O::F32Nearest | O::F64Nearest => self.unary(|b, a| b.ins().nearest(a)),
            O::F32Sqrt | O::F64Sqrt => self.unary(|b, a| b.ins().sqrt(a)),
            O::F32Add | O::F64Add => self.binary(|b, x, y| b.ins().fadd(x, y)),
            O::F32Sub | O::F64Sub => self.binary(|b, x, y| b.ins().fsub(x, y)),
            O::F32Mul | O::F64Mul => self.binary(|b, x, y| b.ins().fmul(x, y)),
            O::F32Div | O::F64Div => self.binary(|b, x, y| b.ins().fdiv(x, y)),
            O::F32Min | O::F64Min => self.binary(|b, x, y| b.ins().fmin(x, y)),
            O::F32Max | O::F64Max => self.binary(|b, x, y| b.ins().fmax(x, y)),
            O::F32Copysign | O::F64Copysign => self.binary(|b, x, y| b.ins().fcopysign(x, y)),
            O::I32WrapI64 => self.unary(|b, a| b.ins().ireduce(types::I32, a)),
            O::I64ExtendI32S => self.unary(|b, a| b.ins().sextend(types::I64, a)),
            O::I64ExtendI32U => self.unary(|b, a| b.ins().uextend(types::I64, a)),
            O::I32Extend8S => self.unary(|b, a| {
                let narrow = b.ins().ireduce(types::I8, a);
                b.ins().sextend(types::I32, narrow)
            }),
            O::I32Extend16S => self.unary(|b, a| {
                let narrow = b.ins().ireduce(types::I16, a);
                b.ins().sextend(types::I32, narrow)
            }),
            O::I64Extend8S => self.unary(|b, a| {
                let narrow = b.ins().ireduce(types::I8, a);
                b.ins().sextend(types::I64, narrow)
            }),
            O::I64Extend16S => self.unary(|b, a| {
                let narrow = b.ins().ireduce(types::I16, a);
                b.ins().sextend(types::I64, narrow)
            }),
            O::I64Extend32S => self.unary(|b, a| {
                let narrow = b.ins().ireduce(types::I32, a);
                b.ins().sextend(types::I64, narrow)
            }),
            O::I32TruncF32S | O::I32TruncF64S => {
                let lower = if matches!(operator, O::I32TruncF32S) {
                    -2147483904.0
                } else {
                    -2147483649.0
                };
                self.truncate(types::I32, true, lower, 2147483648.0)
            }
            O::I32TruncF32U | O::I32TruncF64U => {
                self.truncate(types::I32, false, -1.0, 4294967296.0)
            }
            O::I64TruncF32S | O::I64TruncF64S => {
                let lower = if matches!(operator, O::I64TruncF32S) {
                    -9223373136366403584.0
                } else {
                    -9223372036854777856.0
                };
                self.truncate(types::I64, true, lower, 9223372036854775808.0)
            }
            O::I64TruncF32U | O::I64TruncF64U => {
                self.truncate(types::I64, false, -1.0, 18446744073709551616.0)
            }
            O::I32TruncSatF32S | O::I32TruncSatF64S => {
                self.unary(|b, a| b.ins().fcvt_to_sint_sat(types::I32, a))
            }
            O::I32TruncSatF32U | O::I32TruncSatF64U => {
                self.unary(|b, a| b.ins().fcvt_to_uint_sat(types::I32, a))
            }
            O::I64TruncSatF32S | O::I64TruncSatF64S => {
                self.unary(|b, a| b.ins().fcvt_to_sint_sat(types::I64, a))
            }
            O::I64TruncSatF32U | O::I64TruncSatF64U => {
                self.unary(|b, a| b.ins().fcvt_to_uint_sat(types::I64, a))
            }
            O::F32ConvertI32S | O::F32ConvertI64S => {
                self.unary(|b, a| b.ins().fcvt_from_sint(types::F32, a))
            }
            O::F32ConvertI32U | O::F32ConvertI64U => {
                self.unary(|b, a| b.ins().fcvt_from_uint(types::F32, a))
            }
            O::F64ConvertI32S | O::F64ConvertI64S => {
                self.unary(|b, a| b.ins().fcvt_from_sint(types::F64, a))
            }
            O::F64ConvertI32U | O::F64ConvertI64U => {
                self.unary(|b, a| b.ins().fcvt_from_uint(types::F64, a))
            }
            O::F32DemoteF64 => self.unary(|b, a| b.ins().fdemote(types::F32, a)),
            O::F64PromoteF32 => self.unary(|b, a| b.ins().fpromote(types::F64, a)),
            O::I32ReinterpretF32 => {
                self.unary(|b, a| b.ins().bitcast(types::I32, MemFlagsData::new(), a))
            }
            O::I64ReinterpretF64 => {
                self.unary(|b, a| b.ins().bitcast(types::I64, MemFlagsData::new(), a))
            }
            O::F32ReinterpretI32 => {
                self.unary(|b, a| b.ins().bitcast(types::F32, MemFlagsData::new(), a))
            }
            O::F64ReinterpretI64 => {
                self.unary(|b, a| b.ins().bitcast(types::F64, MemFlagsData::new(), a))
            }
            other => {
                let name = alloc::format!("{other:?}");
                let name = name.split([' ', '{']).next().unwrap_or("operator");
                return Err(TranslateError::Unsupported(name.into()));
            }
        }
        Ok(())
    }
}

/// The canonical signature id of every type: the index of the first
/// structurally equal type.
pub fn signature_ids(types: &[FuncType]) -> Vec<u32> {
    types
        .iter()
        .map(|ty| types.iter().position(|other| other == ty).unwrap_or(0) as u32)
        .collect()
}

/// The value types of a wasmparser type list.
pub fn wasm_types(types: &[ValType]) -> Vec<WasmType> {
    types.iter().map(|&t| t.into()).collect()
}
