//! Spindle's extension runtime (SPIN's "rt"): WebAssembly modules loaded
//! into the kernel, validated by it, linked into domains, bound to events,
//! metered, and contained when they fault.
//!
//! How the kernel uses it:
//! ```text
//! let runtime = Runtime::new(Services { console, clock, strands });
//! let tick = events::port(tick_event.clone());          // Arc<dyn EventPort>
//! let ext = runtime.load(LoadRequest::new("tick-counter", bytes).grant_event(tick.clone()))?;
//! let binding = ext.bind(&tick, &Bind::handler("on_tick").guard("is_even"))?;
//! tick_event.raise(&mut (42,));                          // runs the Wasm handler
//! ext.unload()?;                                         // handlers removed, handles revoked, memory freed
//! ```
//! Extensions can also install handlers themselves through the imported
//! kernel procedures (`spindle.install`, see `spindle_abi`).
//!
//! Modules, lowest first:
//! - [`module`]: the kernel's own complete validation and reading of a module;
//! - [`purity`]: the side-effect check of Wasm guards;
//! - [`config`], [`error`]: limits and errors;
//! - [`engine`]: the seam to the code that executes Wasm ([`engine::wasmi`]);
//! - [`handles`]: the capabilities an extension holds, in `domain`'s
//!   handle table;
//! - [`events`]: events as extensions see them, Wasm handlers and guards;
//! - [`link`]: import resolution against the domains an extension may use;
//! - [`domains`]: the same through the `domain` crate's nameserver, and the
//!   extension's own domain (exports, unresolved imports);
//! - [`packet`]: packets lent to handlers of network events;
//! - [`files`]: directories and files, and the stream service, as
//!   capabilities;
//! - [`host`]: the kernel procedures extensions import;
//! - [`extension`], [`runtime`]: loaded extensions, load and unload;
//! - [`tier`]: which engine runs an extension;
//! - [`mod@bench`]: fixtures for the extension benchmarks.
#![cfg_attr(not(test), no_std)]
// The entry into generated code and its callbacks, the `unsafe` the native
// engine needs, are the `native_entry` crate's.
#![forbid(unsafe_code)]

extern crate alloc;

pub mod bench;
pub mod config;
pub mod domains;
pub mod engine;
pub mod error;
pub mod events;
pub mod extension;
pub mod files;
pub mod handles;
pub mod host;
mod host_files;
pub mod link;
pub mod module;
pub mod packet;
pub mod purity;
pub mod runtime;
mod state;
pub mod tier;

pub use config::{EngineConfig, Limits};
pub use engine::{ExportRef, Trap, WasmValue};
pub use error::{BindError, LimitExceeded, LinkError, LoadError};
pub use events::{port, EventPort};
pub use extension::{
    Bind, CallError, Extension, ExtensionId, ExtensionStats, UnloadError, UnloadReport,
    NESTED_RUN_STACK_BYTES,
};
pub use files::{DirectoryAccess, FileAccess, ListenError, Listening, OpenError, StreamService};
pub use handles::{Capability, EventRights};
pub use link::{ImportAuthorizer, ImportResolver, Importer, KernelInterface};
pub use packet::{PacketAccess, PacketRef, ReplyError};
pub use runtime::{
    Console, FaultedArgs, LoadRequest, Runtime, Services, Strands, COMPILE_STACK_BYTES,
    FAULTED_EVENT,
};
pub use spindle_abi::FaultKind;
pub use state::ExtensionState;
pub use tier::Tier;
