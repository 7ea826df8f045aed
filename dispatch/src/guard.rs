//! Guards: side-effect-free predicates that decide whether a handler runs.
//!
//! 003 §2.1/§2.3: a handler may carry several guards (stacked); all must be
//! true for it to run; an authorizer may impose more (§2.5). Guards are
//! FUNCTIONAL, so the dispatcher may reorder and share their evaluation: it
//! evaluates declarative guards before procedural ones and compiles
//! declarative guards of many handlers into one decision structure
//! ([`crate::decision`]).
//!
//! Three kinds:
//! - procedural: a Rust closure `Fn(&A) -> bool` (a closure argument is just
//!   captured state, see [`Guard::with_closure`]);
//! - runtime-typed: a [`DynGuard`] with a runtime [`Signature`] (Wasm);
//! - declarative: a [`Predicate`] on one field of the arguments.

use alloc::{format, sync::Arc};
use core::{any::Any, fmt};

use crate::{
    handler::{DynArgs, DynArgsView},
    signature::{EventArgs, Signature, TypeError},
};

/// A scalar the declarative guards can test: a parameter or a named
/// projection registered by the event's authority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    /// Parameter number `n` (must have a scalar type).
    Param(usize),
    /// A field the authority defined with `Event::define_field`.
    Named(usize),
}

/// The comparison of a declarative guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Test {
    /// `field == value`.
    Equals(u64),
    /// `low <= field <= high`.
    InRange {
        /// Lowest accepted value.
        low: u64,
        /// Highest accepted value.
        high: u64,
    },
    /// `field & mask == value`.
    Masked {
        /// Bits compared.
        mask: u64,
        /// Expected value of those bits.
        value: u64,
    },
}

/// A declarative guard: one comparison on one field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Predicate {
    /// What is compared.
    pub field: Field,
    /// How.
    pub test: Test,
}

impl Predicate {
    /// `field == value`.
    pub fn equals(field: Field, value: u64) -> Self {
        Predicate {
            field,
            test: Test::Equals(value),
        }
    }

    /// `low <= field <= high`.
    pub fn in_range(field: Field, low: u64, high: u64) -> Self {
        Predicate {
            field,
            test: Test::InRange { low, high },
        }
    }

    /// `field & mask == value`.
    pub fn masked(field: Field, mask: u64, value: u64) -> Self {
        Predicate {
            field,
            test: Test::Masked { mask, value },
        }
    }

    /// Evaluates the comparison on a field value.
    #[inline]
    pub fn test(&self, value: u64) -> bool {
        match self.test {
            Test::Equals(v) => value == v,
            Test::InRange { low, high } => low <= value && value <= high,
            Test::Masked { mask, value: v } => value & mask == v,
        }
    }
}

/// Runtime-typed guard code (e.g. a Wasm function verified pure at load).
pub trait DynGuard: Send + Sync {
    /// Evaluates the guard. `closure` is the installation's closure, if any.
    fn test(&self, closure: Option<&(dyn Any + Send + Sync)>, args: &DynArgs<'_>) -> bool;
}

impl<F> DynGuard for F
where
    F: Fn(Option<&(dyn Any + Send + Sync)>, &DynArgs<'_>) -> bool + Send + Sync,
{
    fn test(&self, closure: Option<&(dyn Any + Send + Sync)>, args: &DynArgs<'_>) -> bool {
        self(closure, args)
    }
}

pub(crate) enum GuardCode<A> {
    Procedural(Arc<dyn Fn(&A) -> bool + Send + Sync>),
    Declarative(Predicate),
    Dynamic {
        signature: Arc<Signature>,
        closure: Option<Arc<dyn Any + Send + Sync>>,
        code: Arc<dyn DynGuard>,
    },
}

impl<A> Clone for GuardCode<A> {
    fn clone(&self) -> Self {
        match self {
            GuardCode::Procedural(f) => GuardCode::Procedural(f.clone()),
            GuardCode::Declarative(p) => GuardCode::Declarative(*p),
            GuardCode::Dynamic {
                signature,
                closure,
                code,
            } => GuardCode::Dynamic {
                signature: signature.clone(),
                closure: closure.clone(),
                code: code.clone(),
            },
        }
    }
}

/// A guard, ready to be installed with a handler or imposed by an
/// authorizer.
pub struct Guard<A> {
    pub(crate) code: GuardCode<A>,
    /// For runtime-typed guards with a closure: the type the code expects.
    pub(crate) closure_type: Option<core::any::TypeId>,
}

impl<A> Clone for Guard<A> {
    fn clone(&self) -> Self {
        Guard {
            code: self.code.clone(),
            closure_type: self.closure_type,
        }
    }
}

impl<A> fmt::Debug for Guard<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.code {
            GuardCode::Procedural(_) => f.write_str("Guard::Procedural"),
            GuardCode::Declarative(p) => write!(f, "Guard::Declarative({p:?})"),
            GuardCode::Dynamic { signature, .. } => write!(f, "Guard::Dynamic({signature:?})"),
        }
    }
}

impl<A: EventArgs> Guard<A> {
    /// A procedural guard. It must be side-effect free (003 §2.3); Rust
    /// cannot check that, so only trusted code should build these.
    pub fn new(test: impl Fn(&A) -> bool + Send + Sync + 'static) -> Self {
        Guard {
            code: GuardCode::Procedural(Arc::new(test)),
            closure_type: None,
        }
    }

    /// A procedural guard with a closure: `code` receives `closure` as its
    /// first argument, like SPIN's `ImposeGuard(binding, guard, closure)`.
    pub fn with_closure<C: Send + Sync + 'static>(closure: C, code: fn(&C, &A) -> bool) -> Self {
        Guard::new(move |args| code(&closure, args))
    }

    /// A declarative guard, compiled into the event's decision structure.
    pub fn when(predicate: Predicate) -> Self {
        Guard {
            code: GuardCode::Declarative(predicate),
            closure_type: None,
        }
    }

    /// A runtime-typed guard; `signature` is checked against the event at
    /// installation (same parameter types, result `Bool`).
    pub fn dynamic(signature: Signature, code: impl DynGuard + 'static) -> Self {
        Guard {
            code: GuardCode::Dynamic {
                signature: Arc::new(signature),
                closure: None,
                code: Arc::new(code),
            },
            closure_type: None,
        }
    }

    /// Attaches a closure to a runtime-typed guard. `expected` is the type
    /// the guard's code declares for it; a different closure type is refused
    /// at installation (003 §2.4).
    pub fn with_dynamic_closure(
        mut self,
        expected: core::any::TypeId,
        closure: Arc<dyn Any + Send + Sync>,
    ) -> Self {
        if let GuardCode::Dynamic { closure: slot, .. } = &mut self.code {
            *slot = Some(closure);
            self.closure_type = Some(expected);
        }
        self
    }

    /// The declarative predicate, if this is a declarative guard.
    pub fn predicate(&self) -> Option<Predicate> {
        match self.code {
            GuardCode::Declarative(p) => Some(p),
            _ => None,
        }
    }

    /// Installation-time checks against the event's signature and fields.
    pub(crate) fn check(&self, event: &Signature, named_fields: usize) -> Result<(), TypeError> {
        match &self.code {
            GuardCode::Procedural(_) => Ok(()),
            GuardCode::Declarative(p) => match p.field {
                Field::Param(i) if event.params.get(i).is_some_and(|p| p.ty.is_scalar()) => Ok(()),
                Field::Named(i) if i < named_fields => Ok(()),
                field => Err(TypeError::Field {
                    field: format!("{field:?}"),
                }),
            },
            GuardCode::Dynamic {
                signature, closure, ..
            } => {
                event.check_guard(signature)?;
                check_closure(self.closure_type, closure.as_deref())
            }
        }
    }
}

/// Checks that a closure has the type its code declares.
pub(crate) fn check_closure(
    expected: Option<core::any::TypeId>,
    closure: Option<&(dyn Any + Send + Sync)>,
) -> Result<(), TypeError> {
    match (expected, closure) {
        (Some(expected), Some(closure)) if closure.type_id() != expected => {
            Err(TypeError::Closure {
                found: "closure of another type",
            })
        }
        _ => Ok(()),
    }
}

impl<A: EventArgs> GuardCode<A> {
    /// Evaluates the guard; `fields` are the event's named projections.
    #[inline]
    pub(crate) fn eval(&self, args: &A, fields: &[fn(&A) -> u64]) -> bool {
        match self {
            GuardCode::Procedural(f) => f(args),
            GuardCode::Declarative(p) => {
                field_value(p.field, args, fields).is_some_and(|v| p.test(v))
            }
            GuardCode::Dynamic {
                signature,
                closure,
                code,
            } => code.test(
                closure.as_deref(),
                &DynArgs::shared(args as &dyn DynArgsView, signature),
            ),
        }
    }

    pub(crate) fn is_declarative(&self) -> bool {
        matches!(self, GuardCode::Declarative(_))
    }
}

/// Reads a field of the arguments.
#[inline]
pub(crate) fn field_value<A: EventArgs>(
    field: Field,
    args: &A,
    fields: &[fn(&A) -> u64],
) -> Option<u64> {
    match field {
        Field::Param(i) => args.scalar(i),
        Field::Named(i) => fields.get(i).map(|f| f(args)),
    }
}
