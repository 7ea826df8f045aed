//! One file's `flock` locks: whole-file locks, shared or exclusive, each
//! held by an open file description. Pure data, host-tested;
//! [`super::Registry`] keeps one table per file.
//!
//! The rules are Linux's `flock_lock_inode` (fs/locks.c, flock(2)): a
//! description holds at most one lock; asking again for the kind it holds
//! changes nothing; asking for the other kind converts, and conversion is
//! not atomic: the old lock goes first, so a conversion that then
//! conflicts leaves the description with no lock (flock(2): "Converting a
//! lock ... is not guaranteed to be atomic"). `flock` locks and record
//! locks do not see each other.

use alloc::vec::Vec;

use super::ranges::LockKind;

/// A request conflicts with another description's lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WouldBlock;

/// A file's `flock` locks: which descriptions ([`vfs::OpenFile::id`])
/// hold one, and of which kind.
#[derive(Clone, Debug, Default)]
pub struct WholeFileLocks {
    holders: Vec<(usize, LockKind)>,
}

impl WholeFileLocks {
    /// Whether no lock is held.
    pub fn is_empty(&self) -> bool {
        self.holders.is_empty()
    }

    /// What description `description` holds, if anything.
    pub fn held_by(&self, description: usize) -> Option<LockKind> {
        self.holders
            .iter()
            .find(|(holder, _)| *holder == description)
            .map(|&(_, kind)| kind)
    }

    /// `flock(LOCK_SH or LOCK_EX)` for `description`: converts what it
    /// holds (releasing it first), then takes the lock unless another
    /// description's lock conflicts.
    pub fn lock(&mut self, description: usize, kind: LockKind) -> Result<(), WouldBlock> {
        match self.held_by(description) {
            Some(held) if held == kind => return Ok(()),
            Some(_) => {
                self.unlock(description);
            }
            None => {}
        }
        let conflicts = self
            .holders
            .iter()
            .any(|&(holder, held)| holder != description && held.conflicts_with(kind));
        if conflicts {
            return Err(WouldBlock);
        }
        self.holders.push((description, kind));
        Ok(())
    }

    /// `flock(LOCK_UN)`, or the description's end: releases its lock;
    /// whether it held one.
    pub fn unlock(&mut self, description: usize) -> bool {
        let before = self.holders.len();
        self.holders.retain(|&(holder, _)| holder != description);
        self.holders.len() != before
    }
}
