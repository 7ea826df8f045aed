//! One operator at a time: the table from Wasm operators to the
//! compiler's operations.

use super::*;

impl FunctionCompiler<'_> {
    /// Compiles one operator.
    pub(super) fn operator(&mut self, operator: Operator<'_>) -> Result<(), SinglePassError> {
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
            O::LocalGet { local_index } => {
                self.note_read(local_index);
                self.push(Value::Local(local_index))?
            }
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
}
