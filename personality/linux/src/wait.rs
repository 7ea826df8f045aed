//! Blocking without polling: a waiting system call (after a few yields
//! while other threads are ready) registers its thread on the wait queue
//! of what it waits for, looks once more, and blocks until a waker (the
//! other end of a pipe, a packet, a signal's sender) wakes it, its
//! deadline passes, or a signal interrupts it.
//!
//! Signals need no queue of their own: their senders wake every thread
//! of the target process (the kernel's `process::interrupt`), and a
//! thread that was just preparing to block then does not block
//! (`Blocking::prepare_to_wait`).

use core::{
    ops::Deref,
    sync::atomic::{AtomicU64, Ordering},
};

use vfs::Errno;

use crate::{
    machine::{self, Blocking, Clock, Machine},
    pipe::interrupted,
    poll::earliest,
};

/// Times a waiter yields to ready threads before it blocks.
pub(crate) const YIELDS_BEFORE_BLOCKING: u32 = 16;

/// A scheduler wait queue that an open file's device exposes to `poll`
/// (`vfs::Device::wait_queue`). It dereferences to the machine's queue
/// (`sched::WaitQueue` in the kernel, whose interrupt handlers wake it
/// with `wake_all_from_interrupt`).
#[derive(Default)]
pub struct FileWaitQueue {
    queue: machine::WaitQueue,
    /// Wake-ups so far (`vfs::WaitQueue::wake_count`: what an
    /// edge-triggered `epoll` compares).
    wakes: AtomicU64,
}

impl FileWaitQueue {
    /// A queue nobody waits on.
    pub const fn new() -> FileWaitQueue {
        FileWaitQueue {
            queue: machine::WaitQueue::new(),
            wakes: AtomicU64::new(0),
        }
    }

    /// Wakes every thread waiting on it.
    pub fn wake_all(&self) {
        // Counted before the wake, so a woken waiter sees the new count.
        self.wakes.fetch_add(1, Ordering::SeqCst);
        Machine::wake_all(&self.queue);
    }

    /// Wakes every thread waiting on it from an interrupt handler (the
    /// terminal's input): never waits for a lock.
    #[cfg(target_os = "none")]
    pub fn wake_all_from_interrupt(&self) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        self.queue.wake_all_from_interrupt();
    }
}

impl Deref for FileWaitQueue {
    type Target = machine::WaitQueue;

    fn deref(&self) -> &machine::WaitQueue {
        &self.queue
    }
}

impl vfs::WaitQueue for FileWaitQueue {
    fn register(&self, thread: u64) {
        Machine::register(&self.queue, thread);
    }

    fn unregister(&self, thread: u64) {
        Machine::unregister(&self.queue, thread);
    }

    fn wake_count(&self) -> u64 {
        self.wakes.load(Ordering::SeqCst)
    }
}

/// Tries `attempt` until it answers (`Some`), blocking on `queue` in
/// between: `Ok(Some(answer))`; `Ok(None)` once uptime `deadline` (ns)
/// has passed; `EINTR` if the caller must stop (a signal to take, a
/// kill). `attempt` is tried at once, without registering, so a wait
/// that does not wait costs nothing more; `waiting_on` names the wait
/// for the lockup watchdog.
pub(crate) fn wait_on<T>(
    queue: &FileWaitQueue,
    waiting_on: &'static str,
    deadline: Option<u64>,
    attempt: impl FnMut() -> Option<T>,
) -> Result<Option<T>, Errno> {
    wait_on_any(queue, waiting_on, deadline, || None, attempt)
}

/// [`wait_on`] on any file's queue (an `epoll` instance's stands for all
/// the files it watches), also looking again by uptime `look_again_at`
/// (asked before each block): when what is awaited turns ready by itself
/// (a timer's expiry), nobody wakes the queue.
pub(crate) fn wait_on_any<T>(
    queue: &dyn vfs::WaitQueue,
    waiting_on: &'static str,
    deadline: Option<u64>,
    look_again_at: impl Fn() -> Option<u64>,
    mut attempt: impl FnMut() -> Option<T>,
) -> Result<Option<T>, Errno> {
    if let Some(answer) = attempt() {
        return Ok(Some(answer));
    }
    let is_past = |deadline: Option<u64>| deadline.is_some_and(|at| Machine::uptime_ns() >= at);
    if is_past(deadline) {
        // A zero timeout (`poll`, `epoll_wait` with 0): one look and
        // back, without giving the processor to anyone.
        return Ok(None);
    }
    // While other threads are ready, the answer is likely one of them
    // (the other end of a pipe): a few switches cost less than the
    // registering and waking of a blocked wait. With nothing else ready
    // this costs one look at the ready queue.
    for _ in 0..YIELDS_BEFORE_BLOCKING {
        if interrupted() {
            return Err(Errno::EINTR);
        }
        if !Machine::yield_to_ready() {
            break;
        }
        if let Some(answer) = attempt() {
            return Ok(Some(answer));
        }
        if is_past(deadline) {
            return Ok(None);
        }
    }
    let me = Machine::current_thread();
    queue.register(me);
    let result = loop {
        // Prepared before the look: a wake-up between the look and the
        // block makes the block return at once.
        Machine::prepare_to_wait();
        if let Some(answer) = attempt() {
            break Ok(Some(answer));
        }
        if interrupted() {
            break Err(Errno::EINTR);
        }
        if is_past(deadline) {
            break Ok(None);
        }
        Machine::block_prepared(waiting_on, earliest(deadline, look_again_at()));
    };
    queue.unregister(me);
    result
}
