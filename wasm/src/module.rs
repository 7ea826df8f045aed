//! The kernel's own reading of a module: complete validation and the facts
//! the runtime needs (imports, exports, function types, memory, code).
//!
//! The kernel trusts no compiler (design.md "The mapping"), and it does not
//! trust the engine to validate either: [`ModuleInfo::parse`] runs
//! wasmparser's validator over every section and every function body with a
//! fixed feature set ([`features`]), whatever engine later runs the module.
//! While it walks the code it records, per function, what the guard purity
//! check ([`crate::purity`]) needs: the first side effect and the calls.

use alloc::{
    format,
    string::{String, ToString},
    vec::Vec,
};

use wasmparser::{
    ExternalKind, FuncValidatorAllocations, Parser, Payload, TypeRef, ValType, Validator,
    WasmFeatures,
};

use crate::{error::LoadError, purity::FunctionEffects};

/// The WebAssembly features extensions may use: what Rust's and clang's
/// `wasm32` targets emit by default, and no more. Threads, SIMD, memory64,
/// multiple memories, exceptions and GC are refused; the guard purity check
/// relies on this list (it knows every state-changing instruction these
/// features have).
pub fn features() -> WasmFeatures {
    let mut features = WasmFeatures::empty();
    for feature in [
        WasmFeatures::MUTABLE_GLOBAL,
        WasmFeatures::SATURATING_FLOAT_TO_INT,
        WasmFeatures::SIGN_EXTENSION,
        WasmFeatures::MULTI_VALUE,
        WasmFeatures::BULK_MEMORY,
        WasmFeatures::REFERENCE_TYPES,
        // Required by reference types in this wasmparser version.
        WasmFeatures::GC_TYPES,
        WasmFeatures::TAIL_CALL,
        WasmFeatures::EXTENDED_CONST,
        WasmFeatures::FLOATS,
    ] {
        features.insert(feature);
    }
    features
}

/// A Wasm value type as the runtime sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WasmType {
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// A reference or vector type: never part of an event or kernel
    /// procedure signature.
    Other,
}

impl From<ValType> for WasmType {
    fn from(ty: ValType) -> Self {
        match ty {
            ValType::I32 => WasmType::I32,
            ValType::I64 => WasmType::I64,
            ValType::F32 => WasmType::F32,
            ValType::F64 => WasmType::F64,
            _ => WasmType::Other,
        }
    }
}

impl From<spindle_abi::WasmType> for WasmType {
    fn from(ty: spindle_abi::WasmType) -> Self {
        match ty {
            spindle_abi::WasmType::I32 => WasmType::I32,
            spindle_abi::WasmType::I64 => WasmType::I64,
        }
    }
}

/// A function type.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FuncType {
    /// Parameter types.
    pub params: Vec<WasmType>,
    /// Result types.
    pub results: Vec<WasmType>,
}

impl core::fmt::Display for FuncType {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:?} -> {:?}", self.params, self.results)
    }
}

/// One import of the module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportEntry {
    /// Import module (a domain name in the nameserver).
    pub module: String,
    /// Import name (a symbol of that domain).
    pub name: String,
    /// `Some(type)` for functions; `None` for memories, tables, globals
    /// (which extensions may not import).
    pub func_type: Option<FuncType>,
}

/// One export of the module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportEntry {
    /// Export name.
    pub name: String,
    /// `Some(function index)` for functions.
    pub function: Option<u32>,
}

/// What the kernel knows about a validated module.
#[derive(Clone, Debug, Default)]
pub struct ModuleInfo {
    /// Imports, in order (imported functions come first in the function
    /// index space).
    pub imports: Vec<ImportEntry>,
    /// Exports.
    pub exports: Vec<ExportEntry>,
    /// Type of every function, imported and defined, by function index.
    pub function_types: Vec<FuncType>,
    /// Number of imported functions.
    pub imported_functions: u32,
    /// Declared initial and maximum linear memory, in 64 KiB pages.
    pub memory_pages: Option<(u64, Option<u64>)>,
    /// Side effects and calls of each defined function (index minus
    /// `imported_functions`).
    pub effects: Vec<FunctionEffects>,
}

impl ModuleInfo {
    /// Validates `bytes` completely and reads what the runtime needs.
    pub fn parse(bytes: &[u8]) -> Result<ModuleInfo, LoadError> {
        let mut validator = Validator::new_with_features(features());
        let mut allocations = FuncValidatorAllocations::default();
        let mut info = ModuleInfo::default();
        let mut types: Vec<FuncType> = Vec::new();
        let mut saw_version = false;
        for payload in Parser::new(0).parse_all(bytes) {
            let payload = payload.map_err(invalid)?;
            let valid = validator.payload(&payload).map_err(invalid)?;
            // Sections are read only after the validator accepted them.
            match &payload {
                Payload::Version { .. } => saw_version = true,
                Payload::TypeSection(reader) => {
                    for ty in reader.clone().into_iter_err_on_gc_types() {
                        let ty = ty.map_err(invalid)?;
                        types.push(FuncType {
                            params: ty.params().iter().map(|&t| t.into()).collect(),
                            results: ty.results().iter().map(|&t| t.into()).collect(),
                        });
                    }
                }
                Payload::ImportSection(reader) => {
                    for import in reader.clone() {
                        let import = import.map_err(invalid)?;
                        let func_type = match import.ty {
                            TypeRef::Func(index) => {
                                let ty = type_at(&types, index)?;
                                info.function_types.push(ty.clone());
                                info.imported_functions += 1;
                                Some(ty)
                            }
                            _ => None,
                        };
                        info.imports.push(ImportEntry {
                            module: import.module.to_string(),
                            name: import.name.to_string(),
                            func_type,
                        });
                    }
                }
                Payload::FunctionSection(reader) => {
                    for index in reader.clone() {
                        let ty = type_at(&types, index.map_err(invalid)?)?;
                        info.function_types.push(ty);
                    }
                }
                Payload::MemorySection(reader) => {
                    for memory in reader.clone() {
                        let memory = memory.map_err(invalid)?;
                        info.memory_pages = Some((memory.initial, memory.maximum));
                    }
                }
                Payload::ExportSection(reader) => {
                    for export in reader.clone() {
                        let export = export.map_err(invalid)?;
                        info.exports.push(ExportEntry {
                            name: export.name.to_string(),
                            function: (export.kind == ExternalKind::Func).then_some(export.index),
                        });
                    }
                }
                Payload::CodeSectionEntry(body) => {
                    info.effects
                        .push(FunctionEffects::scan(body).map_err(invalid)?);
                }
                _ => {}
            }
            if let wasmparser::ValidPayload::Func(function, body) = valid {
                let mut function = function.into_validator(allocations);
                function.validate(&body).map_err(invalid)?;
                allocations = function.into_allocations();
            }
        }
        if !saw_version {
            return Err(LoadError::Invalid {
                offset: 0,
                message: "empty module".into(),
            });
        }
        Ok(info)
    }

    /// The function exported as `name`.
    pub fn exported_function(&self, name: &str) -> Option<u32> {
        self.exports
            .iter()
            .find(|export| export.name == name)
            .and_then(|export| export.function)
    }

    /// The type of function `index`.
    pub fn function_type(&self, index: u32) -> Option<&FuncType> {
        self.function_types.get(index as usize)
    }

    /// The effects of function `index`, if it is defined by the module.
    pub fn effects_of(&self, index: u32) -> Option<&FunctionEffects> {
        index
            .checked_sub(self.imported_functions)
            .and_then(|defined| self.effects.get(defined as usize))
    }
}

fn type_at(types: &[FuncType], index: u32) -> Result<FuncType, LoadError> {
    types
        .get(index as usize)
        .cloned()
        .ok_or_else(|| LoadError::Invalid {
            offset: 0,
            message: format!("type index {index} out of range"),
        })
}

fn invalid(error: wasmparser::BinaryReaderError) -> LoadError {
    LoadError::Invalid {
        offset: error.offset(),
        message: error.message().to_string(),
    }
}
