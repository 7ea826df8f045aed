//! What the personality needs of the machine beneath it, as three narrow
//! traits: [`UserMemory`] (the calling program's memory, reached only by
//! fallible copies), [`Clock`] (uptime) and [`Blocking`] (the calling
//! thread, its wait queues, and blocking until a wake or a deadline).
//!
//! The rest of the crate reaches them only through [`Machine`], chosen
//! when the crate is compiled, never through a `dyn` object: system calls
//! are measured in guest instructions, and a static call into `hal` or
//! `sched` inlines to what a direct call was. On the kernel's target
//! (`target_os = "none"`) the machine is `kernel::Kernel`, which calls
//! `hal::user`, `hal::timer` and `sched`; on the host it is
//! `fake::FakeMachine`, whose user memory, clock and scheduler a test
//! sets up per test thread (`fake`'s module documentation says how).

#[cfg(not(target_os = "none"))]
pub mod fake;
#[cfg(target_os = "none")]
pub mod kernel;

/// The machine the personality runs on: `hal` and `sched` in the kernel.
#[cfg(target_os = "none")]
pub type Machine = kernel::Kernel;
/// The machine the personality runs on: fakes on the host.
#[cfg(not(target_os = "none"))]
pub type Machine = fake::FakeMachine;

/// The wait queue of [`Machine`], named concretely so that a queue can be
/// made in a `static` (its `new` is a `const fn` on both machines).
#[cfg(target_os = "none")]
pub type WaitQueue = sched::WaitQueue;
/// The wait queue of [`Machine`], named concretely so that a queue can be
/// made in a `static` (its `new` is a `const fn` on both machines).
#[cfg(not(target_os = "none"))]
pub type WaitQueue = fake::FakeWaitQueue;

/// A user address range that cannot be copied: not in the user half, not
/// mapped, or not accessible as asked. System calls answer it with
/// `EFAULT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadAddress;

/// The calling program's memory. Every address a program passes is an
/// allegation; these copies check it, and a bad one is an error, never a
/// fault of the kernel.
pub trait UserMemory {
    /// Copies `out.len()` bytes from user address `address`.
    fn read(address: u64, out: &mut [u8]) -> Result<(), BadAddress>;
    /// Copies `bytes` to user address `address`.
    fn write(address: u64, bytes: &[u8]) -> Result<(), BadAddress>;
}

/// Time since boot, and the wall clock's offset from it.
pub trait Clock {
    /// Nanoseconds since boot, never going back.
    fn uptime_ns() -> u64;
    /// Nanoseconds to add to an uptime to get the wall-clock time
    /// (`CLOCK_REALTIME`): what absolute wall-clock deadlines are turned
    /// into uptimes by.
    fn epoch_offset_ns() -> u64;
}

/// The calling thread and how it waits. The pattern that loses no wake-up
/// (`wait::wait_on`): [`Blocking::prepare_to_wait`], register on the
/// queues of the events awaited, look at the condition, then
/// [`Blocking::block_prepared`] unless it holds, and unregister after. A
/// wake between the look and the block makes the block return at once;
/// wake-ups may be spurious, so every waiter looks again.
pub trait Blocking {
    /// The threads waiting for one kind of event.
    type WaitQueue: Sync;

    /// The calling thread's id.
    fn current_thread() -> u64;
    /// Adds `thread` to `queue`: a wake of the queue wakes it.
    fn register(queue: &Self::WaitQueue, thread: u64);
    /// Takes `thread` off `queue`.
    fn unregister(queue: &Self::WaitQueue, thread: u64);
    /// Wakes every thread registered on `queue`.
    fn wake_all(queue: &Self::WaitQueue);
    /// Gives the processor to another ready thread, if there is one, and
    /// says whether it did.
    fn yield_to_ready() -> bool;
    /// Starts a wait: wakes from now on make the next
    /// [`Blocking::block_prepared`] return at once.
    fn prepare_to_wait();
    /// Blocks the calling thread until a wake since
    /// [`Blocking::prepare_to_wait`], or until uptime `deadline` (ns).
    /// `waiting_on` says what for (the lockup watchdog's reports).
    fn block_prepared(waiting_on: &'static str, deadline: Option<u64>);
}
