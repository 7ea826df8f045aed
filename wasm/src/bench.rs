//! Fixtures for the extension benchmarks, shared by the host benchmark
//! (`cargo run --release -p wasm-runtime --example bench`) and the in-QEMU
//! suite (`./x bench ext`): the kernel passes the bytes of
//! `target/extensions/bench.wasm` and `big.wasm`.
//!
//! What each measures:
//! - [`Fixture::raise`] with [`Fixture::bind_handler`]: raising an event
//!   whose only handler is an empty Wasm function;
//! - the same after [`Fixture::bind_handler_and_guard`]: plus a Wasm guard;
//! - [`Fixture::null_calls`]: `n` Wasm-to-kernel calls of an empty
//!   procedure in one invocation (divide by `n`);
//! - [`load`]: load + validate + link + instantiate of a module (`big`).

use alloc::sync::Arc;

use dispatch::{Authority, BindingId, Event, Principal, Value};

use crate::{
    events::port, Bind, BindError, CallError, EventPort, ExportRef, Extension, LoadError,
    LoadRequest, Runtime, WasmValue,
};

/// Arguments of `Bench.Event`.
pub type BenchArgs = (u64,);

fn no_intrinsic(_: &BenchArgs) {}

/// An extension bound to `Bench.Event(u64)`.
pub struct Fixture {
    /// The event raised by the benchmark.
    pub event: Arc<Event<BenchArgs, ()>>,
    /// Its authority.
    pub authority: Authority,
    /// The event as extensions see it.
    pub port: Arc<dyn EventPort>,
    /// The bench extension.
    pub extension: Extension,
    null_calls: ExportRef,
}

impl Fixture {
    /// Loads the bench extension (`extensions/bench`) into `runtime` and
    /// creates `Bench.Event` without handlers.
    pub fn new(runtime: &Runtime, bench_wasm: &[u8]) -> Result<Fixture, LoadError> {
        let (event, authority) = Event::new("Bench.Event", no_intrinsic as fn(&BenchArgs));
        let event = Arc::new(event);
        // The intrinsic handler is removed so a raise runs the Wasm handler
        // alone (not an error: the kernel removes its own installation).
        let _ = event.remove(Principal::KERNEL, BindingId::INTRINSIC);
        let port = port(event.clone());
        let extension = runtime.load(LoadRequest::new("bench", bench_wasm))?;
        let null_calls = extension
            .resolve("null_calls")
            .map_err(|e| LoadError::InitFaulted(alloc::format!("{e}")))?;
        Ok(Fixture {
            event,
            authority,
            port,
            extension,
            null_calls,
        })
    }

    /// Installs the empty Wasm handler.
    pub fn bind_handler(&self) -> Result<BindingId, BindError> {
        self.extension.bind(&self.port, &Bind::handler("handler"))
    }

    /// Installs the empty Wasm handler with the Wasm guard.
    pub fn bind_handler_and_guard(&self) -> Result<BindingId, BindError> {
        self.extension
            .bind(&self.port, &Bind::handler("handler").guard("guard"))
    }

    /// Removes an installation.
    pub fn unbind(&self, binding: BindingId) -> Result<(), BindError> {
        self.extension.unbind(&self.port, binding)
    }

    /// Raises `Bench.Event(value)`; `false` if no handler completed.
    #[inline]
    pub fn raise(&self, value: u64) -> bool {
        self.event.raise(&mut (value,)).is_ok()
    }

    /// One invocation making `n` empty kernel calls.
    pub fn null_calls(&self, n: u32) -> Result<(), CallError> {
        self.extension
            .call_resolved(self.null_calls, &[WasmValue::I32(n as i32)])
            .map(drop)
    }

    /// One call of the exported handler directly (no dispatcher): the
    /// kernel-to-Wasm call cost.
    pub fn call_handler(&self) -> Result<(), CallError> {
        self.extension.call("handler", &[Value::U64(1)]).map(drop)
    }
}

/// Loads (validates, links, instantiates) and unloads a module: one
/// iteration of the load benchmark.
pub fn load(runtime: &Runtime, bytes: &[u8]) -> Result<(), LoadError> {
    let extension = runtime.load(LoadRequest::new("load-bench", bytes))?;
    // Unloading cannot be busy: nothing else knows this extension.
    let _ = extension.unload();
    Ok(())
}
