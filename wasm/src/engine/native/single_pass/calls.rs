//! Calls: Wasm functions through the function table, `call_indirect`
//! with its checks, kernel procedures, the runtime's memory procedures.

use super::*;

impl FunctionCompiler<'_> {
    /// Calls the code at `call` with the top `ty.params.len()` values
    /// (every value in its slot; `i32`s zero-extended), then checks the
    /// trap word if `may_trap`.
    pub(super) fn call_with(
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

    pub(super) fn call(&mut self, function_index: u32) -> Result<(), SinglePassError> {
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

    pub(super) fn call_indirect(
        &mut self,
        type_index: u32,
        table: u32,
    ) -> Result<(), SinglePassError> {
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
    pub(super) fn memory_call(
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
}

fn size_of(ty: WasmType) -> Size {
    if ty == WasmType::I64 {
        Size::S64
    } else {
        Size::S32
    }
}
