//! Where values live outside the operand stack: linear memory (every
//! access checked), locals and globals.

use super::*;

impl FunctionCompiler<'_> {
    /// The popped index in `rax` (zero-extended) checked for an access of
    /// `bytes` at `memarg`'s offset; `rcx` the memory's base. The access
    /// is then at `[rcx + rax + offset]`.
    pub(super) fn address(&mut self, memarg: &MemArg, bytes: i64) -> Result<i32, SinglePassError> {
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

    pub(super) fn load_memory(
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

    pub(super) fn store_memory(
        &mut self,
        memarg: &MemArg,
        width: Width,
    ) -> Result<(), SinglePassError> {
        let (value, height) = self.pop();
        self.load(Reg::Rdx, value, height, Size::S64);
        let offset = self.address(memarg, width_bytes(width))?;
        self.asm
            .store_narrow(Mem::indexed(Reg::Rcx, Reg::Rax, offset), Reg::Rdx, width);
        Ok(())
    }

    /// Stores the value on top in local `index`; any copy of the local
    /// still pending on the stack is taken first.
    pub(super) fn set_local(&mut self, index: u32, keep: bool) -> Result<(), SinglePassError> {
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

    pub(super) fn global_type(&self, index: u32) -> Result<Size, SinglePassError> {
        match self.env.globals.get(index as usize) {
            Some(WasmType::I32) => Ok(Size::S32),
            Some(WasmType::I64) => Ok(Size::S64),
            _ => Err(SinglePassError::Fallback("a float or reference global")),
        }
    }

    pub(super) fn global_slot(index: u32) -> Result<i32, SinglePassError> {
        i32::try_from(u64::from(index) * 8)
            .map_err(|_| SinglePassError::Limit("too many globals".into()))
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
