//! A fault-handling extension for Appel and Li's virtual-memory primitives
//! (SPIN's table 4): a native kernel extension, which a program configures
//! for itself with an application-specific system call and which then
//! handles that program's protection faults in the kernel, on
//! `Translation.ProtectionFault`, instead of a signal handler in user mode.
//!
//! `vm_handler(action, start, end, page)` (system call
//! [`VM_HANDLER_SYSCALL`], in the kernel's system-call table) installs a handler for the caller's process, guarded to
//! its process and the address range `[start, end)`:
//! - [`Action::Unprotect`]: make the faulting page read-write (vm_fault,
//!   vm_appel2);
//! - [`Action::Swap`]: protect `page` (the one writable page) and
//!   unprotect the faulting one, which becomes the writable page
//!   (vm_appel1);
//! - [`Action::StampAndUnprotect`]: first read the clock (for vm_trap's
//!   latency to the handler), then unprotect.
//!
//! Action 0 removes the handler; [`QUERY_FAULTS`] and [`QUERY_ENTRY_NS`]
//! read the faults handled and the last handler-entry time. The handler
//! changes protections through the process's address map (`vm`), as
//! `mprotect` does, so the map and the page tables stay in step.

use alloc::{collections::BTreeMap, sync::Arc};

use dispatch::{BindingId, Install, Principal};
use hal::{address_space::UserProtection, memory::PAGE_SIZE};
use linux_abi::Errno;

use crate::translation::{self, FaultArgs};

/// The application-specific system call's number (outside Linux's range).
pub const VM_HANDLER_SYSCALL: u64 = 0x5350_0001;
/// `vm_handler` action: read the number of faults handled.
pub const QUERY_FAULTS: u64 = 100;
/// `vm_handler` action: read the clock value at the last handler entry
/// (ns since boot, what `clock_gettime` reads).
pub const QUERY_ENTRY_NS: u64 = 101;

/// What the handler does with a fault in its range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Make the faulting page read-write.
    Unprotect = 1,
    /// Protect the writable page, make the faulting one read-write.
    Swap = 2,
    /// Read the clock, then make the faulting page read-write.
    StampAndUnprotect = 3,
}

impl Action {
    fn from_code(code: u64) -> Option<Action> {
        match code {
            1 => Some(Action::Unprotect),
            2 => Some(Action::Swap),
            3 => Some(Action::StampAndUnprotect),
            _ => None,
        }
    }
}

/// One process's handler.
struct Handler {
    binding: BindingId,
    state: Arc<spin::Mutex<HandlerState>>,
}

struct HandlerState {
    action: Action,
    writable_page: u64,
    faults: u64,
    entry_ns: u64,
}

/// Handlers by process.
static HANDLERS: spin::Mutex<BTreeMap<u64, Handler>> = spin::Mutex::new(BTreeMap::new());

/// The system call (a line of the kernel's system-call table: as a guarded
/// handler of its own on `MachineTrap.Syscall` it would cost every other
/// system call a guard, about a third of a null call under TCG).
pub fn vm_handler(strand: u64, action: u64, start: u64, end: u64, page: u64) -> i64 {
    let Some(process) = process::of_strand(strand) else {
        return Errno::ESRCH.as_negative();
    };
    let id = process.id();
    match action {
        0 => {
            forget(id);
            0
        }
        QUERY_FAULTS | QUERY_ENTRY_NS => match HANDLERS.lock().get(&id) {
            Some(handler) => {
                let state = handler.state.lock();
                (if action == QUERY_FAULTS {
                    state.faults
                } else {
                    state.entry_ns
                }) as i64
            }
            None => Errno::EINVAL.as_negative(),
        },
        code => {
            let Some(action) = Action::from_code(code) else {
                return Errno::EINVAL.as_negative();
            };
            if !start.is_multiple_of(PAGE_SIZE) || end <= start || end > hal::user::USER_END {
                return Errno::EINVAL.as_negative();
            }
            install(&process, strand, action, start, end, page)
        }
    }
}

/// Installs (or replaces) process `id`'s handler, for the faults of its
/// thread `strand` (a process has one thread) in `[start, end)`. Where it
/// fires, the kernel's Unix memory model (the event's default handler)
/// does not run.
fn install(
    process: &Arc<process::Process>,
    strand: u64,
    action: Action,
    start: u64,
    end: u64,
    page: u64,
) -> i64 {
    let id = process.id();
    forget(id);
    let Some(event) = translation::protection_fault() else {
        return Errno::ENOSYS.as_negative();
    };
    let state = Arc::new(spin::Mutex::new(HandlerState {
        action,
        writable_page: page & !(PAGE_SIZE - 1),
        faults: 0,
        entry_ns: 0,
    }));
    let handler_state = state.clone();
    // Held by the handler until `forget` removes it, at the latest when
    // the process ends: no lookup on the fault path.
    let owner = process.clone();
    let installed = event.install(
        Principal::KERNEL,
        Install::guarded(
            move |args: &FaultArgs| args.0 == strand && (start..end).contains(&args.1),
            move |args: &FaultArgs| u32::from(handle(&handler_state, &owner, args.1)),
        ),
    );
    match installed {
        Ok(binding) => {
            HANDLERS.lock().insert(id, Handler { binding, state });
            0
        }
        Err(_) => Errno::EINVAL.as_negative(),
    }
}

/// Handles a protection fault at `address` in `process` (the one the
/// handler is for: its guard checked the faulting strand).
fn handle(state: &spin::Mutex<HandlerState>, process: &process::Process, address: u64) -> bool {
    let mut state = state.lock();
    if state.action == Action::StampAndUnprotect {
        state.entry_ns = hal::timer::uptime_ns();
    }
    let page = address & !(PAGE_SIZE - 1);
    let done = process.with_memory(|memory| {
        if state.action == Action::Swap
            && memory
                .protect(state.writable_page, PAGE_SIZE, UserProtection::Read)
                .is_err()
        {
            return false;
        }
        memory
            .protect(page, PAGE_SIZE, UserProtection::ReadWrite)
            .is_ok()
    });
    if done == Some(true) {
        state.writable_page = page;
        state.faults += 1;
        true
    } else {
        false
    }
}

/// Removes process `id`'s handler, if it has one (also when it ends).
pub fn forget(id: u64) {
    let handler = {
        let mut handlers = HANDLERS.lock();
        let handler = handlers.remove(&id);
        // An emptied map would keep its root node: the last handler's
        // room goes with it.
        if handlers.is_empty() {
            *handlers = BTreeMap::new();
        }
        handler
    };
    if let (Some(handler), Some(event)) = (handler, translation::protection_fault()) {
        let _ = event.remove(Principal::KERNEL, handler.binding);
    }
}
