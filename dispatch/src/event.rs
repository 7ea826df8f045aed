//! Events: typed procedures whose calls are dispatched to handlers.
//!
//! An [`Event<A, R>`] is a procedure taking the argument tuple `A` and
//! returning `R`, with an intrinsic handler (its implementation, 003 §2.1).
//! While that is its only handler, [`Event::raise`] is one flag test and a
//! call of the intrinsic function: no dispatcher on the path (003 §3).
//! Otherwise the raise walks the current handler list, evaluating guards,
//! running handlers in order, and folding results (003 §2.3).
//!
//! Layers, from the raiser down:
//! 1. `raise` / `raise_cached`: the shortcut, or fetch the published list;
//! 2. `dispatch`: one test of the list's `Plan`, decided at publication.
//!    A `Scan` list (every handler a synchronous by-value closure; no
//!    filter, result handler or accounting) is compiled into one routine
//!    (see `fused.rs`): a lone fused installation (guard and handler
//!    one call, see [`Install::guarded`]) is its own routine; consecutive
//!    installations of the same code are one run (one call for all); other
//!    fused lists are chains of links jumping to each other; any other
//!    list is a loop over entries of two fat pointers (guard, code), each
//!    guard being all of an installation's guards compiled
//!    into one predicate. `raise_cached` keeps the routine in its cache.
//!    `Indexed` is the two-pointer loop over the decision index's
//!    candidates. A `Checked` list (fallible typed code, an extension's
//!    native handlers, among synchronous Rust closures) is one
//!    `CheckedRoutine` in the same way: a lone fallible entry called
//!    directly, else a loop; its faults are counted as they happen and
//!    the last one handed back beside the result;
//! 3. `General` (out of line): accounting, the working copy for filters,
//!    `VAR` write-back, then `run`: guards, invocation by mode, faults,
//!    result folding, default handler.
//!
//! Writers (install, remove, reorder, guard changes) serialize on `state`,
//! consult the authorizer, edit the master list, compile a new immutable
//! [`List`] in O(n) (plus sorting for declarative guards) and publish it
//! ([`crate::publish`]).

use alloc::{boxed::Box, sync::Arc, vec::Vec};
use core::{
    any::Any,
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
};

use spin::Mutex;

use crate::{
    account::{Clock, Counters, EventStats},
    authorize::{Authority, Authorizer, EventId, Grant, Operation, Principal, Request},
    decision::{key_of, DecisionIndex},
    error::{Error, GuardId, RaiseError, RaiseFailure},
    fused::{compile, Fused, FusedViews, Held, HeldRoutine, Routine, RoutineCode},
    guard::{field_value, Field, Guard, GuardCode, Predicate, Test},
    handler::{Code, FallibleCode, Fault, Handler, Invocation, Mode, Spawner},
    order::{place, BindingId, Order},
    publish::Publication,
    signature::{EventArgs, EventResult, Passing, Signature},
};

static NEXT_EVENT: AtomicU64 = AtomicU64::new(1);

/// The implementation of an event: the procedure with the event's name.
pub enum Intrinsic<A, R> {
    /// Reads its arguments.
    ByValue(fn(&A) -> R),
    /// Takes its arguments by reference (events with `VAR` parameters).
    ByReference(fn(&mut A) -> R),
}

impl<A, R> Clone for Intrinsic<A, R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A, R> Copy for Intrinsic<A, R> {}

impl<A: EventArgs, R: EventResult> Intrinsic<A, R> {
    #[inline(always)]
    fn call(&self, args: &mut A) -> R {
        match self {
            Intrinsic::ByValue(f) => f(args),
            Intrinsic::ByReference(f) => f(args),
        }
    }

    fn handler(&self) -> Handler<A, R> {
        match *self {
            Intrinsic::ByValue(f) => Handler::new(f).named("intrinsic"),
            Intrinsic::ByReference(f) => Handler::by_reference(f).named("intrinsic"),
        }
    }
}

/// Reads a named field of the arguments for declarative guards.
pub type FieldReader<A> = fn(&A) -> u64;

/// A synchronous by-value handler's code.
type ByValueCode<A, R> = Arc<dyn Fn(&A) -> R + Send + Sync>;

/// Folds the results of several handlers into one (003 §2.3 "result
/// handler"): called with the result so far and the next one.
pub type ResultHandler<R> = Arc<dyn Fn(R, R) -> R + Send + Sync>;

/// A request to install a handler, with its guards, ordering, mode.
pub struct Install<A, R> {
    handler: Handler<A, R>,
    guards: Vec<Guard<A>>,
    order: Vec<Order>,
    mode: Mode,
    is_filter: bool,
    credential: Option<Arc<dyn Any + Send + Sync>>,
    /// Set by [`Install::guarded`]: `guards[0]` and `handler` as one call.
    fused: Option<FusedViews<A, R>>,
    /// Set by [`Install::new`] for [`Handler::fallible_guarded`]:
    /// `guards[0]` is the guard the handler's checked routine tests.
    checked_guarded: bool,
}

impl<A: EventArgs, R: EventResult> Install<A, R> {
    /// Installs `handler`, synchronous, unordered, unguarded.
    ///
    /// A handler made by [`Handler::fallible_guarded`] brings its guard:
    /// it becomes the installation's first.
    pub fn new(mut handler: Handler<A, R>) -> Self {
        let fused_guard = handler
            .checked
            .as_mut()
            .and_then(|views| views.guard.take());
        let checked_guarded = fused_guard.is_some();
        Install {
            handler,
            guards: fused_guard.into_iter().collect(),
            order: Vec::new(),
            mode: Mode::Synchronous,
            is_filter: false,
            credential: None,
            fused: None,
            checked_guarded,
        }
    }

    /// Installs `handler` guarded by `guard`, both Rust closures whose
    /// concrete types are kept until installation: the dispatcher then
    /// calls them through one monomorphized function (guard inlined into
    /// the handler's call), one indirect call per raise instead of two.
    /// This is SPIN's inlining of guards into the dispatch routine, done by
    /// the compiler instead of run-time code generation.
    ///
    /// Otherwise this is exactly
    /// `Install::new(Handler::new(handler)).guard(Guard::new(guard))`: the
    /// guard is one of the installation's guards (counted by
    /// [`Event::guards_of`] and [`Event::stats`], removable with
    /// [`Event::remove_guard`]), the authorizer sees the same request, and
    /// more guards, ordering and modes may be added. The fused call is used
    /// while that guard is the installation's only one (own or imposed) and
    /// the list takes the simple plans; anything else runs the guard and
    /// the handler separately.
    pub fn guarded<G, H>(guard: G, handler: H) -> Self
    where
        G: Fn(&A) -> bool + Send + Sync + 'static,
        H: Fn(&A) -> R + Send + Sync + 'static,
    {
        let fused = Arc::new(Fused { guard, handler });
        let (test, call) = (fused.clone(), fused.clone());
        let mut install = Install::new(Handler::new(move |args: &A| (call.handler)(args)))
            .guard(Guard::new(move |args: &A| (test.guard)(args)));
        install.fused = Some(FusedViews::of(fused));
        install
    }

    /// Stacks a guard (all must hold for the handler to run).
    pub fn guard(mut self, guard: Guard<A>) -> Self {
        self.guards.push(guard);
        self
    }

    /// Adds an ordering constraint.
    pub fn order(mut self, order: Order) -> Self {
        self.order.push(order);
        self
    }

    /// Requests an execution mode.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Installs the handler as a filter: it may take by-value parameters by
    /// reference and its changes are seen by later handlers and guards.
    pub fn filter(mut self) -> Self {
        self.is_filter = true;
        self
    }

    /// Passes an opaque credential to the authorizer.
    pub fn credential(mut self, credential: Arc<dyn Any + Send + Sync>) -> Self {
        self.credential = Some(credential);
        self
    }
}

/// The master record of one installation (writer side).
struct Binding<A, R> {
    id: BindingId,
    installer: Principal,
    handler: Handler<A, R>,
    guards: Vec<(GuardId, Guard<A>)>,
    imposed: Vec<(GuardId, Guard<A>)>,
    order: Vec<Order>,
    mode: Mode,
    is_filter: bool,
    /// From [`Install::guarded`]: the guard the fused code tests, and the
    /// fused code (used only while that is the binding's only guard).
    fused: Option<(GuardId, FusedViews<A, R>)>,
    /// From [`Handler::fallible`] or [`Handler::fallible_guarded`]: the
    /// guard the checked routine tests (`None`: it tests none), and the
    /// routine's maker (used only while the binding's guards are exactly
    /// that one, or none, and it is alone on the list).
    checked: Option<(Option<GuardId>, CheckedMaker<A, R>)>,
    /// The first guard the installation came with, which
    /// [`Event::replace_code`] replaces (while it is still there).
    installed_guard: Option<GuardId>,
}

/// Writer-side state, guarded by `Event::state`.
struct State<A, R> {
    /// Installations in execution order.
    bindings: Vec<Binding<A, R>>,
    next_binding: u64,
    next_guard: u64,
    authorizer: Option<Arc<dyn Authorizer<A>>>,
    default: Option<Handler<A, R>>,
    result: Option<ResultHandler<R>>,
    /// Named fields for declarative guards: `Field::Named(i)` is `fields[i]`.
    fields: Vec<(&'static str, FieldReader<A>)>,
    /// `Some` while accounting is on (with an optional clock).
    accounting: Option<Option<Arc<dyn Clock>>>,
}

/// All the guards of one entry that a raise must evaluate, compiled at
/// publication into one predicate (see [`compile_guard`]).
type GuardFn<A> = Arc<dyn Fn(&A) -> bool + Send + Sync>;

/// One handler of a list on the simple plans ([`Plan::Scan`],
/// [`Plan::Indexed`]): a synchronous by-value Rust closure and its guard.
/// Two fat pointers; a raise calls at most two functions per entry. (Lists
/// whose entries are all fused use the fused chain (`fused.rs`) instead: one call per
/// entry.)
struct Simple<A, R> {
    /// `None`: nothing to evaluate (unguarded, or its only guard is the
    /// decision index's key, already matched).
    guard: Option<GuardFn<A>>,
    code: ByValueCode<A, R>,
}

/// One handler of a list on the general plan.
struct Entry<A, R> {
    /// As [`Simple::guard`].
    guard: Option<GuardFn<A>>,
    /// The code when it is a synchronous by-value Rust closure, called
    /// without matching on code kind and mode.
    fast: Option<ByValueCode<A, R>>,
    /// The code when it is typed code that may fail
    /// ([`Handler::fallible`]), synchronous or ephemeral, with the
    /// invocation (its budget) it is called with: also called without
    /// matching on code kind and mode.
    fallible: Option<(FallibleCode<A, R>, Invocation)>,
    code: Code<A, R>,
    signature: Arc<Signature>,
    mode: Mode,
}

/// The code of one entry of a [`Plan::Checked`] list.
enum CheckedCode<A, R> {
    /// A synchronous by-value Rust closure (cannot fail).
    Sure(ByValueCode<A, R>),
    /// Typed code that may fail ([`Handler::fallible`]), with the
    /// invocation (its budget) it is called with.
    Fallible(FallibleCode<A, R>, Invocation),
}

/// One handler of a [`Plan::Checked`] list: its guard, then its code.
struct Checked<A, R> {
    /// As [`Simple::guard`].
    guard: Option<GuardFn<A>>,
    code: CheckedCode<A, R>,
}

/// Where a [`CheckedRoutine`] puts the faults of fallible code: counted
/// at once in the event's counters; the last one kept for the raiser in
/// case no handler answers.
pub(crate) struct Faults<'a> {
    counters: &'a Counters,
    last: Option<Fault>,
}

impl Faults<'_> {
    /// A handler faulted: counted, and kept.
    #[cold]
    #[inline(never)]
    fn note(&mut self, fault: Fault) {
        if fault == Fault::BudgetExhausted {
            Counters::bump(&self.counters.terminated, 1);
        }
        Counters::bump(&self.counters.faults, 1);
        self.last = Some(fault);
    }
}

/// A whole [`Plan::Checked`] list as one call, as [`Routine`] is for a
/// `Scan` list: the last fired handler's result, `None` when none fired
/// (or every one that did faulted); faults go to `faults`.
pub(crate) trait CheckedRoutine<A, R>: Send + Sync {
    /// Runs the list's guards and handlers over `args`.
    fn run(&self, args: &A, faults: &mut Faults<'_>) -> Option<R>;

    /// This routine as a raise cache holds it (see [`Routine::hold`]).
    fn hold(self: Arc<Self>) -> HeldChecked<A, R>;
}

/// A checked routine held by a raise cache.
pub(crate) type HeldChecked<A, R> = Box<dyn CheckedRoutine<A, R>>;

/// A checked routine as the list stores it.
type CheckedRoutineCode<A, R> = Arc<dyn CheckedRoutine<A, R>>;

impl<A, R, T: CheckedRoutine<A, R> + 'static> CheckedRoutine<A, R> for Held<T> {
    #[inline(always)]
    fn run(&self, args: &A, faults: &mut Faults<'_>) -> Option<R> {
        self.0.run(args, faults)
    }

    fn hold(self: Arc<Self>) -> HeldChecked<A, R> {
        Box::new(Held(self.0.clone()))
    }
}

/// The routine of a [`Plan::Checked`] list of one fallible entry (an
/// extension's native handler, with or without its guard): the guard and
/// the code called directly, no loop.
struct LoneChecked<A, R> {
    guard: Option<GuardFn<A>>,
    code: FallibleCode<A, R>,
    invocation: Invocation,
}

impl<A: 'static, R: 'static> CheckedRoutine<A, R> for LoneChecked<A, R> {
    #[inline]
    fn run(&self, args: &A, faults: &mut Faults<'_>) -> Option<R> {
        if let Some(guard) = &self.guard {
            if !guard(args) {
                return None;
            }
        }
        match (self.code)(args, &self.invocation) {
            Ok(result) => Some(result),
            Err(fault) => {
                faults.note(fault);
                None
            }
        }
    }

    fn hold(self: Arc<Self>) -> HeldChecked<A, R> {
        Box::new(Held(self))
    }
}

/// Makes the routine of a [`Plan::Checked`] list whose only entry is one
/// installation of fallible typed code, from that code's concrete type,
/// for the invocation (its budget) the list calls it with.
pub(crate) type CheckedMaker<A, R> =
    Arc<dyn Fn(Invocation) -> CheckedRoutineCode<A, R> + Send + Sync>;

/// What [`Handler::fallible`] and [`Handler::fallible_guarded`] keep of
/// the code's concrete type.
pub(crate) struct CheckedViews<A, R> {
    /// The routine of a list the installation is alone on (its guard
    /// included when `guard` was given).
    pub(crate) alone: CheckedMaker<A, R>,
    /// The guard `alone` tests, until [`Install::new`] makes it the
    /// installation's first guard.
    pub(crate) guard: Option<Guard<A>>,
}

impl<A, R> Clone for CheckedViews<A, R> {
    fn clone(&self) -> Self {
        CheckedViews {
            alone: self.alone.clone(),
            guard: self.guard.clone(),
        }
    }
}

/// The routine of a [`Plan::Checked`] list whose only entry is unguarded
/// fallible code of type `H` ([`Handler::fallible`]): the code called
/// statically, its `Result` never leaving the routine's frame.
pub(crate) struct LoneFallible<H> {
    code: Arc<H>,
    invocation: Invocation,
}

impl<H> LoneFallible<H> {
    /// The routine calling `code` with `invocation`.
    pub(crate) fn routine<A, R>(code: Arc<H>, invocation: Invocation) -> CheckedRoutineCode<A, R>
    where
        A: 'static,
        R: 'static,
        H: Fn(&A, &Invocation) -> Result<R, Fault> + Send + Sync + 'static,
    {
        Arc::new(LoneFallible { code, invocation })
    }
}

impl<A: 'static, R: 'static, H> CheckedRoutine<A, R> for LoneFallible<H>
where
    H: Fn(&A, &Invocation) -> Result<R, Fault> + Send + Sync + 'static,
{
    #[inline(always)]
    fn run(&self, args: &A, faults: &mut Faults<'_>) -> Option<R> {
        match (self.code)(args, &self.invocation) {
            Ok(result) => Some(result),
            Err(fault) => {
                faults.note(fault);
                None
            }
        }
    }

    fn hold(self: Arc<Self>) -> HeldChecked<A, R> {
        Box::new(Held(self))
    }
}

/// The routine of a [`Plan::Checked`] list whose only entry is fallible
/// code guarded by its own guard alone ([`Handler::fallible_guarded`],
/// [`Handler::fallible_guarded_as_one`]): `both`, the guard and the code
/// as one statically typed call (`None` when the guard did not hold).
pub(crate) struct LoneFused<B> {
    both: Arc<B>,
    invocation: Invocation,
}

impl<B> LoneFused<B> {
    /// The routine calling `both` with `invocation`.
    pub(crate) fn routine<A, R>(both: Arc<B>, invocation: Invocation) -> CheckedRoutineCode<A, R>
    where
        A: 'static,
        R: 'static,
        B: Fn(&A, &Invocation) -> Option<Result<R, Fault>> + Send + Sync + 'static,
    {
        Arc::new(LoneFused { both, invocation })
    }
}

impl<A: 'static, R: 'static, B> CheckedRoutine<A, R> for LoneFused<B>
where
    B: Fn(&A, &Invocation) -> Option<Result<R, Fault>> + Send + Sync + 'static,
{
    #[inline(always)]
    fn run(&self, args: &A, faults: &mut Faults<'_>) -> Option<R> {
        match (self.both)(args, &self.invocation)? {
            Ok(result) => Some(result),
            Err(fault) => {
                faults.note(fault);
                None
            }
        }
    }

    fn hold(self: Arc<Self>) -> HeldChecked<A, R> {
        Box::new(Held(self))
    }
}

/// The routine of any other [`Plan::Checked`] list: each entry's guard,
/// then its code; the last result wins.
struct CheckedLoop<A, R>(Box<[Checked<A, R>]>);

impl<A: 'static, R: 'static> CheckedRoutine<A, R> for CheckedLoop<A, R> {
    #[inline]
    fn run(&self, args: &A, faults: &mut Faults<'_>) -> Option<R> {
        let mut result = None;
        for entry in self.0.iter() {
            if let Some(guard) = &entry.guard {
                if !guard(args) {
                    continue;
                }
            }
            match &entry.code {
                CheckedCode::Sure(code) => result = Some(code(args)),
                CheckedCode::Fallible(code, invocation) => match code(args, invocation) {
                    Ok(value) => result = Some(value),
                    Err(fault) => faults.note(fault),
                },
            }
        }
        result
    }

    fn hold(self: Arc<Self>) -> HeldChecked<A, R> {
        Box::new(Held(self))
    }
}

/// How a list is raised, decided at publication so that a raise tests one
/// value before running its loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    /// Every handler is a synchronous by-value Rust closure; no filter, no
    /// result handler, no accounting, no decision index: one tight loop
    /// over [`List::simple`].
    Scan,
    /// As `Scan`, visiting only the decision index's candidates.
    Indexed,
    /// As `Scan`, but some handlers are typed code that may fail
    /// ([`Handler::fallible`], an extension's native Wasm handlers,
    /// synchronous or ephemeral): [`List::checked`], one call whose
    /// faults are counted and handed back beside the result.
    Checked,
    /// Anything else: [`List::entries`], with accounting, working copies,
    /// modes, runtime-typed code, faults and result folding.
    General,
}

/// An immutable, published handler list.
pub struct List<A, R> {
    event: EventId,
    plan: Plan,
    /// The handlers, on the `Scan` and `Indexed` plans (else empty). An
    /// `Arc` so that a [`RaiseCache`] can hold the `Scan` loop's slice
    /// directly.
    simple: Arc<[Simple<A, R>]>,
    /// On the `Scan` plan, every installation is fused (see
    /// [`Install::guarded`]) and `routine` is compiled from their fused
    /// code.
    all_fused: bool,
    /// On the `Scan` plan, unless the intrinsic handler is alone (raisers
    /// call it directly): the whole list as one call (the one fused
    /// installation or run itself, chains of fused code, or a loop over
    /// `simple`), which
    /// is all a [`RaiseCache`] needs of the list in the steady state.
    routine: Option<RoutineCode<A, R>>,
    /// The handlers, on the `General` plan (else empty).
    entries: Box<[Entry<A, R>]>,
    /// On the `Checked` plan: the whole list as one call (the lone
    /// fallible entry itself, or a loop), what a [`RaiseCache`] holds.
    checked: Option<CheckedRoutineCode<A, R>>,
    index: Option<DecisionIndex>,
    /// The index is used (it exists, no entry mutates its arguments, and it
    /// is mergeable): entries' guards then omit their index key.
    use_index: bool,
    /// Mutating entries exist and some parameter is by value: work on a
    /// copy so that the raiser's values are preserved (003 §2.4).
    needs_copy: bool,
    default: Option<(Code<A, R>, Arc<Signature>)>,
    result: Option<ResultHandler<R>>,
    fields: Arc<[FieldReader<A>]>,
    accounting: Option<Option<Arc<dyn Clock>>>,
}

/// A raiser's private copy of an event's current list (see
/// [`Event::raise_cached`]): keep one per CPU (or thread) on hot paths.
pub struct RaiseCache<A, R> {
    /// The stamp of `list` (see [`crate::publish`]): stamps are unique
    /// across all events' lists, so matching the event's current stamp
    /// proves both that this is the event's list and that it is current.
    /// 0, which no list has, while empty.
    stamp: u64,
    /// [`List::routine`] as a cache holds it (see `Routine::hold`): the
    /// list's whole `Scan` loop as one call; `None` on the other plans
    /// ([`Event::dispatch`] decides).
    routine: Option<HeldRoutine<A, R>>,
    /// [`List::checked`] as a cache holds it: a `Checked` list as one
    /// call.
    checked: Option<HeldChecked<A, R>>,
    list: Option<Arc<List<A, R>>>,
}

impl<A, R> Default for RaiseCache<A, R> {
    fn default() -> Self {
        RaiseCache {
            stamp: 0,
            routine: None,
            checked: None,
            list: None,
        }
    }
}

impl<A, R> RaiseCache<A, R> {
    /// An empty cache; filled by the first raise.
    pub fn new() -> Self {
        Self::default()
    }
}

/// Builds an [`Event`].
pub struct EventBuilder<A, R> {
    name: &'static str,
    intrinsic: Option<Intrinsic<A, R>>,
    spawner: Option<Arc<dyn Spawner>>,
}

impl<A: EventArgs, R: EventResult> EventBuilder<A, R> {
    /// The intrinsic handler (the event's implementation).
    pub fn intrinsic(mut self, intrinsic: fn(&A) -> R) -> Self {
        self.intrinsic = Some(Intrinsic::ByValue(intrinsic));
        self
    }

    /// An intrinsic handler taking its arguments by reference (for events
    /// with `VAR` parameters). When it runs alone it gets the raiser's
    /// arguments directly, as a procedure would: it is the event's own
    /// implementation and is trusted to write only the `VAR` ones.
    pub fn intrinsic_by_reference(mut self, intrinsic: fn(&mut A) -> R) -> Self {
        self.intrinsic = Some(Intrinsic::ByReference(intrinsic));
        self
    }

    /// Where asynchronous handlers run.
    pub fn spawner(mut self, spawner: Arc<dyn Spawner>) -> Self {
        self.spawner = Some(spawner);
        self
    }

    /// Creates the event and its authority (given only here).
    pub fn build(self) -> (Event<A, R>, Authority) {
        let id = EventId(NEXT_EVENT.fetch_add(1, Ordering::Relaxed));
        let signature = Signature {
            params: A::params(),
            result: R::result_type(),
        };
        let var_params = signature
            .params
            .iter()
            .enumerate()
            .filter(|(_, p)| p.passing == Passing::ByReference)
            .map(|(i, _)| i)
            .collect::<Vec<_>>();
        let all_by_reference = var_params.len() == signature.params.len();
        let mut state = State {
            bindings: Vec::new(),
            next_binding: 1,
            next_guard: 1,
            authorizer: None,
            default: None,
            result: None,
            fields: Vec::new(),
            accounting: None,
        };
        if let Some(intrinsic) = self.intrinsic {
            state.bindings.push(intrinsic_binding(intrinsic));
        }
        let event = Event {
            id,
            name: self.name,
            intrinsic: self.intrinsic,
            plain: AtomicBool::new(false),
            unhandled: AtomicBool::new(false),
            list: Publication::new(Arc::new(List::empty(id))),
            state: Mutex::new(state),
            counters: Counters::default(),
            spawner: self.spawner,
            signature,
            var_params: var_params.into_boxed_slice(),
            all_by_reference,
        };
        event.republish(&event.state.lock());
        (event, Authority { event: id })
    }
}

fn intrinsic_binding<A: EventArgs, R: EventResult>(intrinsic: Intrinsic<A, R>) -> Binding<A, R> {
    Binding {
        id: BindingId::INTRINSIC,
        installer: Principal::KERNEL,
        handler: intrinsic.handler(),
        guards: Vec::new(),
        imposed: Vec::new(),
        order: Vec::new(),
        mode: Mode::Synchronous,
        is_filter: false,
        fused: None,
        checked: None,
        installed_guard: None,
    }
}

/// An event: see the module documentation.
pub struct Event<A, R> {
    id: EventId,
    name: &'static str,
    signature: Signature,
    intrinsic: Option<Intrinsic<A, R>>,
    /// True exactly when the published list is the intrinsic handler alone,
    /// unguarded, synchronous, with accounting off: `raise` then calls it
    /// directly. Stored after the list it describes is published.
    plain: AtomicBool,
    /// True exactly when no handler is installed (not even an intrinsic)
    /// and accounting is off: a raise would run the default handler
    /// alone. Stored after the list it describes is published.
    unhandled: AtomicBool,
    list: Publication<List<A, R>>,
    /// Writers' lock: every change to the handler set goes through it.
    state: Mutex<State<A, R>>,
    counters: Counters,
    spawner: Option<Arc<dyn Spawner>>,
    /// Positions of the `VAR` parameters, copied back to the raiser.
    var_params: Box<[usize]>,
    /// Every parameter is `VAR`: mutating handlers can work in place.
    all_by_reference: bool,
}

impl<A: EventArgs, R: EventResult> Event<A, R> {
    /// An event with a by-value intrinsic handler and no spawner.
    pub fn new(name: &'static str, intrinsic: fn(&A) -> R) -> (Self, Authority) {
        Self::builder(name).intrinsic(intrinsic).build()
    }

    /// Starts building an event.
    pub fn builder(name: &'static str) -> EventBuilder<A, R> {
        EventBuilder {
            name,
            intrinsic: None,
            spawner: None,
        }
    }

    /// The event's identity.
    pub fn id(&self) -> EventId {
        self.id
    }

    /// The event's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The event's signature.
    pub fn signature(&self) -> &Signature {
        &self.signature
    }

    // ----------------------------------------------------------------------
    // Raising.

    /// Raises the event. With only the intrinsic handler this is a direct
    /// call; otherwise a dispatch over the current handler list. `VAR`
    /// parameters may be changed by handlers; by-value ones never are.
    #[inline]
    pub fn raise(&self, args: &mut A) -> Result<R, RaiseError> {
        if self.plain.load(Ordering::Acquire) {
            if let Some(intrinsic) = &self.intrinsic {
                return Ok(intrinsic.call(args));
            }
        }
        self.raise_listed(args)
    }

    /// [`Event::raise`] for interface glue that names the intrinsic
    /// function statically: while the intrinsic handler is alone, this is a
    /// flag test and a *direct* (inlinable) call of `intrinsic`, exactly a
    /// procedure call (003 §3: "an event with only an intrinsic handler is
    /// dispatched directly as a procedure call (which, in fact, it is)").
    /// `intrinsic` must be the function the event was built with.
    #[inline(always)]
    pub fn raise_static(&self, args: &mut A, intrinsic: fn(&A) -> R) -> Result<R, RaiseError> {
        if self.plain.load(Ordering::Acquire) {
            return Ok(intrinsic(args));
        }
        self.raise_extended(args)
    }

    /// [`Event::raise_static`] when handlers were added. Out of line and
    /// cold so that the procedure call is laid out as the fall-through
    /// path: that entry point is for events that usually have none.
    #[cold]
    #[inline(never)]
    fn raise_extended(&self, args: &mut A) -> Result<R, RaiseError> {
        self.raise_listed(args)
    }

    #[inline(never)]
    fn raise_listed(&self, args: &mut A) -> Result<R, RaiseError> {
        let (_, list) = self.list.load();
        self.dispatch(&list, args)
    }

    /// Raises through a raiser-private cache of the list: in the steady
    /// state this performs no atomic read-modify-write at all (one load to
    /// revalidate), which `raise` cannot avoid without `unsafe`. The cache
    /// keeps the list it last used alive until its next raise or its drop.
    #[inline]
    pub fn raise_cached(
        &self,
        cache: &mut RaiseCache<A, R>,
        args: &mut A,
    ) -> Result<R, RaiseError> {
        // The steady state of a `Scan` list: one compare of stamps, then
        // one call of the list's routine (no plan test, no list
        // dereference; for one fused installation, the call *is* its guard
        // and handler).
        if cache.stamp == self.list.stamp() {
            if let Some(routine) = &cache.routine {
                return match routine.run(args) {
                    Some(result) => Ok(result),
                    None => {
                        core::hint::cold_path();
                        self.nothing_fired_cached(cache, args, None)
                    }
                };
            }
            // A `Checked` list (extensions' native handlers): one call too,
            // its faults counted on the way.
            if let Some(checked) = &cache.checked {
                let mut faults = Faults {
                    counters: &self.counters,
                    last: None,
                };
                return match checked.run(args, &mut faults) {
                    Some(result) => Ok(result),
                    None => self.nothing_fired_cached(cache, args, faults.last),
                };
            }
        }
        // The intrinsic handler alone has no routine: tested second, and
        // laid out of the extended path, so that the extended case pays
        // nothing for it (an intrinsic-only raise is best made with
        // `raise_static`).
        core::hint::cold_path();
        if self.plain.load(Ordering::Acquire) {
            if let Some(intrinsic) = &self.intrinsic {
                return Ok(intrinsic.call(args));
            }
        }
        self.raise_cached_slow(cache, args)
    }

    /// A stale cache, or a list not on the `Scan` plan.
    #[cold]
    #[inline(never)]
    fn raise_cached_slow(
        &self,
        cache: &mut RaiseCache<A, R>,
        args: &mut A,
    ) -> Result<R, RaiseError> {
        let list = match &cache.list {
            Some(list) if cache.stamp == self.list.stamp() => list,
            _ => {
                let (stamp, list) = self.list.load();
                cache.stamp = stamp;
                cache.routine = list.routine.clone().map(|routine| routine.hold());
                cache.checked = list.checked.clone().map(|checked| checked.hold());
                cache.list.insert(list)
            }
        };
        self.dispatch(list, args)
    }

    /// No handler of a cached `Scan` or `Checked` list fired (`fault`:
    /// the last one that faulted).
    #[cold]
    #[inline(never)]
    fn nothing_fired_cached(
        &self,
        cache: &RaiseCache<A, R>,
        args: &mut A,
        fault: Option<Fault>,
    ) -> Result<R, RaiseError> {
        match &cache.list {
            Some(list) => self.nothing_fired(list, args, fault),
            // Unreachable: `scan` is only set with `list`.
            None => Err(RaiseFailure::NoHandler { event: self.name }.into()),
        }
    }

    /// Runs a list: one test of its plan, then the loop. Only the `Scan`
    /// plan is inlined into the raiser (and laid out as the fall-through
    /// path); the others are calls.
    #[inline(always)]
    fn dispatch(&self, list: &List<A, R>, args: &mut A) -> Result<R, RaiseError> {
        debug_assert_eq!(list.event, self.id);
        let Some(routine) = &list.routine else {
            core::hint::cold_path();
            return self.dispatch_planned(list, args);
        };
        match routine.run(args) {
            Some(result) => Ok(result),
            None => self.nothing_fired(list, args, None),
        }
    }

    /// The `Indexed`, `Checked` and `General` plans.
    #[inline(never)]
    fn dispatch_planned(&self, list: &List<A, R>, args: &mut A) -> Result<R, RaiseError> {
        if let Some(checked) = &list.checked {
            let mut faults = Faults {
                counters: &self.counters,
                last: None,
            };
            return match checked.run(args, &mut faults) {
                Some(result) => Ok(result),
                None => self.nothing_fired(list, args, faults.last),
            };
        }
        if list.plan == Plan::General {
            return self.dispatch_general(list, args);
        }
        match self.run_indexed(list, args) {
            Some(result) => Ok(result),
            None => self.nothing_fired(list, args, None),
        }
    }

    /// The `Indexed` plan: the decision index's candidates, scanned.
    #[inline(always)]
    fn run_indexed(&self, list: &List<A, R>, args: &A) -> Option<R> {
        let Some(index) = &list.index else {
            return scan(list.simple.iter(), args);
        };
        let mut result = None;
        index.for_each_candidate(
            &mut result,
            |_, field| field_value(field, args, &list.fields),
            |result, position| {
                if let Some(entry) = list.simple.get(position as usize) {
                    simple_step(entry, args, result);
                }
            },
        );
        result
    }

    /// The `General` plan: accounting, working copy, then [`Event::run`].
    #[inline]
    fn dispatch_general(&self, list: &List<A, R>, args: &mut A) -> Result<R, RaiseError> {
        match &list.accounting {
            None => self.dispatch_args(list, args),
            Some(clock) => {
                Counters::bump(&self.counters.raised, 1);
                let start = clock.as_ref().map(|c| c.now_ns());
                let result = self.dispatch_args(list, args);
                if let (Some(clock), Some(start)) = (clock, start) {
                    Counters::bump(&self.counters.time_ns, clock.now_ns().saturating_sub(start));
                }
                result
            }
        }
    }

    #[inline]
    fn dispatch_args(&self, list: &List<A, R>, args: &mut A) -> Result<R, RaiseError> {
        if !list.needs_copy {
            return self.run(list, args);
        }
        // Filters present: they work on a copy; only VAR parameters go back.
        let mut work = args.clone();
        let result = self.run(list, &mut work);
        for &index in self.var_params.iter() {
            args.copy_param_from(index, &work);
        }
        result
    }

    fn run(&self, list: &List<A, R>, args: &mut A) -> Result<R, RaiseError> {
        let mut outcome = Outcome {
            result: None,
            fault: None,
        };
        match &list.index {
            Some(index) if list.use_index => index.for_each_candidate(
                args,
                |args, field| field_value(field, args, &list.fields),
                |args, position| {
                    if let Some(entry) = list.entries.get(position as usize) {
                        self.step(list, entry, args, &mut outcome);
                    }
                },
            ),
            _ => {
                for entry in list.entries.iter() {
                    self.step(list, entry, args, &mut outcome);
                }
            }
        }
        if let Some(result) = outcome.result {
            return Ok(result);
        }
        self.nothing_fired(list, args, outcome.fault)
    }

    /// Nothing fired: the default handler, else an error (003 §2.3).
    #[cold]
    #[inline(never)]
    fn nothing_fired(
        &self,
        list: &List<A, R>,
        args: &mut A,
        fault: Option<Fault>,
    ) -> Result<R, RaiseError> {
        let failure = match (&list.default, fault) {
            (Some((code, signature)), _) => match code.run(args, signature, &Invocation::default())
            {
                Ok(result) => return Ok(result),
                Err(fault) => RaiseFailure::DefaultFaulted {
                    event: self.name,
                    fault,
                },
            },
            (None, Some(fault)) => RaiseFailure::Faulted {
                event: self.name,
                fault,
            },
            (None, None) => RaiseFailure::NoHandler { event: self.name },
        };
        Err(failure.into())
    }

    /// Guards, then the handler, for one entry of the general plan.
    #[inline(always)]
    fn step(&self, list: &List<A, R>, entry: &Entry<A, R>, args: &mut A, outcome: &mut Outcome<R>) {
        if let Some(guard) = &entry.guard {
            if !guard(args) {
                return;
            }
        }
        if let Some(code) = &entry.fast {
            let value = code(args);
            outcome.accept(value, &list.result);
            return;
        }
        if let Some((code, invocation)) = &entry.fallible {
            match code(args, invocation) {
                Ok(value) => outcome.accept(value, &list.result),
                Err(fault) => self.faulted(fault, outcome),
            }
            return;
        }
        self.invoke(list, entry, args, outcome)
    }

    /// A handler faulted: counted, and kept for the raiser in case no
    /// other handler answers.
    #[cold]
    #[inline(never)]
    fn faulted(&self, fault: Fault, outcome: &mut Outcome<R>) {
        if fault == Fault::BudgetExhausted {
            Counters::bump(&self.counters.terminated, 1);
        }
        Counters::bump(&self.counters.faults, 1);
        outcome.fault = Some(fault);
    }

    #[inline(never)]
    fn invoke(
        &self,
        list: &List<A, R>,
        entry: &Entry<A, R>,
        args: &mut A,
        outcome: &mut Outcome<R>,
    ) {
        let result = match entry.mode {
            Mode::Synchronous => entry
                .code
                .run(args, &entry.signature, &Invocation::default()),
            Mode::Ephemeral(budget) => entry.code.run(
                args,
                &entry.signature,
                &Invocation {
                    budget: Some(budget),
                },
            ),
            Mode::Asynchronous => {
                self.spawn(entry, args);
                // An asynchronous handler gives no result; for events without
                // one it still counts as having handled the raise.
                match R::unit() {
                    Some(unit) => Ok(unit),
                    None => return,
                }
            }
        };
        match result {
            Ok(value) => outcome.accept(value, &list.result),
            Err(fault) => self.faulted(fault, outcome),
        }
    }

    #[cold]
    fn spawn(&self, entry: &Entry<A, R>, args: &A) {
        // Install-time checks guarantee a spawner and no by-reference
        // arguments: the task gets its own copy of the arguments.
        let Some(spawner) = &self.spawner else { return };
        let code = entry.code.clone();
        let signature = entry.signature.clone();
        let mut copy = args.clone();
        let task = Box::new(move || {
            let _ = code.run(&mut copy, &signature, &Invocation::default());
        });
        match spawner.spawn(task) {
            Ok(()) => Counters::bump(&self.counters.spawned, 1),
            Err(_) => Counters::bump(&self.counters.faults, 1),
        }
    }

    // ----------------------------------------------------------------------
    // Installing and changing handlers.

    /// Installs a handler on behalf of `requester`: type check, authorizer,
    /// mode and ordering checks, then publication. Returns the new binding.
    pub fn install(
        &self,
        requester: Principal,
        install: Install<A, R>,
    ) -> Result<BindingId, Error> {
        self.signature
            .check_handler(&install.handler.signature, install.is_filter)?;
        install.handler.check_closure()?;
        let mut state = self.state.lock();
        for guard in &install.guards {
            guard.check(&self.signature, state.fields.len())?;
        }
        let id = BindingId(state.next_binding);
        let mut grant = Grant::default();
        if let Some(authorizer) = &state.authorizer {
            let request = Request {
                operation: Operation::Install,
                requester,
                installer: requester,
                binding: id,
                handler_name: install.handler.name,
                signature: &install.handler.signature,
                accepts_termination: install.handler.accepts_termination,
                is_filter: install.is_filter,
                mode: install.mode,
                order: &install.order,
                credential: install.credential.as_deref(),
            };
            authorizer
                .authorize(&request, &mut grant)
                .map_err(Error::Denied)?;
        }
        for guard in &grant.guards {
            guard
                .check(&self.signature, state.fields.len())
                .map_err(Error::ImposedGuard)?;
        }
        let mode = grant.mode.unwrap_or(install.mode);
        let mutates = install.handler.code.mutates(&install.handler.signature);
        self.check_mode(&state, mode, &install.handler, mutates || install.is_filter)?;
        let mut order = install.order;
        order.extend(grant.order);
        let at = place(
            state.bindings.iter().map(|b| (b.id, b.order.as_slice())),
            id,
            &order,
        )?;
        state.next_binding += 1;
        let guards = number(&mut state.next_guard, install.guards);
        let imposed = number(&mut state.next_guard, grant.guards);
        // `Install::guarded` put the fused guard first, as `Install::new`
        // did the guard of `Handler::fallible_guarded`.
        let fused = install.fused.zip(guards.first().map(|(id, _)| *id));
        let checked_guard = match install.checked_guarded {
            true => guards.first().map(|(id, _)| *id),
            false => None,
        };
        let checked = install
            .handler
            .checked
            .as_ref()
            .map(|views| (checked_guard, views.alone.clone()));
        let installed_guard = guards.first().map(|(id, _)| *id);
        state.bindings.insert(
            at,
            Binding {
                id,
                installer: requester,
                handler: install.handler,
                guards,
                imposed,
                order,
                mode,
                is_filter: install.is_filter,
                fused: fused.map(|(code, guard)| (guard, code)),
                checked,
                installed_guard,
            },
        );
        self.republish(&state);
        Ok(id)
    }

    fn check_mode(
        &self,
        state: &State<A, R>,
        mode: Mode,
        handler: &Handler<A, R>,
        by_reference: bool,
    ) -> Result<(), Error> {
        match mode {
            Mode::Synchronous => Ok(()),
            Mode::Ephemeral(_) if !handler.accepts_termination => Err(Error::NotEphemeral),
            Mode::Ephemeral(_) => Ok(()),
            Mode::Asynchronous => {
                if by_reference || self.signature.has_by_reference() {
                    Err(Error::AsyncByReference)
                } else if R::unit().is_none() && state.default.is_none() {
                    Err(Error::AsyncNeedsDefault)
                } else if self.spawner.is_none() {
                    Err(Error::NoSpawner)
                } else {
                    Ok(())
                }
            }
        }
    }

    /// Consults the authorizer (or, without one, the installer rule) about
    /// an operation on an existing binding; returns its index and grant.
    fn authorize_change(
        &self,
        state: &State<A, R>,
        requester: Principal,
        binding: BindingId,
        operation: Operation,
        order: &[Order],
        credential: Option<&(dyn Any + Send + Sync)>,
    ) -> Result<(usize, Grant<A>), Error> {
        let at = state
            .bindings
            .iter()
            .position(|b| b.id == binding)
            .ok_or(Error::UnknownBinding(binding))?;
        let b = &state.bindings[at];
        let mut grant = Grant::default();
        match &state.authorizer {
            Some(authorizer) => {
                let request = Request {
                    operation,
                    requester,
                    installer: b.installer,
                    binding,
                    handler_name: b.handler.name,
                    signature: &b.handler.signature,
                    accepts_termination: b.handler.accepts_termination,
                    is_filter: b.is_filter,
                    mode: b.mode,
                    order,
                    credential,
                };
                authorizer
                    .authorize(&request, &mut grant)
                    .map_err(Error::Denied)?;
            }
            None if requester != b.installer && requester != Principal::KERNEL => {
                return Err(Error::NotInstaller)
            }
            None => {}
        }
        Ok((at, grant))
    }

    /// Removes an installation (the intrinsic one included: SPIN's way of
    /// replacing an implementation is to deregister the intrinsic handler
    /// and install another).
    pub fn remove(&self, requester: Principal, binding: BindingId) -> Result<(), Error> {
        let mut state = self.state.lock();
        let (at, _) =
            self.authorize_change(&state, requester, binding, Operation::Remove, &[], None)?;
        state.bindings.remove(at);
        // Room goes back with the handler: an event that once had many
        // bindings does not keep their space for ever (removals are rare;
        // the next install pays one reallocation).
        state.bindings.shrink_to_fit();
        // Constraints relative to a removed binding are now vacuous.
        for b in &mut state.bindings {
            b.order
                .retain(|o| !matches!(o, Order::Before(t) | Order::After(t) if *t == binding));
        }
        self.republish(&state);
        Ok(())
    }

    /// Replaces the code of an installation, keeping the rest: its id,
    /// place and ordering constraints, mode, imposed guards and the
    /// guards added since. For an installer that has faster code of the
    /// same behaviour (an extension whose module was compiled to native
    /// code after it bound its handlers), not for changing what an
    /// installation does: `handler` must behave as the code it replaces.
    /// A guard (`guard`, or the one a [`Handler::fallible_guarded`]
    /// handler brings) takes the place of the first guard the
    /// installation came with, which must still be there, and must behave
    /// as it; without one, the guards stay. Checked as an installation is (type, mode), and
    /// authorized as a change ([`Operation::ReplaceCode`]; without an
    /// authorizer, the installer or the kernel only).
    pub fn replace_code(
        &self,
        requester: Principal,
        binding: BindingId,
        mut handler: Handler<A, R>,
        guard: Option<Guard<A>>,
    ) -> Result<(), Error> {
        handler.check_closure()?;
        let brought = handler
            .checked
            .as_mut()
            .and_then(|views| views.guard.take());
        let checked_guarded = brought.is_some();
        let guard = brought.or(guard);
        let mut state = self.state.lock();
        if let Some(guard) = &guard {
            guard.check(&self.signature, state.fields.len())?;
        }
        let (at, _) = self.authorize_change(
            &state,
            requester,
            binding,
            Operation::ReplaceCode,
            &[],
            None,
        )?;
        let current = &state.bindings[at];
        self.signature
            .check_handler(&handler.signature, current.is_filter)?;
        let mutates = handler.code.mutates(&handler.signature);
        self.check_mode(&state, current.mode, &handler, mutates || current.is_filter)?;
        // The guard it came with, if it still has it.
        let replaced = current.installed_guard.and_then(|id| {
            let position = current.guards.iter().position(|(own, _)| *own == id)?;
            Some((id, position))
        });
        let first_guard = match (&guard, replaced) {
            (None, _) => None,
            (Some(_), Some(replaced)) => Some(replaced),
            (Some(_), None) => return Err(Error::NoGuardToReplace(binding)),
        };
        let current = &mut state.bindings[at];
        if let (Some(guard), Some((_, position))) = (guard, first_guard) {
            current.guards[position].1 = guard;
        }
        let checked_guard = first_guard.map(|(id, _)| id).filter(|_| checked_guarded);
        current.checked = handler
            .checked
            .as_ref()
            .map(|views| (checked_guard, views.alone.clone()));
        // Rust code fused with its guard (`Install::guarded`) is replaced
        // too: the guard and the code are the new ones.
        current.fused = None;
        current.handler = handler;
        self.republish(&state);
        Ok(())
    }

    /// Replaces the ordering constraints of an installation (003 §2.3: "the
    /// dispatcher allows the ordering constraints associated with a given
    /// handler to be queried and dynamically changed"). Refused, with the
    /// list unchanged, when they cannot be met.
    pub fn reorder(
        &self,
        requester: Principal,
        binding: BindingId,
        order: &[Order],
    ) -> Result<(), Error> {
        let mut state = self.state.lock();
        let (at, grant) =
            self.authorize_change(&state, requester, binding, Operation::Reorder, order, None)?;
        let mut constraints = order.to_vec();
        constraints.extend(grant.order);
        let mut rest: Vec<(BindingId, &[Order])> = Vec::with_capacity(state.bindings.len());
        rest.extend(
            state
                .bindings
                .iter()
                .filter(|b| b.id != binding)
                .map(|b| (b.id, b.order.as_slice())),
        );
        let to = place(rest.iter().copied(), binding, &constraints)?;
        let mut moved = state.bindings.remove(at);
        moved.order = constraints;
        state.bindings.insert(to, moved);
        self.republish(&state);
        Ok(())
    }

    /// Stacks another guard on an installation.
    pub fn add_guard(
        &self,
        requester: Principal,
        binding: BindingId,
        guard: Guard<A>,
    ) -> Result<GuardId, Error> {
        let mut state = self.state.lock();
        guard.check(&self.signature, state.fields.len())?;
        let (at, grant) =
            self.authorize_change(&state, requester, binding, Operation::AddGuard, &[], None)?;
        let id = GuardId(state.next_guard);
        state.next_guard += 1;
        state.bindings[at].guards.push((id, guard));
        let imposed = number(&mut state.next_guard, grant.guards);
        state.bindings[at].imposed.extend(imposed);
        self.republish(&state);
        Ok(id)
    }

    /// Removes a guard the installer added (imposed guards stay).
    pub fn remove_guard(
        &self,
        requester: Principal,
        binding: BindingId,
        guard: GuardId,
    ) -> Result<(), Error> {
        let mut state = self.state.lock();
        let (at, _) = self.authorize_change(
            &state,
            requester,
            binding,
            Operation::RemoveGuard,
            &[],
            None,
        )?;
        let guards = &mut state.bindings[at].guards;
        let before = guards.len();
        guards.retain(|(id, _)| *id != guard);
        if guards.len() == before {
            return Err(Error::UnknownGuard(guard));
        }
        self.republish(&state);
        Ok(())
    }

    // ----------------------------------------------------------------------
    // Authority operations.

    fn check_authority(&self, authority: &Authority) -> Result<(), Error> {
        if authority.event == self.id {
            Ok(())
        } else {
            Err(Error::NotAuthority)
        }
    }

    /// Registers (or clears) the authorizer consulted on every installation,
    /// removal and change (SPIN's `InstallAuthorizerForEvent`).
    pub fn set_authorizer(
        &self,
        authority: &Authority,
        authorizer: Option<Arc<dyn Authorizer<A>>>,
    ) -> Result<(), Error> {
        self.check_authority(authority)?;
        self.state.lock().authorizer = authorizer;
        Ok(())
    }

    /// Sets the default handler, run when no other handler fires.
    pub fn set_default(
        &self,
        authority: &Authority,
        default: Option<Handler<A, R>>,
    ) -> Result<(), Error> {
        self.check_authority(authority)?;
        if let Some(handler) = &default {
            self.signature.check_handler(&handler.signature, false)?;
            handler.check_closure()?;
        }
        let mut state = self.state.lock();
        let has_async = state.bindings.iter().any(|b| b.mode == Mode::Asynchronous);
        if default.is_none() && has_async && R::unit().is_none() {
            return Err(Error::AsyncNeedsDefault);
        }
        state.default = default;
        self.republish(&state);
        Ok(())
    }

    /// Sets the result handler that folds several handlers' results.
    pub fn set_result_handler(
        &self,
        authority: &Authority,
        result: Option<ResultHandler<R>>,
    ) -> Result<(), Error> {
        self.check_authority(authority)?;
        let mut state = self.state.lock();
        state.result = result;
        self.republish(&state);
        Ok(())
    }

    /// Defines a named field for declarative guards, e.g. the destination
    /// port of a packet argument. The projection must be a pure function.
    pub fn define_field(
        &self,
        authority: &Authority,
        name: &'static str,
        read: fn(&A) -> u64,
    ) -> Result<Field, Error> {
        self.check_authority(authority)?;
        let mut state = self.state.lock();
        if let Some(i) = state.fields.iter().position(|(n, _)| *n == name) {
            return Ok(Field::Named(i));
        }
        state.fields.push((name, read));
        Ok(Field::Named(state.fields.len() - 1))
    }

    /// The field defined under `name`, if any.
    pub fn field(&self, name: &str) -> Option<Field> {
        let state = self.state.lock();
        state
            .fields
            .iter()
            .position(|(n, _)| *n == name)
            .map(Field::Named)
    }

    /// Imposes a guard on an existing installation.
    pub fn impose_guard(
        &self,
        authority: &Authority,
        binding: BindingId,
        guard: Guard<A>,
    ) -> Result<GuardId, Error> {
        self.check_authority(authority)?;
        let mut state = self.state.lock();
        guard
            .check(&self.signature, state.fields.len())
            .map_err(Error::ImposedGuard)?;
        let id = GuardId(state.next_guard);
        state.next_guard += 1;
        let b = state
            .bindings
            .iter_mut()
            .find(|b| b.id == binding)
            .ok_or(Error::UnknownBinding(binding))?;
        b.imposed.push((id, guard));
        self.republish(&state);
        Ok(id)
    }

    /// Removes an imposed guard.
    pub fn remove_imposed_guard(
        &self,
        authority: &Authority,
        binding: BindingId,
        guard: GuardId,
    ) -> Result<(), Error> {
        self.check_authority(authority)?;
        let mut state = self.state.lock();
        let b = state
            .bindings
            .iter_mut()
            .find(|b| b.id == binding)
            .ok_or(Error::UnknownBinding(binding))?;
        let before = b.imposed.len();
        b.imposed.retain(|(id, _)| *id != guard);
        if b.imposed.len() == before {
            return Err(Error::UnknownGuard(guard));
        }
        self.republish(&state);
        Ok(())
    }

    /// Reinstalls the intrinsic handler (first in the list) after it was
    /// removed.
    pub fn restore_intrinsic(&self, authority: &Authority) -> Result<(), Error> {
        self.check_authority(authority)?;
        let mut state = self.state.lock();
        if let Some(intrinsic) = self.intrinsic {
            if !state.bindings.iter().any(|b| b.id == BindingId::INTRINSIC) {
                state.bindings.insert(0, intrinsic_binding(intrinsic));
                self.republish(&state);
            }
        }
        Ok(())
    }

    // ----------------------------------------------------------------------
    // Accounting and queries.

    /// Starts counting raises (and time, with a clock). Disables the
    /// intrinsic-only shortcut while on.
    pub fn enable_accounting(&self, clock: Option<Arc<dyn Clock>>) {
        let mut state = self.state.lock();
        state.accounting = Some(clock);
        self.republish(&state);
    }

    /// Stops counting raises and time.
    pub fn disable_accounting(&self) {
        let mut state = self.state.lock();
        state.accounting = None;
        self.republish(&state);
    }

    /// The event's figures (table 3 of 003).
    pub fn stats(&self) -> EventStats {
        let state = self.state.lock();
        let guards = state
            .bindings
            .iter()
            .map(|b| b.guards.len() + b.imposed.len())
            .sum();
        self.counters.snapshot(state.bindings.len(), guards)
    }

    /// The installations, in execution order.
    pub fn bindings(&self) -> Vec<BindingId> {
        self.state.lock().bindings.iter().map(|b| b.id).collect()
    }

    /// The ordering constraints of an installation.
    pub fn order_of(&self, binding: BindingId) -> Option<Vec<Order>> {
        let state = self.state.lock();
        state
            .bindings
            .iter()
            .find(|b| b.id == binding)
            .map(|b| b.order.clone())
    }

    /// The execution mode of an installation (after any imposed by the
    /// authorizer).
    pub fn mode_of(&self, binding: BindingId) -> Option<Mode> {
        let state = self.state.lock();
        state
            .bindings
            .iter()
            .find(|b| b.id == binding)
            .map(|b| b.mode)
    }

    /// The number of guards (own, imposed) of an installation.
    pub fn guards_of(&self, binding: BindingId) -> Option<(usize, usize)> {
        let state = self.state.lock();
        state
            .bindings
            .iter()
            .find(|b| b.id == binding)
            .map(|b| (b.guards.len(), b.imposed.len()))
    }

    /// The ids of an installation's guards (own, imposed), in the order
    /// they were added: what [`Event::remove_guard`] and
    /// [`Event::remove_imposed_guard`] take for guards given at
    /// installation (e.g. the one of [`Install::guarded`], first).
    pub fn guard_ids_of(&self, binding: BindingId) -> Option<(Vec<GuardId>, Vec<GuardId>)> {
        let state = self.state.lock();
        state.bindings.iter().find(|b| b.id == binding).map(|b| {
            (
                b.guards.iter().map(|(id, _)| *id).collect(),
                b.imposed.iter().map(|(id, _)| *id).collect(),
            )
        })
    }

    /// Whether an installation's guard and handler currently run as one
    /// fused call (see [`Install::guarded`]): it was installed so, that
    /// guard is its only one, and the event's list is on the plan that
    /// runs fused code (every installation fused, synchronous closures, no
    /// result handler, accounting or decision index).
    pub fn is_fused(&self, binding: BindingId) -> bool {
        let state = self.state.lock();
        let fusable = state.bindings.iter().any(|b| b.id == binding && fusable(b));
        let (_, list) = self.list.load();
        fusable && list.all_fused
    }

    /// Whether a raise is currently a direct call of the intrinsic handler.
    pub fn is_intrinsic_only(&self) -> bool {
        self.plain.load(Ordering::Acquire)
    }

    /// Whether no handler is installed and accounting is off, so that a
    /// raise would only run the default handler (if any). A raiser whose
    /// arguments are costly to build (a packet made a capability) may then
    /// do what the default does itself, as `raise` calls a lone intrinsic
    /// directly.
    pub fn is_unhandled(&self) -> bool {
        self.unhandled.load(Ordering::Acquire)
    }

    /// The generation of the published list (changes on every publication).
    pub fn generation(&self) -> u64 {
        self.list.generation()
    }

    // ----------------------------------------------------------------------
    // Compilation and publication.

    /// Compiles the master list into a [`List`] and publishes it. O(n) in
    /// the number of handlers plus guards (O(n log n) with declarative
    /// guards, for sorting the decision tables).
    ///
    /// This is where the raise path is made cheap: each entry's guards
    /// (installer's and imposed, minus the index key when the index is used)
    /// become one predicate, and the list gets the plan a raise follows.
    fn republish(&self, state: &State<A, R>) {
        let predicates: Vec<Vec<Predicate>> = state
            .bindings
            .iter()
            .map(|b| {
                b.imposed
                    .iter()
                    .chain(&b.guards)
                    .filter_map(|(_, g)| g.predicate())
                    .collect()
            })
            .collect();
        let index = DecisionIndex::build(predicates.iter().map(|p| p.as_slice()));
        let mutates = state
            .bindings
            .iter()
            .any(|b| b.handler.code.mutates(&b.handler.signature));
        // Filters change what later guards see, so the index (computed once
        // per raise) is not used when some entry mutates its arguments.
        let use_index = !mutates && index.as_ref().is_some_and(|i| i.mergeable());
        let fields: Arc<[FieldReader<A>]> = state.fields.iter().map(|(_, f)| *f).collect();
        let guards = state
            .bindings
            .iter()
            .zip(&predicates)
            .map(|(b, predicates)| {
                let mut guards: Vec<&GuardCode<A>> = b
                    .imposed
                    .iter()
                    .chain(&b.guards)
                    .map(|(_, g)| &g.code)
                    .collect();
                if use_index {
                    // Reached through the index, an entry's key predicate holds.
                    if let Some(key) = key_of(predicates) {
                        let at = guards
                            .iter()
                            .position(|g| matches!(g, GuardCode::Declarative(p) if *p == key));
                        if let Some(at) = at {
                            guards.remove(at);
                        }
                    }
                }
                compile_guard(guards, &fields)
            });
        let simple = state.accounting.is_none()
            && state.result.is_none()
            && state.bindings.iter().all(|b| {
                matches!(
                    (&b.handler.code, b.mode),
                    (Code::ByValue(_), Mode::Synchronous)
                )
            });
        // Synchronous by-value closures and fallible typed code (at least
        // one), nothing else: the `Checked` plan (not with the index, whose
        // keys the guards then omit).
        let checked_plan = !simple
            && !use_index
            && state.accounting.is_none()
            && state.result.is_none()
            && state.bindings.iter().all(|b| {
                matches!(
                    (&b.handler.code, b.mode),
                    (Code::ByValue(_), Mode::Synchronous)
                        | (Code::Fallible(_), Mode::Synchronous | Mode::Ephemeral(_))
                )
            });
        let mut checked_entries: Vec<Checked<A, R>> = Vec::new();
        let (plan, simple_entries, entries) = if checked_plan {
            checked_entries = state
                .bindings
                .iter()
                .zip(guards)
                .filter_map(|(b, guard)| {
                    let invocation = Invocation {
                        budget: match b.mode {
                            Mode::Ephemeral(budget) => Some(budget),
                            _ => None,
                        },
                    };
                    let code = match &b.handler.code {
                        Code::ByValue(code) => CheckedCode::Sure(code.clone()),
                        Code::Fallible(code) => CheckedCode::Fallible(code.clone(), invocation),
                        _ => return None,
                    };
                    Some(Checked { guard, code })
                })
                .collect();
            (Plan::Checked, Arc::from([]), Box::default())
        } else if simple {
            let simple_entries: Arc<[Simple<A, R>]> = state
                .bindings
                .iter()
                .zip(guards)
                .filter_map(|(b, guard)| match &b.handler.code {
                    Code::ByValue(code) => Some(Simple {
                        guard,
                        code: code.clone(),
                    }),
                    _ => None,
                })
                .collect();
            let plan = if use_index { Plan::Indexed } else { Plan::Scan };
            (plan, simple_entries, Box::default())
        } else {
            let entries: Box<[Entry<A, R>]> = state
                .bindings
                .iter()
                .zip(guards)
                .map(|(b, guard)| Entry {
                    guard,
                    fast: match (&b.handler.code, b.mode) {
                        (Code::ByValue(f), Mode::Synchronous) => Some(f.clone()),
                        _ => None,
                    },
                    fallible: match (&b.handler.code, b.mode) {
                        (Code::Fallible(f), Mode::Synchronous) => {
                            Some((f.clone(), Invocation::default()))
                        }
                        (Code::Fallible(f), Mode::Ephemeral(budget)) => Some((
                            f.clone(),
                            Invocation {
                                budget: Some(budget),
                            },
                        )),
                        _ => None,
                    },
                    code: b.handler.code.clone(),
                    signature: b.handler.signature.clone(),
                    mode: b.mode,
                })
                .collect();
            (Plan::General, Arc::from([]), entries)
        };
        let plain = state.accounting.is_none()
            && state.bindings.len() == 1
            && state.bindings[0].id == BindingId::INTRINSIC
            && state.bindings[0].imposed.is_empty()
            && state.bindings[0].guards.is_empty()
            && state.bindings[0].mode == Mode::Synchronous;
        // Fused code is used only when every installation has it (else the
        // list keeps one uniform loop, its fused installations running
        // their guard and handler separately).
        let fused = (plan == Plan::Scan)
            .then(|| {
                state
                    .bindings
                    .iter()
                    .map(|b| fusable(b).then(|| b.fused.as_ref().map(|(_, f)| f.clone())))
                    .collect::<Option<Option<Vec<FusedViews<A, R>>>>>()
            })
            .flatten()
            .flatten();
        // The routine a cache runs: a lone fused installation, or a run of
        // installations sharing their code, is called directly; other
        // fused lists are chains (see `fused::compile`); the rest a loop.
        let routine: Option<RoutineCode<A, R>> = match (plan, &fused) {
            // Raisers call the intrinsic directly (`plain`).
            _ if plain => None,
            (Plan::Scan, Some(fused)) if !fused.is_empty() => compile(fused),
            (Plan::Scan, _) => Some(Arc::new(SimpleLoop(simple_entries.clone()))),
            _ => None,
        };
        // A `Checked` list's routine: a lone fallible entry whose concrete
        // type was kept is called statically (with its own guard, if that
        // is its only one), else directly; anything else is the loop.
        let checked: Option<CheckedRoutineCode<A, R>> = match checked_entries.as_slice() {
            _ if plan != Plan::Checked => None,
            [Checked {
                code: CheckedCode::Fallible(_, invocation),
                ..
            }] if checked_alone(&state.bindings[0]).is_some() => {
                checked_alone(&state.bindings[0]).map(|alone| alone(*invocation))
            }
            [Checked {
                guard,
                code: CheckedCode::Fallible(code, invocation),
            }] => Some(Arc::new(LoneChecked {
                guard: guard.clone(),
                code: code.clone(),
                invocation: *invocation,
            })),
            _ => Some(Arc::new(CheckedLoop(checked_entries.into_boxed_slice()))),
        };
        let list = List {
            event: self.id,
            plan,
            all_fused: fused.is_some(),
            routine,
            simple: simple_entries,
            entries,
            checked,
            index,
            use_index,
            needs_copy: mutates && !self.all_by_reference,
            default: state
                .default
                .as_ref()
                .map(|h| (h.code.clone(), h.signature.clone())),
            result: state.result.clone(),
            fields,
            accounting: state.accounting.clone(),
        };
        let unhandled = state.accounting.is_none() && state.bindings.is_empty();
        if !plain {
            // Leave the shortcut before the list it bypasses changes.
            self.plain.store(false, Ordering::Release);
        }
        if !unhandled {
            self.unhandled.store(false, Ordering::Release);
        }
        self.list.publish(Arc::new(list));
        if plain {
            self.plain.store(true, Ordering::Release);
        }
        if unhandled {
            self.unhandled.store(true, Ordering::Release);
        }
    }
}

impl<A, R> List<A, R> {
    fn empty(event: EventId) -> Self {
        List {
            event,
            plan: Plan::Scan,
            simple: Arc::from([]),
            all_fused: false,
            routine: None,
            entries: Box::new([]),
            checked: None,
            index: None,
            use_index: false,
            needs_copy: false,
            default: None,
            result: None,
            fields: Arc::new([]),
            accounting: None,
        }
    }
}

struct Outcome<R> {
    result: Option<R>,
    fault: Option<Fault>,
}

impl<R> Outcome<R> {
    #[inline(always)]
    fn accept(&mut self, value: R, fold: &Option<ResultHandler<R>>) {
        self.result = Some(match (self.result.take(), fold) {
            (Some(so_far), Some(fold)) => fold(so_far, value),
            // Without a result handler the last handler's result wins
            // (000 §3.2: "returns the result of the final handler").
            _ => value,
        });
    }
}

/// The `Scan`/`Indexed` loop: each entry's guard (if any), then its code;
/// the last result wins. No result handler, faults or modes on these plans.
#[inline(always)]
fn scan<'l, A: 'l, R: 'l>(entries: impl Iterator<Item = &'l Simple<A, R>>, args: &A) -> Option<R> {
    let mut result = None;
    for entry in entries {
        simple_step(entry, args, &mut result);
    }
    result
}

/// The routine of a `Scan` list that is not all fused: the two-pointer
/// loop over [`List::simple`].
struct SimpleLoop<A, R>(Arc<[Simple<A, R>]>);

impl<A: 'static, R: 'static> Routine<A, R> for SimpleLoop<A, R> {
    #[inline]
    fn run(&self, args: &A) -> Option<R> {
        scan(self.0.iter(), args)
    }

    fn hold(self: Arc<Self>) -> HeldRoutine<A, R> {
        Box::new(Held(self))
    }
}

/// One entry of a simple plan: its guard, then its code.
#[inline(always)]
fn simple_step<A, R>(entry: &Simple<A, R>, args: &A, result: &mut Option<R>) {
    let pass = match &entry.guard {
        Some(guard) => guard(args),
        None => true,
    };
    if pass {
        // Without a result handler the last handler's result wins (000
        // §3.2: "returns the result of the final handler").
        *result = Some((entry.code)(args));
    }
}

/// Compiles an entry's guards (all must hold; declarative ones first: they
/// are cheapest and guards are side-effect free, so they may be reordered,
/// 003 §2.3) into one predicate: `None` for no guard, the guard itself for
/// one procedural guard (the common case: no wrapper call), a specialized
/// closure for one declarative guard, else a closure over all of them.
fn compile_guard<A: EventArgs>(
    mut guards: Vec<&GuardCode<A>>,
    fields: &Arc<[FieldReader<A>]>,
) -> Option<GuardFn<A>> {
    guards.sort_by_key(|g| !g.is_declarative());
    match guards.as_slice() {
        [] => None,
        [GuardCode::Procedural(f)] => Some(f.clone()),
        [GuardCode::Declarative(p)] => Some(declarative_guard(*p, fields)),
        _ => {
            let guards: Box<[GuardCode<A>]> = guards.into_iter().cloned().collect();
            let fields = fields.clone();
            Some(Arc::new(move |args: &A| {
                guards.iter().all(|g| g.eval(args, &fields))
            }))
        }
    }
}

/// One declarative guard as a closure specialized on its field and test.
fn declarative_guard<A: EventArgs>(p: Predicate, fields: &[FieldReader<A>]) -> GuardFn<A> {
    match (p.field, p.test) {
        (Field::Param(i), Test::Equals(v)) => Arc::new(move |a: &A| a.scalar(i) == Some(v)),
        (Field::Param(i), _) => Arc::new(move |a: &A| a.scalar(i).is_some_and(|v| p.test(v))),
        (Field::Named(i), _) => match fields.get(i).copied() {
            Some(read) => Arc::new(move |a: &A| p.test(read(a))),
            // Unreachable: fields are checked at installation and never
            // removed. An unreadable field fails the guard.
            None => Arc::new(|_: &A| false),
        },
    }
}

/// Whether a binding's fused code stands for its handler and all its
/// guards: its only guard is the one `Install::guarded` fused.
fn fusable<A, R>(b: &Binding<A, R>) -> bool {
    match (&b.fused, b.guards.as_slice()) {
        (Some((fused, _)), [(only, _)]) => b.imposed.is_empty() && only == fused,
        _ => false,
    }
}

/// The maker of a binding's checked routine, when it stands for the
/// binding's handler and all its guards: it tests exactly the binding's
/// own guards (its fused guard alone, or none) and nothing is imposed.
fn checked_alone<A, R>(b: &Binding<A, R>) -> Option<&CheckedMaker<A, R>> {
    let (covered, alone) = b.checked.as_ref()?;
    let own = match b.guards.as_slice() {
        [] => None,
        [(only, _)] => Some(*only),
        _ => return None,
    };
    (b.imposed.is_empty() && own == *covered).then_some(alone)
}

fn number<A>(next: &mut u64, guards: Vec<Guard<A>>) -> Vec<(GuardId, Guard<A>)> {
    guards
        .into_iter()
        .map(|g| {
            let id = GuardId(*next);
            *next += 1;
            (id, g)
        })
        .collect()
}
