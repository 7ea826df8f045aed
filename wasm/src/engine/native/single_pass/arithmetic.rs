//! Integer arithmetic, comparisons and `select`: operands from the
//! value stack, the result in `rax`.

use super::*;

impl FunctionCompiler<'_> {
    pub(super) fn binary(
        &mut self,
        size: Size,
        op: Alu,
        commutative: bool,
    ) -> Result<(), SinglePassError> {
        let (operand, _) = self.two_operands(size, commutative);
        self.alu(size, op, operand);
        self.push(Value::Rax)
    }

    pub(super) fn multiply(&mut self, size: Size) -> Result<(), SinglePassError> {
        let (operand, _) = self.two_operands(size, true);
        match operand {
            Operand::Imm(value) => self.asm.imul_rri(size, Reg::Rax, Reg::Rax, value),
            Operand::Mem(mem) => self.asm.imul_rm(size, Reg::Rax, mem),
            Operand::Reg(reg) => self.asm.imul_rr(size, Reg::Rax, reg),
        }
        self.push(Value::Rax)
    }

    pub(super) fn compare(&mut self, size: Size, cond: Cond) -> Result<(), SinglePassError> {
        let (operand, swap) = self.two_operands(size, true);
        self.alu(size, Alu::Cmp, operand);
        let cond = if swap { swapped(cond) } else { cond };
        self.asm.set_bit(cond, Reg::Rax);
        self.push(Value::Rax)
    }

    pub(super) fn equals_zero(&mut self, size: Size) -> Result<(), SinglePassError> {
        let (a, height) = self.pop();
        self.load_rax(a, height, size);
        self.asm.test_rr(size, Reg::Rax, Reg::Rax);
        self.asm.set_bit(Cond::Equal, Reg::Rax);
        self.push(Value::Rax)
    }

    pub(super) fn shift(&mut self, size: Size, shift: Shift) -> Result<(), SinglePassError> {
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
    pub(super) fn unary(
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
    pub(super) fn divide(
        &mut self,
        size: Size,
        signed: bool,
        remainder: bool,
    ) -> Result<(), SinglePassError> {
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
    pub(super) fn count_zeros(&mut self, size: Size, leading: bool) -> Result<(), SinglePassError> {
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
    pub(super) fn count_ones(&mut self, size: Size) -> Result<(), SinglePassError> {
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

    /// `select`: `a` if the condition is non-zero, else `b`.
    pub(super) fn select(&mut self) -> Result<(), SinglePassError> {
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
