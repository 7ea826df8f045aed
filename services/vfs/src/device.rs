//! Character devices: the [`Device`] driver interface behind a device node
//! and the [`DeviceRegistry`] that maps device numbers to drivers.
//!
//! As in Linux, a device node is just an inode carrying a number (`rdev`);
//! opening it finds the driver by that number, so `mknod` from user space
//! and nodes from the initramfs work the same way.

use alloc::{collections::BTreeMap, sync::Arc};

use spin::RwLock;

use crate::Errno;

/// What a device can do without blocking (the `poll` bits that matter
/// here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Readiness {
    /// A read would not block (`POLLIN`).
    pub readable: bool,
    /// A write would not block (`POLLOUT`).
    pub writable: bool,
    /// The other end is gone (`POLLHUP`).
    pub hung_up: bool,
    /// An error is pending (`POLLERR`): a pipe's write end whose last
    /// reader is gone.
    pub error: bool,
}

/// Where a thread waits for a device to become ready: `poll` and
/// `select` register the calling thread on the queue of every device
/// they watch, block, and unregister when woken. The device wakes its
/// registered threads whenever its [`Readiness`] may have changed (the
/// scheduler's wait queue is behind it; the file layer only names the
/// threads, by the scheduler's thread id).
pub trait WaitQueue: Send + Sync {
    /// Registers thread `thread`: it is woken at each change until it
    /// unregisters.
    fn register(&self, thread: u64);
    /// Takes thread `thread` off the queue.
    fn unregister(&self, thread: u64);
    /// How many times the queue has been woken since it was made: an
    /// edge-triggered `epoll` reports a ready file again only after a
    /// wake-up, as Linux reports one per wake-up callback.
    fn wake_count(&self) -> u64;
}

/// A character device driver (the kernel implements the console/tty; the
/// memory devices are in [`crate::devices`]).
pub trait Device: Send + Sync {
    /// Reads into `buf` at `offset` (ignored by stream devices);
    /// `nonblocking` asks for `EAGAIN` instead of waiting.
    fn read(&self, offset: u64, buf: &mut [u8], nonblocking: bool) -> Result<usize, Errno>;
    /// Writes `buf` at `offset` (ignored by stream devices).
    fn write(&self, offset: u64, buf: &[u8], nonblocking: bool) -> Result<usize, Errno>;
    /// Whether reads or writes would block now.
    fn readiness(&self) -> Readiness {
        Readiness {
            readable: true,
            writable: true,
            hung_up: false,
            error: false,
        }
    }
    /// The queue on which a thread waits for `readiness` to change;
    /// `None` for a device that never blocks (always ready), which a
    /// waiting `poll` then need not watch.
    fn wait_queue(&self) -> Option<&dyn WaitQueue> {
        None
    }
    /// The uptime (ns) at which the device turns ready by itself, with
    /// nobody waking its queue (a timer's expiry): a waiting `poll`
    /// blocks no longer than that. `None` for devices that only turn
    /// ready when something wakes their queue.
    fn ready_at(&self) -> Option<u64> {
        None
    }
    /// A device-specific request. `argument` is passed through untouched
    /// (often a user pointer that the driver copies through the kernel);
    /// the result is the system call's return value. Devices without
    /// requests answer `ENOTTY`, as Linux does.
    fn ioctl(&self, _request: u32, _argument: u64) -> Result<i64, Errno> {
        Err(Errno::ENOTTY)
    }
    /// Whether `lseek` moves the file offset (memory devices) or fails with
    /// `ESPIPE` (terminals, like pipes).
    fn is_seekable(&self) -> bool {
        false
    }
    /// The driver as `Any`, for one that its owner must recognise behind
    /// an open file (a socket: the personality's socket calls find it
    /// so); `None` for the others.
    fn as_any(&self) -> Option<&dyn core::any::Any> {
        None
    }
}

/// What opens named pipes: the VFS keeps only the FIFO inode (`mknod`,
/// `mkfifo`); the pipe behind it is its opener's, registered by the
/// layer that has pipes (the Linux personality) with
/// [`crate::Vfs::set_fifo_opener`].
pub trait FifoOpener: Send + Sync {
    /// Opens FIFO `inode` with open flags `flags` (the access mode and
    /// `O_NONBLOCK` matter): the device that reads or writes its pipe.
    /// It may wait for the other side to open (`fifo(7)`); the caller
    /// has checked permissions.
    fn open_fifo(
        &self,
        inode: &Arc<dyn crate::Inode>,
        flags: u32,
    ) -> Result<Arc<dyn Device>, Errno>;
}

/// The character device drivers by device number ([`crate::makedev`]).
#[derive(Default)]
pub struct DeviceRegistry {
    drivers: RwLock<BTreeMap<u64, Arc<dyn Device>>>,
}

impl DeviceRegistry {
    /// An empty registry.
    pub fn new() -> DeviceRegistry {
        DeviceRegistry::default()
    }

    /// Installs `driver` for device number `rdev`, replacing any other.
    pub fn register(&self, rdev: u64, driver: Arc<dyn Device>) {
        self.drivers.write().insert(rdev, driver);
    }

    /// The driver for `rdev`, or `ENXIO` (Linux's answer to opening a node
    /// whose driver is missing).
    pub fn get(&self, rdev: u64) -> Result<Arc<dyn Device>, Errno> {
        self.drivers.read().get(&rdev).cloned().ok_or(Errno::ENXIO)
    }
}
