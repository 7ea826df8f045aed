//! The memory services (`PhysAddr`, `VirtAddr`, `Translation`) as the
//! kernel runs them: exported as domains, used through the symbols an
//! importer gets from the nameserver, and `PhysAddr.Reclaim`.

use alloc::{sync::Arc, vec::Vec};

use dispatch::{Event, Handler, Install, Principal};
use domain::Domain;
use hal::{address_space::UserProtection, memory::PAGE_SIZE};
use physaddr::{Attributes, PhysAddr, PhysError, ReclaimArgs};
use translation_service::{Translation, TranslationError};
use virtaddr::VirtAddr;

use super::{ensure, KernelTest, TestResult};

pub const TESTS: &[KernelTest] = &[
    KernelTest {
        name: "memory_services_are_domains_in_the_nameserver",
        run: memory_services_are_domains_in_the_nameserver,
    },
    KernelTest {
        name: "a_loaded_extensions_domain_is_registered_with_the_nameserver",
        run: a_loaded_extensions_domain_is_registered,
    },
    KernelTest {
        name: "translation_maps_physaddr_pages_at_virtaddr_ranges",
        run: translation_maps_physaddr_pages_at_virtaddr_ranges,
    },
    KernelTest {
        name: "reclaim_takes_pages_back_and_the_owner_may_nominate",
        run: reclaim_takes_pages_back_and_the_owner_may_nominate,
    },
];

/// A principal standing for an extension (not the kernel).
const IMPORTER: Principal = Principal(0x5e_0001);

fn import(name: &str) -> Result<Domain, alloc::string::String> {
    let extensions = crate::extensions::get().ok_or("extensions are not set up")?;
    extensions
        .nameserver()
        .import(name, domain::Version::new(1, 0), IMPORTER)
        .map_err(|error| alloc::format!("importing {name}: {error}"))
}

/// The procedure `name` of `domain`, as the type `T` an importer expects.
fn procedure<T: Copy + Send + Sync + 'static>(
    domain: &Domain,
    name: &str,
) -> Result<T, alloc::string::String> {
    domain
        .exported::<T>(name)
        .map(|procedure| *procedure)
        .map_err(|_| alloc::format!("{} lacks {name} of the expected type", domain.name()))
}

fn memory_services_are_domains_in_the_nameserver() -> TestResult {
    let services = crate::memory_services::get().ok_or("memory services not set up")?;
    let phys = import("PhysAddr")?;
    let virt = import("VirtAddr")?;
    let translation = import("Translation")?;
    for (domain, names) in [
        (
            &phys,
            &[
                "PhysAddr.Allocate",
                "PhysAddr.Deallocate",
                "PhysAddr.Reclaim",
            ][..],
        ),
        (&virt, &["VirtAddr.Allocate", "VirtAddr.Deallocate"][..]),
        (
            &translation,
            &[
                "Translation.Create",
                "Translation.Destroy",
                "Translation.AddMapping",
                "Translation.RemoveMapping",
                "Translation.ExamineMapping",
                "Translation.PageNotPresent",
                "Translation.ProtectionFault",
                "Translation.BadAddress",
            ][..],
        ),
    ] {
        for name in names {
            ensure!(
                domain.export(name).is_some(),
                "{} does not export {name}",
                domain.name()
            );
        }
    }
    // The event services, too.
    for (name, symbols) in [
        ("Timer", &["Timer.Tick"][..]),
        ("Extension", &["Extension.Faulted"][..]),
        ("MachineTrap", &["MachineTrap.Syscall"][..]),
        (
            "Strand",
            &[
                "Strand.Block",
                "Strand.Unblock",
                "Strand.Checkpoint",
                "Strand.Resume",
            ][..],
        ),
    ] {
        let domain = import(name)?;
        for symbol in symbols {
            ensure!(
                matches!(
                    domain.export(symbol).map(|export| &export.ty),
                    Some(domain::SymbolType::Event(_))
                ),
                "{name} does not export the event {symbol}"
            );
        }
    }
    let syscall = import("MachineTrap")?
        .exported::<Event<crate::syscalls::SyscallArgs, i64>>("MachineTrap.Syscall")
        .map_err(|error| alloc::format!("MachineTrap.Syscall: {error}"))?;
    ensure!(
        Arc::ptr_eq(
            &syscall,
            crate::syscalls::event().ok_or("no syscall event")?
        ),
        "the exported MachineTrap.Syscall is not the event system calls raise"
    );
    // Importing an event is not a right to handle it: its authorizer
    // still decides (an extension not loaded for a process is refused).
    ensure!(
        syscall
            .install(
                IMPORTER,
                Install::new(Handler::new(|_: &crate::syscalls::SyscallArgs| 0i64)),
            )
            .is_err(),
        "an importer installed on MachineTrap.Syscall without the authorizer's leave"
    );
    // The event symbols are the very events the kernel raises.
    let reclaim = phys
        .exported::<Event<ReclaimArgs, u64>>("PhysAddr.Reclaim")
        .map_err(|error| alloc::format!("PhysAddr.Reclaim: {error}"))?;
    ensure!(
        Arc::ptr_eq(&reclaim, services.phys.reclaim_event()),
        "the exported Reclaim is not the service's event"
    );
    let fault = translation
        .exported::<Event<crate::translation::FaultArgs, u32>>("Translation.PageNotPresent")
        .map_err(|error| alloc::format!("Translation.PageNotPresent: {error}"))?;
    let raised = crate::translation::page_not_present().ok_or("no PageNotPresent event")?;
    ensure!(
        Arc::ptr_eq(&fault, raised),
        "the exported PageNotPresent is not the event the page-fault trap raises"
    );
    // A procedure asked for with the wrong type is refused.
    ensure!(
        translation
            .exported::<physaddr::AllocateFn>("Translation.Create")
            .is_err(),
        "a symbol was handed out under another type"
    );
    Ok(())
}

/// Create a context, map two pages at a range, read them back through the
/// context, examine, remove, destroy: all through the procedures the
/// nameserver gave, and every frame comes back.
fn translation_maps_physaddr_pages_at_virtaddr_ranges() -> TestResult {
    let services = crate::memory_services::get().ok_or("memory services not set up")?;
    let phys_domain = import("PhysAddr")?;
    let virt_domain = import("VirtAddr")?;
    let translation_domain = import("Translation")?;
    let allocate = procedure::<physaddr::AllocateFn>(&phys_domain, "PhysAddr.Allocate")?;
    let deallocate = procedure::<physaddr::DeallocateFn>(&phys_domain, "PhysAddr.Deallocate")?;
    let virt_allocate = procedure::<virtaddr::AllocateFn>(&virt_domain, "VirtAddr.Allocate")?;
    let create =
        procedure::<translation_service::CreateFn>(&translation_domain, "Translation.Create")?;
    let add = procedure::<translation_service::AddMappingFn>(
        &translation_domain,
        "Translation.AddMapping",
    )?;
    let examine = procedure::<translation_service::ExamineMappingFn>(
        &translation_domain,
        "Translation.ExamineMapping",
    )?;
    let remove = procedure::<translation_service::RemoveMappingFn>(
        &translation_domain,
        "Translation.RemoveMapping",
    )?;
    let destroy =
        procedure::<translation_service::DestroyFn>(&translation_domain, "Translation.Destroy")?;
    let (phys, virt, translation): (&PhysAddr, &VirtAddr, &Translation) =
        (&services.phys, &services.virt, &services.translation);

    let frames_before = hal::memory::frame_stats().free;
    {
        let context = create(translation).map_err(|e| alloc::format!("Create: {e}"))?;
        let other = create(translation).map_err(|e| alloc::format!("Create: {e}"))?;
        let pages = allocate(phys, IMPORTER, 2 * PAGE_SIZE, Attributes::default())
            .map_err(|e| alloc::format!("Allocate: {e}"))?;
        ensure!(
            pages.pages() == 2,
            "asked for 2 pages, got {}",
            pages.pages()
        );
        for index in 0..2 {
            pages
                .with_frame(index, |frame| frame.write(8, &[0xa0 + index as u8; 16]))
                .ok_or("the allocation has no frame")?
                .map_err(|_| "writing a frame failed")?;
        }
        let range = virt_allocate(virt, context.id(), 2 * PAGE_SIZE)
            .map_err(|e| alloc::format!("VirtAddr.Allocate: {e}"))?;
        let foreign = virt_allocate(virt, other.id(), 2 * PAGE_SIZE)
            .map_err(|e| alloc::format!("VirtAddr.Allocate: {e}"))?;
        let small = virt_allocate(virt, context.id(), PAGE_SIZE)
            .map_err(|e| alloc::format!("VirtAddr.Allocate: {e}"))?;
        ensure!(
            add(
                translation,
                &context,
                &foreign,
                &pages,
                UserProtection::ReadWrite
            ) == Err(TranslationError::ForeignRange),
            "a range of another context was accepted"
        );
        ensure!(
            matches!(
                add(
                    translation,
                    &context,
                    &small,
                    &pages,
                    UserProtection::ReadWrite
                ),
                Err(TranslationError::RangeTooSmall { range: 1, pages: 2 })
            ),
            "a range too small was accepted"
        );
        add(
            translation,
            &context,
            &range,
            &pages,
            UserProtection::ReadWrite,
        )
        .map_err(|e| alloc::format!("AddMapping: {e}"))?;
        for index in 0..2u64 {
            let at = range.start() + index * PAGE_SIZE;
            ensure!(
                examine(translation, &context, at + 100) == Some(UserProtection::ReadWrite),
                "page {index} is not mapped read-write"
            );
            ensure!(
                context.space().translate(at) == pages.frame_address(index as usize),
                "page {index} maps another frame"
            );
            let mut seen = [0u8; 16];
            context
                .space()
                .read(at + 8, &mut seen)
                .map_err(|_| "reading through the context failed")?;
            ensure!(
                seen == [0xa0 + index as u8; 16],
                "page {index} reads other bytes through the context (first {:#x})",
                seen[0]
            );
        }
        ensure!(
            examine(translation, &other, range.start()).is_none(),
            "the mapping shows in another context"
        );
        let removed = remove(translation, &context, &range)
            .map_err(|e| alloc::format!("RemoveMapping: {e}"))?;
        ensure!(removed == 2, "RemoveMapping removed {removed} pages, not 2");
        ensure!(
            examine(translation, &context, range.start()).is_none(),
            "the page is still mapped after RemoveMapping"
        );
        // Map again, then destroy the context with the mapping in place.
        add(translation, &context, &range, &pages, UserProtection::Read)
            .map_err(|e| alloc::format!("AddMapping again: {e}"))?;
        ensure!(
            examine(translation, &context, range.start()) == Some(UserProtection::Read),
            "the second mapping is not read-only"
        );
        destroy(translation, &context);
        ensure!(context.mapped_pages() == 0, "Destroy left mappings");
        ensure!(
            add(translation, &context, &range, &pages, UserProtection::Read)
                == Err(TranslationError::Destroyed),
            "a destroyed context took a mapping"
        );
        deallocate(phys, &pages);
        ensure!(pages.is_reclaimed(), "Deallocate left the frames");
        destroy(translation, &other);
    }
    let frames_after = hal::memory::frame_stats().free;
    ensure!(
        frames_after == frames_before,
        "{} frames were not given back",
        frames_before as i64 - frames_after as i64
    );
    Ok(())
}

/// A `PhysAddr` of four pages: a fifth allocation reclaims the oldest
/// reclaimable one unless its owner's handler nominates another; a
/// stranger's handler never sees the owner's reclaims; a bad nomination
/// falls back on the candidate; pinned pages are never taken.
fn reclaim_takes_pages_back_and_the_owner_may_nominate() -> TestResult {
    let services = crate::memory_services::get().ok_or("memory services not set up")?;
    let translation = &services.translation;
    let frames_before = hal::memory::frame_stats().free;
    {
        let phys = PhysAddr::new(4);
        let owner = Principal(0x5e_0002);
        let stranger = Principal(0x5e_0003);
        let reclaimable = Attributes { reclaimable: true };
        let mut held = Vec::new();
        for _ in 0..4 {
            held.push(
                phys.allocate(owner, PAGE_SIZE, reclaimable)
                    .map_err(|e| alloc::format!("Allocate: {e}"))?,
            );
        }
        let (a, d) = (held[0].clone(), held[3].clone());
        let context = translation
            .create()
            .map_err(|e| alloc::format!("Create: {e}"))?;
        let range_a = services
            .virt
            .allocate(context.id(), PAGE_SIZE)
            .map_err(|e| alloc::format!("VirtAddr.Allocate: {e}"))?;
        let range_d = services
            .virt
            .allocate(context.id(), PAGE_SIZE)
            .map_err(|e| alloc::format!("VirtAddr.Allocate: {e}"))?;
        translation
            .add_mapping(&context, &range_a, &a, UserProtection::ReadWrite)
            .map_err(|e| alloc::format!("AddMapping: {e}"))?;
        translation
            .add_mapping(&context, &range_d, &d, UserProtection::ReadWrite)
            .map_err(|e| alloc::format!("AddMapping: {e}"))?;

        // The owner's handler offers D whenever A is the candidate; the
        // stranger's records everything it sees.
        let seen_by_owner = Arc::new(spin::Mutex::new(Vec::new()));
        let seen_by_stranger = Arc::new(spin::Mutex::new(Vec::new()));
        let (a_id, d_id) = (a.id(), d.id());
        let log = seen_by_owner.clone();
        let owner_binding = phys
            .reclaim_event()
            .install(
                owner,
                Install::new(Handler::new(move |args: &ReclaimArgs| {
                    log.lock().push(*args);
                    if args.1 == a_id {
                        d_id
                    } else {
                        0xdead_beef
                    }
                })),
            )
            .map_err(|e| alloc::format!("installing the owner's handler: {e}"))?;
        let log = seen_by_stranger.clone();
        let stranger_binding = phys
            .reclaim_event()
            .install(
                stranger,
                Install::new(Handler::new(move |args: &ReclaimArgs| {
                    log.lock().push(*args);
                    args.1
                })),
            )
            .map_err(|e| alloc::format!("installing the stranger's handler: {e}"))?;

        let e = phys
            .allocate(stranger, PAGE_SIZE, Attributes::default())
            .map_err(|e| alloc::format!("the fifth allocation: {e}"))?;
        ensure!(
            seen_by_owner.lock().as_slice() == [(owner.0, a_id)],
            "the owner's handler saw {} reclaims, not one of A",
            seen_by_owner.lock().len()
        );
        ensure!(
            seen_by_stranger.lock().is_empty(),
            "the stranger's handler saw the owner's reclaims"
        );
        ensure!(d.is_reclaimed(), "the nominee D was not reclaimed");
        ensure!(
            !a.is_reclaimed(),
            "the candidate A was reclaimed despite the nomination"
        );
        ensure!(
            translation
                .examine_mapping(&context, range_d.start())
                .is_none()
                && context.space().translate(range_d.start()).is_none(),
            "D's mapping survived its reclaim"
        );
        ensure!(
            translation.examine_mapping(&context, range_a.start())
                == Some(UserProtection::ReadWrite),
            "A's mapping was lost"
        );
        ensure!(
            translation.add_mapping(&context, &range_d, &d, UserProtection::ReadWrite)
                == Err(TranslationError::Reclaimed),
            "a reclaimed allocation was mapped again"
        );
        // Next: A is the candidate again, the handler nominates D, which
        // is gone, so A itself goes.
        let f = phys
            .allocate(stranger, PAGE_SIZE, Attributes::default())
            .map_err(|e| alloc::format!("the sixth allocation: {e}"))?;
        ensure!(
            a.is_reclaimed(),
            "A was not reclaimed after a stale nomination"
        );
        ensure!(
            translation
                .examine_mapping(&context, range_a.start())
                .is_none(),
            "A's mapping survived its reclaim"
        );
        let stats = phys.stats();
        ensure!(
            stats.reclaimed == 2 && stats.nominated == 1 && stats.held == 4,
            "stats: {} reclaimed, {} nominated, {} held; wanted 2, 1, 4",
            stats.reclaimed,
            stats.nominated,
            stats.held
        );
        // Held now: B, C (reclaimable), E, F (pinned). Two more pinned
        // pages reclaim B and C; then nothing is left to take.
        let g = phys
            .allocate(stranger, 2 * PAGE_SIZE, Attributes::default())
            .map_err(|e| alloc::format!("the pinned allocation: {e}"))?;
        ensure!(
            held[1].is_reclaimed() && held[2].is_reclaimed(),
            "B and C were not reclaimed"
        );
        ensure!(
            matches!(
                phys.allocate(owner, PAGE_SIZE, reclaimable),
                Err(PhysError::OutOfMemory { pages: 1 })
            ),
            "an allocation succeeded with only pinned pages held"
        );
        ensure!(
            !e.is_reclaimed() && !f.is_reclaimed() && !g.is_reclaimed(),
            "a pinned allocation was reclaimed"
        );
        phys.reclaim_event()
            .remove(owner, owner_binding)
            .map_err(|e| alloc::format!("removing a handler: {e}"))?;
        phys.reclaim_event()
            .remove(stranger, stranger_binding)
            .map_err(|e| alloc::format!("removing a handler: {e}"))?;
        translation.destroy(&context);
        for allocation in [&e, &f, &g] {
            phys.deallocate(allocation);
        }
        ensure!(
            phys.stats().held == 0,
            "frames still held after deallocating"
        );
    }
    let frames_after = hal::memory::frame_stats().free;
    ensure!(
        frames_after == frames_before,
        "{} frames were not given back",
        frames_before as i64 - frames_after as i64
    );
    Ok(())
}

/// Loading an extension registers its domain (its exported functions)
/// with the nameserver under its name, exported by the extension's own
/// principal; unloading withdraws it.
fn a_loaded_extensions_domain_is_registered() -> TestResult {
    let extensions = crate::extensions::get().ok_or("extensions are not set up")?;
    extensions.load("tick-counter")?;
    let registered = import("tick-counter");
    let unloaded = extensions.unload("tick-counter");
    let domain = registered?;
    unloaded?;
    ensure!(
        domain.export("count").is_some(),
        "the registered domain does not export tick-counter's `count`"
    );
    ensure!(
        import("tick-counter").is_err(),
        "the domain stayed in the nameserver after the unload"
    );
    Ok(())
}
