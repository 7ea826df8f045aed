//! Errors returned to installers and raisers.

use alloc::boxed::Box;
use core::fmt;

use crate::{
    authorize::Denied,
    handler::Fault,
    order::{BindingId, OrderError},
    signature::TypeError,
};

/// Why an installation, removal or change was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The handler, guard or closure does not match the event's type.
    Type(TypeError),
    /// A guard the authorizer imposed does not match the event's type.
    ImposedGuard(TypeError),
    /// The authorizer refused.
    Denied(Denied),
    /// The operation needs the event's [`Authority`](crate::Authority) and
    /// another was presented.
    NotAuthority,
    /// Without an authorizer, only the installer (or the kernel) may change
    /// an installation.
    NotInstaller,
    /// Ephemeral mode for a handler that does not accept termination.
    NotEphemeral,
    /// Asynchronous mode on an event with by-reference arguments, or for a
    /// filter.
    AsyncByReference,
    /// Asynchronous mode on an event that returns a result but has no
    /// default handler (or removing that default while asynchronous
    /// handlers depend on it).
    AsyncNeedsDefault,
    /// Asynchronous mode on an event created without a spawner.
    NoSpawner,
    /// Ordering constraints cannot be met.
    Order(OrderError),
    /// No such installation on this event.
    UnknownBinding(BindingId),
    /// No such guard on that installation (or it was imposed).
    UnknownGuard(GuardId),
    /// A guard to put in place of the one an installation came with,
    /// which it no longer has ([`crate::Event::replace_code`]).
    NoGuardToReplace(BindingId),
}

impl From<TypeError> for Error {
    fn from(e: TypeError) -> Self {
        Error::Type(e)
    }
}

impl From<OrderError> for Error {
    fn from(e: OrderError) -> Self {
        Error::Order(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Type(e) => write!(f, "type mismatch: {e}"),
            Error::ImposedGuard(e) => write!(f, "imposed guard does not fit the event: {e}"),
            Error::Denied(d) => write!(f, "{d}"),
            Error::NotAuthority => f.write_str("not the event's authority"),
            Error::NotInstaller => f.write_str("only the installer may change this installation"),
            Error::NotEphemeral => {
                f.write_str("ephemeral mode needs a handler that accepts termination")
            }
            Error::AsyncByReference => {
                f.write_str("asynchronous handlers cannot take arguments by reference")
            }
            Error::AsyncNeedsDefault => f.write_str(
                "asynchronous handlers on an event with a result need a default handler",
            ),
            Error::NoSpawner => f.write_str("the event has no spawner for asynchronous handlers"),
            Error::Order(e) => write!(f, "{e}"),
            Error::UnknownBinding(b) => write!(f, "no {b} on this event"),
            Error::UnknownGuard(g) => write!(f, "no removable guard#{} on that binding", g.0),
            Error::NoGuardToReplace(b) => {
                write!(f, "{b} no longer has the guard it was installed with")
            }
        }
    }
}

/// Identifies one guard on one installation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GuardId(pub(crate) u64);

/// Why a raise produced no result (003 §2.3 "Handling results": "in case no
/// handler runs, a runtime exception is thrown at the point the event is
/// raised"). One pointer wide, so that `Result<u64, RaiseError>` comes back
/// in registers on the raise path; the details are in [`RaiseFailure`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaiseError(Box<RaiseFailure>);

impl RaiseError {
    /// What went wrong.
    pub fn failure(&self) -> &RaiseFailure {
        &self.0
    }
}

impl From<RaiseFailure> for RaiseError {
    fn from(failure: RaiseFailure) -> Self {
        RaiseError(Box::new(failure))
    }
}

/// The details of a [`RaiseError`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RaiseFailure {
    /// No handler fired and the event has no default handler.
    NoHandler {
        /// The event's name.
        event: &'static str,
    },
    /// No handler completed: at least one faulted (or was terminated), and
    /// there is no default handler.
    Faulted {
        /// The event's name.
        event: &'static str,
        /// The last fault.
        fault: Fault,
    },
    /// The default handler faulted.
    DefaultFaulted {
        /// The event's name.
        event: &'static str,
        /// Its fault.
        fault: Fault,
    },
}

impl fmt::Display for RaiseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.0 {
            RaiseFailure::NoHandler { event } => {
                write!(f, "{event}: no handler fired and no default handler")
            }
            RaiseFailure::Faulted { event, fault } => {
                write!(f, "{event}: every firing handler faulted ({fault})")
            }
            RaiseFailure::DefaultFaulted { event, fault } => {
                write!(f, "{event}: the default handler faulted ({fault})")
            }
        }
    }
}
