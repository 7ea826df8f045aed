//! Runtime type descriptions of events, handlers and guards.
//!
//! SPIN type-checks handlers and guards against the event when they are
//! installed, using the compiler's runtime type information (events paper 003
//! §2.4 "Typechecking"). Spindle does the same with an explicit [`Signature`]:
//! a list of parameter [`ValueType`]s, each passed by value or by reference,
//! and an optional result type. Rust code gets its signature derived from the
//! argument tuple type ([`EventArgs`]); a Wasm runtime builds one at run time
//! from a function's type, which is why the check cannot rely on generics.

use alloc::{string::String, vec::Vec};
use core::{
    any::{Any, TypeId},
    fmt,
};

/// The type of one parameter or result, as the dispatcher compares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    /// `bool`.
    Bool,
    /// `i32` (Wasm `i32`).
    I32,
    /// `u32` (Wasm `i32` read as unsigned).
    U32,
    /// `i64` (Wasm `i64`).
    I64,
    /// `u64` (Wasm `i64` read as unsigned).
    U64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// Any other Rust type, compared by [`TypeId`]; the name is for messages.
    Opaque {
        /// `core::any::type_name` of the type.
        name: &'static str,
        /// Identity of the type.
        id: TypeId,
    },
}

impl ValueType {
    /// The opaque type description of a Rust type.
    pub fn opaque<T: 'static>() -> Self {
        ValueType::Opaque {
            name: core::any::type_name::<T>(),
            id: TypeId::of::<T>(),
        }
    }

    /// Whether values of this type can be compared by declarative guards.
    pub fn is_scalar(&self) -> bool {
        !matches!(self, ValueType::Opaque { .. })
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueType::Opaque { name, .. } => f.write_str(name),
            other => write!(f, "{other:?}"),
        }
    }
}

/// How a parameter reaches a handler (Modula-3 by-value vs `VAR`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Passing {
    /// The handler sees a value; its changes are invisible to anyone else.
    ByValue,
    /// The handler sees a reference. On an event parameter this is a `VAR`
    /// argument: changes reach later handlers and the raiser. On a filter's
    /// parameter where the event passes by value, changes reach later handlers
    /// only (the dispatcher works on a copy, 003 §2.4).
    ByReference,
}

/// One parameter of a signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    /// Its type.
    pub ty: ValueType,
    /// How it is passed.
    pub passing: Passing,
}

/// The runtime type of an event, handler or guard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// Parameters, in order (without any closure argument).
    pub params: Vec<Param>,
    /// Result type; `None` for procedures that return nothing.
    pub result: Option<ValueType>,
}

impl Signature {
    /// A signature from parameter types (all by value) and a result.
    pub fn new(params: &[ValueType], result: Option<ValueType>) -> Self {
        Signature {
            params: params
                .iter()
                .map(|&ty| Param {
                    ty,
                    passing: Passing::ByValue,
                })
                .collect(),
            result,
        }
    }

    /// The same signature with parameter `index` passed by reference.
    pub fn by_reference(mut self, index: usize) -> Self {
        if let Some(param) = self.params.get_mut(index) {
            param.passing = Passing::ByReference;
        }
        self
    }

    /// The same signature with every parameter passed by `passing`.
    pub fn with_all(mut self, passing: Passing) -> Self {
        for param in &mut self.params {
            param.passing = passing;
        }
        self
    }

    /// Whether any parameter is passed by reference.
    pub fn has_by_reference(&self) -> bool {
        self.params
            .iter()
            .any(|p| p.passing == Passing::ByReference)
    }

    /// Checks that a handler with signature `handler` may be installed on an
    /// event with signature `self` (003 §2.4): same parameter and result
    /// types; `VAR` event parameters stay by reference; a by-value event
    /// parameter may be taken by reference only by a filter.
    pub fn check_handler(&self, handler: &Signature, is_filter: bool) -> Result<(), TypeError> {
        self.check_params(handler)?;
        for (index, (event, handler)) in self.params.iter().zip(&handler.params).enumerate() {
            match (event.passing, handler.passing) {
                (Passing::ByReference, Passing::ByValue) => {
                    return Err(TypeError::MustBeByReference { index })
                }
                (Passing::ByValue, Passing::ByReference) if !is_filter => {
                    return Err(TypeError::ByReferenceNeedsFilter { index })
                }
                _ => {}
            }
        }
        if self.result != handler.result {
            return Err(TypeError::Result {
                expected: self.result,
                found: handler.result,
            });
        }
        Ok(())
    }

    /// Checks a guard: same parameter types as the event, result `Bool`.
    pub fn check_guard(&self, guard: &Signature) -> Result<(), TypeError> {
        self.check_params(guard)?;
        if guard.result != Some(ValueType::Bool) {
            return Err(TypeError::GuardResult {
                found: guard.result,
            });
        }
        Ok(())
    }

    fn check_params(&self, other: &Signature) -> Result<(), TypeError> {
        if self.params.len() != other.params.len() {
            return Err(TypeError::Arity {
                expected: self.params.len(),
                found: other.params.len(),
            });
        }
        for (index, (event, other)) in self.params.iter().zip(&other.params).enumerate() {
            if event.ty != other.ty {
                return Err(TypeError::Param {
                    index,
                    expected: event.ty,
                    found: other.ty,
                });
            }
        }
        Ok(())
    }
}

/// Why a handler, guard, closure or value does not fit an event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeError {
    /// Different number of parameters.
    Arity {
        /// The event's.
        expected: usize,
        /// The handler's or guard's.
        found: usize,
    },
    /// A parameter of another type.
    Param {
        /// Parameter position.
        index: usize,
        /// The event's type.
        expected: ValueType,
        /// The offered type.
        found: ValueType,
    },
    /// A different result type.
    Result {
        /// The event's.
        expected: Option<ValueType>,
        /// The handler's.
        found: Option<ValueType>,
    },
    /// A guard must return `Bool`.
    GuardResult {
        /// What the guard returns.
        found: Option<ValueType>,
    },
    /// A `VAR` event parameter taken by value.
    MustBeByReference {
        /// Parameter position.
        index: usize,
    },
    /// A by-value parameter taken by reference by a handler not installed as
    /// a filter.
    ByReferenceNeedsFilter {
        /// Parameter position.
        index: usize,
    },
    /// The closure is not of the type the handler or guard expects.
    Closure {
        /// Name of the offered closure's type, when known.
        found: &'static str,
    },
    /// A declarative guard names a field that does not exist or is not a
    /// scalar.
    Field {
        /// Description of the field.
        field: String,
    },
    /// A value of the wrong type was written to an argument, or a parameter
    /// passed by value was written.
    Value {
        /// Parameter position.
        index: usize,
    },
}

impl fmt::Display for TypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeError::Arity { expected, found } => {
                write!(f, "expected {expected} parameters, found {found}")
            }
            TypeError::Param {
                index,
                expected,
                found,
            } => write!(f, "parameter {index}: expected {expected}, found {found}"),
            TypeError::Result { expected, found } => {
                write!(f, "result: expected {expected:?}, found {found:?}")
            }
            TypeError::GuardResult { found } => {
                write!(f, "a guard must return Bool, found {found:?}")
            }
            TypeError::MustBeByReference { index } => {
                write!(
                    f,
                    "parameter {index} is VAR in the event and must be by reference"
                )
            }
            TypeError::ByReferenceNeedsFilter { index } => write!(
                f,
                "parameter {index} taken by reference: install the handler as a filter"
            ),
            TypeError::Closure { found } => write!(f, "closure of the wrong type ({found})"),
            TypeError::Field { field } => write!(f, "no scalar field {field}"),
            TypeError::Value { index } => write!(f, "cannot write parameter {index}"),
        }
    }
}

/// A dynamically typed scalar, as exchanged with runtime-typed (Wasm)
/// handlers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// A `bool`.
    Bool(bool),
    /// An `i32`.
    I32(i32),
    /// A `u32`.
    U32(u32),
    /// An `i64`.
    I64(i64),
    /// A `u64`.
    U64(u64),
    /// An `f32`.
    F32(f32),
    /// An `f64`.
    F64(f64),
}

impl Value {
    /// The type of this value.
    pub fn ty(&self) -> ValueType {
        match self {
            Value::Bool(_) => ValueType::Bool,
            Value::I32(_) => ValueType::I32,
            Value::U32(_) => ValueType::U32,
            Value::I64(_) => ValueType::I64,
            Value::U64(_) => ValueType::U64,
            Value::F32(_) => ValueType::F32,
            Value::F64(_) => ValueType::F64,
        }
    }
}

/// A Rust type that can be an event parameter.
///
/// Implemented for the scalar types, for [`Var`] (a `VAR` parameter) and, via
/// [`opaque_arg!`](crate::opaque_arg), for any `Clone + Send + 'static` type.
pub trait ArgType: Clone + Send + 'static {
    /// Its runtime type.
    fn value_type() -> ValueType;
    /// How the event passes it.
    fn passing() -> Passing {
        Passing::ByValue
    }
    /// The value, for runtime-typed handlers (`None` for opaque types).
    fn to_value(&self) -> Option<Value>;
    /// Overwrites from a runtime value; `false` if the type does not match.
    fn set_value(&mut self, value: Value) -> bool;
    /// The value as an unsigned integer, for declarative guards.
    fn scalar(&self) -> Option<u64>;
    /// The argument as `Any`, for runtime-typed handlers of opaque types.
    fn as_any(&self) -> &dyn Any;
}

macro_rules! scalar_arg {
    ($($t:ty => $variant:ident, $to_u64:expr;)*) => {$(
        impl ArgType for $t {
            fn value_type() -> ValueType {
                ValueType::$variant
            }
            fn to_value(&self) -> Option<Value> {
                Some(Value::$variant(*self))
            }
            fn set_value(&mut self, value: Value) -> bool {
                match value {
                    Value::$variant(v) => {
                        *self = v;
                        true
                    }
                    _ => false,
                }
            }
            #[inline]
            fn scalar(&self) -> Option<u64> {
                let to_u64: fn($t) -> u64 = $to_u64;
                Some(to_u64(*self))
            }
            fn as_any(&self) -> &dyn Any {
                self
            }
        }
    )*};
}

scalar_arg! {
    bool => Bool, |v| v as u64;
    i32 => I32, |v| v as u32 as u64;
    u32 => U32, |v| v as u64;
    i64 => I64, |v| v as u64;
    u64 => U64, |v| v;
    f32 => F32, |v| v.to_bits() as u64;
    f64 => F64, |v| v.to_bits();
}

/// Marks a `VAR` (by-reference) event parameter: handlers' changes reach
/// later handlers and the raiser. Events with one cannot be asynchronous
/// (003 §2.6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Var<T>(pub T);

impl<T: ArgType> ArgType for Var<T> {
    fn value_type() -> ValueType {
        T::value_type()
    }
    fn passing() -> Passing {
        Passing::ByReference
    }
    fn to_value(&self) -> Option<Value> {
        self.0.to_value()
    }
    fn set_value(&mut self, value: Value) -> bool {
        self.0.set_value(value)
    }
    #[inline]
    fn scalar(&self) -> Option<u64> {
        self.0.scalar()
    }
    fn as_any(&self) -> &dyn Any {
        self.0.as_any()
    }
}

/// Makes a Rust type usable as an opaque event parameter or result: it is
/// type-checked by identity and reachable by runtime-typed handlers only
/// through `Any`.
#[macro_export]
macro_rules! opaque_arg {
    ($($t:ty),* $(,)?) => {$(
        impl $crate::ArgType for $t {
            fn value_type() -> $crate::ValueType {
                $crate::ValueType::opaque::<$t>()
            }
            fn to_value(&self) -> ::core::option::Option<$crate::Value> {
                ::core::option::Option::None
            }
            fn set_value(&mut self, _: $crate::Value) -> bool {
                false
            }
            fn scalar(&self) -> ::core::option::Option<u64> {
                ::core::option::Option::None
            }
            fn as_any(&self) -> &dyn ::core::any::Any {
                self
            }
        }
    )*};
}

/// The argument pack of an event: a tuple of [`ArgType`]s.
///
/// The per-parameter accessors let the dispatcher copy back `VAR`
/// parameters, extract fields for declarative guards, and present the
/// arguments to runtime-typed handlers.
pub trait EventArgs: Clone + Send + 'static {
    /// The number of parameters (the tuple's length), known at compile
    /// time so that typed code can pass them without a loop.
    const ARITY: usize;
    /// The parameters as the event declares them.
    fn params() -> Vec<Param>;
    /// Parameter `index` as a runtime value.
    fn get(&self, index: usize) -> Option<Value>;
    /// Overwrites parameter `index`; `false` on a type mismatch.
    fn set(&mut self, index: usize, value: Value) -> bool;
    /// Parameter `index` as an unsigned integer (declarative guards).
    fn scalar(&self, index: usize) -> Option<u64>;
    /// Parameter `index` as `Any`.
    fn any(&self, index: usize) -> Option<&dyn Any>;
    /// Copies parameter `index` from `other`.
    fn copy_param_from(&mut self, index: usize, other: &Self);
}

macro_rules! tuple_args {
    ($(($($t:ident $i:tt),*))*) => {$(
        impl<$($t: ArgType),*> EventArgs for ($($t,)*) {
            const ARITY: usize = <[usize]>::len(&[$($i),*]);
            fn params() -> Vec<Param> {
                alloc::vec![$(Param { ty: $t::value_type(), passing: $t::passing() }),*]
            }
            #[allow(unused_variables)]
            fn get(&self, index: usize) -> Option<Value> {
                match index {
                    $($i => self.$i.to_value(),)*
                    _ => None,
                }
            }
            #[allow(unused_variables)]
            fn set(&mut self, index: usize, value: Value) -> bool {
                match index {
                    $($i => self.$i.set_value(value),)*
                    _ => false,
                }
            }
            #[allow(unused_variables)]
            #[inline]
            fn scalar(&self, index: usize) -> Option<u64> {
                match index {
                    $($i => self.$i.scalar(),)*
                    _ => None,
                }
            }
            #[allow(unused_variables)]
            fn any(&self, index: usize) -> Option<&dyn Any> {
                match index {
                    $($i => Some(self.$i.as_any()),)*
                    _ => None,
                }
            }
            #[allow(unused_variables)]
            fn copy_param_from(&mut self, index: usize, other: &Self) {
                match index {
                    $($i => self.$i = other.$i.clone(),)*
                    _ => {}
                }
            }
        }
    )*};
}

tuple_args! {
    ()
    (A 0)
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, F 5)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7)
}

/// The result type of an event: `()` or any [`ArgType`].
pub trait EventResult: Send + 'static {
    /// Its runtime type; `None` for `()`.
    fn result_type() -> Option<ValueType>;
    /// `Some(())` for the unit result, which every raise can produce
    /// without a handler's help; `None` otherwise.
    fn unit() -> Option<Self>
    where
        Self: Sized;
    /// Converts a runtime-typed handler's result.
    fn from_value(value: Option<Value>) -> Option<Self>
    where
        Self: Sized;
}

impl EventResult for () {
    fn result_type() -> Option<ValueType> {
        None
    }
    fn unit() -> Option<Self> {
        Some(())
    }
    fn from_value(value: Option<Value>) -> Option<Self> {
        value.is_none().then_some(())
    }
}

impl<T: ArgType> EventResult for T {
    fn result_type() -> Option<ValueType> {
        Some(T::value_type())
    }
    fn unit() -> Option<Self> {
        None
    }
    fn from_value(value: Option<Value>) -> Option<Self> {
        // Opaque results cannot come back from a runtime-typed handler.
        value.and_then(from_scalar::<T>)
    }
}

fn from_scalar<T: ArgType>(value: Value) -> Option<T> {
    // Only scalar types can be built from a Value: go through `Any` so that a
    // mismatch (or an opaque T) is a `None`, never a conversion.
    let any: &dyn Any = match &value {
        Value::Bool(v) => v,
        Value::I32(v) => v,
        Value::U32(v) => v,
        Value::I64(v) => v,
        Value::U64(v) => v,
        Value::F32(v) => v,
        Value::F64(v) => v,
    };
    any.downcast_ref::<T>().cloned()
}
