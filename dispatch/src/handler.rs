//! Handlers: the code that runs when an event is raised.
//!
//! 003 §2.1: a handler is a procedure of the event's type, installed any
//! number of times, optionally with a closure. Here a handler is one of:
//!
//! - a Rust closure `Fn(&A) -> R` ([`Handler::new`]); captured state is the
//!   closure, or use [`Handler::with_closure`] for SPIN's explicit form;
//! - a Rust closure `Fn(&mut A) -> R` ([`Handler::by_reference`]) that takes
//!   every parameter by reference: a filter, or a handler of an event with
//!   `VAR` parameters;
//! - runtime-typed code ([`DynHandler`], e.g. a Wasm function) with a
//!   [`Signature`] built at run time and checked at installation. It sees
//!   the arguments through [`DynArgs`] and may write only the parameters its
//!   signature takes by reference.
//!
//! The module also defines the execution [`Mode`]s (003 §2.6): synchronous,
//! asynchronous (through a kernel-provided [`Spawner`]) and ephemeral (with a
//! [`Budget`] the executing engine enforces).

use alloc::{boxed::Box, string::String, sync::Arc};
use core::{
    any::{Any, TypeId},
    fmt,
};

use crate::{
    event::{CheckedMaker, CheckedViews, LoneFallible, LoneFused},
    guard::{check_closure, Guard},
    signature::{EventArgs, EventResult, Passing, Signature, TypeError, Value},
};

/// A time or work bound for an EPHEMERAL handler (003 §2.6 "Runaway
/// handlers"). The event's authority sets it (through its authorizer); the
/// engine running the handler enforces it — the Wasm engine with fuel or
/// epoch interruption, and aborts the invocation with
/// [`Fault::BudgetExhausted`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Abstract work units (Wasm fuel), if bounded.
    pub fuel: Option<u64>,
    /// Wall-clock bound in nanoseconds, if bounded.
    pub time_ns: Option<u64>,
}

impl Budget {
    /// A budget of `fuel` work units.
    pub const fn fuel(fuel: u64) -> Self {
        Budget {
            fuel: Some(fuel),
            time_ns: None,
        }
    }

    /// A budget of `time_ns` nanoseconds.
    pub const fn time_ns(time_ns: u64) -> Self {
        Budget {
            fuel: None,
            time_ns: Some(time_ns),
        }
    }
}

/// How a handler runs relative to the raiser (003 §2.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// On the raiser's thread, to completion (procedure-call semantics).
    #[default]
    Synchronous,
    /// On another thread, through the event's [`Spawner`]; the raiser does
    /// not wait and the handler's result is discarded. Refused on events with
    /// by-reference arguments, and on events with a result but no default
    /// handler.
    Asynchronous,
    /// Synchronous but bounded: terminated when it exceeds the budget. Only
    /// handlers that declare they accept termination may run so.
    Ephemeral(Budget),
}

/// Why an invocation of runtime-typed code did not produce a result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The ephemeral handler exceeded its budget and was terminated.
    BudgetExhausted,
    /// The code trapped (out-of-bounds access, unreachable, ...).
    Trap(String),
    /// The code returned a value of the wrong type.
    BadResult,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::BudgetExhausted => f.write_str("budget exhausted"),
            Fault::Trap(why) => write!(f, "trap: {why}"),
            Fault::BadResult => f.write_str("result of the wrong type"),
        }
    }
}

/// What the dispatcher tells the code it invokes.
#[derive(Clone, Copy, Debug, Default)]
pub struct Invocation {
    /// The budget to enforce, for ephemeral handlers.
    pub budget: Option<Budget>,
}

/// Object-safe view of an argument pack, for runtime-typed code.
pub trait DynArgsView {
    /// Number of parameters.
    fn arity(&self) -> usize;
    /// Parameter `index` as a value (`None` for opaque types).
    fn value(&self, index: usize) -> Option<Value>;
    /// Parameter `index` as `Any` (opaque types).
    fn any(&self, index: usize) -> Option<&dyn Any>;
    /// Overwrites parameter `index`; `false` on a type mismatch.
    fn write(&mut self, index: usize, value: Value) -> bool;
}

impl<A: EventArgs> DynArgsView for A {
    fn arity(&self) -> usize {
        A::params().len()
    }
    fn value(&self, index: usize) -> Option<Value> {
        self.get(index)
    }
    fn any(&self, index: usize) -> Option<&dyn Any> {
        EventArgs::any(self, index)
    }
    fn write(&mut self, index: usize, value: Value) -> bool {
        self.set(index, value)
    }
}

enum View<'a> {
    Shared(&'a dyn DynArgsView),
    Mutable(&'a mut dyn DynArgsView),
}

/// The arguments as runtime-typed code sees them: readable, and writable
/// only where its signature takes a parameter by reference.
pub struct DynArgs<'a> {
    view: View<'a>,
    signature: &'a Signature,
}

impl<'a> DynArgs<'a> {
    pub(crate) fn shared(view: &'a dyn DynArgsView, signature: &'a Signature) -> Self {
        DynArgs {
            view: View::Shared(view),
            signature,
        }
    }

    pub(crate) fn mutable(view: &'a mut dyn DynArgsView, signature: &'a Signature) -> Self {
        DynArgs {
            view: View::Mutable(view),
            signature,
        }
    }

    fn read(&self) -> &dyn DynArgsView {
        match &self.view {
            View::Shared(v) => *v,
            View::Mutable(v) => &**v,
        }
    }

    /// Number of parameters.
    pub fn len(&self) -> usize {
        self.read().arity()
    }

    /// Whether there are no parameters.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Parameter `index` as a value (`None` for opaque types).
    pub fn get(&self, index: usize) -> Option<Value> {
        self.read().value(index)
    }

    /// Parameter `index` of opaque type `T`.
    pub fn get_any<T: 'static>(&self, index: usize) -> Option<&T> {
        self.read().any(index)?.downcast_ref()
    }

    /// Writes parameter `index`: allowed only if the code's signature takes
    /// it by reference and the value has the parameter's type.
    pub fn set(&mut self, index: usize, value: Value) -> Result<(), TypeError> {
        let writable = self
            .signature
            .params
            .get(index)
            .is_some_and(|p| p.passing == Passing::ByReference && p.ty == value.ty());
        match (&mut self.view, writable) {
            (View::Mutable(view), true) => {
                if view.write(index, value) {
                    Ok(())
                } else {
                    Err(TypeError::Value { index })
                }
            }
            _ => Err(TypeError::Value { index }),
        }
    }
}

/// Runtime-typed handler code (e.g. a Wasm function bound by the
/// extension runtime).
pub trait DynHandler: Send + Sync {
    /// Runs the code. `closure` is the installation's closure, if any;
    /// `invocation.budget` must be enforced for ephemeral handlers.
    fn call(
        &self,
        closure: Option<&(dyn Any + Send + Sync)>,
        args: &mut DynArgs<'_>,
        invocation: &Invocation,
    ) -> Result<Option<Value>, Fault>;
}

impl<F> DynHandler for F
where
    F: Fn(
            Option<&(dyn Any + Send + Sync)>,
            &mut DynArgs<'_>,
            &Invocation,
        ) -> Result<Option<Value>, Fault>
        + Send
        + Sync,
{
    fn call(
        &self,
        closure: Option<&(dyn Any + Send + Sync)>,
        args: &mut DynArgs<'_>,
        invocation: &Invocation,
    ) -> Result<Option<Value>, Fault> {
        self(closure, args, invocation)
    }
}

/// Runs a task on another thread of control (003 §2.6 asynchronous
/// handlers). The kernel implements it with a strand; host tests with
/// `std::thread`. The library never creates threads itself.
pub trait Spawner: Send + Sync {
    /// Starts `task`; an error means it will not run.
    fn spawn(&self, task: Box<dyn FnOnce() + Send>) -> Result<(), SpawnError>;
}

/// The spawner could not start a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpawnError;

pub(crate) enum Code<A, R> {
    ByValue(Arc<dyn Fn(&A) -> R + Send + Sync>),
    ByReference(Arc<dyn Fn(&mut A) -> R + Send + Sync>),
    Dynamic {
        closure: Option<Arc<dyn Any + Send + Sync>>,
        code: Arc<dyn DynHandler>,
    },
    /// Typed code that may fail (see [`Handler::fallible`]).
    Fallible(FallibleCode<A, R>),
}

/// Typed code that may fail, as [`Handler::fallible`] takes it.
pub(crate) type FallibleCode<A, R> = Arc<dyn Fn(&A, &Invocation) -> Result<R, Fault> + Send + Sync>;

impl<A, R> Clone for Code<A, R> {
    fn clone(&self) -> Self {
        match self {
            Code::ByValue(f) => Code::ByValue(f.clone()),
            Code::ByReference(f) => Code::ByReference(f.clone()),
            Code::Dynamic { closure, code } => Code::Dynamic {
                closure: closure.clone(),
                code: code.clone(),
            },
            Code::Fallible(f) => Code::Fallible(f.clone()),
        }
    }
}

/// A handler, ready to be installed (possibly many times, on many events).
pub struct Handler<A, R> {
    pub(crate) code: Code<A, R>,
    pub(crate) signature: Arc<Signature>,
    pub(crate) accepts_termination: bool,
    pub(crate) closure_type: Option<TypeId>,
    pub(crate) name: &'static str,
    /// Fallible typed code with its concrete type kept
    /// ([`Handler::fallible`], [`Handler::fallible_guarded`]): what a list
    /// whose only entry it is calls statically.
    pub(crate) checked: Option<CheckedViews<A, R>>,
}

impl<A, R> Clone for Handler<A, R> {
    fn clone(&self) -> Self {
        Handler {
            code: self.code.clone(),
            signature: self.signature.clone(),
            accepts_termination: self.accepts_termination,
            closure_type: self.closure_type,
            name: self.name,
            checked: self.checked.clone(),
        }
    }
}

impl<A, R> fmt::Debug for Handler<A, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handler")
            .field("name", &self.name)
            .field("signature", &self.signature)
            .field("accepts_termination", &self.accepts_termination)
            .finish()
    }
}

fn typed_signature<A: EventArgs, R: EventResult>(passing: Passing) -> Signature {
    Signature {
        params: A::params(),
        result: R::result_type(),
    }
    .with_all(passing)
}

impl<A: EventArgs, R: EventResult> Handler<A, R> {
    /// A handler that reads its arguments (all by value).
    pub fn new(code: impl Fn(&A) -> R + Send + Sync + 'static) -> Self {
        Handler {
            code: Code::ByValue(Arc::new(code)),
            signature: Arc::new(typed_signature::<A, R>(Passing::ByValue)),
            accepts_termination: false,
            closure_type: None,
            name: "handler",
            checked: None,
        }
    }

    /// A handler taking every parameter by reference: install it as a filter
    /// (its changes reach later handlers, not the raiser), or on an event
    /// whose parameters are all `VAR`.
    pub fn by_reference(code: impl Fn(&mut A) -> R + Send + Sync + 'static) -> Self {
        Handler {
            code: Code::ByReference(Arc::new(code)),
            signature: Arc::new(typed_signature::<A, R>(Passing::ByReference)),
            accepts_termination: false,
            closure_type: None,
            name: "filter",
            checked: None,
        }
    }

    /// SPIN's handler-with-closure: `code` gets `closure` as its first
    /// argument, so one procedure serves many installations (003 §2.1). The
    /// closure's type is checked by the compiler here; see
    /// [`Handler::with_dynamic_closure`] for the runtime check.
    pub fn with_closure<C: Send + Sync + 'static>(closure: C, code: fn(&C, &A) -> R) -> Self {
        Handler::new(move |args| code(&closure, args))
    }

    /// Runtime-typed code with its runtime signature (checked against the
    /// event at installation).
    pub fn dynamic(signature: Signature, code: impl DynHandler + 'static) -> Self {
        Handler {
            code: Code::Dynamic {
                closure: None,
                code: Arc::new(code),
            },
            signature: Arc::new(signature),
            accepts_termination: false,
            closure_type: None,
            name: "dynamic",
            checked: None,
        }
    }

    /// Typed code that reads its arguments (all by value) and may fail:
    /// what an engine with a typed entry installs (the extension
    /// runtime's native Wasm handlers), so that a raise passes the
    /// argument tuple itself, without [`DynArgs`] or runtime values, and
    /// a trap still reaches the dispatcher as a [`Fault`] (counted, and
    /// the default handler or an error for the raiser). `signature` is
    /// checked against the event at installation, as for
    /// [`Handler::dynamic`].
    ///
    /// The code's concrete type is kept until publication: a list whose
    /// only entry it is (unguarded) calls it statically, inlined into the
    /// list's routine, rather than through the closure's pointer.
    pub fn fallible<H>(signature: Signature, code: H) -> Self
    where
        H: Fn(&A, &Invocation) -> Result<R, Fault> + Send + Sync + 'static,
    {
        let code = Arc::new(code);
        let alone = code.clone();
        let maker: CheckedMaker<A, R> =
            Arc::new(move |invocation| LoneFallible::routine(alone.clone(), invocation));
        Handler {
            code: Code::Fallible(code),
            signature: Arc::new(signature),
            accepts_termination: false,
            closure_type: None,
            name: "fallible",
            checked: Some(CheckedViews {
                alone: maker,
                guard: None,
            }),
        }
    }

    /// [`Handler::fallible`] with a guard whose concrete type is kept too:
    /// installed with [`Install::new`](crate::Install::new), the guard becomes the
    /// installation's first guard (counted, removable, as any other), and
    /// while it is the installation's only one and the installation is
    /// alone on its event, the list's routine is the guard and the code
    /// as one statically typed call (as
    /// [`Install::guarded`](crate::Install::guarded) does for Rust
    /// closures). As an event's default handler the guard is not used.
    pub fn fallible_guarded<G, H>(signature: Signature, guard: G, code: H) -> Self
    where
        G: Fn(&A) -> bool + Send + Sync + 'static,
        H: Fn(&A, &Invocation) -> Result<R, Fault> + Send + Sync + 'static,
    {
        let (guard, code) = (Arc::new(guard), Arc::new(code));
        let (test, call) = (guard.clone(), code.clone());
        Handler::guarded_parts(
            signature,
            guard,
            code,
            #[inline(always)]
            move |args: &A, invocation: &Invocation| {
                if test(args) {
                    Some(call(args, invocation))
                } else {
                    None
                }
            },
        )
    }

    /// [`Handler::fallible_guarded`] where the guard and the code also
    /// come as one, `both` (`None` when the guard did not hold, else the
    /// code's outcome): what the routine of a lone installation calls,
    /// when the installer can run the two more cheaply together than one
    /// after the other (native Wasm code on one context). `both` must
    /// behave as `guard` then `code`.
    pub fn fallible_guarded_as_one<G, H, B>(
        signature: Signature,
        guard: G,
        code: H,
        both: B,
    ) -> Self
    where
        G: Fn(&A) -> bool + Send + Sync + 'static,
        H: Fn(&A, &Invocation) -> Result<R, Fault> + Send + Sync + 'static,
        B: Fn(&A, &Invocation) -> Option<Result<R, Fault>> + Send + Sync + 'static,
    {
        Handler::guarded_parts(signature, Arc::new(guard), Arc::new(code), both)
    }

    /// A guarded fallible handler from its parts (see
    /// [`Handler::fallible_guarded`]).
    fn guarded_parts<G, H, B>(signature: Signature, guard: Arc<G>, code: Arc<H>, both: B) -> Self
    where
        G: Fn(&A) -> bool + Send + Sync + 'static,
        H: Fn(&A, &Invocation) -> Result<R, Fault> + Send + Sync + 'static,
        B: Fn(&A, &Invocation) -> Option<Result<R, Fault>> + Send + Sync + 'static,
    {
        let both = Arc::new(both);
        let maker: CheckedMaker<A, R> =
            Arc::new(move |invocation| LoneFused::routine(both.clone(), invocation));
        Handler {
            code: Code::Fallible(Arc::new(move |args: &A, invocation: &Invocation| {
                code(args, invocation)
            })),
            signature: Arc::new(signature),
            accepts_termination: false,
            closure_type: None,
            name: "fallible",
            checked: Some(CheckedViews {
                alone: maker,
                guard: Some(Guard::new(move |args: &A| guard(args))),
            }),
        }
    }

    /// Attaches a closure to runtime-typed code that declares it expects a
    /// closure of type `expected`; a closure of another type is refused at
    /// installation (003 §2.4: "the type of the associated closure must be a
    /// subtype of that reference type").
    pub fn with_dynamic_closure(
        mut self,
        expected: TypeId,
        closure: Arc<dyn Any + Send + Sync>,
    ) -> Self {
        if let Code::Dynamic { closure: slot, .. } = &mut self.code {
            *slot = Some(closure);
            self.closure_type = Some(expected);
        }
        self
    }

    /// Declares the handler EPHEMERAL: it accepts being terminated, so it may
    /// be installed in [`Mode::Ephemeral`] (003 §2.6).
    pub fn ephemeral(mut self) -> Self {
        self.accepts_termination = true;
        self
    }

    /// Names the handler (for the shell and error messages).
    pub fn named(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// The handler's runtime signature.
    pub fn signature(&self) -> &Signature {
        &self.signature
    }

    /// Whether the handler declared it accepts termination.
    pub fn accepts_termination(&self) -> bool {
        self.accepts_termination
    }

    /// The handler's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    pub(crate) fn check_closure(&self) -> Result<(), TypeError> {
        match &self.code {
            Code::Dynamic { closure, .. } => check_closure(self.closure_type, closure.as_deref()),
            _ => Ok(()),
        }
    }
}

impl<A: EventArgs, R: EventResult> Code<A, R> {
    /// Whether running this code needs mutable access to the arguments.
    pub(crate) fn mutates(&self, signature: &Signature) -> bool {
        match self {
            Code::ByValue(_) => false,
            Code::ByReference(_) => true,
            Code::Dynamic { .. } => signature.has_by_reference(),
            // Typed code reads its arguments by value.
            Code::Fallible(_) => false,
        }
    }

    /// Runs the code. Dynamic code sees a mutable view only if its signature
    /// takes something by reference (then the caller passes a working copy).
    #[inline]
    pub(crate) fn run(
        &self,
        args: &mut A,
        signature: &Signature,
        invocation: &Invocation,
    ) -> Result<R, Fault> {
        match self {
            Code::ByValue(f) => Ok(f(args)),
            Code::ByReference(f) => Ok(f(args)),
            Code::Fallible(f) => f(args, invocation),
            Code::Dynamic { closure, code } => {
                let mut view = if signature.has_by_reference() {
                    DynArgs::mutable(args as &mut dyn DynArgsView, signature)
                } else {
                    DynArgs::shared(&*args as &dyn DynArgsView, signature)
                };
                let value = code.call(closure.as_deref(), &mut view, invocation)?;
                R::from_value(value).ok_or(Fault::BadResult)
            }
        }
    }
}
