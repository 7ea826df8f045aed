//! Open file descriptions (Linux's `struct file`): what `open` returns and
//! descriptors point to, shared by `dup` and `fork`. It holds the inode,
//! the access mode, the status flags and the file offset.

use alloc::{sync::Arc, vec::Vec};
use core::sync::atomic::{AtomicU32, Ordering};

use spin::Mutex;

use crate::{
    device::{Device, Readiness, WaitQueue},
    dirent::encode_dirent64,
    flags::{
        O_ACCMODE, O_APPEND, O_NONBLOCK, O_PATH, O_RDONLY, O_RDWR, O_WRONLY, SEEK_CUR, SEEK_DATA,
        SEEK_END, SEEK_HOLE, SEEK_SET, SETTABLE_STATUS_FLAGS,
    },
    inode::{Allocation, Inode},
    metadata::{FileType, Metadata},
    Errno,
};

/// Told when an open file description goes away (its last descriptor
/// closed, its last mapping gone): Linux's `locks_remove_file` in
/// `__fput`, as an extension point of the file layer.
pub trait ReleaseObserver: Send + Sync {
    /// `file` is going away; its [`OpenFile::id`] may name another
    /// description after this returns.
    fn released(&self, file: &OpenFile);
}

/// An open file description.
pub struct OpenFile {
    inode: Arc<dyn Inode>,
    /// The driver, for a character device node.
    device: Option<Arc<dyn Device>>,
    /// `O_RDONLY`, `O_WRONLY` or `O_RDWR`, fixed at open.
    access: u32,
    /// Status flags (`O_APPEND`, `O_NONBLOCK`, ...), which `fcntl` changes.
    status: AtomicU32,
    /// The offset; for a directory the position in its listing. Held
    /// across a regular file's read or write so that the descriptions'
    /// users see whole operations (Linux's `f_pos_lock`).
    offset: Mutex<u64>,
    /// The directory the file was opened in and its name there, for files
    /// opened by name (what `/proc/PID/fd` links say; Linux keeps the
    /// dentry). A directory needs none: its own ".." leads to its path.
    opened_as: Option<(Arc<dyn Inode>, Vec<u8>)>,
    /// Who must hear of the description's end, once something it owns
    /// needs releasing then (set at most once: one observer, the lock
    /// registry, owns everything a description can hold).
    release_observer: spin::Once<Arc<dyn ReleaseObserver>>,
}

impl Drop for OpenFile {
    fn drop(&mut self) {
        if let Some(observer) = self.release_observer.get() {
            observer.released(self);
        }
    }
}

impl OpenFile {
    /// A description of `inode` opened with `flags` (access mode and status
    /// flags; creation flags are ignored), reading and writing through
    /// `device` for a device node. [`Vfs::open`](crate::Vfs::open) is the
    /// usual way to get one; this is for files without a name (pipes,
    /// consoles the kernel opens itself).
    pub fn new(inode: Arc<dyn Inode>, flags: u32, device: Option<Arc<dyn Device>>) -> OpenFile {
        OpenFile {
            inode,
            device,
            access: flags & O_ACCMODE,
            status: AtomicU32::new(flags & !O_ACCMODE),
            offset: Mutex::new(0),
            opened_as: None,
            release_observer: spin::Once::new(),
        }
    }

    /// A number naming this description among the live ones (its
    /// address): what owns a lock that belongs to the description rather
    /// than to a process.
    pub fn id(&self) -> usize {
        self as *const OpenFile as usize
    }

    /// Makes `observer` (made by `make` the first time only) hear of the
    /// description's end; later calls keep the first observer.
    pub fn observe_release(&self, make: impl FnOnce() -> Arc<dyn ReleaseObserver>) {
        self.release_observer.call_once(make);
    }

    /// The file offset (Linux's `f_pos`), whatever the file: 0 for one
    /// whose offset never moves (a pipe, a device). What a lock's
    /// `SEEK_CUR` counts from.
    pub fn offset(&self) -> u64 {
        *self.offset.lock()
    }

    /// The description, remembering that it was opened as `name` in
    /// `directory` (see [`OpenFile::opened_as`]).
    pub fn with_name(mut self, directory: Arc<dyn Inode>, name: Vec<u8>) -> OpenFile {
        self.opened_as = Some((directory, name));
        self
    }

    /// The directory the file was opened in and its name there, if it was
    /// opened by a name (not for pipes, nor for a path ending in "/", "."
    /// or ".."). The name may have been renamed or removed since.
    pub fn opened_as(&self) -> Option<(&Arc<dyn Inode>, &[u8])> {
        self.opened_as
            .as_ref()
            .map(|(directory, name)| (directory, name.as_slice()))
    }

    /// The driver, for a device (or socket) file.
    pub fn device(&self) -> Option<&Arc<dyn Device>> {
        self.device.as_ref()
    }

    /// The inode.
    pub fn inode(&self) -> &Arc<dyn Inode> {
        &self.inode
    }

    /// The inode's metadata (`fstat`).
    pub fn metadata(&self) -> Metadata {
        self.inode.metadata()
    }

    /// Access mode and status flags, as `fcntl(F_GETFL)` reports them.
    pub fn flags(&self) -> u32 {
        self.access | self.status.load(Ordering::Relaxed)
    }

    /// `fcntl(F_SETFL)`: changes the settable status flags (`O_APPEND`,
    /// `O_NONBLOCK`, ...) and ignores the rest, as Linux does.
    pub fn set_status_flags(&self, flags: u32) {
        let _ = self
            .status
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                Some((old & !SETTABLE_STATUS_FLAGS) | (flags & SETTABLE_STATUS_FLAGS))
            });
    }

    /// Whether the description only names its file (`O_PATH`): it can
    /// be neither read nor written, and most calls on it give `EBADF`.
    pub fn is_path_only(&self) -> bool {
        self.status.load(Ordering::Relaxed) & O_PATH != 0
    }

    /// Whether the description was opened for reading.
    pub fn is_readable(&self) -> bool {
        (self.access == O_RDONLY || self.access == O_RDWR) && !self.is_path_only()
    }

    /// Whether the description was opened for writing.
    pub fn is_writable(&self) -> bool {
        self.access == O_WRONLY || self.access == O_RDWR
    }

    fn is_nonblocking(&self) -> bool {
        self.status.load(Ordering::Relaxed) & O_NONBLOCK != 0
    }

    fn is_append(&self) -> bool {
        self.status.load(Ordering::Relaxed) & O_APPEND != 0
    }

    /// Whether the offset means anything (`ESPIPE` otherwise): not for
    /// FIFOs, sockets and stream devices.
    fn is_seekable(&self) -> bool {
        // A device decides (asked first: one call where the file type
        // would cost two on the path of every read and write).
        if let Some(device) = &self.device {
            return device.is_seekable();
        }
        !matches!(
            self.inode.file_type(),
            FileType::Fifo | FileType::Socket | FileType::CharDevice
        )
    }

    /// Reads at `offset` without touching the description's offset.
    fn read_from(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        if !self.is_readable() {
            return Err(Errno::EBADF);
        }
        match &self.device {
            Some(device) => device.read(offset, buf, self.is_nonblocking()),
            None => {
                crate::mapped::before_access(&*self.inode);
                self.inode.read_at(offset, buf)
            }
        }
    }

    fn write_to(&self, offset: u64, buf: &[u8]) -> Result<usize, Errno> {
        if !self.is_writable() {
            return Err(Errno::EBADF);
        }
        match &self.device {
            Some(device) => device.write(offset, buf, self.is_nonblocking()),
            None => {
                crate::mapped::before_access(&*self.inode);
                let count = self.inode.write_at(offset, buf)?;
                crate::mapped::after_write(&*self.inode, offset, count);
                Ok(count)
            }
        }
    }

    /// `read`: from the offset, advancing it (a device's reads ignore the
    /// offset).
    pub fn read(&self, buf: &mut [u8]) -> Result<usize, Errno> {
        if !self.is_readable() {
            return Err(Errno::EBADF);
        }
        if let Some(device) = &self.device {
            // A device (a terminal, a memory device, a socket): no offset
            // to keep and no lock held (a terminal read may wait). Linux
            // takes no position lock for devices either, and its memory
            // devices do not move the offset.
            return device.read(0, buf, self.is_nonblocking());
        }
        if !self.is_seekable() {
            // A stream (a pipe's FIFO): no offset, no lock held.
            return self.read_from(0, buf);
        }
        let mut offset = self.offset.lock();
        let count = self.read_from(*offset, buf)?;
        *offset += count as u64;
        Ok(count)
    }

    /// `write`: at the offset (at the end with `O_APPEND`), advancing it
    /// (a device's writes ignore the offset).
    pub fn write(&self, buf: &[u8]) -> Result<usize, Errno> {
        if !self.is_writable() {
            return Err(Errno::EBADF);
        }
        if let Some(device) = &self.device {
            // As in `read`: no offset, no lock.
            return device.write(0, buf, self.is_nonblocking());
        }
        if !self.is_seekable() {
            return self.write_to(0, buf);
        }
        let mut offset = self.offset.lock();
        if self.is_append() {
            crate::mapped::before_access(&*self.inode);
            let (count, end) = self.inode.append(buf)?;
            crate::mapped::after_write(&*self.inode, end - count as u64, count);
            *offset = end;
            return Ok(count);
        }
        let count = self.write_to(*offset, buf)?;
        *offset += count as u64;
        Ok(count)
    }

    fn positional_offset(&self, offset: i64) -> Result<u64, Errno> {
        if !self.is_seekable() {
            return Err(Errno::ESPIPE);
        }
        u64::try_from(offset).map_err(|_| Errno::EINVAL)
    }

    /// `pread`: at `offset`, leaving the description's offset alone
    /// (`EINVAL` if negative, `ESPIPE` on a stream).
    pub fn pread(&self, buf: &mut [u8], offset: i64) -> Result<usize, Errno> {
        if !self.is_readable() {
            return Err(Errno::EBADF);
        }
        let offset = self.positional_offset(offset)?;
        self.read_from(offset, buf)
    }

    /// `pwrite`: at `offset` — or, as Linux does with `O_APPEND`, at the
    /// end whatever `offset` says.
    pub fn pwrite(&self, buf: &[u8], offset: i64) -> Result<usize, Errno> {
        if !self.is_writable() {
            return Err(Errno::EBADF);
        }
        let offset = self.positional_offset(offset)?;
        if self.is_append() && self.device.is_none() {
            return self.inode.append(buf).map(|(count, _)| count);
        }
        self.write_to(offset, buf)
    }

    /// `lseek`: the new offset. `EINVAL` for a bad `whence` or a result
    /// below 0, `ESPIPE` on a stream, `ENXIO` for `SEEK_DATA`/`SEEK_HOLE`
    /// at or past the end (files here have no holes but the one at the
    /// end). A directory takes only `SEEK_SET` and `SEEK_CUR`, to
    /// positions [`OpenFile::getdents64`] gave.
    pub fn seek(&self, offset: i64, whence: u32) -> Result<u64, Errno> {
        if !self.is_seekable() {
            return Err(Errno::ESPIPE);
        }
        let mut current = self.offset.lock();
        let is_directory = self.inode.file_type() == FileType::Directory;
        let size = || i64::try_from(self.inode.metadata().size).unwrap_or(i64::MAX);
        let position = i64::try_from(*current).unwrap_or(i64::MAX);
        let new = match whence {
            SEEK_SET => Some(offset),
            SEEK_CUR => position.checked_add(offset),
            SEEK_END if !is_directory => size().checked_add(offset),
            SEEK_DATA | SEEK_HOLE if !is_directory => {
                let size = size();
                if offset < 0 || offset >= size {
                    return Err(Errno::ENXIO);
                }
                Some(if whence == SEEK_DATA { offset } else { size })
            }
            _ => return Err(Errno::EINVAL),
        };
        let new = new
            .and_then(|new| u64::try_from(new).ok())
            .ok_or(Errno::EINVAL)?;
        *current = new;
        Ok(new)
    }

    /// `ftruncate`: `EINVAL` unless open for writing and a regular file.
    pub fn truncate(&self, length: i64) -> Result<(), Errno> {
        let length = u64::try_from(length).map_err(|_| Errno::EINVAL)?;
        if !self.is_writable() {
            return Err(Errno::EINVAL);
        }
        match self.inode.file_type() {
            FileType::Regular => self.inode.truncate(length),
            FileType::Directory => Err(Errno::EISDIR),
            _ => Err(Errno::EINVAL),
        }
    }

    /// `fallocate` on the description's file, after the checks of
    /// Linux's `vfs_fallocate` that concern the file: `EBADF` unless open
    /// for writing, `ESPIPE` for a FIFO, `EISDIR` for a directory,
    /// `ENODEV` for anything else but a regular file, `EFBIG` for a range
    /// ending past `i64`. Mapped pages over a punched hole see its zeros.
    pub fn allocate(&self, how: Allocation, offset: u64, length: u64) -> Result<(), Errno> {
        if !self.is_writable() {
            return Err(Errno::EBADF);
        }
        match self.inode.file_type() {
            FileType::Regular => {}
            FileType::Fifo => return Err(Errno::ESPIPE),
            FileType::Directory => return Err(Errno::EISDIR),
            _ => return Err(Errno::ENODEV),
        }
        let end = offset.checked_add(length).ok_or(Errno::EFBIG)?;
        if end > i64::MAX as u64 {
            return Err(Errno::EFBIG);
        }
        crate::mapped::before_access(&*self.inode);
        self.inode.allocate(how, offset, length)?;
        if how == Allocation::PunchHole {
            let size = self.inode.metadata().size;
            if offset < size {
                let punched = (end.min(size) - offset) as usize;
                crate::mapped::after_write(&*self.inode, offset, punched);
            }
        }
        Ok(())
    }

    /// `getdents64`: fills `buf` with `struct linux_dirent64` records from
    /// the directory's offset on and moves the offset past them; 0 at the
    /// end. `EINVAL` if the next record does not fit, `ENOTDIR` for a
    /// non-directory.
    pub fn getdents64(&self, buf: &mut [u8]) -> Result<usize, Errno> {
        if self.inode.file_type() != FileType::Directory {
            return Err(Errno::ENOTDIR);
        }
        let mut offset = self.offset.lock();
        let mut filled = 0;
        let mut resume = *offset;
        let mut too_small = false;
        self.inode.readdir(*offset, &mut |entry, next| {
            let next_signed = i64::try_from(next).unwrap_or(i64::MAX);
            match encode_dirent64(
                &mut buf[filled..],
                entry.ino,
                next_signed,
                entry.file_type.dirent_type(),
                entry.name,
            ) {
                Some(length) => {
                    filled += length;
                    resume = next;
                    true
                }
                None => {
                    too_small = filled == 0;
                    false
                }
            }
        })?;
        if too_small {
            return Err(Errno::EINVAL);
        }
        *offset = resume;
        Ok(filled)
    }

    /// `ioctl`: the device's answer; `ENOTTY` for anything but a device.
    pub fn ioctl(&self, request: u32, argument: u64) -> Result<i64, Errno> {
        match &self.device {
            Some(device) => device.ioctl(request, argument),
            None => Err(Errno::ENOTTY),
        }
    }

    /// Where a thread waits for [`OpenFile::readiness`] to change: the
    /// device's queue; `None` for regular files and directories (always
    /// ready) and devices that never block.
    pub fn wait_queue(&self) -> Option<&dyn WaitQueue> {
        self.device.as_ref().and_then(|device| device.wait_queue())
    }

    /// The uptime (ns) at which the device turns ready by itself (a
    /// timer's expiry; [`crate::Device::ready_at`]); `None` for anything
    /// else.
    pub fn ready_at(&self) -> Option<u64> {
        self.device.as_ref().and_then(|device| device.ready_at())
    }

    /// What `poll` would report: regular files and directories are always
    /// ready, devices say for themselves.
    pub fn readiness(&self) -> Readiness {
        match &self.device {
            Some(device) => device.readiness(),
            None => Readiness {
                readable: true,
                writable: true,
                hung_up: false,
                error: false,
            },
        }
    }
}
