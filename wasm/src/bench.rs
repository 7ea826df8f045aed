//! Fixtures for the extension benchmarks, shared by the host benchmark
//! (`cargo run --release -p wasm-runtime --example bench`) and the in-QEMU
//! suite (`./x bench ext`): the kernel passes the bytes of
//! `target/extensions/bench.wasm` and `big.wasm`.
//!
//! What each measures:
//! - [`Fixture::raise_cached`] with [`Fixture::bind_handler`]: raising an
//!   event whose only handler is an empty Wasm function (through a raise
//!   cache, as the kernel's hot paths do; [`Fixture::raise`] without);
//! - the same after [`Fixture::bind_handler_and_guard`]: plus a Wasm guard;
//! - the same after [`Fixture::bind_handler_and_state_guard`]: the guard
//!   reads a limit from the extension's memory (set by
//!   [`Fixture::set_limit`]; read-only, so without the lock on native
//!   code);
//! - the same after [`Fixture::bind_counter`]: a handler that adds the
//!   event's value to a total in its linear memory (what real handlers
//!   do: it takes the instance lock), read back by [`Fixture::total`];
//! - [`Fixture::null_calls`]: `n` Wasm-to-kernel calls of an empty
//!   procedure in one invocation (divide by `n`);
//! - [`load`]: load + validate + link + instantiate of a module (`big`);
//! - [`Fixture::checksum`]: the RFC 1071 checksum of the 1,500-byte
//!   [`packet`] in Wasm, against [`checksum`], the same function in Rust.

use alloc::sync::Arc;

use dispatch::{Authority, BindingId, Event, Principal, RaiseCache, Value};

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
    checksum: ExportRef,
}

impl Fixture {
    /// Loads the bench extension (`extensions/bench`) into `runtime` and
    /// creates `Bench.Event` without handlers.
    pub fn new(runtime: &Runtime, bench_wasm: &[u8]) -> Result<Fixture, LoadError> {
        Fixture::load(runtime, LoadRequest::new("bench", bench_wasm))
    }

    /// The same, loading `request` (for a tier pinned by the request).
    pub fn load(runtime: &Runtime, request: LoadRequest<'_>) -> Result<Fixture, LoadError> {
        let (event, authority) = Event::new("Bench.Event", no_intrinsic as fn(&BenchArgs));
        let event = Arc::new(event);
        // The intrinsic handler is removed so a raise runs the Wasm handler
        // alone (not an error: the kernel removes its own installation).
        let _ = event.remove(Principal::KERNEL, BindingId::INTRINSIC);
        let port = port(event.clone());
        let extension = runtime.load(request)?;
        let resolve = |name: &str| {
            extension
                .resolve(name)
                .map_err(|e| LoadError::InitFaulted(alloc::format!("{e}")))
        };
        let null_calls = resolve("null_calls")?;
        let checksum = resolve("checksum")?;
        Ok(Fixture {
            event,
            authority,
            port,
            extension,
            null_calls,
            checksum,
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

    /// Installs the empty Wasm handler behind the guard that reads the
    /// extension's limit (`below_limit`: values below it hold).
    pub fn bind_handler_and_state_guard(&self) -> Result<BindingId, BindError> {
        self.extension
            .bind(&self.port, &Bind::handler("handler").guard("below_limit"))
    }

    /// Sets the limit the state guard compares with (a locked call).
    pub fn set_limit(&self, limit: u64) -> Result<(), CallError> {
        self.extension
            .call("set_limit", &[Value::U64(limit)])
            .map(|_| ())
    }

    /// Installs the empty Wasm handler behind the guard that reads the
    /// clock (`before_deadline`: holds while `spindle.timer_now_ns` is
    /// before the extension's deadline).
    pub fn bind_handler_and_clock_guard(&self) -> Result<BindingId, BindError> {
        self.extension.bind(
            &self.port,
            &Bind::handler("handler").guard("before_deadline"),
        )
    }

    /// Sets the deadline the clock guard compares with, in nanoseconds
    /// since boot (a locked call).
    pub fn set_deadline(&self, deadline_ns: u64) -> Result<(), CallError> {
        self.extension
            .call("set_deadline", &[Value::U64(deadline_ns)])
            .map(|_| ())
    }

    /// Installs the counting Wasm handler (`count`).
    pub fn bind_counter(&self) -> Result<BindingId, BindError> {
        self.extension.bind(&self.port, &Bind::handler("count"))
    }

    /// What the counting handler added up.
    pub fn total(&self) -> Result<u64, CallError> {
        match self.extension.call("total", &[])? {
            Some(WasmValue::I64(total)) => Ok(total as u64),
            _ => Err(CallError::Type("total returned no i64".into())),
        }
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

    /// [`Fixture::raise`] as the kernel's hot paths raise (system calls,
    /// packets): through the raiser's own cache of the handler list.
    #[inline]
    pub fn raise_cached(&self, cache: &mut RaiseCache<BenchArgs, ()>, value: u64) -> bool {
        self.event.raise_cached(cache, &mut (value,)).is_ok()
    }

    /// One invocation making `n` empty kernel calls.
    pub fn null_calls(&self, n: u32) -> Result<(), CallError> {
        self.extension
            .call_resolved(self.null_calls, &[WasmValue::I32(n as i32)])
            .map(drop)
    }

    /// The Wasm checksum of the first `len` bytes of [`packet`].
    pub fn checksum(&self, len: u32) -> Result<u16, CallError> {
        match self
            .extension
            .call_resolved(self.checksum, &[WasmValue::I32(len as i32)])?
        {
            Some(WasmValue::I32(sum)) => Ok(sum as u16),
            _ => Err(CallError::Type("checksum returned no i32".into())),
        }
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

/// Bytes of the checksum benchmark's packet (an Ethernet MTU).
pub const PACKET_BYTES: usize = 1500;

/// The checksum benchmark's packet: the bytes the bench extension builds
/// the same way (`extensions/bench`).
pub const fn packet() -> [u8; PACKET_BYTES] {
    let mut bytes = [0u8; PACKET_BYTES];
    let mut at = 0;
    while at < PACKET_BYTES {
        bytes[at] = (at.wrapping_mul(7).wrapping_add(13) ^ (at >> 3)) as u8;
        at += 1;
    }
    bytes
}

/// The RFC 1071 Internet checksum of `bytes` (the bench extension's
/// `checksum` in Rust: the native baseline of `ext.checksum_1500`).
pub fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut pairs = bytes.chunks_exact(2);
    for pair in &mut pairs {
        sum += u32::from(u16::from_be_bytes([pair[0], pair[1]]));
    }
    if let [last] = pairs.remainder() {
        sum += u32::from(*last) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}
