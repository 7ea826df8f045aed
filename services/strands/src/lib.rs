//! The `Strand` events (SPIN figure 4) and application-specific
//! schedulers built on them.
//!
//! The global scheduler (`sched`) runs kernel threads round-robin with
//! preemption. An application may schedule a set of its own strands, a
//! [`Group`], as it likes: the global scheduler gives the group one
//! virtual processor (at most one of its strands is ready at a time), and
//! the application's handlers on the strand events decide which of its
//! strands has it, as SPIN's thread packages did:
//!
//! - `Strand.Unblock(strand, group, priority)`: the strand can run: it was
//!   made, or it was blocked in the kernel and something woke it. The
//!   scheduler queues it; it runs when a Checkpoint names it.
//! - `Strand.Block(strand, group, 0)`: the strand can no longer run: it
//!   blocked in the kernel (a mutex, condition variable, sleep, join,
//!   futex) or it ended. The scheduler drops it from its queue.
//! - `Strand.Checkpoint(strand, group, 0) -> next`: the strand (0: none)
//!   gives up the group's processor (it yields, blocks or ends); the
//!   handler names the runnable strand of the group to run next.
//! - `Strand.Resume(strand, group, 0)`: the strand gets the processor.
//!
//! Each event's authorizer lets an extension handle the events of the
//! group it was loaded for and no other (an imposed guard on the group
//! argument). The kernel checks every answer: a strand that is not in the
//! group, is blocked, no answer, or a faulting handler falls back to the
//! group's oldest runnable strand, so a bad scheduler can starve its own
//! strands but never strand them, and never touches anyone else's.
//!
//! **Blocking in the kernel.** Group strands are marked grouped in `sched`,
//! whose [`sched::StrandHooks`] report a grouped strand that parks and a
//! parked grouped strand that a waker wakes; a woken one stays parked. The
//! hooks run with interrupts disabled, maybe in the timer interrupt, while
//! a preempted thread may hold a lock a handler needs (an extension's, a
//! group's): raising events there could deadlock. So the hooks only queue
//! a note, and the *keeper*, one kernel thread, raises the events in
//! order: for a block, Block and then Checkpoint (the processor goes to
//! the runnable strand the scheduler names); for a wake, Unblock, and a
//! Checkpoint only if the group's processor is free. Otherwise the woken
//! strand waits for its group's scheduler to choose it. The price: a
//! switch to the keeper per block and per wake of a group strand; an
//! ungrouped thread pays one flag test in `sched`.
#![no_std]

extern crate alloc;

use alloc::{
    collections::{BTreeMap, BTreeSet, VecDeque},
    sync::Arc,
};
use core::sync::atomic::{AtomicU64, Ordering};

use dispatch::{Authority, Denied, Event, Grant, Guard, Principal, Request};
use hal::sync::IrqMutex;
use sched::{JoinHandle, SpawnError, ThreadId};

/// The events' arguments: the strand, its group, and a third value
/// (the priority for `Unblock`, 0 otherwise).
pub type StrandArgs = (u64, u64, u64);

/// The four events.
pub struct StrandEvents {
    /// `Strand.Unblock`.
    pub unblock: Arc<Event<StrandArgs, ()>>,
    /// `Strand.Block`.
    pub block: Arc<Event<StrandArgs, ()>>,
    /// `Strand.Checkpoint`, answering the strand to run next.
    pub checkpoint: Arc<Event<StrandArgs, u64>>,
    /// `Strand.Resume`.
    pub resume: Arc<Event<StrandArgs, ()>>,
}

struct Strands {
    events: StrandEvents,
    _authorities: [Authority; 4],
    /// The group each extension principal may schedule.
    owners: Arc<spin::Mutex<BTreeMap<Principal, u64>>>,
    /// Groups by id.
    groups: spin::Mutex<BTreeMap<u64, Arc<GroupState>>>,
    /// The group of each grouped strand.
    member_of: spin::Mutex<BTreeMap<u64, u64>>,
}

static STRANDS: spin::Once<Strands> = spin::Once::new();
static LAST_GROUP: AtomicU64 = AtomicU64::new(0);

fn nothing(_: &StrandArgs) {}
/// With no scheduler, nobody is named: the kernel's fallback chooses.
fn nobody(_: &StrandArgs) -> u64 {
    0
}

/// The authorizer of the four events: the kernel installs what it likes;
/// an extension only on the group it was loaded for (imposed guard).
fn authorize(
    owners: &spin::Mutex<BTreeMap<Principal, u64>>,
    request: &Request<'_>,
    grant: &mut Grant<StrandArgs>,
) -> Result<(), Denied> {
    if request.requester == Principal::KERNEL {
        return Ok(());
    }
    let Some(&group) = owners.lock().get(&request.requester) else {
        return Err(Denied::new(
            "an extension may handle only the strand events of the group it schedules",
        ));
    };
    grant.impose_guard(Guard::new(move |args: &StrandArgs| args.1 == group));
    Ok(())
}

/// Creates the events.
pub fn init() {
    STRANDS.call_once(|| {
        let owners: Arc<spin::Mutex<BTreeMap<Principal, u64>>> = Arc::default();
        let (unblock, a) = Event::new("Strand.Unblock", nothing as fn(&StrandArgs));
        let (block, b) = Event::new("Strand.Block", nothing as fn(&StrandArgs));
        let (checkpoint, c) = Event::new("Strand.Checkpoint", nobody as fn(&StrandArgs) -> u64);
        let (resume, d) = Event::new("Strand.Resume", nothing as fn(&StrandArgs));
        for (event, authority) in [(&unblock, &a), (&block, &b), (&resume, &d)] {
            let table = owners.clone();
            event
                .set_authorizer(
                    authority,
                    Some(Arc::new(
                        move |request: &Request<'_>, grant: &mut Grant<StrandArgs>| {
                            authorize(&table, request, grant)
                        },
                    )),
                )
                .expect("the event's own authority");
        }
        let table = owners.clone();
        checkpoint
            .set_authorizer(
                &c,
                Some(Arc::new(
                    move |request: &Request<'_>, grant: &mut Grant<StrandArgs>| {
                        authorize(&table, request, grant)
                    },
                )),
            )
            .expect("the event's own authority");
        Strands {
            events: StrandEvents {
                unblock: Arc::new(unblock),
                block: Arc::new(block),
                checkpoint: Arc::new(checkpoint),
                resume: Arc::new(resume),
            },
            _authorities: [a, b, c, d],
            owners,
            groups: spin::Mutex::new(BTreeMap::new()),
            member_of: spin::Mutex::new(BTreeMap::new()),
        }
    });
}

/// The events (for binding extensions, the shell's `events`, tests).
pub fn events() -> Option<&'static StrandEvents> {
    STRANDS.get().map(|strands| &strands.events)
}

/// Lets extension `principal` schedule group `group` (and only it).
pub fn set_owner(principal: Principal, group: u64) {
    if let Some(strands) = STRANDS.get() {
        strands.owners.lock().insert(principal, group);
    }
}

/// Takes back what [`set_owner`] gave.
pub fn forget_owner(principal: Principal) {
    if let Some(strands) = STRANDS.get() {
        strands.owners.lock().remove(&principal);
    }
}

/// A group's state: its strands and which one has its processor.
struct GroupState {
    id: u64,
    inner: spin::Mutex<GroupInner>,
}

struct GroupInner {
    /// Its strands (oldest first: thread ids only grow) and their
    /// priorities, which `Unblock` carries each time.
    members: BTreeMap<u64, u64>,
    /// Members blocked in the kernel: not runnable until woken.
    blocked: BTreeSet<u64>,
    /// The strand holding the group's processor, if any.
    running: Option<u64>,
    /// Whether [`Group::start`] has been called.
    started: bool,
    /// Whether a thread is asking the scheduler who gets the free
    /// processor (so two threads that find it free do not both give it).
    choosing: bool,
}

impl GroupInner {
    fn is_runnable(&self, strand: u64) -> bool {
        self.members.contains_key(&strand) && !self.blocked.contains(&strand)
    }
}

/// A set of strands scheduled by an application-specific scheduler.
pub struct Group {
    state: Arc<GroupState>,
}

impl Group {
    /// A new, empty group (not started).
    pub fn new() -> Result<Group, &'static str> {
        let strands = STRANDS.get().ok_or("the strand events are not set up")?;
        start_keeper()?;
        let id = LAST_GROUP.fetch_add(1, Ordering::Relaxed) + 1;
        let state = Arc::new(GroupState {
            id,
            inner: spin::Mutex::new(GroupInner {
                members: BTreeMap::new(),
                blocked: BTreeSet::new(),
                running: None,
                started: false,
                choosing: false,
            }),
        });
        strands.groups.lock().insert(id, state.clone());
        Ok(Group { state })
    }

    /// The group's identifier (what the events carry).
    pub fn id(&self) -> u64 {
        self.state.id
    }

    /// Makes a strand of the group running `entry`, with `priority` (for
    /// the scheduler to use as it likes). It runs when the group's
    /// scheduler gives it the processor.
    pub fn spawn(
        &self,
        name: &str,
        priority: u64,
        entry: impl FnOnce() + Send + 'static,
    ) -> Result<JoinHandle, SpawnError> {
        let group = self.state.clone();
        let handle = sched::spawn_blocked(name, move || {
            entry();
            strand_ended(&group);
        })?;
        let strand = handle.id().0;
        if let Some(strands) = STRANDS.get() {
            strands.member_of.lock().insert(strand, self.state.id);
        }
        self.state.inner.lock().members.insert(strand, priority);
        // Before it can first run: from then on its blocks and wakes go
        // through the keeper.
        sched::set_grouped(handle.id(), true);
        raise_unit(|events| &events.unblock, (strand, self.state.id, priority));
        // A started group with its processor free runs it at once (as the
        // scheduler chooses).
        offer_processor(&self.state, 0);
        Ok(handle)
    }

    /// Starts the group: its scheduler names the first strand to run.
    pub fn start(&self) {
        self.state.inner.lock().started = true;
        offer_processor(&self.state, 0);
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(strands) = STRANDS.get() {
            strands.groups.lock().remove(&self.state.id);
        }
    }
}

fn raise_unit(event: impl Fn(&StrandEvents) -> &Arc<Event<StrandArgs, ()>>, mut args: StrandArgs) {
    if let Some(strands) = STRANDS.get() {
        let _ = event(&strands.events).raise(&mut args);
    }
}

/// Asks the group's scheduler who runs after `leaving` (0: nobody is
/// leaving), checks the answer (a runnable member, else the oldest
/// runnable one), records it as holding the group's processor and raises
/// Resume for it. Returns the strand chosen, if any is runnable; the
/// caller makes it ready. Only the holder of the processor, or the thread
/// that set `choosing`, calls this.
fn give_processor(group: &GroupState, leaving: u64) -> Option<u64> {
    let strands = STRANDS.get()?;
    let mut args = (leaving, group.id, 0);
    let answer = strands.events.checkpoint.raise(&mut args).unwrap_or(0);
    let next = {
        let mut inner = group.inner.lock();
        let next = if inner.is_runnable(answer) {
            Some(answer)
        } else {
            // No usable answer: the oldest runnable strand, so none is
            // stranded. Checked under the lock that guards membership, so
            // a strand made runnable while the scheduler was asked is seen
            // here or sees the processor free afterwards.
            inner
                .members
                .keys()
                .copied()
                .find(|strand| !inner.blocked.contains(strand))
        };
        inner.running = next;
        inner.choosing = false;
        next
    }?;
    raise_unit(|events| &events.resume, (next, group.id, 0));
    Some(next)
}

/// Gives the group's processor to the strand its scheduler names, if the
/// group is started and the processor is free (or held by `leaving`,
/// which blocked) and nobody else is already choosing.
fn offer_processor(group: &GroupState, leaving: u64) {
    {
        let mut inner = group.inner.lock();
        let is_free = match inner.running {
            None => true,
            Some(holder) => holder == leaving && leaving != 0,
        };
        if !inner.started || inner.choosing || !is_free {
            return;
        }
        inner.running = None;
        inner.choosing = true;
    }
    if let Some(next) = give_processor(group, leaving) {
        // A group's choice: ready it although it is grouped.
        sched::resume(ThreadId(next));
    }
}

/// The group a strand belongs to, if any.
fn group_of(strand: u64) -> Option<Arc<GroupState>> {
    let strands = STRANDS.get()?;
    let group = *strands.member_of.lock().get(&strand)?;
    strands.groups.lock().get(&group).cloned()
}

/// Gives up the group's processor (a strand of a group), letting its
/// scheduler choose who runs next; an ungrouped thread just yields to the
/// global scheduler.
pub fn yield_now() {
    let me = sched::current().0;
    let Some(group) = group_of(me) else {
        sched::yield_now();
        return;
    };
    // Strands woken before this yield are candidates at it.
    settle();
    match give_processor(&group, me) {
        Some(next) if next != me => sched::hand_off(ThreadId(next)),
        // Chosen again: keep running, but let other kernel threads in.
        _ => sched::yield_now(),
    }
}

/// A group strand's entry returned: it leaves the group, and the group's
/// processor goes to the strand its scheduler names.
fn strand_ended(group: &GroupState) {
    let me = sched::current().0;
    {
        let mut inner = group.inner.lock();
        inner.members.remove(&me);
        inner.blocked.remove(&me);
    }
    if let Some(strands) = STRANDS.get() {
        strands.member_of.lock().remove(&me);
    }
    // Its end (waking its joiners) is no block of the group's.
    sched::set_grouped(ThreadId(me), false);
    raise_unit(|events| &events.block, (me, group.id, 0));
    if let Some(next) = give_processor(group, me) {
        sched::resume(ThreadId(next));
    }
}

/// What the `sched` hooks saw, for the keeper to act on in order.
#[derive(Clone, Copy)]
enum Note {
    /// The strand parked in the kernel.
    Blocked(u64),
    /// A waker woke the parked strand.
    Woken(u64),
}

/// Notes not yet taken by the keeper.
static NOTES: IrqMutex<VecDeque<Note>> = IrqMutex::new(VecDeque::new());
/// The keeper's thread id (valid once [`start_keeper`] has run).
static KEEPER: AtomicU64 = AtomicU64::new(0);
/// Notes queued since boot (tests check that ungrouped threads add none).
static NOTES_QUEUED: AtomicU64 = AtomicU64::new(0);
/// Notes the keeper has finished acting on (they are taken in order, so
/// every note up to this count is done).
static NOTES_DONE: AtomicU64 = AtomicU64::new(0);
/// Whether the keeper runs (spawned with the first group).
static KEEPER_STARTED: spin::Once<Result<(), &'static str>> = spin::Once::new();

/// Spawns the keeper and installs the `sched` hooks, once. Lazily, with
/// the first group, so a kernel that never groups strands has no keeper.
fn start_keeper() -> Result<(), &'static str> {
    *KEEPER_STARTED.call_once(|| {
        let keeper = sched::spawn("strand-keeper", keep).map_err(|_| "no memory for the keeper")?;
        KEEPER.store(keeper.id().0, Ordering::Relaxed);
        sched::set_strand_hooks(sched::StrandHooks {
            on_block: |strand| note(Note::Blocked(strand.0)),
            on_wake: |strand| note(Note::Woken(strand.0)),
        });
        Ok(())
    })
}

/// The hooks: interrupts are disabled here, so only queue and wake.
fn note(note: Note) {
    NOTES_QUEUED.fetch_add(1, Ordering::Relaxed);
    NOTES.lock().push_back(note);
    sched::wake(ThreadId(KEEPER.load(Ordering::Relaxed)));
}

/// How many blocks and wakes of group strands the `sched` hooks reported
/// since boot.
pub fn notes_queued() -> u64 {
    NOTES_QUEUED.load(Ordering::Relaxed)
}

/// The keeper: raises the events the hooks' notes call for, one note at
/// a time and in order (a strand's Block before its Unblock).
fn keep() {
    loop {
        let next = NOTES.lock().pop_front();
        match next {
            Some(Note::Blocked(strand)) => strand_blocked(strand),
            Some(Note::Woken(strand)) => strand_woken(strand),
            // Checked with interrupts disabled: a note queued after this
            // finds the keeper parked and wakes it.
            None => {
                sched::block_current_if(|_| NOTES.lock().is_empty());
                continue;
            }
        }
        NOTES_DONE.fetch_add(1, Ordering::Release);
    }
}

/// Waits until the keeper has acted on every note queued so far (not on
/// later ones, so a busy stream of other groups' notes cannot hold the
/// caller up for ever).
fn settle() {
    let queued = NOTES_QUEUED.load(Ordering::Acquire);
    while NOTES_DONE.load(Ordering::Acquire) < queued {
        sched::yield_now();
    }
}

/// A group strand blocked in the kernel: Block, then its processor goes to
/// the runnable strand the scheduler names.
fn strand_blocked(strand: u64) {
    let Some(group) = group_of(strand) else {
        return;
    };
    {
        let mut inner = group.inner.lock();
        if !inner.members.contains_key(&strand) {
            return;
        }
        inner.blocked.insert(strand);
    }
    raise_unit(|events| &events.block, (strand, group.id, 0));
    offer_processor(&group, strand);
}

/// A group strand blocked in the kernel was woken: Unblock; it runs when
/// its scheduler chooses it (at once only if the processor is free). A
/// wake of a strand that is not blocked in the kernel (one waiting for its
/// turn) changes nothing.
fn strand_woken(strand: u64) {
    let Some(group) = group_of(strand) else {
        // Its group is gone: nobody else would ever ready it.
        sched::resume(ThreadId(strand));
        return;
    };
    let priority = {
        let mut inner = group.inner.lock();
        if !inner.blocked.remove(&strand) {
            return;
        }
        inner.members.get(&strand).copied().unwrap_or(0)
    };
    raise_unit(|events| &events.unblock, (strand, group.id, priority));
    offer_processor(&group, 0);
}
