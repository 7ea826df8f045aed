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
//! - `Strand.Unblock(strand, group, priority)`: the strand can run (it was
//!   made); the scheduler queues it.
//! - `Strand.Block(strand, group, 0)`: the strand can no longer run (it
//!   ended); the scheduler forgets it.
//! - `Strand.Checkpoint(strand, group, 0) -> next`: the strand (0: none)
//!   gives up the group's processor (it yields or ends); the handler names
//!   the strand of the group to run next.
//! - `Strand.Resume(strand, group, 0)`: the strand gets the processor.
//!
//! Each event's authorizer lets an extension handle the events of the
//! group it was loaded for and no other (an imposed guard on the group
//! argument). The kernel checks every answer: a strand that is not in the
//! group, no answer, or a faulting handler falls back to the group's
//! oldest strand, so a bad scheduler can starve its own strands but never
//! strand them, and never touches anyone else's.

use alloc::{collections::BTreeMap, collections::BTreeSet, sync::Arc};
use core::sync::atomic::{AtomicU64, Ordering};

use dispatch::{Authority, Denied, Event, Grant, Guard, Principal, Request};
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
                    Some(Arc::new(move |request: &Request<'_>, grant: &mut Grant<StrandArgs>| {
                        authorize(&table, request, grant)
                    })),
                )
                .expect("the event's own authority");
        }
        let table = owners.clone();
        checkpoint
            .set_authorizer(
                &c,
                Some(Arc::new(move |request: &Request<'_>, grant: &mut Grant<StrandArgs>| {
                    authorize(&table, request, grant)
                })),
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
    members: BTreeSet<u64>,
    /// The strand holding the group's processor, if any.
    running: Option<u64>,
    /// Whether [`Group::start`] has been called.
    started: bool,
}

/// A set of strands scheduled by an application-specific scheduler.
pub struct Group {
    state: Arc<GroupState>,
}

impl Group {
    /// A new, empty group (not started).
    pub fn new() -> Result<Group, &'static str> {
        let strands = STRANDS.get().ok_or("the strand events are not set up")?;
        let id = LAST_GROUP.fetch_add(1, Ordering::Relaxed) + 1;
        let state = Arc::new(GroupState {
            id,
            inner: spin::Mutex::new(GroupInner {
                members: BTreeSet::new(),
                running: None,
                started: false,
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
        self.state.inner.lock().members.insert(strand);
        raise_unit(|events| &events.unblock, (strand, self.state.id, priority));
        // A started group with its processor free runs it at once (as the
        // scheduler chooses).
        let idle = {
            let inner = self.state.inner.lock();
            inner.started && inner.running.is_none()
        };
        if idle {
            if let Some(next) = give_processor(&self.state, 0) {
                sched::wake(ThreadId(next));
            }
        }
        Ok(handle)
    }

    /// Starts the group: its scheduler names the first strand to run.
    pub fn start(&self) {
        self.state.inner.lock().started = true;
        if let Some(next) = give_processor(&self.state, 0) {
            sched::wake(ThreadId(next));
        }
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
/// leaving), checks the answer, and records it as holding the group's
/// processor. Returns the strand chosen, if any member is left; the caller
/// makes it ready.
fn give_processor(group: &GroupState, leaving: u64) -> Option<u64> {
    let strands = STRANDS.get()?;
    let mut args = (leaving, group.id, 0);
    let answer = strands.events.checkpoint.raise(&mut args).unwrap_or(0);
    let next = {
        let mut inner = group.inner.lock();
        let next = if inner.members.contains(&answer) {
            Some(answer)
        } else {
            // No usable answer: the oldest strand, so none is stranded.
            inner.members.iter().next().copied()
        };
        inner.running = next;
        next
    }?;
    raise_unit(|events| &events.resume, (next, group.id, 0));
    Some(next)
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
    group.inner.lock().members.remove(&me);
    if let Some(strands) = STRANDS.get() {
        strands.member_of.lock().remove(&me);
    }
    raise_unit(|events| &events.block, (me, group.id, 0));
    if let Some(next) = give_processor(group, me) {
        sched::wake(ThreadId(next));
    }
}
