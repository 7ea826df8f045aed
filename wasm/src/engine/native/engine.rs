//! [`NativeEngine`]: the native-code tier behind [`Engine`]. Each module is
//! compiled by [`Compiler`] at instantiation, copied into W^X code memory
//! and run as [`NativeInstance`]; a module the compiler does not handle yet
//! is refused with [`LoadError::Engine`], and the runtime keeps it on the
//! interpreter (`crate::runtime::Tier`).

use alloc::{boxed::Box, format, sync::Arc};

use spindle_abi::Import;

use super::{
    compile::{CompileError, CompileLimits, Compiler},
    instance::{NativeInstance, Prepared},
};
use crate::{
    config::{EngineConfig, Limits},
    engine::{Engine, Instance, Takeover},
    error::LoadError,
    module::ModuleInfo,
    state::ExtensionState,
};

/// The native-code engine.
pub struct NativeEngine {
    compiler: Compiler,
    max_depth: u32,
}

impl NativeEngine {
    /// An engine with `config`'s call depth and the default compile
    /// limits; `Err` if Cranelift cannot be configured for this machine.
    pub fn new(config: &EngineConfig) -> Result<Self, CompileError> {
        Ok(NativeEngine {
            compiler: Compiler::new(CompileLimits::default())?,
            max_depth: u32::try_from(config.max_call_depth).unwrap_or(u32::MAX),
        })
    }

    /// The compiler (benchmarks time it alone).
    pub fn compiler(&self) -> &Compiler {
        &self.compiler
    }
}

impl Engine for NativeEngine {
    fn instantiate(
        &self,
        bytes: &[u8],
        info: &ModuleInfo,
        imports: &[Import],
        state: ExtensionState,
        limits: &Limits,
        fuel: u64,
    ) -> Result<Box<dyn Instance>, LoadError> {
        let compiled = self
            .compiler
            .compile(bytes, info)
            .map_err(|e| LoadError::Engine(format!("{e}")))?;
        match NativeInstance::new(
            &compiled,
            bytes,
            imports,
            state,
            limits,
            self.max_depth,
            fuel,
        ) {
            Ok(Ok(instance)) => Ok(Box::new(instance)),
            Ok(Err(trap)) => Err(LoadError::InitFaulted(format!("{trap}"))),
            Err(why) => Err(LoadError::Engine(why)),
        }
    }

    fn prepare_takeover(
        &self,
        bytes: &[u8],
        info: &Arc<ModuleInfo>,
        imports: &[Import],
        limits: &Limits,
    ) -> Result<Box<dyn Takeover>, LoadError> {
        let compiled = self
            .compiler
            .compile(bytes, info)
            .map_err(|e| LoadError::Engine(format!("{e}")))?;
        let prepared = Prepared::new(
            &compiled,
            bytes,
            imports,
            info.clone(),
            limits,
            self.max_depth,
        )
        .map_err(LoadError::Engine)?;
        Ok(Box::new(prepared))
    }
}
