//! Packets as extensions see them: a capability lent for one invocation.
//!
//! A network event's first parameter is a [`PacketRef`] (an opaque
//! dispatcher type). When the dispatcher calls a Wasm handler of such an
//! event, the extension runtime puts the packet into the extension's
//! handle table (`wasm_runtime::Capability::Packet`), passes the handle
//! as an `i32`, and revokes it when the invocation returns: an extension
//! reads (and answers) a packet through its handle table and never holds
//! a pointer into kernel memory, nor the packet beyond the handler.

use alloc::sync::Arc;
use core::fmt;

use crate::files::FileAccess;

/// What the network layer lets an extension do with a packet. The
/// implementation (the protocol graph in `services/net`) defines what
/// "the packet" is at each layer: its bytes from that layer's payload on.
pub trait PacketAccess: Send + Sync {
    /// Length in bytes of the packet as its layer sees it.
    fn len(&self) -> usize;
    /// Whether it is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Copies bytes from `offset` into `out`; returns how many (0 past the
    /// end).
    fn read(&self, offset: usize, out: &mut [u8]) -> usize;
    /// Sends `data` back to the packet's source at its layer; `Err` with a
    /// reason when the layer has no reply or `data` does not fit.
    fn reply(&self, data: &[u8]) -> Result<(), ReplyError>;
    /// Sends `len` bytes of `file` from `offset` back as [`reply`]
    /// does. A stream queues the range and sends it from the file; this
    /// default, for datagram layers, reads it and sends it as one reply
    /// (at most [`MAX_FILE_REPLY_BYTES`]).
    ///
    /// [`reply`]: PacketAccess::reply
    fn reply_file(
        &self,
        file: &Arc<dyn FileAccess>,
        offset: u64,
        len: u64,
    ) -> Result<(), ReplyError> {
        check_file_range(file.as_ref(), offset, len)?;
        if len > MAX_FILE_REPLY_BYTES as u64 {
            return Err(ReplyError::TooLong);
        }
        let mut bytes = alloc::vec![0; len as usize];
        let read = file.read(offset, &mut bytes);
        if read != bytes.len() {
            return Err(ReplyError::OutsideFile);
        }
        self.reply(&bytes)
    }
    /// The implementation itself, for the kernel code that made it (the
    /// protocol graph reads its own packets' headers this way).
    fn as_any(&self) -> &dyn core::any::Any;
}

/// Why a reply was not sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyError {
    /// The packet's layer has no notion of a reply.
    NoReply,
    /// The data does not fit in one frame.
    TooLong,
    /// The network could not send it (no route, device busy).
    NotSent,
    /// A file's range past its end.
    OutsideFile,
}

/// Most bytes of a file a datagram reply takes (more than any frame).
pub const MAX_FILE_REPLY_BYTES: usize = 65_536;

/// Checks that `len` bytes from `offset` lie inside `file`, as every
/// [`PacketAccess::reply_file`] must before it sends any, and returns
/// the range's end: [`ReplyError::OutsideFile`] if it is not inside (or
/// the end overflows).
pub fn check_file_range(file: &dyn FileAccess, offset: u64, len: u64) -> Result<u64, ReplyError> {
    match offset.checked_add(len) {
        Some(end) if end <= file.len() => Ok(end),
        _ => Err(ReplyError::OutsideFile),
    }
}

impl fmt::Display for ReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReplyError::NoReply => "the packet's layer has no reply",
            ReplyError::TooLong => "the reply does not fit in one frame",
            ReplyError::NotSent => "the network could not send the reply",
            ReplyError::OutsideFile => "the range is outside the file",
        })
    }
}

/// A packet as an event parameter.
#[derive(Clone)]
pub struct PacketRef(pub Arc<dyn PacketAccess>);

impl fmt::Debug for PacketRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "packet of {} bytes", self.0.len())
    }
}

dispatch::opaque_arg!(PacketRef);

/// No packet: the value of a packet parameter before it is set.
struct NoPacket;

impl PacketAccess for NoPacket {
    fn len(&self) -> usize {
        0
    }
    fn read(&self, _offset: usize, _out: &mut [u8]) -> usize {
        0
    }
    fn reply(&self, _data: &[u8]) -> Result<(), ReplyError> {
        Err(ReplyError::NoReply)
    }
    fn as_any(&self) -> &dyn core::any::Any {
        self
    }
}

impl Default for PacketRef {
    /// An empty packet that cannot be answered (event arguments need a
    /// default; no network event is raised with it).
    fn default() -> Self {
        PacketRef(Arc::new(NoPacket))
    }
}
