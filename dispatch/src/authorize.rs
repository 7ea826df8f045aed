//! Access control: authorities and authorizers (003 §2.5).
//!
//! "The authority for an event is the module that defines the event's
//! intrinsic handler." In Spindle the code that creates an event with its
//! intrinsic handler receives the event's [`Authority`], a token nobody else
//! can make (SPIN's `THIS_MODULE()` descriptor, obtainable only inside the
//! module). With it the authority registers an [`Authorizer`], which the
//! dispatcher consults on every installation, removal and change. The
//! authorizer sees a [`Request`] (the operation, the requester's identity, an
//! optional credential) and may deny it, or allow it and impose guards (with
//! their own closures), ordering constraints or an execution mode through the
//! [`Grant`].

use alloc::{string::String, vec::Vec};
use core::{any::Any, fmt};

use crate::{
    guard::Guard,
    handler::{Budget, Mode},
    order::{BindingId, Order},
    signature::Signature,
};

/// Identity of an event, unique in the system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventId(pub(crate) u64);

impl EventId {
    /// The raw number.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

/// Proof of authority over one event: returned once, to the code that
/// defined the event. Not `Clone`; pass `&Authority` to delegate.
#[derive(Debug)]
pub struct Authority {
    pub(crate) event: EventId,
}

impl Authority {
    /// The event this authority governs.
    pub fn event(&self) -> EventId {
        self.event
    }
}

/// Who asks: the kernel, an extension, a user process. Identities are
/// assigned by whoever loads code (the kernel for extensions), so an
/// extension cannot choose its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Principal(pub u64);

impl Principal {
    /// The kernel itself.
    pub const KERNEL: Principal = Principal(0);
}

/// The operation an authorizer is asked about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Install a handler.
    Install,
    /// Remove an installation (including the intrinsic handler).
    Remove,
    /// Change an installation's ordering constraints.
    Reorder,
    /// Stack another guard on an installation.
    AddGuard,
    /// Remove a guard the installer added.
    RemoveGuard,
    /// Replace an installation's code with code of the same behaviour
    /// ([`crate::Event::replace_code`]).
    ReplaceCode,
}

/// What is being requested, as the authorizer sees it.
pub struct Request<'a> {
    /// The operation.
    pub operation: Operation,
    /// Who asks.
    pub requester: Principal,
    /// Who installed the binding concerned (the requester for `Install`).
    pub installer: Principal,
    /// The binding concerned (the one to be created, for `Install`).
    pub binding: BindingId,
    /// The handler's name.
    pub handler_name: &'static str,
    /// The handler's signature.
    pub signature: &'a Signature,
    /// Whether the handler declared it accepts termination (EPHEMERAL).
    pub accepts_termination: bool,
    /// Whether it is installed as a filter.
    pub is_filter: bool,
    /// The requested mode.
    pub mode: Mode,
    /// The requested ordering constraints.
    pub order: &'a [Order],
    /// An opaque reference from the requester to bootstrap a richer
    /// protocol (passwords, tickets), as in 003 §2.5.
    pub credential: Option<&'a (dyn Any + Send + Sync)>,
}

/// What the authorizer imposes on an allowed request.
pub struct Grant<A> {
    pub(crate) guards: Vec<Guard<A>>,
    pub(crate) order: Vec<Order>,
    pub(crate) mode: Option<Mode>,
}

impl<A> Default for Grant<A> {
    fn default() -> Self {
        Grant {
            guards: Vec::new(),
            order: Vec::new(),
            mode: None,
        }
    }
}

impl<A> Grant<A> {
    /// Imposes a guard (SPIN's `Dispatcher.ImposeGuard`); it must hold for
    /// the handler to run, and only the authority can remove it.
    pub fn impose_guard(&mut self, guard: Guard<A>) {
        self.guards.push(guard);
    }

    /// Adds an ordering constraint to the installation.
    pub fn impose_order(&mut self, order: Order) {
        self.order.push(order);
    }

    /// Forces the execution mode.
    pub fn impose_mode(&mut self, mode: Mode) {
        self.mode = Some(mode);
    }

    /// Requires the handler to run as EPHEMERAL with `budget`; installation
    /// fails if it does not accept termination.
    pub fn require_ephemeral(&mut self, budget: Budget) {
        self.mode = Some(Mode::Ephemeral(budget));
    }
}

/// A refusal, with the authorizer's reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denied {
    /// Why.
    pub reason: String,
}

impl Denied {
    /// A refusal for `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        Denied {
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Denied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "denied: {}", self.reason)
    }
}

/// The authority's authorization procedure for one event.
///
/// It runs with the event's writer lock held: it must not manipulate the
/// same event (it may raise other events).
pub trait Authorizer<A>: Send + Sync {
    /// Allows (possibly imposing conditions through `grant`) or denies.
    fn authorize(&self, request: &Request<'_>, grant: &mut Grant<A>) -> Result<(), Denied>;
}

impl<A, F> Authorizer<A> for F
where
    F: Fn(&Request<'_>, &mut Grant<A>) -> Result<(), Denied> + Send + Sync,
{
    fn authorize(&self, request: &Request<'_>, grant: &mut Grant<A>) -> Result<(), Denied> {
        self(request, grant)
    }
}
