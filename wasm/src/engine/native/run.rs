//! Running compiled code on the host, for the differential tests: a module
//! without imports, its memory, globals and table set up from constant
//! initializers, and its exports called with integer arguments.
//!
//! This is the first half of the future `NativeEngine`: what it does not
//! do yet (imports, the runtime's memory procedures, float arguments,
//! several results) it refuses.

use alloc::{format, string::String, vec, vec::Vec};

use hal::native_code::CodeMemory;
use wasmparser::{DataKind, ElementItems, ElementKind, Operator, Parser, Payload};

use super::{
    compile::{CompiledModule, Compiler},
    vmctx::{self, TrapCode},
};
use crate::{
    config::WASM_PAGE_BYTES,
    module::{ModuleInfo, WasmType},
};

/// A compiled module ready to run.
pub struct NativeModule {
    code: CodeMemory,
    compiled: CompiledModule,
    info: ModuleInfo,
    context: Vec<u64>,
    memory: Vec<u8>,
    globals: Vec<u64>,
    functions: Vec<u64>,
    table: Vec<u64>,
    max_depth: u32,
}

fn refuse(what: &str) -> String {
    format!("not run natively yet: {what}")
}

/// The value of a constant expression (`i32/i64/f32/f64.const`).
fn constant(expression: &wasmparser::ConstExpr<'_>) -> Result<u64, String> {
    let mut reader = expression.get_operators_reader();
    let value = match reader.read().map_err(|e| String::from(e.message()))? {
        Operator::I32Const { value } => u64::from(value as u32),
        Operator::I64Const { value } => value as u64,
        Operator::F32Const { value } => u64::from(value.bits()),
        Operator::F64Const { value } => value.bits(),
        _ => return Err(refuse("a non-constant initializer")),
    };
    Ok(value)
}

impl NativeModule {
    /// Compiles and sets up `bytes` (validated as `info`), with calls
    /// nested at most `max_depth` deep.
    pub fn new(
        compiler: &Compiler,
        bytes: &[u8],
        info: &ModuleInfo,
        max_depth: u32,
    ) -> Result<NativeModule, String> {
        if info.imported_functions > 0 || info.imports.len() > 0 {
            return Err(refuse("imports"));
        }
        let compiled = compiler.compile(bytes, info).map_err(|e| format!("{e}"))?;
        if compiled.calls_runtime {
            return Err(refuse("memory.grow, memory.copy or memory.fill"));
        }
        let code = CodeMemory::new(&compiled.code).ok_or_else(|| refuse("no code memory"))?;
        let pages = info.memory_pages.map_or(0, |(initial, _)| initial);
        let mut memory = vec![0u8; (pages * WASM_PAGE_BYTES) as usize];
        let mut globals = Vec::new();
        let mut table: Vec<u64> = Vec::new();
        let mut function_types = Vec::new();
        for payload in Parser::new(0).parse_all(bytes) {
            let payload = payload.map_err(|e| String::from(e.message()))?;
            match payload {
                Payload::FunctionSection(reader) => {
                    for index in reader {
                        function_types.push(index.map_err(|e| String::from(e.message()))?);
                    }
                }
                Payload::TableSection(reader) => {
                    for table_type in reader {
                        let table_type = table_type.map_err(|e| String::from(e.message()))?;
                        if table.is_empty() {
                            let elements = table_type.ty.initial as usize;
                            table = vec![0; elements * 2];
                            for element in 0..elements {
                                table[element * 2] = u64::from(vmctx::NULL_SIGNATURE);
                            }
                        }
                    }
                }
                Payload::GlobalSection(reader) => {
                    for global in reader {
                        let global = global.map_err(|e| String::from(e.message()))?;
                        globals.push(constant(&global.init_expr)?);
                    }
                }
                Payload::ElementSection(reader) => {
                    for element in reader {
                        let element = element.map_err(|e| String::from(e.message()))?;
                        let ElementKind::Active {
                            table_index,
                            offset_expr,
                        } = element.kind
                        else {
                            continue;
                        };
                        if table_index.unwrap_or(0) != 0 {
                            return Err(refuse("tables other than 0"));
                        }
                        let ElementItems::Functions(items) = element.items else {
                            return Err(refuse("element expressions"));
                        };
                        let start = constant(&offset_expr)? as u32 as usize;
                        for (at, function) in items.into_iter().enumerate() {
                            let function = function.map_err(|e| String::from(e.message()))?;
                            let slot = start + at;
                            let type_index = *function_types
                                .get(function as usize)
                                .ok_or_else(|| refuse("element function"))?;
                            let signature = compiled.signature_ids[type_index as usize];
                            let offset = compiled.functions[function as usize].offset;
                            let entry = table
                                .get_mut(slot * 2..slot * 2 + 2)
                                .ok_or_else(|| refuse("element outside the table"))?;
                            entry[0] = u64::from(signature);
                            entry[1] = code.address(offset).unwrap_or(0);
                        }
                    }
                }
                Payload::DataSection(reader) => {
                    for data in reader {
                        let data = data.map_err(|e| String::from(e.message()))?;
                        if let DataKind::Active { offset_expr, .. } = data.kind {
                            let start = constant(&offset_expr)? as u32 as usize;
                            memory
                                .get_mut(start..start + data.data.len())
                                .ok_or_else(|| refuse("data outside memory"))?
                                .copy_from_slice(data.data);
                        }
                    }
                }
                _ => {}
            }
        }
        let functions = compiled
            .functions
            .iter()
            .map(|function| code.address(function.offset).unwrap_or(0))
            .collect();
        Ok(NativeModule {
            code,
            compiled,
            info: info.clone(),
            context: vec![0; vmctx::CONTEXT_BYTES / 8],
            memory,
            globals,
            functions,
            table,
            max_depth,
        })
    }

    /// Linear memory as it is now.
    pub fn memory(&self) -> &[u8] {
        &self.memory
    }

    /// Calls the exported function `name` with integer `arguments` and
    /// `fuel`: its result (an `i32` zero-extended), or the trap.
    pub fn call(
        &mut self,
        name: &str,
        arguments: &[i64],
        fuel: u64,
    ) -> Result<Result<Option<i64>, TrapCode>, String> {
        let index = self
            .info
            .exported_function(name)
            .ok_or_else(|| refuse("no such export"))?;
        let ty = self
            .info
            .function_type(index)
            .ok_or_else(|| refuse("no type"))?;
        let integer = |t: &WasmType| matches!(t, WasmType::I32 | WasmType::I64);
        if arguments.len() != ty.params.len()
            || arguments.len() > 4
            || !ty.params.iter().all(integer)
            || ty.results.len() > 1
            || !ty.results.iter().all(integer)
        {
            return Err(refuse("this signature"));
        }
        let result_type = ty.results.first().copied();
        let offset = self.compiled.functions[index as usize].offset;
        let mut padded = [0i64; 4];
        padded[..arguments.len()].copy_from_slice(arguments);
        let context = &mut self.context;
        context[(vmctx::MEMORY_BASE / 8) as usize] = self.memory.as_mut_ptr() as u64;
        context[(vmctx::MEMORY_BYTES / 8) as usize] = self.memory.len() as u64;
        context[(vmctx::FUEL / 8) as usize] = fuel.min(i64::MAX as u64);
        // TRAP (low half) and DEPTH (high half) both start at zero.
        context[(vmctx::TRAP / 8) as usize] = 0;
        // MAX_DEPTH (low half), TABLE_ELEMENTS (high half).
        context[(vmctx::MAX_DEPTH / 8) as usize] =
            u64::from(self.max_depth) | ((self.table.len() as u64 / 2) << 32);
        context[(vmctx::TABLE_BASE / 8) as usize] = self.table.as_ptr() as u64;
        context[(vmctx::FUNCTIONS / 8) as usize] = self.functions.as_ptr() as u64;
        context[(vmctx::GLOBALS / 8) as usize] = self.globals.as_mut_ptr() as u64;
        let raw = self
            .code
            .enter(offset, context, padded)
            .ok_or_else(|| refuse("no code"))?;
        let trap = context[(vmctx::TRAP / 8) as usize] as u32;
        if trap != 0 {
            return Ok(Err(
                TrapCode::from_raw(trap).ok_or_else(|| refuse("trap code"))?
            ));
        }
        Ok(Ok(result_type.map(|t| match t {
            WasmType::I32 => i64::from(raw as i32),
            _ => raw,
        })))
    }
}
