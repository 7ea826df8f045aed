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
        slots_used: locals,
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
    /// Slots the code refers to (locals, then operand heights).
    slots_used: usize,
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

fn size_of(ty: WasmType) -> Size {
    if ty == WasmType::I64 {
        Size::S64
    } else {
        Size::S32
    }
}

/// The condition with its operands swapped (`a < b` is `b > a`).
fn swapped(cond: Cond) -> Cond {
    match cond {
        Cond::Below => Cond::Above,
        Cond::Above => Cond::Below,
        Cond::BelowOrEqual => Cond::AboveOrEqual,
        Cond::AboveOrEqual => Cond::BelowOrEqual,
        Cond::Less => Cond::Greater,
        Cond::Greater => Cond::Less,
        Cond::LessOrEqual => Cond::GreaterOrEqual,
        Cond::GreaterOrEqual => Cond::LessOrEqual,
        other => other,
    }
}

impl FunctionCompiler<'_> {
    /// The slot of local `index` or, past the locals, of an operand
    /// height.
    fn slot(&mut self, index: usize) -> Mem {
        self.slots_used = self.slots_used.max(index + 1);
        Mem::at(Reg::Rbp, -(self.slot_base + 8 * index as i32))
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

    fn binary(&mut self, size: Size, op: Alu, commutative: bool) -> Result<(), SinglePassError> {
        let (operand, _) = self.two_operands(size, commutative);
        self.alu(size, op, operand);
        self.push(Value::Rax)
    }

    fn multiply(&mut self, size: Size) -> Result<(), SinglePassError> {
        let (operand, _) = self.two_operands(size, true);
        match operand {
            Operand::Imm(value) => self.asm.imul_rri(size, Reg::Rax, Reg::Rax, value),
            Operand::Mem(mem) => self.asm.imul_rm(size, Reg::Rax, mem),
            Operand::Reg(reg) => self.asm.imul_rr(size, Reg::Rax, reg),
        }
        self.push(Value::Rax)
    }

    fn compare(&mut self, size: Size, cond: Cond) -> Result<(), SinglePassError> {
        let (operand, swap) = self.two_operands(size, true);
        self.alu(size, Alu::Cmp, operand);
        let cond = if swap { swapped(cond) } else { cond };
        self.asm.set_bit(cond, Reg::Rax);
        self.push(Value::Rax)
    }

    fn equals_zero(&mut self, size: Size) -> Result<(), SinglePassError> {
        let (a, height) = self.pop();
        self.load_rax(a, height, size);
        self.asm.test_rr(size, Reg::Rax, Reg::Rax);
        self.asm.set_bit(Cond::Equal, Reg::Rax);
        self.push(Value::Rax)
    }

    fn shift(&mut self, size: Size, shift: Shift) -> Result<(), SinglePassError> {
        let mask = if size == Size::S64 { 63 } else { 31 };
        if let Some(&Value::Const(count)) = self.stack.last() {
            self.pop();
            let (a, height) = self.pop();
            self.load_rax(a, height, size);
            self.asm
                .shift_ri(size, shift, Reg::Rax, (count & mask) as u8);
        } else {
            self.two_registers(size);
            self.asm.shift_cl(size, shift, Reg::Rax);
        }
        self.push(Value::Rax)
    }

    /// Unary operations in place on `rax`.
    fn unary(
        &mut self,
        size: Size,
        emit: impl FnOnce(&mut Assembler),
    ) -> Result<(), SinglePassError> {
        let (a, height) = self.pop();
        self.load_rax(a, height, size);
        emit(&mut self.asm);
        self.push(Value::Rax)
    }

    /// Division and remainder, the divisor and the overflow checked
    /// first (as `translate::divide`).
    fn divide(&mut self, size: Size, signed: bool, remainder: bool) -> Result<(), SinglePassError> {
        self.two_registers(size);
        self.asm.test_rr(size, Reg::Rcx, Reg::Rcx);
        self.trap_if(Cond::Equal, TrapCode::DivisionByZero);
        if !signed {
            self.asm.alu_rr(Size::S32, Alu::Xor, Reg::Rdx, Reg::Rdx);
            self.asm.divide(size, false, Reg::Rcx);
            if remainder {
                self.asm.mov_rr(size, Reg::Rax, Reg::Rdx);
            }
            return self.push(Value::Rax);
        }
        self.asm.alu_ri(size, Alu::Cmp, Reg::Rcx, -1);
        let not_minus_one = self.asm.jump_if(Cond::NotEqual);
        if remainder {
            // x % -1 is 0 (and MIN % -1 would fault).
            self.asm.alu_rr(Size::S32, Alu::Xor, Reg::Rax, Reg::Rax);
            let done = self.asm.jump();
            let here = self.asm.offset();
            self.asm.patch(not_minus_one, here);
            self.asm.sign_into_rdx(size);
            self.asm.divide(size, true, Reg::Rcx);
            self.asm.mov_rr(size, Reg::Rax, Reg::Rdx);
            let here = self.asm.offset();
            self.asm.patch(done, here);
        } else {
            let minimum = if size == Size::S64 {
                i64::MIN
            } else {
                i64::from(i32::MIN as u32)
            };
            self.asm.mov_imm(Reg::Rdx, minimum);
            self.asm.alu_rr(size, Alu::Cmp, Reg::Rax, Reg::Rdx);
            self.trap_if(Cond::Equal, TrapCode::IntegerOverflow);
            let here = self.asm.offset();
            self.asm.patch(not_minus_one, here);
            self.asm.sign_into_rdx(size);
            self.asm.divide(size, true, Reg::Rcx);
        }
        self.push(Value::Rax)
    }

    /// Counts leading (`reverse`) or trailing zeros.
    fn count_zeros(&mut self, size: Size, leading: bool) -> Result<(), SinglePassError> {
        let bits: i64 = if size == Size::S64 { 64 } else { 32 };
        self.unary(size, |asm| {
            // Zero has no set bit: `bsr`/`bsf` set ZF, and the value
            // comes from `rcx` (for `clz`, 2 * bits - 1, which the `xor`
            // with bits - 1 turns into bits).
            asm.mov_imm(Reg::Rcx, if leading { 2 * bits - 1 } else { bits });
            asm.bit_scan(size, leading, Reg::Rax, Reg::Rax);
            asm.cmov(size, Cond::Equal, Reg::Rax, Reg::Rcx);
            if leading {
                asm.alu_ri(size, Alu::Xor, Reg::Rax, (bits - 1) as i32);
            }
        })
    }

    /// Counts the set bits by halves, quarters and bytes (the `popcnt`
    /// instruction is not in every CPU the kernel runs on).
    fn count_ones(&mut self, size: Size) -> Result<(), SinglePassError> {
        let (wide, top) = if size == Size::S64 {
            (u64::MAX, 56)
        } else {
            (u64::from(u32::MAX), 24)
        };
        let mask = |pattern: u64| (pattern & wide) as i64;
        self.unary(size, |asm| {
            // Pairs: x - ((x >> 1) & 0x55..).
            asm.mov_rr(size, Reg::Rcx, Reg::Rax);
            asm.shift_ri(size, Shift::Shr, Reg::Rcx, 1);
            asm.mov_imm(Reg::R11, mask(0x5555_5555_5555_5555));
            asm.alu_rr(size, Alu::And, Reg::Rcx, Reg::R11);
            asm.alu_rr(size, Alu::Sub, Reg::Rax, Reg::Rcx);
            // Nibbles: (x & 0x33..) + ((x >> 2) & 0x33..).
            asm.mov_rr(size, Reg::Rcx, Reg::Rax);
            asm.mov_imm(Reg::R11, mask(0x3333_3333_3333_3333));
            asm.alu_rr(size, Alu::And, Reg::Rax, Reg::R11);
            asm.shift_ri(size, Shift::Shr, Reg::Rcx, 2);
            asm.alu_rr(size, Alu::And, Reg::Rcx, Reg::R11);
            asm.alu_rr(size, Alu::Add, Reg::Rax, Reg::Rcx);
            // Bytes: (x + (x >> 4)) & 0x0f..
            asm.mov_rr(size, Reg::Rcx, Reg::Rax);
            asm.shift_ri(size, Shift::Shr, Reg::Rcx, 4);
            asm.alu_rr(size, Alu::Add, Reg::Rax, Reg::Rcx);
            asm.mov_imm(Reg::R11, mask(0x0f0f_0f0f_0f0f_0f0f));
            asm.alu_rr(size, Alu::And, Reg::Rax, Reg::R11);
            // The bytes summed into the top one.
            asm.mov_imm(Reg::R11, mask(0x0101_0101_0101_0101));
            asm.imul_rr(size, Reg::Rax, Reg::R11);
            asm.shift_ri(size, Shift::Shr, Reg::Rax, top);
        })
    }

    fn trap_if(&mut self, cond: Cond, code: TrapCode) {
        let at = self.asm.jump_if(cond);
        self.traps[code as usize].push(at);
    }

    fn trap_now(&mut self, code: TrapCode) {
        let at = self.asm.jump();
        self.traps[code as usize].push(at);
    }

    fn charge_fuel(&mut self) {
        let fuel = self.context(vmctx::FUEL);
        self.asm.alu_mi(Size::S64, Alu::Sub, fuel, 1);
        self.trap_if(Cond::Sign, TrapCode::OutOfFuel);
    }

    /// After a call: a trap the callee stored returns from here too.
    fn check_trap_after_call(&mut self) {
        let trap = self.context(vmctx::TRAP);
        self.asm.alu_mi(Size::S32, Alu::Cmp, trap, 0);
        let at = self.asm.jump_if(Cond::NotEqual);
        self.propagate.push(at);
    }

    /// The popped index in `rax` (zero-extended) checked for an access of
    /// `bytes` at `memarg`'s offset; `rcx` the memory's base. The access
    /// is then at `[rcx + rax + offset]`.
    fn address(&mut self, memarg: &MemArg, bytes: i64) -> Result<i32, SinglePassError> {
        let offset = i32::try_from(memarg.offset)
            .ok()
            .filter(|offset| *offset <= i32::MAX - 8)
            .ok_or(SinglePassError::Fallback("a memory offset above 2 GiB"))?;
        let (index, height) = self.pop();
        if index == Value::Rax {
            self.asm.mov_rr(Size::S32, Reg::Rax, Reg::Rax);
        } else {
            self.take_rax();
            self.load(Reg::Rax, index, height, Size::S32);
        }
        self.asm
            .lea(Reg::Rcx, Mem::at(Reg::Rax, offset + bytes as i32));
        let memory_bytes = self.context(vmctx::MEMORY_BYTES);
        self.asm.alu_rm(Size::S64, Alu::Cmp, Reg::Rcx, memory_bytes);
        self.trap_if(Cond::Above, TrapCode::MemoryOutOfBounds);
        let base = self.context(vmctx::MEMORY_BASE);
        self.asm.load(Size::S64, Reg::Rcx, base);
        Ok(offset)
    }

    fn load_memory(
        &mut self,
        memarg: &MemArg,
        size: Size,
        width: Width,
        signed: bool,
    ) -> Result<(), SinglePassError> {
        let bytes = width_bytes(width);
        let offset = self.address(memarg, bytes)?;
        self.asm.load_extend(
            size,
            Reg::Rax,
            Mem::indexed(Reg::Rcx, Reg::Rax, offset),
            width,
            signed,
        );
        self.push(Value::Rax)
    }

    fn store_memory(&mut self, memarg: &MemArg, width: Width) -> Result<(), SinglePassError> {
        let (value, height) = self.pop();
        self.load(Reg::Rdx, value, height, Size::S64);
        let offset = self.address(memarg, width_bytes(width))?;
        self.asm
            .store_narrow(Mem::indexed(Reg::Rcx, Reg::Rax, offset), Reg::Rdx, width);
        Ok(())
    }

    /// Stores the value on top in local `index`; any copy of the local
    /// still pending on the stack is taken first.
    fn set_local(&mut self, index: u32, keep: bool) -> Result<(), SinglePassError> {
        let (value, height) = self.pop();
        if value == Value::Local(index) {
            // `local.get $x  local.set $x`.
            if keep {
                self.push(value)?;
            }
            return Ok(());
        }
        for below in 0..self.stack.len() {
            if self.stack[below] == Value::Local(index) {
                self.materialize(below);
            }
        }
        let slot = self.slot(index as usize);
        match value {
            Value::Const(c) => self.store_const(slot, c),
            Value::Rax => self.asm.store(Size::S64, slot, Reg::Rax),
            Value::Slot | Value::Local(_) => {
                self.load(Reg::R11, value, height, Size::S64);
                self.asm.store(Size::S64, slot, Reg::R11);
            }
        }
        if keep {
            let kept = match value {
                Value::Rax | Value::Const(_) => value,
                _ => Value::Local(index),
            };
            self.push(kept)?;
        }
        Ok(())
    }

    fn global_type(&self, index: u32) -> Result<Size, SinglePassError> {
        match self.env.globals.get(index as usize) {
            Some(WasmType::I32) => Ok(Size::S32),
            Some(WasmType::I64) => Ok(Size::S64),
            _ => Err(SinglePassError::Fallback("a float or reference global")),
        }
    }

    fn global_slot(index: u32) -> Result<i32, SinglePassError> {
        i32::try_from(u64::from(index) * 8)
            .map_err(|_| SinglePassError::Limit("too many globals".into()))
    }

    /// Moves the top `arity` values to the heights from `height` (a
    /// branch's values to where its target expects them). Every value is
    /// in its slot.
    fn move_values(&mut self, arity: usize, height: usize) {
        let from = self.stack.len() - arity;
        if from == height {
            return;
        }
        for i in 0..arity {
            let source = self.stack_slot(from + i);
            let target = self.stack_slot(height + i);
            self.asm.load(Size::S64, Reg::R11, source);
            self.asm.store(Size::S64, target, Reg::R11);
        }
    }

    /// Whether a branch to the frame `depth` out needs code before its
    /// jump (moving values, or the function's result into `rax`).
    fn branch_moves(&self, depth: usize) -> bool {
        let control = &self.controls[depth];
        match control.kind {
            Kind::Function => control.branch_arity > 0,
            _ => {
                control.branch_arity > 0
                    && self.stack.len() - control.branch_arity != control.height
            }
        }
    }

    /// Branches to the frame at index `target` of `controls` (every value
    /// in its slot).
    fn branch(&mut self, target: usize) {
        let control = &self.controls[target];
        let (kind, arity, height) = (control.kind, control.branch_arity, control.height);
        match kind {
            Kind::Function => {
                if arity > 0 {
                    let top = self.stack.len() - 1;
                    let slot = self.stack_slot(top);
                    self.asm.load(Size::S64, Reg::Rax, slot);
                }
                let at = self.asm.jump();
                self.controls[target].ends.push(at);
            }
            Kind::Loop { header } => {
                self.move_values(arity, height);
                self.asm.jump_back(header);
            }
            Kind::Block | Kind::If { .. } => {
                self.move_values(arity, height);
                let at = self.asm.jump();
                self.controls[target].ends.push(at);
                self.controls[target].end_reached = true;
            }
        }
    }

    /// A conditional branch: taken when `cond` holds (flags already set,
    /// every value in its slot).
    fn branch_if(&mut self, cond: Cond, target: usize) {
        if !self.branch_moves(target) {
            match self.controls[target].kind {
                Kind::Loop { header } => self.asm.jump_if_back(cond, header),
                _ => {
                    let at = self.asm.jump_if(cond);
                    self.controls[target].ends.push(at);
                    self.controls[target].end_reached = true;
                }
            }
            return;
        }
        let skip = self.asm.jump_if(negated(cond));
        self.branch(target);
        let here = self.asm.offset();
        self.asm.patch(skip, here);
    }

    fn target(&self, relative_depth: u32) -> Result<usize, SinglePassError> {
        self.controls
            .len()
            .checked_sub(1 + relative_depth as usize)
            .ok_or(SinglePassError::Malformed("branch depth".into()))
    }

    /// Pops an `i32` condition into `eax` and puts every other value in
    /// its slot.
    fn condition(&mut self) {
        let (value, height) = self.pop();
        self.load_rax(value, height, Size::S32);
        self.flush();
        self.asm.test_rr(Size::S32, Reg::Rax, Reg::Rax);
    }

    fn block_arity(&self, ty: BlockType) -> Result<(usize, usize), SinglePassError> {
        match ty {
            BlockType::Empty => Ok((0, 0)),
            BlockType::Type(value) => match WasmType::from(value) {
                WasmType::I32 | WasmType::I64 => Ok((0, 1)),
                _ => Err(SinglePassError::Fallback("a float block")),
            },
            BlockType::FuncType(index) => {
                let ty = self
                    .env
                    .types
                    .get(index as usize)
                    .ok_or(SinglePassError::Malformed("type index".into()))?;
                let integer = |t: &WasmType| matches!(t, WasmType::I32 | WasmType::I64);
                if !ty.params.iter().all(integer) || !ty.results.iter().all(integer) {
                    return Err(SinglePassError::Fallback("a float block"));
                }
                Ok((ty.params.len(), ty.results.len()))
            }
        }
    }

    fn push_control(&mut self, control: Control) -> Result<(), SinglePassError> {
        if self.controls.len() >= self.env.max_nesting {
            return Err(SinglePassError::Limit("blocks nested too deeply".into()));
        }
        self.controls.push(control);
        Ok(())
    }

    fn else_(&mut self) {
        let Some(control) = self.controls.last() else {
            return;
        };
        let Kind::If { else_jump } = control.kind else {
            return;
        };
        let (height, results) = (control.height, control.results);
        if !self.unreachable {
            self.flush();
            self.move_values(results, height);
            let at = self.asm.jump();
            let control = self.controls.last_mut().expect("checked above");
            control.ends.push(at);
            control.end_reached = true;
        }
        if let Some(at) = else_jump {
            let here = self.asm.offset();
            self.asm.patch(at, here);
        }
        if let Some(control) = self.controls.last_mut() {
            control.kind = Kind::If { else_jump: None };
        }
        self.stack.truncate(height);
        self.unreachable = false;
    }

    fn end(&mut self) -> Result<(), SinglePassError> {
        let Some(control) = self.controls.pop() else {
            return Ok(());
        };
        let mut reached = control.end_reached;
        if !self.unreachable {
            reached = true;
            self.flush();
            if control.kind == Kind::Function {
                if control.results > 0 {
                    let top = self.stack.len() - 1;
                    let slot = self.stack_slot(top);
                    self.asm.load(Size::S64, Reg::Rax, slot);
                }
            } else {
                self.move_values(control.results, control.height);
            }
        }
        let here = self.asm.offset();
        if let Kind::If {
            else_jump: Some(at),
        } = control.kind
        {
            // No `else`: its path goes to the end.
            self.asm.patch(at, here);
            reached = true;
        }
        for &at in &control.ends {
            self.asm.patch(at, here);
        }
        self.stack.truncate(control.height);
        if control.kind == Kind::Function {
            return Ok(());
        }
        for _ in 0..control.results {
            self.push(Value::Slot)?;
        }
        self.unreachable = !reached;
        Ok(())
    }

    /// Calls the code at `call` with the top `ty.params.len()` values
    /// (every value in its slot; `i32`s zero-extended), then checks the
    /// trap word if `may_trap`.
    fn call_with(
        &mut self,
        ty: &FuncType,
        call: impl FnOnce(&mut Assembler),
        may_trap: bool,
    ) -> Result<(), SinglePassError> {
        let count = ty.params.len();
        if count > ARGUMENT_REGISTERS.len() {
            return Err(SinglePassError::Fallback(
                "a call of more than five arguments",
            ));
        }
        if ty.results.len() > 1 {
            return Err(SinglePassError::Fallback("a call with several results"));
        }
        let integer = |t: &WasmType| matches!(t, WasmType::I32 | WasmType::I64);
        if !ty.params.iter().all(integer) || !ty.results.iter().all(integer) {
            return Err(SinglePassError::Fallback("a call with float values"));
        }
        let first = self.stack.len() - count;
        for (i, &param) in ty.params.iter().enumerate() {
            let slot = self.stack_slot(first + i);
            self.asm.load(size_of(param), ARGUMENT_REGISTERS[i], slot);
        }
        self.asm.mov_rr(Size::S64, Reg::Rdi, Reg::Rbx);
        call(&mut self.asm);
        self.stack.truncate(first);
        if may_trap {
            self.check_trap_after_call();
        }
        if !ty.results.is_empty() {
            self.push(Value::Rax)?;
        }
        Ok(())
    }

    fn call(&mut self, function_index: u32) -> Result<(), SinglePassError> {
        let ty = self
            .env
            .functions
            .get(function_index as usize)
            .ok_or(SinglePassError::Malformed("function index".into()))?
            .clone();
        let may_trap = if function_index < self.env.imported_functions {
            self.calls_runtime = true;
            self.env
                .imports_may_trap
                .get(function_index as usize)
                .copied()
                .unwrap_or(true)
        } else {
            true
        };
        let entry = i32::try_from(u64::from(function_index) * 8)
            .map_err(|_| SinglePassError::Limit("too many functions".into()))?;
        self.flush();
        self.call_with(
            &ty,
            |asm| {
                asm.load(Size::S64, Reg::Rax, Mem::at(Reg::Rbx, vmctx::FUNCTIONS));
                asm.call_mem(Mem::at(Reg::Rax, entry));
            },
            may_trap,
        )
    }

    fn call_indirect(&mut self, type_index: u32, table: u32) -> Result<(), SinglePassError> {
        if table != 0 {
            return Err(SinglePassError::Fallback("a table other than 0"));
        }
        let ty = self
            .env
            .types
            .get(type_index as usize)
            .ok_or(SinglePassError::Malformed("type index".into()))?
            .clone();
        let expected = *self
            .env
            .signature_ids
            .get(type_index as usize)
            .ok_or(SinglePassError::Malformed("type index".into()))?;
        self.flush();
        let (_, height) = self.pop();
        let slot = self.stack_slot(height);
        self.asm.load(Size::S32, Reg::Rax, slot);
        let elements = self.context(vmctx::TABLE_ELEMENTS);
        self.asm.alu_rm(Size::S32, Alu::Cmp, Reg::Rax, elements);
        self.trap_if(Cond::AboveOrEqual, TrapCode::TableOutOfBounds);
        let base = self.context(vmctx::TABLE_BASE);
        self.asm.load(Size::S64, Reg::R11, base);
        // Elements are `vmctx::TABLE_ENTRY_BYTES` = 16 bytes.
        self.asm.shift_ri(Size::S64, Shift::Shl, Reg::Rax, 4);
        self.asm.alu_rr(Size::S64, Alu::Add, Reg::R11, Reg::Rax);
        self.asm.load(Size::S32, Reg::Rax, Mem::at(Reg::R11, 0));
        self.asm
            .alu_ri(Size::S32, Alu::Cmp, Reg::Rax, vmctx::NULL_SIGNATURE as i32);
        self.trap_if(Cond::Equal, TrapCode::IndirectCallToNull);
        self.asm
            .alu_ri(Size::S32, Alu::Cmp, Reg::Rax, expected as i32);
        self.trap_if(Cond::NotEqual, TrapCode::BadSignature);
        self.asm.load(
            Size::S64,
            Reg::R11,
            Mem::at(Reg::R11, vmctx::TABLE_ENTRY_CODE),
        );
        self.call_with(&ty, |asm| asm.call_reg(Reg::R11), true)
    }

    /// Calls the runtime's memory procedure at `slot` with the top
    /// `arity` `i32`s.
    fn memory_call(
        &mut self,
        slot: i32,
        arity: usize,
        returns: bool,
    ) -> Result<(), SinglePassError> {
        self.calls_runtime = true;
        self.flush();
        let ty = FuncType {
            params: alloc::vec![WasmType::I32; arity],
            results: if returns {
                alloc::vec![WasmType::I32]
            } else {
                Vec::new()
            },
        };
        self.call_with(&ty, |asm| asm.call_mem(Mem::at(Reg::Rbx, slot)), true)
    }

    /// Compiles one operator.
    fn operator(&mut self, operator: Operator<'_>) -> Result<(), SinglePassError> {
        use Operator as O;
        use Size::{S32, S64};
        if self.unreachable {
            match operator {
                O::Block { .. } | O::Loop { .. } | O::If { .. } => self.unreachable_depth += 1,
                O::Else if self.unreachable_depth == 0 => self.else_(),
                O::End if self.unreachable_depth == 0 => self.end()?,
                O::End => self.unreachable_depth -= 1,
                _ => {}
            }
            return Ok(());
        }
        match operator {
            O::Unreachable => {
                self.trap_now(TrapCode::Unreachable);
                self.unreachable = true;
            }
            O::Nop => {}
            O::Block { blockty } => {
                let (params, results) = self.block_arity(blockty)?;
                self.flush();
                self.push_control(Control {
                    kind: Kind::Block,
                    height: self.stack.len() - params,
                    branch_arity: results,
                    results,
                    ends: Vec::new(),
                    end_reached: false,
                })?;
            }
            O::Loop { blockty } => {
                if self.loops_to_cranelift {
                    return Err(SinglePassError::Fallback("a loop"));
                }
                let (params, results) = self.block_arity(blockty)?;
                self.flush();
                let header = self.asm.offset();
                self.push_control(Control {
                    kind: Kind::Loop { header },
                    height: self.stack.len() - params,
                    branch_arity: params,
                    results,
                    ends: Vec::new(),
                    end_reached: false,
                })?;
                self.charge_fuel();
            }
            O::If { blockty } => {
                let (params, results) = self.block_arity(blockty)?;
                if params > 0 {
                    return Err(SinglePassError::Fallback("an if with parameters"));
                }
                self.condition();
                let else_jump = self.asm.jump_if(Cond::Equal);
                self.push_control(Control {
                    kind: Kind::If {
                        else_jump: Some(else_jump),
                    },
                    height: self.stack.len(),
                    branch_arity: results,
                    results,
                    ends: Vec::new(),
                    end_reached: false,
                })?;
            }
            O::Else => self.else_(),
            O::End => self.end()?,
            O::Br { relative_depth } => {
                let target = self.target(relative_depth)?;
                self.flush();
                self.branch(target);
                self.unreachable = true;
            }
            O::BrIf { relative_depth } => {
                let target = self.target(relative_depth)?;
                self.condition();
                self.branch_if(Cond::NotEqual, target);
            }
            O::BrTable { targets } => {
                let (value, height) = self.pop();
                self.load_rax(value, height, S32);
                self.flush();
                for (entry, depth) in targets.targets().enumerate() {
                    let depth = depth.map_err(malformed)?;
                    let target = self.target(depth)?;
                    let entry = i32::try_from(entry)
                        .map_err(|_| SinglePassError::Limit("a branch table too long".into()))?;
                    self.asm.alu_ri(S32, Alu::Cmp, Reg::Rax, entry);
                    self.branch_if(Cond::Equal, target);
                }
                let target = self.target(targets.default())?;
                self.branch(target);
                self.unreachable = true;
            }
            O::Return => {
                self.flush();
                self.branch(0);
                self.unreachable = true;
            }
            O::Call { function_index } => self.call(function_index)?,
            O::CallIndirect {
                type_index,
                table_index,
            } => self.call_indirect(type_index, table_index)?,
            O::Drop => {
                self.pop();
            }
            O::Select => self.select()?,
            O::TypedSelect { ty } => {
                if !matches!(WasmType::from(ty), WasmType::I32 | WasmType::I64) {
                    return Err(SinglePassError::Fallback("a float select"));
                }
                self.select()?;
            }
            O::LocalGet { local_index } => self.push(Value::Local(local_index))?,
            O::LocalSet { local_index } => self.set_local(local_index, false)?,
            O::LocalTee { local_index } => self.set_local(local_index, true)?,
            O::GlobalGet { global_index } => {
                let size = self.global_type(global_index)?;
                let at = Self::global_slot(global_index)?;
                self.take_rax();
                let globals = self.context(vmctx::GLOBALS);
                self.asm.load(S64, Reg::Rax, globals);
                self.asm.load(size, Reg::Rax, Mem::at(Reg::Rax, at));
                self.push(Value::Rax)?;
            }
            O::GlobalSet { global_index } => {
                let size = self.global_type(global_index)?;
                let at = Self::global_slot(global_index)?;
                let (value, height) = self.pop();
                self.load(Reg::Rdx, value, height, S64);
                let globals = self.context(vmctx::GLOBALS);
                self.asm.load(S64, Reg::Rcx, globals);
                self.asm.store(size, Mem::at(Reg::Rcx, at), Reg::Rdx);
            }
            O::I32Load { memarg } => self.load_memory(&memarg, S32, Width::W32, false)?,
            O::I64Load { memarg } => self.load_memory(&memarg, S64, Width::W64, false)?,
            O::I32Load8S { memarg } => self.load_memory(&memarg, S32, Width::W8, true)?,
            O::I32Load8U { memarg } => self.load_memory(&memarg, S32, Width::W8, false)?,
            O::I32Load16S { memarg } => self.load_memory(&memarg, S32, Width::W16, true)?,
            O::I32Load16U { memarg } => self.load_memory(&memarg, S32, Width::W16, false)?,
            O::I64Load8S { memarg } => self.load_memory(&memarg, S64, Width::W8, true)?,
            O::I64Load8U { memarg } => self.load_memory(&memarg, S64, Width::W8, false)?,
            O::I64Load16S { memarg } => self.load_memory(&memarg, S64, Width::W16, true)?,
            O::I64Load16U { memarg } => self.load_memory(&memarg, S64, Width::W16, false)?,
            O::I64Load32S { memarg } => self.load_memory(&memarg, S64, Width::W32, true)?,
            O::I64Load32U { memarg } => self.load_memory(&memarg, S64, Width::W32, false)?,
            O::I32Store { memarg } => self.store_memory(&memarg, Width::W32)?,
            O::I64Store { memarg } => self.store_memory(&memarg, Width::W64)?,
            O::I32Store8 { memarg } | O::I64Store8 { memarg } => {
                self.store_memory(&memarg, Width::W8)?
            }
            O::I32Store16 { memarg } | O::I64Store16 { memarg } => {
                self.store_memory(&memarg, Width::W16)?
            }
            O::I64Store32 { memarg } => self.store_memory(&memarg, Width::W32)?,
            O::MemorySize { mem: 0 } => {
                self.take_rax();
                let bytes = self.context(vmctx::MEMORY_BYTES);
                self.asm.load(S64, Reg::Rax, bytes);
                self.asm.shift_ri(S64, Shift::Shr, Reg::Rax, 16);
                self.push(Value::Rax)?;
            }
            O::MemoryGrow { mem: 0 } => self.memory_call(vmctx::MEMORY_GROW, 1, true)?,
            O::MemoryCopy {
                dst_mem: 0,
                src_mem: 0,
            } => self.memory_call(vmctx::MEMORY_COPY, 3, false)?,
            O::MemoryFill { mem: 0 } => self.memory_call(vmctx::MEMORY_FILL, 3, false)?,
            O::I32Const { value } => self.push(Value::Const(i64::from(value as u32)))?,
            O::I64Const { value } => self.push(Value::Const(value))?,

            O::I32Eqz => self.equals_zero(S32)?,
            O::I32Eq => self.compare(S32, Cond::Equal)?,
            O::I32Ne => self.compare(S32, Cond::NotEqual)?,
            O::I32LtS => self.compare(S32, Cond::Less)?,
            O::I32LtU => self.compare(S32, Cond::Below)?,
            O::I32GtS => self.compare(S32, Cond::Greater)?,
            O::I32GtU => self.compare(S32, Cond::Above)?,
            O::I32LeS => self.compare(S32, Cond::LessOrEqual)?,
            O::I32LeU => self.compare(S32, Cond::BelowOrEqual)?,
            O::I32GeS => self.compare(S32, Cond::GreaterOrEqual)?,
            O::I32GeU => self.compare(S32, Cond::AboveOrEqual)?,
            O::I64Eqz => self.equals_zero(S64)?,
            O::I64Eq => self.compare(S64, Cond::Equal)?,
            O::I64Ne => self.compare(S64, Cond::NotEqual)?,
            O::I64LtS => self.compare(S64, Cond::Less)?,
            O::I64LtU => self.compare(S64, Cond::Below)?,
            O::I64GtS => self.compare(S64, Cond::Greater)?,
            O::I64GtU => self.compare(S64, Cond::Above)?,
            O::I64LeS => self.compare(S64, Cond::LessOrEqual)?,
            O::I64LeU => self.compare(S64, Cond::BelowOrEqual)?,
            O::I64GeS => self.compare(S64, Cond::GreaterOrEqual)?,
            O::I64GeU => self.compare(S64, Cond::AboveOrEqual)?,

            O::I32Clz => self.count_zeros(S32, true)?,
            O::I32Ctz => self.count_zeros(S32, false)?,
            O::I64Clz => self.count_zeros(S64, true)?,
            O::I64Ctz => self.count_zeros(S64, false)?,
            O::I32Add => self.binary(S32, Alu::Add, true)?,
            O::I32Sub => self.binary(S32, Alu::Sub, false)?,
            O::I32Mul => self.multiply(S32)?,
            O::I32DivS => self.divide(S32, true, false)?,
            O::I32DivU => self.divide(S32, false, false)?,
            O::I32RemS => self.divide(S32, true, true)?,
            O::I32RemU => self.divide(S32, false, true)?,
            O::I32And => self.binary(S32, Alu::And, true)?,
            O::I32Or => self.binary(S32, Alu::Or, true)?,
            O::I32Xor => self.binary(S32, Alu::Xor, true)?,
            O::I32Shl => self.shift(S32, Shift::Shl)?,
            O::I32ShrS => self.shift(S32, Shift::Sar)?,
            O::I32ShrU => self.shift(S32, Shift::Shr)?,
            O::I32Rotl => self.shift(S32, Shift::Rol)?,
            O::I32Rotr => self.shift(S32, Shift::Ror)?,
            O::I64Add => self.binary(S64, Alu::Add, true)?,
            O::I64Sub => self.binary(S64, Alu::Sub, false)?,
            O::I64Mul => self.multiply(S64)?,
            O::I64DivS => self.divide(S64, true, false)?,
            O::I64DivU => self.divide(S64, false, false)?,
            O::I64RemS => self.divide(S64, true, true)?,
            O::I64RemU => self.divide(S64, false, true)?,
            O::I64And => self.binary(S64, Alu::And, true)?,
            O::I64Or => self.binary(S64, Alu::Or, true)?,
            O::I64Xor => self.binary(S64, Alu::Xor, true)?,
            O::I64Shl => self.shift(S64, Shift::Shl)?,
            O::I64ShrS => self.shift(S64, Shift::Sar)?,
            O::I64ShrU => self.shift(S64, Shift::Shr)?,
            O::I64Rotl => self.shift(S64, Shift::Rol)?,
            O::I64Rotr => self.shift(S64, Shift::Ror)?,

            // The low 32 bits are the `i32`: every use of an `i32` reads
            // only those.
            O::I32WrapI64 => {}
            O::I64ExtendI32S => self.unary(S32, |asm| {
                asm.sign_extend(S64, Reg::Rax, Reg::Rax, Width::W32)
            })?,
            O::I64ExtendI32U => self.unary(S32, |asm| asm.mov_rr(S32, Reg::Rax, Reg::Rax))?,
            O::I32Extend8S => self.unary(S32, |asm| {
                asm.sign_extend(S32, Reg::Rax, Reg::Rax, Width::W8)
            })?,
            O::I32Extend16S => self.unary(S32, |asm| {
                asm.sign_extend(S32, Reg::Rax, Reg::Rax, Width::W16)
            })?,
            O::I64Extend8S => self.unary(S64, |asm| {
                asm.sign_extend(S64, Reg::Rax, Reg::Rax, Width::W8)
            })?,
            O::I64Extend16S => self.unary(S64, |asm| {
                asm.sign_extend(S64, Reg::Rax, Reg::Rax, Width::W16)
            })?,
            O::I64Extend32S => self.unary(S64, |asm| {
                asm.sign_extend(S64, Reg::Rax, Reg::Rax, Width::W32)
            })?,
            O::I32Popcnt => self.count_ones(S32)?,
            O::I64Popcnt => self.count_ones(S64)?,
            _ => return Err(SinglePassError::Fallback("an operator left to Cranelift")),
        }
        Ok(())
    }

    /// `select`: `a` if the condition is non-zero, else `b`.
    fn select(&mut self) -> Result<(), SinglePassError> {
        let (condition, c_height) = self.pop();
        self.load(Reg::Rdx, condition, c_height, Size::S32);
        let (b, b_height) = self.pop();
        self.load(Reg::Rcx, b, b_height, Size::S64);
        let (a, a_height) = self.pop();
        self.load_rax(a, a_height, Size::S64);
        self.asm.test_rr(Size::S32, Reg::Rdx, Reg::Rdx);
        self.asm.cmov(Size::S64, Cond::Equal, Reg::Rax, Reg::Rcx);
        self.push(Value::Rax)
    }

    /// The exit, the trap stubs, then the prologue put before the body.
    fn finish(mut self, ty: &FuncType) -> Result<SinglePassFunction, SinglePassError> {
        let frame_slots = self.slots_used;
        let has_frame = !self.is_leaf || frame_slots > 0;
        // The exit (where the function frame's end and branches to it
        // were pointed): the result in `rax`.
        if ty.results.first() == Some(&WasmType::I32) {
            self.asm.mov_rr(Size::S32, Reg::Rax, Reg::Rax);
        }
        if !self.is_leaf {
            self.asm
                .alu_mi(Size::S32, Alu::Sub, Mem::at(Reg::Rbx, vmctx::DEPTH), 1);
        }
        self.epilogue(has_frame);
        // A callee's trap: return zero.
        let propagate = self.asm.offset();
        self.asm.alu_rr(Size::S32, Alu::Xor, Reg::Rax, Reg::Rax);
        self.epilogue(has_frame);
        for at in core::mem::take(&mut self.propagate) {
            self.asm.patch(at, propagate);
        }
        let mut stubs = [None; TrapCode::ALL.len() + 1];
        for code in TrapCode::ALL {
            let jumps = core::mem::take(&mut self.traps[code as usize]);
            if jumps.is_empty() && !matches!(code, TrapCode::OutOfFuel | TrapCode::StackOverflow) {
                continue;
            }
            let stub = self.asm.offset();
            stubs[code as usize] = Some(stub);
            let trap = self.context(vmctx::TRAP);
            self.asm.store_imm(Size::S32, trap, code as i32);
            self.asm.jump_back(propagate);
            for at in jumps {
                self.asm.patch(at, stub);
            }
        }

        // The prologue.
        let mut prologue = Assembler::default();
        let mut prologue_traps: Vec<(usize, TrapCode)> = Vec::new();
        if has_frame {
            prologue.push(Reg::Rbp);
            prologue.mov_rr(Size::S64, Reg::Rbp, Reg::Rsp);
            if !self.is_leaf {
                prologue.push(Reg::Rbx);
            }
            // Calls need `rsp` 16-byte aligned: the return address, `rbp`
            // and `rbx` leave it 8 off.
            let slots = if self.is_leaf {
                frame_slots
            } else {
                frame_slots | 1
            };
            let frame = 8 * slots;
            if frame > 0 {
                prologue.alu_ri(Size::S64, Alu::Sub, Reg::Rsp, frame as i32);
            }
            if !self.is_leaf {
                prologue.mov_rr(Size::S64, Reg::Rbx, Reg::Rdi);
            }
        }
        for (i, register) in ARGUMENT_REGISTERS.iter().take(ty.params.len()).enumerate() {
            let slot = Mem::at(Reg::Rbp, -(self.slot_base + 8 * i as i32));
            prologue.store(Size::S64, slot, *register);
        }
        if self.locals > ty.params.len() {
            prologue.alu_rr(Size::S32, Alu::Xor, Reg::Rax, Reg::Rax);
            for local in ty.params.len()..self.locals {
                let slot = Mem::at(Reg::Rbp, -(self.slot_base + 8 * local as i32));
                prologue.store(Size::S64, slot, Reg::Rax);
            }
        }
        if !self.is_leaf {
            // The call depth, then the machine stack (this frame is
            // allocated: it must stay above the limit), as in
            // `translate::translate`.
            prologue.load(Size::S32, Reg::Rax, Mem::at(Reg::Rbx, vmctx::DEPTH));
            prologue.alu_rm(
                Size::S32,
                Alu::Cmp,
                Reg::Rax,
                Mem::at(Reg::Rbx, vmctx::MAX_DEPTH),
            );
            prologue_traps.push((
                prologue.jump_if(Cond::AboveOrEqual),
                TrapCode::StackOverflow,
            ));
            prologue.alu_rm(
                Size::S64,
                Alu::Cmp,
                Reg::Rsp,
                Mem::at(Reg::Rbx, vmctx::STACK_LIMIT),
            );
            prologue_traps.push((prologue.jump_if(Cond::Below), TrapCode::StackOverflow));
            prologue.alu_ri(Size::S32, Alu::Add, Reg::Rax, 1);
            prologue.store(Size::S32, Mem::at(Reg::Rbx, vmctx::DEPTH), Reg::Rax);
        }
        prologue.alu_mi(Size::S64, Alu::Sub, Mem::at(self.vmctx, vmctx::FUEL), 1);
        prologue_traps.push((prologue.jump_if(Cond::Sign), TrapCode::OutOfFuel));

        let body_start = prologue.offset();
        prologue.code.extend_from_slice(&self.asm.code);
        for (at, code) in prologue_traps {
            let stub = stubs[code as usize]
                .ok_or(SinglePassError::Malformed("a trap without its stub".into()))?;
            prologue.patch(at, body_start + stub);
        }
        Ok(SinglePassFunction {
            code: prologue.code,
            calls_runtime: self.calls_runtime,
        })
    }

    fn epilogue(&mut self, has_frame: bool) {
        if has_frame {
            if !self.is_leaf {
                self.asm.load(Size::S64, Reg::Rbx, Mem::at(Reg::Rbp, -8));
            }
            self.asm.mov_rr(Size::S64, Reg::Rsp, Reg::Rbp);
            self.asm.pop(Reg::Rbp);
        }
        self.asm.ret();
    }
}

fn negated(cond: Cond) -> Cond {
    match cond {
        Cond::Below => Cond::AboveOrEqual,
        Cond::AboveOrEqual => Cond::Below,
        Cond::Equal => Cond::NotEqual,
        Cond::NotEqual => Cond::Equal,
        Cond::BelowOrEqual => Cond::Above,
        Cond::Above => Cond::BelowOrEqual,
        Cond::Sign => Cond::NotSign,
        Cond::NotSign => Cond::Sign,
        Cond::Less => Cond::GreaterOrEqual,
        Cond::GreaterOrEqual => Cond::Less,
        Cond::LessOrEqual => Cond::Greater,
        Cond::Greater => Cond::LessOrEqual,
    }
}

fn width_bytes(width: Width) -> i64 {
    match width {
        Width::W8 => 1,
        Width::W16 => 2,
        Width::W32 => 4,
        Width::W64 => 8,
    }
}
