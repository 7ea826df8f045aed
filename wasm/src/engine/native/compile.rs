//! A validated module to x86_64 machine code, one function at a time.
//!
//! Each function goes to the single-pass compiler ([`super::single_pass`])
//! or to Cranelift (`cranelift-codegen`, no_std) fed by our own
//! translation ([`super::translate`]), as [`Backend`] says; an export
//! with floats gets an integer entry ([`super::integer_entry`]) after
//! them. Every function is compiled
//! position-independent: calls go through the context's function table,
//! so the code has no relocations (a relocation in the output is refused,
//! not patched), and code pages can be mapped anywhere.

use alloc::{format, string::String, vec::Vec};

use cranelift_codegen::{
    control::ControlPlane,
    ir::{Function, UserFuncName},
    isa::{self, OwnedTargetIsa},
    settings::{self, Configurable},
    Context,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use spindle_abi::Import;
use wasmparser::{Parser, Payload, TypeRef};

use super::{
    integer_entry,
    single_pass::{self, SinglePassError},
    translate::{self, ModuleEnv, TranslateError},
};
use crate::module::{FuncType, ModuleInfo, WasmType};

/// Bounds on what the compiler accepts, so an adversarial module is refused
/// in bounded time and memory instead of exhausting the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompileLimits {
    /// Largest function body, in bytes.
    pub function_bytes: usize,
    /// Most locals of one function (parameters excluded).
    pub locals: u32,
    /// Deepest block nesting.
    pub nesting: usize,
    /// Most types in the type section.
    pub types: usize,
    /// Most machine code for the whole module, in bytes.
    pub code_bytes: usize,
    /// Largest stack frame of one function, in bytes. A function writes
    /// its frame (spilling its parameters, say) before its stack-limit
    /// check runs, so this bounds how far below the limit generated code
    /// can reach (`entry::STACK_BUDGET_BYTES` says how the two add up).
    pub frame_bytes: u32,
    /// Whether Cranelift optimizes (`opt_level = "speed"`) or not
    /// (`"none"`: faster compilation, slower code; `ext.compile_50k`
    /// measures both).
    pub optimize: bool,
    /// Whether registers are allocated in one pass (`regalloc_algorithm =
    /// "single_pass"`: faster compilation, more spills) instead of by
    /// backtracking.
    pub single_pass_registers: bool,
    /// Whether Cranelift's IR verifier checks every function before code
    /// generation (an ill-formed translation is then an error, not code).
    pub verify: bool,
    /// Which compiler compiles each function.
    pub backend: Backend,
}

/// Which compiler compiles a function (both generate the same contract,
/// so one module can mix them: see [`super::single_pass`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Cranelift for every function.
    Cranelift,
    /// The single-pass compiler for every function it handles, loops
    /// included; Cranelift for the rest (for tests of the single-pass
    /// compiler).
    SinglePass,
    /// The kernel's choice: the single-pass compiler for functions
    /// without loops (each operator runs once per call, so compiling fast
    /// matters more than optimizing), Cranelift for functions with loops
    /// and for what the single-pass compiler does not handle.
    Mixed,
}

impl Default for CompileLimits {
    fn default() -> Self {
        CompileLimits {
            function_bytes: 128 * 1024,
            locals: 4096,
            nesting: 256,
            types: 4096,
            code_bytes: 4 << 20,
            frame_bytes: 8 * 1024,
            optimize: true,
            single_pass_registers: false,
            verify: true,
            backend: Backend::Mixed,
        }
    }
}

/// Why a module was not compiled (it can still run on the interpreter).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompileError {
    /// Something the native tier does not translate yet.
    Unsupported(String),
    /// A [`CompileLimits`] bound was exceeded.
    Limit(String),
    /// Cranelift refused the function (a bug in the translation) or the
    /// module could not be read.
    Internal(String),
}

impl core::fmt::Display for CompileError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CompileError::Unsupported(what) => write!(f, "not compiled yet: {what}"),
            CompileError::Limit(what) => write!(f, "over a compile limit: {what}"),
            CompileError::Internal(what) => write!(f, "code generation failed: {what}"),
        }
    }
}

impl From<TranslateError> for CompileError {
    fn from(error: TranslateError) -> Self {
        match error {
            TranslateError::Unsupported(what) => CompileError::Unsupported(what),
            TranslateError::Limit(what) => CompileError::Limit(what),
            TranslateError::Malformed(what) => CompileError::Internal(what),
        }
    }
}

/// The machine code of one defined function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompiledFunction {
    /// Offset of its first instruction in [`CompiledModule::code`].
    pub offset: usize,
    /// Bytes of code.
    pub len: usize,
    /// Whether its code uses the x87/SSE registers (a float value
    /// anywhere in it): entries that can reach it keep the interrupted
    /// thread's (`hal::native_code::keeping_fpu_state`).
    pub uses_floats: bool,
}

/// A module's machine code, ready to be copied into code memory.
#[derive(Clone, Debug, Default)]
pub struct CompiledModule {
    /// Every defined function's code, each starting 16-byte aligned.
    pub code: Vec<u8>,
    /// Where each defined function is, by defined-function index.
    pub functions: Vec<CompiledFunction>,
    /// The canonical signature id of each type (see `vmctx::TABLE_BASE`).
    pub signature_ids: Vec<u32>,
    /// Whether some function calls the runtime's memory procedures.
    pub calls_runtime: bool,
    /// Whether some function uses floats ([`CompiledFunction::uses_floats`]).
    pub uses_floats: bool,
    /// How many functions the single-pass compiler compiled (Cranelift
    /// the others).
    pub single_pass_functions: usize,
    /// The kernel procedure each import was compiled for (found by its
    /// name), whose trap check after a call was left out if it cannot
    /// trap (`host::may_trap`); `Layout::new` refuses an instance whose
    /// imports resolved otherwise.
    pub imports: Vec<Option<Import>>,
    /// The integer entry of each exported function that takes or returns
    /// a float (see [`super::integer_entry`]): (function index, offset of
    /// the entry's code).
    pub integer_entries: Vec<(u32, usize)>,
}

/// The bytes Cranelift's x86_64 prologue takes off the stack pointer:
/// `push rbp; mov rbp, rsp` then `sub rsp, imm` (its frame and
/// callee-saved registers). A function without that prologue has no frame
/// beyond its return address.
fn prologue_frame_bytes(code: &[u8]) -> u32 {
    const FRAME_SETUP: [u8; 4] = [0x55, 0x48, 0x89, 0xe5];
    const SUB_RSP_IMM8: [u8; 3] = [0x48, 0x83, 0xec];
    const SUB_RSP_IMM32: [u8; 3] = [0x48, 0x81, 0xec];
    if code.get(..4) != Some(&FRAME_SETUP[..]) {
        return 0;
    }
    match code.get(4..7) {
        Some(op) if op == SUB_RSP_IMM8 => code.get(7).map_or(0, |&imm| u32::from(imm)),
        Some(op) if op == SUB_RSP_IMM32 => code.get(7..11).map_or(u32::MAX, |imm| {
            u32::from_le_bytes([imm[0], imm[1], imm[2], imm[3]])
        }),
        _ => 0,
    }
}

/// The compiler: a configured Cranelift target, reused for every module.
pub struct Compiler {
    isa: OwnedTargetIsa,
    limits: CompileLimits,
}

impl Compiler {
    /// A compiler for x86_64 with SSE4.1 (ceil/floor/nearest inline, so no
    /// library calls), optimizing for speed, with Cranelift's IR verifier
    /// on: an ill-formed translation is an error, not bad code.
    pub fn new(limits: CompileLimits) -> Result<Self, CompileError> {
        let mut flags = settings::builder();
        for (name, value) in [
            ("opt_level", if limits.optimize { "speed" } else { "none" }),
            (
                "enable_verifier",
                if limits.verify { "true" } else { "false" },
            ),
            (
                "regalloc_algorithm",
                if limits.single_pass_registers {
                    "single_pass"
                } else {
                    "backtracking"
                },
            ),
            ("enable_multi_ret_implicit_sret", "true"),
            ("enable_probestack", "false"),
            ("is_pic", "true"),
        ] {
            flags
                .set(name, value)
                .map_err(|e| CompileError::Internal(format!("{name}: {e}")))?;
        }
        let mut isa_builder = isa::lookup_by_name("x86_64-unknown-none")
            .map_err(|e| CompileError::Internal(format!("x86_64: {e}")))?;
        for flag in ["has_sse3", "has_ssse3", "has_sse41"] {
            isa_builder
                .enable(flag)
                .map_err(|e| CompileError::Internal(format!("{flag}: {e}")))?;
        }
        let isa = isa_builder
            .finish(settings::Flags::new(flags))
            .map_err(|e| CompileError::Internal(format!("{e}")))?;
        Ok(Compiler { isa, limits })
    }

    /// Compiles every function `bytes` defines (`info` is the kernel's
    /// validated reading of the same bytes).
    pub fn compile(&self, bytes: &[u8], info: &ModuleInfo) -> Result<CompiledModule, CompileError> {
        let mut types: Vec<FuncType> = Vec::new();
        let mut globals: Vec<WasmType> = Vec::new();
        let mut bodies = Vec::new();
        for payload in Parser::new(0).parse_all(bytes) {
            let payload = payload.map_err(|e| CompileError::Internal(e.message().into()))?;
            match payload {
                Payload::TypeSection(reader) => {
                    for ty in reader.into_iter_err_on_gc_types() {
                        let ty = ty.map_err(|e| CompileError::Internal(e.message().into()))?;
                        types.push(FuncType {
                            params: translate::wasm_types(ty.params()),
                            results: translate::wasm_types(ty.results()),
                        });
                        if types.len() > self.limits.types {
                            return Err(CompileError::Limit("too many types".into()));
                        }
                    }
                }
                Payload::ImportSection(reader) => {
                    for import in reader {
                        let import =
                            import.map_err(|e| CompileError::Internal(e.message().into()))?;
                        if let TypeRef::Global(global) = import.ty {
                            globals.push(global.content_type.into());
                        }
                    }
                }
                Payload::GlobalSection(reader) => {
                    for global in reader {
                        let global =
                            global.map_err(|e| CompileError::Internal(e.message().into()))?;
                        globals.push(global.ty.content_type.into());
                    }
                }
                Payload::CodeSectionEntry(body) => bodies.push(body),
                _ => {}
            }
        }
        let signature_ids = translate::signature_ids(&types);
        let imports: Vec<Option<Import>> = info
            .imports
            .iter()
            .filter(|entry| entry.func_type.is_some())
            .map(|entry| Import::find(&entry.module, &entry.name))
            .collect();
        let imports_may_trap: Vec<bool> = imports
            .iter()
            .map(|import| import.is_none_or(crate::host::may_trap))
            .collect();
        let env = ModuleEnv {
            types: &types,
            signature_ids: &signature_ids,
            functions: &info.function_types,
            imported_functions: info.imported_functions,
            imports_may_trap: &imports_may_trap,
            globals: &globals,
            call_conv: self.isa.default_call_conv(),
            frontend: self.isa.frontend_config(),
            max_locals: self.limits.locals,
            max_nesting: self.limits.nesting,
        };
        let mut module = CompiledModule {
            signature_ids: signature_ids.clone(),
            imports,
            ..CompiledModule::default()
        };
        let mut builder_context = FunctionBuilderContext::new();
        let mut context = Context::new();
        for (defined, body) in bodies.iter().enumerate() {
            let index = info.imported_functions as usize + defined;
            if body.range().len() > self.limits.function_bytes {
                return Err(CompileError::Limit(format!(
                    "function {index} has {} bytes of code",
                    body.range().len()
                )));
            }
            let ty = info
                .function_types
                .get(index)
                .ok_or_else(|| CompileError::Internal("function without a type".into()))?;
            let single_pass = match self.limits.backend {
                Backend::Cranelift => None,
                backend => match single_pass::compile_function(
                    &env,
                    ty,
                    body,
                    self.limits.frame_bytes,
                    backend == Backend::Mixed,
                ) {
                    Ok(function) => Some(function),
                    Err(SinglePassError::Fallback(_)) => None,
                    Err(SinglePassError::Limit(what)) => return Err(CompileError::Limit(what)),
                    Err(SinglePassError::Malformed(what)) => {
                        return Err(CompileError::Internal(what))
                    }
                },
            };
            // The single-pass compiler leaves every float to Cranelift.
            let mut uses_floats = false;
            let code = match &single_pass {
                Some(function) => {
                    module.calls_runtime |= function.calls_runtime;
                    module.single_pass_functions += 1;
                    &function.code[..]
                }
                None => {
                    let signature = translate::signature(ty, env.call_conv)?;
                    context.clear();
                    context.func = Function::with_name_signature(
                        UserFuncName::user(0, index as u32),
                        signature,
                    );
                    let builder = FunctionBuilder::new(&mut context.func, &mut builder_context);
                    module.calls_runtime |= translate::translate(&env, ty, body, builder)?;
                    let dfg = &context.func.dfg;
                    uses_floats = dfg.values().any(|value| dfg.value_type(value).is_float());
                    let compiled = context
                        .compile(&*self.isa, &mut ControlPlane::default())
                        .map_err(|e| {
                            CompileError::Internal(format!("function {index}: {:?}", e.inner))
                        })?;
                    if !compiled.buffer.relocs().is_empty() {
                        return Err(CompileError::Internal(format!(
                            "function {index} needs relocations"
                        )));
                    }
                    let code = compiled.code_buffer();
                    let frame = prologue_frame_bytes(code);
                    if frame > self.limits.frame_bytes {
                        return Err(CompileError::Limit(format!(
                            "function {index} needs a {frame}-byte stack frame"
                        )));
                    }
                    code
                }
            };
            while !module.code.len().is_multiple_of(16) {
                // int3 between functions.
                module.code.push(0xcc);
            }
            module.functions.push(CompiledFunction {
                offset: module.code.len(),
                len: code.len(),
                uses_floats,
            });
            module.uses_floats |= uses_floats;
            module.code.extend_from_slice(code);
            if module.code.len() > self.limits.code_bytes {
                return Err(CompileError::Limit("too much machine code".into()));
            }
        }
        self.compile_integer_entries(info, &env, &mut module, &mut context, &mut builder_context)?;
        Ok(module)
    }

    /// Compiles the integer entry of every exported function that takes
    /// or returns a float, and the runtime can enter (at most
    /// `ENTRY_ARGUMENTS` parameters, at most one result, no reference),
    /// after the functions in `module`.
    fn compile_integer_entries(
        &self,
        info: &ModuleInfo,
        env: &ModuleEnv<'_>,
        module: &mut CompiledModule,
        context: &mut Context,
        builder_context: &mut FunctionBuilderContext,
    ) -> Result<(), CompileError> {
        for export in &info.exports {
            let Some(index) = export.function else {
                continue;
            };
            let Some(ty) = info.function_type(index) else {
                continue;
            };
            let enterable = ty.params.len() <= hal::native_code::ENTRY_ARGUMENTS
                && ty.results.len() <= 1
                && ty
                    .params
                    .iter()
                    .chain(&ty.results)
                    .all(|ty| *ty != WasmType::Other);
            if index < info.imported_functions
                || !enterable
                || !integer_entry::needs_integer_entry(ty)
                || module
                    .integer_entries
                    .iter()
                    .any(|&(done, _)| done == index)
            {
                continue;
            }
            context.clear();
            context.func = Function::with_name_signature(
                UserFuncName::user(1, index),
                integer_entry::signature(ty, env.call_conv),
            );
            let builder = FunctionBuilder::new(&mut context.func, builder_context);
            integer_entry::build(ty, index, env, builder)?;
            let compiled = context
                .compile(&*self.isa, &mut ControlPlane::default())
                .map_err(|e| {
                    CompileError::Internal(format!("the entry of function {index}: {:?}", e.inner))
                })?;
            if !compiled.buffer.relocs().is_empty() {
                return Err(CompileError::Internal(format!(
                    "the entry of function {index} needs relocations"
                )));
            }
            while !module.code.len().is_multiple_of(16) {
                module.code.push(0xcc);
            }
            module.integer_entries.push((index, module.code.len()));
            module.code.extend_from_slice(compiled.code_buffer());
            if module.code.len() > self.limits.code_bytes {
                return Err(CompileError::Limit("too much machine code".into()));
            }
        }
        Ok(())
    }
}
