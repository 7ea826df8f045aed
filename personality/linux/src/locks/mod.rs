//! File locks: `fcntl`'s record locks (`F_GETLK`, `F_SETLK`,
//! `F_SETLKW` and their open-file-description forms `F_OFD_*`) and
//! `flock`, with Linux's semantics (fcntl(2), flock(2), fs/locks.c).
//!
//! - `ranges`: one file's record locks (byte ranges, split and merged);
//! - `whole_file`: one file's `flock` locks (conversion rules);
//! - `deadlock`: which blocked process waits for which (`EDEADLK`);
//! - `calls`: the system calls' arguments (`struct flock`, `flock`'s
//!   operation) and their errors;
//! - here, [`Registry`]: every file's locks, keyed by the file's device
//!   and inode numbers (what names a file uniquely, so every description
//!   and hard link of it meets the same locks), blocking without polling,
//!   and the releases: a process's record locks when it closes any
//!   descriptor of the file and when it ends; a description's
//!   (`F_OFD_*`, `flock`) when the description goes
//!   ([`vfs::ReleaseObserver`]).
//!
//! Lock order: the registry's state lock is taken last (no other lock is
//! taken while it is held), and never while an open file is dropped.

mod calls;
pub(crate) mod deadlock;
pub(crate) mod ranges;
pub(crate) mod whole_file;

use alloc::collections::BTreeMap;
use core::sync::atomic::{AtomicUsize, Ordering};

pub(crate) use calls::{fcntl_lock, flock, is_lock_command};
use deadlock::WaitsFor;
use ranges::{ByteRange, LockKind, Owner, RecordLock, RecordLocks};
use vfs::{Errno, OpenFile, ReleaseObserver};
use whole_file::WholeFileLocks;

use crate::{
    machine::{Blocking, Machine},
    wait::{wait_on, FileWaitQueue},
};

/// A file, as locks name it: its file system's device number and its
/// inode number.
type FileKey = (u64, u64);

fn file_key(file: &OpenFile) -> FileKey {
    let inode = file.inode();
    (inode.dev(), inode.ino())
}

/// One file's locks of both families (they do not see each other).
#[derive(Default)]
struct FileLocks {
    records: RecordLocks,
    whole_file: WholeFileLocks,
}

impl FileLocks {
    fn is_empty(&self) -> bool {
        self.records.is_empty() && self.whole_file.is_empty()
    }
}

/// Everything the registry's lock guards.
#[derive(Default)]
struct State {
    /// Files with at least one lock.
    files: BTreeMap<FileKey, FileLocks>,
    /// Blocked `F_SETLKW` calls of processes, for deadlock detection
    /// (global: a cycle may run through several files).
    waits_for: WaitsFor,
    /// Calls waiting for a lock: a release wakes the queue only if some
    /// call waits.
    waiters: usize,
}

impl State {
    /// Runs `change` on `key`'s locks, dropping the entry once it holds
    /// none.
    fn with_file<T>(&mut self, key: FileKey, change: impl FnOnce(&mut FileLocks) -> T) -> T {
        let locks = self.files.entry(key).or_default();
        let answer = change(locks);
        if locks.is_empty() {
            self.files.remove(&key);
        }
        answer
    }
}

/// One try at a lock: the answer (`None`: wait and try again) and
/// whether it released a lock someone may be waiting for.
struct Attempt<T> {
    answer: Option<Result<T, Errno>>,
    released: bool,
}

/// Every file's locks.
#[derive(Default)]
pub struct Registry {
    state: spin::Mutex<State>,
    /// How many files hold locks, read without the lock: closing a
    /// descriptor, which every program does, costs one load while nobody
    /// locks.
    locked_files: AtomicUsize,
    /// Where blocked `F_SETLKW` and `flock` calls wait: one queue for all
    /// files (lock waits are rare; every release wakes them all and each
    /// looks at its own file again).
    released: FileWaitQueue,
}

/// A record-lock request, decoded from `struct flock`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecordRequest {
    /// Who takes or releases it.
    pub owner: Owner,
    /// What `F_GETLK` reports as its holder.
    pub pid: i32,
    /// The kind to take; `None` to release.
    pub kind: Option<LockKind>,
    /// The bytes.
    pub range: ByteRange,
}

impl Registry {
    /// The lock another owner holds that keeps `request` (a lock to
    /// take) from being granted, if any (`F_GETLK`).
    pub(crate) fn test_record(
        &self,
        file: &OpenFile,
        request: RecordRequest,
    ) -> Option<RecordLock> {
        let kind = request.kind?;
        let state = self.state.lock();
        let locks = state.files.get(&file_key(file))?;
        locks.records.conflict(request.owner, kind, request.range)
    }

    /// Takes or releases a record lock on `file`: `EAGAIN` on a conflict
    /// unless `should_wait`, then waiting for the conflicting lock to go
    /// (`EDEADLK` if its holder waits, directly or not, for the caller;
    /// `EINTR` on a signal).
    pub(crate) fn set_record(
        self: &alloc::sync::Arc<Self>,
        file: &OpenFile,
        request: RecordRequest,
        should_wait: bool,
    ) -> Result<(), Errno> {
        if matches!(request.owner, Owner::Description(_)) {
            file.observe_release(|| self.clone());
        }
        let key = file_key(file);
        let thread = Machine::current_thread();
        self.run("fcntl record lock", thread, |state| {
            let result = state.with_file(key, |locks| {
                locks
                    .records
                    .set(request.owner, request.pid, request.kind, request.range)
            });
            let conflict = match result {
                Ok(()) => {
                    return Attempt {
                        answer: Some(Ok(())),
                        released: true,
                    }
                }
                Err(conflict) => conflict,
            };
            let answer = if !should_wait {
                Some(Err(Errno::EAGAIN))
            } else if let (Owner::Process(me), Owner::Process(holder)) =
                (request.owner, conflict.owner)
            {
                if state.waits_for.would_deadlock(me, holder) {
                    Some(Err(Errno::EDEADLK))
                } else {
                    state.waits_for.wait(thread, me, holder);
                    None
                }
            } else {
                None
            };
            Attempt {
                answer,
                released: false,
            }
        })
    }

    /// `flock` on `file`: takes a lock of `kind` (converting the one the
    /// description holds) or, with `None`, releases it; `EWOULDBLOCK` on a
    /// conflict unless `should_wait`, then waiting (`EINTR` on a signal).
    pub(crate) fn flock(
        self: &alloc::sync::Arc<Self>,
        file: &OpenFile,
        kind: Option<LockKind>,
        should_wait: bool,
    ) -> Result<(), Errno> {
        file.observe_release(|| self.clone());
        let key = file_key(file);
        let description = file.id();
        let thread = Machine::current_thread();
        self.run("flock", thread, |state| {
            state.with_file(key, |locks| {
                let held = locks.whole_file.held_by(description);
                let Some(kind) = kind else {
                    let released = locks.whole_file.unlock(description);
                    return Attempt {
                        answer: Some(Ok(())),
                        released,
                    };
                };
                match locks.whole_file.lock(description, kind) {
                    Ok(()) => Attempt {
                        answer: Some(Ok(())),
                        released: held.is_some_and(|held| held != kind),
                    },
                    // A conversion released the old lock before it met
                    // the conflict.
                    Err(_) => Attempt {
                        answer: (!should_wait).then_some(Err(Errno::EWOULDBLOCK)),
                        released: held.is_some(),
                    },
                }
            })
        })
    }

    /// Tries `attempt` under the state lock until it answers, blocking in
    /// between on the release queue; wakes the waiters whenever an
    /// attempt released something.
    fn run<T>(
        &self,
        waiting_on: &'static str,
        thread: u64,
        mut attempt: impl FnMut(&mut State) -> Attempt<T>,
    ) -> Result<T, Errno> {
        let mut try_once = || {
            let mut state = self.state.lock();
            let Attempt { answer, released } = attempt(&mut state);
            let should_wake = released && state.waiters > 0;
            self.locked_files
                .store(state.files.len(), Ordering::Release);
            drop(state);
            if should_wake {
                self.released.wake_all();
            }
            answer
        };
        if let Some(answer) = try_once() {
            return answer;
        }
        // Counted before the next look, so a release after it wakes us.
        self.state.lock().waiters += 1;
        let result = wait_on(&self.released, waiting_on, None, &mut try_once);
        {
            let mut state = self.state.lock();
            state.waiters -= 1;
            state.waits_for.stop(thread);
        }
        match result {
            Ok(Some(answer)) => answer,
            // Only a deadline ends a wait without an answer, and these
            // waits have none; a signal is the only other way out.
            Ok(None) | Err(_) => Err(Errno::EINTR),
        }
    }

    /// Releases the locks `owner` holds on the file `key` names (or on
    /// every file, with `None`), waking waiters if any went.
    fn release(&self, owner: Owner, key: Option<FileKey>) {
        let mut state = self.state.lock();
        let mut released = false;
        state.files.retain(|file, locks| {
            if key.is_none_or(|key| key == *file) {
                released |= locks.records.release_owner(owner);
                if let Owner::Description(description) = owner {
                    released |= locks.whole_file.unlock(description);
                }
            }
            !locks.is_empty()
        });
        self.locked_files
            .store(state.files.len(), Ordering::Release);
        let should_wake = released && state.waiters > 0;
        drop(state);
        if should_wake {
            self.released.wake_all();
        }
    }

    /// Process `pid` closed a descriptor of `file`: its record locks on
    /// the file go, whichever descriptor took them (fcntl(2): "If a
    /// process closes any file descriptor referring to a file, then all
    /// of the process's locks on that file are released").
    pub(crate) fn descriptor_closed(&self, pid: u64, file: &OpenFile) {
        if self.locked_files.load(Ordering::Acquire) == 0 {
            return;
        }
        self.release(Owner::Process(pid), Some(file_key(file)));
    }

    /// Process `pid` ended: its record locks on every file go.
    pub(crate) fn process_ended(&self, pid: u64) {
        if self.locked_files.load(Ordering::Acquire) == 0 {
            return;
        }
        self.release(Owner::Process(pid), None);
    }
}

impl ReleaseObserver for Registry {
    /// The description's open-file-description and `flock` locks go with
    /// it.
    fn released(&self, file: &OpenFile) {
        self.release(Owner::Description(file.id()), Some(file_key(file)));
    }
}
