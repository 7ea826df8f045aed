//! The x86_64 instructions the single-pass compiler emits, encoded into a
//! byte buffer.
//!
//! Hand-written rather than taken from a crate: the compiler emits about
//! forty instruction forms, each a few bytes pushed in a fixed pattern,
//! and encoding is on the path whose speed it exists for (a table-driven
//! assembler such as `iced-x86` costs hundreds of host instructions per
//! instruction, more than the rest of the compiler; `dynasmrt` needs
//! `std`). Only the forms below exist; this module's tests check them
//! against GNU `as`'s bytes, and the differential tests run every one.

use alloc::vec::Vec;

/// A general-purpose register, numbered as the encoding numbers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Reg {
    /// Accumulator: results, dividends.
    Rax = 0,
    /// Counter: shift counts, second operands.
    Rcx = 1,
    /// Data: the high half of a division, stored values.
    Rdx = 2,
    /// Callee-saved: the context in functions that call.
    Rbx = 3,
    /// Stack pointer.
    Rsp = 4,
    /// Frame pointer.
    Rbp = 5,
    /// Second argument.
    Rsi = 6,
    /// First argument: the context.
    Rdi = 7,
    /// Fifth argument.
    R8 = 8,
    /// Sixth argument.
    R9 = 9,
    /// Caller-saved scratch: copies between slots.
    R11 = 11,
}

impl Reg {
    fn low(self) -> u8 {
        self as u8 & 7
    }

    fn high(self) -> u8 {
        (self as u8 >> 3) & 1
    }
}

/// Operand size of an integer instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// 32 bits (the result zero-extends to 64).
    S32,
    /// 64 bits.
    S64,
}

/// A condition code, as `jcc`, `setcc` and `cmovcc` encode it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Cond {
    /// Unsigned below (carry).
    Below = 0x2,
    /// Unsigned above or equal.
    AboveOrEqual = 0x3,
    /// Equal (zero).
    Equal = 0x4,
    /// Not equal (not zero).
    NotEqual = 0x5,
    /// Unsigned below or equal.
    BelowOrEqual = 0x6,
    /// Unsigned above.
    Above = 0x7,
    /// Sign set (negative).
    Sign = 0x8,
    /// Sign clear.
    NotSign = 0x9,
    /// Signed less.
    Less = 0xc,
    /// Signed greater or equal.
    GreaterOrEqual = 0xd,
    /// Signed less or equal.
    LessOrEqual = 0xe,
    /// Signed greater.
    Greater = 0xf,
}

/// The arithmetic-logic operations sharing one encoding pattern (the
/// number is the `/digit` of their immediate forms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Alu {
    /// `add`.
    Add = 0,
    /// `or`.
    Or = 1,
    /// `and`.
    And = 4,
    /// `sub`.
    Sub = 5,
    /// `xor`.
    Xor = 6,
    /// `cmp`.
    Cmp = 7,
}

/// Shifts and rotates (the number is their `/digit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Shift {
    /// `rol`.
    Rol = 0,
    /// `ror`.
    Ror = 1,
    /// `shl`.
    Shl = 4,
    /// `shr`.
    Shr = 5,
    /// `sar`.
    Sar = 7,
}

/// A memory operand: `[base + index + disp]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mem {
    /// Base register.
    pub base: Reg,
    /// Index register (scale 1), if any; never `rsp`.
    pub index: Option<Reg>,
    /// Displacement.
    pub disp: i32,
}

impl Mem {
    /// `[base + disp]`.
    pub fn at(base: Reg, disp: i32) -> Mem {
        Mem {
            base,
            index: None,
            disp,
        }
    }

    /// `[base + index + disp]`.
    pub fn indexed(base: Reg, index: Reg, disp: i32) -> Mem {
        Mem {
            base,
            index: Some(index),
            disp,
        }
    }
}

/// Width of a memory access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    /// One byte.
    W8,
    /// Two bytes.
    W16,
    /// Four bytes.
    W32,
    /// Eight bytes.
    W64,
}

/// The machine code being written, with the offsets of jumps still to be
/// pointed at their targets.
#[derive(Default)]
pub struct Assembler {
    /// The bytes so far.
    pub code: Vec<u8>,
}

impl Assembler {
    /// Where the next instruction goes.
    pub fn offset(&self) -> usize {
        self.code.len()
    }

    fn byte(&mut self, byte: u8) {
        self.code.push(byte);
    }

    fn imm32(&mut self, value: i32) {
        self.code.extend_from_slice(&value.to_le_bytes());
    }

    /// A REX prefix, left out when it would be `0x40` unless `force` (byte
    /// registers above `bl` need one).
    fn rex(&mut self, wide: bool, reg: u8, index: u8, base: u8, force: bool) {
        let rex = 0x40 | (u8::from(wide) << 3) | (reg << 2) | (index << 1) | base;
        if rex != 0x40 || force {
            self.byte(rex);
        }
    }

    /// The ModRM (and SIB and displacement) of `reg` with memory `mem`.
    fn modrm_mem(&mut self, reg: u8, mem: Mem) {
        let base = mem.base.low();
        let mode: u8 = if mem.disp == 0 && base != 5 {
            0
        } else if i8::try_from(mem.disp).is_ok() {
            1
        } else {
            2
        };
        match mem.index {
            None if base != 4 => self.byte((mode << 6) | ((reg & 7) << 3) | base),
            index => {
                self.byte((mode << 6) | ((reg & 7) << 3) | 4);
                let index = index.map_or(4, Reg::low);
                self.byte((index << 3) | base);
            }
        }
        match mode {
            1 => self.byte(mem.disp as u8),
            2 => self.imm32(mem.disp),
            _ => {}
        }
    }

    /// An instruction with a register and a memory operand.
    fn op_mem(&mut self, size: Size, opcode: &[u8], reg: u8, mem: Mem, force: bool) {
        let index = mem.index.map_or(0, Reg::high);
        self.rex(
            size == Size::S64,
            (reg >> 3) & 1,
            index,
            mem.base.high(),
            force,
        );
        self.code.extend_from_slice(opcode);
        self.modrm_mem(reg, mem);
    }

    /// An instruction with two register operands (`reg` in ModRM.reg).
    fn op_reg(&mut self, size: Size, opcode: &[u8], reg: u8, rm: Reg, force: bool) {
        self.rex(size == Size::S64, (reg >> 3) & 1, 0, rm.high(), force);
        self.code.extend_from_slice(opcode);
        self.byte(0xc0 | ((reg & 7) << 3) | rm.low());
    }

    /// `mov dst, src`.
    pub fn mov_rr(&mut self, size: Size, dst: Reg, src: Reg) {
        self.op_reg(size, &[0x89], src as u8, dst, false);
    }

    /// `mov dst, [mem]`.
    pub fn load(&mut self, size: Size, dst: Reg, mem: Mem) {
        self.op_mem(size, &[0x8b], dst as u8, mem, false);
    }

    /// `mov [mem], src`.
    pub fn store(&mut self, size: Size, mem: Mem, src: Reg) {
        self.op_mem(size, &[0x89], src as u8, mem, false);
    }

    /// `mov dword/qword [mem], imm32` (sign-extended for a qword).
    pub fn store_imm(&mut self, size: Size, mem: Mem, value: i32) {
        self.op_mem(size, &[0xc7], 0, mem, false);
        self.imm32(value);
    }

    /// `dst = value`, in the shortest form.
    pub fn mov_imm(&mut self, dst: Reg, value: i64) {
        if let Ok(value) = u32::try_from(value) {
            if value == 0 {
                self.alu_rr(Size::S32, Alu::Xor, dst, dst);
                return;
            }
            self.rex(false, 0, 0, dst.high(), false);
            self.byte(0xb8 + dst.low());
            self.imm32(value as i32);
        } else if let Ok(value) = i32::try_from(value) {
            self.op_reg(Size::S64, &[0xc7], 0, dst, false);
            self.imm32(value);
        } else {
            self.rex(true, 0, 0, dst.high(), false);
            self.byte(0xb8 + dst.low());
            self.code.extend_from_slice(&value.to_le_bytes());
        }
    }

    /// A zero- or sign-extending load of `width` into `dst` (a 32-bit
    /// load zero-extends; `signed` with `size` 64 sign-extends to 64).
    pub fn load_extend(&mut self, size: Size, dst: Reg, mem: Mem, width: Width, signed: bool) {
        match (width, signed) {
            (Width::W8, false) => self.op_mem(Size::S32, &[0x0f, 0xb6], dst as u8, mem, false),
            (Width::W8, true) => self.op_mem(size, &[0x0f, 0xbe], dst as u8, mem, false),
            (Width::W16, false) => self.op_mem(Size::S32, &[0x0f, 0xb7], dst as u8, mem, false),
            (Width::W16, true) => self.op_mem(size, &[0x0f, 0xbf], dst as u8, mem, false),
            (Width::W32, true) if size == Size::S64 => {
                self.op_mem(Size::S64, &[0x63], dst as u8, mem, false)
            }
            (Width::W32, _) => self.load(Size::S32, dst, mem),
            (Width::W64, _) => self.load(Size::S64, dst, mem),
        }
    }

    /// A store of the low `width` bytes of `src`.
    pub fn store_narrow(&mut self, mem: Mem, src: Reg, width: Width) {
        match width {
            Width::W8 => self.op_mem(Size::S32, &[0x88], src as u8, mem, src as u8 >= 4),
            Width::W16 => {
                self.byte(0x66);
                self.op_mem(Size::S32, &[0x89], src as u8, mem, false);
            }
            Width::W32 => self.store(Size::S32, mem, src),
            Width::W64 => self.store(Size::S64, mem, src),
        }
    }

    /// `op dst, src`.
    pub fn alu_rr(&mut self, size: Size, op: Alu, dst: Reg, src: Reg) {
        self.op_reg(size, &[((op as u8) << 3) | 1], src as u8, dst, false);
    }

    /// `op dst, [mem]`.
    pub fn alu_rm(&mut self, size: Size, op: Alu, dst: Reg, mem: Mem) {
        self.op_mem(size, &[((op as u8) << 3) | 3], dst as u8, mem, false);
    }

    /// `op dst, imm` (sign-extended for 64 bits).
    pub fn alu_ri(&mut self, size: Size, op: Alu, dst: Reg, value: i32) {
        if let Ok(small) = i8::try_from(value) {
            self.op_reg(size, &[0x83], op as u8, dst, false);
            self.byte(small as u8);
        } else {
            self.op_reg(size, &[0x81], op as u8, dst, false);
            self.imm32(value);
        }
    }

    /// `op [mem], imm` (sign-extended for 64 bits).
    pub fn alu_mi(&mut self, size: Size, op: Alu, mem: Mem, value: i32) {
        if let Ok(small) = i8::try_from(value) {
            self.op_mem(size, &[0x83], op as u8, mem, false);
            self.byte(small as u8);
        } else {
            self.op_mem(size, &[0x81], op as u8, mem, false);
            self.imm32(value);
        }
    }

    /// `imul dst, src`.
    pub fn imul_rr(&mut self, size: Size, dst: Reg, src: Reg) {
        self.op_reg(size, &[0x0f, 0xaf], dst as u8, src, false);
    }

    /// `imul dst, [mem]`.
    pub fn imul_rm(&mut self, size: Size, dst: Reg, mem: Mem) {
        self.op_mem(size, &[0x0f, 0xaf], dst as u8, mem, false);
    }

    /// `imul dst, src, imm32`.
    pub fn imul_rri(&mut self, size: Size, dst: Reg, src: Reg, value: i32) {
        self.op_reg(size, &[0x69], dst as u8, src, false);
        self.imm32(value);
    }

    /// `shift dst, cl`.
    pub fn shift_cl(&mut self, size: Size, shift: Shift, dst: Reg) {
        self.op_reg(size, &[0xd3], shift as u8, dst, false);
    }

    /// `shift dst, imm8`.
    pub fn shift_ri(&mut self, size: Size, shift: Shift, dst: Reg, count: u8) {
        self.op_reg(size, &[0xc1], shift as u8, dst, false);
        self.byte(count);
    }

    /// `test a, b`.
    pub fn test_rr(&mut self, size: Size, a: Reg, b: Reg) {
        self.op_reg(size, &[0x85], b as u8, a, false);
    }

    /// `dst = condition ? 1 : 0`, all of `dst` (`setcc` then `movzx`).
    pub fn set_bit(&mut self, cond: Cond, dst: Reg) {
        self.op_reg(
            Size::S32,
            &[0x0f, 0x90 | cond as u8],
            0,
            dst,
            dst as u8 >= 4,
        );
        self.op_reg(Size::S32, &[0x0f, 0xb6], dst as u8, dst, dst as u8 >= 4);
    }

    /// `cmovcc dst, src`.
    pub fn cmov(&mut self, size: Size, cond: Cond, dst: Reg, src: Reg) {
        self.op_reg(size, &[0x0f, 0x40 | cond as u8], dst as u8, src, false);
    }

    /// `bsr dst, src` (`reverse`) or `bsf dst, src`: the index of the
    /// highest or lowest set bit; ZF when `src` is zero.
    pub fn bit_scan(&mut self, size: Size, reverse: bool, dst: Reg, src: Reg) {
        let opcode = if reverse { 0xbd } else { 0xbc };
        self.op_reg(size, &[0x0f, opcode], dst as u8, src, false);
    }

    /// `movsx dst, src` from the low `width` bits (64-bit `size` extends
    /// to 64).
    pub fn sign_extend(&mut self, size: Size, dst: Reg, src: Reg, width: Width) {
        match width {
            Width::W8 => self.op_reg(size, &[0x0f, 0xbe], dst as u8, src, src as u8 >= 4),
            Width::W16 => self.op_reg(size, &[0x0f, 0xbf], dst as u8, src, false),
            Width::W32 => self.op_reg(Size::S64, &[0x63], dst as u8, src, false),
            Width::W64 => self.mov_rr(Size::S64, dst, src),
        }
    }

    /// `div src` (unsigned) or `idiv src` of `rdx:rax`.
    pub fn divide(&mut self, size: Size, signed: bool, src: Reg) {
        self.op_reg(size, &[0xf7], if signed { 7 } else { 6 }, src, false);
    }

    /// `cdq` or `cqo`: `rdx` filled with `rax`'s sign.
    pub fn sign_into_rdx(&mut self, size: Size) {
        if size == Size::S64 {
            self.byte(0x48);
        }
        self.byte(0x99);
    }

    /// `lea dst, [mem]`.
    pub fn lea(&mut self, dst: Reg, mem: Mem) {
        self.op_mem(Size::S64, &[0x8d], dst as u8, mem, false);
    }

    /// `push reg`.
    pub fn push(&mut self, reg: Reg) {
        self.rex(false, 0, 0, reg.high(), false);
        self.byte(0x50 + reg.low());
    }

    /// `pop reg`.
    pub fn pop(&mut self, reg: Reg) {
        self.rex(false, 0, 0, reg.high(), false);
        self.byte(0x58 + reg.low());
    }

    /// `ret`.
    pub fn ret(&mut self) {
        self.byte(0xc3);
    }

    /// `call [mem]`.
    pub fn call_mem(&mut self, mem: Mem) {
        self.op_mem(Size::S32, &[0xff], 2, mem, false);
    }

    /// `call reg`.
    pub fn call_reg(&mut self, reg: Reg) {
        self.op_reg(Size::S32, &[0xff], 2, reg, false);
    }

    /// `jmp` to `target`, already emitted.
    pub fn jump_back(&mut self, target: usize) {
        let at = self.jump();
        self.patch(at, target);
    }

    /// `jcc` to `target`, already emitted.
    pub fn jump_if_back(&mut self, cond: Cond, target: usize) {
        let at = self.jump_if(cond);
        self.patch(at, target);
    }

    /// `jmp rel32` to a target not known yet: where its displacement is,
    /// for [`Assembler::patch`].
    pub fn jump(&mut self) -> usize {
        self.byte(0xe9);
        self.imm32(0);
        self.code.len() - 4
    }

    /// `jcc rel32` to a target not known yet (see [`Assembler::jump`]).
    pub fn jump_if(&mut self, cond: Cond) -> usize {
        self.byte(0x0f);
        self.byte(0x80 | cond as u8);
        self.imm32(0);
        self.code.len() - 4
    }

    /// Points the jump whose displacement is at `at` to `target`.
    pub fn patch(&mut self, at: usize, target: usize) {
        // Both are offsets in a buffer bounded by `CompileLimits`, far
        // below 2^31.
        let displacement = target as i64 - (at as i64 + 4);
        self.code[at..at + 4].copy_from_slice(&(displacement as i32).to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(emit: impl FnOnce(&mut Assembler)) -> Vec<u8> {
        let mut assembler = Assembler::default();
        emit(&mut assembler);
        assembler.code
    }

    // Expected bytes from GNU as (`as --64`, Intel syntax).
    #[test]
    fn encodings_match_the_assembler() {
        // mov rax, [rbx+0x10]
        assert_eq!(
            bytes(|a| a.load(Size::S64, Reg::Rax, Mem::at(Reg::Rbx, 16))),
            [0x48, 0x8b, 0x43, 0x10]
        );
        // mov r11, [rbp-0x18]
        assert_eq!(
            bytes(|a| a.load(Size::S64, Reg::R11, Mem::at(Reg::Rbp, -24))),
            [0x4c, 0x8b, 0x5d, 0xe8]
        );
        // mov eax, [rbp+0]: rbp as a base always has a displacement
        assert_eq!(
            bytes(|a| a.load(Size::S32, Reg::Rax, Mem::at(Reg::Rbp, 0))),
            [0x8b, 0x45, 0x00]
        );
        // mov rax, [rsp+8]: rsp as a base takes a SIB byte
        assert_eq!(
            bytes(|a| a.load(Size::S64, Reg::Rax, Mem::at(Reg::Rsp, 8))),
            [0x48, 0x8b, 0x44, 0x24, 0x08]
        );
        // movzx eax, word [rcx+rax+0x200]
        assert_eq!(
            bytes(|a| a.load_extend(
                Size::S32,
                Reg::Rax,
                Mem::indexed(Reg::Rcx, Reg::Rax, 0x200),
                Width::W16,
                false
            )),
            [0x0f, 0xb7, 0x84, 0x01, 0x00, 0x02, 0x00, 0x00]
        );
        // movsxd rax, dword [rcx+rax]
        assert_eq!(
            bytes(|a| a.load_extend(
                Size::S64,
                Reg::Rax,
                Mem::indexed(Reg::Rcx, Reg::Rax, 0),
                Width::W32,
                true
            )),
            [0x48, 0x63, 0x04, 0x01]
        );
        // mov [rcx+rax], dl
        assert_eq!(
            bytes(|a| a.store_narrow(Mem::indexed(Reg::Rcx, Reg::Rax, 0), Reg::Rdx, Width::W8)),
            [0x88, 0x14, 0x01]
        );
        // mov [rcx+rax+4], dx
        assert_eq!(
            bytes(|a| a.store_narrow(Mem::indexed(Reg::Rcx, Reg::Rax, 4), Reg::Rdx, Width::W16)),
            [0x66, 0x89, 0x54, 0x01, 0x04]
        );
        // sub qword [rdi+0x10], 1
        assert_eq!(
            bytes(|a| a.alu_mi(Size::S64, Alu::Sub, Mem::at(Reg::Rdi, 16), 1)),
            [0x48, 0x83, 0x6f, 0x10, 0x01]
        );
        // add eax, ecx ; xor rax, [rbp-0x10] ; cmp rcx, 0x12345
        assert_eq!(
            bytes(|a| a.alu_rr(Size::S32, Alu::Add, Reg::Rax, Reg::Rcx)),
            [0x01, 0xc8]
        );
        assert_eq!(
            bytes(|a| a.alu_rm(Size::S64, Alu::Xor, Reg::Rax, Mem::at(Reg::Rbp, -16))),
            [0x48, 0x33, 0x45, 0xf0]
        );
        assert_eq!(
            bytes(|a| a.alu_ri(Size::S64, Alu::Cmp, Reg::Rcx, 0x12345)),
            [0x48, 0x81, 0xf9, 0x45, 0x23, 0x01, 0x00]
        );
        // mov rax, 0x123456789 ; mov rcx, -1 ; mov r8d, 7
        assert_eq!(
            bytes(|a| a.mov_imm(Reg::Rax, 0x1_2345_6789)),
            [0x48, 0xb8, 0x89, 0x67, 0x45, 0x23, 0x01, 0x00, 0x00, 0x00]
        );
        assert_eq!(
            bytes(|a| a.mov_imm(Reg::Rcx, -1)),
            [0x48, 0xc7, 0xc1, 0xff, 0xff, 0xff, 0xff]
        );
        assert_eq!(
            bytes(|a| a.mov_imm(Reg::R8, 7)),
            [0x41, 0xb8, 0x07, 0x00, 0x00, 0x00]
        );
        // imul rax, rcx ; imul eax, eax, 0x100 ; shl rax, cl ; ror eax, 3
        assert_eq!(
            bytes(|a| a.imul_rr(Size::S64, Reg::Rax, Reg::Rcx)),
            [0x48, 0x0f, 0xaf, 0xc1]
        );
        assert_eq!(
            bytes(|a| a.imul_rri(Size::S32, Reg::Rax, Reg::Rax, 0x100)),
            [0x69, 0xc0, 0x00, 0x01, 0x00, 0x00]
        );
        assert_eq!(
            bytes(|a| a.shift_cl(Size::S64, Shift::Shl, Reg::Rax)),
            [0x48, 0xd3, 0xe0]
        );
        assert_eq!(
            bytes(|a| a.shift_ri(Size::S32, Shift::Ror, Reg::Rax, 3)),
            [0xc1, 0xc8, 0x03]
        );
        // setl al ; movzx eax, al
        assert_eq!(
            bytes(|a| a.set_bit(Cond::Less, Reg::Rax)),
            [0x0f, 0x9c, 0xc0, 0x0f, 0xb6, 0xc0]
        );
        // cmove rax, rcx ; bsr eax, eax ; movsx rax, ax ; movsxd rax, eax
        assert_eq!(
            bytes(|a| a.cmov(Size::S64, Cond::Equal, Reg::Rax, Reg::Rcx)),
            [0x48, 0x0f, 0x44, 0xc1]
        );
        assert_eq!(
            bytes(|a| a.bit_scan(Size::S32, true, Reg::Rax, Reg::Rax)),
            [0x0f, 0xbd, 0xc0]
        );
        assert_eq!(
            bytes(|a| a.sign_extend(Size::S64, Reg::Rax, Reg::Rax, Width::W16)),
            [0x48, 0x0f, 0xbf, 0xc0]
        );
        assert_eq!(
            bytes(|a| a.sign_extend(Size::S64, Reg::Rax, Reg::Rax, Width::W32)),
            [0x48, 0x63, 0xc0]
        );
        // idiv rcx ; cqo ; call [rax+0x28] ; call r11 ; push rbx
        assert_eq!(
            bytes(|a| a.divide(Size::S64, true, Reg::Rcx)),
            [0x48, 0xf7, 0xf9]
        );
        assert_eq!(bytes(|a| a.sign_into_rdx(Size::S64)), [0x48, 0x99]);
        assert_eq!(
            bytes(|a| a.call_mem(Mem::at(Reg::Rax, 0x28))),
            [0xff, 0x50, 0x28]
        );
        assert_eq!(bytes(|a| a.call_reg(Reg::R11)), [0x41, 0xff, 0xd3]);
        assert_eq!(bytes(|a| a.push(Reg::Rbx)), [0x53]);
        // mov qword [rbp-0x20], -5 ; lea rcx, [rax+0x10]
        assert_eq!(
            bytes(|a| a.store_imm(Size::S64, Mem::at(Reg::Rbp, -32), -5)),
            [0x48, 0xc7, 0x45, 0xe0, 0xfb, 0xff, 0xff, 0xff]
        );
        assert_eq!(
            bytes(|a| a.lea(Reg::Rcx, Mem::at(Reg::Rax, 16))),
            [0x48, 0x8d, 0x48, 0x10]
        );
    }

    #[test]
    fn jumps_are_patched_relative_to_their_end() {
        let mut assembler = Assembler::default();
        let at = assembler.jump_if(Cond::Equal);
        assembler.ret();
        let target = assembler.offset();
        assembler.patch(at, target);
        // je +1 (over the ret)
        assert_eq!(assembler.code, [0x0f, 0x84, 0x01, 0, 0, 0, 0xc3]);
        assembler.jump_back(0);
        // jmp back to 0 from the end at 12: -12
        assert_eq!(&assembler.code[7..], [0xe9, 0xf4, 0xff, 0xff, 0xff]);
    }
}
