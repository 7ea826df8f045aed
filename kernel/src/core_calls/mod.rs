//! The kernel's own system calls: the table `MachineTrap.Syscall` starts
//! with as its intrinsic handler (`crate::syscalls`), and the personality
//! falls back on. It answers Spindle's own calls (the kernel shell, a
//! Wasm short-circuit, the Appel-Li fault handler's configuration) and a
//! raw program's console `write` (the kernel's test programs, of no
//! personality), and leaves the Linux process family to
//! `linux_process::handle`; anything else is `-ENOSYS`, reported once.

mod io;

use core::sync::atomic::{AtomicU64, Ordering};

use linux_abi::{syscall, Errno};

use crate::syscalls::SyscallArgs;

/// Longest `write` the table copies in one call.
const WRITE_CHUNK: usize = 4096;

/// The kernel's own system calls (the event's intrinsic handler until a
/// personality takes over): one line per call, each family in its own
/// file.
pub fn core_table(args: &SyscallArgs) -> i64 {
    let &(strand, number, a0, a1, a2, a3, ..) = args;
    match number {
        syscall::WRITE => io::write(a0, a1, a2),
        syscall::WRITEV => io::writev(a0, a1, a2),
        // No terminal yet (the personality brings the tty).
        syscall::IOCTL => Errno::ENOTTY.as_negative(),
        // Spindle's own: the kernel shell for `/bin/spindle`.
        crate::shell::SHELL_SYSCALL => crate::shell::shell_syscall(a0, a1),
        // Spindle's own: a Wasm short-circuit of one of the caller's calls.
        crate::tracing::SHORT_CIRCUIT_SYSCALL => {
            crate::tracing::short_circuit_syscall(strand, a0, a1)
        }
        // Spindle's own: configure the Appel-Li fault-handling extension.
        crate::appel_li::VM_HANDLER_SYSCALL => crate::appel_li::vm_handler(strand, a0, a1, a2, a3),
        // The Linux personality's process family.
        _ => linux_process::handle(args).unwrap_or_else(|| unknown(strand, number)),
    }
}

/// Numbers below this are remembered once reported (Linux's table ends
/// near 460); others are reported every time, which a program can only
/// provoke by asking for numbers no Linux has.
const REPORTED_NUMBERS: usize = 512;
static REPORTED: [AtomicU64; REPORTED_NUMBERS / 64] =
    [const { AtomicU64::new(0) }; REPORTED_NUMBERS / 64];

/// A call nobody implements: `-ENOSYS`, reported on the console the first
/// time each number is asked for (so a missing call shows once, and a
/// program probing for optional calls does not flood the log).
fn unknown(strand: u64, number: u64) -> i64 {
    let first = match usize::try_from(number) {
        Ok(index) if index < REPORTED_NUMBERS => {
            let bit = 1u64 << (index % 64);
            REPORTED[index / 64].fetch_or(bit, Ordering::Relaxed) & bit == 0
        }
        _ => false,
    };
    if first {
        let pid = linux_process::threads::process_of(strand).unwrap_or(0);
        log::warn!(
            "system call {number} is not implemented (first asked by process {pid}): ENOSYS"
        );
    }
    Errno::ENOSYS.as_negative()
}
