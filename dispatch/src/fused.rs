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

use alloc::sync::Arc;

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
    G: Fn(&A) -> bool + Send + Sync,
    H: Fn(&A) -> R + Send + Sync,
{
    #[inline]
    fn run(&self, args: &A, result: &mut Option<R>) {
        if (self.guard)(args) {
            *result = Some((self.handler)(args));
        }
    }
}

/// A fused guard and handler as the event stores them.
pub(crate) type FusedCode<A, R> = Arc<dyn GuardedCode<A, R>>;
