//! A process's file descriptors: numbers naming capabilities.
//!
//! The open files themselves are held in the process's capability table,
//! `domain`'s typed [`HandleTable`] (the same implementation extensions'
//! handles use): a descriptor is a small number mapped to a handle, with
//! the descriptor's own flag (`FD_CLOEXEC`). Linux wants the lowest free
//! number for a new descriptor, which the handle table's slot reuse does
//! not promise, hence the map in front of it. The map also keeps a
//! reference to each open file, so that `read` and `write` find theirs
//! with one lock and no type check; the capability table stays the
//! record of what the process holds (descriptors are never revoked, so
//! the two cannot disagree).

use alloc::{sync::Arc, vec::Vec};

use dispatch::Principal;
use domain::{Handle, HandleTable, Rights};
use vfs::{Errno, OpenFile};

/// A descriptor argument as Linux reads it: an `int`, the low 32 bits of
/// the register (glibc leaves the upper half zero, so -1 arrives as
/// 0xffff_ffff); `EBADF` if negative.
fn descriptor(register: i64) -> Result<i32, Errno> {
    let fd = register as i32;
    if fd < 0 {
        return Err(Errno::EBADF);
    }
    Ok(fd)
}

/// Most descriptors a process may hold (`RLIMIT_NOFILE`'s usual soft
/// limit).
pub const MAX_DESCRIPTORS: i32 = 1024;

#[derive(Clone)]
struct Descriptor {
    handle: Handle,
    close_on_exec: bool,
    /// The open file the handle names.
    file: Arc<OpenFile>,
}

/// Descriptors by number: slot `fd` holds descriptor `fd` (a vector,
/// not a tree: every `read` and `write` looks one up, and programs keep
/// their numbers low, as Linux's lowest-free rule makes them).
#[derive(Clone, Default)]
struct Slots(Vec<Option<Descriptor>>);

impl Slots {
    fn get(&self, fd: i32) -> Option<&Descriptor> {
        self.0.get(usize::try_from(fd).ok()?)?.as_ref()
    }

    fn get_mut(&mut self, fd: i32) -> Option<&mut Descriptor> {
        self.0.get_mut(usize::try_from(fd).ok()?)?.as_mut()
    }

    /// Puts `descriptor` at `fd` (below [`MAX_DESCRIPTORS`]); returns
    /// what was there.
    fn insert(&mut self, fd: i32, descriptor: Descriptor) -> Option<Descriptor> {
        let index = usize::try_from(fd).ok()?;
        if self.0.len() <= index {
            self.0.resize_with(index + 1, || None);
        }
        self.0[index].replace(descriptor)
    }

    fn remove(&mut self, fd: i32) -> Option<Descriptor> {
        let removed = self.0.get_mut(usize::try_from(fd).ok()?)?.take();
        while self.0.last().is_some_and(Option::is_none) {
            self.0.pop();
        }
        removed
    }

    /// The lowest number at or above `lowest` with no descriptor.
    fn lowest_free(&self, lowest: i32) -> i32 {
        let start = usize::try_from(lowest).unwrap_or(0);
        let free = (start..self.0.len()).find(|&index| self.0[index].is_none());
        free.unwrap_or(self.0.len().max(start)) as i32
    }

    /// The descriptors, lowest first.
    fn iter(&self) -> impl Iterator<Item = (i32, &Descriptor)> {
        self.0
            .iter()
            .enumerate()
            .filter_map(|(fd, slot)| slot.as_ref().map(|descriptor| (fd as i32, descriptor)))
    }
}

/// A process's descriptor table.
pub struct FdTable {
    capabilities: HandleTable,
    descriptors: spin::Mutex<Slots>,
}

impl FdTable {
    /// An empty table owned by `owner` (the process's principal).
    pub fn new(owner: Principal) -> FdTable {
        FdTable {
            capabilities: HandleTable::with_limit(owner, MAX_DESCRIPTORS as usize),
            descriptors: spin::Mutex::new(Slots::default()),
        }
    }

    /// The open file behind `fd` for a call that uses the file (Linux's
    /// `fdget`): `EBADF` if there is none or it only names a file
    /// (`O_PATH`).
    pub fn get(&self, fd: i64) -> Result<Arc<OpenFile>, Errno> {
        let file = self.get_raw(fd)?;
        if file.is_path_only() {
            return Err(Errno::EBADF);
        }
        Ok(file)
    }

    /// The open file behind `fd`, even one that only names a file
    /// (`O_PATH`), for the calls Linux lets such a descriptor make
    /// (`fdget_raw`: `fstat`, `fchdir`, a `*at` call's directory, `dup`,
    /// some of `fcntl`, `fstatfs`): `EBADF` if there is none.
    pub fn get_raw(&self, fd: i64) -> Result<Arc<OpenFile>, Errno> {
        let fd = descriptor(fd)?;
        self.descriptors
            .lock()
            .get(fd)
            .map(|descriptor| descriptor.file.clone())
            .ok_or(Errno::EBADF)
    }

    /// Installs `file` at the lowest free descriptor at or above `lowest`.
    pub fn install(
        &self,
        file: Arc<OpenFile>,
        lowest: i32,
        close_on_exec: bool,
    ) -> Result<i32, Errno> {
        let mut descriptors = self.descriptors.lock();
        let fd = descriptors.lowest_free(lowest.max(0));
        if fd >= MAX_DESCRIPTORS {
            return Err(Errno::EMFILE);
        }
        let handle = self
            .capabilities
            .insert(file.clone(), Rights::ALL)
            .map_err(|_| Errno::EMFILE)?;
        descriptors.insert(
            fd,
            Descriptor {
                handle,
                close_on_exec,
                file,
            },
        );
        Ok(fd)
    }

    /// Installs `file` at exactly `fd`, closing what was there (`dup2`).
    pub fn install_at(
        &self,
        file: Arc<OpenFile>,
        fd: i64,
        close_on_exec: bool,
    ) -> Result<i32, Errno> {
        self.replace_at(file, fd, close_on_exec).map(|(fd, _)| fd)
    }

    /// [`FdTable::install_at`], answering also the open file closed
    /// there, if any (whose closing has more to release).
    pub fn replace_at(
        &self,
        file: Arc<OpenFile>,
        fd: i64,
        close_on_exec: bool,
    ) -> Result<(i32, Option<Arc<OpenFile>>), Errno> {
        let fd = descriptor(fd)?;
        if fd >= MAX_DESCRIPTORS {
            return Err(Errno::EBADF);
        }
        let handle = self
            .capabilities
            .insert(file.clone(), Rights::ALL)
            .map_err(|_| Errno::EMFILE)?;
        let old = self.descriptors.lock().insert(
            fd,
            Descriptor {
                handle,
                close_on_exec,
                file,
            },
        );
        let replaced = old.map(|old| {
            let _ = self.capabilities.close(old.handle);
            old.file
        });
        Ok((fd, replaced))
    }

    /// Closes `fd`: the open file it named (`EBADF` if it is not open).
    pub fn close(&self, fd: i64) -> Result<Arc<OpenFile>, Errno> {
        let fd = descriptor(fd)?;
        let descriptor = self.descriptors.lock().remove(fd).ok_or(Errno::EBADF)?;
        // The open file is dropped outside our lock.
        self.capabilities
            .close(descriptor.handle)
            .map_err(|_| Errno::EBADF)?;
        Ok(descriptor.file)
    }

    /// The descriptor's `FD_CLOEXEC`.
    pub fn close_on_exec(&self, fd: i64) -> Result<bool, Errno> {
        let fd = descriptor(fd)?;
        self.descriptors
            .lock()
            .get(fd)
            .map(|descriptor| descriptor.close_on_exec)
            .ok_or(Errno::EBADF)
    }

    /// Sets the descriptor's `FD_CLOEXEC`.
    pub fn set_close_on_exec(&self, fd: i64, value: bool) -> Result<(), Errno> {
        let fd = descriptor(fd)?;
        let mut descriptors = self.descriptors.lock();
        let descriptor = descriptors.get_mut(fd).ok_or(Errno::EBADF)?;
        descriptor.close_on_exec = value;
        Ok(())
    }

    /// A copy for a child (`fork`): the same open files (shared offsets),
    /// each a duplicate of the parent's capability in the child's table.
    pub fn fork(&self, child: Principal) -> FdTable {
        let table = FdTable::new(child);
        let descriptors = self.descriptors.lock().clone();
        let mut copied = Slots::default();
        for (fd, descriptor) in descriptors.iter() {
            let descriptor = descriptor.clone();
            if let Ok(handle) = self.capabilities.duplicate_into(
                descriptor.handle,
                &table.capabilities,
                Rights::ALL,
            ) {
                copied.insert(
                    fd,
                    Descriptor {
                        handle,
                        close_on_exec: descriptor.close_on_exec,
                        file: descriptor.file,
                    },
                );
            }
        }
        *table.descriptors.lock() = copied;
        table
    }

    /// Open descriptors, lowest first.
    pub fn descriptors(&self) -> alloc::vec::Vec<i32> {
        self.descriptors.lock().iter().map(|(fd, _)| fd).collect()
    }

    /// Closes every descriptor (the process ended).
    pub fn clear(&self) {
        // The open files are dropped outside our lock.
        let descriptors = core::mem::take(&mut *self.descriptors.lock());
        drop(descriptors);
        self.capabilities.clear();
    }
}
