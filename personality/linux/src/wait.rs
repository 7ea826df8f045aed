//! Blocking without polling: a waiting system call (after a few yields
//! while other threads are ready) registers its thread on the wait queue
//! of what it waits for, looks once more, and blocks until a waker (the
//! other end of a pipe, a packet, a signal's sender) wakes it, its
//! deadline passes, or a signal interrupts it.
//!
//! Signals need no queue of their own: their senders wake every thread
//! of the target process (the kernel's `process::interrupt`), and a
//! thread that was just preparing to block then does not block
//! (`sched::prepare_to_wait`).

use core::ops::Deref;

use vfs::Errno;

use crate::pipe::interrupted;

/// Times a waiter yields to ready threads before it blocks.
pub(crate) const YIELDS_BEFORE_BLOCKING: u32 = 16;

/// A scheduler wait queue that an open file's device exposes to `poll`
/// (`vfs::Device::wait_queue`).
#[derive(Default)]
pub struct FileWaitQueue(sched::WaitQueue);

impl FileWaitQueue {
    /// A queue nobody waits on.
    pub const fn new() -> FileWaitQueue {
        FileWaitQueue(sched::WaitQueue::new())
    }
}

impl Deref for FileWaitQueue {
    type Target = sched::WaitQueue;

    fn deref(&self) -> &sched::WaitQueue {
        &self.0
    }
}

impl vfs::WaitQueue for FileWaitQueue {
    fn register(&self, thread: u64) {
        self.0.register(sched::ThreadId(thread));
    }

    fn unregister(&self, thread: u64) {
        self.0.unregister(sched::ThreadId(thread));
    }
}

/// Tries `attempt` until it answers (`Some`), blocking on `queue` in
/// between: `Ok(Some(answer))`; `Ok(None)` once uptime `deadline` (ns)
/// has passed; `EINTR` if the caller must stop (a signal to take, a
/// kill). `attempt` is tried at once, without registering, so a wait
/// that does not wait costs nothing more; `waiting_on` names the wait
/// for the lockup watchdog.
pub(crate) fn wait_on<T>(
    queue: &sched::WaitQueue,
    waiting_on: &'static str,
    deadline: Option<u64>,
    mut attempt: impl FnMut() -> Option<T>,
) -> Result<Option<T>, Errno> {
    if let Some(answer) = attempt() {
        return Ok(Some(answer));
    }
    // While other threads are ready, the answer is likely one of them
    // (the other end of a pipe): a few switches cost less than the
    // registering and waking of a blocked wait. With nothing else ready
    // this costs one look at the ready queue.
    for _ in 0..YIELDS_BEFORE_BLOCKING {
        if interrupted() {
            return Err(Errno::EINTR);
        }
        if !sched::yield_to_ready() {
            break;
        }
        if let Some(answer) = attempt() {
            return Ok(Some(answer));
        }
    }
    let me = sched::current();
    queue.register(me);
    let result = loop {
        // Prepared before the look: a wake-up between the look and the
        // block makes the block return at once.
        sched::prepare_to_wait();
        if let Some(answer) = attempt() {
            break Ok(Some(answer));
        }
        if interrupted() {
            break Err(Errno::EINTR);
        }
        if deadline.is_some_and(|deadline| hal::timer::uptime_ns() >= deadline) {
            break Ok(None);
        }
        sched::block_prepared(waiting_on, deadline);
    };
    queue.unregister(me);
    result
}
