//! The extension's handle table: the capabilities it was given, named by
//! small integers (SPIN's externalized references, design.md "The
//! mapping").
//!
//! A handle is an index plus a generation, so a handle that was dropped or
//! revoked stays invalid after its slot is reused: using it traps with
//! `FaultKind::BadHandle` instead of reaching another capability.

use alloc::{string::String, sync::Arc, vec::Vec};

use dispatch::BindingId;
use spindle_abi::{FaultKind, HandleKind};

use crate::{engine::Trap, error::LimitExceeded, events::EventPort};

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
        }
    }
}

/// Bits of a handle that select the slot; the bits above are the slot's
/// generation (handles stay non-negative `i32`s).
const INDEX_BITS: u32 = 16;
const INDEX_MASK: u32 = (1 << INDEX_BITS) - 1;
const GENERATION_MASK: u32 = (1 << (31 - INDEX_BITS)) - 1;

struct Slot {
    generation: u32,
    entry: Option<(String, Capability)>,
}

/// An extension's handles.
pub struct HandleTable {
    slots: Vec<Slot>,
    live: usize,
    limit: usize,
}

impl HandleTable {
    /// An empty table holding at most `limit` handles (and never more than
    /// 65,536).
    pub fn new(limit: usize) -> Self {
        HandleTable {
            slots: Vec::new(),
            live: 0,
            limit: limit.min(INDEX_MASK as usize + 1),
        }
    }

    /// Adds a capability under `name`; returns its handle.
    pub fn insert(&mut self, name: String, capability: Capability) -> Result<i32, LimitExceeded> {
        if self.live >= self.limit {
            return Err(LimitExceeded {
                what: "handles",
                limit: self.limit as u64,
                requested: self.live as u64 + 1,
            });
        }
        let index = match self.slots.iter().position(|slot| slot.entry.is_none()) {
            Some(index) => index,
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    entry: None,
                });
                self.slots.len() - 1
            }
        };
        let slot = &mut self.slots[index];
        slot.entry = Some((name, capability));
        self.live += 1;
        Ok(((slot.generation << INDEX_BITS) | index as u32) as i32)
    }

    fn slot(&self, handle: i32) -> Option<usize> {
        let raw = u32::try_from(handle).ok()?;
        let index = (raw & INDEX_MASK) as usize;
        let slot = self.slots.get(index)?;
        (slot.entry.is_some() && slot.generation == raw >> INDEX_BITS).then_some(index)
    }

    /// The capability behind `handle`; a bad or revoked handle is a trap.
    pub fn get(&self, handle: i32) -> Result<&Capability, Trap> {
        self.slot(handle)
            .and_then(|index| self.slots[index].entry.as_ref())
            .map(|(_, capability)| capability)
            .ok_or_else(|| bad_handle(handle))
    }

    /// Removes `handle` (drop or revocation); a bad handle is a trap.
    pub fn remove(&mut self, handle: i32) -> Result<Capability, Trap> {
        let index = self.slot(handle).ok_or_else(|| bad_handle(handle))?;
        let slot = &mut self.slots[index];
        slot.generation = (slot.generation + 1) & GENERATION_MASK;
        self.live -= 1;
        let (_, capability) = slot.entry.take().ok_or_else(|| bad_handle(handle))?;
        Ok(capability)
    }

    /// The handle of the capability granted under `name`.
    pub fn find(&self, name: &str) -> Option<i32> {
        self.slots
            .iter()
            .enumerate()
            .find_map(|(index, slot)| match &slot.entry {
                Some((entry_name, _)) if entry_name == name => {
                    Some(((slot.generation << INDEX_BITS) | index as u32) as i32)
                }
                _ => None,
            })
    }

    /// Number of live handles.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no handle is live.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Revokes every handle.
    pub fn clear(&mut self) {
        for slot in &mut self.slots {
            if slot.entry.take().is_some() {
                slot.generation = (slot.generation + 1) & GENERATION_MASK;
            }
        }
        self.live = 0;
    }
}

fn bad_handle(handle: i32) -> Trap {
    Trap::new(FaultKind::BadHandle, alloc::format!("handle {handle:#x}"))
}
