//! Capability handle tables: SPIN's externalized references (000 §3.1).
//!
//! Inside the kernel a capability is a typed Rust reference. Code that is not
//! type safe at the Rust level (a Wasm extension, a user process) gets an
//! index into its own [`HandleTable`] instead, and the kernel recovers the
//! reference with [`HandleTable::lookup`], which checks the index, its
//! generation and the type on every use. An index never given, of the wrong
//! type, or revoked is an error, never a different object: a freed slot's
//! generation is bumped, so an old handle can never name its next occupant,
//! and a slot whose generation would wrap is retired.

use alloc::{sync::Arc, vec::Vec};
use core::{
    any::{type_name, Any},
    fmt,
    sync::atomic::{AtomicBool, Ordering},
};

use dispatch::Principal;
use spin::Mutex;

/// An externalized reference: slot index and generation, as one integer that
/// can be handed to a Wasm module (i64) or a user process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Handle(u64);

impl Handle {
    fn new(index: u32, generation: u32) -> Self {
        Handle(((generation as u64) << 32) | index as u64)
    }

    fn index(self) -> usize {
        (self.0 & 0xffff_ffff) as usize
    }

    fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// The integer given to the holder.
    pub fn as_u64(self) -> u64 {
        self.0
    }

    /// Back from an integer the holder gave us: an allegation, validated by
    /// the table on use.
    pub fn from_u64(raw: u64) -> Self {
        Handle(raw)
    }
}

/// What the holder of a handle may do with it besides using it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rights(u8);

impl Rights {
    /// Use only.
    pub const NONE: Rights = Rights(0);
    /// May make copies (with equal or fewer rights).
    pub const DUPLICATE: Rights = Rights(1);
    /// May give it to another table (losing it).
    pub const TRANSFER: Rights = Rights(2);
    /// All rights.
    pub const ALL: Rights = Rights(3);

    /// Whether every right in `other` is in `self`.
    pub fn contains(self, other: Rights) -> bool {
        self.0 & other.0 == other.0
    }

    /// The union.
    pub fn union(self, other: Rights) -> Rights {
        Rights(self.0 | other.0)
    }
}

/// Why a handle was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandleError {
    /// Never given out by this table (or closed).
    Invalid,
    /// Revoked: this handle, or the one it was duplicated from.
    Revoked,
    /// Names an object of another type.
    WrongType {
        /// The type asked for.
        expected: &'static str,
        /// The object's type.
        found: &'static str,
    },
    /// The handle lacks the right for this operation.
    PermissionDenied,
}

impl fmt::Display for HandleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandleError::Invalid => f.write_str("invalid handle"),
            HandleError::Revoked => f.write_str("revoked handle"),
            HandleError::WrongType { expected, found } => {
                write!(f, "handle names a {found}, not a {expected}")
            }
            HandleError::PermissionDenied => f.write_str("handle lacks the right"),
        }
    }
}

#[derive(Clone)]
struct Entry {
    object: Arc<dyn Any + Send + Sync>,
    type_name: &'static str,
    rights: Rights,
    /// Shared by a handle and every duplicate derived from it, in any table:
    /// revoking sets it for all of them.
    revoked: Arc<AtomicBool>,
}

struct Slot {
    generation: u32,
    entry: Option<Entry>,
}

struct Slots {
    slots: Vec<Slot>,
    /// Indices of empty slots that may be reused.
    free: Vec<u32>,
}

/// One holder's table of capabilities (one per extension, one per user
/// process).
pub struct HandleTable {
    owner: Principal,
    /// Guards the slots; held only for the few instructions of each call.
    inner: Mutex<Slots>,
}

impl HandleTable {
    /// An empty table for `owner`.
    pub fn new(owner: Principal) -> Self {
        HandleTable {
            owner,
            inner: Mutex::new(Slots {
                slots: Vec::new(),
                free: Vec::new(),
            }),
        }
    }

    /// Who holds the table.
    pub fn owner(&self) -> Principal {
        self.owner
    }

    /// The number of live handles.
    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .slots
            .iter()
            .filter(|s| s.entry.is_some())
            .count()
    }

    /// Whether the table holds no handle.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Gives the holder a capability for `object`.
    pub fn insert<T: Any + Send + Sync>(&self, object: Arc<T>, rights: Rights) -> Handle {
        self.put(Entry {
            object,
            type_name: type_name::<T>(),
            rights,
            revoked: Arc::new(AtomicBool::new(false)),
        })
    }

    fn put(&self, entry: Entry) -> Handle {
        let mut inner = self.inner.lock();
        match inner.free.pop() {
            Some(index) => {
                let slot = &mut inner.slots[index as usize];
                slot.entry = Some(entry);
                Handle::new(index, slot.generation)
            }
            None => {
                let index = inner.slots.len() as u32;
                inner.slots.push(Slot {
                    generation: 0,
                    entry: Some(entry),
                });
                Handle::new(index, 0)
            }
        }
    }

    fn entry(&self, handle: Handle) -> Result<Entry, HandleError> {
        let inner = self.inner.lock();
        let slot = inner
            .slots
            .get(handle.index())
            .ok_or(HandleError::Invalid)?;
        if slot.generation != handle.generation() {
            return Err(HandleError::Invalid);
        }
        let entry = slot.entry.as_ref().ok_or(HandleError::Invalid)?;
        if entry.revoked.load(Ordering::Acquire) {
            return Err(HandleError::Revoked);
        }
        Ok(entry.clone())
    }

    /// The object a handle names, if it is a `T`.
    pub fn lookup<T: Any + Send + Sync>(&self, handle: Handle) -> Result<Arc<T>, HandleError> {
        let entry = self.entry(handle)?;
        entry
            .object
            .downcast::<T>()
            .map_err(|_| HandleError::WrongType {
                expected: type_name::<T>(),
                found: entry.type_name,
            })
    }

    /// The rights of a handle.
    pub fn rights(&self, handle: Handle) -> Result<Rights, HandleError> {
        self.entry(handle).map(|e| e.rights)
    }

    /// A copy in this table with `rights` (a subset of the original's);
    /// needs `DUPLICATE`. Revoking the original revokes the copy.
    pub fn duplicate(&self, handle: Handle, rights: Rights) -> Result<Handle, HandleError> {
        self.duplicate_into(handle, self, rights)
    }

    /// A copy in another holder's table (granting a capability).
    pub fn duplicate_into(
        &self,
        handle: Handle,
        to: &HandleTable,
        rights: Rights,
    ) -> Result<Handle, HandleError> {
        let entry = self.entry(handle)?;
        if !entry.rights.contains(Rights::DUPLICATE) || !entry.rights.contains(rights) {
            return Err(HandleError::PermissionDenied);
        }
        Ok(to.put(Entry { rights, ..entry }))
    }

    /// Moves a capability to another table; needs `TRANSFER`. The handle in
    /// this table becomes invalid.
    pub fn transfer(&self, handle: Handle, to: &HandleTable) -> Result<Handle, HandleError> {
        let entry = self.entry(handle)?;
        if !entry.rights.contains(Rights::TRANSFER) {
            return Err(HandleError::PermissionDenied);
        }
        self.close(handle)?;
        Ok(to.put(entry))
    }

    /// Drops this handle only.
    pub fn close(&self, handle: Handle) -> Result<(), HandleError> {
        let mut inner = self.inner.lock();
        let slot = inner
            .slots
            .get_mut(handle.index())
            .ok_or(HandleError::Invalid)?;
        if slot.generation != handle.generation() || slot.entry.is_none() {
            return Err(HandleError::Invalid);
        }
        slot.entry = None;
        // A new generation, so that this handle never names the slot's next
        // occupant; a slot whose generation would wrap is retired.
        if let Some(next) = slot.generation.checked_add(1) {
            slot.generation = next;
            let index = handle.index() as u32;
            inner.free.push(index);
        }
        Ok(())
    }

    /// Revokes a handle and every duplicate made from it (in any table),
    /// then closes it.
    pub fn revoke(&self, handle: Handle) -> Result<(), HandleError> {
        let entry = self.entry(handle)?;
        entry.revoked.store(true, Ordering::Release);
        self.close(handle)
    }

    /// Drops every handle (when the holder goes away).
    pub fn clear(&self) {
        let mut inner = self.inner.lock();
        let Slots { slots, free } = &mut *inner;
        for (index, slot) in slots.iter_mut().enumerate() {
            if slot.entry.take().is_some() {
                if let Some(next) = slot.generation.checked_add(1) {
                    slot.generation = next;
                    free.push(index as u32);
                }
            }
        }
    }
}
