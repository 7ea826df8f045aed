//! Kernel threads ("strands" in SPIN) and the global scheduler.
//!
//! Policy: preemptive round robin within strict ranks. A thread's
//! [`Scheduling`] gives its rank and its time slice: a ready thread of a
//! higher rank always runs before any of a lower one (within one tick of
//! becoming ready), and threads of one rank take turns, each running for
//! at most its slice ([`TIME_SLICE_TICKS`] unless set otherwise; a thread
//! with no slice runs until it parks or a higher rank preempts it). Every
//! thread starts at rank 0 with the usual slice. The idle thread runs
//! only when nothing else is ready. Personalities map their priorities
//! onto ranks and slices (Linux's real-time policies onto ranks, `nice`
//! onto slices). Ranked threads may use at most 95% of each second (as
//! Linux's real-time throttling allows): past that, until the second
//! ends, every thread is rank 0, so a ranked thread that never blocks
//! cannot starve the rest. Threads block on
//! [`sync::Mutex`], [`sync::Condvar`], [`sleep_ms`] and [`JoinHandle::join`].
//!
//! Strands of an application-scheduled group (the kernel's `strands`) are
//! marked *grouped* ([`set_grouped`]). When a grouped thread parks in
//! [`block_current_if`] or [`sleep_ms`], and when a waker makes a parked
//! grouped thread runnable, the scheduler calls the kernel's
//! [`StrandHooks`] instead of deciding alone: a woken grouped thread stays
//! parked until its group gives it the group's processor ([`resume`]).
//! Ungrouped threads pay one flag test for this.
//!
//! Concurrency: all scheduler state sits behind one [`IrqMutex`], so it is
//! changed with interrupts disabled on the single CPU; the timer tick
//! ([`on_tick`]) runs in interrupt context and may preempt the running thread
//! by switching contexts from inside the interrupt handler (the preempted
//! thread's registers stay in its trap frame on its own stack).
#![no_std]

extern crate alloc;

pub mod sync;
mod wait_queue;

pub use wait_queue::WaitQueue;

use id_table::Table;

use alloc::{
    boxed::Box,
    collections::{BinaryHeap, VecDeque},
    string::String,
    sync::Arc,
    vec::Vec,
};
use core::{
    cmp::Reverse,
    fmt,
    sync::atomic::{AtomicU64, Ordering},
};

use hal::{
    context::{self, Context, KernelStack},
    cpu,
    sync::IrqMutex,
    timer,
};

/// Timer ticks a thread may run before it is preempted.
pub const TIME_SLICE_TICKS: u32 = 10;
/// Stack size of a kernel thread.
pub const STACK_BYTES: u64 = 64 * 1024;

/// How the scheduler treats a thread ([`set_scheduling`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheduling {
    /// Its rank: ready threads of a higher rank run first.
    pub rank: u8,
    /// Timer ticks it may run before the next ready thread of its rank
    /// takes over (at least 1); `None` runs it until it parks or yields.
    pub slice_ticks: Option<u32>,
}

impl Scheduling {
    /// What every thread starts with: rank 0, [`TIME_SLICE_TICKS`].
    pub const DEFAULT: Scheduling = Scheduling {
        rank: 0,
        slice_ticks: Some(TIME_SLICE_TICKS),
    };

    /// Its slice as the tick countdown takes it.
    fn countdown(&self) -> u32 {
        self.slice_ticks.map_or(u32::MAX, |ticks| ticks.max(1))
    }
}

/// Identifies a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ThreadId(pub u64);

impl fmt::Display for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What a thread is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadState {
    /// Waiting in the ready queue.
    Ready,
    /// On the CPU.
    Running,
    /// Waiting for a wake-up (mutex, condition variable, join).
    Blocked,
    /// Waiting for a timer tick.
    Sleeping,
}

/// How a thread ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitReason {
    /// Its entry function returned.
    Finished,
    /// It caused a CPU exception and was stopped.
    Faulted(Fault),
}

/// The CPU exception that stopped a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    /// Exception vector.
    pub vector: u64,
    /// Error code pushed by the CPU (0 if none).
    pub error_code: u64,
    /// Address of the faulting instruction.
    pub rip: u64,
    /// Faulting address (CR2) for page faults, else 0.
    pub fault_address: u64,
}

/// Why a thread could not be created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpawnError {
    /// No memory for its stack.
    OutOfMemory,
}

/// A snapshot of one thread, for the shell's `threads`.
#[derive(Debug, Clone)]
pub struct ThreadInfo {
    /// Its identifier.
    pub id: ThreadId,
    /// Its name.
    pub name: String,
    /// Its state.
    pub state: ThreadState,
    /// Processor time it has run, in timer ticks (measured by the clock).
    pub cpu_ticks: u64,
    /// What it waits for, while blocked or sleeping (see [`ThreadView`]).
    pub waiting_on: &'static str,
}

/// One thread as the lockup watchdog sees it, without copying anything
/// ([`for_each_thread`]).
pub struct ThreadView<'a> {
    /// Its identifier.
    pub id: ThreadId,
    /// Its name.
    pub name: &'a str,
    /// Its state.
    pub state: ThreadState,
    /// What it waits for while blocked or sleeping ("kernel mutex",
    /// "condition variable", "sleep", "join", ...), else "".
    pub waiting_on: &'static str,
    /// Uptime (ns) at which it entered its state: since when it has run,
    /// waited in the ready queue, or been blocked.
    pub since_ns: u64,
    /// Processor time it has run, in timer ticks (measured by the clock,
    /// up to its last switch or tick).
    pub cpu_ticks: u64,
    /// Whether it is the idle thread (which runs when nothing is ready,
    /// and is never in the ready queue, whatever its state says).
    pub is_idle: bool,
}

/// The outcome of a thread, shared by the thread and its [`JoinHandle`].
struct Completion {
    reason: IrqMutex<Option<ExitReason>>,
    joiners: IrqMutex<Vec<ThreadId>>,
}

struct Thread {
    name: String,
    context: Arc<Context>,
    state: ThreadState,
    /// Processor time it has been charged (ns): its runs that ended (a
    /// running thread's current run began at `since_ns`).
    cpu_ns: u64,
    completion: Arc<Completion>,
    /// Whether a fault in this thread must stop the kernel (boot and idle).
    is_critical: bool,
    /// Whether it is a strand of an application-scheduled group: its
    /// blocking and waking go through the [`StrandHooks`].
    is_grouped: bool,
    /// What it waits for while blocked or sleeping.
    waiting_on: &'static str,
    /// Uptime (ns) at which it entered its state.
    since_ns: u64,
    /// Whether a waker called [`wake`] while it was not parked, since its
    /// last [`prepare_to_wait`]: [`block_prepared`] then returns at once
    /// instead of losing that wake-up.
    wake_pending: bool,
    /// The uptime (ns) its current sleep ends at: a sleepers' entry that
    /// does not match it is left over from a sleep a waker cut short.
    wake_at: Option<u64>,
    /// Times it was put on the processor.
    times_scheduled: u64,
    /// Times it left the processor parked (blocked or sleeping): Linux's
    /// voluntary context switches. The other times it was scheduled
    /// ended with it still runnable (preempted, yielded).
    voluntary_switches: u64,
    /// Its rank and slice.
    scheduling: Scheduling,
}

impl Thread {
    /// Its processor time in ticks, its current run included.
    fn cpu_ticks(&self) -> u64 {
        self.cpu_ns_now() / NS_PER_TICK
    }

    /// Its processor time in nanoseconds, its current run included.
    fn cpu_ns_now(&self) -> u64 {
        let running = if self.state == ThreadState::Running {
            timer::uptime_ns().saturating_sub(self.since_ns)
        } else {
            0
        };
        self.cpu_ns + running
    }

    /// Moves it to `state` (waiting on `waiting_on`, "" unless it parks),
    /// noting when.
    fn enter(&mut self, state: ThreadState, waiting_on: &'static str) {
        self.enter_at(state, waiting_on, timer::uptime_ns());
    }

    /// [`Thread::enter`] at uptime `now`, which the caller read already.
    fn enter_at(&mut self, state: ThreadState, waiting_on: &'static str, now: u64) {
        // Leaving the processor: charged the run that ends, measured by the
        // clock (not counted in ticks, which a late or lost tick would
        // shorten: an emulator's processor descheduled by its host).
        if self.state == ThreadState::Running && state != ThreadState::Running {
            self.cpu_ns += now.saturating_sub(self.since_ns);
        }
        self.state = state;
        self.waiting_on = waiting_on;
        self.since_ns = now;
    }
}

/// What the kernel does when a grouped thread blocks or is woken. Both
/// run with interrupts disabled, possibly in interrupt context, outside
/// the scheduler's lock (they may call [`wake`] on ungrouped threads):
/// they must only record the fact and leave the decisions (events,
/// handlers) to a thread.
#[derive(Clone, Copy)]
pub struct StrandHooks {
    /// The running grouped thread is parking (it is already marked
    /// blocked or sleeping; the switch follows the call).
    pub on_block: fn(ThreadId),
    /// A waker made a parked grouped thread runnable; it stays parked
    /// until [`resume`] readies it.
    pub on_wake: fn(ThreadId),
}

static STRAND_HOOKS: spin::Once<StrandHooks> = spin::Once::new();

/// Installs the hooks for grouped threads (once; later calls are ignored,
/// so a hook never changes under a thread that is using it).
pub fn set_strand_hooks(hooks: StrandHooks) {
    STRAND_HOOKS.call_once(|| hooks);
}

/// Marks thread `id` as a strand of a group (or no longer one): see
/// [`StrandHooks`]. No effect on a thread that has ended.
pub fn set_grouped(id: ThreadId, is_grouped: bool) {
    with_scheduler(|scheduler| {
        if let Some(thread) = scheduler.threads.get_mut(id.0) {
            thread.is_grouped = is_grouped;
        }
    });
}

fn notify_block(id: ThreadId) {
    if let Some(hooks) = STRAND_HOOKS.get() {
        (hooks.on_block)(id);
    }
}

fn notify_wake(id: ThreadId) {
    match STRAND_HOOKS.get() {
        Some(hooks) => (hooks.on_wake)(id),
        // Nobody to hold it for: it runs.
        None => with_scheduler(|scheduler| scheduler.make_ready(id)),
    }
}

struct Scheduler {
    /// Every thread that has not ended, by id.
    threads: Table<Thread>,
    ready: VecDeque<ThreadId>,
    /// Sleeping threads by the uptime (ns) they wake at.
    sleepers: BinaryHeap<Reverse<(u64, ThreadId)>>,
    current: ThreadId,
    idle: ThreadId,
    slice_left: u32,
    next_id: u64,
    context_switches: u64,
    /// Ticks threads of a rank above 0 ran in the current period of
    /// [`RANKED_PERIOD_TICKS`].
    ranked_ticks: u32,
    /// Ticks left in the current period.
    period_left: u32,
    /// Whether ranked threads used up their share of this period: until
    /// it ends, every thread is treated as rank 0 with the usual slice.
    throttled: bool,
}

/// The period over which ranked threads' share of the processor is
/// measured: one second of ticks.
const RANKED_PERIOD_TICKS: u32 = timer::TICK_HZ as u32;
/// The ticks of each period ranked threads may have (95%, Linux's
/// `sched_rt_runtime_us` default): a real-time thread that never blocks
/// still leaves the kernel's own threads and everyone else a twentieth
/// of the processor, so no program can freeze the system.
const RANKED_BUDGET_TICKS: u32 = RANKED_PERIOD_TICKS / 20 * 19;

/// Nanoseconds in one timer tick: the unit the `cpu_ticks` figures are in.
const NS_PER_TICK: u64 = 1_000_000_000 / timer::TICK_HZ;

static SCHEDULER: IrqMutex<Option<Scheduler>> = IrqMutex::new(None);

/// Runs `f` on the scheduler with interrupts disabled.
fn with_scheduler<R>(f: impl FnOnce(&mut Scheduler) -> R) -> R {
    let mut guard = SCHEDULER.lock();
    f(guard.as_mut().expect("sched::init has not run"))
}

impl Scheduler {
    fn add(
        &mut self,
        name: &str,
        context: Arc<Context>,
        is_critical: bool,
    ) -> (ThreadId, Arc<Completion>) {
        let id = ThreadId(self.next_id);
        self.next_id += 1;
        let completion = Arc::new(Completion {
            reason: IrqMutex::new(None),
            joiners: IrqMutex::new(Vec::new()),
        });
        self.threads.insert(
            id.0,
            Thread {
                name: String::from(name),
                context,
                state: ThreadState::Ready,
                cpu_ns: 0,
                completion: completion.clone(),
                is_critical,
                is_grouped: false,
                waiting_on: "",
                since_ns: timer::uptime_ns(),
                wake_pending: false,
                wake_at: None,
                times_scheduled: 0,
                voluntary_switches: 0,
                scheduling: Scheduling::DEFAULT,
            },
        );
        (id, completion)
    }

    /// Queues ready thread `id` of rank `rank` behind every ready thread
    /// of its rank or higher. Rank 0, every thread's unless a personality
    /// raised it, goes to the back without looking at the queue.
    fn enqueue(&mut self, id: ThreadId, rank: u8) {
        if rank == 0 || self.throttled {
            self.ready.push_back(id);
            return;
        }
        let threads = &self.threads;
        let behind = self
            .ready
            .iter()
            .position(|other| {
                threads
                    .get(other.0)
                    .is_some_and(|other| other.scheduling.rank < rank)
            })
            .unwrap_or(self.ready.len());
        self.ready.insert(behind, id);
        // The running thread of a lower rank gives way at the next tick.
        if self
            .threads
            .get(self.current.0)
            .is_some_and(|current| current.scheduling.rank < rank)
        {
            self.slice_left = 0;
        }
    }

    /// Counts a tick of `current` against ranked threads' share of the
    /// period, throttling them when it is used up and lifting that when
    /// the period ends.
    fn charge_rank(&mut self, current: ThreadId) {
        let ranked = self
            .threads
            .get(current.0)
            .is_some_and(|thread| thread.scheduling.rank > 0);
        if ranked {
            self.ranked_ticks += 1;
            if self.ranked_ticks >= RANKED_BUDGET_TICKS && !self.throttled {
                self.throttled = true;
                // The running ranked thread gives way now.
                self.slice_left = 0;
            }
        }
        self.period_left = self.period_left.saturating_sub(1);
        if self.period_left == 0 {
            self.period_left = RANKED_PERIOD_TICKS;
            self.ranked_ticks = 0;
            self.throttled = false;
        }
    }

    fn make_ready(&mut self, id: ThreadId) {
        if let Some(thread) = self.threads.get_mut(id.0) {
            if matches!(thread.state, ThreadState::Blocked | ThreadState::Sleeping) {
                thread.enter(ThreadState::Ready, "");
                let rank = thread.scheduling.rank;
                self.enqueue(id, rank);
            }
        }
    }

    /// A waker's [`Scheduler::make_ready`]: a parked grouped thread is left
    /// parked and `true` returned (the caller tells the hook, outside this
    /// lock); any other thread is made ready as usual.
    fn wake_or_defer(&mut self, id: ThreadId) -> bool {
        if let Some(thread) = self.threads.get_mut(id.0) {
            if matches!(thread.state, ThreadState::Blocked | ThreadState::Sleeping) {
                if thread.is_grouped {
                    return true;
                }
                thread.enter(ThreadState::Ready, "");
                let rank = thread.scheduling.rank;
                self.enqueue(id, rank);
            } else {
                // Running or ready: it may be between registering as a
                // waiter and parking (see `block_prepared`).
                thread.wake_pending = true;
            }
        }
        false
    }

    /// Picks the next thread to run (the idle thread if none is ready) and
    /// makes it current. Returns its context if it differs from the caller's.
    fn pick_next(&mut self) -> Option<Arc<Context>> {
        self.pick_next_at(timer::uptime_ns())
    }

    /// [`Scheduler::pick_next`] at uptime `now`, which the caller read
    /// already: the instant the thread leaving the processor was charged
    /// up to is the one the next starts at (one clock read per switch).
    fn pick_next_at(&mut self, now: u64) -> Option<Arc<Context>> {
        let next = self.ready.pop_front().unwrap_or(self.idle);
        if next == self.current {
            if let Some(thread) = self.threads.get_mut(next.0) {
                self.slice_left = if self.throttled {
                    TIME_SLICE_TICKS
                } else {
                    thread.scheduling.countdown()
                };
                if thread.state != ThreadState::Running {
                    thread.enter_at(ThreadState::Running, "", now);
                }
            }
            return None;
        }
        self.current = next;
        CURRENT.store(next.0, Ordering::Relaxed);
        self.context_switches += 1;
        let thread = self.threads.get_mut(next.0).expect("ready thread vanished");
        self.slice_left = if self.throttled {
            TIME_SLICE_TICKS
        } else {
            thread.scheduling.countdown()
        };
        thread.enter_at(ThreadState::Running, "", now);
        // Counted here and where a thread parks, where the thread is at
        // hand already: a switch costs no extra lookup.
        thread.times_scheduled += 1;
        Some(thread.context.clone())
    }

    /// If the idle thread runs while a thread is ready, makes the ready one
    /// current (returning its context): what an interrupt that readied a
    /// thread does rather than wait for the next tick.
    fn leave_idle(&mut self) -> Option<Arc<Context>> {
        if self.current == self.idle && !self.ready.is_empty() {
            let now = timer::uptime_ns();
            self.requeue_current(now);
            self.pick_next_at(now)
        } else {
            None
        }
    }

    /// Puts the running thread back at the end of the ready queue (unless it
    /// is the idle thread, which is never queued), at uptime `now`.
    fn requeue_current(&mut self, now: u64) {
        let current = self.current;
        if let Some(thread) = self.threads.get_mut(current.0) {
            if thread.state == ThreadState::Running {
                thread.enter_at(ThreadState::Ready, "", now);
                let rank = thread.scheduling.rank;
                if current != self.idle {
                    self.enqueue(current, rank);
                }
            }
        }
    }
}

/// Starts the scheduler: the running boot code becomes thread `name`, and
/// the idle thread is created. Call once, after the heap and timer are up.
pub fn init(name: &str) {
    context::set_thread_return(thread_returned);
    let boot_context = context::adopt_boot_thread();
    let idle_context = Context::new(
        KernelStack::new(16 * 1024).expect("no memory for the idle thread"),
        Box::new(idle_loop),
    );
    let mut scheduler = Scheduler {
        threads: Table::new(),
        ready: VecDeque::new(),
        sleepers: BinaryHeap::new(),
        current: ThreadId(0),
        idle: ThreadId(0),
        slice_left: TIME_SLICE_TICKS,
        next_id: 0,
        context_switches: 0,
        ranked_ticks: 0,
        period_left: RANKED_PERIOD_TICKS,
        throttled: false,
    };
    let (boot, _) = scheduler.add(name, boot_context, true);
    let (idle, _) = scheduler.add("idle", idle_context, true);
    scheduler
        .threads
        .get_mut(boot.0)
        .expect("boot thread")
        .enter(ThreadState::Running, "");
    scheduler.current = boot;
    CURRENT.store(boot.0, Ordering::Relaxed);
    scheduler.idle = idle;
    *SCHEDULER.lock() = Some(scheduler);
    timer::set_tick_hook(on_tick);
}

fn idle_loop() {
    loop {
        cpu::wait_for_interrupt();
    }
}

/// A handle to wait for a thread's end.
pub struct JoinHandle {
    id: ThreadId,
    completion: Arc<Completion>,
}

impl JoinHandle {
    /// The thread's identifier.
    pub fn id(&self) -> ThreadId {
        self.id
    }

    /// Blocks until the thread ends and returns how it ended.
    pub fn join(self) -> ExitReason {
        loop {
            if let Some(reason) = self.completion.reason.lock().clone() {
                return reason;
            }
            block_current_for("join", |me| {
                let is_done = self.completion.reason.lock().is_some();
                if !is_done {
                    self.completion.joiners.lock().push(me);
                }
                !is_done
            });
        }
    }

    /// Whether the thread has ended.
    pub fn is_finished(&self) -> bool {
        self.completion.reason.lock().is_some()
    }
}

/// Creates a thread named `name` running `entry`; it is queued to run.
pub fn spawn(name: &str, entry: impl FnOnce() + Send + 'static) -> Result<JoinHandle, SpawnError> {
    spawn_with_stack(name, STACK_BYTES, entry)
}

/// Like [`spawn`], with a stack of `stack_bytes` (rounded up to pages, at
/// most 1 MiB minus the guard page).
pub fn spawn_with_stack(
    name: &str,
    stack_bytes: u64,
    entry: impl FnOnce() + Send + 'static,
) -> Result<JoinHandle, SpawnError> {
    spawn_in_state(name, stack_bytes, entry, ThreadState::Ready)
}

/// Like [`spawn`], but the thread starts blocked: it runs once [`wake`]
/// makes it ready (an application-specific scheduler decides when).
pub fn spawn_blocked(
    name: &str,
    entry: impl FnOnce() + Send + 'static,
) -> Result<JoinHandle, SpawnError> {
    spawn_in_state(name, STACK_BYTES, entry, ThreadState::Blocked)
}

fn spawn_in_state(
    name: &str,
    stack_bytes: u64,
    entry: impl FnOnce() + Send + 'static,
    state: ThreadState,
) -> Result<JoinHandle, SpawnError> {
    let stack = KernelStack::new(stack_bytes).map_err(|_| SpawnError::OutOfMemory)?;
    // The entry returns to hal, which then calls `thread_returned` (set in
    // `init`): the boxed entry is freed before the thread ends.
    let context = Context::new(stack, Box::new(entry));
    let (id, completion) = with_scheduler(|scheduler| {
        let (id, completion) = scheduler.add(name, context, false);
        if state == ThreadState::Ready {
            scheduler.ready.push_back(id);
        } else if let Some(thread) = scheduler.threads.get_mut(id.0) {
            thread.enter(state, "its scheduler");
        }
        (id, completion)
    });
    Ok(JoinHandle { id, completion })
}

/// Hands the CPU to blocked thread `to`: the running thread blocks and
/// `to` becomes ready (it runs when the global scheduler reaches it; other
/// ready threads are not passed over). The running thread runs again when
/// something wakes it. Used by application-specific schedulers to switch
/// between their own strands.
pub fn hand_off(to: ThreadId) {
    // A switch inside the group, not a block: no hook, and `to` is
    // readied even if grouped (its group chose it).
    park_current_if(
        |me| {
            if me != to {
                resume(to);
            }
            me != to
        },
        false,
        "its scheduler",
    );
}

/// The running thread's id, as `Scheduler::current`, readable without the
/// scheduler's lock: the extension runtime asks for it on every
/// invocation (to tell a re-entrant call from a busy instance), where
/// taking the lock with interrupts disabled was a visible part of a
/// native Wasm handler's cost. One CPU: only `pick_next_at` and `init` write it, with
/// the lock held, and a thread reads it only while it runs, when it names
/// that thread.
static CURRENT: AtomicU64 = AtomicU64::new(0);

/// The running thread.
pub fn current() -> ThreadId {
    ThreadId(CURRENT.load(Ordering::Relaxed))
}

/// Switches to `next` (if any) with interrupts already disabled.
fn switch_if(next: Option<Arc<Context>>) {
    if let Some(next) = next {
        context::switch_to(next);
    }
}

/// Ends a thread whose entry returned (hal calls it, see `init`).
fn thread_returned() -> ! {
    exit(ExitReason::Finished)
}

/// Gives up the CPU to the next ready thread, if any.
pub fn yield_now() {
    yield_to_ready();
}

/// Gives up the CPU if another thread is ready, and says whether it did.
/// A waiter whose peer is running (the other end of a pipe) yields a few
/// times before it blocks: the answer usually comes within one switch,
/// without the registering and waking of a blocked wait.
pub fn yield_to_ready() -> bool {
    let were_enabled = cpu::are_interrupts_enabled();
    cpu::disable_interrupts();
    let next = with_scheduler(|scheduler| {
        if scheduler.ready.is_empty() {
            return None;
        }
        let now = timer::uptime_ns();
        scheduler.requeue_current(now);
        scheduler.pick_next_at(now)
    });
    let yielded = next.is_some();
    switch_if(next);
    if were_enabled {
        cpu::enable_interrupts();
    }
    yielded
}

/// Blocks the running thread if `park` returns true. `park` runs with
/// interrupts disabled and gets the running thread's id, to record it
/// wherever its waker will find it; nothing can wake the thread between
/// `park` and the block, so no wake-up is lost.
///
/// A grouped thread ([`set_grouped`]) that parks here is reported to the
/// kernel's [`StrandHooks::on_block`] before the switch.
pub fn block_current_if(park: impl FnOnce(ThreadId) -> bool) {
    park_current_if(park, true, "an event");
}

/// [`block_current_if`], saying what the thread waits for (shown by the
/// lockup watchdog's reports: "kernel mutex", "pipe", ...).
pub fn block_current_for(waiting_on: &'static str, park: impl FnOnce(ThreadId) -> bool) {
    park_current_if(park, true, waiting_on);
}

/// [`block_current_if`], telling the strand hook (`notify`) or not (a
/// group's own switch, [`hand_off`]).
fn park_current_if(park: impl FnOnce(ThreadId) -> bool, notify: bool, waiting_on: &'static str) {
    let were_enabled = cpu::are_interrupts_enabled();
    cpu::disable_interrupts();
    // `current()`, not the scheduler's field under its lock: the same
    // value (it names the running thread), one lock fewer per block.
    let me = current();
    if park(me) {
        let next = with_scheduler(|scheduler| {
            let now = timer::uptime_ns();
            let mut is_grouped = false;
            if let Some(thread) = scheduler.threads.get_mut(me.0) {
                thread.enter_at(ThreadState::Blocked, waiting_on, now);
                thread.voluntary_switches += 1;
                is_grouped = thread.is_grouped;
            }
            // A grouped thread's hook runs before the next thread is
            // picked, so a thread the hook readies can be that one.
            (!(notify && is_grouped)).then(|| scheduler.pick_next_at(now))
        });
        let next = next.unwrap_or_else(|| {
            notify_block(me);
            with_scheduler(Scheduler::pick_next)
        });
        switch_if(next);
    }
    if were_enabled {
        cpu::enable_interrupts();
    }
}

/// Makes a blocked thread ready again (no effect on other states). A
/// parked grouped thread is not made ready: [`StrandHooks::on_wake`] is
/// told, and its group readies it with [`resume`] when it chooses.
pub fn wake(id: ThreadId) {
    // The hook is told after the lock is released (it wakes the kernel's
    // keeper). Should the thread be readied by its group and park again
    // in between, the note reads as a wake of the new park: a spurious
    // wake-up, which every waiter here tolerates already.
    if with_scheduler(|scheduler| scheduler.wake_or_defer(id)) {
        notify_wake(id);
    }
}

/// [`wake`] from an interrupt handler, for a thread that serves a device:
/// when the processor is idle, the thread runs at once (as the timer tick
/// preempts the idle thread) instead of at the next tick, a millisecond
/// later. Runs in interrupt context.
pub fn wake_from_interrupt(id: ThreadId) {
    let next = {
        let Some(mut guard) = SCHEDULER.try_lock() else {
            return;
        };
        let Some(scheduler) = guard.as_mut() else {
            return;
        };
        if scheduler.wake_or_defer(id) {
            // A grouped thread is its group's to run; not for devices.
            return;
        }
        scheduler.leave_idle()
    };
    switch_if(next);
}

/// Makes a blocked thread ready again, grouped or not, without the hook:
/// a group giving its processor to one of its strands.
pub fn resume(id: ThreadId) {
    with_scheduler(|scheduler| scheduler.make_ready(id));
}

/// Starts a wait that [`block_prepared`] ends: from now on a [`wake`] of
/// the running thread is not lost, even one that comes before it parks.
/// The pattern, free of lost wake-ups: `prepare_to_wait`, register on the
/// [`WaitQueue`]s of the events awaited, look at the condition, then
/// `block_prepared` unless it holds (and unregister after).
pub fn prepare_to_wait() {
    with_scheduler(|scheduler| {
        let me = scheduler.current;
        if let Some(thread) = scheduler.threads.get_mut(me.0) {
            thread.wake_pending = false;
        }
    });
}

/// Parks the running thread until a [`wake`] (a [`WaitQueue`]'s, or a
/// signal's) or, with a `deadline`, until that uptime (ns); returns at
/// once if it was woken since [`prepare_to_wait`] or the deadline has
/// passed. `waiting_on` says what for (the lockup watchdog's reports).
/// Wake-ups may be spurious: the caller looks at its condition again.
pub fn block_prepared(waiting_on: &'static str, deadline: Option<u64>) {
    let were_enabled = cpu::are_interrupts_enabled();
    cpu::disable_interrupts();
    let now = timer::uptime_ns();
    let parked = with_scheduler(|scheduler| {
        let me = scheduler.current;
        let thread = scheduler.threads.get_mut(me.0)?;
        if core::mem::take(&mut thread.wake_pending) {
            return None;
        }
        match deadline {
            Some(deadline) if deadline <= now => return None,
            Some(deadline) => {
                thread.wake_at = Some(deadline);
                thread.enter_at(ThreadState::Sleeping, waiting_on, now);
            }
            None => thread.enter_at(ThreadState::Blocked, waiting_on, now),
        }
        thread.voluntary_switches += 1;
        let is_grouped = thread.is_grouped;
        if let Some(deadline) = deadline {
            scheduler.sleepers.push(Reverse((deadline, me)));
        }
        // As in `park_current_if`: a grouped thread's hook runs before
        // the next thread is picked.
        Some(if is_grouped {
            Err(me)
        } else {
            Ok(scheduler.pick_next_at(now))
        })
    });
    match parked {
        None => {}
        Some(Ok(next)) => switch_if(next),
        Some(Err(me)) => {
            notify_block(me);
            switch_if(with_scheduler(Scheduler::pick_next));
        }
    }
    if were_enabled {
        cpu::enable_interrupts();
    }
}

/// Runs a thread an interrupt handler readied at once if the processor
/// was idle (as the timer tick would, a millisecond later). Runs in
/// interrupt context, holding no lock.
pub(crate) fn leave_idle_from_interrupt() {
    let next = {
        let Some(mut guard) = SCHEDULER.try_lock() else {
            return;
        };
        let Some(scheduler) = guard.as_mut() else {
            return;
        };
        scheduler.leave_idle()
    };
    switch_if(next);
}

/// [`wake`] for an interrupt handler's use: never waits for the
/// scheduler's lock (false if it was taken, which cannot happen on one
/// processor unless the handler interrupted the scheduler itself).
pub(crate) fn wake_in_interrupt(id: ThreadId) -> bool {
    let Some(mut guard) = SCHEDULER.try_lock() else {
        return false;
    };
    let Some(scheduler) = guard.as_mut() else {
        return false;
    };
    // A grouped thread is its group's to run; not for devices.
    let _ = scheduler.wake_or_defer(id);
    true
}

/// Sleeps for at least `ms` milliseconds.
pub fn sleep_ms(ms: u64) {
    // A deadline in time rather than ticks: a sleep that starts late in
    // a tick would otherwise count that tick as a whole one, and end
    // early.
    let wake_at = timer::uptime_ns().saturating_add(ms.max(1).saturating_mul(1_000_000));
    let were_enabled = cpu::are_interrupts_enabled();
    cpu::disable_interrupts();
    let next = with_scheduler(|scheduler| {
        let now = timer::uptime_ns();
        let me = scheduler.current;
        scheduler.sleepers.push(Reverse((wake_at, me)));
        let mut is_grouped = false;
        if let Some(thread) = scheduler.threads.get_mut(me.0) {
            thread.wake_at = Some(wake_at);
            thread.enter_at(ThreadState::Sleeping, "sleep", now);
            thread.voluntary_switches += 1;
            is_grouped = thread.is_grouped;
        }
        if is_grouped {
            Err(me)
        } else {
            Ok(scheduler.pick_next_at(now))
        }
    });
    // As in `park_current_if`: a grouped sleeper's hook, then the pick.
    let next = next.unwrap_or_else(|me| {
        notify_block(me);
        with_scheduler(Scheduler::pick_next)
    });
    switch_if(next);
    if were_enabled {
        cpu::enable_interrupts();
    }
}

/// Ends the running thread with `reason`. Never returns.
pub fn exit(reason: ExitReason) -> ! {
    cpu::disable_interrupts();
    let completion = with_scheduler(|scheduler| {
        let me = scheduler.current;
        let thread = scheduler
            .threads
            .remove(me.0)
            .expect("running thread not in the table");
        scheduler.ready.retain(|&id| id != me);
        thread.completion
    });
    // Joiners are made ready before the next thread is picked, so a joiner
    // runs at once rather than after the idle thread's next interrupt.
    *completion.reason.lock() = Some(reason);
    let joiners = core::mem::take(&mut *completion.joiners.lock());
    for joiner in joiners {
        wake(joiner);
    }
    drop(completion);
    let next = with_scheduler(|scheduler| {
        scheduler
            .pick_next()
            .expect("the exiting thread was picked again")
    });
    context::exit_to(next)
}

/// Whether the running thread must not be stopped on a fault (the boot and
/// idle threads), or the scheduler is not running, or it is busy (a fault
/// inside the scheduler itself).
pub fn is_current_critical() -> bool {
    match SCHEDULER.try_lock() {
        Some(guard) => guard.as_ref().is_none_or(|scheduler| {
            scheduler
                .threads
                .get(scheduler.current.0)
                .is_none_or(|thread| thread.is_critical)
        }),
        None => true,
    }
}

/// The timer tick: accounts CPU time, wakes sleepers, preempts the running
/// thread when its time slice is used up. Runs in interrupt context.
pub fn on_tick() {
    let now = timer::uptime_ns();
    // Grouped sleepers whose time came: their hook is told after the lock
    // is released (it may wake a thread). Empty, it does not allocate.
    let mut deferred = Vec::new();
    let next = {
        let Some(mut guard) = SCHEDULER.try_lock() else {
            return;
        };
        let Some(scheduler) = guard.as_mut() else {
            return;
        };
        let current = scheduler.current;
        while let Some(&Reverse((wake_at, id))) = scheduler.sleepers.peek() {
            if wake_at > now {
                break;
            }
            scheduler.sleepers.pop();
            // Only the sleep this entry was made for ends here: a thread
            // woken early may be parked again since, for something else.
            let is_due = scheduler.threads.get(id.0).is_some_and(|thread| {
                thread.state == ThreadState::Sleeping && thread.wake_at == Some(wake_at)
            });
            if is_due && scheduler.wake_or_defer(id) {
                deferred.push(id);
            }
        }
        scheduler.slice_left = scheduler.slice_left.saturating_sub(1);
        scheduler.charge_rank(current);
        let is_idle = current == scheduler.idle;
        let may_preempt = PREEMPT_OFF.load(Ordering::Relaxed) == 0;
        if may_preempt && !scheduler.ready.is_empty() && (is_idle || scheduler.slice_left == 0) {
            scheduler.requeue_current(now);
            scheduler.pick_next_at(now)
        } else {
            None
        }
    };
    for id in deferred {
        notify_wake(id);
    }
    switch_if(next);
}

/// A snapshot of all threads, by id.
pub fn threads() -> Vec<ThreadInfo> {
    let mut threads: Vec<ThreadInfo> = with_scheduler(|scheduler| {
        scheduler
            .threads
            .iter()
            .map(|(id, thread)| ThreadInfo {
                id: ThreadId(id),
                name: thread.name.clone(),
                state: thread.state,
                cpu_ticks: thread.cpu_ticks(),
                waiting_on: thread.waiting_on,
            })
            .collect()
    });
    threads.sort_unstable_by_key(|thread| thread.id);
    threads
}

/// Calls `visit` on every thread, the running one first (the others in no
/// particular order), without taking the scheduler's lock if it is held
/// (then returns `false` and visits nothing) and without allocating: the
/// lockup watchdog calls it from a non-maskable interrupt, which may have
/// interrupted anything.
pub fn for_each_thread(mut visit: impl FnMut(&ThreadView<'_>)) -> bool {
    let Some(guard) = SCHEDULER.try_lock() else {
        return false;
    };
    let Some(scheduler) = guard.as_ref() else {
        return false;
    };
    fn view(id: ThreadId, thread: &Thread, idle: ThreadId) -> ThreadView<'_> {
        ThreadView {
            id,
            name: &thread.name,
            state: thread.state,
            waiting_on: thread.waiting_on,
            since_ns: thread.since_ns,
            cpu_ticks: thread.cpu_ns / NS_PER_TICK,
            is_idle: id == idle,
        }
    }
    let current = scheduler.current;
    if let Some(thread) = scheduler.threads.get(current.0) {
        visit(&view(current, thread, scheduler.idle));
    }
    for (id, thread) in scheduler.threads.iter().filter(|&(id, _)| id != current.0) {
        visit(&view(ThreadId(id), thread, scheduler.idle));
    }
    true
}

/// Sections that turned preemption off and have not turned it back on.
static PREEMPT_OFF: AtomicU64 = AtomicU64::new(0);

/// While alive, the timer tick does not switch threads (interrupts stay
/// on, unlike under an `IrqMutex`): Linux's `preempt_disable`. A thread
/// that spins in such a section stops every other thread; the lockup
/// watchdog reports it.
pub struct PreemptionOff(());

/// Turns preemption off until the returned guard is dropped (sections
/// nest).
pub fn preemption_off() -> PreemptionOff {
    PREEMPT_OFF.fetch_add(1, Ordering::Relaxed);
    PreemptionOff(())
}

impl Drop for PreemptionOff {
    fn drop(&mut self) {
        PREEMPT_OFF.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Sections with preemption off now ([`preemption_off`]).
pub fn preemption_off_depth() -> u64 {
    PREEMPT_OFF.load(Ordering::Relaxed)
}

/// Sets how the scheduler treats thread `id` from now on (its next turn
/// on the processor, or its next place in the ready queue); false if it
/// does not exist.
pub fn set_scheduling(id: ThreadId, scheduling: Scheduling) -> bool {
    with_scheduler(|scheduler| {
        let Some(thread) = scheduler.threads.get_mut(id.0) else {
            return false;
        };
        let was = core::mem::replace(&mut thread.scheduling, scheduling);
        let state = thread.state;
        if state == ThreadState::Ready && was.rank != scheduling.rank {
            // Requeued at its new rank's place.
            scheduler.ready.retain(|&ready| ready != id);
            scheduler.enqueue(id, scheduling.rank);
        }
        if id == scheduler.current {
            scheduler.slice_left = scheduler.slice_left.min(scheduling.countdown());
        }
        true
    })
}

/// How the scheduler treats thread `id`, if it exists.
pub fn scheduling(id: ThreadId) -> Option<Scheduling> {
    with_scheduler(|scheduler| scheduler.threads.get(id.0).map(|thread| thread.scheduling))
}

/// Thread `id`'s state and the timer ticks it has run, if it exists (the
/// figures `/proc` and `times` report, without copying the name as
/// [`threads`] does).
pub fn thread_usage(id: ThreadId) -> Option<(ThreadState, u64)> {
    with_scheduler(|scheduler| {
        scheduler
            .threads
            .get(id.0)
            .map(|thread| (thread.state, thread.cpu_ticks()))
    })
}

/// The processor time thread `id` has run, in nanoseconds, its current
/// run included, if it exists (what processor-time clocks and timers
/// read).
pub fn thread_cpu_ns(id: ThreadId) -> Option<u64> {
    with_scheduler(|scheduler| scheduler.threads.get(id.0).map(Thread::cpu_ns_now))
}

/// How often thread `id` has left the processor since it started:
/// parked (blocked or sleeping: voluntary) and still runnable (preempted
/// or yielding: involuntary), Linux's `voluntary_ctxt_switches` and
/// `nonvoluntary_ctxt_switches`. A thread that waits without polling
/// adds one voluntary switch per wait.
pub fn thread_switches(id: ThreadId) -> Option<(u64, u64)> {
    with_scheduler(|scheduler| {
        scheduler.threads.get(id.0).map(|thread| {
            // Every time it was scheduled ended in a park (voluntary)
            // or with it still runnable, but for the run going on.
            let is_on_processor = id == scheduler.current;
            let involuntary = thread
                .times_scheduled
                .saturating_sub(thread.voluntary_switches + u64::from(is_on_processor));
            (thread.voluntary_switches, involuntary)
        })
    })
}

/// Timer ticks the idle thread has run: the time the processor had
/// nothing to do.
pub fn idle_ticks() -> u64 {
    with_scheduler(|scheduler| {
        let idle = scheduler.idle;
        scheduler
            .threads
            .get(idle.0)
            .map_or(0, |thread| thread.cpu_ticks())
    })
}

/// Context switches since [`init`].
pub fn context_switches() -> u64 {
    with_scheduler(|scheduler| scheduler.context_switches)
}
