//! A loaded extension: its instance behind a lock, binding its exports to
//! events, calling them with fault containment, and unloading.
//!
//! Ownership: [`Extension`] is a shared handle to [`Shared`], which owns the
//! engine instance (and through it the [`crate::ExtensionState`]: handle table,
//! installations). Typed handlers and guards installed on events hold
//! `Shared` strongly (no weak reference upgraded per raise), the
//! runtime-typed ones weakly; either way unloading, or dropping the last
//! `Extension` (whose shared `Owner` then ends the instance), takes the
//! instance out and frees it even while a raiser still holds an old
//! handler list; such a raiser gets a fault and runs none of its code.
//!
//! One invocation at a time: a Wasm instance is single-threaded. An
//! invocation that finds the instance busy (a re-entrant raise from the
//! extension's own host call, or another CPU) fails with
//! [`CallError::Busy`] instead of waiting, because waiting on a spin lock
//! held further up the same stack would never end.

use alloc::{boxed::Box, format, string::String, sync::Arc, vec::Vec};
use core::{
    fmt,
    sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, Ordering},
};

use dispatch::{BindingId, Budget, Clock, Event, Mode, Principal, Signature, Value, ValueType};
use spin::Mutex;

use crate::{
    config::Limits,
    engine::{
        ExportRef, GuardedCall, HostContext, Instance, ReadOnly, SelfContained, Trap, WasmValue,
        MAX_INTEGER_ARGUMENTS, SELF_CONTAINED_ARGUMENTS,
    },
    error::{BindError, LimitExceeded},
    events::{lift, lower, lowered, EventPort, WasmGuard, WasmHandler},
    handles::Capability,
    module::WasmType,
    purity::check_pure,
    runtime::{FaultedArgs, Strands},
    state::Installed,
    tier::Tier,
};

/// An extension's instance as its lock holds it: native code by its own
/// type, so that the typed entry ([`Shared::invoke_integers`]) reaches it
/// without a virtual call; another engine's behind the trait.
pub(crate) enum Loaded {
    /// Native code.
    #[cfg(feature = "native")]
    Native(Box<crate::engine::native::NativeInstance>),
    /// Any other engine's instance.
    Other(Box<dyn Instance>),
}

impl Loaded {
    /// `instance`, by its own type if it is native code.
    pub(crate) fn new(instance: Box<dyn Instance>) -> Loaded {
        #[cfg(feature = "native")]
        return match instance.into_native() {
            Ok(native) => Loaded::Native(native),
            Err(other) => Loaded::Other(other),
        };
        #[cfg(not(feature = "native"))]
        Loaded::Other(instance)
    }

    /// The instance behind the trait.
    pub(crate) fn instance_mut(&mut self) -> &mut (dyn Instance + 'static) {
        match self {
            #[cfg(feature = "native")]
            Loaded::Native(native) => native.as_mut(),
            Loaded::Other(other) => other.as_mut(),
        }
    }

    /// Ends the instance, giving back the extension's state.
    pub(crate) fn into_state(self) -> crate::state::ExtensionState {
        match self {
            #[cfg(feature = "native")]
            Loaded::Native(native) => native.into_state(),
            Loaded::Other(other) => other.into_state(),
        }
    }
}

impl core::ops::Deref for Loaded {
    type Target = dyn Instance;
    fn deref(&self) -> &Self::Target {
        match self {
            #[cfg(feature = "native")]
            Loaded::Native(native) => native.as_ref(),
            Loaded::Other(other) => other.as_ref(),
        }
    }
}

impl core::ops::DerefMut for Loaded {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.instance_mut()
    }
}

/// Identity of a loaded extension (also its dispatcher [`Principal`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExtensionId(pub u64);

/// Why a call into an extension produced no result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallError {
    /// The code trapped or ran out of fuel (an `Extension.Faulted` event
    /// was raised).
    Trap(Trap),
    /// The extension is running another invocation.
    Busy,
    /// The extension was unloaded.
    Unloaded,
    /// No exported function of that name.
    NoSuchExport(String),
    /// Arguments or result do not fit the function's type.
    Type(String),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Trap(trap) => write!(f, "{trap}"),
            CallError::Busy => f.write_str("extension busy (re-entrant or concurrent invocation)"),
            CallError::Unloaded => f.write_str("extension unloaded"),
            CallError::NoSuchExport(name) => write!(f, "no exported function `{name}`"),
            CallError::Type(why) => write!(f, "type mismatch: {why}"),
        }
    }
}

/// Counters of one extension.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExtensionStats {
    /// Invocations (handlers, guards, calls) started.
    pub invocations: u64,
    /// Invocations aborted by a trap or budget exhaustion.
    pub faults: u64,
    /// Times the instance was locked for exclusive use before these
    /// figures were taken: invocations that needed it, bindings, a
    /// tier-up, earlier stats. Invocations of self-contained and
    /// read-only native code, which run without it, are not among them.
    pub exclusive: u64,
    /// Installations currently held.
    pub handlers: usize,
    /// Live handles.
    pub handles: usize,
    /// Linear memory allocated, in bytes (0 once unloaded).
    pub memory_bytes: usize,
}

/// The shared part of an extension.
pub struct Shared {
    pub(crate) id: ExtensionId,
    pub(crate) name: String,
    pub(crate) limits: Limits,
    /// `limits.fuel_per_invocation`, at most `i64::MAX` (native code
    /// counts fuel in a signed word): computed once, not per raise.
    fuel_limit: u64,
    /// `None` once unloaded. Locked for the length of each invocation.
    pub(crate) instance: Mutex<Option<Loaded>>,
    pub(crate) faulted: Arc<Event<FaultedArgs, ()>>,
    /// The extension's domain: its exports and (unresolved) imports.
    pub(crate) domain: Option<domain::Domain>,
    invocations: AtomicU64,
    faults: AtomicU64,
    /// The kernel's strands, if it has them (see [`Strands`]).
    strands: Option<Arc<dyn Strands>>,
    /// The clock that bounds a wait for another strand.
    clock: Option<Arc<dyn Clock>>,
    /// The strand holding `instance`, recorded only once the holder
    /// calls a kernel procedure that may raise back into the extension
    /// ([`Shared::before_reentry`]); 0 when none, not yet recorded, or no
    /// strands. Only a re-entrant invocation needs it, and it can only
    /// come from such a call; anyone else waits either way. Cleared
    /// before the unlock.
    owner: AtomicU64,
    /// Set by [`Extension::unload`]: self-contained guards, which run
    /// without `instance`, check it instead.
    unloaded: AtomicBool,
    /// How often `instance` was locked and unlocked: odd while it is
    /// held (each [`InstanceGuard`] adds one when made and one when
    /// dropped). Read-only code runs without the lock and keeps its
    /// outcome only if this was even before and unchanged after
    /// ([`Shared::invoke_read_only`]): a sequence lock, whose readers
    /// store nothing.
    writes: AtomicU64,
    /// The tier of the instance (`Tier::code`), set when it is installed.
    pub(crate) tier: AtomicU8,
    /// What a later tier-up needs (loads on the default tier while a
    /// native tier exists); taken by the tier-up.
    pub(crate) tier_up: Mutex<Option<TierUpSource>>,
}

/// The module and its resolved imports, kept for a tier-up.
pub(crate) struct TierUpSource {
    pub(crate) bytes: Arc<[u8]>,
    pub(crate) module: Arc<crate::module::ModuleInfo>,
    pub(crate) imports: Vec<spindle_abi::Import>,
}

/// The kernel stack a procedure that may run an extension's code needs
/// left below it (`Shared::before_reentry`): a native entry's budget
/// (`engine::native::entry::STACK_BUDGET_BYTES`, 16 KiB) and the one frame
/// a function may write before its check (8 KiB), then the raise path
/// and the procedures that code may call.
pub const NESTED_RUN_STACK_BYTES: u64 = 32 * 1024;

/// How long an invocation waits for its extension, busy on another strand,
/// before it gives up with `Busy`. Two strands each inside one extension
/// and raising into the other's would otherwise wait for each other
/// forever; an invocation within the default fuel limit ends well before.
const MAX_WAIT_NS: u64 = 10_000_000_000;

/// Without a clock, how many times a wait yields before it gives up.
const MAX_WAIT_YIELDS: u64 = 1_000_000;

/// The instance, locked for one invocation; records the holding strand,
/// and counts itself in the sequence read-only code checks.
pub(crate) struct InstanceGuard<'a> {
    guard: spin::MutexGuard<'a, Option<Loaded>>,
    owner: &'a AtomicU64,
    writes: &'a AtomicU64,
}

impl<'a> InstanceGuard<'a> {
    /// The lock `guard` of `shared`'s instance, counted as begun (odd)
    /// before the holder can change anything.
    #[inline(always)]
    fn new(guard: spin::MutexGuard<'a, Option<Loaded>>, shared: &'a Shared) -> Self {
        // Only the holder writes the count, so no read-modify-write.
        let begun = shared.writes.load(Ordering::Relaxed) + 1;
        shared.writes.store(begun, Ordering::Relaxed);
        // What the holder writes from here on is ordered after the odd
        // count: a reader that saw one of its writes sees the count
        // changed when it looks again (its acquire fence).
        fence(Ordering::Release);
        InstanceGuard {
            guard,
            owner: &shared.owner,
            writes: &shared.writes,
        }
    }
}

impl core::ops::Deref for InstanceGuard<'_> {
    type Target = Option<Loaded>;
    fn deref(&self) -> &Self::Target {
        &self.guard
    }
}

impl core::ops::DerefMut for InstanceGuard<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.guard
    }
}

impl Drop for InstanceGuard<'_> {
    fn drop(&mut self) {
        // Cleared before the lock is released (the guard field drops after
        // this): a waiter that sees 0 while it is still held just waits.
        self.owner.store(0, Ordering::Release);
        // Even again, after all the holder wrote (release).
        let ended = self.writes.load(Ordering::Relaxed) + 1;
        self.writes.store(ended, Ordering::Release);
    }
}

impl Shared {
    pub(crate) fn new(
        id: ExtensionId,
        name: String,
        limits: Limits,
        faulted: Arc<Event<FaultedArgs, ()>>,
        domain: Option<domain::Domain>,
        strands: Option<Arc<dyn Strands>>,
        clock: Option<Arc<dyn Clock>>,
    ) -> Self {
        Shared {
            id,
            name,
            fuel_limit: limits.fuel_per_invocation.min(i64::MAX as u64),
            limits,
            instance: Mutex::new(None),
            faulted,
            domain,
            invocations: AtomicU64::new(0),
            faults: AtomicU64::new(0),
            strands,
            clock,
            owner: AtomicU64::new(0),
            unloaded: AtomicBool::new(false),
            writes: AtomicU64::new(0),
            tier: AtomicU8::new(Tier::Interpreter.code()),
            tier_up: Mutex::new(None),
        }
    }

    /// Locks the instance for one invocation. Another strand's invocation
    /// is waited for; `None` when this strand is already inside (a
    /// re-entrant call), when there are no strands to wait with, or when
    /// the wait is too long (see [`MAX_WAIT_NS`]).
    #[inline]
    pub(crate) fn lock_instance(&self) -> Option<InstanceGuard<'_>> {
        // The common case, uncontended: one try. The owner is recorded
        // lazily, by `before_reentry`, only before a kernel procedure that
        // may raise back into the extension: until then no code can ask
        // for the instance on this strand, and other strands wait, as
        // they do for a recorded owner.
        if let Some(guard) = self.instance.try_lock() {
            return Some(InstanceGuard::new(guard, self));
        }
        self.lock_instance_contended()
    }

    /// Before a kernel procedure that may run an extension's code
    /// (`host::may_reenter`): records the running strand as the
    /// instance's holder (see [`Self::lock_instance`]; the caller holds
    /// the instance lock, and the unlock clears it), and refuses the call
    /// with a trap when less than [`NESTED_RUN_STACK_BYTES`] of the
    /// strand's stack is left: extensions raising into each other would
    /// otherwise nest without bound, each native entry with a stack
    /// budget of its own, until the kernel stack's guard page.
    pub(crate) fn before_reentry(&self) -> Result<(), Trap> {
        let Some(strands) = &self.strands else {
            return Ok(());
        };
        self.owner.store(strands.current(), Ordering::Release);
        self.refuse_short_stack()
    }

    /// Refuses (with a stack overflow trap) to go on towards code that may
    /// run another extension's when less than `NESTED_RUN_STACK_BYTES` of
    /// the running strand's stack is left; as [`Shared::before_reentry`]
    /// without recording a holder, for code that runs without the
    /// instance lock (read-only code calling `file_length`).
    pub(crate) fn refuse_short_stack(&self) -> Result<(), Trap> {
        let Some(strands) = &self.strands else {
            return Ok(());
        };
        match strands.stack_room() {
            Some(room) if room < NESTED_RUN_STACK_BYTES => Err(Trap::new(
                spindle_abi::FaultKind::StackOverflow,
                alloc::format!(
                    "only {room} bytes of kernel stack left, too little to run another \
                     extension's code from here (nested raises too deep)"
                ),
            )),
            _ => Ok(()),
        }
    }

    /// [`Self::lock_instance`] once the lock was found taken.
    #[cold]
    #[inline(never)]
    fn lock_instance_contended(&self) -> Option<InstanceGuard<'_>> {
        let me = self.strands.as_ref().map(|strands| strands.current());
        let now = || self.clock.as_ref().map(|clock| clock.now_ns());
        // Read only once the lock is found taken: the common, uncontended
        // invocation reads no clock.
        let mut started = None;
        let mut yields = 0;
        loop {
            if let Some(guard) = self.instance.try_lock() {
                self.owner.store(me.unwrap_or(0), Ordering::Release);
                return Some(InstanceGuard::new(guard, self));
            }
            let started = *started.get_or_insert_with(now);
            let (Some(strands), Some(me)) = (&self.strands, me) else {
                return None;
            };
            let waited_too_long = match (started, now()) {
                (Some(started), Some(now)) => now.saturating_sub(started) > MAX_WAIT_NS,
                _ => yields == MAX_WAIT_YIELDS,
            };
            if self.owner.load(Ordering::Acquire) == me || waited_too_long {
                return None;
            }
            yields += 1;
            strands.yield_now();
        }
    }

    /// Runs `export` with fuel `min(budget, limit)`. A trap is counted and
    /// reported on `Extension.Faulted` after the instance is unlocked, so a
    /// policy handler may unload the culprit.
    pub(crate) fn invoke(
        &self,
        export: ExportRef,
        args: &[WasmValue],
        budget: Option<u64>,
    ) -> Result<Option<WasmValue>, CallError> {
        self.run(budget, |instance, fuel| instance.call(export, args, fuel))
    }

    /// [`Self::invoke`], lending `packets` for the call: each goes into the
    /// extension's handle table, its handle becomes argument `position`,
    /// and every lent handle is revoked when the call returns (or traps).
    /// No handle left for a packet is the extension's fault, as a trap.
    pub(crate) fn invoke_lending(
        &self,
        export: ExportRef,
        mut args: Vec<WasmValue>,
        packets: Vec<(usize, crate::packet::PacketRef)>,
        budget: Option<u64>,
    ) -> Result<Option<WasmValue>, CallError> {
        self.run(budget, |instance, fuel| {
            let mut lent = Vec::with_capacity(packets.len());
            let mut refused = None;
            for (position, packet) in packets {
                let handles = &instance.state().handles;
                match handles.insert("packet".into(), Capability::Packet(packet)) {
                    Ok(handle) => {
                        lent.push(handle);
                        if let Some(slot) = args.get_mut(position) {
                            *slot = WasmValue::I32(handle);
                        }
                    }
                    Err(limit) => {
                        refused = Some(Trap::new(
                            spindle_abi::FaultKind::Other,
                            format!("no handle for a packet: {limit}"),
                        ));
                        break;
                    }
                }
            }
            let outcome = match refused {
                Some(trap) => Err(trap),
                None => instance.call(export, &args, fuel),
            };
            for handle in lent {
                // Dropped by the extension already, or still there.
                let _ = instance.state().handles.remove(handle);
            }
            outcome
        })
    }

    /// [`Self::invoke`] through the engine's typed entry
    /// ([`Instance::call_integers`]): `count` integer arguments of the
    /// Wasm types `types` in (then zeros), the integer result (0 for none)
    /// out, no [`WasmValue`] on the way when the engine has the entry
    /// (native code); otherwise the arguments are converted for
    /// [`Instance::call`].
    ///
    /// The whole invocation is this one function, inlined into the typed
    /// handler: lock (no owner recorded: see [`Shared::before_reentry`]),
    /// count, native code's entry (`NativeInstance::call_typed`), unlock;
    /// a trap is reported out of line.
    #[inline(always)]
    pub(crate) fn invoke_integers(
        &self,
        export: ExportRef,
        args: &[i64; MAX_INTEGER_ARGUMENTS],
        count: usize,
        types: &[WasmType],
        budget: Option<u64>,
    ) -> Result<i64, CallError> {
        let fuel = budget.map_or(self.fuel_limit, |b| b.min(self.fuel_limit));
        let outcome = {
            let Some(mut guard) = self.lock_instance() else {
                return Err(CallError::Busy);
            };
            let Some(instance) = guard.as_mut() else {
                return Err(CallError::Unloaded);
            };
            self.invocations.fetch_add(1, Ordering::Relaxed);
            call_integers(instance, export, args, count, types, fuel)
        };
        match outcome {
            Ok(value) => Ok(value),
            Err(trap) => Err(self.report(trap)),
        }
    }

    /// The fuel an invocation may use at most (the limit, clamped to what
    /// the engines count in).
    #[inline(always)]
    pub(crate) fn fuel_limit(&self) -> u64 {
        self.fuel_limit
    }

    /// Calls a self-contained function (a guard or a handler, see
    /// [`HostContext::self_contained`]) without the instance lock, with
    /// `fuel` (at most [`Shared::fuel_limit`]) and the first `count` of
    /// `args` (`count` is its parameter count): it shares nothing with the
    /// instance's other invocations. Counted, and its trap reported, like
    /// any invocation; nothing runs once the extension is unloaded. The
    /// raw result: an `i32`'s upper half is undefined.
    #[inline(always)]
    pub(crate) fn invoke_self_contained(
        &self,
        call: &SelfContained,
        args: [i64; SELF_CONTAINED_ARGUMENTS],
        count: usize,
        fuel: u64,
    ) -> Result<i64, CallError> {
        if self.unloaded.load(Ordering::Acquire) {
            return Err(CallError::Unloaded);
        }
        self.invocations.fetch_add(1, Ordering::Relaxed);
        call.call(args, count, fuel)
            .map_err(|trap| self.report(trap))
    }

    /// Calls a read-only function (a guard or a handler, see
    /// [`HostContext::read_only`]) without the instance lock, with `fuel`
    /// (at most [`Shared::fuel_limit`]) and the first `count` of `args`
    /// (its parameter count), if no invocation holds the instance and
    /// none took it meanwhile: `None` otherwise (then the caller takes the
    /// locked path, which waits for the holder, or refuses a re-entrant
    /// call, as for any code). The function changes nothing, so an outcome
    /// thrown away leaves no trace; one kept is what it would have given
    /// under the lock, at a moment no invocation was running. Counted,
    /// and its trap reported, only when kept. The raw result: an `i32`'s
    /// upper half is undefined.
    #[inline(always)]
    pub(crate) fn invoke_read_only(
        &self,
        call: &ReadOnly,
        args: [i64; SELF_CONTAINED_ARGUMENTS],
        count: usize,
        fuel: u64,
    ) -> Option<Result<i64, CallError>> {
        let before = self.read_begins()?;
        let outcome = call.call(args, count, fuel);
        if !self.read_still_valid(before) {
            return None;
        }
        self.invocations.fetch_add(1, Ordering::Relaxed);
        Some(outcome.map_err(|trap| self.report(trap)))
    }

    /// The start of a run of read-only code: the lock's count, if even
    /// (no invocation holds the instance) and the extension is loaded.
    #[inline(always)]
    fn read_begins(&self) -> Option<u64> {
        let before = self.writes.load(Ordering::Acquire);
        (before & 1 == 0 && !self.unloaded.load(Ordering::Acquire)).then_some(before)
    }

    /// Whether no invocation took the instance since [`Shared::read_begins`]
    /// gave `before`: the outcome of the read-only code run since stands.
    #[inline(always)]
    fn read_still_valid(&self, before: u64) -> bool {
        // The code's reads come before the second look at the count.
        fence(Ordering::Acquire);
        self.writes.load(Ordering::Relaxed) == before
    }

    /// A guard and handler's outcome, counted (two invocations when the
    /// guard held), a trap reported: `None` when the guard did not hold.
    #[inline(always)]
    fn guarded_outcome(&self, call: GuardedCall) -> Option<Result<i64, CallError>> {
        self.invocations.fetch_add(1, Ordering::Relaxed);
        match call {
            GuardedCall::Declined => None,
            GuardedCall::GuardTrapped(trap) => {
                self.report(trap);
                None
            }
            GuardedCall::Ran(outcome) => {
                self.invocations.fetch_add(1, Ordering::Relaxed);
                Some(outcome.map_err(|trap| self.report(trap)))
            }
        }
    }

    /// A read-only guard, then (if it held) the self-contained handler of
    /// the same extension, on one private context: as
    /// [`Shared::invoke_read_only`] runs the guard (`None` when an
    /// invocation held the instance or took it meanwhile: the caller
    /// takes the locked way), then as [`Shared::invoke_self_contained`]
    /// runs the handler. `Some(None)` when the guard did not hold (a guard
    /// that traps does not; its trap is reported), else the handler's raw
    /// result or error.
    #[inline(always)]
    pub(crate) fn invoke_read_only_guarded(
        &self,
        guard: &ReadOnly,
        handler: &SelfContained,
        args: [i64; SELF_CONTAINED_ARGUMENTS],
        count: usize,
        guard_fuel: u64,
        handler_fuel: u64,
    ) -> Option<Option<Result<i64, CallError>>> {
        let before = self.read_begins()?;
        let still_valid = || self.read_still_valid(before);
        let call =
            guard.call_guarded(handler, args, count, guard_fuel, handler_fuel, still_valid)?;
        Some(self.guarded_outcome(call))
    }

    /// How many times the instance was taken for exclusive use (an
    /// invocation on the locked path, a binding, a tier-up, an unload),
    /// completed or under way.
    pub(crate) fn exclusive_sections(&self) -> u64 {
        self.writes.load(Ordering::Relaxed).div_ceil(2)
    }

    /// A self-contained guard, then (if it held) the self-contained
    /// handler of the same extension, as [`Shared::invoke_self_contained`]
    /// calls each but on one private context: `None` when the guard did
    /// not hold (a guard that traps does not; its trap is reported), else
    /// the handler's raw result or error. Two invocations when the guard
    /// holds, one when it does not.
    #[inline(always)]
    pub(crate) fn invoke_self_contained_guarded(
        &self,
        guard: &SelfContained,
        handler: &SelfContained,
        args: [i64; SELF_CONTAINED_ARGUMENTS],
        count: usize,
        guard_fuel: u64,
        handler_fuel: u64,
    ) -> Option<Result<i64, CallError>> {
        if self.unloaded.load(Ordering::Acquire) {
            return None;
        }
        self.guarded_outcome(guard.call_guarded(handler, args, count, guard_fuel, handler_fuel))
    }

    /// After a tier-up: each installation whose handler or guard the new
    /// instance can run without the lock (self-contained or read-only
    /// native code, [`HostContext::self_contained`],
    /// [`HostContext::read_only`]) gets that code in place
    /// ([`EventPort::replace`]: same binding, place, mode and guards), as
    /// if it had been bound on the new tier; the others keep theirs, which
    /// runs on the new instance through the lock. An installation removed
    /// meanwhile is left alone. Returns how many were replaced.
    pub(crate) fn refresh_installations(&self) -> usize {
        let (principal, replacements) = {
            let Some(mut guard) = self.lock_instance() else {
                return 0;
            };
            let Some(loaded) = guard.as_mut() else {
                return 0;
            };
            let instance = loaded.instance_mut();
            let state = instance.state();
            let replacements: Vec<_> = state
                .installed
                .iter()
                .filter_map(|installed| {
                    let handler_export = installed.handler.export;
                    let handler_alone = instance.self_contained(handler_export);
                    let handler_reading = instance.read_only(handler_export);
                    let guard_export = installed.guard.as_ref().map(|guard| guard.export);
                    let guard_alone = guard_export.and_then(|g| instance.self_contained(g));
                    let guard_reading = guard_export.and_then(|g| instance.read_only(g));
                    if handler_alone.is_none()
                        && handler_reading.is_none()
                        && guard_alone.is_none()
                        && guard_reading.is_none()
                    {
                        return None;
                    }
                    let mut handler = installed.handler.clone();
                    handler.self_contained = handler_alone.or(handler.self_contained);
                    handler.read_only = handler_reading.or(handler.read_only);
                    let guard = installed.guard.clone().map(|mut guard| {
                        guard.self_contained = guard_alone.or(guard.self_contained);
                        guard.read_only = guard_reading.or(guard.read_only);
                        guard
                    });
                    Some((installed.event.clone(), installed.binding, handler, guard))
                })
                .collect();
            (state.principal, replacements)
        };
        // Outside the lock: the dispatcher's publication calls nothing of
        // the extension, but need not wait for its invocations either.
        replacements
            .into_iter()
            .filter(|(event, binding, handler, guard)| {
                event
                    .replace(principal, *binding, handler.clone(), guard.clone())
                    .is_ok()
            })
            .count()
    }

    /// Runs `call` on the locked instance with the invocation's fuel;
    /// counts it, and counts and reports a trap (after the unlock).
    #[inline]
    fn run<T>(
        &self,
        budget: Option<u64>,
        call: impl FnOnce(&mut dyn Instance, u64) -> Result<T, Trap>,
    ) -> Result<T, CallError> {
        let fuel = budget.map_or(self.limits.fuel_per_invocation, |b| {
            b.min(self.limits.fuel_per_invocation)
        });
        let outcome = {
            let Some(mut guard) = self.lock_instance() else {
                return Err(CallError::Busy);
            };
            let Some(instance) = guard.as_mut() else {
                return Err(CallError::Unloaded);
            };
            self.invocations.fetch_add(1, Ordering::Relaxed);
            call(instance.instance_mut(), fuel)
        };
        outcome.map_err(|trap| self.report(trap))
    }

    /// Counts a trap and raises `Extension.Faulted` for it (off the hot
    /// path: the instance is unlocked by now).
    #[cold]
    #[inline(never)]
    fn report(&self, trap: Trap) -> CallError {
        self.faults.fetch_add(1, Ordering::Relaxed);
        let mut args = (self.id.0, trap.kind.code());
        // The intrinsic handler cannot fail and handlers' faults are
        // theirs: nothing to do with the result here.
        let _ = self.faulted.raise(&mut args);
        CallError::Trap(trap)
    }
}

/// The typed entry of `instance`: native code's inlined, another
/// engine's through the trait.
#[inline(always)]
fn call_integers(
    instance: &mut Loaded,
    export: ExportRef,
    args: &[i64; MAX_INTEGER_ARGUMENTS],
    count: usize,
    types: &[WasmType],
    fuel: u64,
) -> Result<i64, Trap> {
    let instance = match instance {
        #[cfg(feature = "native")]
        Loaded::Native(native) => return native.call_typed(export, args, count, fuel),
        Loaded::Other(other) => other.as_mut(),
    };
    match instance.call_integers(export, args, count, fuel) {
        Some(result) => result,
        None => convert_and_call(
            instance,
            export,
            &args[..count.min(args.len())],
            types,
            fuel,
        ),
    }
}

/// [`Shared::invoke_integers`] on an engine without the typed entry
/// (wasmi): the arguments as [`WasmValue`]s of `types`, the result back
/// as an integer.
#[inline(never)]
fn convert_and_call(
    instance: &mut dyn Instance,
    export: ExportRef,
    args: &[i64],
    types: &[WasmType],
    fuel: u64,
) -> Result<i64, Trap> {
    let mut values = [WasmValue::I32(0); MAX_INTEGER_ARGUMENTS];
    for ((value, &raw), &ty) in values.iter_mut().zip(args).zip(types) {
        *value = match ty {
            WasmType::I64 => WasmValue::I64(raw),
            _ => WasmValue::I32(raw as i32),
        };
    }
    let count = args.len().min(values.len());
    Ok(match instance.call(export, &values[..count], fuel)? {
        Some(WasmValue::I32(value)) => i64::from(value),
        Some(WasmValue::I64(value)) => value,
        Some(WasmValue::F32(bits)) => i64::from(bits),
        Some(WasmValue::F64(bits)) => bits as i64,
        None => 0,
    })
}

/// What to bind: an export as a handler, an optional export as its guard,
/// and the mode.
#[derive(Clone, Debug)]
pub struct Bind<'a> {
    /// The exported handler function.
    pub handler: &'a str,
    /// The exported guard function (verified pure), if any.
    pub guard: Option<&'a str>,
    /// Synchronous (within the extension's fuel limit) or ephemeral with a
    /// fuel budget.
    pub mode: Mode,
}

impl<'a> Bind<'a> {
    /// A synchronous, unguarded handler.
    pub fn handler(handler: &'a str) -> Self {
        Bind {
            handler,
            guard: None,
            mode: Mode::Synchronous,
        }
    }

    /// Adds a guard.
    pub fn guard(mut self, guard: &'a str) -> Self {
        self.guard = Some(guard);
        self
    }

    /// Makes the handler ephemeral with a fuel budget.
    pub fn ephemeral(mut self, fuel: u64) -> Self {
        self.mode = Mode::Ephemeral(Budget::fuel(fuel));
        self
    }
}

/// Checks that the module's function `index` has the Wasm type of
/// `signature` (with `result` as its result type).
fn check_type(
    context: &dyn HostContext,
    export: &str,
    index: u32,
    signature: &Signature,
    result: Option<WasmType>,
) -> Result<(), BindError> {
    let type_error = |message: String| BindError::Type {
        export: export.into(),
        message,
    };
    let mut params = Vec::with_capacity(signature.params.len());
    for (position, param) in signature.params.iter().enumerate() {
        if param.passing != dispatch::Passing::ByValue {
            return Err(type_error(format!(
                "parameter {position} is by reference (not supported for Wasm code)"
            )));
        }
        params.push(lowered(param.ty).ok_or_else(|| {
            type_error(format!("parameter {position} has opaque type {}", param.ty))
        })?);
    }
    let expected = crate::module::FuncType {
        params,
        results: result.into_iter().collect(),
    };
    let found = context
        .state()
        .module
        .function_type(index)
        .ok_or_else(|| type_error("no such function".into()))?;
    if *found != expected {
        return Err(type_error(format!(
            "type {found}, the event needs {expected}"
        )));
    }
    Ok(())
}

fn export_function(
    context: &mut dyn HostContext,
    name: &str,
) -> Result<(u32, ExportRef), BindError> {
    let index = context
        .state()
        .module
        .exported_function(name)
        .ok_or_else(|| BindError::NoSuchExport(name.into()))?;
    let export = context
        .export(name)
        .ok_or_else(|| BindError::NoSuchExport(name.into()))?;
    Ok((index, export))
}

/// Installs exports of the extension behind `context` on `event`: type
/// checks, purity check of the guard, the handler limit, then the
/// dispatcher (whose authorizer has the last word). Records the
/// installation for unload.
pub(crate) fn bind(
    context: &mut dyn HostContext,
    event: &Arc<dyn EventPort>,
    request: &Bind<'_>,
) -> Result<BindingId, BindError> {
    let state = context.state();
    if state.installed.len() >= state.limits.handlers {
        return Err(BindError::Limit(LimitExceeded {
            what: "handlers",
            limit: state.limits.handlers as u64,
            requested: state.installed.len() as u64 + 1,
        }));
    }
    let signature = event.signature().clone();
    let result_type = match signature.result {
        Some(ty) => Some(lowered(ty).ok_or_else(|| BindError::Type {
            export: request.handler.into(),
            message: format!("the event returns opaque type {ty}"),
        })?),
        None => None,
    };
    let (handler_index, handler_export) = export_function(context, request.handler)?;
    check_type(
        context,
        request.handler,
        handler_index,
        &signature,
        result_type,
    )?;
    let extension = context.state().extension.clone();
    let guard = match request.guard {
        None => None,
        Some(name) => {
            let (index, export) = export_function(context, name)?;
            check_type(context, name, index, &signature, Some(WasmType::I32))?;
            let state = context.state();
            check_pure(&state.module, index, &|import| {
                state
                    .pure_imports
                    .get(import as usize)
                    .copied()
                    .unwrap_or(false)
            })
            .map_err(|impurity| BindError::NotPure {
                export: name.into(),
                impurity,
            })?;
            Some(WasmGuard {
                extension: extension.clone(),
                self_contained: context.self_contained(export),
                read_only: context.read_only(export),
                export,
                signature: Signature {
                    params: signature.params.clone(),
                    result: Some(ValueType::Bool),
                },
            })
        }
    };
    let handler = WasmHandler {
        extension,
        self_contained: context.self_contained(handler_export),
        read_only: context.read_only(handler_export),
        export: handler_export,
        signature,
    };
    let principal = context.state().principal;
    let binding = event.install(principal, handler.clone(), guard.clone(), request.mode)?;
    context.state_mut().installed.push(Installed {
        event: event.clone(),
        binding,
        handler,
        guard,
    });
    Ok(binding)
}

/// Removes one of the extension's installations.
pub(crate) fn unbind(
    context: &mut dyn HostContext,
    event: &Arc<dyn EventPort>,
    binding: BindingId,
) -> Result<(), dispatch::Error> {
    let principal = context.state().principal;
    event.remove(principal, binding)?;
    context.state_mut().installed.retain(|installed| {
        !(Arc::ptr_eq(&installed.event, event) && installed.binding == binding)
    });
    Ok(())
}

/// What [`Extension::unload`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnloadReport {
    /// Installations removed.
    pub handlers_removed: usize,
    /// Installations the dispatcher refused to remove (an authorizer that
    /// denies even the kernel).
    pub handlers_kept: usize,
    /// Handles revoked.
    pub handles_revoked: usize,
    /// Linear memory freed, in bytes.
    pub memory_freed: usize,
}

/// Why an unload did not happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnloadError {
    /// An invocation of the extension is running (retry when it returns).
    Busy,
    /// Already unloaded.
    Unloaded,
}

impl fmt::Display for UnloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnloadError::Busy => f.write_str("extension busy"),
            UnloadError::Unloaded => f.write_str("already unloaded"),
        }
    }
}

/// A loaded extension (cheap to clone: a shared handle).
#[derive(Clone)]
pub struct Extension {
    pub(crate) shared: Arc<Owner>,
}

/// What the [`Extension`] handles share: the extension, and the duty to
/// end its instance when the last handle goes. Typed handlers and guards
/// hold [`Shared`] strongly (no weak reference upgraded per raise), and
/// the instance holds its installations (`ExtensionState::installed`),
/// so without this a dropped extension would keep itself alive through
/// the events' handler lists. Ending the instance removes the
/// installations, and with them the handlers' references.
pub(crate) struct Owner(pub(crate) Arc<Shared>);

impl core::ops::Deref for Owner {
    type Target = Arc<Shared>;
    fn deref(&self) -> &Arc<Shared> {
        &self.0
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        // An invocation of this extension further up this strand (the
        // last handle dropped by one of its own kernel procedures) keeps
        // the instance: it cannot be ended under itself.
        let instance = {
            let Some(mut guard) = self.0.lock_instance() else {
                return;
            };
            self.0.unloaded.store(true, Ordering::Release);
            guard.take()
        };
        // Unlocked: its state's drop removes the installations, which
        // republishes handler lists.
        drop(instance);
    }
}

impl fmt::Debug for Extension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extension")
            .field("id", &self.shared.id)
            .field("name", &self.shared.name)
            .finish()
    }
}

impl Extension {
    /// The extension's identity.
    pub fn id(&self) -> ExtensionId {
        self.shared.id
    }

    /// The dispatcher principal the extension installs handlers as.
    pub fn principal(&self) -> Principal {
        Principal(self.shared.id.0)
    }

    /// The name it was loaded under.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Its domain (exports with their types, imports as symbols
    /// `module.name`), e.g. to export it in the nameserver for the shell.
    pub fn domain(&self) -> Option<&domain::Domain> {
        self.shared.domain.as_ref()
    }

    /// Its limits.
    pub fn limits(&self) -> Limits {
        self.shared.limits
    }

    /// Runs `f` on the instance (locked); `Busy`/`Unloaded` otherwise.
    fn with_instance<T>(&self, f: impl FnOnce(&mut dyn Instance) -> T) -> Result<T, CallError> {
        let mut guard = self.shared.lock_instance().ok_or(CallError::Busy)?;
        let instance = guard.as_mut().ok_or(CallError::Unloaded)?;
        Ok(f(instance.instance_mut()))
    }

    /// Installs the export `request.handler` on `event` (the kernel binding
    /// an extension on its behalf, e.g. from the shell).
    pub fn bind(
        &self,
        event: &Arc<dyn EventPort>,
        request: &Bind<'_>,
    ) -> Result<BindingId, BindError> {
        self.with_instance(|instance| bind(instance, event, request))
            .map_err(|_| BindError::Unloaded)?
    }

    /// Removes one of the extension's installations.
    pub fn unbind(&self, event: &Arc<dyn EventPort>, binding: BindingId) -> Result<(), BindError> {
        self.with_instance(|instance| unbind(instance, event, binding))
            .map_err(|_| BindError::Unloaded)?
            .map_err(BindError::Dispatch)
    }

    /// Grants a capability under `name`; returns its handle.
    pub fn grant(&self, name: &str, capability: Capability) -> Result<i32, BindError> {
        self.with_instance(|instance| instance.state().handles.insert(name.into(), capability))
            .map_err(|_| BindError::Unloaded)?
            .map_err(BindError::Limit)
    }

    /// Revokes a handle: later uses trap with `BadHandle`.
    pub fn revoke(&self, handle: i32) -> Result<(), CallError> {
        self.with_instance(|instance| instance.state().handles.remove(handle))?
            .map_err(CallError::Trap)
    }

    /// The handle granted under `name`.
    pub fn handle(&self, name: &str) -> Option<i32> {
        self.with_instance(|instance| instance.state().handles.find(name))
            .ok()
            .flatten()
    }

    /// Calls an exported function with runtime-typed arguments (its
    /// parameter types are taken from the values), within the extension's
    /// fuel limit. For the shell and for benchmarks.
    pub fn call(&self, export: &str, args: &[Value]) -> Result<Option<WasmValue>, CallError> {
        let function = self.resolve(export)?;
        let arguments: Vec<WasmValue> = args.iter().map(|&v| lower(v)).collect();
        self.call_resolved(function, &arguments)
    }

    /// Resolves an export once, for repeated [`Extension::call_resolved`].
    pub fn resolve(&self, export: &str) -> Result<ExportRef, CallError> {
        self.with_instance(|instance| instance.export(export))?
            .ok_or_else(|| CallError::NoSuchExport(export.into()))
    }

    /// Calls a resolved export.
    pub fn call_resolved(
        &self,
        export: ExportRef,
        args: &[WasmValue],
    ) -> Result<Option<WasmValue>, CallError> {
        self.shared.invoke(export, args, None)
    }

    /// Calls an export and reads its result as `ty`.
    pub fn call_typed(
        &self,
        export: &str,
        args: &[Value],
        ty: ValueType,
    ) -> Result<Value, CallError> {
        match self.call(export, args)? {
            Some(value) => {
                lift(value, ty).ok_or_else(|| CallError::Type(format!("result is not {ty}")))
            }
            None => Err(CallError::Type("no result".into())),
        }
    }

    /// The engine tier running the extension.
    pub fn tier(&self) -> Tier {
        Tier::from_code(self.shared.tier.load(Ordering::Acquire)).unwrap_or(Tier::Interpreter)
    }

    /// The extension's counters.
    pub fn stats(&self) -> ExtensionStats {
        let mut stats = ExtensionStats {
            invocations: self.shared.invocations.load(Ordering::Relaxed),
            faults: self.shared.faults.load(Ordering::Relaxed),
            // Before `with_instance` below takes the lock itself.
            exclusive: self.shared.exclusive_sections(),
            ..ExtensionStats::default()
        };
        let _ = self.with_instance(|instance| {
            stats.handlers = instance.state().installed.len();
            stats.handles = instance.state().handles.len();
            stats.memory_bytes = instance.memory_bytes();
        });
        stats
    }

    /// Whether the extension was unloaded.
    pub fn is_unloaded(&self) -> bool {
        self.shared.instance.lock().is_none()
    }

    /// Unloads: removes every handler the extension installed, revokes its
    /// handles, and frees its instance and linear memory. Handlers still
    /// held by an in-flight raise fault with "unloaded".
    pub fn unload(&self) -> Result<UnloadReport, UnloadError> {
        let instance = {
            let mut guard = self.shared.lock_instance().ok_or(UnloadError::Busy)?;
            let instance = guard.take().ok_or(UnloadError::Unloaded)?;
            self.shared.unloaded.store(true, Ordering::Release);
            instance
        };
        let mut instance = instance;
        let memory_freed = instance.memory_bytes();
        let state = instance.state_mut();
        let handlers = state.installed.len();
        let handles_revoked = state.handles.len();
        let handlers_kept = state.remove_installations();
        state.handles.clear();
        drop(instance);
        Ok(UnloadReport {
            handlers_removed: handlers - handlers_kept,
            handlers_kept,
            handles_revoked,
            memory_freed,
        })
    }
}
