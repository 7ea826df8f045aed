//! One file's record locks (`fcntl`'s POSIX and open-file-description
//! locks): byte ranges, each shared or exclusive, each held by an owner.
//! Pure data, host-tested; [`super::Registry`] keeps one table per file.
//!
//! The rules are Linux's `posix_lock_inode` (fs/locks.c): a request
//! conflicts with another owner's lock that overlaps it when either is
//! exclusive; an owner's own locks never conflict with it. Taking or
//! releasing a range first cuts it out of the owner's locks (splitting
//! one that spans it), then puts the new lock in and merges it with the
//! owner's locks of the same kind that touch or overlap it, so an owner
//! holds at most one lock over any byte and adjacent locks of one kind
//! are one lock. A request that conflicts changes nothing.

use alloc::vec::Vec;

/// Who holds a lock: what a lock is released with, and whose locks never
/// conflict with each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Owner {
    /// A process (`F_SETLK`): released when it closes any descriptor of
    /// the file, and when it ends; not inherited by `fork`.
    Process(u64),
    /// An open file description ([`vfs::OpenFile::id`]: `F_OFD_SETLK` and
    /// `flock`): shared by `dup` and `fork`, released with the
    /// description.
    Description(usize),
}

/// What a lock lets others do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    /// Shared (`F_RDLCK`, `LOCK_SH`): others may take shared locks too.
    Shared,
    /// Exclusive (`F_WRLCK`, `LOCK_EX`): nobody else may lock.
    Exclusive,
}

impl LockKind {
    /// Whether locks of kinds `self` and `other` held by different owners
    /// exclude each other.
    pub fn conflicts_with(self, other: LockKind) -> bool {
        self == LockKind::Exclusive || other == LockKind::Exclusive
    }
}

/// Bytes `start..=end` of a file (inclusive: a lock to the end of the
/// file ends at `OFFSET_MAX`, which an exclusive end could not say).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteRange {
    /// The first byte.
    pub start: u64,
    /// The last byte (at least `start`).
    pub end: u64,
}

impl ByteRange {
    /// Whether the two ranges share a byte.
    pub fn overlaps(&self, other: &ByteRange) -> bool {
        self.start <= other.end && other.start <= self.end
    }

    /// Whether the two ranges share a byte or one starts right after the
    /// other ends (they would merge into one range).
    fn touches(&self, other: &ByteRange) -> bool {
        self.start <= other.end.saturating_add(1) && other.start <= self.end.saturating_add(1)
    }
}

/// One record lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordLock {
    /// Who holds it.
    pub owner: Owner,
    /// What `F_GETLK` reports as its holder (`l_pid`): the process that
    /// took it, or -1 for an open file description's.
    pub pid: i32,
    /// Shared or exclusive.
    pub kind: LockKind,
    /// The bytes it covers.
    pub range: ByteRange,
}

/// A file's record locks, by start.
#[derive(Clone, Debug, Default)]
pub struct RecordLocks {
    locks: Vec<RecordLock>,
}

impl RecordLocks {
    /// Whether no lock is held.
    pub fn is_empty(&self) -> bool {
        self.locks.is_empty()
    }

    /// The locks, by start.
    #[cfg(test)]
    pub fn locks(&self) -> &[RecordLock] {
        &self.locks
    }

    /// The first lock another owner holds that keeps `owner` from taking
    /// a lock of `kind` over `range` (`F_GETLK`'s answer).
    pub fn conflict(&self, owner: Owner, kind: LockKind, range: ByteRange) -> Option<RecordLock> {
        self.locks
            .iter()
            .find(|lock| {
                lock.owner != owner && lock.range.overlaps(&range) && lock.kind.conflicts_with(kind)
            })
            .copied()
    }

    /// Makes `owner` hold a lock of `kind` over `range` (`None`: hold
    /// nothing there), as `pid`; `Err` with the conflicting lock, and
    /// nothing changed, if another owner's lock is in the way. Releasing
    /// never conflicts.
    pub fn set(
        &mut self,
        owner: Owner,
        pid: i32,
        kind: Option<LockKind>,
        range: ByteRange,
    ) -> Result<(), RecordLock> {
        if let Some(kind) = kind {
            if let Some(conflict) = self.conflict(owner, kind, range) {
                return Err(conflict);
            }
        }
        self.cut_out(owner, range);
        if let Some(kind) = kind {
            self.insert_merged(RecordLock {
                owner,
                pid,
                kind,
                range,
            });
        }
        Ok(())
    }

    /// Releases every lock `owner` holds; whether it held any.
    pub fn release_owner(&mut self, owner: Owner) -> bool {
        let before = self.locks.len();
        self.locks.retain(|lock| lock.owner != owner);
        self.locks.len() != before
    }

    /// Takes `range` out of `owner`'s locks: a lock inside it goes, a lock
    /// over one of its ends is cut short, a lock spanning it is split in
    /// two.
    fn cut_out(&mut self, owner: Owner, range: ByteRange) {
        let mut kept = Vec::with_capacity(self.locks.len() + 1);
        for lock in self.locks.drain(..) {
            if lock.owner != owner || !lock.range.overlaps(&range) {
                kept.push(lock);
                continue;
            }
            if lock.range.start < range.start {
                kept.push(RecordLock {
                    range: ByteRange {
                        start: lock.range.start,
                        end: range.start - 1,
                    },
                    ..lock
                });
            }
            if lock.range.end > range.end {
                kept.push(RecordLock {
                    range: ByteRange {
                        start: range.end + 1,
                        end: lock.range.end,
                    },
                    ..lock
                });
            }
        }
        self.locks = kept;
        self.locks.sort_by_key(|lock| lock.range.start);
    }

    /// Puts `new` in (its range already cut out of its owner's locks),
    /// merged with the owner's locks of its kind that it touches.
    fn insert_merged(&mut self, mut new: RecordLock) {
        self.locks.retain(|lock| {
            let merges =
                lock.owner == new.owner && lock.kind == new.kind && lock.range.touches(&new.range);
            if merges {
                new.range.start = new.range.start.min(lock.range.start);
                new.range.end = new.range.end.max(lock.range.end);
            }
            !merges
        });
        let at = self
            .locks
            .partition_point(|lock| lock.range.start <= new.range.start);
        self.locks.insert(at, new);
    }
}
