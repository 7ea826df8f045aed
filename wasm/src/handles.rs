//! The extension's handles: the capabilities it was given, named by
//! small integers (SPIN's externalized references, design.md "The
//! mapping").
//!
//! The table is `domain`'s [`HandleTable`], the kernel's one handle table
//! implementation, holding [`Capability`] entries; [`Handles`] adapts it to
//! the extension ABI. A handle is a non-negative Wasm `i32` (an index plus a
//! generation, see [`domain::Handle`]), so a handle that was dropped or
//! revoked stays invalid after its slot is reused: using it traps with
//! `FaultKind::BadHandle` instead of reaching another capability.

use alloc::{format, string::String, sync::Arc};

use dispatch::{BindingId, Principal};
use domain::{Handle, HandleError, HandleTable, Rights, MAX_HANDLES};
use spindle_abi::{FaultKind, HandleKind};

use crate::{
    engine::Trap,
    error::LimitExceeded,
    events::EventPort,
    files::{DirectoryAccess, FileAccess, Listening, StreamService},
};

/// Something an extension may hold a handle to.
#[derive(Clone)]
pub enum Capability {
    /// An event it may install handlers on, and raise if the grant says so
    /// (raising is the event's authority's to delegate: a grant to bind is
    /// not a grant to raise).
    Event(Arc<dyn EventPort>, EventRights),
    /// One of its own installations.
    Binding {
        /// The event.
        event: Arc<dyn EventPort>,
        /// The installation.
        binding: BindingId,
    },
    /// A packet lent to a handler for one invocation (see `packet`).
    Packet(crate::packet::PacketRef),
    /// The stream service: it may listen on TCP ports (see `files`).
    Streams(Arc<dyn StreamService>),
    /// A port it listens on; dropping the capability stops listening.
    Listener(Arc<dyn Listening>),
    /// A directory of the file tree it may read beneath.
    Directory(Arc<dyn DirectoryAccess>),
    /// A file it opened, read-only.
    File(Arc<dyn FileAccess>),
}

/// What a holder of an event capability may do beyond installing handlers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventRights {
    /// It may raise the event (`spindle.raise`).
    pub raise: bool,
}

impl EventRights {
    /// Install handlers only.
    pub const BIND: EventRights = EventRights { raise: false };
    /// Install handlers and raise.
    pub const BIND_AND_RAISE: EventRights = EventRights { raise: true };
}

impl Capability {
    /// What the capability names.
    pub fn kind(&self) -> HandleKind {
        match self {
            Capability::Event(..) => HandleKind::Event,
            Capability::Binding { .. } => HandleKind::Binding,
            Capability::Packet(_) => HandleKind::Packet,
            Capability::Streams(_) => HandleKind::Streams,
            Capability::Listener(_) => HandleKind::Listener,
            Capability::Directory(_) => HandleKind::Directory,
            Capability::File(_) => HandleKind::File,
        }
    }
}

impl core::fmt::Debug for Capability {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Capability::Event(event, rights) => {
                write!(f, "Event({}, raise: {})", event.name(), rights.raise)
            }
            Capability::Binding { event, binding } => {
                write!(f, "Binding({}, {binding:?})", event.name())
            }
            Capability::Packet(packet) => write!(f, "Packet({} bytes)", packet.0.len()),
            Capability::Streams(_) => f.write_str("Streams"),
            Capability::Listener(listener) => write!(f, "Listener(port {})", listener.port()),
            Capability::Directory(directory) => write!(f, "Directory({})", directory.describe()),
            Capability::File(file) => write!(f, "File({} bytes)", file.len()),
        }
    }
}

/// An extension's handles: its [`HandleTable`], spoken in Wasm `i32`s,
/// with refusals as the ABI has them (a trap, a limit).
pub struct Handles {
    table: HandleTable,
}

impl Handles {
    /// An empty table for the extension `owner`, holding at most `limit`
    /// handles (and never more than [`MAX_HANDLES`]).
    pub fn new(owner: Principal, limit: usize) -> Self {
        Handles {
            table: HandleTable::with_limit(owner, limit),
        }
    }

    /// The table itself, for the kernel's own operations on it (granting
    /// into it from another table, revoking with duplicates).
    pub fn table(&self) -> &HandleTable {
        &self.table
    }

    /// Adds a capability under `name`; returns its handle.
    pub fn insert(&self, name: String, capability: Capability) -> Result<i32, LimitExceeded> {
        // No rights beyond use: the ABI has no procedure to duplicate or
        // transfer a handle; what an event grant allows is in its
        // `EventRights`.
        match self
            .table
            .insert_named(name, Arc::new(capability), Rights::NONE)
        {
            Ok(handle) => Ok(handle.as_i32()),
            Err(HandleError::Full { limit }) => Err(LimitExceeded {
                what: "handles",
                limit: limit as u64,
                requested: limit as u64 + 1,
            }),
            // The only other refusal of an insert: `HandleError::Exhausted`,
            // every slot live or retired.
            Err(_) => Err(LimitExceeded {
                what: "handle slots (live or retired)",
                limit: MAX_HANDLES as u64,
                requested: MAX_HANDLES as u64 + 1,
            }),
        }
    }

    /// The capability behind `handle`; a bad or revoked handle is a trap.
    pub fn get(&self, handle: i32) -> Result<Arc<Capability>, Trap> {
        self.table
            .lookup::<Capability>(Handle::from_i32(handle))
            .map_err(|error| bad_handle(handle, error))
    }

    /// Removes `handle` (drop or revocation); a bad handle is a trap.
    pub fn remove(&self, handle: i32) -> Result<(), Trap> {
        self.table
            .close(Handle::from_i32(handle))
            .map_err(|error| bad_handle(handle, error))
    }

    /// The handle of the capability granted under `name`.
    pub fn find(&self, name: &str) -> Option<i32> {
        self.table.find_named(name).map(Handle::as_i32)
    }

    /// Number of live handles.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether no handle is live.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Revokes every handle.
    pub fn clear(&self) {
        self.table.clear();
    }
}

/// The trap for a handle the table refused, saying which and why (invalid
/// or revoked).
fn bad_handle(handle: i32, error: HandleError) -> Trap {
    Trap::new(FaultKind::BadHandle, format!("handle {handle:#x}: {error}"))
}
