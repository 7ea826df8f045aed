//! User threads: a kernel thread that runs a program in ring 3, in an
//! address space of its own.
//!
//! A program is code loaded at [`CODE_BASE`] (or an ELF image) with a
//! stack below [`STACK_TOP`], in a process of its own (`services/process`);
//! it enters the kernel only through system calls (the kernel's entry
//! raises `MachineTrap.Syscall`) and traps. It ends by `exit`, by a fault (which the exception handler turns
//! into the end of that process alone) or by a kill. Its memory and kernel
//! stack go when it ends; how it ended is kept for [`UserThread::join`]
//! (or the parent's `wait4`).

use alloc::{string::String, sync::Arc, vec::Vec};

use hal::{
    address_space::{AddressSpace, UserProtection},
    memory::PAGE_SIZE,
    user::{UserEntry, UserRegisters},
};
use sched::{ExitReason, Fault, JoinHandle};

use ::process::{self, End, Process, UserAddressMap};

/// Where a program's code is loaded.
pub const CODE_BASE: u64 = 0x40_0000;
/// One past the top of a user thread's stack.
pub const STACK_TOP: u64 = 0x7fff_ffff_0000;
/// Pages of user stack mapped before the program starts (64 KiB).
pub const STACK_PAGES: u64 = 16;
/// The most the stack may grow to (8 MiB, Linux's default limit); pages
/// below the first [`STACK_PAGES`] are mapped on first touch. Beyond it is
/// unmapped, so a runaway recursion faults.
pub const STACK_LIMIT: u64 = 8 << 20;
/// The kernel stack of a user thread (system calls and traps run on it).
const KERNEL_STACK_BYTES: u64 = 64 * 1024;

/// A new process identifier, to start a program in (and to attach
/// extensions to before it runs).
pub fn new_process() -> u64 {
    process::reserve_id()
}

/// The process strand `strand` runs a program of, if any.
pub fn process_of(strand: u64) -> Option<u64> {
    process::pid_of_strand(strand)
}

/// How a user program ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserExit {
    /// It called `exit` with this status.
    Exited(i64),
    /// A CPU exception ended it (in ring 3, or in the kernel on its behalf).
    Faulted(Fault),
    /// A signal sent by `kill` ended it.
    Killed(u8),
}

impl core::fmt::Display for UserExit {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            UserExit::Exited(status) => write!(f, "exited with status {status}"),
            UserExit::Faulted(fault) => write!(
                f,
                "was ended by CPU exception {} ({}) at {:#x}",
                fault.vector,
                ::process::signal_name(::process::signal_for_fault(fault.vector)),
                fault.rip
            ),
            UserExit::Killed(signal) => write!(
                f,
                "was killed by signal {signal} ({})",
                ::process::signal_name(*signal)
            ),
        }
    }
}

/// A running user program the kernel started.
pub struct UserThread {
    thread: JoinHandle,
    process: Arc<Process>,
}

impl UserThread {
    /// The program's process identifier (what `getpid` returns).
    pub fn process(&self) -> u64 {
        self.process.id()
    }

    /// Waits for the program to end.
    pub fn join(self) -> UserExit {
        let reason = self.thread.join();
        let end = self.process.end();
        process::release(&self.process);
        match (end, reason) {
            (Some(End::Exited(status)), _) => UserExit::Exited(status),
            (
                Some(End::Killed {
                    fault: Some(fault), ..
                }),
                _,
            ) => UserExit::Faulted(fault),
            // A fault in the kernel on the program's behalf stops the
            // thread itself.
            (_, ExitReason::Faulted(fault)) => UserExit::Faulted(fault),
            (Some(End::Killed { signal, .. }), _) => UserExit::Killed(signal),
            (None, ExitReason::Finished) => UserExit::Exited(0),
        }
    }
}

/// A loaded program's address map and initial stack pointer: its
/// segments (and its interpreter's) as regions, the stack, and
/// `arguments` and `environment` on it, with the auxiliary vector
/// (`path` is what it was started as: `AT_EXECFN`).
pub fn program_memory(
    image: loader::Image,
    arguments: &[&[u8]],
    environment: &[&[u8]],
    path: &[u8],
    files: &ProgramFiles,
) -> Result<(UserAddressMap, u64), String> {
    let loader::Image { space, layout } = image;
    let mut memory = UserAddressMap::new(Arc::new(space), layout.image_end);
    for segment in &layout.segments {
        let start = segment.start;
        memory
            .add_region(start, segment.end, segment.protection)
            .map_err(|error| alloc::format!("cannot place a segment at {start:#x}: {error}"))?;
        let file = if segment.of_interpreter {
            &files.interpreter
        } else {
            &files.program
        };
        if let Some(label) = file {
            memory.label(start, segment.end, label.clone(), segment.file_page);
        }
    }
    let stack = if layout.executable_stack {
        UserProtection::ReadWriteExecute
    } else {
        UserProtection::ReadWrite
    };
    map_stack(&mut memory, stack)?;
    let start = loader::StartInfo {
        path,
        random: random_bytes(),
    };
    let rsp = loader::initial_stack(
        memory.space(),
        STACK_TOP,
        &layout,
        arguments,
        environment,
        &start,
    )?;
    Ok((memory, rsp))
}

/// What `/proc/PID/maps` names a program's segments after: its file and
/// its interpreter's (`None` for a file the tree does not have).
pub struct ProgramFiles {
    /// The program's file.
    pub program: Option<vm::Label>,
    /// Its interpreter's file, if it has one.
    pub interpreter: Option<vm::Label>,
}

impl ProgramFiles {
    /// The files `program` and `interpreter` name for process `pid`
    /// (`None`: the kernel, at the root).
    pub fn find(pid: Option<u64>, program: &[u8], interpreter: Option<&[u8]>) -> ProgramFiles {
        let label = |path: &[u8]| {
            let identity = crate::personality()?.file_identity(pid, path)?;
            Some(vm::Label {
                name: identity.path,
                dev: identity.dev,
                ino: identity.ino,
            })
        };
        ProgramFiles {
            program: label(program),
            interpreter: interpreter.and_then(label),
        }
    }
}

/// 16 bytes for `AT_RANDOM`: from the personality's `/dev/urandom`
/// generator, or (before it is set up) from the time-stamp counter.
fn random_bytes() -> [u8; 16] {
    let mut bytes = [0u8; 16];
    let generator = crate::personality().and_then(|personality| {
        personality
            .vfs()
            .devices()
            .get(vfs::devices::URANDOM_DEV)
            .ok()
    });
    if generator.is_some_and(|device| device.read(0, &mut bytes, true) == Ok(bytes.len())) {
        return bytes;
    }
    let seed = hal::cpu::read_tsc();
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..].copy_from_slice(
        &seed
            .rotate_left(29)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .to_le_bytes(),
    );
    bytes
}

/// Adds the stack region below [`STACK_TOP`], with `protection`
/// (executable if the program's `PT_GNU_STACK` asks), and maps its top
/// [`STACK_PAGES`] (what the loader writes the arguments into).
fn map_stack(memory: &mut UserAddressMap, protection: UserProtection) -> Result<(), String> {
    memory
        .add_region(STACK_TOP - STACK_LIMIT, STACK_TOP, protection)
        .map_err(|error| alloc::format!("cannot make the stack: {error}"))?;
    let stack = vm::Label {
        name: b"[stack]".to_vec(),
        dev: 0,
        ino: 0,
    };
    memory.label(STACK_TOP - STACK_LIMIT, STACK_TOP, stack, 0);
    for page in 1..=STACK_PAGES {
        memory
            .space()
            .map(STACK_TOP - page * PAGE_SIZE, protection)
            .map_err(|_| String::from("no memory for the user stack"))?;
    }
    Ok(())
}

/// Builds the memory of raw code: `code` at [`CODE_BASE`] (read-execute)
/// and the stack.
fn memory_for(code: &[u8]) -> Result<UserAddressMap, String> {
    let space = AddressSpace::new().map_err(|_| String::from("no memory for page tables"))?;
    let code_pages = (code.len() as u64).div_ceil(PAGE_SIZE).max(1);
    for page in 0..code_pages {
        space
            .map(CODE_BASE + page * PAGE_SIZE, UserProtection::ReadExecute)
            .map_err(|_| String::from("no memory for the program"))?;
    }
    space
        .write(CODE_BASE, code)
        .map_err(|_| String::from("cannot load the program"))?;
    let code_end = CODE_BASE + code_pages * PAGE_SIZE;
    let mut memory = UserAddressMap::new(Arc::new(space), code_end);
    memory
        .add_region(CODE_BASE, code_end, UserProtection::ReadExecute)
        .map_err(|error| alloc::format!("cannot place the program: {error}"))?;
    map_stack(&mut memory, UserProtection::ReadWrite)?;
    Ok(memory)
}

/// Starts raw x86-64 `code` (loaded at [`CODE_BASE`], entered there) as a
/// user thread named `name`, in a new process.
pub fn spawn(name: &str, code: &[u8]) -> Result<UserThread, String> {
    let memory = memory_for(code)?;
    let process = process::create(new_process(), 0, memory);
    process.set_program(process::Program::new(name.as_bytes(), &[], &[], None));
    let entry = UserEntry {
        rip: CODE_BASE,
        // 16-byte aligned minus 8, as after a `call` (System V).
        rsp: STACK_TOP - 8,
    };
    start_kernel_child(process, name, entry)
}

/// Starts the static ELF executable `file` as a user thread named `name`,
/// with `arguments` as its argv (`argv[0]` first), in a new process. A
/// dynamically linked program needs its interpreter: [`spawn_path`]
/// starts one.
pub fn spawn_program(
    name: &str,
    file: loader::FileBytes<'_>,
    arguments: &[&str],
) -> Result<UserThread, String> {
    spawn_program_in(new_process(), name, file, arguments)
}

/// Like [`spawn_program`], in process `process` (from [`new_process`]).
pub fn spawn_program_in(
    process: u64,
    name: &str,
    file: loader::FileBytes<'_>,
    arguments: &[&str],
) -> Result<UserThread, String> {
    let image = loader::load(crate::page_cache(), file, None)?;
    let arguments: Vec<&[u8]> = arguments
        .iter()
        .map(|argument| argument.as_bytes())
        .collect();
    // The kernel's programs are `bin/NAME` of the boot archive, which is
    // `/bin/NAME` of the tree.
    let path = alloc::format!("/bin/{name}");
    let files = ProgramFiles::find(None, path.as_bytes(), None);
    let (process, entry) = prepare(process, image, &arguments, &[], path.as_bytes(), &files)?;
    crate::programs::program_started(&process, name, &arguments);
    start_kernel_child(process, name, entry)
}

/// Starts the program at `path` in the Linux personality's file tree
/// (static or dynamically linked: its interpreter is read from the tree
/// too) as a user thread named `name`, with `arguments` (`argv[0]` first)
/// and `environment`, in a new process.
pub fn spawn_path(
    name: &str,
    path: &[u8],
    arguments: &[&[u8]],
    environment: &[&[u8]],
) -> Result<UserThread, String> {
    let personality =
        crate::personality().ok_or_else(|| String::from("the Linux personality is not set up"))?;
    let context = personality.vfs().context(0, 0);
    let read = |path: &[u8]| {
        linux::read_program_file(personality.vfs(), &context, path)
            .map(|(bytes, _)| bytes)
            .map_err(|error| alloc::format!("reading {}: {error}", String::from_utf8_lossy(path)))
    };
    let file = read(path)?;
    let interpreter_path = loader::interpreter_path(&file)?;
    let interpreter = match &interpreter_path {
        Some(interpreter) => Some(read(interpreter)?),
        None => None,
    };
    let image = loader::load(
        crate::page_cache(),
        loader::FileBytes::of(&file),
        interpreter.as_ref().map(loader::FileBytes::of),
    )?;
    let files = ProgramFiles::find(None, path, interpreter_path.as_deref());
    let (process, entry) = prepare(new_process(), image, arguments, environment, path, &files)?;
    crate::programs::program_executed(&process, path, arguments, environment);
    start_kernel_child(process, name, entry)
}

/// Makes process `process` (from [`new_process`]) for `image`, the
/// program at `path`: its memory, and where its first thread starts.
fn prepare(
    process: u64,
    image: loader::Image,
    arguments: &[&[u8]],
    environment: &[&[u8]],
    path: &[u8],
    files: &ProgramFiles,
) -> Result<(Arc<Process>, UserEntry), String> {
    let rip = image.layout.entry;
    let (memory, rsp) = program_memory(image, arguments, environment, path, files)?;
    Ok((process::create(process, 0, memory), UserEntry { rip, rsp }))
}

/// Starts `process`'s program (a child of the kernel) at `entry`.
fn start_kernel_child(
    process: Arc<Process>,
    name: &str,
    entry: UserEntry,
) -> Result<UserThread, String> {
    match start(process.clone(), name, UserRegisters::from(entry), 0, 0, 0) {
        Ok(thread) => Ok(UserThread { thread, process }),
        Err(error) => {
            process::release(&process);
            Err(error)
        }
    }
}

/// Runs a thread of `process`'s program on a new kernel thread named
/// `name`, from `registers`, with FS base `fs_base`, as thread `tid` (0:
/// the first thread, whose id is the process id), clearing and waking
/// `clear_child_tid` (if not 0) when it ends.
pub fn start(
    process: Arc<Process>,
    name: &str,
    registers: UserRegisters,
    fs_base: u64,
    tid: u64,
    clear_child_tid: u64,
) -> Result<JoinHandle, String> {
    let space = process
        .with_memory(|memory| memory.space().clone())
        .ok_or_else(|| String::from("the process has ended"))?;
    let tid = if tid == 0 { process.id() } else { tid };
    if !process::add_thread(&process) {
        return Err(String::from("the process has ended"));
    }
    let counted = process.clone();
    let creator = sched::current().0;
    // The thread's entry returns when the program has ended (by `exit`, a
    // fault or a kill, through `hal::user::end`), so what it holds is
    // dropped: the address space, and the entry itself.
    let started = sched::spawn_with_stack(name, KERNEL_STACK_BYTES, move || {
        let strand = sched::current().0;
        process::attach(strand, &process, tid, clear_child_tid);
        hal::context::set_address_space(Some(space));
        let entered = hal::user::set_fs_base(fs_base)
            .map_err(|_| "a bad FS base")
            .and_then(|()| {
                hal::user::run_with(registers).map_err(|error| match error {
                    hal::user::EnterError::NotUserAddress => "an entry outside the user half",
                    hal::user::EnterError::NoKernelStack => "no kernel stack of its own",
                })
            });
        if let Err(why) = entered {
            log::error!("cannot enter user mode: {why}");
        }
        // `CLONE_CHILD_CLEARTID` and `set_tid_address`: the thread is gone,
        // say so to whoever waits for it (musl's thread-list lock, joins),
        // while its address space is still the one in CR3.
        let clear = process::clear_child_tid(strand);
        if clear != 0 && hal::user::copy_to_user(clear, &0u32.to_le_bytes()).is_ok() {
            crate::futex::wake_address(&process, clear, 1);
        }
        hal::context::set_address_space(None);
        crate::scheduling::thread_ended(strand);
        if process::thread_ended(strand, &process) {
            crate::scheduling::process_ended(process.id());
            crate::hooks().program_replaced(process.id());
        }
    });
    if let Ok(thread) = &started {
        // Its creator's policy and nice value, as Linux's children get.
        crate::scheduling::thread_created(creator, thread.id().0, tid);
    }
    started.map_err(|_| {
        process::thread_not_started(&counted);
        String::from("no memory for the thread's kernel stack")
    })
}

/// Ends the calling thread (the `exit` system call); the process ends
/// with `status` if it was the last thread.
pub fn exit_thread(status: i64) -> ! {
    process::set_thread_exit(sched::current().0, status);
    end_thread()
}

/// Ends the calling thread's process with `status` (`exit_group`).
pub fn exit_group(status: i64) -> ! {
    end_program(End::Exited(status))
}

/// Ends the calling thread's process for a fault in ring 3.
pub fn fault(fault: Fault) -> ! {
    end_program(End::Killed {
        signal: process::signal_for_fault(fault.vector),
        fault: Some(fault),
    })
}

/// Ends the calling thread, its process killed by `signal` (`kill`).
pub fn killed(signal: u8) -> ! {
    end_program(End::Killed {
        signal,
        fault: None,
    })
}

/// Ends the whole process with `how`: this thread now, the others on
/// their way back to user mode.
fn end_program(how: End) -> ! {
    if let Some(process) = process::current() {
        process::end_group(&process, how);
    }
    end_thread()
}

fn end_thread() -> ! {
    hal::user::end(0);
    // Not in a user program (cannot happen for a system call or a ring-3
    // fault): end the thread itself.
    sched::exit(ExitReason::Finished)
}
