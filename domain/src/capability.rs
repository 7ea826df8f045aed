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
//!
//! This is the only handle table: the Wasm runtime keeps each extension's
//! capabilities in one (`wasm_runtime::handles` adapts it to the extension
//! ABI), and user processes are to get theirs the same way.
//!
//! A handle is a non-negative `i32` ([`Handle::as_i32`]) because the
//! extension ABI passes handles as Wasm `i32`s and a negative value is free
//! to mean an error: 16 bits of slot index, 15 of generation. So a table has
//! at most [`MAX_HANDLES`] slots, and each slot names at most
//! 2<sup>15</sup> occupants before it is retired: a table gives out at most
//! 2<sup>31</sup> handles in its life, after which [`HandleTable::insert`]
//! answers [`HandleError::Exhausted`].

use alloc::{sync::Arc, vec::Vec};
use core::{
    any::{type_name, Any},
    fmt,
    sync::atomic::{AtomicBool, Ordering},
};

use dispatch::Principal;
use spin::Mutex;

/// Bits of a handle that select the slot.
const INDEX_BITS: u32 = 16;
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;
/// Bits of the slot's generation: the rest of a non-negative `i32`.
const GENERATION_BITS: u32 = 31 - INDEX_BITS;
/// The last generation a slot reaches before it is retired.
const LAST_GENERATION: u32 = (1 << GENERATION_BITS) - 1;

/// The most handles (live or retired slots) one table can number.
pub const MAX_HANDLES: usize = 1 << INDEX_BITS;

/// An externalized reference: slot index and generation, as one integer that
/// can be handed to a Wasm module or a user process. Every handle a table
/// gives out is `generation << 16 | index`, a non-negative `i32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Handle(u64);

impl Handle {
    fn new(index: u32, generation: u32) -> Self {
        debug_assert!(index as usize <= INDEX_MASK as usize && generation <= LAST_GENERATION);
        Handle((u64::from(generation) << INDEX_BITS) | u64::from(index))
    }

    /// Slot index and generation; `None` for a value no table gives out
    /// (above `i32::MAX`), which every table then refuses as invalid.
    fn decode(self) -> Option<(usize, u32)> {
        if self.0 > i32::MAX as u64 {
            return None;
        }
        Some((
            (self.0 & INDEX_MASK) as usize,
            (self.0 >> INDEX_BITS) as u32,
        ))
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

    /// The integer given to a Wasm extension (never negative). A handle no
    /// table gives out (made by [`Handle::from_u64`] from a larger value, or
    /// by [`Handle::from_i32`] from a negative one) is -1.
    pub fn as_i32(self) -> i32 {
        i32::try_from(self.0).unwrap_or(-1)
    }

    /// Back from an `i32` an extension gave us: an allegation, validated by
    /// the table on use. A negative value is never valid.
    pub fn from_i32(raw: i32) -> Self {
        // Sign extension puts a negative value far above `i32::MAX`, where
        // `decode` refuses it.
        Handle(raw as i64 as u64)
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

/// Why a handle was refused, or could not be given.
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
    /// The table already holds as many live handles as its limit allows.
    Full {
        /// The table's limit on live handles.
        limit: usize,
    },
    /// Every one of the table's [`MAX_HANDLES`] slots is live or retired:
    /// it has no handle number left to give, whatever its limit.
    Exhausted,
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
            HandleError::Full { limit } => {
                write!(f, "handle table full ({limit} live handles allowed)")
            }
            HandleError::Exhausted => write!(
                f,
                "handle table exhausted (all {MAX_HANDLES} slots live or retired)"
            ),
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
    /// The name it was granted under, for holders that look capabilities up
    /// by name (an extension's `handle_find`); duplicates keep it.
    name: Option<Arc<str>>,
}

struct Slot {
    generation: u32,
    entry: Option<Entry>,
}

struct Slots {
    slots: Vec<Slot>,
    /// Indices of empty slots that may be reused.
    free: Vec<u32>,
    /// Slots holding an entry: checked against the limit on every insert,
    /// so counted rather than recomputed.
    live: usize,
}

impl Slots {
    /// Empties a slot that holds an entry and gives it a new generation, so
    /// that its old handle never names the slot's next occupant; a slot
    /// whose generation would leave the handle's 15 bits is retired instead
    /// of reused.
    fn vacate(&mut self, index: usize) -> Option<Entry> {
        let slot = &mut self.slots[index];
        let entry = slot.entry.take()?;
        self.live -= 1;
        if slot.generation < LAST_GENERATION {
            slot.generation += 1;
            self.free.push(index as u32);
        }
        Some(entry)
    }
}

/// One holder's table of capabilities (one per extension, one per user
/// process).
pub struct HandleTable {
    owner: Principal,
    /// Most live handles at once (at most [`MAX_HANDLES`]).
    limit: usize,
    /// Guards the slots; held only for the few instructions of each call.
    inner: Mutex<Slots>,
}

impl HandleTable {
    /// An empty table for `owner`, limited only by the [`MAX_HANDLES`]
    /// numbers a handle has room for.
    pub fn new(owner: Principal) -> Self {
        HandleTable::with_limit(owner, MAX_HANDLES)
    }

    /// An empty table for `owner` holding at most `limit` live handles (and
    /// never more than [`MAX_HANDLES`]); an insert beyond it is refused with
    /// [`HandleError::Full`].
    pub fn with_limit(owner: Principal, limit: usize) -> Self {
        HandleTable {
            owner,
            limit: limit.min(MAX_HANDLES),
            inner: Mutex::new(Slots {
                slots: Vec::new(),
                free: Vec::new(),
                live: 0,
            }),
        }
    }

    /// Who holds the table.
    pub fn owner(&self) -> Principal {
        self.owner
    }

    /// The most live handles the table holds at once.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The number of live handles.
    pub fn len(&self) -> usize {
        self.inner.lock().live
    }

    /// Whether the table holds no handle.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Gives the holder a capability for `object`; refused if the table is
    /// full or exhausted.
    pub fn insert<T: Any + Send + Sync>(
        &self,
        object: Arc<T>,
        rights: Rights,
    ) -> Result<Handle, HandleError> {
        self.put(Entry::new(object, rights, None))
    }

    /// Gives the holder a capability for `object` under `name`, which
    /// [`HandleTable::find_named`] finds it by. Names need not be unique.
    pub fn insert_named<T: Any + Send + Sync>(
        &self,
        name: impl Into<Arc<str>>,
        object: Arc<T>,
        rights: Rights,
    ) -> Result<Handle, HandleError> {
        self.put(Entry::new(object, rights, Some(name.into())))
    }

    fn put(&self, entry: Entry) -> Result<Handle, HandleError> {
        let mut inner = self.inner.lock();
        if inner.live >= self.limit {
            return Err(HandleError::Full { limit: self.limit });
        }
        let index = match inner.free.pop() {
            Some(index) => index,
            None if inner.slots.len() < MAX_HANDLES => {
                inner.slots.push(Slot {
                    generation: 0,
                    entry: None,
                });
                (inner.slots.len() - 1) as u32
            }
            None => return Err(HandleError::Exhausted),
        };
        inner.live += 1;
        let slot = &mut inner.slots[index as usize];
        slot.entry = Some(entry);
        Ok(Handle::new(index, slot.generation))
    }

    /// Runs `f` on the live, unrevoked entry `handle` names, under the lock
    /// (so a lookup clones only what it returns).
    fn with_entry<R>(&self, handle: Handle, f: impl FnOnce(&Entry) -> R) -> Result<R, HandleError> {
        let (index, generation) = handle.decode().ok_or(HandleError::Invalid)?;
        let inner = self.inner.lock();
        let slot = inner.slots.get(index).ok_or(HandleError::Invalid)?;
        if slot.generation != generation {
            return Err(HandleError::Invalid);
        }
        let entry = slot.entry.as_ref().ok_or(HandleError::Invalid)?;
        if entry.revoked.load(Ordering::Acquire) {
            return Err(HandleError::Revoked);
        }
        Ok(f(entry))
    }

    fn entry(&self, handle: Handle) -> Result<Entry, HandleError> {
        self.with_entry(handle, Entry::clone)
    }

    /// The object a handle names, if it is a `T`.
    pub fn lookup<T: Any + Send + Sync>(&self, handle: Handle) -> Result<Arc<T>, HandleError> {
        let (object, found) =
            self.with_entry(handle, |entry| (entry.object.clone(), entry.type_name))?;
        object.downcast::<T>().map_err(|_| HandleError::WrongType {
            expected: type_name::<T>(),
            found,
        })
    }

    /// The rights of a handle.
    pub fn rights(&self, handle: Handle) -> Result<Rights, HandleError> {
        self.with_entry(handle, |entry| entry.rights)
    }

    /// The live, unrevoked handle granted under `name` (the lowest-numbered
    /// slot, if several were).
    pub fn find_named(&self, name: &str) -> Option<Handle> {
        let inner = self.inner.lock();
        inner
            .slots
            .iter()
            .enumerate()
            .find_map(|(index, slot)| match &slot.entry {
                Some(entry)
                    if entry.name.as_deref() == Some(name)
                        && !entry.revoked.load(Ordering::Acquire) =>
                {
                    Some(Handle::new(index as u32, slot.generation))
                }
                _ => None,
            })
    }

    /// A copy in this table with `rights` (a subset of the original's);
    /// needs `DUPLICATE`. Revoking the original revokes the copy.
    pub fn duplicate(&self, handle: Handle, rights: Rights) -> Result<Handle, HandleError> {
        self.duplicate_into(handle, self, rights)
    }

    /// A copy in another holder's table (granting a capability); refused if
    /// that table is full.
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
        to.put(Entry { rights, ..entry })
    }

    /// Moves a capability to another table; needs `TRANSFER`. The handle in
    /// this table becomes invalid. If `to` is full the capability stays
    /// here.
    pub fn transfer(&self, handle: Handle, to: &HandleTable) -> Result<Handle, HandleError> {
        let entry = self.entry(handle)?;
        if !entry.rights.contains(Rights::TRANSFER) {
            return Err(HandleError::PermissionDenied);
        }
        // Placed before it is closed here, so a full destination loses
        // nothing; if another caller closed it meanwhile, the move is undone.
        let moved = to.put(entry)?;
        if let Err(error) = self.close(handle) {
            let _ = to.close(moved);
            return Err(error);
        }
        Ok(moved)
    }

    /// Drops this handle only.
    pub fn close(&self, handle: Handle) -> Result<(), HandleError> {
        let (index, generation) = handle.decode().ok_or(HandleError::Invalid)?;
        let mut inner = self.inner.lock();
        match inner.slots.get(index) {
            Some(slot) if slot.generation == generation => {}
            _ => return Err(HandleError::Invalid),
        }
        let entry = inner.vacate(index);
        // The object is dropped after the lock is released: its `Drop` may
        // reach this table.
        drop(inner);
        entry.map(drop).ok_or(HandleError::Invalid)
    }

    /// Revokes a handle and every duplicate made from it (in any table),
    /// then closes it.
    pub fn revoke(&self, handle: Handle) -> Result<(), HandleError> {
        let revoked = self.with_entry(handle, |entry| entry.revoked.clone())?;
        revoked.store(true, Ordering::Release);
        self.close(handle)
    }

    /// Drops every handle (when the holder goes away).
    pub fn clear(&self) {
        let mut inner = self.inner.lock();
        let entries: Vec<Entry> = (0..inner.slots.len())
            .filter_map(|index| inner.vacate(index))
            .collect();
        // Dropped after the lock is released, as in `close`.
        drop(inner);
        drop(entries);
    }
}

impl Entry {
    fn new<T: Any + Send + Sync>(object: Arc<T>, rights: Rights, name: Option<Arc<str>>) -> Self {
        Entry {
            object,
            type_name: type_name::<T>(),
            rights,
            revoked: Arc::new(AtomicBool::new(false)),
            name,
        }
    }
}
