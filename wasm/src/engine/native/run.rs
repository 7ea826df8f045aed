//! Running compiled code on the host, for the differential tests: a module
//! without imports instantiated by the native engine's own code path and
//! its exports called by name with raw arguments, the trap's code
//! returned as generated code stored it.

use alloc::{
    format,
    string::String,
    sync::{Arc, Weak},
    vec::Vec,
};

use dispatch::Principal;

use super::{compile::Compiler, instance::NativeInstance, vmctx::TrapCode};
use crate::{
    config::Limits,
    handles::Handles,
    module::ModuleInfo,
    runtime::{Console, Services},
    state::ExtensionState,
};

/// Drops what a module would log (modules here have no imports).
struct Silent;

impl Console for Silent {
    fn log(&self, _extension: &str, _message: &str) {}
}

/// A compiled module ready to run.
pub struct NativeModule {
    instance: NativeInstance,
}

impl NativeModule {
    /// Compiles and sets up `bytes` (validated as `info`), with calls
    /// nested at most `max_depth` deep; its start function, if any, runs
    /// with a generous fuel.
    pub fn new(
        compiler: &Compiler,
        bytes: &[u8],
        info: &ModuleInfo,
        max_depth: u32,
    ) -> Result<NativeModule, String> {
        if info.imported_functions > 0 || !info.imports.is_empty() {
            return Err("not run natively here: imports".into());
        }
        let compiled = compiler.compile(bytes, info).map_err(|e| format!("{e}"))?;
        let limits = Limits::default();
        let state = ExtensionState {
            name: "test".into(),
            principal: Principal(1),
            handles: Arc::new(Handles::new(Principal(1), limits.handles)),
            installed: Vec::new(),
            services: Arc::new(Services {
                console: Arc::new(Silent),
                clock: None,
                strands: None,
            }),
            limits,
            module: Arc::new(info.clone()),
            pure_imports: Vec::new(),
            extension: Weak::new(),
        };
        let instance = NativeInstance::new(
            &compiled,
            bytes,
            &[],
            state,
            &limits,
            max_depth,
            limits.fuel_per_invocation,
        )?
        .map_err(|trap| format!("the start function trapped: {trap}"))?;
        Ok(NativeModule { instance })
    }

    /// Linear memory as it is now.
    pub fn memory(&self) -> &[u8] {
        self.instance.memory()
    }

    /// Calls the exported function `name` with raw `arguments` (integers,
    /// floats as their bits) and `fuel`: its raw result (an `i32`
    /// sign-extended, a float's bits zero-extended), or the trap.
    pub fn call(
        &mut self,
        name: &str,
        arguments: &[i64],
        fuel: u64,
    ) -> Result<Result<Option<i64>, TrapCode>, String> {
        self.instance.call_raw(name, arguments, fuel)
    }
}
