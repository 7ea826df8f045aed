//! The Linux personality's process family: the system calls that act on
//! processes, threads and address spaces, on the kernel's process service
//! (`services/process`), and what makes a Linux thread's return to user
//! mode (signal delivery).
//!
//! [`handle`] is the family's table, one line per call, each family in
//! its file:
//! - `lifecycle`: `fork`, `vfork`, `clone`, `execve`, `wait4`, `waitid`,
//!   `kill`, `tkill`, `tgkill`, `pidfd_send_signal`, `exit`, `exit_group`, the identifiers,
//!   `set_tid_address`, `arch_prctl`;
//! - `memory`: `brk`, `mmap`, `munmap`, `mprotect`, `mremap`, `mincore`,
//!   `madvise`, `msync`;
//! - `futex`: `futex`;
//! - `ptrace`: a parent tracing its child (`PTRACE_TRACEME`, the
//!   signal-delivery stops, `PTRACE_CONT`, `PTRACE_KILL`,
//!   `PTRACE_DETACH`);
//! - `time`: clocks, sleeps, `alarm` and interval timers (`itimer`);
//! - `posix_timers`: `timer_create` and the calls on its timers;
//! - `scheduling`: policies, priorities, `nice`, `getcpu`, I/O
//!   priorities.
//!
//! Beside the table: [`threads`] starts programs and their threads and
//! ends them, [`programs`] records what a process runs, [`signals`] sends
//! and delivers signals. The personality's other families (files, paths,
//! sockets, ...) are in `personality/linux`, which answers first and
//! leaves these calls to the kernel's table, which calls [`handle`].
//!
//! The crate is wired by the kernel at boot ([`init`], then
//! [`set_personality`] once the file tree is built); what it needs of the
//! kernel beyond the services it depends on reaches it through
//! [`KernelHooks`].
#![no_std]

extern crate alloc;

mod futex;
pub mod itimer;
mod lifecycle;
mod memory;
mod posix_timers;
pub mod programs;
mod ptrace;
mod scheduling;
pub mod signals;
pub mod threads;
mod time;

use alloc::collections::BTreeMap;

use hal::user::UserRegisters;
use linux::Personality;
use linux_abi::{syscall, Errno};
use pagecache::PageCache;

pub use futex::wake_address as futex_wake;

/// What the family needs of the kernel that no service below it offers.
pub trait KernelHooks: Sync {
    /// Process `pid`'s program was replaced (`execve`) or ended: what the
    /// kernel kept for that program (its fault-handling extension) goes.
    fn program_replaced(&self, pid: u64);
}

/// What [`init`] was given.
struct Wiring {
    page_cache: &'static PageCache,
    hooks: &'static dyn KernelHooks,
}

static WIRING: spin::Once<Wiring> = spin::Once::new();
static PERSONALITY: spin::Once<&'static Personality> = spin::Once::new();

/// Wires the family to the kernel's page cache (which programs' files are
/// mapped from) and hooks. Once, at boot, before the first program.
pub fn init(page_cache: &'static PageCache, hooks: &'static dyn KernelHooks) {
    WIRING.call_once(|| Wiring { page_cache, hooks });
}

/// The personality whose processes these are, once the kernel has built
/// its file tree.
pub fn set_personality(personality: &'static Personality) {
    PERSONALITY.call_once(|| personality);
}

/// The personality, once set.
pub fn personality() -> Option<&'static Personality> {
    PERSONALITY.get().copied()
}

fn wiring() -> &'static Wiring {
    WIRING
        .get()
        .expect("the Linux process family is used before the kernel wired it")
}

/// The page cache programs' files are mapped from.
fn page_cache() -> &'static PageCache {
    wiring().page_cache
}

/// The kernel's hooks.
fn hooks() -> &'static dyn KernelHooks {
    wiring().hooks
}

/// What the system-call entry keeps for the calls that change the way
/// back to user mode, by strand: they are acted on after the event's
/// handlers return (a thread cannot end or change program inside a raise:
/// the dispatcher's references on its stack would never be dropped).
struct EntryRecords {
    /// Exit statuses asked for, with whether the whole process exits
    /// (`exit_group`).
    exits: BTreeMap<u64, (i64, bool)>,
    /// The registers and FS base of threads in `fork` or `clone`, saved by
    /// the entry for the child to start from (only these calls pay for
    /// the copy).
    forking: BTreeMap<u64, (UserRegisters, u64)>,
    /// Where threads whose `execve` succeeded start their new program:
    /// entry point and stack pointer.
    execs: BTreeMap<u64, (u64, u64)>,
}

static ENTRY_RECORDS: spin::Mutex<EntryRecords> = spin::Mutex::new(EntryRecords {
    exits: BTreeMap::new(),
    forking: BTreeMap::new(),
    execs: BTreeMap::new(),
});

/// The entry saved `strand`'s registers and FS base before a `fork`,
/// `vfork` or `clone` (until [`forget_fork_registers`]).
pub fn save_fork_registers(strand: u64, registers: UserRegisters, fs_base: u64) {
    ENTRY_RECORDS
        .lock()
        .forking
        .insert(strand, (registers, fs_base));
}

/// The `fork` or `clone` of `strand` returned.
pub fn forget_fork_registers(strand: u64) {
    ENTRY_RECORDS.lock().forking.remove(&strand);
}

/// The saved registers of a thread in `fork` or `clone`.
fn forking(strand: u64) -> Option<(UserRegisters, u64)> {
    ENTRY_RECORDS.lock().forking.get(&strand).copied()
}

/// Takes the exit `strand` asked for: its status, and whether the whole
/// process exits.
pub fn take_exit(strand: u64) -> Option<(i64, bool)> {
    ENTRY_RECORDS.lock().exits.remove(&strand)
}

/// Takes where `strand`'s new program starts (its `execve` succeeded):
/// entry point and stack pointer.
pub fn take_exec(strand: u64) -> Option<(u64, u64)> {
    ENTRY_RECORDS.lock().execs.remove(&strand)
}

/// Records where `strand`'s new program starts.
fn record_exec(strand: u64, entry: u64, stack: u64) {
    ENTRY_RECORDS.lock().execs.insert(strand, (entry, stack));
}

/// The family's system calls: `args` is the calling strand, the number
/// and six arguments; `None` for a call of another family. Always
/// inlined into the kernel's table, its only caller, so that a call pays
/// one dispatch, not two (a second function's prologue and epilogue
/// cost `mprotect` 2.9% in guest instructions).
#[inline(always)]
pub fn handle(args: &(u64, u64, u64, u64, u64, u64, u64, u64)) -> Option<i64> {
    let &(strand, number, a0, a1, a2, a3, a4, a5) = args;
    Some(match number {
        syscall::BRK => memory::brk(strand, a0),
        syscall::MMAP => memory::mmap(strand, a0, a1, a2, a3, a4, a5),
        syscall::MUNMAP => memory::munmap(strand, a0, a1),
        syscall::MPROTECT => memory::mprotect(strand, a0, a1, a2),
        syscall::MINCORE => memory::mincore(strand, a0, a1, a2),
        syscall::MADVISE => memory::madvise(strand, a0, a1, a2),
        syscall::MSYNC => memory::msync(strand, a0, a1, a2),
        syscall::MREMAP => memory::mremap(strand, a0, a1, a2, a3, a4),
        syscall::FORK => lifecycle::fork(strand, 0, 0, forking(strand)),
        syscall::VFORK => lifecycle::fork(strand, lifecycle::VFORK_FLAGS, 0, forking(strand)),
        syscall::EXECVE => lifecycle::execve(strand, a0, a1, a2),
        syscall::CLONE => lifecycle::clone(strand, [a0, a1, a2, a3, a4], forking(strand)),
        syscall::FUTEX => futex::futex(strand, a0, a1, a2, a3, a4, a5),
        syscall::WAIT4 => lifecycle::wait4(strand, a0, a1, a2, a3),
        syscall::WAITID => lifecycle::waitid(strand, a0, a1, a2, a3, a4),
        syscall::KILL => lifecycle::kill(strand, a0, a1),
        syscall::TKILL => lifecycle::tgkill(strand, None, a0, a1),
        syscall::TGKILL => lifecycle::tgkill(strand, Some(a0), a1, a2),
        syscall::PIDFD_SEND_SIGNAL => lifecycle::pidfd_send_signal(strand, a0, a1, a2, a3),
        syscall::PTRACE => ptrace::ptrace(strand, a0, a1, a3),
        syscall::ARCH_PRCTL => lifecycle::arch_prctl(a0, a1),
        syscall::CLOCK_GETTIME => time::clock_gettime(strand, a0, a1),
        syscall::CLOCK_GETRES => time::clock_getres(a0, a1),
        syscall::CLOCK_SETTIME => time::clock_settime(strand, a0, a1),
        syscall::SETTIMEOFDAY => time::settimeofday(strand, a0, a1),
        syscall::TIME => time::time(a0),
        syscall::ALARM => time::alarm(strand, a0),
        syscall::GETITIMER => time::getitimer(strand, a0, a1),
        syscall::SETITIMER => time::setitimer(strand, a0, a1, a2),
        syscall::GETTIMEOFDAY => time::gettimeofday(a0, a1),
        syscall::NANOSLEEP => time::nanosleep(a0, a1),
        syscall::CLOCK_NANOSLEEP => time::clock_nanosleep(strand, a0, a1, a2, a3),
        syscall::TIMER_CREATE => posix_timers::timer_create(strand, a0, a1, a2),
        syscall::TIMER_SETTIME => posix_timers::timer_settime(strand, a0, a1, a2, a3),
        syscall::TIMER_GETTIME => posix_timers::timer_gettime(strand, a0, a1),
        syscall::TIMER_GETOVERRUN => posix_timers::timer_getoverrun(strand, a0),
        syscall::TIMER_DELETE => posix_timers::timer_delete(strand, a0),
        syscall::SCHED_SETSCHEDULER
        | syscall::SCHED_GETSCHEDULER
        | syscall::SCHED_SETPARAM
        | syscall::SCHED_GETPARAM
        | syscall::SCHED_GET_PRIORITY_MAX
        | syscall::SCHED_GET_PRIORITY_MIN
        | syscall::SCHED_RR_GET_INTERVAL
        | syscall::GETPRIORITY
        | syscall::SETPRIORITY
        | syscall::GETCPU
        | syscall::IOPRIO_GET
        | syscall::IOPRIO_SET => {
            return scheduling::handle(strand, number, [a0, a1, a2, a3, a4, a5])
        }
        // Restartable sequences are not offered; glibc asks at start and
        // goes on without them, so this is not reported as missing.
        syscall::RSEQ => Errno::ENOSYS.as_negative(),
        syscall::SCHED_YIELD => {
            sched::yield_now();
            0
        }
        syscall::GETPID => lifecycle::getpid(strand),
        syscall::GETTID => lifecycle::gettid(strand),
        syscall::SET_TID_ADDRESS => lifecycle::set_tid_address(strand, a0),
        syscall::GETPPID => lifecycle::getppid(strand),
        syscall::EXIT | syscall::EXIT_GROUP => {
            let group = number == syscall::EXIT_GROUP;
            ENTRY_RECORDS
                .lock()
                .exits
                .insert(strand, (a0 as i32 as i64, group));
            0
        }
        _ => return None,
    })
}
