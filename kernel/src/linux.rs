//! The Linux personality in the running kernel: its file tree and how its
//! system-call table is bound to `MachineTrap.Syscall`.
//!
//! - The file tree is a `vfs::RamFs` filled from the boot archive (the
//!   initramfs: every file `./x` put in it, `bin/`, `ext/`, ...), with
//!   `/dev/null`, `zero`, `full`, `random`, `urandom` and `console`, and
//!   `/proc` mounted (`crate::system`).
//! - The personality (`personality/linux`) is installed on
//!   `MachineTrap.Syscall` as a kernel handler guarded by the calling
//!   process's personality, ordered last so that its result is the call's
//!   (an extension loaded for a process still runs first and observes).
//!   The kernel's own table, which was the event's intrinsic handler,
//!   becomes the personality's fallback for the calls it leaves to the
//!   core (processes, threads, memory, futexes, time) and the event's
//!   default handler for processes of no personality: SPIN's way of
//!   replacing an implementation (deregister the intrinsic handler,
//!   install another).
//! - The process table tells the personality when a process is made (from
//!   nothing, or forked) and when it ends.

use alloc::sync::Arc;

use dispatch::{Install, Order, Principal};
use linux::Personality;
use vfs::{devices, Errno, OpenFile, RamFs, Timespec, Vfs};

use crate::syscalls::SyscallArgs;

/// Device number of `/dev/console` (Linux's 5:1).
const CONSOLE_DEV: u64 = vfs::makedev(5, 1);
/// Device number of `/dev/tty` (Linux's 5:0).
const TTY_DEV: u64 = vfs::makedev(5, 0);

static PERSONALITY: spin::Once<Personality> = spin::Once::new();

/// The personality, once [`init`] has run.
pub fn personality() -> Option<&'static Personality> {
    PERSONALITY.get()
}

/// The file tree's clock: the wall clock (files carry dates).
fn now() -> Timespec {
    let ns = hal::rtc::realtime_ns();
    Timespec {
        sec: (ns / 1_000_000_000) as i64,
        nsec: (ns % 1_000_000_000) as u32,
    }
}

/// Builds the file tree from `archive` and binds the personality to
/// `MachineTrap.Syscall`.
pub fn init(archive: &'static [u8]) {
    let personality = PERSONALITY.call_once(|| {
        let fs = RamFs::new(1, Arc::new(now) as vfs::Clock);
        match vfs::populate_from_cpio(&fs, archive) {
            Ok(count) => log::info!("linux: {count} files and directories from the boot archive"),
            Err(error) => log::error!("linux: the boot archive could not be unpacked: {error}"),
        }
        let vfs = Arc::new(Vfs::new(fs));
        let seed = hal::cpu::read_tsc();
        devices::register_memory_devices(vfs.devices(), devices::Urandom::seeded(seed));
        // One terminal: the serial line, as /dev/console and as the
        // controlling terminal /dev/tty.
        let console = crate::terminal::terminal().clone();
        vfs.devices().register(CONSOLE_DEV, console.clone());
        vfs.devices().register(TTY_DEV, console);
        let root = vfs.context(0, 0);
        if let Err(error) = devices::make_memory_device_nodes(&vfs, &root, b"/dev") {
            log::error!("linux: /dev: {error}");
        }
        let nodes = vfs::PathContext {
            umask: 0,
            ..root.clone()
        };
        for (path, rdev) in [(&b"/dev/console"[..], CONSOLE_DEV), (b"/dev/tty", TTY_DEV)] {
            if let Err(error) = vfs.mknod(&nodes, path, vfs::S_IFCHR | 0o666, rdev) {
                log::error!(
                    "linux: {}: {error}",
                    core::str::from_utf8(path).unwrap_or("a device")
                );
            }
        }
        for directory in [&b"/tmp"[..], b"/root", b"/home"] {
            let _ = vfs.mkdir(&root, directory, 0o755);
        }
        crate::system::mount_proc(&vfs);
        let console = vfs
            .open(&root, b"/dev/console", vfs::flags::O_RDWR, 0)
            .unwrap_or_else(|_| {
                // Only if /dev/console could not be made: a console file
                // that is not in the tree still works.
                Arc::new(OpenFile::new(
                    vfs.root(),
                    vfs::flags::O_RDWR,
                    Some(crate::terminal::terminal().clone()),
                ))
            });
        linux::set_interrupted_check(linux_process::signals::interrupted);
        linux::set_current_thread(linux_process::signals::current_thread);
        linux::set_current_process(linux_process::signals::current_process);
        Personality::new(vfs, console, Arc::new(now), crate::system::facts())
    });
    linux_process::set_personality(personality);
    bind(personality);
}

/// Strands known to run a Linux process, with their process, for the
/// guard's fast path: slot `strand % LINUX_STRAND_SLOTS` holds
/// `(strand + 1) << 32 | pid` while that strand runs process `pid` (one
/// word, so a reader never pairs one strand with another's process). Two
/// live strands may share a slot; the one that lost it is found by the
/// slow path (the process table), so the guard is always right and
/// usually costs one load. Strands or processes numbered 2^32 and beyond
/// always take the slow path.
const LINUX_STRAND_SLOTS: usize = 256;
static LINUX_STRANDS: [core::sync::atomic::AtomicU64; LINUX_STRAND_SLOTS] =
    [const { core::sync::atomic::AtomicU64::new(0) }; LINUX_STRAND_SLOTS];

fn slot(strand: u64) -> &'static core::sync::atomic::AtomicU64 {
    &LINUX_STRANDS[strand as usize % LINUX_STRAND_SLOTS]
}

/// The process of `strand` if the fast path knows it.
fn cached_process(strand: u64) -> Option<u64> {
    let entry = slot(strand).load(core::sync::atomic::Ordering::Relaxed);
    (entry >> 32 == strand + 1).then_some(entry & 0xffff_ffff)
}

/// Whether the calling strand's process runs under this personality.
fn is_linux_process(strand: u64) -> bool {
    if cached_process(strand).is_some() {
        return true;
    }
    let Some(pid) = linux_process::threads::process_of(strand) else {
        return false;
    };
    let linux = PERSONALITY.get().and_then(|p| p.files(pid)).is_some();
    if linux && strand < u64::from(u32::MAX) && pid <= u64::from(u32::MAX) {
        slot(strand).store(
            (strand + 1) << 32 | pid,
            core::sync::atomic::Ordering::Relaxed,
        );
    }
    linux
}

/// Strand `strand` ended: it leaves the guard's fast path (a later strand
/// with the same number must be asked about afresh).
pub fn strand_ended(strand: u64) {
    if let Some(pid) = cached_process(strand) {
        let _ = slot(strand).compare_exchange(
            (strand + 1) << 32 | pid,
            0,
            core::sync::atomic::Ordering::Relaxed,
            core::sync::atomic::Ordering::Relaxed,
        );
    }
}

/// The personality's handler: its own families, else the kernel's core
/// (a core call pays one look in the personality's table).
fn linux_call(args: &SyscallArgs) -> i64 {
    let &(strand, number, a0, a1, a2, a3, a4, a5) = args;
    // `getpid`, the null system call: the process the guard just found,
    // as Linux reads `current->tgid`.
    if number == linux_abi::syscall::GETPID {
        if let Some(pid) = cached_process(strand) {
            return pid as i64;
        }
    }
    // The personality's own families (it looks the number up once, first
    // thing), else the kernel's core.
    let answer = PERSONALITY.get().and_then(|personality| {
        let pid = cached_process(strand).or_else(|| linux_process::threads::process_of(strand))?;
        personality.handle(pid, number, [a0, a1, a2, a3, a4, a5])
    });
    answer.unwrap_or_else(|| crate::core_calls::core_table(args))
}

fn bind(_personality: &Personality) {
    let Some(event) = crate::syscalls::event() else {
        log::error!("linux: MachineTrap.Syscall is not set up");
        return;
    };
    // Guard and handler as one call (the dispatcher's fused path).
    // A call a short-circuit answers for its process is left to it.
    let install = Install::guarded(
        |args: &SyscallArgs| {
            is_linux_process(args.0) && !crate::tracing::is_short_circuited(args.0, args.1)
        },
        linux_call,
    )
    .order(Order::Last);
    if let Err(error) = event.install(Principal::KERNEL, install) {
        log::error!("linux: binding the personality to MachineTrap.Syscall: {error}");
        return;
    }
    crate::syscalls::make_core_table_the_default();
}

/// A process was made: forked from `parent`, or from nothing (`parent`
/// 0, or a parent that is not a Linux process).
pub fn process_created(pid: u64, parent: u64) {
    if let Some(personality) = PERSONALITY.get() {
        if parent != 0 && personality.files(parent).is_some() {
            personality.process_forked(parent, pid);
        } else {
            personality.process_started(pid);
        }
    }
}

/// A process ended (its last thread, or it never started).
pub fn process_ended(pid: u64) {
    if let Some(personality) = PERSONALITY.get() {
        linux_process::programs::process_ending(pid);
        linux_process::signals::parent_ended(pid);
        personality.process_ended(pid);
    }
}

/// Where `./x run --exec` puts the command to run at boot.
pub const BOOT_COMMAND_PATH: &[u8] = b"/etc/spindle-exec";

/// Reads a whole file of the tree.
fn read_file(vfs: &Vfs, path: &[u8]) -> Result<alloc::vec::Vec<u8>, Errno> {
    linux::read_whole_file(vfs, &vfs.context(0, 0), path)
}

/// `spindle.mode=exec` (`./x run --exec 'COMMAND'`): runs the command in
/// [`BOOT_COMMAND_PATH`] under `/bin/sh -c` (busybox's) and returns its
/// exit status as a shell reports it (128 + the signal for a program a
/// signal ended).
pub fn run_boot_command() -> Result<u8, alloc::string::String> {
    let personality = personality().ok_or("the Linux personality is not set up")?;
    let vfs = personality.vfs();
    let command = read_file(vfs, BOOT_COMMAND_PATH)
        .map_err(|error| alloc::format!("reading /etc/spindle-exec: {error}"))?;
    let command = core::str::from_utf8(&command)
        .map_err(|_| "the command is not UTF-8")?
        .trim_end_matches('\n');
    let (shell, _) = linux::read_program_file(vfs, &vfs.context(0, 0), b"/bin/busybox")
        .map_err(|error| alloc::format!("reading /bin/busybox: {error}"))?;
    let thread = linux_process::threads::spawn_program(
        "sh",
        loader::FileBytes::of(&shell),
        &["sh", "-c", command],
    )?;
    Ok(match thread.join() {
        linux_process::threads::UserExit::Exited(status) => status as u8,
        linux_process::threads::UserExit::Killed(signal) => 128u8.saturating_add(signal),
        linux_process::threads::UserExit::Faulted(fault) => {
            128u8.saturating_add(::process::signal_for_fault(fault.vector))
        }
    })
}

/// `spindle.mode=linux` (what `./x run` boots): Debian's busybox `sh` on
/// the serial console, as an interactive login shell would run (the
/// kernel shell is reachable from it with `spindle COMMAND`). Returns
/// when the shell exits.
pub fn run_interactive_shell() -> Result<(), alloc::string::String> {
    let personality = personality().ok_or("the Linux personality is not set up")?;
    let vfs = personality.vfs();
    let (shell, _) = linux::read_program_file(vfs, &vfs.context(0, 0), b"/bin/busybox")
        .map_err(|error| alloc::format!("reading /bin/busybox: {error}"))?;
    hal::console::write_str(
        "\nSpindle: Debian's busybox sh on the Linux personality. \
         `spindle help` lists the kernel shell's commands; `exit` halts.\n",
    );
    // The shell leads its own process group, which owns the terminal's
    // foreground from the start (as a login shell finds it).
    let pid = linux_process::threads::new_process();
    crate::terminal::terminal().set_foreground(pid);
    // Keys that signal (^C, ^Z, ^\) must work while nobody reads the
    // terminal (a foreground `sleep`).
    crate::terminal::watch_for_signal_keys();
    let thread = linux_process::threads::spawn_program_in(
        pid,
        "sh",
        loader::FileBytes::of(&shell),
        &["-sh"],
    )?;
    let end = thread.join();
    hal::console::write_fmt(format_args!("the shell ended: {end}\n"));
    Ok(())
}

/// Removes `path` and everything under it (as `rm -r`).
pub fn remove_tree(vfs: &Vfs, context: &vfs::PathContext, path: &[u8]) -> Result<(), Errno> {
    let directory = vfs.resolve(context, path, false)?;
    if directory.file_type() != vfs::FileType::Directory {
        return vfs.unlink(context, path);
    }
    let mut names = alloc::vec::Vec::new();
    directory.readdir(0, &mut |entry, _| {
        if entry.name != b"." && entry.name != b".." {
            names.push(entry.name.to_vec());
        }
        true
    })?;
    for name in names {
        let child: alloc::vec::Vec<u8> = [path, b"/", &name].concat();
        remove_tree(vfs, context, &child)?;
    }
    vfs.rmdir(context, path)
}

/// Runs `work` with the processes it starts confined to a fresh scratch
/// directory `path` (their "/", as after `chroot`), then removes the
/// directory with whatever they made in it: the system-call fuzzers make
/// files with random names wherever random pointers lead, and must leave
/// the heap as they found it.
pub fn in_scratch_tree<T>(
    path: &[u8],
    work: impl FnOnce() -> T,
) -> Result<T, alloc::string::String> {
    let personality = personality().ok_or("the Linux personality is not set up")?;
    let vfs = personality.vfs().clone();
    let root = vfs.context(0, 0);
    let scratch = vfs
        .mkdir(&root, path, 0o777)
        .map_err(|error| alloc::format!("making the scratch directory: {error}"))?;
    // Its own /dev, with the memory devices (/dev/null, ...).
    let dev: alloc::vec::Vec<u8> = [path, b"/dev"].concat();
    devices::make_memory_device_nodes(&vfs, &root, &dev)
        .map_err(|error| alloc::format!("making the scratch directory's /dev: {error}"))?;
    personality.set_start_directory(Some(scratch));
    let result = work();
    personality.set_start_directory(None);
    remove_tree(&vfs, &root, path)
        .map_err(|error| alloc::format!("removing the scratch directory: {error}"))?;
    Ok(result)
}
