//! Logical protection domains and capabilities (SPIN paper 000 §3.1).
//!
//! "A protection domain defines the set of accessible names available to an
//! execution context." In Spindle a [`Domain`] is a set of typed exported
//! symbols plus the unresolved imports of the code it holds (a Wasm module's
//! imports). The operations are SPIN's (figure 2 of 000):
//!
//! - [`Domain::create`] from a module's [`SymbolTable`] (SPIN: from a safe
//!   object file): exports become the domain's, imports stay unresolved;
//! - [`Domain::create_from_module`]: Rust code exports its own interface
//!   ([`Module`]);
//! - [`Domain::resolve`]`(source, target)`: fills only the target's
//!   unresolved symbols from the source's exports, type-checked, and reports
//!   what is still unresolved;
//! - [`Domain::combine`]`(d1, d2)`: an aggregate exporting both.
//!
//! The [`NameServer`] exports domains under global names and versions; each
//! import consults the exporter's [`ImportAuthorizer`] with the importer's
//! identity. Capabilities handed to code that is not type safe are indices
//! into a per-extension or per-process [`HandleTable`] (SPIN's externalized
//! references), type-checked on every use and protected by generation
//! counters.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod capability;
pub mod linker;
pub mod nameserver;
pub mod symbol;

pub use capability::{Handle, HandleError, HandleTable, Rights, MAX_HANDLES};
pub use linker::{Domain, LinkError, Module, Resolution};
pub use nameserver::{ImportAuthorizer, NameError, NameServer, Version};
pub use symbol::{Export, Import, SymbolTable, SymbolType};
