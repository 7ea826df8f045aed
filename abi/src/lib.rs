//! The application binary interface between Spindle and its extensions.
//!
//! Everything an extension and the kernel must agree on is defined here,
//! once (conventions.md item 7):
//! - [`for_each_import!`]: the table of kernel procedures a WebAssembly
//!   extension may import (module, name, parameter and result types, and
//!   whether the procedure is *pure*, i.e. callable from a guard). The
//!   extension runtime (`wasm/`) implements it, the Rust SDK (`sdk/rust`)
//!   generates its bindings from it, and a host test checks the C header
//!   (`sdk/c/spindle.h`) against it;
//! - [`Import`] and [`IMPORTS`]: the same table as data;
//! - [`Status`]: the codes kernel procedures return;
//! - [`FaultKind`]: why an invocation of extension code was aborted
//!   (the argument of the `Extension.Faulted` event);
//! - [`HandleKind`], [`InstallMode`]: what handles name and how handlers run.
//!
//! The crate has no dependencies, so the Wasm SDK can use it.
#![no_std]
#![forbid(unsafe_code)]

/// Wasm import module of the kernel interface (a domain the nameserver
/// exports under this name).
pub const KERNEL_MODULE: &str = "spindle";

/// Export an extension may define to be run once, right after it is
/// instantiated (type `() -> ()`). A trap in it fails the load.
pub const INIT_EXPORT: &str = "init";

/// Export holding the extension's linear memory; kernel procedures that take
/// pointers read and write it.
pub const MEMORY_EXPORT: &str = "memory";

/// Calls `$callback!` with the kernel import table, one entry per procedure:
///
/// ```text
/// /// doc
/// Variant = pure|impure fn name(param: type, ...) -> type;
/// ```
///
/// Types are `i32` and `i64` (Wasm value types, which are also the Rust
/// types the SDK uses). Pointers and lengths are `i32` offsets into the
/// caller's linear memory, checked by the kernel on every use. Procedures
/// returning `i32` return a [`Status`] (negative) or a non-negative value.
#[macro_export]
macro_rules! for_each_import {
    ($callback:ident) => {
        $callback! {
            "spindle";
            /// Writes the UTF-8 text at `message_ptr..+message_len` to the
            /// kernel console, prefixed with the extension's name. Returns
            /// a status.
            Log = impure fn log(message_ptr: i32, message_len: i32) -> i32;
            /// Does nothing: measures the cost of a Wasm-to-kernel call.
            NullCall = pure fn null_call();
            /// Nanoseconds since boot (0 without a clock).
            TimerNowNs = pure fn timer_now_ns() -> i64;
            /// The handle the extension was granted under the name at
            /// `name_ptr..+name_len`, or `Status::NotFound`.
            HandleFind = pure fn handle_find(name_ptr: i32, name_len: i32) -> i32;
            /// The `HandleKind` of a handle; traps on a bad or revoked handle.
            HandleKind = pure fn handle_kind(handle: i32) -> i32;
            /// Gives a handle up (a binding handle stays installed); traps
            /// on a bad or revoked handle. Returns a status.
            HandleDrop = impure fn handle_drop(handle: i32) -> i32;
            /// Installs the extension's export named at
            /// `handler_ptr..+handler_len` as a handler of the event `event`
            /// (a handle of kind `Event`), guarded by the export named at
            /// `guard_ptr..+guard_len` if `guard_len` is not 0 (it must be
            /// pure), in `mode` (an `InstallMode`), with `fuel` as the budget
            /// of an ephemeral handler. Returns a binding handle or a status.
            Install = impure fn install(
                event: i32,
                handler_ptr: i32,
                handler_len: i32,
                guard_ptr: i32,
                guard_len: i32,
                mode: i32,
                fuel: i64
            ) -> i32;
            /// Removes the installation named by a binding handle and drops
            /// the handle. Returns a status.
            Remove = impure fn remove(binding: i32) -> i32;
            /// Raises the event `event` with `arg_count` arguments, read as
            /// little-endian 64-bit slots from `args_ptr` (integers in the
            /// low bits, floats as their bits, booleans 0 or 1); the result,
            /// if the event has one, is written as one slot at `result_ptr`.
            /// Returns a status.
            Raise = impure fn raise(event: i32, args_ptr: i32, arg_count: i32, result_ptr: i32) -> i32;
            /// Adds a declarative guard to one of the extension's
            /// installations (a binding handle): its handler runs only when
            /// parameter `param` of the event (a scalar) equals `value`. The
            /// dispatcher indexes such guards, so it finds the handler of a
            /// port without running every guard. Returns a status.
            GuardEquals = impure fn guard_equals(binding: i32, param: i32, value: i64) -> i32;
            /// Length in bytes of the packet behind `packet` (a handle of
            /// kind `Packet`, lent to a handler for one invocation), as its
            /// event's layer sees it (a UDP event: the datagram's data).
            /// Traps on a bad handle.
            PacketLength = pure fn packet_length(packet: i32) -> i32;
            /// Copies up to `len` bytes of the packet from byte `offset` to
            /// `buffer_ptr`; returns the number copied (0 past the end).
            /// Traps on a bad handle or buffer.
            PacketRead = pure fn packet_read(packet: i32, offset: i32, buffer_ptr: i32, len: i32) -> i32;
            /// Answers the packet with the `data_len` bytes at `data_ptr`,
            /// sent back to its source at its event's layer (a UDP event: a
            /// datagram from the port it arrived on to the port it came
            /// from). Returns a status (`Invalid` if the layer has no reply
            /// or the data does not fit in one frame).
            PacketReply = impure fn packet_reply(packet: i32, data_ptr: i32, data_len: i32) -> i32;
            /// Answers the packet with `len` bytes of `file` (a handle of
            /// kind `File`) from byte `offset`: on a stream the bytes are
            /// queued and sent from where the kernel keeps them, without a
            /// copy through linear memory; on a datagram layer they must
            /// fit in one frame. Returns a status (`Invalid` for a range
            /// outside the file or a reply the layer cannot send).
            PacketReplyFile = impure fn packet_reply_file(packet: i32, file: i32, offset: i64, len: i64) -> i32;
            /// Accepts TCP connections on `port` (every address of the
            /// host) through `streams` (a handle of kind `Streams`, granted
            /// at load as `streams`): the data of each connection raises
            /// `TCP.StreamData`. Returns a handle of kind `Listener`, which
            /// stops listening when dropped (or at unload), or a status
            /// (`Invalid` for a port outside 1-65535, `Refused` when the
            /// port is taken, `WrongKind` when `streams` is not the stream
            /// service, `Limit` when the handle table is full).
            StreamListen = impure fn stream_listen(streams: i32, port: i32) -> i32;
            /// Opens the regular file at the path `path_ptr..+path_len`
            /// (UTF-8, `/`-separated, no `..`) beneath `directory` (a
            /// handle of kind `Directory`, granted at load), read-only.
            /// Returns a handle of kind `File` or a status (`NotFound`,
            /// `Invalid` for a path that is not one, `WrongKind` when
            /// `directory` is not a directory, `Limit` when the handle
            /// table is full).
            FileOpen = impure fn file_open(directory: i32, path_ptr: i32, path_len: i32) -> i32;
            /// Length in bytes of the file behind `file` (a handle of kind
            /// `File`). Traps on a bad handle.
            FileLength = pure fn file_length(file: i32) -> i64;
            /// A number that changes when the file is written (from its
            /// size and modification time): what a cache keys on. Traps on
            /// a bad handle.
            FileVersion = pure fn file_version(file: i32) -> i64;
            /// Copies up to `len` bytes of the file from byte `offset` to
            /// `buffer_ptr`; returns the number copied (0 at the end) or
            /// `Invalid` for a negative offset or length. Traps on a bad
            /// handle or buffer.
            FileRead = impure fn file_read(file: i32, offset: i64, buffer_ptr: i32, len: i32) -> i32;
        }
    };
}

/// One procedure of the import table, as data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImportSpec {
    /// Which procedure.
    pub import: Import,
    /// Wasm import module.
    pub module: &'static str,
    /// Wasm import name.
    pub name: &'static str,
    /// Parameter types.
    pub params: &'static [WasmType],
    /// Result type, if any.
    pub result: Option<WasmType>,
    /// Free of side effects: guards may call it.
    pub is_pure: bool,
}

/// A Wasm value type used by the import table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WasmType {
    /// `i32`.
    I32,
    /// `i64`.
    I64,
}

#[doc(hidden)]
#[macro_export]
macro_rules! __wasm_type {
    (i32) => {
        $crate::WasmType::I32
    };
    (i64) => {
        $crate::WasmType::I64
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __is_pure {
    (pure) => {
        true
    };
    (impure) => {
        false
    };
}

macro_rules! define_table {
    (
        $module:literal;
        $(
            $(#[doc = $doc:literal])*
            $variant:ident = $purity:ident fn $name:ident($($param:ident: $ty:ident),* $(,)?) $(-> $result:ident)?;
        )*
    ) => {
        /// A kernel procedure extensions may import (see [`for_each_import!`]).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Import {
            $( $(#[doc = $doc])* $variant, )*
        }

        /// The import table as data, in [`Import`] order.
        pub const IMPORTS: &[ImportSpec] = &[
            $(
                ImportSpec {
                    import: Import::$variant,
                    module: $module,
                    name: stringify!($name),
                    params: &[$($crate::__wasm_type!($ty)),*],
                    result: define_table!(@result $($result)?),
                    is_pure: $crate::__is_pure!($purity),
                },
            )*
        ];
    };
    (@result) => { None };
    (@result $result:ident) => { Some($crate::__wasm_type!($result)) };
}

for_each_import!(define_table);

impl Import {
    /// The procedure's specification.
    pub fn spec(self) -> &'static ImportSpec {
        // IMPORTS is generated in declaration order, like the variants.
        &IMPORTS[self as usize]
    }

    /// The procedure imported as `module`.`name`, if any.
    pub fn find(module: &str, name: &str) -> Option<Import> {
        IMPORTS
            .iter()
            .find(|spec| spec.module == module && spec.name == name)
            .map(|spec| spec.import)
    }
}

/// What a kernel procedure returns when it fails (negative `i32`s; success
/// is 0 or a non-negative value such as a handle).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Status {
    /// Success.
    Ok = 0,
    /// No handle or export under that name.
    NotFound = -1,
    /// The handle names something of another kind.
    WrongKind = -2,
    /// The event's authorizer refused.
    Denied = -3,
    /// A type mismatch: handler or guard against the event, or arguments.
    Type = -4,
    /// A per-extension limit (handlers, handles) would be exceeded.
    Limit = -5,
    /// A guard that is not pure.
    NotPure = -6,
    /// No handler fired and the event has no default.
    NoHandler = -7,
    /// Every firing handler faulted.
    Faulted = -8,
    /// An argument is invalid (unknown mode, text that is not UTF-8, ...).
    Invalid = -9,
    /// The dispatcher refused for another reason (ordering, mode).
    Refused = -10,
}

impl Status {
    /// The code as returned to Wasm.
    pub const fn code(self) -> i32 {
        self as i32
    }

    /// The status for a code, if it is one.
    pub fn from_code(code: i32) -> Option<Status> {
        use Status::*;
        [
            Ok, NotFound, WrongKind, Denied, Type, Limit, NotPure, NoHandler, Faulted, Invalid,
            Refused,
        ]
        .into_iter()
        .find(|status| status.code() == code)
    }
}

/// What a handle names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum HandleKind {
    /// An event the extension may install handlers on (and maybe raise).
    Event = 1,
    /// One of the extension's installations.
    Binding = 2,
    /// A packet lent to a handler of a network event for one invocation
    /// (or a stream's data, lent to a handler of `TCP.StreamData`).
    Packet = 3,
    /// The stream service: the right to listen on TCP ports (granted at
    /// load as `streams`).
    Streams = 4,
    /// A port the extension listens on (`stream_listen`).
    Listener = 5,
    /// A directory of the file tree, readable (granted at load as
    /// `files`).
    Directory = 6,
    /// A regular file opened read-only (`file_open`).
    File = 7,
}

/// How an installed handler runs (the `mode` argument of `install`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum InstallMode {
    /// On the raiser's thread, to completion (within the extension's fuel
    /// limit per invocation).
    Synchronous = 0,
    /// Bounded by the `fuel` argument: aborted when it runs out.
    Ephemeral = 1,
}

impl InstallMode {
    /// The mode for a code, if it is one.
    pub fn from_code(code: i32) -> Option<InstallMode> {
        match code {
            0 => Some(InstallMode::Synchronous),
            1 => Some(InstallMode::Ephemeral),
            _ => None,
        }
    }
}

/// Why an invocation of extension code was aborted: the second argument of
/// the `Extension.Faulted` event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum FaultKind {
    /// `unreachable` was executed (Rust panics end here).
    Unreachable = 1,
    /// A load, store or bulk operation outside linear memory or a table.
    OutOfBounds = 2,
    /// Integer division or remainder by zero.
    DivisionByZero = 3,
    /// Integer overflow (`i32.div_s` of MIN by -1) or a bad float conversion.
    Arithmetic = 4,
    /// Too deep a recursion: the engine's call stack limit.
    StackOverflow = 5,
    /// `call_indirect` to a null entry or of the wrong type.
    IndirectCall = 6,
    /// The invocation ran out of fuel (an ephemeral budget or the
    /// extension's per-invocation limit).
    BudgetExhausted = 7,
    /// A kernel procedure was given a bad or revoked handle.
    BadHandle = 8,
    /// A kernel procedure was given a pointer outside linear memory.
    BadPointer = 9,
    /// Anything else the engine reports.
    Other = 10,
}

impl FaultKind {
    /// Every kind, in code order.
    pub const ALL: [FaultKind; 10] = [
        FaultKind::Unreachable,
        FaultKind::OutOfBounds,
        FaultKind::DivisionByZero,
        FaultKind::Arithmetic,
        FaultKind::StackOverflow,
        FaultKind::IndirectCall,
        FaultKind::BudgetExhausted,
        FaultKind::BadHandle,
        FaultKind::BadPointer,
        FaultKind::Other,
    ];

    /// The code carried by the event.
    pub const fn code(self) -> u32 {
        self as u32
    }

    /// The kind for a code, if it is one.
    pub fn from_code(code: u32) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|kind| kind.code() == code)
    }

    /// A short description.
    pub const fn describe(self) -> &'static str {
        match self {
            FaultKind::Unreachable => "unreachable executed",
            FaultKind::OutOfBounds => "out-of-bounds memory or table access",
            FaultKind::DivisionByZero => "integer division by zero",
            FaultKind::Arithmetic => "integer overflow or bad conversion",
            FaultKind::StackOverflow => "call stack exhausted",
            FaultKind::IndirectCall => "bad indirect call",
            FaultKind::BudgetExhausted => "budget exhausted",
            FaultKind::BadHandle => "bad or revoked handle",
            FaultKind::BadPointer => "pointer outside linear memory",
            FaultKind::Other => "engine error",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_and_enum_agree() {
        for (position, spec) in IMPORTS.iter().enumerate() {
            assert_eq!(spec.import as usize, position);
            assert_eq!(spec.import.spec(), spec);
            assert_eq!(Import::find(spec.module, spec.name), Some(spec.import));
        }
        assert_eq!(Import::find(KERNEL_MODULE, "no_such_procedure"), None);
    }

    #[test]
    fn table_types() {
        let install = Import::Install.spec();
        assert_eq!(install.params.len(), 7);
        assert_eq!(install.params[6], WasmType::I64);
        assert_eq!(install.result, Some(WasmType::I32));
        assert!(!install.is_pure);
        assert!(Import::HandleFind.spec().is_pure);
        assert_eq!(Import::NullCall.spec().result, None);
    }

    #[test]
    fn codes_round_trip() {
        for kind in FaultKind::ALL {
            assert_eq!(FaultKind::from_code(kind.code()), Some(kind));
        }
        assert_eq!(FaultKind::from_code(0), None);
        assert_eq!(Status::from_code(-5), Some(Status::Limit));
        assert_eq!(Status::from_code(1), None);
        assert_eq!(InstallMode::from_code(1), Some(InstallMode::Ephemeral));
        assert_eq!(InstallMode::from_code(7), None);
    }
}
