//! What the kernel does with CPU exceptions (hal reports them here).
//!
//! Every exception is reported on the console with its vector, error code,
//! RIP, CR2 and all registers. A breakpoint then continues. Any other
//! exception in an ordinary kernel thread ends that thread (its joiner sees
//! [`sched::ExitReason::Faulted`]) and the kernel runs on; in the boot or
//! idle thread, in interrupt context, inside the scheduler, or if it is an
//! abort (NMI, double fault, machine check) it is fatal.

use core::sync::atomic::{AtomicU64, Ordering};

use hal::trap::{TrapFrame, PAGE_FAULT_VECTOR};
use sched::{ExitReason, Fault};

/// Breakpoints reported and resumed so far.
static BREAKPOINTS: AtomicU64 = AtomicU64::new(0);

/// How many breakpoints the handler has reported and resumed from.
pub fn breakpoints_handled() -> u64 {
    BREAKPOINTS.load(Ordering::Relaxed)
}

/// Vector of the breakpoint exception (`int3`).
const BREAKPOINT_VECTOR: u64 = 3;
/// NMI, double fault and machine check: always fatal. A kernel stack
/// overflow arrives as a double fault (the page fault on the guard page
/// cannot push its frame), on its own IST stack.
const ABORT_VECTORS: [u64; 3] = [2, 8, 18];
/// RFLAGS.IF: interrupts were enabled where the exception happened.
const RFLAGS_INTERRUPT_ENABLE: u64 = 1 << 9;

/// Installs [`handle_exception`] as hal's exception handler.
pub fn init() {
    hal::trap::set_exception_handler(handle_exception);
    hal::trap::set_return_to_user_handler(return_to_user);
}

/// After an interrupt in user mode: a killed program ends here rather
/// than running on (a program that never makes a system call still ends).
fn return_to_user(frame: &mut TrapFrame) {
    // Another thread stopped the process: this one waits too.
    ::process::wait_while_stopped();
    if let Some(signal) = ::process::pending_kill() {
        linux_process::threads::killed(signal);
    }
    if let Some(signal) = linux_process::signals::after_interrupt(frame) {
        linux_process::threads::killed(signal);
    }
}

fn handle_exception(frame: &mut TrapFrame) {
    // A user page fault may be resolved by a handler of the Translation
    // events (mapping the page, or changing its protection): the program
    // retries the access, and nothing is reported.
    if frame.is_from_user()
        && frame.vector == u64::from(PAGE_FAULT_VECTOR)
        && crate::translation::user_page_fault(frame.fault_address(), frame.error_code)
    {
        return;
    }
    // A program that handles the fault's signal (SIGSEGV, SIGFPE, ...)
    // resumes in its handler, unreported: it asked for the fault.
    if frame.is_from_user() && linux_process::signals::deliver_fault(frame, &fault_of(frame)) {
        return;
    }
    // Report without allocating or taking the console lock: the exception
    // may have interrupted the allocator or a console write.
    hal::console::emergency_write_fmt(format_args!(
        "\n{frame}\n  thread: {}\n",
        hal::context::current_id().map_or(-1, |id| id as i64)
    ));
    // A kernel breakpoint is counted and resumed (tests raise one); a
    // program's that it does not handle ends it with SIGTRAP, as on Linux.
    if frame.vector == BREAKPOINT_VECTOR && !frame.is_from_user() {
        BREAKPOINTS.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let was_in_interrupt_handler = frame.rflags() & RFLAGS_INTERRUPT_ENABLE == 0;
    // Aborts (Intel SDM vol. 3, 6.5): the state they interrupted cannot be
    // trusted, so no thread is resumed or stopped cleanly after them.
    let is_abort = ABORT_VECTORS.contains(&frame.vector);
    if is_abort || sched::is_current_critical() || was_in_interrupt_handler {
        panic!(
            "fatal {} (vector {}) at RIP={:#x}",
            frame.exception_name(),
            frame.vector,
            frame.rip()
        );
    }
    let fault = fault_of(frame);
    if frame.is_from_user() {
        // A program's fault ends that program; the kernel goes on.
        hal::console::emergency_write_fmt(format_args!("  -> ending the user program\n"));
        linux_process::threads::fault(fault);
    }
    hal::console::emergency_write_fmt(format_args!("  -> stopping the faulting thread\n"));
    sched::exit(ExitReason::Faulted(fault));
}

/// What the trap in `frame` was, as the scheduler and signals record it.
fn fault_of(frame: &TrapFrame) -> Fault {
    Fault {
        vector: frame.vector,
        error_code: frame.error_code,
        rip: frame.rip(),
        fault_address: if frame.vector == u64::from(PAGE_FAULT_VECTOR) {
            frame.fault_address()
        } else {
            0
        },
    }
}
