//! The single-pass compiler: a validated Wasm function body to x86_64 in
//! one reading, operator by operator, without an intermediate form.
//!
//! Why it exists beside Cranelift: compiling costs Cranelift about 800,000
//! guest instructions per function however small (the 62 KB `big`
//! extension, 512 functions, took 430 M instructions, about a second under
//! QEMU), against the 20 ms. This compiler spends a few hundred
//! host instructions per operator. Its code is plainer (values live in
//! stack slots, one register caches the latest result), so the kernel uses
//! it for functions without loops, whose operators each run once per call,
//! and keeps Cranelift for loops, where code quality pays
//! ([`super::compile::Backend`]).
//!
//! It generates exactly the contract of [`super::translate`] (see
//! [`super::vmctx`]): the context in the first argument register, the
//! System V calling convention, every memory access checked against the
//! context's memory size, fuel charged on entry and at every loop header,
//! the call depth and the machine stack checked on entry of a function
//! that calls, `call_indirect`'s bound, null and signature checked, traps
//! stored in the context's trap word followed by a return, and the trap
//! word checked after every call. So its functions and Cranelift's call
//! each other through the same function table, and the entry runs either.
//!
//! What it does not handle (floats, multiple results, more than five
//! parameters, an `if` with parameters, reference types, bulk
//! operations other than `memory.copy` and `memory.fill`, offsets above
//! 2 GiB) gives [`SinglePassError::Fallback`]: Cranelift compiles that
//! function instead.
//!
//! The frame (`rbp`-based): a function that calls saves `rbx` and keeps
//! the context there; a leaf keeps it in `rdi`. Below: one 8-byte slot per
//! local, then one per operand-stack height. A value on the operand stack
//! is a constant, a local not copied yet, the value in `rax`, or its slot;
//! at control flow and calls every value is in its slot, so blocks merge
//! without moves. The prologue, which depends on how many slots the body
//! used, is emitted after the body and put before it (every jump inside
//! the body is relative, so moving it changes none).
//!
//! Here: the value stack (where each operand is, loading it, spilling
//! `rax`); `operators`: the table of operators; `arithmetic`, `variables`
//! (memory, locals, globals), `control` (blocks and branches), `calls`,
//! `frame` (traps, fuel, exit, prologue); `x64`: the encoder.

mod arithmetic;
mod calls;
mod control;
mod frame;
mod operators;
mod variables;
mod x64;

use alloc::{string::String, vec::Vec};

use wasmparser::{BlockType, FunctionBody, MemArg, Operator};

use self::x64::{Alu, Assembler, Cond, Mem, Reg, Shift, Size, Width};
use super::{
    translate::ModuleEnv,
    vmctx::{self, TrapCode},
};
use crate::module::{FuncType, WasmType};

/// Why a function was not compiled in one pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SinglePassError {
    /// Something this compiler leaves to Cranelift (see the module's
    /// documentation).
    Fallback(&'static str),
    /// A limit of [`super::compile::CompileLimits`] was exceeded.
    Limit(String),
    /// The body could not be read (it was validated, so this is a bug).
    Malformed(String),
}

fn malformed(error: wasmparser::BinaryReaderError) -> SinglePassError {
    SinglePassError::Malformed(error.message().into())
}

/// A compiled function.
pub struct SinglePassFunction {
    /// Its machine code, entered at byte 0.
    pub code: Vec<u8>,
    /// Whether it calls kernel or runtime procedures.
    pub calls_runtime: bool,
}

/// Registers of the arguments after the context (System V).
const ARGUMENT_REGISTERS: [Reg; 5] = [Reg::Rsi, Reg::Rdx, Reg::Rcx, Reg::R8, Reg::R9];

/// Where a value of the operand stack is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Value {
    /// In its stack slot.
    Slot,
    /// A constant (an `i32` zero-extended), not stored yet.
    Const(i64),
    /// The current value of a local, not copied yet.
    Local(u32),
    /// In `rax`, not stored yet. At most one value is.
    Rax,
}

/// What a control frame is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// The function body: branching to it returns.
    Function,
    /// `block`.
    Block,
    /// `loop`: branches go back to its header, at this offset.
    Loop { header: usize },
    /// `if`, with the jump to its `else` (or end) still to be pointed.
    If { else_jump: Option<usize> },
}

/// A control frame.
struct Control {
    kind: Kind,
    /// Operand stack height below its parameters.
    height: usize,
    /// Values a branch to it carries: the loop's parameters, else its
    /// results.
    branch_arity: usize,
    /// Its results.
    results: usize,
    /// Jumps to its end (for the function, to the exit).
    ends: Vec<usize>,
    /// Whether anything reached its end (falling through or branching).
    end_reached: bool,
}

/// Compiles one function body of type `ty`; with `loops_to_cranelift`, a
/// `loop` gives [`SinglePassError::Fallback`].
pub fn compile_function(
    env: &ModuleEnv<'_>,
    ty: &FuncType,
    body: &FunctionBody<'_>,
    frame_bytes: u32,
    loops_to_cranelift: bool,
) -> Result<SinglePassFunction, SinglePassError> {
    let integer = |t: &WasmType| matches!(t, WasmType::I32 | WasmType::I64);
    if ty.params.len() > ARGUMENT_REGISTERS.len() {
        return Err(SinglePassError::Fallback("more than five parameters"));
    }
    if ty.results.len() > 1 {
        return Err(SinglePassError::Fallback("several results"));
    }
    if !ty.params.iter().all(integer) || !ty.results.iter().all(integer) {
        return Err(SinglePassError::Fallback("float parameters or results"));
    }
    let mut locals = ty.params.len();
    let mut reader = body.get_locals_reader().map_err(malformed)?;
    let mut declared: u32 = 0;
    for _ in 0..reader.get_count() {
        let (count, local_type) = reader.read().map_err(malformed)?;
        declared = declared.saturating_add(count);
        if declared > env.max_locals {
            return Err(SinglePassError::Limit("too many locals".into()));
        }
        if !integer(&WasmType::from(local_type)) {
            return Err(SinglePassError::Fallback("float or reference locals"));
        }
        locals += count as usize;
    }
    let max_slots = (frame_bytes as usize / 8).saturating_sub(2);
    if locals > max_slots {
        return Err(SinglePassError::Fallback("a frame over the limit"));
    }
    let is_leaf = !super::translate::makes_calls(body)
        .map_err(|_| SinglePassError::Malformed("the body could not be read".into()))?;
    let mut compiler = FunctionCompiler {
        env,
        asm: Assembler::default(),
        vmctx: if is_leaf { Reg::Rdi } else { Reg::Rbx },
        slot_base: if is_leaf { 8 } else { 16 },
        locals,
        stack: Vec::new(),
        controls: Vec::new(),
        slots_used: 0,
        locals_read: alloc::vec![false; locals],
        max_slots,
        unreachable: false,
        unreachable_depth: 0,
        traps: Default::default(),
        propagate: Vec::new(),
        is_leaf,
        calls_runtime: false,
        loops_to_cranelift,
    };
    compiler.controls.push(Control {
        kind: Kind::Function,
        height: 0,
        branch_arity: ty.results.len(),
        results: ty.results.len(),
        ends: Vec::new(),
        end_reached: false,
    });
    let mut operators = body.get_operators_reader().map_err(malformed)?;
    while !compiler.controls.is_empty() {
        let operator = operators.read().map_err(malformed)?;
        compiler.operator(operator)?;
    }
    compiler.finish(ty)
}

/// A second operand: an immediate, a memory slot or a register.
#[derive(Clone, Copy)]
enum Operand {
    Imm(i32),
    Mem(Mem),
    Reg(Reg),
}

/// The state of one function's compilation.
struct FunctionCompiler<'a> {
    env: &'a ModuleEnv<'a>,
    /// The body's code (the prologue goes before it at the end).
    asm: Assembler,
    /// The register holding the context.
    vmctx: Reg,
    /// Bytes between `rbp` and slot 0 (the saved `rbp`, and `rbx` when
    /// the function calls).
    slot_base: i32,
    /// Locals, parameters included: the first slots.
    locals: usize,
    stack: Vec<Value>,
    controls: Vec<Control>,
    /// Slots the code refers to (locals, then operand heights): the
    /// frame's size. A function that refers to none has no frame.
    slots_used: usize,
    /// Which locals `local.get` reads: only those need their initial
    /// value (a parameter's register, or zero) stored by the prologue.
    locals_read: Vec<bool>,
    max_slots: usize,
    unreachable: bool,
    /// Blocks entered while unreachable.
    unreachable_depth: usize,
    /// Jumps to each trap code's stub, by code.
    traps: [Vec<usize>; TrapCode::ALL.len() + 1],
    /// Jumps to the return that a callee's trap takes.
    propagate: Vec<usize>,
    is_leaf: bool,
    calls_runtime: bool,
    loops_to_cranelift: bool,
}

impl FunctionCompiler<'_> {
    /// The slot of local `index` or, past the locals, of an operand
    /// height.
    fn slot(&mut self, index: usize) -> Mem {
        self.slots_used = self.slots_used.max(index + 1);
        Mem::at(Reg::Rbp, -(self.slot_base + 8 * index as i32))
    }

    /// Notes that `local.get` reads local `index` (its slot then holds
    /// its initial value from the prologue on).
    fn note_read(&mut self, index: u32) {
        if let Some(read) = self.locals_read.get_mut(index as usize) {
            if !*read {
                *read = true;
                self.slot(index as usize);
            }
        }
    }

    fn stack_slot(&mut self, height: usize) -> Mem {
        self.slot(self.locals + height)
    }

    fn context(&self, offset: i32) -> Mem {
        Mem::at(self.vmctx, offset)
    }

    fn push(&mut self, value: Value) -> Result<(), SinglePassError> {
        if self.locals + self.stack.len() + 1 > self.max_slots {
            return Err(SinglePassError::Fallback("a frame over the limit"));
        }
        self.stack.push(value);
        Ok(())
    }

    /// The top value and its height.
    fn pop(&mut self) -> (Value, usize) {
        // Validation guarantees an operand is there.
        let value = self.stack.pop().unwrap_or(Value::Const(0));
        (value, self.stack.len())
    }

    /// Stores the value at `height` in its slot.
    fn materialize(&mut self, height: usize) {
        let value = self.stack[height];
        let slot = self.stack_slot(height);
        match value {
            Value::Slot => return,
            Value::Const(c) => self.store_const(slot, c),
            Value::Local(local) => {
                let from = self.slot(local as usize);
                self.asm.load(Size::S64, Reg::R11, from);
                self.asm.store(Size::S64, slot, Reg::R11);
            }
            Value::Rax => self.asm.store(Size::S64, slot, Reg::Rax),
        }
        self.stack[height] = Value::Slot;
    }

    fn store_const(&mut self, slot: Mem, c: i64) {
        match i32::try_from(c) {
            Ok(small) => self.asm.store_imm(Size::S64, slot, small),
            Err(_) => {
                self.asm.mov_imm(Reg::R11, c);
                self.asm.store(Size::S64, slot, Reg::R11);
            }
        }
    }

    /// Every value in its slot (before control flow and calls).
    fn flush(&mut self) {
        for height in 0..self.stack.len() {
            self.materialize(height);
        }
    }

    /// Frees `rax`: the value in it, if any, goes to its slot.
    fn take_rax(&mut self) {
        if let Some(height) = self.stack.iter().rposition(|v| *v == Value::Rax) {
            self.materialize(height);
        }
    }

    /// Loads a popped value (which was at `height`) into `reg`.
    fn load(&mut self, reg: Reg, value: Value, height: usize, size: Size) {
        match value {
            Value::Slot => {
                let slot = self.stack_slot(height);
                self.asm.load(size, reg, slot);
            }
            Value::Const(c) => {
                let c = if size == Size::S32 {
                    i64::from(c as u32)
                } else {
                    c
                };
                self.asm.mov_imm(reg, c);
            }
            Value::Local(local) => {
                let slot = self.slot(local as usize);
                self.asm.load(size, reg, slot);
            }
            Value::Rax => {
                if reg != Reg::Rax {
                    self.asm.mov_rr(size, reg, Reg::Rax);
                }
            }
        }
    }

    /// Loads a popped value into `rax`, spilling another value there
    /// first.
    fn load_rax(&mut self, value: Value, height: usize, size: Size) {
        if value != Value::Rax {
            self.take_rax();
        }
        self.load(Reg::Rax, value, height, size);
    }

    /// A popped value as a second operand (a 64-bit constant that does
    /// not fit an immediate goes through `scratch`).
    fn operand(&mut self, value: Value, height: usize, size: Size, scratch: Reg) -> Operand {
        match value {
            Value::Slot => Operand::Mem(self.stack_slot(height)),
            Value::Local(local) => Operand::Mem(self.slot(local as usize)),
            Value::Rax => Operand::Reg(Reg::Rax),
            Value::Const(c) => {
                if size == Size::S32 {
                    Operand::Imm(c as i32)
                } else if let Ok(small) = i32::try_from(c) {
                    Operand::Imm(small)
                } else {
                    self.asm.mov_imm(scratch, c);
                    Operand::Reg(scratch)
                }
            }
        }
    }

    fn alu(&mut self, size: Size, op: Alu, operand: Operand) {
        match operand {
            Operand::Imm(value) => self.asm.alu_ri(size, op, Reg::Rax, value),
            Operand::Mem(mem) => self.asm.alu_rm(size, op, Reg::Rax, mem),
            Operand::Reg(reg) => self.asm.alu_rr(size, op, Reg::Rax, reg),
        }
    }

    /// Pops `b` then `a`, leaves `a` in `rax` and gives `b` as an operand;
    /// whether they were swapped (`b` in `rax`, `a` the operand), which
    /// only `commutative` operations allow.
    fn two_operands(&mut self, size: Size, commutative: bool) -> (Operand, bool) {
        let (b, b_height) = self.pop();
        let (a, a_height) = self.pop();
        if a == Value::Rax {
            return (self.operand(b, b_height, size, Reg::Rcx), false);
        }
        if b == Value::Rax {
            if commutative {
                return (self.operand(a, a_height, size, Reg::Rcx), true);
            }
            self.asm.mov_rr(Size::S64, Reg::Rcx, Reg::Rax);
            self.load(Reg::Rax, a, a_height, size);
            return (Operand::Reg(Reg::Rcx), false);
        }
        self.take_rax();
        self.load(Reg::Rax, a, a_height, size);
        (self.operand(b, b_height, size, Reg::Rcx), false)
    }

    /// Pops `b` into `rcx` and `a` into `rax`.
    fn two_registers(&mut self, size: Size) {
        let (b, b_height) = self.pop();
        let (a, a_height) = self.pop();
        self.load(Reg::Rcx, b, b_height, size);
        if a != Value::Rax {
            self.take_rax();
        }
        self.load(Reg::Rax, a, a_height, size);
    }
}
