//! The Linux personality in the running kernel: its file tree and how its
//! system-call table is bound to `MachineTrap.Syscall`.
//!
//! - The file tree is a `vfs::RamFs` filled from the boot archive (the
//!   initramfs: every file `./x` put in it, `bin/`, `ext/`, ...), with
//!   `/dev/null`, `zero`, `full`, `random`, `urandom` and `console`.
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
use vfs::{devices, Device, Errno, OpenFile, RamFs, Readiness, Timespec, Vfs};

use crate::syscalls::SyscallArgs;

/// Device number of `/dev/console` (Linux's 5:1).
const CONSOLE_DEV: u64 = vfs::makedev(5, 1);

static PERSONALITY: spin::Once<Personality> = spin::Once::new();

/// The personality, once [`init`] has run.
pub fn personality() -> Option<&'static Personality> {
    PERSONALITY.get()
}

/// The serial console as a character device: output goes to the console,
/// input is read a line at a time with echo (a minimal line discipline:
/// the tty with its modes and job control comes with the shell work).
struct Console;

impl Device for Console {
    fn read(&self, _offset: u64, buf: &mut [u8], nonblocking: bool) -> Result<usize, Errno> {
        let mut count = 0;
        while count < buf.len() {
            let Some(byte) = hal::console::try_read_byte() else {
                if count > 0 && nonblocking {
                    break;
                }
                if nonblocking {
                    return Err(Errno::EAGAIN);
                }
                sched::sleep_ms(10);
                continue;
            };
            match byte {
                // ^D at the start of a line: end of file.
                0x04 if count == 0 => return Ok(0),
                0x04 => break,
                // Backspace and delete: drop the last byte typed.
                0x08 | 0x7f => {
                    if count > 0 {
                        count -= 1;
                        hal::console::write_str("\x08 \x08");
                    }
                }
                b'\r' | b'\n' => {
                    buf[count] = b'\n';
                    count += 1;
                    hal::console::write_str("\n");
                    break;
                }
                _ => {
                    buf[count] = byte;
                    count += 1;
                    crate::user::console_write(&[byte]);
                }
            }
        }
        Ok(count)
    }

    fn write(&self, _offset: u64, buf: &[u8], _nonblocking: bool) -> Result<usize, Errno> {
        crate::user::console_write(buf);
        Ok(buf.len())
    }

    fn readiness(&self) -> Readiness {
        Readiness {
            readable: true,
            writable: true,
            hung_up: false,
        }
    }

    fn is_seekable(&self) -> bool {
        false
    }
}

/// The file tree's clock: the time since boot (no real-time clock yet).
fn now() -> Timespec {
    let ns = hal::timer::uptime_ns();
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
        vfs.devices().register(CONSOLE_DEV, Arc::new(Console));
        let root = vfs.context(0, 0);
        if let Err(error) = devices::make_memory_device_nodes(&vfs, &root, b"/dev") {
            log::error!("linux: /dev: {error}");
        }
        let nodes = vfs::PathContext { umask: 0, ..root.clone() };
        if let Err(error) = vfs.mknod(&nodes, b"/dev/console", vfs::S_IFCHR | 0o620, CONSOLE_DEV) {
            log::error!("linux: /dev/console: {error}");
        }
        for directory in [&b"/tmp"[..], b"/proc", b"/root", b"/home"] {
            let _ = vfs.mkdir(&root, directory, 0o755);
        }
        let console = vfs
            .open(&root, b"/dev/console", vfs::flags::O_RDWR, 0)
            .unwrap_or_else(|_| {
                // Only if /dev/console could not be made: a console file
                // that is not in the tree still works.
                Arc::new(OpenFile::new(vfs.root(), vfs::flags::O_RDWR, Some(Arc::new(Console))))
            });
        linux::set_interrupted_check(|| crate::process::pending_kill().is_some());
        Personality::new(vfs, console, Arc::new(now))
    });
    bind(personality);
}

/// Strands known to run a Linux process, for the guard's fast path: slot
/// `strand % LINUX_STRAND_SLOTS` holds `strand + 1` while that strand runs
/// one. Two live strands may share a slot; the one that lost it is found
/// by the slow path (the process table), so the guard is always right and
/// usually costs one load.
const LINUX_STRAND_SLOTS: usize = 256;
static LINUX_STRANDS: [core::sync::atomic::AtomicU64; LINUX_STRAND_SLOTS] =
    [const { core::sync::atomic::AtomicU64::new(0) }; LINUX_STRAND_SLOTS];

fn slot(strand: u64) -> &'static core::sync::atomic::AtomicU64 {
    &LINUX_STRANDS[strand as usize % LINUX_STRAND_SLOTS]
}

/// Whether the calling strand's process runs under this personality.
fn is_linux_process(strand: u64) -> bool {
    use core::sync::atomic::Ordering;
    if slot(strand).load(Ordering::Relaxed) == strand + 1 {
        return true;
    }
    let linux = crate::user::process_of(strand)
        .and_then(|pid| PERSONALITY.get()?.files(pid))
        .is_some();
    if linux {
        slot(strand).store(strand + 1, Ordering::Relaxed);
    }
    linux
}

/// Strand `strand` ended: it leaves the guard's fast path (a later strand
/// with the same number must be asked about afresh).
pub fn strand_ended(strand: u64) {
    let _ = slot(strand).compare_exchange(
        strand + 1,
        0,
        core::sync::atomic::Ordering::Relaxed,
        core::sync::atomic::Ordering::Relaxed,
    );
}

/// The personality's handler: its own families, else the kernel's core
/// (decided by number first, so a core call pays no lookup here).
fn linux_call(args: &SyscallArgs) -> i64 {
    let &(strand, number, a0, a1, a2, a3, a4, a5) = args;
    if !linux::owns(number) {
        return crate::syscalls::core_table(args);
    }
    let answer = PERSONALITY.get().and_then(|personality| {
        let pid = crate::user::process_of(strand)?;
        personality.handle(pid, number, [a0, a1, a2, a3, a4, a5])
    });
    answer.unwrap_or_else(|| crate::syscalls::core_table(args))
}

fn bind(_personality: &Personality) {
    let Some(event) = crate::syscalls::event() else {
        log::error!("linux: MachineTrap.Syscall is not set up");
        return;
    };
    // Guard and handler as one call (the dispatcher's fused path).
    let install = Install::guarded(|args: &SyscallArgs| is_linux_process(args.0), linux_call)
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
        personality.process_ended(pid);
    }
}

/// Where `./x run --exec` puts the command to run at boot.
pub const BOOT_COMMAND_PATH: &[u8] = b"/etc/spindle-exec";

/// Reads a whole file of the tree.
fn read_file(vfs: &Vfs, path: &[u8]) -> Result<alloc::vec::Vec<u8>, Errno> {
    let file = vfs.open(&vfs.context(0, 0), path, vfs::flags::O_RDONLY, 0)?;
    let mut bytes = alloc::vec![0u8; file.metadata().size as usize];
    let mut done = 0;
    while done < bytes.len() {
        let count = file.read(&mut bytes[done..])?;
        if count == 0 {
            break;
        }
        done += count;
    }
    bytes.truncate(done);
    Ok(bytes)
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
    let shell = read_file(vfs, b"/bin/busybox")
        .map_err(|error| alloc::format!("reading /bin/busybox: {error}"))?;
    let thread = crate::user::spawn_program("sh", &shell, &["sh", "-c", command])?;
    Ok(match thread.join() {
        crate::user::UserExit::Exited(status) => status as u8,
        crate::user::UserExit::Killed(signal) => 128u8.saturating_add(signal),
        crate::user::UserExit::Faulted(fault) => {
            128u8.saturating_add(crate::process::signal_for_fault(fault.vector))
        }
    })
}
