//! The `Translation` service's fault events (SPIN figure 3), raised from
//! the page-fault trap when a user program faults:
//! `Translation.PageNotPresent(strand, address, error_code) -> resolved`
//! for a page that is not mapped, and `Translation.ProtectionFault(...)`
//! for an access the page's protection forbids; the Unix model raises
//! `Translation.BadAddress(...)` for a fault in no region at all.
//!
//! A handler resolves a fault by changing the faulting thread's address
//! space (`hal::context::with_current_address_space`: map the page, change
//! its protection) and returning 1; the program then retries the access and
//! goes on, Appel and Li's user-level VM primitives done in the kernel.
//! Handlers guard on the address range they manage, so each sees only its
//! region; where none fires, the event's default handler applies the Unix
//! memory model (demand-zero pages, copy-on-write). A fault nobody
//! resolves ends the program.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

use dispatch::{Authority, Event, Handler};

/// The arguments of both events: the faulting strand, the address (CR2),
/// and the page-fault error code.
pub type FaultArgs = (u64, u64, u64);

/// Page-fault error code bit: the page was present (a protection fault).
const PAGE_PRESENT: u64 = 1 << 0;

struct Events {
    page_not_present: Arc<Event<FaultArgs, u32>>,
    protection_fault: Arc<Event<FaultArgs, u32>>,
    bad_address: Arc<Event<FaultArgs, u32>>,
    _authorities: (Authority, Authority, Authority),
}

static EVENTS: spin::Once<Events> = spin::Once::new();

/// Raises of `PageNotPresent` and `ProtectionFault`. Counted here, not by
/// the dispatcher's accounting, which would move the events off their
/// fast dispatch plan (it cost a fault about 450 ns under TCG).
static RAISED: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

/// How many times each event was raised: PageNotPresent, ProtectionFault,
/// BadAddress.
pub fn raised() -> [u64; 3] {
    RAISED.each_ref().map(|count| count.load(Ordering::Relaxed))
}

/// The Unix address-space model (`vm`): demand-zero pages and
/// copy-on-write, for the process the faulting thread runs. It is each
/// event's default handler: it runs when no other handler fires, so a
/// handler guarded on its own region (an Appel-Li collector, a
/// distributed shared memory) takes that region's faults, and every other
/// fault gets the Unix model. Unresolved, the fault ends the program.
fn unix_model(args: &FaultArgs) -> u32 {
    u32::from(::process::resolve_fault(args.0, args.1, args.2))
}

/// Creates the events.
pub fn init() {
    EVENTS.call_once(|| {
        let (page_not_present, first) = Event::builder("Translation.PageNotPresent").build();
        let (protection_fault, second) = Event::builder("Translation.ProtectionFault").build();
        for (event, authority) in [(&page_not_present, &first), (&protection_fault, &second)] {
            // Resolved if any handler that fired resolved it.
            event
                .set_result_handler(authority, Some(Arc::new(|a: u32, b: u32| a.max(b))))
                .expect("the event's own authority");
            event
                .set_default(authority, Some(Handler::new(unix_model)))
                .expect("the event's own authority");
        }
        // Raised by the Unix model for a fault outside every region: no
        // default, so unless a handler for that address resolves it, the
        // program ends.
        let (bad_address, third) = Event::builder("Translation.BadAddress").build();
        bad_address
            .set_result_handler(&third, Some(Arc::new(|a: u32, b: u32| a.max(b))))
            .expect("the event's own authority");
        Events {
            page_not_present: Arc::new(page_not_present),
            protection_fault: Arc::new(protection_fault),
            bad_address: Arc::new(bad_address),
            _authorities: (first, second, third),
        }
    });
    // A system call's copy that faults on a user page asks the same events.
    hal::user::set_copy_fault_resolver(user_page_fault);
}

/// `Translation.PageNotPresent`.
pub fn page_not_present() -> Option<&'static Arc<Event<FaultArgs, u32>>> {
    EVENTS.get().map(|events| &events.page_not_present)
}

/// `Translation.BadAddress(strand, address, error_code) -> resolved`: a
/// fault at an address in no region of the process (nothing the Unix
/// model can explain). A handler guarded on the addresses it manages may
/// resolve it, as for the other two.
pub fn bad_address() -> Option<&'static Arc<Event<FaultArgs, u32>>> {
    EVENTS.get().map(|events| &events.bad_address)
}

/// Raises `Translation.BadAddress`; whether a handler resolved the fault.
pub fn raise_bad_address(strand: u64, address: u64, error_code: u64) -> bool {
    let Some(events) = EVENTS.get() else {
        return false;
    };
    RAISED[2].fetch_add(1, Ordering::Relaxed);
    let mut args = (strand, address, error_code);
    matches!(events.bad_address.raise(&mut args), Ok(1))
}

/// `Translation.ProtectionFault`.
pub fn protection_fault() -> Option<&'static Arc<Event<FaultArgs, u32>>> {
    EVENTS.get().map(|events| &events.protection_fault)
}

/// Raises the event for a user page fault at `address` with `error_code`;
/// whether a handler resolved it (the program then retries the access).
pub fn user_page_fault(address: u64, error_code: u64) -> bool {
    let Some(events) = EVENTS.get() else {
        return false;
    };
    let event = if error_code & PAGE_PRESENT == 0 {
        &events.page_not_present
    } else {
        &events.protection_fault
    };
    RAISED[usize::from(error_code & PAGE_PRESENT != 0)].fetch_add(1, Ordering::Relaxed);
    let mut args = (sched::current().0, address, error_code);
    matches!(event.raise(&mut args), Ok(1))
}
