//! Process descriptors (pidfd_open(2), pidfd_getfd(2)): a file that
//! names a process, turns readable when the process ends, and lets its
//! holder take a copy of one of the process's descriptors.
//!
//! Each process has an [`ExitNotice`], made with it; a descriptor holds
//! the notice, not the process, so it outlives the process and still
//! answers `poll`. The process's end announces it (the personality's
//! `process_ended`), which wakes every `poll`, `epoll` and `waitid`
//! blocked on its queue. `pidfd_send_signal` and `waitid(P_PIDFD, ...)`,
//! which act on processes, are the process family's; they find the
//! process a descriptor names through [`crate::Personality::process_descriptor`].

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, Ordering};

use linux_abi::pidfd::PIDFD_NONBLOCK;
use vfs::{Errno, OpenFile, Readiness};

use crate::{anonymous, wait::FileWaitQueue, LinuxProcess, Personality};

/// Whether a process has ended, and who waits to hear it.
#[derive(Default)]
pub struct ExitNotice {
    has_ended: AtomicBool,
    /// `poll`s, `epoll`s and waits of the process's descriptors.
    changed: FileWaitQueue,
}

impl ExitNotice {
    /// The notice of a process that has already ended (a zombie's).
    fn ended() -> ExitNotice {
        ExitNotice {
            has_ended: AtomicBool::new(true),
            changed: FileWaitQueue::new(),
        }
    }

    /// The process ended: its descriptors turn readable, their waiters
    /// wake.
    pub(crate) fn announce(&self) {
        self.has_ended.store(true, Ordering::SeqCst);
        self.changed.wake_all();
    }

    /// Whether the process has ended.
    pub fn has_ended(&self) -> bool {
        self.has_ended.load(Ordering::SeqCst)
    }
}

/// The device of a process descriptor's open file.
struct ProcessDescriptor {
    pid: u64,
    exit: Arc<ExitNotice>,
}

impl vfs::Device for ProcessDescriptor {
    /// A process descriptor has nothing to read (Linux's `pidfd_fops`
    /// have no `read`).
    fn read(&self, _offset: u64, _buf: &mut [u8], _nonblocking: bool) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }

    /// Nor to write.
    fn write(&self, _offset: u64, _buf: &[u8], _nonblocking: bool) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }

    /// Readable once the process has ended (`pidfd_poll`'s `EPOLLIN`).
    fn readiness(&self) -> Readiness {
        Readiness {
            readable: self.exit.has_ended(),
            writable: false,
            hung_up: false,
            error: false,
        }
    }

    fn wait_queue(&self) -> Option<&dyn vfs::WaitQueue> {
        Some(&self.exit.changed)
    }

    fn as_any(&self) -> Option<&dyn core::any::Any> {
        Some(self)
    }
}

/// The process a descriptor names, as the process family needs it.
pub struct DescribedProcess {
    /// Its process id.
    pub pid: u64,
    /// Whether the descriptor is non-blocking (`PIDFD_NONBLOCK`, or
    /// `O_NONBLOCK` set later by `fcntl`): `waitid` on it does not wait.
    pub is_nonblocking: bool,
    /// Its end's notice.
    pub exit: Arc<ExitNotice>,
}

/// The process open file `file` names: `EBADF` for a file that is not a
/// process descriptor (Linux's `pidfd_pid`).
fn described(file: &OpenFile) -> Result<DescribedProcess, Errno> {
    let descriptor = file
        .device()
        .and_then(|device| device.as_any())
        .and_then(|device| device.downcast_ref::<ProcessDescriptor>())
        .ok_or(Errno::EBADF)?;
    Ok(DescribedProcess {
        pid: descriptor.pid,
        is_nonblocking: file.flags() & vfs::flags::O_NONBLOCK != 0,
        exit: descriptor.exit.clone(),
    })
}

/// The process descriptor `fd` of `process`: `EBADF` if `fd` is not
/// open or not a process descriptor.
pub(crate) fn descriptor_of(process: &LinuxProcess, fd: u64) -> Result<DescribedProcess, Errno> {
    described(&*process.fds.get(i64::from(fd as i32))?)
}

/// `pidfd_open(pid, flags)`: a close-on-exec descriptor for process
/// `pid`, non-blocking with `PIDFD_NONBLOCK` (`EINVAL` for other flags
/// and for a `pid` not above 0; `ESRCH` if no such process, a zombie
/// not yet waited for being one).
pub fn pidfd_open(
    personality: &Personality,
    process: &LinuxProcess,
    pid: u64,
    flags: u64,
) -> Result<i64, Errno> {
    if flags & !PIDFD_NONBLOCK != 0 {
        return Err(Errno::EINVAL);
    }
    let pid = pid as i32;
    if pid <= 0 {
        return Err(Errno::EINVAL);
    }
    let pid = pid as u64;
    let exit = match personality.files(pid) {
        Some(target) => target.exit.clone(),
        // Ended, its personality state gone, but not yet waited for.
        None if personality.system.process(pid).is_some() => Arc::new(ExitNotice::ended()),
        None => return Err(Errno::ESRCH),
    };
    let file = anonymous::anonymous_file(
        &personality.pipes,
        "pidfd",
        (flags & PIDFD_NONBLOCK) as u32,
        Arc::new(ProcessDescriptor { pid, exit }),
    )?;
    anonymous::install(process, file, true)
}

/// `pidfd_getfd(pidfd, targetfd, flags)`: a close-on-exec copy in the
/// caller of descriptor `targetfd` of the process `pidfd` names, in
/// Linux's order of checks: `EINVAL` for any flag, `EBADF` for a
/// `pidfd` that is not a process descriptor, `ESRCH` for a process
/// waited for, `EPERM` unless the caller may trace it
/// ([`crate::credentials::Credentials::may_trace`]), `EBADF` for a
/// `targetfd` it has not open (as for a zombie, whose descriptors are
/// closed).
pub fn pidfd_getfd(
    personality: &Personality,
    process: &LinuxProcess,
    pidfd: u64,
    target_fd: u64,
    flags: u64,
) -> Result<i64, Errno> {
    if flags as u32 != 0 {
        return Err(Errno::EINVAL);
    }
    let described = descriptor_of(process, pidfd)?;
    let Some(target) = personality.files(described.pid) else {
        return Err(if personality.system.process(described.pid).is_some() {
            Errno::EBADF
        } else {
            Errno::ESRCH
        });
    };
    if target.pid != process.pid && !process.credentials().may_trace(&target.credentials()) {
        return Err(Errno::EPERM);
    }
    let file = target.fds.get_raw(i64::from(target_fd as i32))?;
    anonymous::install(process, file, true)
}
