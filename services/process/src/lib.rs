//! Processes: an address map, a parent, children, and how it ended.
//!
//! A process runs one or more user threads (`clone` with `CLONE_VM |
//! CLONE_THREAD`). It is made by the kernel (parent 0: the kernel, which
//! learns how it ended from the thread it started) or by `fork`, which
//! gives the child a copy-on-write copy of the parent's memory
//! (`vm::AddressMap::fork`), or runs it in the parent's memory itself
//! (`clone(CLONE_VM)`, `vfork`: the map is shared, and goes with its last
//! holder). When its last thread ends, it lets go of its memory at once;
//! the record stays, a zombie, until the parent waits for it (`wait4`).
//!
//! A child may ask to be traced by its parent (`ptrace`): each signal it
//! is about to take stops it until the parent resumes it
//! ([`trace_stop`], [`resume_tracee`]). A process whose parent
//! ended first is an orphan: nobody will wait for it, so its record goes
//! as soon as it ends.
//!
//! `kill` marks a process; the mark ends it the next time it leaves the
//! kernel for user mode (a system call's return, or an interrupt or trap
//! taken in user mode), or wakes it from `wait4` to do so.
//!
//! What a personality keeps of a process (its process group, descriptors,
//! signal state) and what it makes of a child's end (`SIGCHLD`) is not
//! here: the table tells the [`ProcessObserver`] the kernel installs at
//! boot ([`set_observer`]), so this crate depends on no personality.
#![no_std]

extern crate alloc;

use alloc::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
    vec::Vec,
};
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use hal::sync::IrqMutex;
use linux_abi::{resource::Rusage, signal, time::Timeval};
use sched::{sync::Condvar, Fault};

/// A process's memory: the Unix model (`vm`) over `hal`'s page tables.
pub type UserAddressMap = vm::AddressMap<hal::address_space::AddressSpace>;

/// An address map as processes hold it: one process's, or several's
/// (`clone(CLONE_VM)` without `CLONE_THREAD`: a child that runs in its
/// parent's memory, as `vfork` and `posix_spawn` make). It goes when the
/// last process holding it ends or replaces it (`execve`).
type SharedMemory = Arc<IrqMutex<UserAddressMap>>;

/// What the rest of the kernel learns of processes, and the few answers
/// the table needs from it: installed once at boot by the kernel, which
/// forwards to the personality, the interval timers and the tracer.
pub trait ProcessObserver: Sync {
    /// Process `pid` was made, a child of `parent`: before it runs, so a
    /// forked child's first call finds its descriptors.
    fn created(&self, pid: u64, parent: u64);
    /// The thread on `strand` of process `pid` ended: its thread id if it
    /// had been attached to the process.
    fn thread_ended(&self, strand: u64, pid: u64, tid: Option<u64>);
    /// Process `pid`'s process group, while its personality knows it.
    fn process_group(&self, pid: u64) -> Option<u64>;
    /// Process `pid` ended (its last thread did) or was discarded before
    /// it ran: what was kept for it elsewhere goes.
    fn ended(&self, pid: u64);
    /// Child `child` of `parent` ended with `end` (`SIGCHLD`).
    fn child_ended(&self, parent: u64, child: u64, end: End);
    /// Child `child` of `parent` stopped or continued: `code` is
    /// `CLD_STOPPED` or `CLD_CONTINUED`, `signal` the cause.
    fn child_stopped(&self, parent: u64, child: u64, code: i32, signal: u8);
    /// Whether the running thread has a signal to take (which interrupts
    /// a wait).
    fn interrupted(&self) -> bool;
    /// A user page fault at `address` on `strand` found no region: the
    /// handlers of the bad-address event may still resolve it (true).
    fn bad_address(&self, strand: u64, address: u64, error_code: u64) -> bool;
}

/// The observer [`set_observer`] installed.
static OBSERVER: spin::Once<&'static dyn ProcessObserver> = spin::Once::new();

/// Installs what the table tells of its processes (once, at boot, before
/// the first process is made; a second call is ignored).
pub fn set_observer(observer: &'static dyn ProcessObserver) {
    OBSERVER.call_once(|| observer);
}

/// The installed observer.
///
/// # Panics
/// If none is installed: the kernel installs it before it makes a
/// process, so a process operation without one is a wiring bug.
fn observer() -> &'static dyn ProcessObserver {
    *OBSERVER
        .get()
        .expect("the process table is used before the kernel installed its observer")
}

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// It called `exit` with this status (the low 8 bits are what a
    /// parent's `wait4` sees).
    Exited(i64),
    /// A signal ended it: a fault (with the fault) or `kill`.
    Killed {
        /// The signal.
        signal: u8,
        /// The CPU exception, if a fault ended it.
        fault: Option<Fault>,
    },
}

impl End {
    /// The end as Linux's wait status word (`WEXITSTATUS`/`WTERMSIG`).
    pub fn wait_status(self) -> u32 {
        match self {
            End::Exited(status) => ((status as u32) & 0xff) << 8,
            End::Killed { signal, .. } => u32::from(signal) & 0x7f,
        }
    }
}

/// The conventional name of `signal` (for reports).
pub fn signal_name(signal: u8) -> &'static str {
    signal::name(signal).unwrap_or("a signal")
}

/// The signal a CPU exception in user mode ends a program with (as Linux
/// sends it).
pub fn signal_for_fault(vector: u64) -> u8 {
    match vector {
        0 | 16 | 19 => signal::SIGFPE,
        1 | 3 => signal::SIGTRAP,
        6 => signal::SIGILL,
        17 => signal::SIGBUS,
        _ => signal::SIGSEGV,
    }
}

/// What changes over a process's life, under its lock.
struct State {
    /// The parent's process id; 0 for the kernel.
    parent: u64,
    /// Set when the process has ended.
    end: Option<End>,
    /// Children not yet waited for.
    children: BTreeSet<u64>,
    /// A signal sent by `kill`, not yet acted on.
    kill: Option<u8>,
    /// The parent ended first: nobody will wait for this process.
    orphan: bool,
    /// Threads running the process's program.
    threads: usize,
    /// Stopped by this signal (`SIGSTOP`, `SIGTSTP`, ...) until continued.
    stopped: Option<u8>,
    /// A change a waiting parent has not been told of yet (`WUNTRACED`,
    /// `WCONTINUED`).
    unreported: Option<Change>,
    /// The process group it was in when it ended (its personality's
    /// record goes then; a parent may still wait for the group).
    group_at_end: Option<u64>,
    /// Traced by its parent (`PTRACE_TRACEME`) until the parent ends or
    /// detaches: its stops are reported to every wait of the parent, and
    /// each signal it takes stops it first.
    traced: bool,
    /// Stopped for its tracer before taking this signal (a
    /// signal-delivery stop), until the tracer resumes it.
    trace_stop: Option<u8>,
    /// What the tracer resumed it with: the signal to take instead (0:
    /// none).
    trace_resume: Option<u8>,
}

/// How a child changed, as `wait4` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// It ended.
    Ended(End),
    /// A signal stopped it.
    Stopped(u8),
    /// `SIGCONT` continued it.
    Continued,
}

impl Change {
    /// The change as Linux's wait status word.
    pub fn wait_status(self) -> u32 {
        match self {
            Change::Ended(end) => end.wait_status(),
            Change::Stopped(signal) => (u32::from(signal) << 8) | 0x7f,
            Change::Continued => 0xffff,
        }
    }
}

/// What a process runs, as `/proc` shows it: set when the kernel starts
/// a program and at each `execve`, inherited by `fork`.
#[derive(Clone, Default)]
pub struct Program {
    /// The command name (Linux's `comm`): the program file's base name, at
    /// most 15 bytes.
    pub command: Vec<u8>,
    /// The arguments, each followed by a NUL (`/proc/PID/cmdline`).
    pub arguments: Vec<u8>,
    /// The environment, each `NAME=value` followed by a NUL
    /// (`/proc/PID/environ`).
    pub environment: Vec<u8>,
    /// The program file's absolute path, if it is a file of the tree.
    pub executable: Option<Vec<u8>>,
}

/// Bytes of a command name (`TASK_COMM_LEN` less its NUL).
const COMMAND_BYTES: usize = 15;

impl Program {
    /// The program started as `path` (the path it was asked for: its base
    /// name is the command) with `arguments` and `environment`, from file
    /// `executable`.
    pub fn new(
        path: &[u8],
        arguments: &[&[u8]],
        environment: &[&[u8]],
        executable: Option<Vec<u8>>,
    ) -> Program {
        let base = path.rsplit(|&byte| byte == b'/').next().unwrap_or(path);
        let joined = |strings: &[&[u8]]| {
            let mut joined = Vec::new();
            for string in strings {
                joined.extend_from_slice(string);
                joined.push(0);
            }
            joined
        };
        Program {
            command: base[..base.len().min(COMMAND_BYTES)].to_vec(),
            arguments: joined(arguments),
            environment: joined(environment),
            executable,
        }
    }
}

/// Processor time and memory a process and its children used, for
/// `times`, `getrusage` and `/proc/PID/stat`.
#[derive(Clone, Copy, Default)]
pub struct Usage {
    /// Timer ticks run by its threads that have ended.
    pub ended_threads_ticks: u64,
    /// Timer ticks of its children that ended and were waited for (theirs
    /// and their own children's).
    pub children_ticks: u64,
    /// Minor faults of those children.
    pub children_minor_faults: u64,
    /// The most pages any of those children had mapped when it ended.
    pub children_max_resident_pages: u64,
    /// Pages it had mapped when it ended.
    pub final_resident_pages: u64,
    /// Minor faults it had when it ended.
    pub final_minor_faults: u64,
}

impl Usage {
    /// As a `struct rusage`: the processor time as user time,
    /// the largest resident size in KiB, the minor faults; of the process
    /// and the children it waited for (what a parent's `wait4` reports).
    pub fn rusage_with_children(&self) -> Rusage {
        let ns = (self.ended_threads_ticks + self.children_ticks)
            * (1_000_000_000 / hal::timer::TICK_HZ);
        let resident = self
            .final_resident_pages
            .max(self.children_max_resident_pages);
        let faults = self.final_minor_faults + self.children_minor_faults;
        Rusage {
            utime: Timeval::from_nanoseconds(ns),
            // Pages of 4 KiB, in kilobytes.
            maxrss: (resident * 4) as i64,
            minflt: faults as i64,
            ..Rusage::default()
        }
    }
}

/// A process.
pub struct Process {
    id: u64,
    /// When it was made, in nanoseconds since boot.
    started_ns: u64,
    /// The memory; `None` once the process has ended. Lock order: this
    /// lock, then the map's own.
    memory: IrqMutex<Option<SharedMemory>>,
    /// Whether it no longer runs in the memory it was made with: it
    /// replaced it (`execve`) or ended. What a `vfork` parent waits for
    /// ([`wait_for_vfork_child`]).
    has_left_memory: core::sync::atomic::AtomicBool,
    state: spin::Mutex<State>,
    /// What it runs.
    program: spin::Mutex<Program>,
    /// What it has used.
    usage: spin::Mutex<Usage>,
}

impl Process {
    /// Its process group: its personality's record while it runs, the
    /// last one after it ended.
    pub fn group(&self) -> Option<u64> {
        observer()
            .process_group(self.id)
            .or(self.state.lock().group_at_end)
    }

    /// The process identifier.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The parent's identifier (0: the kernel).
    pub fn parent(&self) -> u64 {
        self.state.lock().parent
    }

    /// How it ended, if it has.
    pub fn end(&self) -> Option<End> {
        self.state.lock().end
    }

    /// Replaces the process's address map (`execve`) and returns the old
    /// one, for the caller to drop once the thread runs in the new one
    /// (`None` if another process still runs in it). A parent waiting
    /// for this child's `vfork` goes on.
    pub fn replace_memory(&self, memory: UserAddressMap) -> Option<UserAddressMap> {
        let old = self.memory.lock().replace(Arc::new(IrqMutex::new(memory)));
        self.left_memory();
        old.and_then(|old| Arc::try_unwrap(old).ok())
            .map(IrqMutex::into_inner)
    }

    /// The process no longer runs in the memory it was made with: wakes
    /// a parent waiting for its `vfork`.
    fn left_memory(&self) {
        self.has_left_memory.store(true, Ordering::SeqCst);
        let _lock = CHANGED_LOCK.lock();
        CHANGED.notify_all();
    }

    /// What names its memory among all address maps, the same for every
    /// process running in it (`clone(CLONE_VM)`): where private futex
    /// words are keyed. 0 once it has ended.
    pub fn memory_identity(&self) -> usize {
        self.memory
            .lock()
            .as_ref()
            .map_or(0, |memory| Arc::as_ptr(memory) as usize)
    }

    /// When it was made, in nanoseconds since boot.
    pub fn started_ns(&self) -> u64 {
        self.started_ns
    }

    /// What it runs.
    pub fn program(&self) -> Program {
        self.program.lock().clone()
    }

    /// It runs `program` now (`execve`, or the kernel started it).
    pub fn set_program(&self, program: Program) {
        *self.program.lock() = program;
    }

    /// What it and its waited-for children have used.
    pub fn usage(&self) -> Usage {
        *self.usage.lock()
    }

    /// Threads running its program.
    pub fn threads(&self) -> usize {
        self.state.lock().threads
    }

    /// Timer ticks its threads have run, ended ones included.
    pub fn cpu_ticks(&self) -> u64 {
        let running: u64 = strands_of(self.id)
            .into_iter()
            .filter_map(|strand| sched::thread_usage(sched::ThreadId(strand)))
            .map(|(_, ticks)| ticks)
            .sum();
        self.usage.lock().ended_threads_ticks + running
    }

    /// Nanoseconds its threads have run, ended ones included (those
    /// counted in whole ticks, as they were kept).
    pub fn cpu_ns(&self) -> u64 {
        let running: u64 = strands_of(self.id)
            .into_iter()
            .filter_map(|strand| sched::thread_cpu_ns(sched::ThreadId(strand)))
            .sum();
        let ended = self.usage.lock().ended_threads_ticks;
        ended * (1_000_000_000 / hal::timer::TICK_HZ) + running
    }

    /// Times its live threads left the processor parked (voluntary) and
    /// still runnable (involuntary): `/proc/PID/status`'s context switch
    /// counts (a thread that waits without polling adds one voluntary
    /// switch per wait).
    pub fn context_switches(&self) -> (u64, u64) {
        strands_of(self.id)
            .into_iter()
            .filter_map(|strand| sched::thread_switches(sched::ThreadId(strand)))
            .fold((0, 0), |(voluntary, involuntary), (more, other)| {
                (voluntary + more, involuntary + other)
            })
    }

    /// Whether it runs as `/proc/PID/stat` tells, which on Linux is the
    /// state of its first thread (the thread group's leader): whether
    /// that thread is on the processor or ready for it; once the first
    /// thread has ended, whether any other is. A thread counted
    /// ([`add_thread`]) but not yet attached has not first run: it is
    /// ready, as a new child is on Linux. (LTP's futex tests wait for the
    /// process to read as sleeping while its first thread waits and
    /// another runs; its semaphore tests, for a just-forked child to.)
    pub fn is_running(&self) -> bool {
        let is_runnable = |strand: u64| {
            matches!(
                sched::thread_usage(sched::ThreadId(strand)),
                Some((sched::ThreadState::Running | sched::ThreadState::Ready, _))
            )
        };
        let threads = threads_of_process(self.id);
        if threads.len() < self.threads() {
            return true;
        }
        match threads.iter().find(|&&(tid, _)| tid == self.id) {
            Some(&(_, leader)) => is_runnable(leader),
            None => threads.iter().any(|&(_, strand)| is_runnable(strand)),
        }
    }

    /// Runs `f` on the process's memory, unless it has ended. `f` must not
    /// touch user memory (a fault there would need this lock).
    pub fn with_memory<R>(&self, f: impl FnOnce(&mut UserAddressMap) -> R) -> Option<R> {
        self.memory
            .lock()
            .as_ref()
            .map(|memory| f(&mut memory.lock()))
    }
}

/// Every process not yet waited for, by identifier.
static TABLE: spin::Mutex<BTreeMap<u64, Arc<Process>>> = spin::Mutex::new(BTreeMap::new());
/// A user thread: its process, its thread id (the process id for the
/// first thread, as in Linux), and where to clear and wake when it ends
/// (`set_tid_address`, `CLONE_CHILD_CLEARTID`).
struct ThreadRecord {
    process: Arc<Process>,
    tid: u64,
    clear_child_tid: u64,
    /// The status it passed to `exit`, if it called it.
    exit_status: Option<i64>,
}

/// Each user thread, by strand.
static BY_STRAND: spin::Mutex<BTreeMap<u64, ThreadRecord>> = spin::Mutex::new(BTreeMap::new());
/// The last process identifier handed out.
static LAST_ID: AtomicU64 = AtomicU64::new(0);
/// Kills sent and not yet acted on (so the return to user mode checks the
/// table only when one is pending).
static PENDING_KILLS: AtomicU64 = AtomicU64::new(0);
/// Announces ends and kills to threads in `wait4`.
static CHANGED: Condvar = Condvar::new();
/// The mutex `CHANGED` is waited on with.
static CHANGED_LOCK: sched::sync::Mutex<()> = sched::sync::Mutex::new(());

/// Processes made since boot.
static CREATED: AtomicU64 = AtomicU64::new(0);

/// Processes made since boot (forks and programs the kernel started).
pub fn created() -> u64 {
    CREATED.load(Ordering::Relaxed)
}

/// The last process or thread identifier handed out.
pub fn last_id() -> u64 {
    LAST_ID.load(Ordering::Relaxed)
}

/// A new process identifier, for a process made later by [`create`] (so
/// extensions can be attached to it before it runs).
pub fn reserve_id() -> u64 {
    LAST_ID.fetch_add(1, Ordering::Relaxed) + 1
}

/// Makes process `id` (from [`reserve_id`]) with `memory`, a child of
/// `parent` (0: the kernel).
pub fn create(id: u64, parent: u64, memory: UserAddressMap) -> Arc<Process> {
    create_in(id, parent, Arc::new(IrqMutex::new(memory)))
}

/// Makes process `id` (from [`reserve_id`]), a child of `parent`, that
/// runs in `parent`'s memory (`clone(CLONE_VM)` without
/// `CLONE_THREAD`); `None` if the parent has ended.
pub fn create_in_parent_memory(id: u64, parent: &Process) -> Option<Arc<Process>> {
    let memory = parent.memory.lock().clone()?;
    Some(create_in(id, parent.id, memory))
}

/// Makes process `id`, a child of `parent`, running in `memory`.
fn create_in(id: u64, parent: u64, memory: SharedMemory) -> Arc<Process> {
    let parent_id = parent;
    CREATED.fetch_add(1, Ordering::Relaxed);
    // A forked child runs its parent's program.
    let program = get(parent)
        .map(|parent| parent.program())
        .unwrap_or_default();
    let process = Arc::new(Process {
        id,
        started_ns: hal::timer::uptime_ns(),
        program: spin::Mutex::new(program),
        usage: spin::Mutex::new(Usage::default()),
        memory: IrqMutex::new(Some(memory)),
        has_left_memory: core::sync::atomic::AtomicBool::new(false),
        state: spin::Mutex::new(State {
            parent,
            end: None,
            children: BTreeSet::new(),
            kill: None,
            orphan: false,
            threads: 0,
            stopped: None,
            unreported: None,
            group_at_end: None,
            traced: false,
            trace_stop: None,
            trace_resume: None,
        }),
    });
    let parent = {
        let mut table = TABLE.lock();
        table.insert(id, process.clone());
        table.get(&parent).cloned()
    };
    if let Some(parent) = parent {
        parent.state.lock().children.insert(id);
    }
    // Before the process runs: a forked child's first call finds its
    // descriptors.
    observer().created(id, parent_id);
    process
}

/// Processes not yet waited for (running or zombies).
pub fn count() -> usize {
    TABLE.lock().len()
}

/// The identifiers of the processes not yet waited for, lowest first.
pub fn ids() -> Vec<u64> {
    TABLE.lock().keys().copied().collect()
}

/// The process `id`, if it exists and has not been waited for.
pub fn get(id: u64) -> Option<Arc<Process>> {
    TABLE.lock().get(&id).cloned()
}

/// Records that `strand` runs `process`'s program as thread `tid`, which
/// clears and wakes `clear_child_tid` (if not 0) when it ends.
pub fn attach(strand: u64, process: &Arc<Process>, tid: u64, clear_child_tid: u64) {
    BY_STRAND.lock().insert(
        strand,
        ThreadRecord {
            process: process.clone(),
            tid,
            clear_child_tid,
            exit_status: None,
        },
    );
}

/// Counts a thread about to start in `process` (before it runs, so the
/// process cannot end between its creation and its first instruction);
/// false if the process has already ended.
pub fn add_thread(process: &Process) -> bool {
    let mut state = process.state.lock();
    if state.end.is_some() {
        return false;
    }
    state.threads += 1;
    true
}

/// Takes back [`add_thread`] for a thread that could not be started.
pub fn thread_not_started(process: &Process) {
    let mut state = process.state.lock();
    state.threads = state.threads.saturating_sub(1);
}

/// Records that `strand`'s thread called `exit(status)`: if it is the
/// last thread, that is how the process ended.
pub fn set_thread_exit(strand: u64, status: i64) {
    if let Some(record) = BY_STRAND.lock().get_mut(&strand) {
        record.exit_status = Some(status);
    }
}

/// The process strand `strand` runs a program of, if any.
pub fn of_strand(strand: u64) -> Option<Arc<Process>> {
    BY_STRAND
        .lock()
        .get(&strand)
        .map(|record| record.process.clone())
}

/// The identifier of the process strand `strand` runs a program of, if
/// any: [`of_strand`]'s answer without taking (and dropping) a reference
/// to the process, for the hot paths that need only its number (signal
/// delivery, the system-call guard's slow path).
pub fn pid_of_strand(strand: u64) -> Option<u64> {
    BY_STRAND
        .lock()
        .get(&strand)
        .map(|record| record.process.id)
}

/// The process identifier and thread id of strand `strand`, if it runs
/// a user program: [`pid_of_strand`] and [`tid_of`] in one look at the
/// table.
pub fn ids_of_strand(strand: u64) -> Option<(u64, u64)> {
    BY_STRAND
        .lock()
        .get(&strand)
        .map(|record| (record.process.id, record.tid))
}

/// The thread id of strand `strand`, if it runs a user program.
pub fn tid_of(strand: u64) -> Option<u64> {
    BY_STRAND.lock().get(&strand).map(|record| record.tid)
}

/// Sets where `strand`'s thread id is cleared when it ends
/// (`set_tid_address`).
pub fn set_clear_child_tid(strand: u64, address: u64) {
    if let Some(record) = BY_STRAND.lock().get_mut(&strand) {
        record.clear_child_tid = address;
    }
}

/// Where `strand`'s thread id is to be cleared when it ends (0: nowhere).
pub fn clear_child_tid(strand: u64) -> u64 {
    BY_STRAND
        .lock()
        .get(&strand)
        .map_or(0, |record| record.clear_child_tid)
}

/// The strands running `process`'s threads.
fn strands_of(id: u64) -> Vec<u64> {
    BY_STRAND
        .lock()
        .iter()
        .filter(|(_, record)| record.process.id == id)
        .map(|(&strand, _)| strand)
        .collect()
}

/// Ends the whole process with `end` (`exit_group`, a fault): the first
/// end recorded stands, and every other thread of it ends the next time
/// it would return to user mode (woken if it sleeps).
pub fn end_group(process: &Process, end: End) {
    set_end(process, end);
    {
        let mut state = process.state.lock();
        if state.threads <= 1 {
            return;
        }
        if state.kill.replace(signal::SIGKILL).is_none() {
            PENDING_KILLS.fetch_add(1, Ordering::Relaxed);
        }
    }
    let me = sched::current().0;
    for strand in strands_of(process.id) {
        if strand != me {
            sched::wake(sched::ThreadId(strand));
        }
    }
}

/// The process thread `tid` belongs to, if it is running.
pub fn process_of_thread(tid: u64) -> Option<u64> {
    BY_STRAND
        .lock()
        .values()
        .find(|record| record.tid == tid)
        .map(|record| record.process.id)
}

/// The strand running thread `tid`, if it is running.
pub fn strand_of_thread(tid: u64) -> Option<u64> {
    BY_STRAND
        .lock()
        .iter()
        .find(|(_, record)| record.tid == tid)
        .map(|(&strand, _)| strand)
}

/// The threads of process `id` that run: each one's thread id and
/// strand, lowest thread id first.
pub fn threads_of_process(id: u64) -> Vec<(u64, u64)> {
    let mut threads: Vec<(u64, u64)> = BY_STRAND
        .lock()
        .iter()
        .filter(|(_, record)| record.process.id == id)
        .map(|(&strand, record)| (record.tid, strand))
        .collect();
    threads.sort_unstable();
    threads
}

/// The strands running the threads of process `id`.
pub fn strands_of_process(id: u64) -> Vec<u64> {
    strands_of(id)
}

/// The process the running thread runs a program of, if any.
pub fn current() -> Option<Arc<Process>> {
    of_strand(sched::current().0)
}

/// Records how `process` ended, unless it already has an end (the first
/// cause wins: a fault while exiting does not rewrite the exit).
pub fn set_end(process: &Process, end: End) {
    let mut state = process.state.lock();
    if state.end.is_none() {
        state.end = Some(end);
    }
}

/// The thread of `process` on `strand` has ended. If it was the last,
/// the process has: its memory goes, its children become orphans, and its
/// parent learns of the end (an orphan's record goes at once); returns
/// whether it was.
pub fn thread_ended(strand: u64, process: &Arc<Process>) -> bool {
    // Its processor time stays counted in the process's.
    if let Some((_, ticks)) = sched::thread_usage(sched::ThreadId(strand)) {
        process.usage.lock().ended_threads_ticks += ticks;
    }
    let record = BY_STRAND.lock().remove(&strand);
    let exit_status = record.as_ref().and_then(|record| record.exit_status);
    // Its own signal state (mask, signals sent to it alone) goes with it.
    observer().thread_ended(strand, process.id, record.as_ref().map(|record| record.tid));
    drop(record);
    {
        let mut state = process.state.lock();
        state.threads = state.threads.saturating_sub(1);
        if state.threads > 0 {
            // Not the last thread: the process goes on.
            return false;
        }
        // Killed while stopped: no longer a stopped process.
        if state.stopped.take().is_some() {
            STOPPED_PROCESSES.fetch_sub(1, Ordering::Relaxed);
        }
        if state.end.is_none() {
            if let Some(status) = exit_status {
                state.end = Some(End::Exited(status));
            }
        }
    }
    // Dropped outside the lock: freeing an address space takes the frame
    // lock.
    let memory = process.memory.lock().take();
    if let Some(memory) = &memory {
        let memory = memory.lock();
        let mut usage = process.usage.lock();
        usage.final_resident_pages = memory.space().pages();
        usage.final_minor_faults = memory.faults_resolved();
    }
    // The last process in it frees it.
    drop(memory);
    process.left_memory();
    // Its descriptors close with its memory, when the last thread ends.
    process.state.lock().group_at_end = observer().process_group(process.id);
    observer().ended(process.id);
    let (children, orphan) = {
        let mut state = process.state.lock();
        if state.end.is_none() {
            state.end = Some(End::Killed {
                signal: signal::SIGKILL,
                fault: None,
            });
        }
        if state.kill.take().is_some() {
            PENDING_KILLS.fetch_sub(1, Ordering::Relaxed);
        }
        (core::mem::take(&mut state.children), state.orphan)
    };
    let (parent, end) = {
        let state = process.state.lock();
        (state.parent, state.end)
    };
    let mut gone: Vec<u64> = Vec::new();
    for child in children {
        if let Some(child) = get(child) {
            let mut state = child.state.lock();
            state.parent = 0;
            state.orphan = true;
            // Its tracer is gone: a trace stop ends (`ptrace`'s exit
            // detach), with the signal it stopped for.
            state.traced = false;
            if state.end.is_some() {
                gone.push(child.id);
            }
        }
    }
    if orphan {
        gone.push(process.id);
    }
    {
        let mut table = TABLE.lock();
        for id in gone {
            table.remove(&id);
        }
    }
    {
        let _lock = CHANGED_LOCK.lock();
        CHANGED.notify_all();
    }
    if let (false, Some(end)) = (orphan || parent == 0, end) {
        observer().child_ended(parent, process.id, end);
    }
    true
}

/// The children of process `id` (running or zombies) while it runs;
/// none once it has ended (they are orphans then).
pub fn children_of(id: u64) -> Vec<u64> {
    get(id).map_or_else(Vec::new, |process| {
        process.state.lock().children.iter().copied().collect()
    })
}

/// Waits until `child`, made by a `vfork` (`clone(CLONE_VFORK)`) of the
/// calling thread's process, has left the memory it was made with
/// (`execve`) or ended, as Linux's parent waits: only a kill ends the
/// wait early (the parent's other signals wait for it to return).
pub fn wait_for_vfork_child(child: &Process) {
    let mut guard = CHANGED_LOCK.lock();
    while !child.has_left_memory.load(Ordering::SeqCst) && pending_kill().is_none() {
        guard = CHANGED.wait(guard);
    }
}

/// Forgets `process`, made by [`create`] but never started.
pub fn discard(process: &Process) {
    observer().ended(process.id);
    let parent = process.parent();
    TABLE.lock().remove(&process.id);
    if let Some(parent) = get(parent) {
        parent.state.lock().children.remove(&process.id);
    }
}

/// Forgets `process` after the kernel (its parent) learned how it ended.
pub fn release(process: &Process) {
    TABLE.lock().remove(&process.id);
}

/// Why `wait4` returned without a child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitError {
    /// The caller has no such child (`ECHILD`).
    NoChild,
    /// A signal (a kill) interrupted the wait (`EINTR`).
    Interrupted,
}

/// Which children a wait is for (`wait4`'s `pid`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Children {
    /// Any child.
    Any,
    /// This child.
    Process(u64),
    /// The children in this process group.
    Group(u64),
}

/// What a wait reports (`WEXITED`, `WUNTRACED`/`WSTOPPED`,
/// `WCONTINUED`), and whether it leaves the change to be waited for again
/// (`WNOWAIT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reporting {
    /// Children that ended.
    pub ended: bool,
    /// Children that stopped.
    pub stopped: bool,
    /// Children that were continued.
    pub continued: bool,
    /// Report without taking: the same change is there for the next wait.
    pub keep: bool,
}

/// Waits for a child of `parent` to change (end, or stop and continue if
/// `reporting` asks), and takes the change: the child's id and what
/// happened and what it used (an ended child's record goes). With `block` false, returns
/// `Ok(None)` at once if none has changed yet. A signal to take
/// interrupts the wait.
pub fn wait(
    parent: &Process,
    which: Children,
    reporting: Reporting,
    block: bool,
) -> Result<Option<(u64, Change, Usage)>, WaitError> {
    let mut guard = CHANGED_LOCK.lock();
    loop {
        let children: Vec<u64> = parent.state.lock().children.iter().copied().collect();
        let candidates: Vec<Arc<Process>> = children
            .into_iter()
            .filter_map(get)
            .filter(|child| match which {
                Children::Any => true,
                Children::Process(id) => child.id == id,
                Children::Group(group) => child.group() == Some(group),
            })
            .collect();
        if candidates.is_empty() {
            return Err(WaitError::NoChild);
        }
        for child in candidates {
            let change = {
                let mut state = child.state.lock();
                let change = match (state.end, state.unreported) {
                    (Some(end), _) if reporting.ended => Some(Change::Ended(end)),
                    (None, Some(Change::Stopped(signal))) if reporting.stopped || state.traced => {
                        Some(Change::Stopped(signal))
                    }
                    (None, Some(Change::Continued)) if reporting.continued => {
                        Some(Change::Continued)
                    }
                    _ => None,
                };
                if change.is_some() && !reporting.keep && state.end.is_none() {
                    state.unreported = None;
                }
                change
            };
            if let Some(change) = change {
                if let (Change::Ended(_), false) = (change, reporting.keep) {
                    parent.state.lock().children.remove(&child.id);
                    TABLE.lock().remove(&child.id);
                    add_child_usage(parent, &child);
                }
                return Ok(Some((child.id, change, child.usage())));
            }
        }
        if !block {
            return Ok(None);
        }
        if observer().interrupted() {
            return Err(WaitError::Interrupted);
        }
        guard = CHANGED.wait(guard);
    }
}

/// Wakes `process`'s threads wherever they wait in the kernel, so that
/// one returns to take a signal just posted (a waiter that finds nothing
/// for it waits again: the wake-up is harmless).
pub fn interrupt(process: &Process) {
    for strand in strands_of(process.id) {
        sched::wake(sched::ThreadId(strand));
    }
    let _lock = CHANGED_LOCK.lock();
    CHANGED.notify_all();
}

/// Processes stopped now: while there are none, the return to user mode
/// does not look (one load).
static STOPPED_PROCESSES: AtomicUsize = AtomicUsize::new(0);

/// Stops the calling thread's process `pid` by `signal` until `SIGCONT`
/// (or a kill): its parent can see the stop with `WUNTRACED` and gets
/// `SIGCHLD`. Returns false if the process was killed while stopped.
/// The whole process stops: the calling thread waits here, and each of
/// its other threads waits on its next return to user mode
/// ([`wait_while_stopped`]; one blocked in the kernel stays blocked, as
/// on Linux).
pub fn stop_current(pid: u64, signal: u8) -> bool {
    let Some(process) = get(pid) else {
        return true;
    };
    let parent = {
        let mut state = process.state.lock();
        if state.stopped.replace(signal).is_none() {
            STOPPED_PROCESSES.fetch_add(1, Ordering::Relaxed);
        }
        state.unreported = Some(Change::Stopped(signal));
        state.parent
    };
    // The other threads find the stop on their way back to user mode: at
    // their next interrupt if they run user code, when their call ends if
    // they wait in the kernel.
    wait_until_continued(&process, parent, pid, signal)
}

/// The rest of [`stop_current`]: tells the waiters and the parent, then
/// waits until the process is continued (true) or killed (false).
fn wait_until_continued(process: &Process, parent: u64, pid: u64, signal: u8) -> bool {
    {
        let _lock = CHANGED_LOCK.lock();
        CHANGED.notify_all();
    }
    if parent != 0 {
        observer().child_stopped(parent, pid, signal::CLD_STOPPED, signal);
    }
    let mut guard = CHANGED_LOCK.lock();
    loop {
        {
            let state = process.state.lock();
            if state.kill.is_some() {
                return false;
            }
            if state.stopped.is_none() {
                return true;
            }
        }
        guard = CHANGED.wait(guard);
    }
}

/// On the calling thread's way back to user mode: if its process is
/// stopped (another of its threads took a stop signal), waits until it
/// is continued or killed. One load while no process is stopped.
#[inline]
pub fn wait_while_stopped() {
    if STOPPED_PROCESSES.load(Ordering::Relaxed) != 0 {
        wait_while_stopped_slow();
    }
}

/// [`wait_while_stopped`] when some process is stopped.
#[inline(never)]
fn wait_while_stopped_slow() {
    let Some(process) = current() else {
        return;
    };
    let mut guard = CHANGED_LOCK.lock();
    loop {
        {
            let state = process.state.lock();
            if state.kill.is_some() || state.stopped.is_none() {
                return;
            }
        }
        guard = CHANGED.wait(guard);
    }
}

/// `SIGCONT` reached `process`: if it was stopped it runs again, and its
/// parent can see that with `WCONTINUED`.
pub fn continue_stopped(process: &Process) {
    let parent = {
        let mut state = process.state.lock();
        if state.stopped.take().is_none() {
            return;
        }
        STOPPED_PROCESSES.fetch_sub(1, Ordering::Relaxed);
        state.unreported = Some(Change::Continued);
        state.parent
    };
    {
        let _lock = CHANGED_LOCK.lock();
        CHANGED.notify_all();
    }
    if parent != 0 {
        observer().child_stopped(parent, process.id, signal::CLD_CONTINUED, signal::SIGCONT);
    }
}

/// `child` was waited for: what it and its own children used counts in
/// `parent`'s children's usage (Linux's `cutime`, `cstime`, ...).
fn add_child_usage(parent: &Process, child: &Process) {
    let child = child.usage();
    let mut usage = parent.usage.lock();
    usage.children_ticks += child.ended_threads_ticks + child.children_ticks;
    usage.children_minor_faults += child.final_minor_faults + child.children_minor_faults;
    usage.children_max_resident_pages = usage
        .children_max_resident_pages
        .max(child.final_resident_pages)
        .max(child.children_max_resident_pages);
}

/// `PTRACE_TRACEME`: `process` is traced by its parent from now on;
/// false if it already was.
pub fn trace_by_parent(process: &Process) -> bool {
    let mut state = process.state.lock();
    if state.traced {
        return false;
    }
    state.traced = true;
    true
}

/// Whether `process` is traced.
pub fn is_traced(process: &Process) -> bool {
    process.state.lock().traced
}

/// A signal-delivery stop: the calling thread of traced process `pid`
/// is about to take `signal`. It stops, its tracer (the parent) learns
/// it (`SIGCHLD` with `CLD_TRAPPED`, and its waits), and it waits until
/// the tracer resumes it. Returns the signal to take instead (0: none;
/// `signal` itself if the tracer went away), or `None` if it was killed.
pub fn trace_stop(pid: u64, signal: u8) -> Option<u8> {
    let process = get(pid)?;
    let parent = {
        let mut state = process.state.lock();
        state.trace_stop = Some(signal);
        state.trace_resume = None;
        state.unreported = Some(Change::Stopped(signal));
        state.parent
    };
    {
        let _lock = CHANGED_LOCK.lock();
        CHANGED.notify_all();
    }
    if parent != 0 {
        observer().child_stopped(parent, pid, signal::CLD_TRAPPED, signal);
    }
    let mut guard = CHANGED_LOCK.lock();
    loop {
        {
            let mut state = process.state.lock();
            if state.kill.is_some() {
                state.trace_stop = None;
                return None;
            }
            if let Some(resumed) = state.trace_resume.take() {
                return Some(resumed);
            }
            if !state.traced {
                state.trace_stop = None;
                if state.unreported == Some(Change::Stopped(signal)) {
                    state.unreported = None;
                }
                return Some(signal);
            }
        }
        guard = CHANGED.wait(guard);
    }
}

/// What a tracer does to its stopped tracee.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceResume {
    /// Resume it with this signal to take (0: none), still traced.
    Continue(u8),
    /// Resume it with this signal (0: none), no longer traced.
    Detach(u8),
}

/// Whether process `pid` is a tracee of process `tracer` in a trace
/// stop: what every `ptrace` request but `PTRACE_TRACEME` needs (Linux's
/// `ptrace_check_attach`).
pub fn is_stopped_tracee(tracer: u64, pid: u64) -> bool {
    get(pid).is_some_and(|process| {
        let state = process.state.lock();
        state.traced && state.parent == tracer && state.trace_stop.is_some()
    })
}

/// Process `tracer` resumes process `pid`, its tracee in a trace stop,
/// as `how` says; `NoProcess` if `pid` is not a tracee of `tracer`
/// stopped for it (Linux's `ptrace_check_attach`: `ESRCH`).
pub fn resume_tracee(tracer: u64, pid: u64, how: TraceResume) -> Result<(), KillError> {
    let process = get(pid).ok_or(KillError::NoProcess)?;
    {
        let mut state = process.state.lock();
        if !state.traced || state.parent != tracer || state.trace_stop.is_none() {
            return Err(KillError::NoProcess);
        }
        // Resumed, its stop no longer to report.
        let signal = match how {
            TraceResume::Continue(signal) => signal,
            TraceResume::Detach(signal) => {
                state.traced = false;
                signal
            }
        };
        state.trace_stop = None;
        state.trace_resume = Some(signal);
        if matches!(state.unreported, Some(Change::Stopped(_))) {
            state.unreported = None;
        }
    }
    let _lock = CHANGED_LOCK.lock();
    CHANGED.notify_all();
    Ok(())
}

/// Why `kill` failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillError {
    /// No such process (`ESRCH`).
    NoProcess,
    /// Not a signal number (`EINVAL`).
    BadSignal,
    /// The sender may not signal the target (`EPERM`): a personality's
    /// rule, such as Linux's user-id check.
    NotPermitted,
}

/// Sends `signal` to process `id`: with no handlers yet (signals come with
/// the Linux personality), every signal but 0 ends the process. Signal 0
/// only checks that the process exists.
pub fn kill(id: u64, signal: u8) -> Result<(), KillError> {
    if signal > signal::MAX_SIGNAL {
        return Err(KillError::BadSignal);
    }
    let process = get(id).ok_or(KillError::NoProcess)?;
    if signal == 0 {
        return Ok(());
    }
    {
        let mut state = process.state.lock();
        if state.end.is_some() {
            return Ok(());
        }
        if state.kill.replace(signal).is_none() {
            PENDING_KILLS.fetch_add(1, Ordering::Relaxed);
        }
    }
    let strands = strands_of(id);
    // Wake it wherever it sleeps (a spurious wake-up for a lock or
    // condition variable is harmless: they re-check).
    for strand in strands {
        sched::wake(sched::ThreadId(strand));
    }
    let _lock = CHANGED_LOCK.lock();
    CHANGED.notify_all();
    Ok(())
}

/// The signal a kill sent to the running thread's process, if one is
/// pending: the thread must end its program before returning to it.
#[inline]
pub fn pending_kill() -> Option<u8> {
    if PENDING_KILLS.load(Ordering::Relaxed) == 0 {
        return None;
    }
    pending_kill_slow()
}

/// [`pending_kill`] when some process has a kill pending.
#[inline(never)]
fn pending_kill_slow() -> Option<u8> {
    let process = current()?;
    let signal = process.state.lock().kill;
    signal
}

/// Page faults resolved by processes' address maps since boot.
static FAULTS_RESOLVED: AtomicU64 = AtomicU64::new(0);

/// Page faults the address maps have resolved since boot (demand-zero
/// pages and private copies).
pub fn faults_resolved() -> u64 {
    FAULTS_RESOLVED.load(Ordering::Relaxed)
}

/// Resolves a user page fault of `strand`'s process (the faulting thread)
/// through its address map (demand-zero pages, copy-on-write).
pub fn resolve_fault(strand: u64, address: u64, error_code: u64) -> bool {
    // `None`: the address is in no region (a bad address).
    let outcome = of_strand(strand).and_then(|process| {
        process.with_memory(|memory| {
            memory
                .region_at(address)
                .is_some()
                .then(|| memory.resolve_fault(address, error_code))
        })
    });
    let resolved = match outcome {
        Some(Some(resolved)) => resolved,
        // Raised with the memory lock released: a handler may change the
        // address space.
        Some(None) => observer().bad_address(strand, address, error_code),
        None => false,
    };
    if resolved {
        FAULTS_RESOLVED.fetch_add(1, Ordering::Relaxed);
    }
    resolved
}

/// Calls `describe` with the process identifier, the Linux thread
/// identifier and the command name of the user thread on `strand`, if it
/// is one; without waiting for a lock held elsewhere (then nothing is
/// called) and without allocating: the lockup watchdog asks from an NMI.
pub fn describe_strand_without_waiting(strand: u64, describe: impl FnOnce(u64, u64, &[u8])) {
    let Some(threads) = BY_STRAND.try_lock() else {
        return;
    };
    let Some(record) = threads.get(&strand) else {
        return;
    };
    let Some(program) = record.process.program.try_lock() else {
        return;
    };
    describe(record.process.id, record.tid, &program.command);
}
