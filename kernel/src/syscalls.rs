//! System calls as events: every `syscall` from user mode raises
//! `MachineTrap.Syscall(strand, number, a0..a5)` through the dispatcher,
//! and its intrinsic handler is the kernel's own system-call table (SPIN's
//! `MachineTrap.Syscall`, the events paper's system-call example).
//!
//! Extensions and personalities extend the table by installing handlers on
//! the event; the intrinsic handler below is what runs when none does.
//! It speaks the Linux numbers and errno values for the few calls it
//! knows (`write`, `getpid`, `exit`, `exit_group`); everything else is
//! `-ENOSYS`.
//!
//! A user thread's memory is reached only through `hal::user`'s checked
//! copies: a bad pointer is `-EFAULT`, never a kernel fault.

use alloc::{collections::BTreeMap, sync::Arc};
use core::sync::atomic::{AtomicU64, Ordering};

use dispatch::{Authority, Event};
use hal::user::SyscallFrame;

/// The event's arguments: the calling strand, the number, six arguments.
pub type SyscallArgs = (u64, u64, u64, u64, u64, u64, u64, u64);

/// Linux system-call numbers the intrinsic handler implements.
pub mod number {
    /// `write(fd, buf, count)`.
    pub const WRITE: u64 = 1;
    /// `getpid()`.
    pub const GETPID: u64 = 39;
    /// `exit(status)`.
    pub const EXIT: u64 = 60;
    /// `exit_group(status)`.
    pub const EXIT_GROUP: u64 = 231;
}

/// Linux errno values the intrinsic handler returns (negated).
pub mod errno {
    /// Bad file descriptor.
    pub const EBADF: i64 = 9;
    /// Bad address.
    pub const EFAULT: i64 = 14;
    /// Function not implemented.
    pub const ENOSYS: i64 = 38;
}

/// Longest `write` the intrinsic handler copies in one call.
const WRITE_CHUNK: usize = 4096;

struct Syscalls {
    event: Arc<Event<SyscallArgs, i64>>,
    _authority: Authority,
    /// Exit statuses requested by user threads, by strand, taken by the
    /// entry after the raise returns (a thread cannot end inside a raise:
    /// the dispatcher's references on its stack would never be dropped).
    exits: spin::Mutex<BTreeMap<u64, i64>>,
    /// System calls made.
    count: AtomicU64,
}

static SYSCALLS: spin::Once<Syscalls> = spin::Once::new();

/// Creates `MachineTrap.Syscall` and installs the entry into hal.
pub fn init() {
    SYSCALLS.call_once(|| {
        let (event, authority) = Event::new("MachineTrap.Syscall", intrinsic as fn(&SyscallArgs) -> i64);
        Syscalls {
            event: Arc::new(event),
            _authority: authority,
            exits: spin::Mutex::new(BTreeMap::new()),
            count: AtomicU64::new(0),
        }
    });
    hal::user::set_syscall_handler(entry);
}

/// The event (for the shell's `events`, tests and extensions).
pub fn event() -> Option<&'static Arc<Event<SyscallArgs, i64>>> {
    SYSCALLS.get().map(|syscalls| &syscalls.event)
}

/// System calls made since boot.
pub fn count() -> u64 {
    SYSCALLS
        .get()
        .map_or(0, |syscalls| syscalls.count.load(Ordering::Relaxed))
}

/// The calling strand's identifier in the event's arguments.
fn current_strand() -> u64 {
    sched::current().0
}

/// hal's system-call entry: raise the event, return its result, or end the
/// thread if it asked to exit.
fn entry(frame: &mut SyscallFrame) {
    let Some(syscalls) = SYSCALLS.get() else {
        frame.set_result(-errno::ENOSYS as u64);
        return;
    };
    syscalls.count.fetch_add(1, Ordering::Relaxed);
    let strand = current_strand();
    let [a0, a1, a2, a3, a4, a5] = frame.args();
    let mut args = (strand, frame.number(), a0, a1, a2, a3, a4, a5);
    let result = syscalls.event.raise(&mut args).unwrap_or(-errno::ENOSYS);
    // Taken out of the map first: the lock must not be held while the
    // thread ends.
    let exit = syscalls.exits.lock().remove(&strand);
    if let Some(status) = exit {
        crate::user::finish(status);
    }
    frame.set_result(result as u64);
}

/// The kernel's own system calls (the event's intrinsic handler).
fn intrinsic(args: &SyscallArgs) -> i64 {
    let &(strand, number, a0, a1, a2, ..) = args;
    match number {
        number::WRITE => write(a0, a1, a2),
        number::GETPID => strand as i64,
        number::EXIT | number::EXIT_GROUP => {
            if let Some(syscalls) = SYSCALLS.get() {
                syscalls.exits.lock().insert(strand, a0 as i32 as i64);
            }
            0
        }
        _ => -errno::ENOSYS,
    }
}

/// `write(fd, buf, count)` to the console for fds 1 and 2.
fn write(fd: u64, buffer: u64, count: u64) -> i64 {
    if fd != 1 && fd != 2 {
        return -errno::EBADF;
    }
    let mut chunk = [0u8; WRITE_CHUNK];
    let len = (count as usize).min(WRITE_CHUNK);
    if hal::user::copy_from_user(&mut chunk[..len], buffer).is_err() {
        return -errno::EFAULT;
    }
    crate::user::console_write(&chunk[..len]);
    len as i64
}
