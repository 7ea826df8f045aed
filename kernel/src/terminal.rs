//! The serial console as the terminal (`services/terminal`): the kernel's
//! side of it, the [`Host`] on the serial line, the scheduler
//! and the process model.
//!
//! Who waits for input (a read, `poll`, the signal-key watcher) blocks on
//! [`INPUT`], which the serial receive interrupt wakes
//! (`hal::console::set_input_hook`), and so does a thread that took typed
//! bytes in. A waiter looks again after [`LOST_EDGE_MS`] all the same
//! (the interrupt is an edge that may be missed, as `hal::console`
//! allows for), or every [`INPUT_POLL_MS`] where input does not arrive by
//! interrupt.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, Ordering};

use terminal_service::{Host, Terminal};
use vfs::Errno;

/// How often a waiting read, and the watcher, look at the serial line
/// when input does not arrive by interrupt.
const INPUT_POLL_MS: u64 = 5;
/// How long a waiter for input blocks at most when input arrives by
/// interrupt: `hal::console` reads the line at least this often anyway
/// (its `FALLBACK_TICKS`), for a receive interrupt that was missed.
const LOST_EDGE_MS: u64 = 200;

/// Threads waiting for typed input: readers, `poll`s of the terminal,
/// the signal-key watcher.
static INPUT: linux::FileWaitQueue = linux::FileWaitQueue::new();

/// The terminal's host: the serial line, signals through the kernel's
/// process model, waiting through the scheduler.
pub struct SerialLine;

impl Host for SerialLine {
    fn try_read_byte(&self) -> Option<u8> {
        hal::console::try_read_byte()
    }

    fn write(&self, bytes: &[u8]) {
        crate::console_output::console_write(bytes);
    }

    fn signal_group(&self, group: u64, signal: u8) {
        let _ = linux_process::signals::kill(0, -(group as i32), signal);
    }

    fn interrupted(&self) -> bool {
        linux_process::signals::interrupted()
    }

    fn wait_for_input(&self, look: &mut dyn FnMut() -> bool) {
        let me = sched::current();
        INPUT.register(me);
        loop {
            // Prepared before the look: input arriving between the look
            // and the block makes the block return at once.
            sched::prepare_to_wait();
            if look() {
                break;
            }
            let wait_ms = if hal::console::is_input_interrupt_driven() {
                LOST_EDGE_MS
            } else {
                INPUT_POLL_MS
            };
            let deadline = hal::timer::uptime_ns().saturating_add(wait_ms * 1_000_000);
            sched::block_prepared("terminal input", Some(deadline));
        }
        INPUT.unregister(me);
    }

    fn input_taken(&self) {
        INPUT.wake_all();
    }

    /// None where input does not arrive by interrupt: nothing would wake
    /// a `poll` then, which looks every few milliseconds instead.
    fn wait_queue(&self) -> Option<&dyn vfs::WaitQueue> {
        hal::console::is_input_interrupt_driven().then_some(&INPUT as &dyn vfs::WaitQueue)
    }

    fn copy_to_user(&self, address: u64, bytes: &[u8]) -> Result<(), Errno> {
        hal::user::copy_to_user(address, bytes).map_err(|_| Errno::EFAULT)
    }

    fn copy_from_user(&self, bytes: &mut [u8], address: u64) -> Result<(), Errno> {
        hal::user::copy_from_user(bytes, address).map_err(|_| Errno::EFAULT)
    }
}

static TERMINAL: spin::Once<Arc<Terminal<SerialLine>>> = spin::Once::new();

/// The terminal (made on first use, when the serial receive interrupt
/// starts waking its waiters).
pub fn terminal() -> &'static Arc<Terminal<SerialLine>> {
    TERMINAL.call_once(|| {
        hal::console::set_input_hook(|| INPUT.wake_all_from_interrupt());
        Arc::new(Terminal::new(SerialLine))
    })
}

static WATCHING: AtomicBool = AtomicBool::new(false);

/// Starts (once) the thread that takes typed bytes in whenever input
/// arrives, so that a signal key reaches the foreground group even while
/// no program reads the terminal.
pub fn watch_for_signal_keys() {
    if WATCHING.swap(true, Ordering::Relaxed) {
        return;
    }
    if sched::spawn("terminal keys", || terminal().watch_for_signal_keys()).is_err() {
        log::warn!("terminal: no memory for a thread to watch for ^C and ^Z; they act only when a program reads");
    }
}
