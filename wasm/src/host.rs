//! The kernel procedures extensions import: one function per entry of
//! `spindle_abi::for_each_import!`, dispatched by [`call`]. The `match`
//! is exhaustive over `spindle_abi::Import`, so adding a procedure to the
//! table without implementing it does not compile.
//!
//! Untrusted values get checked here (conventions.md item 5): pointers and
//! lengths through [`HostContext::read_memory`] (a bad range traps with
//! `BadPointer`), handles through the handle table (a bad or revoked handle
//! traps with `BadHandle`), modes and argument counts against their types
//! (a bad value returns `Status::Invalid` or `Status::Type`).

use alloc::{string::String, sync::Arc, vec::Vec};

use dispatch::{Budget, Mode, RaiseFailure};
use spindle_abi::{Import, InstallMode, Status};

use crate::{
    engine::{HostContext, Trap, WasmValue},
    error::BindError,
    events::{from_slot, to_slot, EventPort},
    extension::{bind, unbind, Bind},
    handles::{Capability, EventRights, Handles},
    host_files,
    runtime::Services,
};

/// Longest name (of a handle or an export) a procedure reads.
const MAX_NAME_BYTES: u32 = 256;
/// Longest console message, in bytes.
const MAX_LOG_BYTES: u32 = 4096;

/// Whether kernel procedure `import` may trap (return `Err` from
/// [`call`]). Native code reloads its trap word only after a call of a
/// procedure that may (docs/design/0008-native-engine.md, "What the
/// translation guarantees", kernel procedures). Exhaustive, so a new procedure needs an answer; when in
/// doubt, `true` (the check is then only a load and a branch).
pub fn may_trap(import: Import) -> bool {
    match import {
        // No pointer, no handle: nothing to refuse.
        Import::NullCall | Import::TimerNowNs => false,
        Import::Log
        | Import::HandleFind
        | Import::HandleKind
        | Import::HandleDrop
        | Import::Install
        | Import::Remove
        | Import::Raise
        | Import::GuardEquals
        | Import::PacketLength
        | Import::PacketRead
        | Import::PacketReply
        // Handles (streams, directory, file, packet) and pointers.
        | Import::PacketReplyFile
        | Import::StreamListen
        | Import::FileOpen
        | Import::FileLength
        | Import::FileVersion
        | Import::FileRead => true,
    }
}

/// Whether kernel procedure `import` may run an extension's code before
/// it returns: raise an event (directly, or by sending a packet or
/// changing a handler list whose authorizer or handlers may be
/// extensions), or reach a service that may be one. Before such a call
/// the running strand is recorded as the instance's holder, so that a
/// raise back into the same extension is refused at once rather than
/// waited for (`Shared::lock_instance`). Exhaustive, so a new procedure
/// needs an answer; when in doubt, `true` (the cost is one strand look-up
/// per call).
pub fn may_reenter(import: Import) -> bool {
    match import {
        // Read the caller's own state, a clock or a lent packet.
        Import::NullCall
        | Import::TimerNowNs
        | Import::HandleFind
        | Import::HandleKind
        | Import::PacketLength
        | Import::PacketRead => false,
        Import::Log
        | Import::HandleDrop
        | Import::Install
        | Import::Remove
        | Import::Raise
        | Import::GuardEquals
        | Import::PacketReply
        | Import::PacketReplyFile
        | Import::StreamListen
        | Import::FileOpen
        | Import::FileLength
        | Import::FileVersion
        | Import::FileRead => true,
    }
}

/// Whether kernel procedure `import` may be called by read-only code
/// (`purity::is_read_only`), which runs beside the instance's other
/// invocations, without its lock (`engine::native`'s read-only entry):
/// it changes nothing, not even the caller's linear memory (a reader
/// beside the instance must not write what others read), and reaches
/// only what the extension shares outside its instance: the handle
/// table (which has its own lock), the services, and linear memory, read
/// ([`ReadingReach`]). Exhaustive, so a new procedure needs an answer;
/// when in doubt, `false` (code calling it then takes the lock).
pub fn reads_only(import: Import) -> bool {
    match import {
        Import::NullCall
        | Import::TimerNowNs
        | Import::HandleFind
        | Import::HandleKind
        | Import::PacketLength
        | Import::FileLength
        | Import::FileVersion => true,
        // Pure (a guard may call it) but writes the buffer it is given.
        Import::PacketRead => false,
        Import::Log
        | Import::HandleDrop
        | Import::Install
        | Import::Remove
        | Import::Raise
        | Import::GuardEquals
        | Import::PacketReply
        | Import::PacketReplyFile
        | Import::StreamListen
        | Import::FileOpen
        | Import::FileRead => false,
    }
}

/// What the kernel procedures that only read ([`reads_only`]) reach of
/// the extension: its handle table, the services and its linear memory,
/// read. An invocation under the instance lock reaches them through its
/// [`HostContext`]; read-only code, which runs without the lock, through
/// a context of its own that holds only these (`engine::native`).
pub trait ReadingReach {
    /// The extension's handles.
    fn handles(&self) -> &Handles;
    /// The services the kernel gave the runtime.
    fn services(&self) -> &Services;
    /// Copies `len` bytes at `offset` out of linear memory; a range
    /// outside it is a [`spindle_abi::FaultKind::BadPointer`] trap.
    fn read_memory(&self, offset: u32, len: u32) -> Result<Vec<u8>, Trap>;
}

impl ReadingReach for dyn HostContext + '_ {
    fn handles(&self) -> &Handles {
        &self.state().handles
    }

    fn services(&self) -> &Services {
        &self.state().services
    }

    fn read_memory(&self, offset: u32, len: u32) -> Result<Vec<u8>, Trap> {
        HostContext::read_memory(self, offset, len)
    }
}

/// Runs kernel procedure `import`, one that only reads ([`reads_only`]),
/// with what `reach` gives it; any other procedure is refused with a
/// trap (read-only code was checked to call none, so that trap means a
/// bug in the check, contained). Always inlined, as [`call`].
#[inline(always)]
pub fn call_reading<Reach: ReadingReach + ?Sized, Args: HostArgs + ?Sized>(
    reach: &Reach,
    import: Import,
    args: &Args,
) -> Result<Option<WasmValue>, Trap> {
    let status = |status: Status| Ok(Some(WasmValue::I32(status.code())));
    match import {
        Import::NullCall => Ok(None),
        Import::TimerNowNs => {
            let now = reach
                .services()
                .clock
                .as_ref()
                .map_or(0, |clock| clock.now_ns());
            Ok(Some(WasmValue::I64(now as i64)))
        }
        Import::HandleFind => {
            let Some(name) = read_text(reach, args.i32_at(0), args.i32_at(1), MAX_NAME_BYTES)?
            else {
                return status(Status::Invalid);
            };
            match reach.handles().find(&name) {
                Some(handle) => Ok(Some(WasmValue::I32(handle))),
                None => status(Status::NotFound),
            }
        }
        Import::HandleKind => {
            let kind = reach.handles().get(args.i32_at(0))?.kind();
            Ok(Some(WasmValue::I32(kind as i32)))
        }
        Import::PacketLength => {
            let packet = packet_of(reach, args.i32_at(0))?;
            Ok(Some(WasmValue::I32(
                packet.0.len().min(i32::MAX as usize) as i32
            )))
        }
        Import::FileLength => host_files::file_length(reach, args.i32_at(0)),
        Import::FileVersion => host_files::file_version(reach, args.i32_at(0)),
        other => Err(not_reading(other)),
    }
}

/// The trap for a procedure read-only code may not call.
#[cold]
fn not_reading(import: Import) -> Trap {
    Trap::new(
        spindle_abi::FaultKind::Other,
        alloc::format!(
            "kernel procedure {} changes state: code running without the instance lock may not call it",
            import.spec().name
        ),
    )
}

/// Runs kernel procedure `import` for the extension behind `context`.
/// Always inlined: native code's trampolines call it with `import` a
/// constant, which reduces the `match` to one arm
/// (`engine/native/entry.rs`).
#[inline(always)]
pub fn call<Args: HostArgs + ?Sized>(
    context: &mut dyn HostContext,
    import: Import,
    args: &Args,
) -> Result<Option<WasmValue>, Trap> {
    let status = |status: Status| Ok(Some(WasmValue::I32(status.code())));
    if may_reenter(import) {
        context.state().before_reentry()?;
    }
    match import {
        Import::Log => {
            let text = match read_text(context, args.i32_at(0), args.i32_at(1), MAX_LOG_BYTES)? {
                Some(text) => text,
                None => return status(Status::Invalid),
            };
            let state = context.state();
            state.services.console.log(&state.name, &text);
            status(Status::Ok)
        }
        Import::NullCall
        | Import::TimerNowNs
        | Import::HandleFind
        | Import::HandleKind
        | Import::PacketLength
        | Import::FileLength
        | Import::FileVersion => call_reading(&*context, import, args),
        Import::HandleDrop => {
            context.state().handles.remove(args.i32_at(0))?;
            status(Status::Ok)
        }
        Import::Install => install(context, args),
        Import::Remove => {
            let handle = args.i32_at(0);
            let Capability::Binding { event, binding } =
                (*context.state().handles.get(handle)?).clone()
            else {
                return status(Status::WrongKind);
            };
            match unbind(context, &event, binding) {
                Ok(()) => {
                    context.state().handles.remove(handle)?;
                    status(Status::Ok)
                }
                Err(error) => status(dispatch_status(&error)),
            }
        }
        Import::Raise => raise(context, args),
        Import::GuardEquals => {
            let Capability::Binding { event, binding } =
                (*context.state().handles.get(args.i32_at(0))?).clone()
            else {
                return status(Status::WrongKind);
            };
            let param = args.i32_at(1);
            let fits = usize::try_from(param)
                .ok()
                .and_then(|param| event.signature().params.get(param))
                .is_some_and(|param| param.ty.is_scalar());
            if !fits {
                return status(Status::Type);
            }
            let principal = context.state().principal;
            match event.add_equals_guard(principal, binding, param as usize, args.i64_at(2) as u64)
            {
                Ok(()) => status(Status::Ok),
                Err(error) => status(dispatch_status(&error)),
            }
        }
        Import::PacketRead => {
            let packet = packet_of(context, args.i32_at(0))?;
            let (offset, len) = (args.i32_at(1), args.i32_at(3));
            if offset < 0 || len < 0 {
                return status(Status::Invalid);
            }
            let available = packet.0.len().saturating_sub(offset as usize);
            let mut bytes = alloc::vec![0; (len as usize).min(available)];
            let copied = packet.0.read(offset as usize, &mut bytes);
            bytes.truncate(copied);
            context.write_memory(args.i32_at(2) as u32, &bytes)?;
            Ok(Some(WasmValue::I32(copied as i32)))
        }
        Import::PacketReply => {
            let packet = packet_of(context, args.i32_at(0))?;
            let len = args.i32_at(2);
            if !(0..=MAX_REPLY_BYTES).contains(&len) {
                return status(Status::Invalid);
            }
            let data = context.read_memory(args.i32_at(1) as u32, len as u32)?;
            match packet.0.reply(&data) {
                Ok(()) => status(Status::Ok),
                Err(_) => status(Status::Invalid),
            }
        }
        Import::PacketReplyFile => host_files::packet_reply_file(context, args),
        Import::StreamListen => host_files::stream_listen(context, args),
        Import::FileOpen => host_files::file_open(context, args),
        Import::FileRead => host_files::file_read(context, args),
    }
}

/// Longest reply an extension may send (more than any frame holds).
const MAX_REPLY_BYTES: i32 = 65_536;

/// The packet behind `handle`; a bad handle traps, a handle of another
/// kind traps too (a packet procedure on an event handle is a bug in the
/// extension, as a bad handle is).
pub(crate) fn packet_of<Reach: ReadingReach + ?Sized>(
    reach: &Reach,
    handle: i32,
) -> Result<crate::packet::PacketRef, Trap> {
    match &*reach.handles().get(handle)? {
        Capability::Packet(packet) => Ok(packet.clone()),
        _ => Err(Trap::new(
            spindle_abi::FaultKind::BadHandle,
            alloc::format!("handle {handle:#x} is not a packet"),
        )),
    }
}

/// A procedure's arguments as an engine passes them: wasmi's values, or
/// native code's 64-bit registers (the typed trampolines,
/// `engine/native/entry.rs`), read without converting either into the
/// other. Validation matched the types to the procedure's, so a missing
/// or mistyped argument (read as 0) cannot happen.
pub trait HostArgs {
    /// Argument `index` as an `i32`.
    fn i32_at(&self, index: usize) -> i32;
    /// Argument `index` as an `i64`.
    fn i64_at(&self, index: usize) -> i64;
}

impl HostArgs for [WasmValue] {
    fn i32_at(&self, index: usize) -> i32 {
        match self.get(index) {
            Some(WasmValue::I32(v)) => *v,
            _ => 0,
        }
    }

    fn i64_at(&self, index: usize) -> i64 {
        match self.get(index) {
            Some(WasmValue::I64(v)) => *v,
            _ => 0,
        }
    }
}

/// Native code's arguments: each in the low bits of a 64-bit word.
impl HostArgs for [u64] {
    #[inline]
    fn i32_at(&self, index: usize) -> i32 {
        self.get(index).map_or(0, |&word| word as u32 as i32)
    }

    #[inline]
    fn i64_at(&self, index: usize) -> i64 {
        self.get(index).map_or(0, |&word| word as i64)
    }
}

/// Reads UTF-8 text; `None` if it is too long or not UTF-8 (a status for
/// the caller), a trap if the range is outside memory.
pub(crate) fn read_text<Reach: ReadingReach + ?Sized>(
    reach: &Reach,
    ptr: i32,
    len: i32,
    max: u32,
) -> Result<Option<String>, Trap> {
    let len = len as u32;
    if len > max {
        return Ok(None);
    }
    let bytes = reach.read_memory(ptr as u32, len)?;
    Ok(String::from_utf8(bytes).ok())
}

fn event_of(context: &dyn HostContext, handle: i32) -> Result<Option<Arc<dyn EventPort>>, Trap> {
    Ok(event_and_rights(context, handle)?.map(|(event, _)| event))
}

/// An event a handle names, with the rights the handle carries.
type GrantedEvent = (Arc<dyn EventPort>, EventRights);

fn event_and_rights(context: &dyn HostContext, handle: i32) -> Result<Option<GrantedEvent>, Trap> {
    Ok(match &*context.state().handles.get(handle)? {
        Capability::Event(event, rights) => Some((event.clone(), *rights)),
        _ => None,
    })
}

fn install<Args: HostArgs + ?Sized>(
    context: &mut dyn HostContext,
    args: &Args,
) -> Result<Option<WasmValue>, Trap> {
    let status = |status: Status| Ok(Some(WasmValue::I32(status.code())));
    let Some(event) = event_of(context, args.i32_at(0))? else {
        return status(Status::WrongKind);
    };
    let Some(handler) = read_text(context, args.i32_at(1), args.i32_at(2), MAX_NAME_BYTES)? else {
        return status(Status::Invalid);
    };
    let guard = if args.i32_at(4) == 0 {
        None
    } else {
        match read_text(context, args.i32_at(3), args.i32_at(4), MAX_NAME_BYTES)? {
            Some(guard) => Some(guard),
            None => return status(Status::Invalid),
        }
    };
    let mode = match InstallMode::from_code(args.i32_at(5)) {
        Some(InstallMode::Synchronous) => Mode::Synchronous,
        Some(InstallMode::Ephemeral) => Mode::Ephemeral(Budget::fuel(args.i64_at(6).max(0) as u64)),
        None => return status(Status::Invalid),
    };
    let request = Bind {
        handler: &handler,
        guard: guard.as_deref(),
        mode,
    };
    let binding = match bind(context, &event, &request) {
        Ok(binding) => binding,
        Err(error) => return status(bind_status(&error)),
    };
    let name = alloc::format!("{}:{handler}", event.name());
    let capability = Capability::Binding {
        event: event.clone(),
        binding,
    };
    match context.state().handles.insert(name, capability) {
        Ok(handle) => Ok(Some(WasmValue::I32(handle))),
        Err(_) => {
            // No handle to name it by: undo rather than leave it unreachable.
            let _ = unbind(context, &event, binding);
            status(Status::Limit)
        }
    }
}

fn raise<Args: HostArgs + ?Sized>(
    context: &mut dyn HostContext,
    args: &Args,
) -> Result<Option<WasmValue>, Trap> {
    let status = |status: Status| Ok(Some(WasmValue::I32(status.code())));
    let Some((event, rights)) = event_and_rights(context, args.i32_at(0))? else {
        return status(Status::WrongKind);
    };
    if !rights.raise {
        // Granted to install handlers on, not to raise.
        return status(Status::Denied);
    }
    let signature = event.signature();
    let count = args.i32_at(2);
    if count < 0 || count as usize != signature.params.len() {
        return status(Status::Type);
    }
    let bytes = context.read_memory(args.i32_at(1) as u32, count as u32 * 8)?;
    let mut values = Vec::with_capacity(count as usize);
    for (slot, param) in bytes.chunks_exact(8).zip(&signature.params) {
        let mut raw = [0; 8];
        raw.copy_from_slice(slot);
        match from_slot(u64::from_le_bytes(raw), param.ty) {
            Some(value) => values.push(value),
            None => return status(Status::Type),
        }
    }
    match event.raise(&values) {
        None => status(Status::Type),
        Some(Ok(result)) => {
            if let Some(value) = result {
                context.write_memory(args.i32_at(3) as u32, &to_slot(value).to_le_bytes())?;
            }
            status(Status::Ok)
        }
        Some(Err(error)) if matches!(error.failure(), RaiseFailure::NoHandler { .. }) => {
            status(Status::NoHandler)
        }
        Some(Err(_)) => status(Status::Faulted),
    }
}

fn bind_status(error: &BindError) -> Status {
    match error {
        BindError::Unloaded => Status::Invalid,
        BindError::NoSuchExport(_) => Status::NotFound,
        BindError::Type { .. } => Status::Type,
        BindError::NotPure { .. } => Status::NotPure,
        BindError::Limit(_) => Status::Limit,
        BindError::Dispatch(error) => dispatch_status(error),
    }
}

fn dispatch_status(error: &dispatch::Error) -> Status {
    match error {
        dispatch::Error::Type(_) | dispatch::Error::ImposedGuard(_) => Status::Type,
        dispatch::Error::Denied(_)
        | dispatch::Error::NotAuthority
        | dispatch::Error::NotInstaller => Status::Denied,
        _ => Status::Refused,
    }
}
