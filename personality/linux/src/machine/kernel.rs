//! The machine in the kernel: user copies and the clock from `hal`,
//! threads and wait queues from `sched`. Each function is one call,
//! inlined into its caller.

use super::{BadAddress, Blocking, Clock, UserMemory};

/// `hal` and `sched`, as the personality reaches them.
pub struct Kernel;

impl UserMemory for Kernel {
    #[inline(always)]
    fn read(address: u64, out: &mut [u8]) -> Result<(), BadAddress> {
        hal::user::copy_from_user(out, address).map_err(|_| BadAddress)
    }

    #[inline(always)]
    fn write(address: u64, bytes: &[u8]) -> Result<(), BadAddress> {
        hal::user::copy_to_user(address, bytes).map_err(|_| BadAddress)
    }
}

impl Clock for Kernel {
    #[inline(always)]
    fn uptime_ns() -> u64 {
        hal::timer::uptime_ns()
    }

    fn epoch_offset_ns() -> u64 {
        hal::rtc::epoch_offset_ns()
    }
}

impl Blocking for Kernel {
    type WaitQueue = sched::WaitQueue;

    #[inline(always)]
    fn current_thread() -> u64 {
        sched::current().0
    }

    #[inline(always)]
    fn register(queue: &sched::WaitQueue, thread: u64) {
        queue.register(sched::ThreadId(thread));
    }

    #[inline(always)]
    fn unregister(queue: &sched::WaitQueue, thread: u64) {
        queue.unregister(sched::ThreadId(thread));
    }

    #[inline(always)]
    fn wake_all(queue: &sched::WaitQueue) {
        queue.wake_all();
    }

    #[inline(always)]
    fn yield_to_ready() -> bool {
        sched::yield_to_ready()
    }

    #[inline(always)]
    fn prepare_to_wait() {
        sched::prepare_to_wait();
    }

    #[inline(always)]
    fn block_prepared(waiting_on: &'static str, deadline: Option<u64>) {
        sched::block_prepared(waiting_on, deadline);
    }
}
