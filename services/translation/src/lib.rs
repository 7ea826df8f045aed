//! SPIN's `Translation` service (SOSP'95 §4.1, figure 3): contexts
//! (address spaces) and the mappings in them. [`Translation::create`]
//! makes a context, [`Translation::destroy`] ends one;
//! [`Translation::add_mapping`] maps a `PhysAddr` allocation at a
//! `VirtAddr` range of the context with a protection,
//! [`Translation::remove_mapping`] undoes it and
//! [`Translation::examine_mapping`] reports a page's protection.
//!
//! Mappings take capabilities, not numbers: the physical pages are a
//! [`PhysPages`] the caller holds and the virtual range a [`VirtRange`] it
//! was given for this very context. A mapping co-owns its frame
//! (`hal::address_space::AddressSpace::map_frame`), and the context
//! registers itself with the allocation, so `PhysAddr.Reclaim` removes the
//! mapping before the frames go.
//!
//! The service's fault events (`Translation.PageNotPresent`,
//! `ProtectionFault`, `BadAddress`) are raised from the page-fault trap;
//! the kernel creates them and hands them to [`Translation::new`] so the
//! service's domain exports them with its procedures.
#![no_std]

extern crate alloc;

use alloc::{
    collections::BTreeMap,
    sync::{Arc, Weak},
    vec::Vec,
};
use core::{
    fmt,
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
};

use domain::{Export, Module, SymbolType};
use hal::{
    address_space::{AddressSpace, UserProtection},
    memory::{MapError, PAGE_SIZE},
};
use physaddr::{MappingHolder, PhysPages};
use virtaddr::{VirtAddr, VirtRange};

/// Why a `Translation` operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TranslationError {
    /// The context was destroyed.
    Destroyed,
    /// The range belongs to another context, or was given back.
    ForeignRange,
    /// The range is smaller than the allocation.
    RangeTooSmall {
        /// Pages of the range.
        range: u64,
        /// Pages of the allocation.
        pages: u64,
    },
    /// The physical pages were reclaimed or deallocated.
    Reclaimed,
    /// Something is mapped at that page already.
    AlreadyMapped(u64),
    /// Nothing is mapped there.
    NotMapped(u64),
    /// No frame for a page table.
    OutOfFrames,
}

impl fmt::Display for TranslationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TranslationError::Destroyed => f.write_str("the context was destroyed"),
            TranslationError::ForeignRange => {
                f.write_str("the virtual range is not a live range of this context")
            }
            TranslationError::RangeTooSmall { range, pages } => {
                write!(f, "a range of {range} pages cannot hold {pages} pages")
            }
            TranslationError::Reclaimed => f.write_str("the physical pages were taken back"),
            TranslationError::AlreadyMapped(at) => write!(f, "{at:#x} is mapped already"),
            TranslationError::NotMapped(at) => write!(f, "nothing is mapped at {at:#x}"),
            TranslationError::OutOfFrames => f.write_str("no frame for a page table"),
        }
    }
}

impl From<MapError> for TranslationError {
    fn from(error: MapError) -> Self {
        match error {
            MapError::AlreadyMapped(at) => TranslationError::AlreadyMapped(at),
            MapError::NotMapped(at)
            | MapError::Unaligned(at)
            | MapError::OutsideRegion(at)
            | MapError::SharedFrame(at) => TranslationError::NotMapped(at),
            MapError::OutOfFrames => TranslationError::OutOfFrames,
        }
    }
}

/// A context: `Translation.T`, an address space of its own.
pub struct Context {
    id: u64,
    space: Arc<AddressSpace>,
    /// Mapped pages: virtual page -> the allocation it maps.
    mappings: spin::Mutex<BTreeMap<u64, Weak<PhysPages>>>,
    destroyed: AtomicBool,
    /// This context, for registering with the allocations it maps.
    me: Weak<Context>,
}

impl Context {
    /// Its number (what `VirtAddr` ranges name).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The address space (to run a program in it, or read its memory).
    pub fn space(&self) -> &Arc<AddressSpace> {
        &self.space
    }

    /// Pages mapped.
    pub fn mapped_pages(&self) -> usize {
        self.mappings.lock().len()
    }

    /// Unmaps `virt` if mapped; returns the allocation it mapped.
    fn unmap_page(&self, virt: u64) -> Option<Weak<PhysPages>> {
        let allocation = self.mappings.lock().remove(&virt)?;
        let _ = self.space.unmap(virt);
        Some(allocation)
    }
}

impl MappingHolder for Context {
    fn revoke_mapping(&self, virt: u64) {
        self.unmap_page(virt);
    }
}

/// The `Translation` service.
pub struct Translation {
    next_context: AtomicU64,
    virt: Arc<VirtAddr>,
    /// The fault events, exported with the procedures.
    events: Vec<Export>,
}

impl Translation {
    /// The service; `virt` is the `VirtAddr` service whose ranges it maps
    /// at, `events` the fault events the kernel raises for it.
    pub fn new(virt: Arc<VirtAddr>, events: Vec<Export>) -> Translation {
        Translation {
            next_context: AtomicU64::new(1),
            virt,
            events,
        }
    }

    /// `Translation.Create`: an empty context.
    pub fn create(&self) -> Result<Arc<Context>, TranslationError> {
        let space = Arc::new(AddressSpace::new().map_err(TranslationError::from)?);
        let id = self.next_context.fetch_add(1, Ordering::Relaxed);
        Ok(Arc::new_cyclic(|me| Context {
            id,
            space,
            mappings: spin::Mutex::new(BTreeMap::new()),
            destroyed: AtomicBool::new(false),
            me: me.clone(),
        }))
    }

    /// `Translation.Destroy`: removes every mapping; the context refuses
    /// new ones, and its `VirtAddr` ranges are forgotten. Its page tables
    /// go when the last reference does.
    pub fn destroy(&self, context: &Context) {
        if context.destroyed.swap(true, Ordering::AcqRel) {
            return;
        }
        let pages: Vec<u64> = context.mappings.lock().keys().copied().collect();
        for virt in pages {
            if let Some(allocation) = context.unmap_page(virt).and_then(|a| a.upgrade()) {
                allocation.forget_mapping(virt);
            }
        }
        self.virt.forget_context(context.id);
    }

    /// `Translation.AddMapping`: maps every page of `physical` at `range`
    /// (from its start) in `context` with `protection`. All or nothing: on
    /// an error the pages mapped so far are unmapped.
    pub fn add_mapping(
        &self,
        context: &Context,
        range: &VirtRange,
        physical: &Arc<PhysPages>,
        protection: UserProtection,
    ) -> Result<(), TranslationError> {
        if context.destroyed.load(Ordering::Acquire) {
            return Err(TranslationError::Destroyed);
        }
        if range.context() != context.id || range.is_released() {
            return Err(TranslationError::ForeignRange);
        }
        if range.pages() < physical.pages() {
            return Err(TranslationError::RangeTooSmall {
                range: range.pages(),
                pages: physical.pages(),
            });
        }
        let holder: Weak<dyn MappingHolder> = context.me.clone();
        for index in 0..physical.pages() {
            let virt = range.start() + index * PAGE_SIZE;
            let mapped = physical
                .with_frame(index as usize, |frame| {
                    context.space.map_frame(virt, frame, protection)
                })
                .unwrap_or(Err(MapError::NotMapped(virt)));
            let result = match mapped {
                Ok(()) => {
                    context
                        .mappings
                        .lock()
                        .insert(virt, Arc::downgrade(physical));
                    physical.record_mapping(holder.clone(), virt);
                    Ok(())
                }
                Err(MapError::NotMapped(_)) => Err(TranslationError::Reclaimed),
                Err(error) => Err(error.into()),
            };
            if let Err(error) = result {
                self.unmap_pages(context, range.start(), index);
                return Err(error);
            }
        }
        // Reclaimed while we mapped: the reclaim may have missed the
        // mappings recorded after it ran, so undo them here.
        if physical.is_reclaimed() {
            self.unmap_pages(context, range.start(), physical.pages());
            return Err(TranslationError::Reclaimed);
        }
        Ok(())
    }

    fn unmap_pages(&self, context: &Context, start: u64, pages: u64) {
        for index in 0..pages {
            let virt = start + index * PAGE_SIZE;
            if let Some(allocation) = context.unmap_page(virt).and_then(|a| a.upgrade()) {
                allocation.forget_mapping(virt);
            }
        }
    }

    /// `Translation.RemoveMapping`: unmaps every page of `range` that is
    /// mapped; returns how many were.
    pub fn remove_mapping(
        &self,
        context: &Context,
        range: &VirtRange,
    ) -> Result<u64, TranslationError> {
        if range.context() != context.id {
            return Err(TranslationError::ForeignRange);
        }
        let before = context.mapped_pages();
        self.unmap_pages(context, range.start(), range.pages());
        Ok((before - context.mapped_pages()) as u64)
    }

    /// `Translation.ExamineMapping`: the protection of the page at `virt`,
    /// if one of this service's mappings is there.
    pub fn examine_mapping(&self, context: &Context, virt: u64) -> Option<UserProtection> {
        let page = virt & !(PAGE_SIZE - 1);
        if !context.mappings.lock().contains_key(&page) {
            return None;
        }
        context.space.protection(page)
    }
}

/// `Translation.Create` as the domain exports it.
pub type CreateFn = fn(&Translation) -> Result<Arc<Context>, TranslationError>;
/// `Translation.Destroy` as exported.
pub type DestroyFn = fn(&Translation, &Context);
/// `Translation.AddMapping` as exported.
pub type AddMappingFn = fn(
    &Translation,
    &Context,
    &VirtRange,
    &Arc<PhysPages>,
    UserProtection,
) -> Result<(), TranslationError>;
/// `Translation.RemoveMapping` as exported.
pub type RemoveMappingFn = fn(&Translation, &Context, &VirtRange) -> Result<u64, TranslationError>;
/// `Translation.ExamineMapping` as exported.
pub type ExamineMappingFn = fn(&Translation, &Context, u64) -> Option<UserProtection>;

fn procedure<T: core::any::Any + Send + Sync>(name: &str, value: T) -> Export {
    Export::new(name, SymbolType::Type(core::any::type_name::<T>()), value)
}

impl Module for Translation {
    fn name(&self) -> &str {
        "Translation"
    }

    fn exports(&self) -> Vec<Export> {
        let create: CreateFn = Translation::create;
        let destroy: DestroyFn = Translation::destroy;
        let add: AddMappingFn = Translation::add_mapping;
        let remove: RemoveMappingFn = Translation::remove_mapping;
        let examine: ExamineMappingFn = Translation::examine_mapping;
        let mut exports = Vec::from([
            procedure("Translation.Create", create),
            procedure("Translation.Destroy", destroy),
            procedure("Translation.AddMapping", add),
            procedure("Translation.RemoveMapping", remove),
            procedure("Translation.ExamineMapping", examine),
        ]);
        exports.extend(self.events.iter().cloned());
        exports
    }
}
