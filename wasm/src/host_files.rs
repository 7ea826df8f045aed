//! The kernel procedures on files and streams (`file_*`, `stream_listen`,
//! `packet_reply_file`): the part of [`host`](crate::host) that reaches
//! the capabilities of [`files`](crate::files). Same rules as the rest:
//! pointers checked through the context, handles through the table (a bad
//! one traps), a capability of the wrong kind answered `WrongKind` where
//! the procedure returns a status and trapped where it returns a value.

use alloc::{format, sync::Arc};

use spindle_abi::{FaultKind, Status};

use crate::{
    engine::{HostContext, Trap, WasmValue},
    files::{FileAccess, ListenError, OpenError},
    handles::Capability,
    host::{read_text, HostArgs, ReadingReach},
};

/// Longest path `file_open` reads.
const MAX_PATH_BYTES: u32 = 1024;
/// Most bytes one `file_read` copies (an extension reads a big file in
/// pieces; the kernel does not allocate what a caller asks for at once).
const MAX_READ_BYTES: usize = 1 << 20;

type Outcome = Result<Option<WasmValue>, Trap>;

fn status(status: Status) -> Outcome {
    Ok(Some(WasmValue::I32(status.code())))
}

/// `stream_listen(streams, port)`.
pub(crate) fn stream_listen<Args: HostArgs + ?Sized>(
    context: &mut dyn HostContext,
    args: &Args,
) -> Outcome {
    let Capability::Streams(streams) = &*context.state().handles.get(args.i32_at(0))? else {
        return status(Status::WrongKind);
    };
    let streams = streams.clone();
    let Ok(port) = u16::try_from(args.i32_at(1)) else {
        return status(Status::Invalid);
    };
    if port == 0 {
        return status(Status::Invalid);
    }
    let owner = context.state().name.clone();
    let listening = match streams.listen(port, &owner) {
        Ok(listening) => listening,
        Err(ListenError::BadPort) => return status(Status::Invalid),
        Err(ListenError::PortTaken) => return status(Status::Refused),
        Err(ListenError::Unavailable) => return status(Status::NotFound),
    };
    // Dropped with the capability if the table is full: it stops at once.
    match context
        .state()
        .handles
        .insert(format!("listener:{port}"), Capability::Listener(listening))
    {
        Ok(handle) => Ok(Some(WasmValue::I32(handle))),
        Err(_) => status(Status::Limit),
    }
}

/// `file_open(directory, path_ptr, path_len)`.
pub(crate) fn file_open<Args: HostArgs + ?Sized>(
    context: &mut dyn HostContext,
    args: &Args,
) -> Outcome {
    let Capability::Directory(directory) = &*context.state().handles.get(args.i32_at(0))? else {
        return status(Status::WrongKind);
    };
    let directory = directory.clone();
    let Some(path) = read_text(context, args.i32_at(1), args.i32_at(2), MAX_PATH_BYTES)? else {
        return status(Status::Invalid);
    };
    let file = match directory.open(&path) {
        Ok(file) => file,
        Err(OpenError::NotFound) => return status(Status::NotFound),
        Err(OpenError::BadPath) => return status(Status::Invalid),
    };
    match context
        .state()
        .handles
        .insert(format!("file:{path}"), Capability::File(file))
    {
        Ok(handle) => Ok(Some(WasmValue::I32(handle))),
        Err(_) => status(Status::Limit),
    }
}

/// `file_length(file)`.
pub(crate) fn file_length<Reach: ReadingReach + ?Sized>(reach: &Reach, handle: i32) -> Outcome {
    let file = file_of(reach, handle)?;
    Ok(Some(WasmValue::I64(file.len().min(i64::MAX as u64) as i64)))
}

/// `file_version(file)`.
pub(crate) fn file_version<Reach: ReadingReach + ?Sized>(reach: &Reach, handle: i32) -> Outcome {
    let file = file_of(reach, handle)?;
    Ok(Some(WasmValue::I64(file.version() as i64)))
}

/// `file_read(file, offset, buffer_ptr, len)`.
pub(crate) fn file_read<Args: HostArgs + ?Sized>(
    context: &mut dyn HostContext,
    args: &Args,
) -> Outcome {
    let file = file_of(context, args.i32_at(0))?;
    let (offset, len) = (args.i64_at(1), args.i32_at(3));
    if offset < 0 || len < 0 {
        return status(Status::Invalid);
    }
    let available = file.len().saturating_sub(offset as u64);
    let wanted = (len as usize).min(MAX_READ_BYTES).min(available as usize);
    let mut bytes = alloc::vec![0; wanted];
    let copied = file.read(offset as u64, &mut bytes);
    bytes.truncate(copied);
    context.write_memory(args.i32_at(2) as u32, &bytes)?;
    Ok(Some(WasmValue::I32(copied as i32)))
}

/// `packet_reply_file(packet, file, offset, len)`.
pub(crate) fn packet_reply_file<Args: HostArgs + ?Sized>(
    context: &mut dyn HostContext,
    args: &Args,
) -> Outcome {
    let packet = crate::host::packet_of(context, args.i32_at(0))?;
    let file = file_of(context, args.i32_at(1))?;
    let (offset, len) = (args.i64_at(2), args.i64_at(3));
    if offset < 0 || len < 0 {
        return status(Status::Invalid);
    }
    // A range past the file's end is the packet's to refuse
    // (`ReplyError::OutsideFile`).
    match packet.0.reply_file(&file, offset as u64, len as u64) {
        Ok(()) => status(Status::Ok),
        Err(_) => status(Status::Invalid),
    }
}

/// The file behind `handle`; a bad handle or one of another kind traps.
fn file_of<Reach: ReadingReach + ?Sized>(
    reach: &Reach,
    handle: i32,
) -> Result<Arc<dyn FileAccess>, Trap> {
    match &*reach.handles().get(handle)? {
        Capability::File(file) => Ok(file.clone()),
        _ => Err(Trap::new(
            FaultKind::BadHandle,
            format!("handle {handle:#x} is not a file"),
        )),
    }
}
