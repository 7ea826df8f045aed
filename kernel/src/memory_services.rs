//! The memory services of SPIN's figure 3 in the running kernel:
//! `PhysAddr`, `VirtAddr` and `Translation` (crates under `services/`),
//! one instance each, and their export as domains (`CreateFromModule`).
//!
//! The Unix model (`vm`) keeps its own path to the page tables for speed
//! and is attached to the same `Translation` fault events; these services
//! are what a kernel extension uses to build memory of its own (a
//! distributed shared memory, a collector's to-space): pages it owns as
//! capabilities, mapped in contexts it made, taken back under pressure
//! through `PhysAddr.Reclaim` where its handler may choose which.

use alloc::{sync::Arc, vec::Vec};

use dispatch::Event;
use domain::{Domain, Export, SymbolType};
use physaddr::PhysAddr;
use translation_service::Translation;
use virtaddr::VirtAddr;

use crate::translation::FaultArgs;

/// Share of the machine's frames `PhysAddr` hands out before it reclaims.
const PHYSADDR_BUDGET_DIVISOR: u64 = 4;

/// The three services.
pub struct MemoryServices {
    /// `PhysAddr`.
    pub phys: Arc<PhysAddr>,
    /// `VirtAddr`.
    pub virt: Arc<VirtAddr>,
    /// `Translation`.
    pub translation: Arc<Translation>,
}

static SERVICES: spin::Once<MemoryServices> = spin::Once::new();

fn event_export(name: &str, event: Option<&'static Arc<Event<FaultArgs, u32>>>) -> Option<Export> {
    let event = event?;
    Some(Export::shared(
        name,
        SymbolType::Event(event.signature().clone()),
        event.clone(),
    ))
}

/// Makes the services (after `translation::init`, whose fault events the
/// `Translation` domain exports).
pub fn init() -> &'static MemoryServices {
    SERVICES.call_once(|| {
        let budget = hal::memory::frame_stats().total as u64 / PHYSADDR_BUDGET_DIVISOR;
        let virt = Arc::new(VirtAddr::new());
        let events: Vec<Export> = [
            event_export(
                "Translation.PageNotPresent",
                crate::translation::page_not_present(),
            ),
            event_export(
                "Translation.ProtectionFault",
                crate::translation::protection_fault(),
            ),
            event_export("Translation.BadAddress", crate::translation::bad_address()),
        ]
        .into_iter()
        .flatten()
        .collect();
        MemoryServices {
            phys: Arc::new(PhysAddr::new(budget)),
            translation: Arc::new(Translation::new(virt.clone(), events)),
            virt,
        }
    })
}

/// The services, once [`init`] has run.
pub fn get() -> Option<&'static MemoryServices> {
    SERVICES.get()
}

/// Each service as a domain, made by the service itself
/// (`Domain::create_from_module`), for the nameserver.
pub fn domains() -> Vec<Domain> {
    let Some(services) = get() else {
        return Vec::new();
    };
    let modules: [&dyn domain::Module; 3] = [
        services.phys.as_ref(),
        services.virt.as_ref(),
        services.translation.as_ref(),
    ];
    modules
        .into_iter()
        // Each service's exports have distinct names, so creating cannot
        // fail; a service that broke that would be missing from the list.
        .filter_map(|module| Domain::create_from_module(module).ok())
        .collect()
}
