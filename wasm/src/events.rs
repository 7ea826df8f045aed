//! Events as extensions see them: a type-erased view of a dispatcher
//! [`Event`] ([`EventPort`]) and the Wasm handler and guard code the
//! dispatcher calls ([`WasmHandler`], [`WasmGuard`]).
//!
//! The dispatcher's events are generic over their argument tuple; an
//! extension names them by handle at run time. [`port`] wraps any event
//! whose arguments can be built from scalars into an `Arc<dyn EventPort>`
//! the kernel grants to extensions.

use alloc::{sync::Arc, vec::Vec};
use core::any::Any;

use dispatch::{
    BindingId, DynArgs, DynGuard, DynHandler, Event, EventArgs, EventResult, Fault, Guard, Handler,
    Install, Invocation, Mode, Predicate, Principal, RaiseError, Signature, Value, ValueType,
};

use crate::{
    engine::{ExportRef, ReadOnly, SelfContained, WasmValue, SELF_CONTAINED_ARGUMENTS},
    extension::{CallError, Shared},
    module::WasmType,
    packet::{is_packet, PacketRef},
};

/// An event, type-erased for the extension runtime.
pub trait EventPort: Send + Sync {
    /// The event's name.
    fn name(&self) -> &'static str;
    /// The event's signature.
    fn signature(&self) -> &Signature;
    /// Installs Wasm code as a handler (with an optional Wasm guard).
    fn install(
        &self,
        requester: Principal,
        handler: WasmHandler,
        guard: Option<WasmGuard>,
        mode: Mode,
    ) -> Result<BindingId, dispatch::Error>;
    /// Removes an installation.
    fn remove(&self, requester: Principal, binding: BindingId) -> Result<(), dispatch::Error>;
    /// Replaces the code of an installation that [`EventPort::install`]
    /// made from the same functions, now with the engine's faster path
    /// for them (after a tier-up): see [`Event::replace_code`].
    fn replace(
        &self,
        requester: Principal,
        binding: BindingId,
        handler: WasmHandler,
        guard: Option<WasmGuard>,
    ) -> Result<(), dispatch::Error>;
    /// Adds a declarative guard to an installation: parameter `param`
    /// must equal `value` (the dispatcher indexes such guards).
    fn add_equals_guard(
        &self,
        requester: Principal,
        binding: BindingId,
        param: usize,
        value: u64,
    ) -> Result<(), dispatch::Error>;
    /// Raises the event with runtime-typed arguments (checked against the
    /// signature; `None` if they do not fit).
    fn raise(&self, args: &[Value]) -> Option<Result<Option<Value>, RaiseError>>;
}

/// A result type an [`EventPort`] can hand back as a runtime value.
pub trait IntoValue {
    /// The value (`None` for `()`).
    fn into_value(self) -> Option<Value>;
}

impl IntoValue for () {
    fn into_value(self) -> Option<Value> {
        None
    }
}

macro_rules! into_value {
    ($($t:ty => $variant:ident),*) => {$(
        impl IntoValue for $t {
            fn into_value(self) -> Option<Value> {
                Some(Value::$variant(self))
            }
        }
    )*};
}

into_value!(bool => Bool, i32 => I32, u32 => U32, i64 => I64, u64 => U64, f32 => F32, f64 => F64);

/// The port of a dispatcher event.
struct Port<A, R> {
    event: Arc<Event<A, R>>,
}

/// Wraps `event` for extensions.
pub fn port<A, R>(event: Arc<Event<A, R>>) -> Arc<dyn EventPort>
where
    A: EventArgs + Default,
    R: EventResult + IntoValue,
{
    Arc::new(Port { event })
}

impl<A, R> EventPort for Port<A, R>
where
    A: EventArgs + Default,
    R: EventResult + IntoValue,
{
    fn name(&self) -> &'static str {
        self.event.name()
    }

    fn signature(&self) -> &Signature {
        self.event.signature()
    }

    fn install(
        &self,
        requester: Principal,
        handler: WasmHandler,
        guard: Option<WasmGuard>,
        mode: Mode,
    ) -> Result<BindingId, dispatch::Error> {
        let (code, guard) = code_and_guard(handler, guard);
        let mut install = Install::new(code).mode(mode);
        if let Some(guard) = guard {
            install = install.guard(guard);
        }
        self.event.install(requester, install)
    }

    fn replace(
        &self,
        requester: Principal,
        binding: BindingId,
        handler: WasmHandler,
        guard: Option<WasmGuard>,
    ) -> Result<(), dispatch::Error> {
        let (code, guard) = code_and_guard(handler, guard);
        self.event.replace_code(requester, binding, code, guard)
    }

    fn remove(&self, requester: Principal, binding: BindingId) -> Result<(), dispatch::Error> {
        self.event.remove(requester, binding)
    }

    fn add_equals_guard(
        &self,
        requester: Principal,
        binding: BindingId,
        param: usize,
        value: u64,
    ) -> Result<(), dispatch::Error> {
        let predicate = Predicate::equals(dispatch::Field::Param(param), value);
        self.event
            .add_guard(requester, binding, Guard::when(predicate))
            .map(|_| ())
    }

    fn raise(&self, values: &[Value]) -> Option<Result<Option<Value>, RaiseError>> {
        let params = &self.event.signature().params;
        if values.len() != params.len() {
            return None;
        }
        let mut args = A::default();
        for (index, value) in values.iter().enumerate() {
            if !args.set(index, *value) {
                return None;
            }
        }
        Some(self.event.raise(&mut args).map(IntoValue::into_value))
    }
}

/// The dispatcher's handler for Wasm `handler` and its guard: typed code
/// when the event's arguments and result are integers (no `DynArgs`, no
/// runtime values; with a typed guard, guard and handler are one
/// statically typed routine while the installation is alone on the
/// event), else runtime-typed. The guard comes back apart when it is not
/// inside the handler ([`Handler::fallible_guarded`]).
fn code_and_guard<A, R>(
    handler: WasmHandler,
    guard: Option<WasmGuard>,
) -> (Handler<A, R>, Option<Guard<A>>)
where
    A: EventArgs + Default,
    R: EventResult + IntoValue,
{
    let signature = handler.signature.clone();
    let typed = TypedWasm::of(
        &handler.extension,
        handler.export,
        &signature,
        handler.self_contained.clone(),
        handler.read_only.clone(),
    );
    let typed_guard = guard.as_ref().map(|guard| {
        TypedWasm::of(
            &guard.extension,
            guard.export,
            &guard.signature,
            guard.self_contained.clone(),
            guard.read_only.clone(),
        )
    });
    let (code, guard) = match (typed, typed_guard) {
        (Some(typed), Some(Some(test))) => (typed_handler(signature, typed, Some(test)), None),
        (Some(typed), typed_guard) => (
            typed_handler(signature, typed, None),
            guard.map(|guard| match typed_guard.flatten() {
                Some(test) => typed_guard_of(test),
                None => Guard::dynamic(guard.signature.clone(), guard),
            }),
        ),
        (None, typed_guard) => (
            Handler::dynamic(signature, handler),
            guard.map(|guard| match typed_guard.flatten() {
                Some(test) => typed_guard_of(test),
                None => Guard::dynamic(guard.signature.clone(), guard),
            }),
        ),
    };
    // Wasm code can always be stopped cleanly: it accepts termination.
    (code.ephemeral().named("wasm"), guard)
}

/// The handler of typed code `typed`, with `test` fused as its guard if
/// given ([`Handler::fallible_guarded`]). Whether each runs without the
/// instance lock (self-contained native code) is decided here, once:
/// each combination is its own closure, so the routine the dispatcher
/// compiles holds only the path it takes (no test per raise, and the
/// self-contained path without the locked one's registers and frame).
/// A self-contained guard and handler are also one closure
/// ([`Handler::fallible_guarded_as_one`]), run on one private context.
fn typed_handler<A, R>(
    signature: Signature,
    typed: TypedWasm,
    test: Option<TypedWasm>,
) -> Handler<A, R>
where
    A: EventArgs,
    R: EventResult,
{
    // Each closure is inlined into the dispatcher's routine: one call
    // from the raise to generated code.
    let handler_alone = typed.alone::<A>();
    let Some(test) = test else {
        return match handler_alone {
            Some(alone) => Handler::fallible(
                signature,
                #[inline(always)]
                move |args: &A, invocation: &Invocation| {
                    typed.call_alone::<A, R>(&alone, args, invocation)
                },
            ),
            None => Handler::fallible(
                signature,
                #[inline(always)]
                move |args: &A, invocation: &Invocation| {
                    typed.call_locked::<A, R>(args, invocation)
                },
            ),
        };
    };
    match (handler_alone, test.alone::<A>()) {
        (Some(alone), Some(guard_alone)) => {
            let pair = Arc::new(AlonePair {
                guard: guard_alone,
                handler: alone,
            });
            let (typed, test) = (Arc::new(typed), Arc::new(test));
            let (guard_pair, code_pair) = (pair.clone(), pair.clone());
            let (guard_test, code_typed) = (test.clone(), typed.clone());
            Handler::fallible_guarded_as_one(
                signature,
                #[inline(always)]
                move |args: &A| guard_test.test_alone::<A>(&guard_pair.guard, args),
                #[inline(always)]
                move |args: &A, invocation: &Invocation| {
                    code_typed.call_alone::<A, R>(&code_pair.handler, args, invocation)
                },
                #[inline(always)]
                move |args: &A, invocation: &Invocation| {
                    typed.call_guarded_alone::<A, R>(&test, &pair, args, invocation)
                },
            )
        }
        (Some(alone), None) => match test.read_only.clone() {
            // A read-only guard and a self-contained handler: as one too,
            // the guard reading the instance's state on the private
            // context the handler then runs on.
            Some(reader) => {
                let pair = Arc::new(ReadingPair {
                    guard: reader,
                    handler: alone,
                });
                let (typed, test) = (Arc::new(typed), Arc::new(test));
                let code_pair = pair.clone();
                let (guard_test, code_typed) = (test.clone(), typed.clone());
                Handler::fallible_guarded_as_one(
                    signature,
                    #[inline(always)]
                    move |args: &A| guard_test.test_locked::<A>(args),
                    #[inline(always)]
                    move |args: &A, invocation: &Invocation| {
                        code_typed.call_alone::<A, R>(&code_pair.handler, args, invocation)
                    },
                    #[inline(always)]
                    move |args: &A, invocation: &Invocation| {
                        typed.call_read_guarded_alone::<A, R>(&test, &pair, args, invocation)
                    },
                )
            }
            None => Handler::fallible_guarded(
                signature,
                #[inline(always)]
                move |args: &A| test.test_locked::<A>(args),
                #[inline(always)]
                move |args: &A, invocation: &Invocation| {
                    typed.call_alone::<A, R>(&alone, args, invocation)
                },
            ),
        },
        (None, Some(guard_alone)) => Handler::fallible_guarded(
            signature,
            #[inline(always)]
            move |args: &A| test.test_alone::<A>(&guard_alone, args),
            #[inline(always)]
            move |args: &A, invocation: &Invocation| typed.call_locked::<A, R>(args, invocation),
        ),
        (None, None) => Handler::fallible_guarded(
            signature,
            #[inline(always)]
            move |args: &A| test.test_locked::<A>(args),
            #[inline(always)]
            move |args: &A, invocation: &Invocation| typed.call_locked::<A, R>(args, invocation),
        ),
    }
}

/// A self-contained guard and handler bound together: the code of the
/// closure that runs both on one private context.
struct AlonePair {
    guard: Arc<SelfContained>,
    handler: Arc<SelfContained>,
}

/// A read-only guard and a self-contained handler bound together: the
/// code of the closure that runs both on one private context.
struct ReadingPair {
    guard: Arc<ReadOnly>,
    handler: Arc<SelfContained>,
}

/// The guard of typed code `test` (self-contained or not, decided here
/// as in [`typed_handler`]).
fn typed_guard_of<A: EventArgs>(test: TypedWasm) -> Guard<A> {
    match test.alone::<A>() {
        Some(alone) => Guard::new(move |args: &A| test.test_alone::<A>(&alone, args)),
        None => Guard::new(move |args: &A| test.test_locked::<A>(args)),
    }
}

/// How a dispatcher value type travels to Wasm, if it can.
pub(crate) fn lowered(ty: ValueType) -> Option<crate::module::WasmType> {
    use crate::module::WasmType;
    Some(match ty {
        ValueType::Bool | ValueType::I32 | ValueType::U32 => WasmType::I32,
        ValueType::I64 | ValueType::U64 => WasmType::I64,
        ValueType::F32 => WasmType::F32,
        ValueType::F64 => WasmType::F64,
        // A packet travels as the handle it is lent under.
        ty if crate::packet::is_packet(ty) => WasmType::I32,
        ValueType::Opaque { .. } => return None,
    })
}

/// A dispatcher value as a Wasm value.
pub(crate) fn lower(value: Value) -> WasmValue {
    match value {
        Value::Bool(v) => WasmValue::I32(i32::from(v)),
        Value::I32(v) => WasmValue::I32(v),
        Value::U32(v) => WasmValue::I32(v as i32),
        Value::I64(v) => WasmValue::I64(v),
        Value::U64(v) => WasmValue::I64(v as i64),
        Value::F32(v) => WasmValue::F32(v.to_bits()),
        Value::F64(v) => WasmValue::F64(v.to_bits()),
    }
}

/// A Wasm value read as dispatcher type `ty`.
pub(crate) fn lift(value: WasmValue, ty: ValueType) -> Option<Value> {
    Some(match (ty, value) {
        (ValueType::Bool, WasmValue::I32(v)) => Value::Bool(v != 0),
        (ValueType::I32, WasmValue::I32(v)) => Value::I32(v),
        (ValueType::U32, WasmValue::I32(v)) => Value::U32(v as u32),
        (ValueType::I64, WasmValue::I64(v)) => Value::I64(v),
        (ValueType::U64, WasmValue::I64(v)) => Value::U64(v as u64),
        (ValueType::F32, WasmValue::F32(bits)) => Value::F32(f32::from_bits(bits)),
        (ValueType::F64, WasmValue::F64(bits)) => Value::F64(f64::from_bits(bits)),
        _ => return None,
    })
}

/// A 64-bit argument slot (the `raise` procedure's format) as type `ty`.
pub(crate) fn from_slot(slot: u64, ty: ValueType) -> Option<Value> {
    Some(match ty {
        ValueType::Bool => Value::Bool(slot != 0),
        ValueType::I32 => Value::I32(slot as u32 as i32),
        ValueType::U32 => Value::U32(slot as u32),
        ValueType::I64 => Value::I64(slot as i64),
        ValueType::U64 => Value::U64(slot),
        ValueType::F32 => Value::F32(f32::from_bits(slot as u32)),
        ValueType::F64 => Value::F64(f64::from_bits(slot)),
        ValueType::Opaque { .. } => return None,
    })
}

/// A value as a 64-bit slot.
pub(crate) fn to_slot(value: Value) -> u64 {
    match value {
        Value::Bool(v) => u64::from(v),
        Value::I32(v) => v as u32 as u64,
        Value::U32(v) => u64::from(v),
        Value::I64(v) => v as u64,
        Value::U64(v) => v,
        Value::F32(v) => u64::from(v.to_bits()),
        Value::F64(v) => v.to_bits(),
    }
}

/// An exported Wasm function whose parameters and result are all integers
/// (no packet, no float), called through the engine's typed entry
/// ([`Shared::invoke_integers`]) by a typed handler or guard closure: the
/// dispatcher hands it the argument tuple, each parameter becomes one
/// 64-bit register argument. Holds its extension strongly, so a raise
/// upgrades no weak reference: once the extension is unloaded (or its
/// last handle dropped, see `extension::Owner`) its instance is gone
/// and a raiser still holding an old handler list gets `Unloaded`.
struct TypedWasm {
    extension: Arc<Shared>,
    export: ExportRef,
    /// The Wasm type of each parameter (for an engine without the entry).
    types: [WasmType; MAX_EVENT_ARGUMENTS],
    count: usize,
    /// Its code, callable without the instance lock, when it is
    /// self-contained native code (see [`WasmHandler::self_contained`]).
    self_contained: Option<Arc<SelfContained>>,
    /// Its code, tried without the instance lock before the locked path,
    /// when it is read-only native code (see [`WasmHandler::read_only`])
    /// taking the event's parameters.
    read_only: Option<Arc<ReadOnly>>,
}

impl TypedWasm {
    /// The typed call of `export` for `signature`; `None` when a parameter
    /// or the result is not an integer (those take [`WasmHandler`]).
    fn of(
        extension: &alloc::sync::Weak<Shared>,
        export: ExportRef,
        signature: &Signature,
        self_contained: Option<Arc<SelfContained>>,
        read_only: Option<Arc<ReadOnly>>,
    ) -> Option<TypedWasm> {
        let integer = |ty: ValueType| match lowered(ty)? {
            _ if is_packet(ty) => None,
            ty @ (WasmType::I32 | WasmType::I64) => Some(ty),
            _ => None,
        };
        let count = signature.params.len();
        if count > MAX_EVENT_ARGUMENTS {
            return None;
        }
        let mut types = [WasmType::I32; MAX_EVENT_ARGUMENTS];
        for (slot, param) in types.iter_mut().zip(&signature.params) {
            *slot = integer(param.ty)?;
        }
        if let Some(result) = signature.result {
            integer(result)?;
        }
        Some(TypedWasm {
            // Gone already: the runtime-typed code reports it.
            extension: extension.upgrade()?,
            export,
            types,
            count,
            self_contained,
            read_only: read_only.filter(|code| code.params() == count),
        })
    }

    /// Its self-contained code, if it has some and takes the arguments of
    /// events of type `A` (checked here, once: the calls below pass
    /// `A::ARITY` arguments without a test).
    fn alone<A: EventArgs>(&self) -> Option<Arc<SelfContained>> {
        self.self_contained
            .clone()
            .filter(|alone| alone.params() == A::ARITY && self.count == A::ARITY)
    }

    /// The first `N` parameters of `args` as 64-bit words (an integer's
    /// bits, as `to_slot` writes them), then zeros; `None` if one is not
    /// an integer (never, for the events [`TypedWasm::of`] accepts).
    /// `A::ARITY` is a constant: the words are the tuple's fields, without
    /// a loop.
    #[inline(always)]
    fn words<A: EventArgs, const N: usize>(args: &A) -> Option<[i64; N]> {
        let mut words = [0i64; N];
        for (index, word) in words.iter_mut().enumerate().take(A::ARITY) {
            *word = args.scalar(index)? as i64;
        }
        Some(words)
    }

    /// The fuel of a handler's invocation: the extension's limit, or the
    /// invocation's budget if that is lower.
    #[inline(always)]
    fn fuel(&self, invocation: &Invocation) -> u64 {
        let limit = self.extension.fuel_limit();
        match invocation.budget.and_then(|budget| budget.fuel) {
            Some(budget) => budget.min(limit),
            None => limit,
        }
    }

    /// A raw integer result as the event's result type `R`.
    #[inline(always)]
    fn result<R: EventResult>(raw: i64) -> Result<R, Fault> {
        // `R::result_type()` is the installation's result type (checked
        // against the event's) and a constant: no test per call.
        let value = match R::result_type() {
            Some(ty) => {
                // An `i32`'s upper half is undefined in a raw result.
                let raw = match lowered(ty) {
                    Some(WasmType::I32) => i64::from(raw as i32),
                    _ => raw,
                };
                Some(from_slot(raw as u64, ty).ok_or(Fault::BadResult)?)
            }
            None => None,
        };
        R::from_value(value).ok_or(Fault::BadResult)
    }

    /// As a handler, on the locked instance: the result as the event's
    /// type. Inlined into the dispatcher's routine, so that the `Result`
    /// stays in registers.
    #[inline(always)]
    fn call_locked<A: EventArgs, R: EventResult>(
        &self,
        args: &A,
        invocation: &Invocation,
    ) -> Result<R, Fault> {
        let budget = invocation.budget.and_then(|budget| budget.fuel);
        let raw = self.invoke_locked(args, budget).map_err(fault)?;
        Self::result::<R>(raw)
    }

    /// As a handler, self-contained (`alone`, from [`TypedWasm::alone`]):
    /// no instance lock.
    #[inline(always)]
    fn call_alone<A: EventArgs, R: EventResult>(
        &self,
        alone: &SelfContained,
        args: &A,
        invocation: &Invocation,
    ) -> Result<R, Fault> {
        let words = Self::words::<A, SELF_CONTAINED_ARGUMENTS>(args).ok_or(Fault::BadResult)?;
        let raw = self
            .extension
            .invoke_self_contained(alone, words, A::ARITY, self.fuel(invocation))
            .map_err(fault)?;
        Self::result::<R>(raw)
    }

    /// As a handler behind its guard `test`, both self-contained (`pair`):
    /// one private context for the two calls. `None` when the guard did
    /// not hold (or trapped: reported as any trap).
    #[inline(always)]
    fn call_guarded_alone<A: EventArgs, R: EventResult>(
        &self,
        test: &TypedWasm,
        pair: &AlonePair,
        args: &A,
        invocation: &Invocation,
    ) -> Option<Result<R, Fault>> {
        let Some(words) = Self::words::<A, SELF_CONTAINED_ARGUMENTS>(args) else {
            return Some(Err(Fault::BadResult));
        };
        let outcome = self.extension.invoke_self_contained_guarded(
            &pair.guard,
            &pair.handler,
            words,
            A::ARITY,
            test.extension.fuel_limit(),
            self.fuel(invocation),
        )?;
        Some(outcome.map_err(fault).and_then(Self::result::<R>))
    }

    /// As a handler behind its guard `test`, a read-only guard and a
    /// self-contained handler (`pair`): one private context for the two
    /// calls, no lock. When an invocation held the instance or took it
    /// while the guard ran, the guard runs again on the locked path (and
    /// the handler, if it held, alone). `None` when the guard did not
    /// hold (or trapped: reported as any trap).
    #[inline(always)]
    fn call_read_guarded_alone<A: EventArgs, R: EventResult>(
        &self,
        test: &TypedWasm,
        pair: &ReadingPair,
        args: &A,
        invocation: &Invocation,
    ) -> Option<Result<R, Fault>> {
        let Some(words) = Self::words::<A, SELF_CONTAINED_ARGUMENTS>(args) else {
            return Some(Err(Fault::BadResult));
        };
        match self.extension.invoke_read_only_guarded(
            &pair.guard,
            &pair.handler,
            words,
            A::ARITY,
            test.extension.fuel_limit(),
            self.fuel(invocation),
        ) {
            Some(outcome) => Some(outcome?.map_err(fault).and_then(Self::result::<R>)),
            None => self.read_guarded_locked::<A, R>(test, pair, args, invocation),
        }
    }

    /// [`TypedWasm::call_read_guarded_alone`] when the instance was busy:
    /// the guard on the locked path, then the handler alone.
    #[cold]
    #[inline(never)]
    fn read_guarded_locked<A: EventArgs, R: EventResult>(
        &self,
        test: &TypedWasm,
        pair: &ReadingPair,
        args: &A,
        invocation: &Invocation,
    ) -> Option<Result<R, Fault>> {
        test.test_locked::<A>(args)
            .then(|| self.call_alone::<A, R>(&pair.handler, args, invocation))
    }

    /// As a guard on the locked instance: true when it returned non-zero;
    /// a guard that traps (or finds its extension busy or gone) is false.
    #[inline(always)]
    fn test_locked<A: EventArgs>(&self, args: &A) -> bool {
        matches!(self.invoke_locked(args, None), Ok(value) if value as i32 != 0)
    }

    /// As a self-contained guard (`alone`, from [`TypedWasm::alone`]):
    /// no instance lock.
    #[inline(always)]
    fn test_alone<A: EventArgs>(&self, alone: &SelfContained, args: &A) -> bool {
        let Some(words) = Self::words::<A, SELF_CONTAINED_ARGUMENTS>(args) else {
            return false;
        };
        let fuel = self.extension.fuel_limit();
        matches!(
            self.extension.invoke_self_contained(alone, words, A::ARITY, fuel),
            Ok(value) if value as i32 != 0
        )
    }

    /// Runs the function on the locked instance on `args` with the
    /// invocation's fuel: its integer result.
    #[inline(always)]
    fn invoke_locked<A: EventArgs>(&self, args: &A, budget: Option<u64>) -> Result<i64, CallError> {
        // `A::ARITY` is `self.count` (installation checked the signature
        // against the event's), but a constant: the slots are filled
        // without a loop and the entry's choice of registers is made at
        // compile time.
        let count = A::ARITY;
        if count != self.count || count > MAX_EVENT_ARGUMENTS {
            return Err(CallError::Type(alloc::format!("{count} parameters")));
        }
        let Some(raw) = Self::words::<A, MAX_EVENT_ARGUMENTS>(args) else {
            return Err(CallError::Type(alloc::format!("a parameter of {count}")));
        };
        if let Some(code) = &self.read_only {
            // Read-only code first runs without the lock; `None` when an
            // invocation held the instance or took it meanwhile.
            let limit = self.extension.fuel_limit();
            let fuel = budget.map_or(limit, |budget| budget.min(limit));
            let mut words = [0i64; SELF_CONTAINED_ARGUMENTS];
            let fits = count <= SELF_CONTAINED_ARGUMENTS;
            if fits {
                words.copy_from_slice(&raw[..SELF_CONTAINED_ARGUMENTS]);
            }
            if let Some(outcome) = fits
                .then(|| self.extension.invoke_read_only(code, words, count, fuel))
                .flatten()
            {
                return outcome;
            }
        }
        self.extension
            .invoke_integers(self.export, &raw, count, &self.types[..count], budget)
    }
}

/// An exported Wasm function installed as a handler. Holds its extension
/// weakly: after unload, a raiser still holding an old handler list gets a
/// fault, and the extension's memory is already freed.
#[derive(Clone)]
pub struct WasmHandler {
    pub(crate) extension: alloc::sync::Weak<Shared>,
    /// Its code, callable without the instance, when it is
    /// self-contained (it reaches no memory, global, table or function:
    /// nothing another invocation could see or change) and was bound on
    /// the native tier: the typed entry then runs it on a context of its
    /// own, without the instance lock, as it does such guards.
    pub(crate) self_contained: Option<Arc<SelfContained>>,
    /// Its code, callable without the instance lock, when it is read-only
    /// (it and all it calls only read linear memory and globals) and was
    /// bound on the native tier: the typed entry runs it without the
    /// lock while no invocation holds the instance, keeping the outcome
    /// only if none took it meanwhile (`Shared::invoke_read_only`).
    pub(crate) read_only: Option<Arc<ReadOnly>>,
    pub(crate) export: ExportRef,
    pub(crate) signature: Signature,
}

/// Packets lent to one invocation, by parameter position.
type Lent = Vec<(usize, PacketRef)>;

/// The most arguments an event passes (the dispatcher's argument tuples
/// stop at 8).
pub(crate) const MAX_EVENT_ARGUMENTS: usize = 8;

/// The arguments of a raise for parameters `params`, lowered into an
/// array on the stack (no allocation per raise); a packet parameter is
/// `-1` until it is lent (see [`packets_to_lend`]). `None` if there are
/// more than [`MAX_EVENT_ARGUMENTS`] or one is missing.
fn lowered_arguments(
    args: &DynArgs<'_>,
    params: &[dispatch::Param],
) -> Option<([WasmValue; MAX_EVENT_ARGUMENTS], usize)> {
    let count = params.len();
    let mut lowered = [WasmValue::I32(0); MAX_EVENT_ARGUMENTS];
    for ((index, slot), param) in lowered.get_mut(..count)?.iter_mut().enumerate().zip(params) {
        *slot = if is_packet(param.ty) {
            WasmValue::I32(-1)
        } else {
            lower(args.get(index)?)
        };
    }
    Some((lowered, count))
}

/// The packets among the arguments, to lend for the invocation (empty,
/// without allocating, for events without one).
fn packets_to_lend(args: &DynArgs<'_>, params: &[dispatch::Param]) -> Result<Lent, Fault> {
    let mut packets = Vec::new();
    for (index, param) in params.iter().enumerate() {
        if is_packet(param.ty) {
            let packet = args.get_any::<PacketRef>(index).ok_or(Fault::BadResult)?;
            packets.push((index, packet.clone()));
        }
    }
    Ok(packets)
}

impl DynHandler for WasmHandler {
    fn call(
        &self,
        _closure: Option<&(dyn Any + Send + Sync)>,
        args: &mut DynArgs<'_>,
        invocation: &Invocation,
    ) -> Result<Option<Value>, Fault> {
        let extension = self
            .extension
            .upgrade()
            .ok_or_else(|| fault(CallError::Unloaded))?;
        let (arguments, count) =
            lowered_arguments(args, &self.signature.params).ok_or(Fault::BadResult)?;
        let budget = invocation.budget.and_then(|budget| budget.fuel);
        let packets = packets_to_lend(args, &self.signature.params)?;
        let result = if packets.is_empty() {
            extension.invoke(self.export, &arguments[..count], budget)
        } else {
            extension.invoke_lending(self.export, arguments[..count].to_vec(), packets, budget)
        }
        .map_err(fault)?;
        match (result, self.signature.result) {
            (None, None) => Ok(None),
            (Some(value), Some(ty)) => lift(value, ty).map(Some).ok_or(Fault::BadResult),
            _ => Err(Fault::BadResult),
        }
    }
}

fn fault(error: CallError) -> Fault {
    match error {
        CallError::Trap(trap) if trap.kind == spindle_abi::FaultKind::BudgetExhausted => {
            Fault::BudgetExhausted
        }
        other => Fault::Trap(alloc::format!("{other}")),
    }
}

/// An exported Wasm function installed as a guard, verified pure at
/// install. A guard that traps is false: the handler does not run.
#[derive(Clone)]
pub struct WasmGuard {
    pub(crate) extension: alloc::sync::Weak<Shared>,
    /// Its code, callable without the instance, when it is
    /// self-contained on the native tier.
    pub(crate) self_contained: Option<Arc<SelfContained>>,
    /// Its code, callable without the instance lock, when it is read-only
    /// on the native tier (see [`WasmHandler::read_only`]).
    pub(crate) read_only: Option<Arc<ReadOnly>>,
    pub(crate) export: ExportRef,
    pub(crate) signature: Signature,
}

impl DynGuard for WasmGuard {
    fn test(&self, _closure: Option<&(dyn Any + Send + Sync)>, args: &DynArgs<'_>) -> bool {
        let Some(extension) = self.extension.upgrade() else {
            return false;
        };
        // Guards get no packet (a packet is lent to handlers only; guards
        // on packets are declarative, on the event's scalar parameters).
        let Some((arguments, count)) = lowered_arguments(args, &self.signature.params) else {
            return false;
        };
        matches!(
            extension.invoke(self.export, &arguments[..count], None),
            Ok(Some(WasmValue::I32(v))) if v != 0
        )
    }
}
