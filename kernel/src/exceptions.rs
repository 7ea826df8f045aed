//! What the kernel does with CPU exceptions (hal reports them here).
//!
//! Every exception is reported on the console with its vector, error code,
//! RIP, CR2 and all registers. A breakpoint then continues. Any other
//! exception in an ordinary kernel thread ends that thread (its joiner sees
//! [`sched::ExitReason::Faulted`]) and the kernel runs on; in the boot or
//! idle thread, in interrupt context or inside the scheduler it is fatal.

use hal::trap::{TrapFrame, PAGE_FAULT_VECTOR};
use sched::{ExitReason, Fault};

/// Vector of the breakpoint exception (`int3`).
const BREAKPOINT_VECTOR: u64 = 3;
/// RFLAGS.IF: interrupts were enabled where the exception happened.
const RFLAGS_INTERRUPT_ENABLE: u64 = 1 << 9;

/// Installs [`handle_exception`] as hal's exception handler.
pub fn init() {
    hal::trap::set_exception_handler(handle_exception);
}

fn handle_exception(frame: &mut TrapFrame) {
    // Report without allocating or taking the console lock: the exception
    // may have interrupted the allocator or a console write.
    hal::console::emergency_write_fmt(format_args!(
        "\n{frame}\n  thread: {:?}\n",
        hal::context::current_id()
    ));
    if frame.vector == BREAKPOINT_VECTOR {
        return;
    }
    let was_in_interrupt_handler = frame.rflags & RFLAGS_INTERRUPT_ENABLE == 0;
    if sched::is_current_critical() || was_in_interrupt_handler {
        panic!(
            "fatal {} (vector {}) at RIP={:#x}",
            frame.exception_name(),
            frame.vector,
            frame.rip
        );
    }
    let fault = Fault {
        vector: frame.vector,
        error_code: frame.error_code,
        rip: frame.rip,
        fault_address: if frame.vector == u64::from(PAGE_FAULT_VECTOR) {
            frame.fault_address()
        } else {
            0
        },
    };
    hal::console::emergency_write_fmt(format_args!("  -> stopping the faulting thread\n"));
    sched::exit(ExitReason::Faulted(fault));
}
