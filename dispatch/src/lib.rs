//! The event dispatcher: SPIN's extension mechanism (events paper 003 §2,
//! design.md "Events").
//!
//! Every interface procedure is an [`Event`] whose intrinsic handler is its
//! implementation. Extensions install [`Handler`]s with [`Guard`]s, ordering
//! constraints ([`Order`]) and a [`Mode`]; the module that defined the event
//! holds its [`Authority`] and controls all of that through an
//! [`Authorizer`]. Raising an event that has only its intrinsic handler is a
//! plain call.
//!
//! Modules:
//! - [`signature`]: runtime types (what install-time type checks compare);
//! - [`handler`]: handler code (Rust closures or runtime-typed code such as
//!   Wasm functions), modes, budgets, the spawner seam;
//! - [`guard`]: procedural, runtime-typed and declarative guards;
//! - `decision`: compiles declarative guards into lookup tables;
//! - [`order`]: First/Last/Before/After placement;
//! - [`authorize`]: authorities, principals, requests, grants;
//! - [`account`]: per-event figures and the clock seam;
//! - `publish`: lock-free publication of handler lists;
//! - [`event`]: events, installation, raising.
//!
//! The crate is `no_std` + `alloc`, has no `unsafe`, and never creates
//! threads: time comes from a [`Clock`], asynchronous handlers run through a
//! [`Spawner`], and ephemeral budgets are enforced by the engine that runs
//! the handler ([`Budget`], [`Invocation`]).
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod account;
pub mod authorize;
mod decision;
pub mod error;
pub mod event;
mod fused;
pub mod guard;
pub mod handler;
pub mod order;
mod publish;
pub mod signature;

pub use account::{Clock, EventStats};
pub use authorize::{Authority, Authorizer, Denied, EventId, Grant, Operation, Principal, Request};
pub use error::{Error, GuardId, RaiseError, RaiseFailure};
pub use event::{
    Event, EventBuilder, FieldReader, Install, Intrinsic, List, RaiseCache, ResultHandler,
};
pub use guard::{DynGuard, Field, Guard, Predicate, Test};
pub use handler::{
    Budget, DynArgs, DynArgsView, DynHandler, Fault, Handler, Invocation, Mode, SpawnError, Spawner,
};
pub use order::{BindingId, Order, OrderError};
pub use signature::{
    ArgType, EventArgs, EventResult, Param, Passing, Signature, TypeError, Value, ValueType, Var,
};
