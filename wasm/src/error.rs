//! Errors of loading, linking, binding and calling extensions.
//!
//! Every refusal says why in terms an extension author can act on: the
//! offset of an invalid byte, the import that was denied, the guard
//! instruction that is not pure, the limit that was exceeded.

use alloc::string::String;
use core::fmt;

use crate::purity::Impurity;

/// Why a module could not be loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadError {
    /// The bytes are not a valid module (or use a refused feature).
    Invalid {
        /// Byte offset of the problem.
        offset: usize,
        /// The validator's message.
        message: String,
    },
    /// A per-extension limit would be exceeded.
    Limit(LimitExceeded),
    /// An import could not be resolved.
    Link(LinkError),
    /// The engine refused the module or its instantiation.
    Engine(String),
    /// The start function or the `init` export trapped.
    InitFaulted(String),
}

impl From<LinkError> for LoadError {
    fn from(error: LinkError) -> Self {
        LoadError::Link(error)
    }
}

impl From<LimitExceeded> for LoadError {
    fn from(error: LimitExceeded) -> Self {
        LoadError::Limit(error)
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Invalid { offset, message } => {
                write!(f, "invalid module at offset {offset:#x}: {message}")
            }
            LoadError::Limit(limit) => write!(f, "{limit}"),
            LoadError::Link(error) => write!(f, "link error: {error}"),
            LoadError::Engine(message) => write!(f, "engine: {message}"),
            LoadError::InitFaulted(message) => write!(f, "initialization faulted: {message}"),
        }
    }
}

/// A per-extension limit that a request would exceed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitExceeded {
    /// Which limit (`"module bytes"`, `"memory pages"`, `"handlers"`, ...).
    pub what: &'static str,
    /// The limit.
    pub limit: u64,
    /// What was asked for.
    pub requested: u64,
}

impl fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "limit exceeded: {} {} > {} allowed",
            self.what, self.requested, self.limit
        )
    }
}

/// Why an import could not be resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkError {
    /// Only functions may be imported.
    NotAFunction {
        /// `module.name`.
        import: String,
    },
    /// No domain of that name, or it does not export the symbol.
    Unresolved {
        /// `module.name`.
        import: String,
    },
    /// The domain's authorizer refused the import.
    Denied {
        /// `module.name`.
        import: String,
        /// The authorizer's reason.
        reason: String,
    },
    /// The import's type differs from the symbol's.
    Type {
        /// `module.name`.
        import: String,
        /// The symbol's type.
        expected: String,
        /// The import's type.
        found: String,
    },
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkError::NotAFunction { import } => {
                write!(f, "{import}: extensions may import only functions")
            }
            LinkError::Unresolved { import } => write!(f, "{import}: no such symbol"),
            LinkError::Denied { import, reason } => write!(f, "{import}: denied: {reason}"),
            LinkError::Type {
                import,
                expected,
                found,
            } => write!(f, "{import}: type {found}, expected {expected}"),
        }
    }
}

/// Why an export could not be bound to an event as a handler or guard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BindError {
    /// The extension was unloaded.
    Unloaded,
    /// No function is exported under that name.
    NoSuchExport(String),
    /// The export's type does not fit the event (or the event has
    /// parameters a Wasm function cannot take: opaque or by reference).
    Type {
        /// The export.
        export: String,
        /// Why.
        message: String,
    },
    /// The guard is not side-effect free.
    NotPure {
        /// The guard export.
        export: String,
        /// Where and why.
        impurity: Impurity,
    },
    /// The extension has installed as many handlers as it may.
    Limit(LimitExceeded),
    /// The dispatcher refused (authorizer, ordering, mode).
    Dispatch(dispatch::Error),
}

impl fmt::Display for BindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BindError::Unloaded => f.write_str("the extension was unloaded"),
            BindError::NoSuchExport(name) => write!(f, "no exported function `{name}`"),
            BindError::Type { export, message } => write!(f, "`{export}`: {message}"),
            BindError::NotPure { export, impurity } => {
                write!(f, "guard `{export}` is not pure: {impurity}")
            }
            BindError::Limit(limit) => write!(f, "{limit}"),
            BindError::Dispatch(error) => write!(f, "dispatcher: {error}"),
        }
    }
}

impl From<dispatch::Error> for BindError {
    fn from(error: dispatch::Error) -> Self {
        BindError::Dispatch(error)
    }
}
