//! User threads: a kernel thread that runs a program in ring 3, in an
//! address space of its own.
//!
//! This is the first step of processes (issue 10): a program is code
//! loaded at [`CODE_BASE`] with a stack below [`STACK_TOP`]; it enters the
//! kernel only through system calls (`crate::syscalls`) and traps. It ends
//! by `exit` (its status is kept for [`UserThread::join`]) or by a fault,
//! which the exception handler turns into the end of that thread alone.
//! Its address space, frames and kernel stack go when it ends.

use alloc::{collections::BTreeMap, string::String, sync::Arc, vec::Vec};

use hal::{
    address_space::{AddressSpace, UserProtection},
    memory::PAGE_SIZE,
    user::UserEntry,
};
use sched::{ExitReason, Fault, JoinHandle};

/// Where a program's code is loaded.
pub const CODE_BASE: u64 = 0x40_0000;
/// One past the top of a user thread's stack.
pub const STACK_TOP: u64 = 0x7fff_ffff_0000;
/// Pages of user stack (64 KiB).
pub const STACK_PAGES: u64 = 16;
/// The kernel stack of a user thread (system calls and traps run on it).
const KERNEL_STACK_BYTES: u64 = 64 * 1024;

/// How user threads' programs ended, by strand, until joined.
static ENDS: spin::Mutex<BTreeMap<u64, UserExit>> = spin::Mutex::new(BTreeMap::new());

/// The process each running user thread belongs to, by strand.
static PROCESSES: spin::Mutex<BTreeMap<u64, u64>> = spin::Mutex::new(BTreeMap::new());

/// The last process identifier handed out.
static LAST_PROCESS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// A new process identifier, to start a program in (and to attach
/// extensions to before it runs).
pub fn new_process() -> u64 {
    LAST_PROCESS.fetch_add(1, core::sync::atomic::Ordering::Relaxed) + 1
}

/// The process strand `strand` runs a program of, if any.
pub fn process_of(strand: u64) -> Option<u64> {
    PROCESSES.lock().get(&strand).copied()
}

/// How a user thread ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserExit {
    /// It called `exit` with this status.
    Exited(i64),
    /// A CPU exception ended it (in ring 3, or in the kernel on its behalf).
    Faulted(Fault),
}

/// A running user thread.
pub struct UserThread {
    thread: JoinHandle,
}

impl UserThread {
    /// The thread's strand identifier (what `getpid` returns for now).
    pub fn strand(&self) -> u64 {
        self.thread.id().0
    }

    /// Waits for the thread to end.
    pub fn join(self) -> UserExit {
        let strand = self.strand();
        let reason = self.thread.join();
        let ended = ENDS.lock().remove(&strand);
        match (reason, ended) {
            (_, Some(end)) => end,
            // A fault in the kernel on the program's behalf stops the
            // thread itself.
            (ExitReason::Faulted(fault), None) => UserExit::Faulted(fault),
            (ExitReason::Finished, None) => UserExit::Exited(0),
        }
    }
}

/// Maps the zeroed read-write stack below [`STACK_TOP`].
fn map_stack(space: &mut AddressSpace) -> Result<(), String> {
    for page in 1..=STACK_PAGES {
        space
            .map(STACK_TOP - page * PAGE_SIZE, UserProtection::ReadWrite)
            .map_err(|_| String::from("no memory for the user stack"))?;
    }
    Ok(())
}

/// Builds the address space of raw code: `code` at [`CODE_BASE`]
/// (read-execute) and the stack.
fn address_space_for(code: &[u8]) -> Result<AddressSpace, String> {
    let mut space = AddressSpace::new().map_err(|_| String::from("no memory for page tables"))?;
    let code_pages = (code.len() as u64).div_ceil(PAGE_SIZE).max(1);
    for page in 0..code_pages {
        space
            .map(CODE_BASE + page * PAGE_SIZE, UserProtection::ReadExecute)
            .map_err(|_| String::from("no memory for the program"))?;
    }
    space
        .write(CODE_BASE, code)
        .map_err(|_| String::from("cannot load the program"))?;
    map_stack(&mut space)?;
    Ok(space)
}

/// Starts raw x86-64 `code` (loaded at [`CODE_BASE`], entered there) as a
/// user thread named `name`.
pub fn spawn(name: &str, code: &[u8]) -> Result<UserThread, String> {
    let space = address_space_for(code)?;
    start(
        new_process(),
        name,
        space,
        UserEntry {
            rip: CODE_BASE,
            // 16-byte aligned minus 8, as after a `call` (System V).
            rsp: STACK_TOP - 8,
        },
    )
}

/// Starts the static ELF executable `file` as a user thread named `name`,
/// with `arguments` as its argv (argv[0] first), in a new process.
pub fn spawn_program(name: &str, file: &[u8], arguments: &[&str]) -> Result<UserThread, String> {
    spawn_program_in(new_process(), name, file, arguments)
}

/// Like [`spawn_program`], in process `process` (from [`new_process`]).
pub fn spawn_program_in(
    process: u64,
    name: &str,
    file: &[u8],
    arguments: &[&str],
) -> Result<UserThread, String> {
    let crate::elf::Image { mut space, layout } = crate::elf::load(file)?;
    map_stack(&mut space)?;
    let rsp = crate::elf::initial_stack(&mut space, STACK_TOP, &layout, arguments)?;
    let entry = UserEntry {
        rip: layout.entry,
        rsp,
    };
    start(process, name, space, entry)
}

/// Runs `entry` in `space` on a new kernel thread, as part of `process`.
fn start(
    process: u64,
    name: &str,
    space: AddressSpace,
    entry: UserEntry,
) -> Result<UserThread, String> {
    let space = Arc::new(space);
    // The thread's entry returns when the program has ended (by `exit`
    // or a fault, through `hal::user::end`), so what it holds is dropped:
    // the address space, and the entry itself.
    let thread = sched::spawn_with_stack(name, KERNEL_STACK_BYTES, move || {
        let strand = sched::current().0;
        PROCESSES.lock().insert(strand, process);
        hal::context::set_address_space(Some(space));
        if let Err(error) = hal::user::run(entry) {
            let why = match error {
                hal::user::EnterError::NotUserAddress => "entry outside the user half",
                hal::user::EnterError::NoKernelStack => "no kernel stack of its own",
            };
            log::error!("cannot enter user mode: {why}");
        }
        hal::context::set_address_space(None);
        PROCESSES.lock().remove(&strand);
    })
    .map_err(|_| String::from("no memory for the thread's kernel stack"))?;
    Ok(UserThread { thread })
}

/// Ends the calling thread's program with `status` (the `exit` system
/// call).
pub fn finish(status: i64) -> ! {
    end_program(UserExit::Exited(status))
}

/// Ends the calling thread's program for a fault in ring 3.
pub fn fault(fault: Fault) -> ! {
    end_program(UserExit::Faulted(fault))
}

fn end_program(how: UserExit) -> ! {
    ENDS.lock().insert(sched::current().0, how);
    hal::user::end(0);
    // Not in a user program (cannot happen for a system call or a ring-3
    // fault): end the thread itself.
    sched::exit(ExitReason::Finished)
}

/// Writes what a user program printed to the console.
pub fn console_write(bytes: &[u8]) {
    let text: Vec<u8> = bytes
        .iter()
        .map(|&byte| if byte.is_ascii() { byte } else { b'?' })
        .collect();
    if let Ok(text) = core::str::from_utf8(&text) {
        hal::console::write_str(text);
    }
}
