//! Signals as a file: `signalfd` and `signalfd4` (signalfd(2)).
//!
//! A signal descriptor holds a mask. A read takes signals of the mask
//! pending for the *reading* thread (its own, then its process's), as
//! `rt_sigtimedwait` does, and returns one `struct signalfd_siginfo` per
//! signal, waiting for the first; `poll` and `epoll` see it readable
//! while one is pending. As on Linux, the caller's signals are meant,
//! not its creator's: a descriptor inherited over `fork` reads the
//! child's.
//!
//! No queue needs waking: a signal's sender wakes every thread of the
//! target process (the kernel's `process::interrupt`), so a waiting
//! read or `poll` looks again. The file still has a queue, which
//! `epoll` asks of every file it watches; changing the mask wakes it.

use alloc::sync::{Arc, Weak};

use linux_abi::{
    signal::{SIGKILL, SIGSET_BYTES, SIGSTOP},
    signalfd::*,
};
use vfs::{Errno, Inode, Readiness};

use crate::{
    anonymous,
    machine::{Blocking, Machine},
    signal::current_thread,
    user,
    wait::FileWaitQueue,
    LinuxProcess,
};

/// Signals a descriptor never takes (they cannot be blocked).
const UNTAKEABLE: u64 = 1u64 << (SIGKILL - 1) | 1u64 << (SIGSTOP - 1);

/// How the personality learns the calling thread's process (set by the
/// kernel once).
static CURRENT_PROCESS: spin::Once<fn() -> Option<Arc<LinuxProcess>>> = spin::Once::new();

/// Tells the personality how to find the calling thread's process, whose
/// signals a signal descriptor reads.
pub fn set_current_process(current: fn() -> Option<Arc<LinuxProcess>>) {
    CURRENT_PROCESS.call_once(|| current);
}

/// The device of a signal descriptor's open file.
struct SignalFd {
    /// The signals it takes.
    mask: spin::Mutex<u64>,
    /// The process that made it: whose signals it reads when the kernel
    /// has not said how to find the caller's (the host tests).
    creator: Weak<LinuxProcess>,
    /// Woken when the mask changes.
    changed: FileWaitQueue,
}

impl SignalFd {
    /// The process whose signals a call reads: the caller's.
    fn process(&self) -> Option<Arc<LinuxProcess>> {
        match CURRENT_PROCESS.get() {
            Some(current) => current(),
            None => self.creator.upgrade(),
        }
    }

    /// Takes one signal of the mask pending for the calling thread.
    fn take(&self, process: &LinuxProcess) -> Option<SignalfdSiginfo> {
        let mask = *self.mask.lock();
        let (info, _) = process.signals.lock().take_among(current_thread(), mask)?;
        Some(SignalfdSiginfo {
            info: info.to_siginfo(),
        })
    }
}

impl vfs::Device for SignalFd {
    /// As many `struct signalfd_siginfo` as fit and are pending, waiting
    /// for the first (`EINVAL` for a buffer too short for one).
    fn read(&self, _offset: u64, buf: &mut [u8], nonblocking: bool) -> Result<usize, Errno> {
        if buf.len() < SignalfdSiginfo::BYTES {
            return Err(Errno::EINVAL);
        }
        let process = self.process().ok_or(Errno::EBADF)?;
        let first = loop {
            // Prepared before the look: a signal sent between the look
            // and the block makes the block return at once.
            Machine::prepare_to_wait();
            if let Some(first) = self.take(&process) {
                break first;
            }
            if nonblocking {
                return Err(Errno::EAGAIN);
            }
            if crate::pipe::interrupted() {
                return Err(Errno::EINTR);
            }
            Machine::block_prepared("signalfd read", None);
        };
        buf[..SignalfdSiginfo::BYTES].copy_from_slice(&first.to_bytes());
        let mut done = SignalfdSiginfo::BYTES;
        while buf.len() - done >= SignalfdSiginfo::BYTES {
            let Some(next) = self.take(&process) else {
                break;
            };
            buf[done..done + SignalfdSiginfo::BYTES].copy_from_slice(&next.to_bytes());
            done += SignalfdSiginfo::BYTES;
        }
        Ok(done)
    }

    fn write(&self, _offset: u64, _buf: &[u8], _nonblocking: bool) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }

    /// Readable while a signal of the mask is pending for the caller.
    fn readiness(&self) -> Readiness {
        let mask = *self.mask.lock();
        let readable = self.process().is_some_and(|process| {
            process.signals.lock().pending_for(current_thread()) & mask != 0
        });
        Readiness {
            readable,
            writable: false,
            hung_up: false,
            error: false,
        }
    }

    fn wait_queue(&self) -> Option<&dyn vfs::WaitQueue> {
        Some(&self.changed)
    }

    fn as_any(&self) -> Option<&dyn core::any::Any> {
        Some(self)
    }
}

/// `signalfd(fd, mask, sizemask)`: `signalfd4` without flags.
pub fn signalfd(
    directory: &Arc<dyn Inode>,
    process: &Arc<LinuxProcess>,
    fd: u64,
    mask: u64,
    size: u64,
) -> Result<i64, Errno> {
    signalfd4(directory, process, fd, mask, size, 0)
}

/// `signalfd4(fd, mask, sizemask, flags)`, its checks in Linux's order:
/// the mask's size (`EINVAL`) and the mask (`EFAULT`), the flags
/// (`SFD_CLOEXEC`, `SFD_NONBLOCK`; `EINVAL` for others); then with `fd`
/// -1 a new descriptor, else `fd`'s mask replaced (`EBADF`, `EINVAL` if
/// it is not a signal descriptor) and `fd` returned.
pub fn signalfd4(
    directory: &Arc<dyn Inode>,
    process: &Arc<LinuxProcess>,
    fd: u64,
    mask: u64,
    size: u64,
    flags: u64,
) -> Result<i64, Errno> {
    if size != SIGSET_BYTES {
        return Err(Errno::EINVAL);
    }
    let mask = user::read_u64(mask)? & !UNTAKEABLE;
    let flags = flags as u32 as u64;
    if flags & !(SFD_CLOEXEC | SFD_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    let fd = fd as i32;
    if fd != -1 {
        let file = process.fds.get(i64::from(fd))?;
        let device = file
            .device()
            .and_then(|device| device.as_any())
            .and_then(|device| device.downcast_ref::<SignalFd>())
            .ok_or(Errno::EINVAL)?;
        *device.mask.lock() = mask;
        device.changed.wake_all();
        return Ok(i64::from(fd));
    }
    let device = SignalFd {
        mask: spin::Mutex::new(mask),
        creator: Arc::downgrade(process),
        changed: FileWaitQueue::new(),
    };
    let file = anonymous::anonymous_file(
        directory,
        "signalfd",
        (flags & SFD_NONBLOCK) as u32,
        Arc::new(device),
    )?;
    anonymous::install(process, file, flags & SFD_CLOEXEC != 0)
}
