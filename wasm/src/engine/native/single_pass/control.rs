//! Blocks, loops, `if`, branches: every value in its slot at control
//! flow, so a branch moves only the values it carries.

use super::*;

impl FunctionCompiler<'_> {
    /// Moves the top `arity` values to the heights from `height` (a
    /// branch's values to where its target expects them). Every value is
    /// in its slot.
    pub(super) fn move_values(&mut self, arity: usize, height: usize) {
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
    pub(super) fn branch_moves(&self, depth: usize) -> bool {
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
    pub(super) fn branch(&mut self, target: usize) {
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
    pub(super) fn branch_if(&mut self, cond: Cond, target: usize) {
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

    pub(super) fn target(&self, relative_depth: u32) -> Result<usize, SinglePassError> {
        self.controls
            .len()
            .checked_sub(1 + relative_depth as usize)
            .ok_or(SinglePassError::Malformed("branch depth".into()))
    }

    /// Pops an `i32` condition into `eax` and puts every other value in
    /// its slot.
    pub(super) fn condition(&mut self) {
        let (value, height) = self.pop();
        self.load_rax(value, height, Size::S32);
        self.flush();
        self.asm.test_rr(Size::S32, Reg::Rax, Reg::Rax);
    }

    pub(super) fn block_arity(&self, ty: BlockType) -> Result<(usize, usize), SinglePassError> {
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

    pub(super) fn push_control(&mut self, control: Control) -> Result<(), SinglePassError> {
        if self.controls.len() >= self.env.max_nesting {
            return Err(SinglePassError::Limit("blocks nested too deeply".into()));
        }
        self.controls.push(control);
        Ok(())
    }

    pub(super) fn else_(&mut self) {
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

    pub(super) fn end(&mut self) -> Result<(), SinglePassError> {
        let Some(control) = self.controls.pop() else {
            return Ok(());
        };
        let mut reached = control.end_reached;
        if !self.unreachable {
            reached = true;
            if control.kind == Kind::Function {
                // The result straight into `rax`, where the exit wants it;
                // the other values are dead.
                if control.results > 0 {
                    let (value, height) = self.pop();
                    self.load(Reg::Rax, value, height, Size::S64);
                }
            } else {
                self.flush();
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
