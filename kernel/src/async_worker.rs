//! Where asynchronous handlers run (the dispatcher's `Spawner`): one
//! kernel thread that runs queued handler invocations in the order they
//! were raised. The raiser only queues (SPIN's asynchronous event: it
//! does not wait for the handler).
//!
//! The queue is bounded: a raiser never waits and never grows the heap
//! without limit. An invocation that finds it full is refused, and the
//! dispatcher counts it as a fault of the event.

use alloc::{boxed::Box, collections::VecDeque, sync::Arc};
use core::sync::atomic::{AtomicUsize, Ordering};

use dispatch::{SpawnError, Spawner};
use sched::sync::{Condvar, Mutex};

/// Invocations waiting at most.
const QUEUE_LIMIT: usize = 4096;

/// A handler invocation to run.
type Task = Box<dyn FnOnce() + Send>;

/// The worker: its queue, and the condition it waits on.
pub struct Worker {
    queue: Mutex<VecDeque<Task>>,
    queued: Condvar,
    /// Invocations queued or running.
    unfinished: AtomicUsize,
}

static WORKER: spin::Once<Arc<Worker>> = spin::Once::new();

/// The worker (its thread is started by [`init`]).
pub fn worker() -> Option<Arc<Worker>> {
    WORKER.get().cloned()
}

/// Starts the worker thread (at boot, so that it is part of the kernel
/// rather than of the first raise that needs it).
pub fn init() {
    let worker = WORKER
        .call_once(|| {
            Arc::new(Worker {
                queue: Mutex::new(VecDeque::with_capacity(QUEUE_LIMIT)),
                queued: Condvar::new(),
                unfinished: AtomicUsize::new(0),
            })
        })
        .clone();
    if sched::spawn("asynchronous handlers", move || worker.run()).is_err() {
        log::error!(
            "asynchronous handlers: no memory for the worker thread's stack; they will not run"
        );
    }
}

impl Worker {
    fn run(&self) {
        loop {
            let task = {
                let mut queue = self.queue.lock();
                loop {
                    if let Some(task) = queue.pop_front() {
                        break task;
                    }
                    queue = self.queued.wait(queue);
                }
            };
            task();
            self.unfinished.fetch_sub(1, Ordering::Release);
        }
    }

    /// Waits (sleeping a millisecond at a time, at most `limit_ms`) until
    /// every invocation queued so far has run; returns whether they all
    /// have. A tracer's last lines are written before it is unloaded.
    pub fn wait_until_idle(&self, limit_ms: u64) -> bool {
        for _ in 0..limit_ms {
            if self.unfinished.load(Ordering::Acquire) == 0 {
                return true;
            }
            sched::sleep_ms(1);
        }
        self.unfinished.load(Ordering::Acquire) == 0
    }
}

impl Spawner for Worker {
    fn spawn(&self, task: Task) -> Result<(), SpawnError> {
        let mut queue = self.queue.lock();
        if queue.len() >= QUEUE_LIMIT {
            return Err(SpawnError);
        }
        queue.push_back(task);
        self.unfinished.fetch_add(1, Ordering::Release);
        self.queued.notify_one();
        Ok(())
    }
}
