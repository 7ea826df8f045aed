//! The function's frame: traps, fuel, the exit and the prologue put
//! before the body.

use super::*;

impl FunctionCompiler<'_> {
    pub(super) fn trap_if(&mut self, cond: Cond, code: TrapCode) {
        let at = self.asm.jump_if(cond);
        self.traps[code as usize].push(at);
    }

    pub(super) fn trap_now(&mut self, code: TrapCode) {
        let at = self.asm.jump();
        self.traps[code as usize].push(at);
    }

    pub(super) fn charge_fuel(&mut self) {
        let fuel = self.context(vmctx::FUEL);
        self.asm.alu_mi(Size::S64, Alu::Sub, fuel, 1);
        self.trap_if(Cond::Sign, TrapCode::OutOfFuel);
    }

    /// After a call: a trap the callee stored returns from here too.
    pub(super) fn check_trap_after_call(&mut self) {
        let trap = self.context(vmctx::TRAP);
        self.asm.alu_mi(Size::S32, Alu::Cmp, trap, 0);
        let at = self.asm.jump_if(Cond::NotEqual);
        self.propagate.push(at);
    }

    /// The exit, the trap stubs, then the prologue put before the body.
    pub(super) fn finish(mut self, ty: &FuncType) -> Result<SinglePassFunction, SinglePassError> {
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
        // Initial values, only of the locals `local.get` reads (a local
        // written before any read needs none; one never read, no slot).
        let params = ty.params.len();
        for (i, register) in ARGUMENT_REGISTERS.iter().take(params).enumerate() {
            if self.locals_read[i] {
                let slot = Mem::at(Reg::Rbp, -(self.slot_base + 8 * i as i32));
                prologue.store(Size::S64, slot, *register);
            }
        }
        let zeroed = (params..self.locals).filter(|&local| self.locals_read[local]);
        let mut zero_ready = false;
        for local in zeroed {
            if !zero_ready {
                prologue.alu_rr(Size::S32, Alu::Xor, Reg::Rax, Reg::Rax);
                zero_ready = true;
            }
            let slot = Mem::at(Reg::Rbp, -(self.slot_base + 8 * local as i32));
            prologue.store(Size::S64, slot, Reg::Rax);
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

    pub(super) fn epilogue(&mut self, has_frame: bool) {
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
