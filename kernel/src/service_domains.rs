//! The kernel's services as domains in the nameserver (SPIN's
//! `CreateFromModule`: each service names and exports its own interface at
//! run time). The memory services build their symbol tables themselves
//! (`domain::Module` in their crates); the event services of the kernel
//! crate (`Strand`, `MachineTrap`, `Timer`, `Extension`) export their
//! events through [`EventModule`].
//!
//! Anyone may import them: their symbols are Rust procedures and events,
//! usable by kernel code (native extensions). A Wasm import of one finds
//! no `spindle` procedure there and stays unresolved, and installing on an
//! event still goes through the event's authorizer.

use alloc::{string::String, sync::Arc, vec::Vec};

use dispatch::{Event, EventArgs, EventResult, Principal};
use domain::{Domain, Export, Module, NameServer, SymbolType, Version};

/// Version under which the kernel's services are exported.
pub const SERVICE_VERSION: Version = Version::new(1, 0);

/// A kernel service that exports events only.
struct EventModule {
    name: &'static str,
    exports: Vec<Export>,
}

impl Module for EventModule {
    fn name(&self) -> &str {
        self.name
    }

    fn exports(&self) -> Vec<Export> {
        self.exports.clone()
    }
}

/// An event as a domain symbol (its value is the `Arc<Event>` itself).
pub fn event_export<A: EventArgs, R: EventResult>(event: &Arc<Event<A, R>>) -> Export {
    Export::shared(
        event.name(),
        SymbolType::Event(event.signature().clone()),
        event.clone(),
    )
}

/// Exports every kernel service in `nameserver`: the memory services and
/// the event services, given the events made by the extension runtime's
/// set-up (`Timer.Tick`, `Extension.Faulted`).
pub fn export_all(nameserver: &NameServer, extension_events: [(&'static str, Vec<Export>); 2]) {
    let mut modules: Vec<EventModule> =
        Vec::from(extension_events.map(|(name, exports)| EventModule { name, exports }));
    if let Some(events) = strands::events() {
        modules.push(EventModule {
            name: "Strand",
            exports: Vec::from([
                event_export(&events.block),
                event_export(&events.unblock),
                event_export(&events.checkpoint),
                event_export(&events.resume),
            ]),
        });
    }
    if let Some(syscall) = crate::syscalls::event() {
        modules.push(EventModule {
            name: "MachineTrap",
            exports: Vec::from([event_export(syscall)]),
        });
    }
    let mut domains: Vec<Domain> = crate::memory_services::domains();
    domains.extend(
        modules
            .iter()
            .filter_map(|module| Domain::create_from_module(module).ok()),
    );
    for domain in domains {
        let name = String::from(domain.name());
        if let Err(error) =
            nameserver.export(&name, SERVICE_VERSION, domain, Principal::KERNEL, None)
        {
            log::error!("exporting the {name} service: {error}");
        }
    }
}
