//! SPIN's `PhysAddr` service (SOSP'95 §4.1, figure 3): physical memory as
//! capabilities. [`PhysAddr::allocate`] hands out a [`PhysPages`], the
//! referent of SPIN's `PhysAddr.T`: some page frames, owned by a principal,
//! which the `Translation` service maps into contexts.
//! [`PhysAddr::deallocate`] gives them back.
//!
//! The service holds at most a budget of frames. When an allocation would
//! exceed it (or the machine has no free frame), it takes back reclaimable
//! pages: it picks a candidate, the oldest reclaimable allocation, and
//! raises `PhysAddr.Reclaim(owner, candidate) -> nominee`. A handler of
//! the owner (guarded, by the event's authorizer, to that owner's pages)
//! may nominate another of the owner's reclaimable allocations instead,
//! one it values less; the kernel checks the nominee and falls back on the
//! candidate. The allocation reclaimed loses its frames: every mapping of
//! it is removed (through the [`MappingHolder`]s that mapped it), and it is
//! marked reclaimed, so a later access by its owner faults and can be
//! handled (`Translation.PageNotPresent`).
//!
//! The frames are `hal`'s owned [`Frame`]s, and a mapping co-owns its frame
//! (`AddressSpace::map_frame`): a reclaimed or freed allocation can never
//! leave a user page pointing at reused memory. This crate has no `unsafe`.
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

use dispatch::{Authority, Denied, Event, Grant, Guard, Handler, Principal, Request};
use domain::{Export, Module, SymbolType};
use hal::memory::{self, Frame, PAGE_SIZE};

/// `PhysAddr.Reclaim`'s arguments: the owner (a principal's number) and
/// the candidate allocation's id. The result is the id of the allocation
/// to reclaim instead (the candidate itself if the owner has no better).
pub type ReclaimArgs = (u64, u64);

/// How an allocation may be used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    /// The service may take the pages back under pressure
    /// (`PhysAddr.Reclaim`). Pages that are not reclaimable count against
    /// the budget until deallocated.
    pub reclaimable: bool,
}

/// Why an allocation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhysError {
    /// Zero bytes were asked for.
    Empty,
    /// No free frame and nothing reclaimable.
    OutOfMemory {
        /// Pages asked for.
        pages: u64,
    },
}

impl fmt::Display for PhysError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PhysError::Empty => f.write_str("an allocation of zero bytes"),
            PhysError::OutOfMemory { pages } => write!(
                f,
                "no memory for {pages} pages: the budget is spent and nothing is reclaimable"
            ),
        }
    }
}

/// Something that maps physical pages and can be told to drop a mapping
/// (a `Translation` context): how a reclaim reaches every mapping.
pub trait MappingHolder: Send + Sync {
    /// Removes the mapping at `virt`, which maps a page of an allocation
    /// being reclaimed.
    fn revoke_mapping(&self, virt: u64);
}

/// A mapping of one page of an allocation, recorded so a reclaim can undo
/// it. Weak: a context that is destroyed needs no revocation.
struct MappingRecord {
    holder: Weak<dyn MappingHolder>,
    virt: u64,
}

/// An allocation: `PhysAddr.T`. The frames stay owned by it until it is
/// deallocated or reclaimed (or dropped: the frames are then freed).
pub struct PhysPages {
    id: u64,
    owner: Principal,
    attributes: Attributes,
    /// The frames; empty once reclaimed or deallocated.
    frames: spin::Mutex<Vec<Frame>>,
    pages: u64,
    reclaimed: AtomicBool,
    mappings: spin::Mutex<Vec<MappingRecord>>,
}

impl PhysPages {
    /// The allocation's number (what `PhysAddr.Reclaim` carries).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Who allocated it.
    pub fn owner(&self) -> Principal {
        self.owner
    }

    /// Its attributes.
    pub fn attributes(&self) -> Attributes {
        self.attributes
    }

    /// How many pages it has (had, if reclaimed).
    pub fn pages(&self) -> u64 {
        self.pages
    }

    /// Whether the service took its frames back (or it was deallocated).
    pub fn is_reclaimed(&self) -> bool {
        self.reclaimed.load(Ordering::Acquire)
    }

    /// Runs `with` on frame `index`, if the allocation still has it.
    pub fn with_frame<T>(&self, index: usize, with: impl FnOnce(&Frame) -> T) -> Option<T> {
        self.frames.lock().get(index).map(with)
    }

    /// Physical address of frame `index`, if still held.
    pub fn frame_address(&self, index: usize) -> Option<u64> {
        self.with_frame(index, Frame::address)
    }

    /// Records that `holder` mapped one of the pages at `virt` (the
    /// `Translation` service calls this when it adds a mapping).
    pub fn record_mapping(&self, holder: Weak<dyn MappingHolder>, virt: u64) {
        let mut mappings = self.mappings.lock();
        // Forget the records of holders that are gone, so the list stays
        // as long as the live mappings.
        mappings.retain(|record| record.holder.strong_count() > 0);
        mappings.push(MappingRecord { holder, virt });
    }

    /// Forgets a mapping that its holder removed itself.
    pub fn forget_mapping(&self, virt: u64) {
        self.mappings.lock().retain(|record| record.virt != virt);
    }

    /// Takes the frames away: every recorded mapping is revoked first, then
    /// the frames are freed. Returns how many frames were freed.
    fn take_back(&self) -> u64 {
        self.reclaimed.store(true, Ordering::Release);
        let mappings = core::mem::take(&mut *self.mappings.lock());
        for record in mappings {
            if let Some(holder) = record.holder.upgrade() {
                holder.revoke_mapping(record.virt);
            }
        }
        let frames = core::mem::take(&mut *self.frames.lock());
        let freed = frames.len() as u64;
        for frame in frames {
            memory::free_frame(frame);
        }
        freed
    }
}

impl Drop for PhysPages {
    fn drop(&mut self) {
        // Frames not given back explicitly are freed with their owner (any
        // mapping still holds its own share of the frame).
        for frame in core::mem::take(self.frames.get_mut()) {
            memory::free_frame(frame);
        }
    }
}

/// What [`PhysAddr::stats`] reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhysStats {
    /// Frames held by live allocations.
    pub held: u64,
    /// The most frames the service hands out before reclaiming.
    pub budget: u64,
    /// Allocations taken back so far.
    pub reclaimed: u64,
    /// Reclaims where the owner's handler nominated another allocation
    /// that the service accepted.
    pub nominated: u64,
}

/// The `PhysAddr` service.
pub struct PhysAddr {
    budget: u64,
    held: AtomicU64,
    next_id: AtomicU64,
    /// Live reclaimable allocations, oldest first (ids grow).
    reclaimable: spin::Mutex<BTreeMap<u64, Weak<PhysPages>>>,
    reclaim: Arc<Event<ReclaimArgs, u64>>,
    _authority: Authority,
    reclaimed: AtomicU64,
    nominated: AtomicU64,
}

/// With no handler for the owner, the candidate itself is reclaimed.
fn take_the_candidate(args: &ReclaimArgs) -> u64 {
    args.1
}

/// `PhysAddr.Reclaim`'s authorizer: the kernel installs what it likes; any
/// other principal only on its own pages (an imposed guard on the owner).
fn authorize_reclaim(request: &Request<'_>, grant: &mut Grant<ReclaimArgs>) -> Result<(), Denied> {
    if request.requester == Principal::KERNEL {
        return Ok(());
    }
    let owner = request.requester.0;
    grant.impose_guard(Guard::new(move |args: &ReclaimArgs| args.0 == owner));
    Ok(())
}

impl PhysAddr {
    /// A service that hands out at most `budget` frames before reclaiming.
    pub fn new(budget: u64) -> PhysAddr {
        let (reclaim, authority) = Event::builder("PhysAddr.Reclaim").build();
        reclaim
            .set_default(&authority, Some(Handler::new(take_the_candidate)))
            .expect("the event's own authority");
        reclaim
            .set_authorizer(&authority, Some(Arc::new(authorize_reclaim)))
            .expect("the event's own authority");
        PhysAddr {
            budget,
            held: AtomicU64::new(0),
            next_id: AtomicU64::new(1),
            reclaimable: spin::Mutex::new(BTreeMap::new()),
            reclaim: Arc::new(reclaim),
            _authority: authority,
            reclaimed: AtomicU64::new(0),
            nominated: AtomicU64::new(0),
        }
    }

    /// `PhysAddr.Reclaim`, for installing handlers.
    pub fn reclaim_event(&self) -> &Arc<Event<ReclaimArgs, u64>> {
        &self.reclaim
    }

    /// Counters.
    pub fn stats(&self) -> PhysStats {
        PhysStats {
            held: self.held.load(Ordering::Relaxed),
            budget: self.budget,
            reclaimed: self.reclaimed.load(Ordering::Relaxed),
            nominated: self.nominated.load(Ordering::Relaxed),
        }
    }

    /// `PhysAddr.Allocate`: `bytes` (rounded up to pages) of zeroed
    /// physical memory for `owner`, reclaiming others' reclaimable pages
    /// first if the budget or the machine has no room.
    pub fn allocate(
        &self,
        owner: Principal,
        bytes: u64,
        attributes: Attributes,
    ) -> Result<Arc<PhysPages>, PhysError> {
        if bytes == 0 {
            return Err(PhysError::Empty);
        }
        let pages = bytes.div_ceil(PAGE_SIZE);
        if pages > self.budget {
            // No amount of reclaiming makes room: take nothing from anyone.
            return Err(PhysError::OutOfMemory { pages });
        }
        while self.held.load(Ordering::Acquire) + pages > self.budget {
            if !self.reclaim_one() {
                return Err(PhysError::OutOfMemory { pages });
            }
        }
        let mut frames = Vec::with_capacity(pages as usize);
        while (frames.len() as u64) < pages {
            match memory::allocate_frame() {
                Some(frame) => frames.push(frame),
                None => {
                    if !self.reclaim_one() {
                        for frame in frames {
                            memory::free_frame(frame);
                        }
                        return Err(PhysError::OutOfMemory { pages });
                    }
                }
            }
        }
        self.held.fetch_add(pages, Ordering::AcqRel);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let allocation = Arc::new(PhysPages {
            id,
            owner,
            attributes,
            frames: spin::Mutex::new(frames),
            pages,
            reclaimed: AtomicBool::new(false),
            mappings: spin::Mutex::new(Vec::new()),
        });
        if attributes.reclaimable {
            self.reclaimable
                .lock()
                .insert(id, Arc::downgrade(&allocation));
        }
        Ok(allocation)
    }

    /// `PhysAddr.Deallocate`: gives the frames back now (every mapping of
    /// them is removed). Deallocating twice, or after a reclaim, does
    /// nothing.
    pub fn deallocate(&self, allocation: &PhysPages) {
        self.reclaimable.lock().remove(&allocation.id);
        if allocation.is_reclaimed() {
            return;
        }
        let freed = allocation.take_back();
        self.held.fetch_sub(freed, Ordering::AcqRel);
    }

    /// The live reclaimable allocation `id` of `owner`, if there is one.
    fn live(&self, id: u64, owner: Option<u64>) -> Option<Arc<PhysPages>> {
        let allocation = self.reclaimable.lock().get(&id)?.upgrade()?;
        let owned = owner.is_none_or(|owner| allocation.owner.0 == owner);
        (owned && !allocation.is_reclaimed()).then_some(allocation)
    }

    /// Takes back one reclaimable allocation: the oldest is the candidate,
    /// its owner's handlers may nominate another of the owner's. Whether
    /// one was taken back.
    fn reclaim_one(&self) -> bool {
        let candidate = {
            let mut reclaimable = self.reclaimable.lock();
            // Drop the entries of allocations that were dropped.
            reclaimable.retain(|_, allocation| {
                allocation
                    .upgrade()
                    .is_some_and(|allocation| !allocation.is_reclaimed())
            });
            reclaimable.values().next().and_then(Weak::upgrade)
        };
        let Some(candidate) = candidate else {
            return false;
        };
        // The handlers run with no lock of ours held: they may allocate.
        let mut args = (candidate.owner.0, candidate.id);
        let nominee = self.reclaim.raise(&mut args).unwrap_or(candidate.id);
        // Only another live reclaimable allocation of the same owner is
        // accepted; anything else (a stranger's page, garbage, a page
        // already gone) falls back on the candidate.
        let victim = match self.live(nominee, Some(candidate.owner.0)) {
            Some(nominated) if nominated.id != candidate.id => {
                self.nominated.fetch_add(1, Ordering::Relaxed);
                nominated
            }
            _ => candidate,
        };
        self.reclaimable.lock().remove(&victim.id);
        if victim.is_reclaimed() {
            // Deallocated meanwhile: its frames are back already.
            return true;
        }
        let freed = victim.take_back();
        self.held.fetch_sub(freed, Ordering::AcqRel);
        self.reclaimed.fetch_add(1, Ordering::Relaxed);
        true
    }
}

/// A `PhysAddr` procedure as the domain exports it: the service is passed
/// explicitly, so the symbol's value is a plain function pointer.
pub type AllocateFn =
    fn(&PhysAddr, Principal, u64, Attributes) -> Result<Arc<PhysPages>, PhysError>;
/// `PhysAddr.Deallocate` as exported.
pub type DeallocateFn = fn(&PhysAddr, &PhysPages);

impl Module for PhysAddr {
    fn name(&self) -> &str {
        "PhysAddr"
    }

    /// `CreateFromModule`'s view of the service: its procedures and its
    /// event.
    fn exports(&self) -> Vec<Export> {
        let allocate: AllocateFn = PhysAddr::allocate;
        let deallocate: DeallocateFn = PhysAddr::deallocate;
        Vec::from([
            Export::new(
                "PhysAddr.Allocate",
                SymbolType::Type(core::any::type_name::<AllocateFn>()),
                allocate,
            ),
            Export::new(
                "PhysAddr.Deallocate",
                SymbolType::Type(core::any::type_name::<DeallocateFn>()),
                deallocate,
            ),
            Export::shared(
                "PhysAddr.Reclaim",
                SymbolType::Event(self.reclaim.signature().clone()),
                self.reclaim.clone(),
            ),
        ])
    }
}
