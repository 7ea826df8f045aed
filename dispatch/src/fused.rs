//! A guard and a handler fused at installation (see `Install::guarded`).
//!
//! SPIN met its dispatch goals by generating, at run time, a dispatch
//! routine with the guards inlined. Without run-time code generation (and
//! without `unsafe`) the equivalent is monomorphization at installation:
//! when the installer names the guard's and the handler's concrete closure
//! types, [`Fused`] holds both by value and [`GuardedCode::run`] calls them
//! statically, so a raise makes one indirect call per such handler instead
//! of two.
//!
//! The guard remains an ordinary guard of the installation: the event also
//! keeps a type-erased [`crate::Guard`] and [`crate::Handler`] reaching the
//! same closures (through the same allocation), and publishes the fused call
//! only while the binding's guards are exactly that one guard. Once a guard
//! is added, removed or imposed, the entry is compiled like any other.

use alloc::{boxed::Box, sync::Arc, vec::Vec};
use core::any::{Any, TypeId};

/// A whole `Scan` list as one call: what a raise runs once it knows the
/// list is current. A list of one fused installation is that
/// installation's [`Fused`] itself, so such a raise is one indirect call
/// with the guard and handler inlined into the callee; longer lists are a
/// loop ([`FusedLoop`], or the two-pointer loop in `event.rs`). The result
/// is the last fired handler's, `None` when none fired; it comes back in
/// registers.
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

/// A guard and a handler called through one vtable.
pub(crate) trait GuardedCode<A, R>: Send + Sync {
    /// The guard, then (if it held) the handler, whose result replaces
    /// `result`: one call for both, and the last result is kept without
    /// any work in the caller's loop.
    fn run(&self, args: &A, result: &mut Option<R>);
}

/// A guard and a handler of concrete types, stored together. The
/// type-erased guard and handler of the same installation call these fields
/// through an `Arc<Fused<G, H>>` of the concrete type.
pub(crate) struct Fused<G, H> {
    pub(crate) guard: G,
    pub(crate) handler: H,
}

impl<A, R, G, H> GuardedCode<A, R> for Fused<G, H>
where
    G: Fn(&A) -> bool + Send + Sync + 'static,
    H: Fn(&A) -> R + Send + Sync + 'static,
{
    #[inline]
    fn run(&self, args: &A, result: &mut Option<R>) {
        if (self.guard)(args) {
            *result = Some((self.handler)(args));
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
        if (self.guard)(args) {
            Some((self.handler)(args))
        } else {
            None
        }
    }

    fn hold(self: Arc<Self>) -> HeldRoutine<A, R> {
        Box::new(Held(self))
    }
}

/// A fused guard and handler as the event stores them.
pub(crate) type FusedCode<A, R> = Arc<dyn GuardedCode<A, R>>;

/// The views of one fused installation (or of a run of them, see
/// [`FusedRun`]): as an entry of a loop, as the routine of a list it is
/// alone on, and what [`compile`] needs to merge it with neighbours of the
/// same concrete type.
pub(crate) struct FusedViews<A, R> {
    pub(crate) entry: FusedCode<A, R>,
    pub(crate) alone: RoutineCode<A, R>,
    /// The concrete type behind `entry`: consecutive installations of one
    /// type form a run.
    kind: TypeId,
    /// The same object as `entry`, for [`FusedViews::merge`] to recover
    /// its concrete type (a checked downcast, no `unsafe`).
    object: Arc<dyn Any + Send + Sync>,
    /// Builds one [`FusedRun`] of installations whose `kind` is this one's;
    /// `None` if it cannot (a run is not merged again).
    merge: fn(&[FusedViews<A, R>]) -> Option<FusedViews<A, R>>,
}

impl<A, R> Clone for FusedViews<A, R> {
    fn clone(&self) -> Self {
        FusedViews {
            entry: self.entry.clone(),
            alone: self.alone.clone(),
            kind: self.kind,
            object: self.object.clone(),
            merge: self.merge,
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
            entry: fused.clone(),
            alone: fused.clone(),
            kind: TypeId::of::<Fused<G, H>>(),
            object: fused,
            merge: merge_run::<A, R, G, H>,
        }
    }
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
        entry: merged.clone(),
        alone: merged.clone(),
        kind: TypeId::of::<FusedRun<G, H>>(),
        object: merged,
        merge: |_| None,
    })
}

/// Compiles the fused installations of a `Scan` list, in list order, into
/// the list's routine.
///
/// Consecutive installations of one concrete guard and handler type (the
/// same code installed several times, with its own captures each: a
/// handler per connection, per port, per process) become one
/// [`FusedRun`], which calls that code directly for each of them: one
/// indirect call for the run instead of one per installation. A list that
/// is one installation or one run is that installation or run itself;
/// otherwise a [`FusedLoop`] calls each part.
pub(crate) fn compile<A: 'static, R: 'static>(views: &[FusedViews<A, R>]) -> RoutineCode<A, R> {
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
        [one] => one.alone.clone(),
        _ => Arc::new(FusedLoop(parts.iter().map(|p| p.entry.clone()).collect())),
    }
}

/// Consecutive fused installations of one concrete type, run by one call:
/// the guard and handler code is inlined into a loop over the members'
/// captured state. What SPIN's generated routine did for every handler
/// (straight-line code, no indirect call per handler), obtained by
/// monomorphization for installations that share their code.
pub(crate) struct FusedRun<G, H>(Box<[Arc<Fused<G, H>>]>);

impl<A, R, G, H> GuardedCode<A, R> for FusedRun<G, H>
where
    G: Fn(&A) -> bool + Send + Sync + 'static,
    H: Fn(&A) -> R + Send + Sync + 'static,
{
    #[inline]
    fn run(&self, args: &A, result: &mut Option<R>) {
        for member in self.0.iter() {
            if (member.guard)(args) {
                *result = Some((member.handler)(args));
            }
        }
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
        let mut result = None;
        GuardedCode::run(self, args, &mut result);
        result
    }

    fn hold(self: Arc<Self>) -> HeldRoutine<A, R> {
        Box::new(Held(self))
    }
}

/// A list of several fused installations: one call per entry. The entries
/// are the installations' own `Arc`s: boxing each (as a cache boxes its
/// routine) saves the offset computation per call but adds a dependent load
/// in the callee, and measured slower per extra handler (1.65 against
/// 1.38 ns, `./x bench dispatch`).
pub(crate) struct FusedLoop<A, R>(pub(crate) Arc<[FusedCode<A, R>]>);

impl<A: 'static, R: 'static> Routine<A, R> for FusedLoop<A, R> {
    #[inline]
    fn run(&self, args: &A) -> Option<R> {
        let mut result = None;
        // Two calls per iteration (SPIN's generated routine was straight
        // line code): the loop's own branch is taken once per two handlers.
        let mut pairs = self.0.chunks_exact(2);
        for pair in &mut pairs {
            pair[0].run(args, &mut result);
            pair[1].run(args, &mut result);
        }
        for entry in pairs.remainder() {
            entry.run(args, &mut result);
        }
        result
    }

    fn hold(self: Arc<Self>) -> HeldRoutine<A, R> {
        Box::new(Held(self))
    }
}
