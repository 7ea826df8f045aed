//! `epoll`: `epoll_create`, `epoll_create1`, `epoll_ctl`, `epoll_wait`,
//! `epoll_pwait` and `epoll_pwait2` (epoll(7)).
//!
//! An instance is an open file whose device, [`Epoll`], keeps the
//! interest list (`interest_list`: the `epoll_ctl` rules and which
//! entries a wait reports). It holds its watched files weakly: as on
//! Linux, an entry goes when the last descriptor of its file is closed,
//! and watching a pipe's end does not keep the pipe open.
//!
//! A wait blocks without polling: the instance's wait queue stands for
//! the queues of every file it watches, so registering on it registers
//! on each of theirs (and on files added while the thread waits), and
//! any of them waking wakes the waiter, which looks again. The same
//! queue lets `poll`, `select` and another instance watch an instance.

use alloc::{
    sync::{Arc, Weak},
    vec::Vec,
};

use linux_abi::{epoll::*, signal::SIGSET_BYTES, time::Timespec};
use vfs::{Errno, Inode, OpenFile, Readiness};

use crate::{
    anonymous,
    interest_list::{check_exclusive, InterestList, Observation},
    machine::{Clock, Machine},
    poll::{earliest, with_mask},
    user,
    wait::{wait_on_any, FileWaitQueue},
    LinuxProcess,
};

/// How deep instances may watch instances (Linux's `EP_MAX_NESTS`).
const MAX_NESTING: usize = 4;
/// Most events one wait may ask for (Linux's `EP_MAX_EVENTS`: what
/// fits in `INT_MAX` bytes).
const MAX_EVENTS: u64 = i32::MAX as u64 / EpollEvent::BYTES as u64;

/// An `epoll` instance: the device of its open file.
pub(crate) struct Epoll {
    /// What it watches.
    interests: spin::Mutex<InterestList<Weak<OpenFile>>>,
    /// Woken when the interest list changes, so that a waiter looks at
    /// an entry added or re-armed meanwhile.
    changed: FileWaitQueue,
    /// The threads registered on the instance's queue, each with the
    /// files whose queues it was registered on for it. Taken before
    /// `interests` whenever both are.
    registrations: spin::Mutex<Vec<(u64, Vec<Arc<OpenFile>>)>>,
}

impl Epoll {
    fn new() -> Epoll {
        Epoll {
            interests: spin::Mutex::new(InterestList::default()),
            changed: FileWaitQueue::new(),
            registrations: spin::Mutex::new(Vec::new()),
        }
    }

    /// The watched files still open.
    fn files(&self) -> Vec<Arc<OpenFile>> {
        self.interests
            .lock()
            .files()
            .filter_map(Weak::upgrade)
            .collect()
    }

    /// Every thread registered on the instance is registered on `file`'s
    /// queue too (it was just added).
    fn register_waiters_on(&self, file: &Arc<OpenFile>) {
        let Some(queue) = file.wait_queue() else {
            return;
        };
        for (thread, files) in self.registrations.lock().iter_mut() {
            queue.register(*thread);
            files.push(file.clone());
        }
    }

    /// The reports a wait would give now (at most `max`), consumed.
    fn collect(&self, max: usize) -> Vec<EpollEvent> {
        self.interests.lock().collect(max, observe)
    }

    /// The earliest uptime at which a watched file turns ready by itself
    /// (asked before every block: no list is made for it).
    fn ready_at(&self) -> Option<u64> {
        self.interests
            .lock()
            .files()
            .filter_map(Weak::upgrade)
            .fold(None, |at, file| earliest(at, file.ready_at()))
    }
}

/// What a wait learns of a watched file: `None` once it is closed.
fn observe(file: &Weak<OpenFile>) -> Option<Observation> {
    let file = file.upgrade()?;
    Some(Observation {
        ready: ready_events(file.readiness()),
        wakes: file.wait_queue().map_or(0, |queue| queue.wake_count()),
    })
}

/// A file's readiness as `EPOLL*` bits (as `poll` reads it).
fn ready_events(readiness: Readiness) -> u32 {
    let mut events = 0;
    if readiness.readable {
        events |= EPOLLIN | EPOLLRDNORM;
    }
    if readiness.writable {
        events |= EPOLLOUT | EPOLLWRNORM;
    }
    if readiness.hung_up {
        events |= EPOLLHUP;
    }
    if readiness.error {
        events |= EPOLLERR;
    }
    events
}

impl vfs::WaitQueue for Epoll {
    fn register(&self, thread: u64) {
        let mut registrations = self.registrations.lock();
        vfs::WaitQueue::register(&self.changed, thread);
        let files = self.files();
        for file in &files {
            if let Some(queue) = file.wait_queue() {
                queue.register(thread);
            }
        }
        registrations.push((thread, files));
    }

    fn unregister(&self, thread: u64) {
        let files = {
            let mut registrations = self.registrations.lock();
            let Some(at) = registrations.iter().position(|(id, _)| *id == thread) else {
                return;
            };
            registrations.swap_remove(at).1
        };
        vfs::WaitQueue::unregister(&self.changed, thread);
        for file in &files {
            if let Some(queue) = file.wait_queue() {
                queue.unregister(thread);
            }
        }
    }

    fn wake_count(&self) -> u64 {
        self.files()
            .iter()
            .filter_map(|file| file.wait_queue())
            .fold(vfs::WaitQueue::wake_count(&self.changed), |sum, queue| {
                sum.wrapping_add(queue.wake_count())
            })
    }
}

impl vfs::Device for Epoll {
    /// An instance is not read (Linux's eventpoll file has no `read`).
    fn read(&self, _offset: u64, _buf: &mut [u8], _nonblocking: bool) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }

    fn write(&self, _offset: u64, _buf: &[u8], _nonblocking: bool) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }

    /// Readable when a wait would report something.
    fn readiness(&self) -> Readiness {
        Readiness {
            readable: self.interests.lock().any_ready(observe),
            writable: false,
            hung_up: false,
            error: false,
        }
    }

    fn wait_queue(&self) -> Option<&dyn vfs::WaitQueue> {
        Some(self)
    }

    fn ready_at(&self) -> Option<u64> {
        Epoll::ready_at(self)
    }

    fn as_any(&self) -> Option<&dyn core::any::Any> {
        Some(self)
    }
}

/// The instance behind `file`, if it is one.
fn as_epoll(file: &OpenFile) -> Option<&Epoll> {
    file.device()?.as_any()?.downcast_ref::<Epoll>()
}

/// `epoll_create(size)`: `size` is only checked (positive), as on Linux.
pub fn epoll_create(
    directory: &Arc<dyn Inode>,
    process: &LinuxProcess,
    size: u64,
) -> Result<i64, Errno> {
    if size as i32 <= 0 {
        return Err(Errno::EINVAL);
    }
    epoll_create1(directory, process, 0)
}

/// `epoll_create1(flags)`: `EPOLL_CLOEXEC` only.
pub fn epoll_create1(
    directory: &Arc<dyn Inode>,
    process: &LinuxProcess,
    flags: u64,
) -> Result<i64, Errno> {
    if flags & !EPOLL_CLOEXEC != 0 {
        return Err(Errno::EINVAL);
    }
    let file = anonymous::anonymous_file(directory, "eventpoll", 0, Arc::new(Epoll::new()))?;
    anonymous::install(process, file, flags & EPOLL_CLOEXEC != 0)
}

/// `epoll_ctl(epfd, op, fd, event)`, its checks in Linux's order: the
/// event (`EFAULT`; not read for `EPOLL_CTL_DEL`), both descriptors
/// (`EBADF`), a file that cannot be waited for (`EPERM`: regular files,
/// directories), `epfd` not an instance or the same file as `fd`
/// (`EINVAL`), `EPOLLEXCLUSIVE` misuse (`EINVAL`), a loop or too deep a
/// nesting of instances (`ELOOP`), then the operation's own (`EEXIST`,
/// `ENOENT`, `EINVAL` for an unknown one).
pub fn epoll_ctl(
    process: &LinuxProcess,
    epfd: u64,
    op: u64,
    fd: u64,
    event: u64,
) -> Result<i64, Errno> {
    // `op` is an int: -1 arrives with the upper half clear.
    let op = op as i32 as i64 as u64;
    let event = if op == EPOLL_CTL_DEL {
        EpollEvent::default()
    } else {
        let mut bytes = [0u8; EpollEvent::BYTES];
        user::read(event, &mut bytes)?;
        EpollEvent::from_bytes(&bytes)
    };
    let epoll_file = process.fds.get(i64::from(epfd as i32))?;
    let fd = fd as i32;
    let target = process.fds.get(i64::from(fd))?;
    if target.wait_queue().is_none() {
        return Err(Errno::EPERM);
    }
    let epoll = as_epoll(&epoll_file).ok_or(Errno::EINVAL)?;
    if Arc::ptr_eq(&epoll_file, &target) {
        return Err(Errno::EINVAL);
    }
    let target_is_epoll = as_epoll(&target).is_some();
    if op != EPOLL_CTL_DEL {
        if op == EPOLL_CTL_MOD && event.events & EPOLLEXCLUSIVE != 0 {
            return Err(Errno::EINVAL);
        }
        if op == EPOLL_CTL_ADD {
            check_exclusive(event.events, target_is_epoll)?;
        }
    }
    let file_id = Arc::as_ptr(&target) as usize;
    match op {
        EPOLL_CTL_ADD => {
            if target_is_epoll {
                check_nesting(&epoll_file, &target)?;
            }
            // Registrations first (see `Epoll::registrations`): a waiter
            // registering meanwhile sees the entry or is put on its queue.
            let registrations = epoll.registrations.lock();
            epoll.interests.lock().add(
                fd,
                file_id,
                Arc::downgrade(&target),
                event,
                target_is_epoll,
            )?;
            drop(registrations);
            epoll.register_waiters_on(&target);
        }
        EPOLL_CTL_MOD => epoll.interests.lock().modify(fd, file_id, event)?,
        EPOLL_CTL_DEL => {
            epoll.interests.lock().delete(fd, file_id)?;
        }
        _ => return Err(Errno::EINVAL),
    }
    // A waiter looks again: an entry added or re-armed may be ready.
    epoll.changed.wake_all();
    Ok(0)
}

/// `ELOOP` if watching instance `target` from instance `file` would make
/// a cycle, or a chain of instances deeper than [`MAX_NESTING`].
fn check_nesting(file: &Arc<OpenFile>, target: &Arc<OpenFile>) -> Result<(), Errno> {
    let depth = nesting_depth(target, file, 1)?;
    if depth > MAX_NESTING {
        return Err(Errno::ELOOP);
    }
    Ok(())
}

/// How many instances deep the chains below `file` (an instance, at
/// level `level`) go, counting it; `ELOOP` if `forbidden` is among them
/// or the chains go deeper than Linux lets them.
fn nesting_depth(
    file: &Arc<OpenFile>,
    forbidden: &Arc<OpenFile>,
    level: usize,
) -> Result<usize, Errno> {
    if Arc::ptr_eq(file, forbidden) || level > MAX_NESTING + 1 {
        return Err(Errno::ELOOP);
    }
    let Some(epoll) = as_epoll(file) else {
        return Ok(0);
    };
    let mut deepest = 0;
    for watched in epoll.files() {
        deepest = deepest.max(nesting_depth(&watched, forbidden, level + 1)?);
    }
    Ok(deepest + 1)
}

/// `epoll_wait(epfd, events, maxevents, timeout)`: `timeout` in
/// milliseconds, negative for no end.
pub fn epoll_wait(
    process: &LinuxProcess,
    epfd: u64,
    events: u64,
    max_events: u64,
    timeout_ms: u64,
) -> Result<i64, Errno> {
    wait(
        process,
        epfd,
        events,
        max_events,
        crate::poll::timeout_argument(timeout_ms),
    )
}

/// `epoll_pwait(epfd, events, maxevents, timeout, sigmask, sigsetsize)`:
/// [`epoll_wait`] with `sigmask` (unless null) in force meanwhile.
pub fn epoll_pwait(
    process: &LinuxProcess,
    epfd: u64,
    events: u64,
    max_events: u64,
    timeout_ms: u64,
    (sigmask, size): (u64, u64),
) -> Result<i64, Errno> {
    let mask = read_mask(sigmask, size)?;
    with_mask(process, mask, || {
        epoll_wait(process, epfd, events, max_events, timeout_ms)
    })
}

/// `epoll_pwait2(epfd, events, maxevents, timeout, sigmask, sigsetsize)`:
/// [`epoll_pwait`] with a `struct timespec` timeout (null: no end;
/// `EINVAL` for a negative or malformed one).
pub fn epoll_pwait2(
    process: &LinuxProcess,
    epfd: u64,
    events: u64,
    max_events: u64,
    timeout: u64,
    (sigmask, size): (u64, u64),
) -> Result<i64, Errno> {
    let timeout_ns = if timeout == 0 {
        None
    } else {
        let mut bytes = [0u8; Timespec::BYTES];
        user::read(timeout, &mut bytes)?;
        Some(
            Timespec::from_bytes(&bytes)
                .to_nanoseconds()
                .ok_or(Errno::EINVAL)?,
        )
    };
    let mask = read_mask(sigmask, size)?;
    with_mask(process, mask, || {
        wait(process, epfd, events, max_events, timeout_ns)
    })
}

/// The signal mask a `pwait` puts in force: `None` for a null pointer;
/// `EINVAL` for a size other than a `sigset_t`'s, `EFAULT`.
fn read_mask(sigmask: u64, size: u64) -> Result<Option<u64>, Errno> {
    if sigmask == 0 {
        return Ok(None);
    }
    if size != SIGSET_BYTES {
        return Err(Errno::EINVAL);
    }
    Ok(Some(user::read_u64(sigmask)?))
}

/// The common part of the waits, its checks in Linux's order:
/// `maxevents` (`EINVAL`), the array's range (`EFAULT`), `epfd`
/// (`EBADF`, `EINVAL` if not an instance). Waits up to `timeout_ns`
/// (`None`: no end) for reports, writes them to `events` and returns
/// how many (0 when the time ran out).
fn wait(
    process: &LinuxProcess,
    epfd: u64,
    events: u64,
    max_events: u64,
    timeout_ns: Option<u64>,
) -> Result<i64, Errno> {
    let max_events = max_events as i32;
    if max_events <= 0 || max_events as u64 > MAX_EVENTS {
        return Err(Errno::EINVAL);
    }
    let array_bytes = max_events as u64 * EpollEvent::BYTES as u64;
    if !user::is_user_range(events, array_bytes) {
        return Err(Errno::EFAULT);
    }
    let file = process.fds.get(i64::from(epfd as i32))?;
    let epoll = as_epoll(&file).ok_or(Errno::EINVAL)?;
    let deadline = timeout_ns.map(|ns| Machine::uptime_ns().saturating_add(ns));
    let attempt = || {
        let reports = epoll.collect(max_events as usize);
        (!reports.is_empty()).then_some(reports)
    };
    let reports =
        wait_on_any(epoll, "epoll", deadline, || epoll.ready_at(), attempt)?.unwrap_or_default();
    let mut bytes = Vec::with_capacity(reports.len() * EpollEvent::BYTES);
    for report in &reports {
        bytes.extend_from_slice(&report.to_bytes());
    }
    user::write(events, &bytes)?;
    Ok(reports.len() as i64)
}
