//! Event counters: `eventfd` and `eventfd2` (eventfd(2)).
//!
//! The file holds a 64-bit counter ([`EventCounter`], the pure rules): a
//! write of 8 bytes adds to it, waiting while the sum would pass
//! `0xffff_ffff_ffff_fffe`; a read of 8 bytes takes the whole counter
//! (or 1, with `EFD_SEMAPHORE`), waiting while it is zero. Readers and
//! writers wait on one queue, which every change wakes, as Linux's
//! single `wqh`.

use alloc::sync::Arc;

use linux_abi::eventfd::*;
use vfs::{Errno, Inode, Readiness};

use crate::{
    anonymous,
    wait::{wait_on, FileWaitQueue},
    LinuxProcess,
};

/// The counter and its rules, apart from any waiting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EventCounter {
    value: u64,
    /// `EFD_SEMAPHORE`: a read takes 1.
    is_semaphore: bool,
}

impl EventCounter {
    /// A counter starting at `value`.
    pub fn new(value: u64, is_semaphore: bool) -> EventCounter {
        EventCounter {
            value,
            is_semaphore,
        }
    }

    /// A read: what it returns, taken from the counter; `None` while the
    /// counter is zero (the read waits, or is `EAGAIN`).
    pub fn take(&mut self) -> Option<u64> {
        if self.value == 0 {
            return None;
        }
        let taken = if self.is_semaphore { 1 } else { self.value };
        self.value -= taken;
        Some(taken)
    }

    /// A write of `amount`: `Ok(true)` once added; `Ok(false)` while the
    /// sum would pass [`EVENTFD_MAX`] (the write waits, or is `EAGAIN`);
    /// `EINVAL` for `u64::MAX`, which no wait could ever let in.
    pub fn add(&mut self, amount: u64) -> Result<bool, Errno> {
        if amount == u64::MAX {
            return Err(Errno::EINVAL);
        }
        if EVENTFD_MAX - self.value < amount {
            return Ok(false);
        }
        self.value += amount;
        Ok(true)
    }

    /// What `poll` reports: readable while above zero, writable while 1
    /// more fits.
    pub fn readiness(&self) -> Readiness {
        Readiness {
            readable: self.value > 0,
            writable: self.value < EVENTFD_MAX,
            hung_up: false,
            error: false,
        }
    }
}

/// The device of an event counter's open file.
struct EventFd {
    counter: spin::Mutex<EventCounter>,
    /// Readers and writers waiting, and `poll`s of the file.
    changed: FileWaitQueue,
}

impl vfs::Device for EventFd {
    /// Reads the counter as 8 bytes (`EINVAL` for a shorter buffer).
    fn read(&self, _offset: u64, buf: &mut [u8], nonblocking: bool) -> Result<usize, Errno> {
        if buf.len() < EVENTFD_VALUE_BYTES {
            return Err(Errno::EINVAL);
        }
        let attempt = || match self.counter.lock().take() {
            Some(value) => Some(Ok(value)),
            None => nonblocking.then_some(Err(Errno::EAGAIN)),
        };
        let value =
            wait_on(&self.changed, "eventfd read", None, attempt)?.unwrap_or(Err(Errno::EAGAIN))?;
        self.changed.wake_all();
        buf[..EVENTFD_VALUE_BYTES].copy_from_slice(&value.to_le_bytes());
        Ok(EVENTFD_VALUE_BYTES)
    }

    /// Adds the 8 bytes written (`EINVAL` for a shorter buffer or
    /// `u64::MAX`).
    fn write(&self, _offset: u64, buf: &[u8], nonblocking: bool) -> Result<usize, Errno> {
        let Some(bytes) = buf.get(..EVENTFD_VALUE_BYTES) else {
            return Err(Errno::EINVAL);
        };
        let mut word = [0u8; EVENTFD_VALUE_BYTES];
        word.copy_from_slice(bytes);
        let amount = u64::from_le_bytes(word);
        let attempt = || match self.counter.lock().add(amount) {
            Ok(true) => Some(Ok(())),
            Ok(false) => nonblocking.then_some(Err(Errno::EAGAIN)),
            Err(error) => Some(Err(error)),
        };
        wait_on(&self.changed, "eventfd write", None, attempt)?.unwrap_or(Err(Errno::EAGAIN))?;
        self.changed.wake_all();
        Ok(EVENTFD_VALUE_BYTES)
    }

    fn readiness(&self) -> Readiness {
        self.counter.lock().readiness()
    }

    fn wait_queue(&self) -> Option<&dyn vfs::WaitQueue> {
        Some(&self.changed)
    }
}

/// `eventfd(initval)`: `eventfd2` without flags.
pub fn eventfd(
    directory: &Arc<dyn Inode>,
    process: &LinuxProcess,
    initial: u64,
) -> Result<i64, Errno> {
    eventfd2(directory, process, initial, 0)
}

/// `eventfd2(initval, flags)`: `EFD_SEMAPHORE`, `EFD_NONBLOCK`,
/// `EFD_CLOEXEC` (`EINVAL` for others). `initval` is an `unsigned int`.
pub fn eventfd2(
    directory: &Arc<dyn Inode>,
    process: &LinuxProcess,
    initial: u64,
    flags: u64,
) -> Result<i64, Errno> {
    let flags = flags as u32 as u64;
    if flags & !(EFD_SEMAPHORE | EFD_CLOEXEC | EFD_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    let device = EventFd {
        counter: spin::Mutex::new(EventCounter::new(
            u64::from(initial as u32),
            flags & EFD_SEMAPHORE != 0,
        )),
        changed: FileWaitQueue::new(),
    };
    let file = anonymous::anonymous_file(
        directory,
        "eventfd",
        (flags & EFD_NONBLOCK) as u32,
        Arc::new(device),
    )?;
    anonymous::install(process, file, flags & EFD_CLOEXEC != 0)
}
