//! Guards and handlers fused at installation (see `Install::guarded`), and
//! the routine a `Scan` list of them is compiled into.
//!
//! SPIN met its dispatch goals by generating, at run time, a dispatch
//! routine with the guards inlined. Without run-time code generation (and
//! without `unsafe`) the equivalent is monomorphization at installation:
//! when the installer names the guard's and the handler's concrete closure
//! types, [`Fused`] holds both by value and calls them statically.
//! Publication then compiles a list of fused installations ([`compile`]):
//!
//! - consecutive installations of the same code (one concrete type, each
//!   with its own captures) become one [`FusedRun`], whose loop calls that
//!   code directly for each: SPIN's inlined handlers;
//! - the parts (installations and runs) are threaded into chains of
//!   [`Link`]s, each calling the next in tail position, which the optimizer
//!   turns into one indirect jump per part: no loop, no call and return
//!   per handler, and the result so far in registers.
//!
//! The guard remains an ordinary guard of the installation: the event also
//! keeps a type-erased [`crate::Guard`] and [`crate::Handler`] reaching the
//! same closures (through the same allocation), and publishes the fused code
//! only while the binding's guards are exactly that one guard. Once a guard
//! is added, removed or imposed, the entry is compiled like any other.

use alloc::{boxed::Box, sync::Arc, vec::Vec};
use core::any::{Any, TypeId};

/// A whole `Scan` list as one call: what a raise runs once it knows the
/// list is current. A list of one fused installation (or one run) is that
/// installation's [`Fused`] (or the [`FusedRun`]) itself, so such a raise
/// is one indirect call with the guard and handler inlined into the callee;
/// longer lists are [`Chains`] (or the two-pointer loop in `event.rs`). The
/// result is the last fired handler's, `None` when none fired; it comes
/// back in registers.
pub(crate) trait Routine<A, R>: Send + Sync {
    /// Runs the list's guards and handlers over `args`.
    fn run(&self, args: &A) -> Option<R>;

    /// This routine as a raise cache holds it: a `Box` whose data pointer
    /// is the object, so that a call needs no offset computed from the
    /// vtable's alignment, as calling through an `Arc<dyn _>` does.
    fn hold(self: Arc<Self>) -> HeldRoutine<A, R>;
}

/// A routine held by a raise cache (see [`Routine::hold`]).
pub(crate) type HeldRoutine<A, R> = Box<dyn Routine<A, R>>;

/// A shared routine of a concrete type, boxed for a raise cache: the call
/// through the box reaches it at a fixed offset.
pub(crate) struct Held<T>(pub(crate) Arc<T>);

impl<A, R, T: Routine<A, R> + 'static> Routine<A, R> for Held<T> {
    #[inline(always)]
    fn run(&self, args: &A) -> Option<R> {
        self.0.run(args)
    }

    fn hold(self: Arc<Self>) -> HeldRoutine<A, R> {
        Box::new(Held(self.0.clone()))
    }
}

/// A list's routine as the list and raise caches store it.
pub(crate) type RoutineCode<A, R> = Arc<dyn Routine<A, R>>;

/// Fused code of a concrete type, called statically by the [`Link`] that
/// holds it.
pub(crate) trait Step<A, R>: Send + Sync {
    /// The guard, then (if it held) the handler, whose result replaces
    /// `last`; for a run, each member in turn.
    fn step(&self, args: &A, last: Option<R>) -> Option<R>;
}

/// A guard and a handler of concrete types, stored together. The
/// type-erased guard and handler of the same installation call these fields
/// through an `Arc<Fused<G, H>>` of the concrete type.
pub(crate) struct Fused<G, H> {
    pub(crate) guard: G,
    pub(crate) handler: H,
}

impl<A, R, G, H> Step<A, R> for Fused<G, H>
where
    G: Fn(&A) -> bool + Send + Sync + 'static,
    H: Fn(&A) -> R + Send + Sync + 'static,
{
    #[inline(always)]
    fn step(&self, args: &A, last: Option<R>) -> Option<R> {
        if (self.guard)(args) {
            Some((self.handler)(args))
        } else {
            last
        }
    }
}

/// One fused installation alone on its list.
impl<A, R, G, H> Routine<A, R> for Fused<G, H>
where
    G: Fn(&A) -> bool + Send + Sync + 'static,
    H: Fn(&A) -> R + Send + Sync + 'static,
{
    #[inline]
    fn run(&self, args: &A) -> Option<R> {
        self.step(args, None)
    }

    fn hold(self: Arc<Self>) -> HeldRoutine<A, R> {
        Box::new(Held(self))
    }
}

/// Consecutive fused installations of one concrete type, run by one call:
/// the guard and handler code is inlined into a loop over the members'
/// captured state. What SPIN's generated routine did for every handler
/// (straight-line code, no indirect call per handler), obtained by
/// monomorphization for installations that share their code.
pub(crate) struct FusedRun<G, H>(Box<[Arc<Fused<G, H>>]>);

impl<A, R, G, H> Step<A, R> for FusedRun<G, H>
where
    G: Fn(&A) -> bool + Send + Sync + 'static,
    H: Fn(&A) -> R + Send + Sync + 'static,
{
    #[inline(always)]
    fn step(&self, args: &A, last: Option<R>) -> Option<R> {
        self.0
            .iter()
            .fold(last, |last, member| member.step(args, last))
    }
}

/// A run that is the whole list.
impl<A, R, G, H> Routine<A, R> for FusedRun<G, H>
where
    G: Fn(&A) -> bool + Send + Sync + 'static,
    H: Fn(&A) -> R + Send + Sync + 'static,
{
    #[inline]
    fn run(&self, args: &A) -> Option<R> {
        self.step(args, None)
    }

    fn hold(self: Arc<Self>) -> HeldRoutine<A, R> {
        Box::new(Held(self))
    }
}

/// The most links in one chain. Each link calls the next in tail position,
/// which the optimizer compiles to a jump; nothing guarantees it, so this
/// bounds the stack a raise uses where it does not (unoptimized builds).
const CHAIN_LENGTH: usize = 16;

/// One part of a chain and, through it, the rest of the chain.
pub(crate) trait Chained<A, R>: Send + Sync {
    /// Runs this link and the ones after it, given the last result so far.
    fn run(&self, args: &A, last: Option<R>) -> Option<R>;
}

/// A link as the one before it (or [`Chains`]) holds it: boxed, so that
/// the call needs no data offset computed from the vtable.
pub(crate) type ChainLink<A, R> = Box<dyn Chained<A, R>>;

/// The code of one installation or run, and the chain after it.
struct Link<T, A, R> {
    code: Arc<T>,
    next: Option<ChainLink<A, R>>,
}

impl<A, R, T: Step<A, R>> Chained<A, R> for Link<T, A, R> {
    #[inline]
    fn run(&self, args: &A, last: Option<R>) -> Option<R> {
        let last = self.code.step(args, last);
        match &self.next {
            // A tail call: threaded code, one indirect jump per part.
            Some(next) => next.run(args, last),
            None => last,
        }
    }
}

/// A list of several parts, as chains of at most [`CHAIN_LENGTH`] links.
struct Chains<A, R>(Box<[ChainLink<A, R>]>);

impl<A: 'static, R: 'static> Routine<A, R> for Chains<A, R> {
    #[inline]
    fn run(&self, args: &A) -> Option<R> {
        self.0
            .iter()
            .fold(None, |last, chain| chain.run(args, last))
    }

    fn hold(self: Arc<Self>) -> HeldRoutine<A, R> {
        Box::new(Held(self))
    }
}

/// Makes fused code a link followed by the given chain.
type MakeLink<A, R> = Arc<dyn Fn(Option<ChainLink<A, R>>) -> ChainLink<A, R> + Send + Sync>;

/// Merges installations of one concrete type into a run (see
/// [`FusedViews::merge`]).
type MergeRun<A, R> = fn(&[FusedViews<A, R>]) -> Option<FusedViews<A, R>>;

/// What [`compile`] needs of one fused installation (or of a run of them).
pub(crate) struct FusedViews<A, R> {
    /// The routine of a list it is alone on.
    alone: RoutineCode<A, R>,
    /// The concrete type of the code: consecutive installations of one
    /// type form a run.
    kind: TypeId,
    /// The code itself, for `merge` to recover its concrete type (a
    /// checked downcast, no `unsafe`).
    object: Arc<dyn Any + Send + Sync>,
    /// Builds one [`FusedRun`] of installations whose `kind` is this one's;
    /// `None` if it cannot (a run is not merged again).
    merge: MergeRun<A, R>,
    /// Makes the code a link of a chain.
    link: MakeLink<A, R>,
}

impl<A, R> Clone for FusedViews<A, R> {
    fn clone(&self) -> Self {
        FusedViews {
            alone: self.alone.clone(),
            kind: self.kind,
            object: self.object.clone(),
            merge: self.merge,
            link: self.link.clone(),
        }
    }
}

impl<A: 'static, R: 'static> FusedViews<A, R> {
    /// The views of `fused`.
    pub(crate) fn of<G, H>(fused: Arc<Fused<G, H>>) -> Self
    where
        G: Fn(&A) -> bool + Send + Sync + 'static,
        H: Fn(&A) -> R + Send + Sync + 'static,
    {
        FusedViews {
            alone: fused.clone(),
            kind: TypeId::of::<Fused<G, H>>(),
            object: fused.clone(),
            merge: merge_run::<A, R, G, H>,
            link: make_link(fused),
        }
    }
}

/// The [`FusedViews::link`] of `code`.
fn make_link<A: 'static, R: 'static, T: Step<A, R> + 'static>(code: Arc<T>) -> MakeLink<A, R> {
    Arc::new(move |next| {
        Box::new(Link {
            code: code.clone(),
            next,
        })
    })
}

/// The [`FusedViews::merge`] of a `Fused<G, H>`: `run` as one
/// [`FusedRun`], or `None` if some member is not a `Fused<G, H>` (which
/// [`compile`] never passes).
fn merge_run<A, R, G, H>(run: &[FusedViews<A, R>]) -> Option<FusedViews<A, R>>
where
    A: 'static,
    R: 'static,
    G: Fn(&A) -> bool + Send + Sync + 'static,
    H: Fn(&A) -> R + Send + Sync + 'static,
{
    let members = run
        .iter()
        .map(|member| member.object.clone().downcast::<Fused<G, H>>().ok())
        .collect::<Option<Box<[_]>>>()?;
    let merged = Arc::new(FusedRun(members));
    Some(FusedViews {
        alone: merged.clone(),
        kind: TypeId::of::<FusedRun<G, H>>(),
        object: merged.clone(),
        merge: |_| None,
        link: make_link(merged),
    })
}

/// Compiles the fused installations of a `Scan` list, in list order, into
/// the list's routine (`None` for no installation).
///
/// Consecutive installations of one concrete guard and handler type (the
/// same code installed several times, with its own captures each: a
/// handler per connection, per port, per process) become one
/// [`FusedRun`]. A list that is one installation or one run is that
/// installation or run itself; otherwise the parts are threaded into
/// [`Chains`].
pub(crate) fn compile<A: 'static, R: 'static>(
    views: &[FusedViews<A, R>],
) -> Option<RoutineCode<A, R>> {
    let mut parts: Vec<FusedViews<A, R>> = Vec::new();
    for run in views.chunk_by(|a, b| a.kind == b.kind) {
        match run {
            [one] => parts.push(one.clone()),
            _ => match (run[0].merge)(run) {
                Some(merged) => parts.push(merged),
                None => parts.extend(run.iter().cloned()),
            },
        }
    }
    match parts.as_slice() {
        [] => None,
        [one] => Some(one.alone.clone()),
        _ => {
            let chains = parts
                .chunks(CHAIN_LENGTH)
                .filter_map(|chunk| {
                    chunk
                        .iter()
                        .rev()
                        .fold(None, |next, part| Some((part.link)(next)))
                })
                .collect();
            Some(Arc::new(Chains(chains)))
        }
    }
}
