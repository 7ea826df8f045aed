//! Scheduling: `sched_setscheduler`, `sched_getscheduler`,
//! `sched_setparam`, `sched_getparam`, `sched_get_priority_max`/`min`,
//! `sched_rr_get_interval`, `getpriority`, `setpriority` (and so glibc's
//! `nice`), `getcpu`, `ioprio_get`, `ioprio_set`.
//!
//! Each thread's Linux settings (policy, real-time priority, nice) are
//! kept here, by strand, and applied by the scheduler as a rank and a
//! time slice ([`linux::scheduling::ThreadScheduling::treatment`]): a
//! real-time thread runs before every time-sharing one, and a thread's
//! nice value sets how long it runs per turn. Children inherit their
//! creator's settings. I/O priorities are kept per process; nothing
//! queues I/O yet, so they are recorded, not applied.

use alloc::{collections::BTreeMap, vec::Vec};

use linux::{
    credentials::{Credentials, CAP_SYS_ADMIN, CAP_SYS_NICE},
    scheduling::{self, PriorityTarget, ThreadScheduling, IOPRIO_CLASS_REALTIME},
};
use linux_abi::{time::Timespec, Errno};

/// Each thread's settings, by strand; a thread not here has the
/// defaults.
static THREADS: spin::Mutex<BTreeMap<u64, ThreadScheduling>> = spin::Mutex::new(BTreeMap::new());
/// Each thread's strand, by thread id, from the moment its creator made
/// it: a parent may ask about a child before the child first runs (and
/// so before the process service knows its strand).
static STRANDS: spin::Mutex<BTreeMap<u64, u64>> = spin::Mutex::new(BTreeMap::new());
/// Each process's I/O priority, by process id; the default if absent.
static IO_PRIORITIES: spin::Mutex<BTreeMap<u64, u16>> = spin::Mutex::new(BTreeMap::new());

/// The settings of `strand`.
fn settings_of(strand: u64) -> ThreadScheduling {
    THREADS.lock().get(&strand).copied().unwrap_or_default()
}

/// Records and applies `settings` for `strand`.
fn apply(strand: u64, settings: ThreadScheduling) {
    let (rank, slice_ticks) = settings.treatment(sched::TIME_SLICE_TICKS);
    let exists = sched::set_scheduling(
        sched::ThreadId(strand),
        sched::Scheduling { rank, slice_ticks },
    );
    let mut threads = THREADS.lock();
    // A thread that ended already is not remembered.
    if !exists || settings == ThreadScheduling::default() {
        threads.remove(&strand);
    } else {
        threads.insert(strand, settings);
    }
}

/// Thread `tid` on strand `child` was made by `creator` (`fork`,
/// `clone`): it starts with the creator's settings (or the defaults,
/// with `SCHED_RESET_ON_FORK`).
pub fn thread_created(creator: u64, child: u64, tid: u64) {
    STRANDS.lock().insert(tid, child);
    let settings = settings_of(creator).for_child();
    if settings != ThreadScheduling::default() {
        apply(child, settings);
    }
}

/// Thread `strand` ended: its settings are forgotten.
pub fn thread_ended(strand: u64) {
    THREADS.lock().remove(&strand);
    STRANDS.lock().retain(|_, &mut running| running != strand);
}

/// Process `pid` was forked from `parent`: it starts with the parent's
/// I/O priority.
pub fn process_forked(parent: u64, pid: u64) {
    let mut priorities = IO_PRIORITIES.lock();
    if let Some(&priority) = priorities.get(&parent) {
        priorities.insert(pid, priority);
    }
}

/// Process `pid`'s last thread ended: its I/O priority is forgotten.
pub fn process_ended(pid: u64) {
    IO_PRIORITIES.lock().remove(&pid);
}

/// The strand of the thread a `sched_*` call names: `tid` 0 is the
/// caller; `EINVAL` for a negative one, `ESRCH` for none.
fn thread_named(strand: u64, tid: u64) -> Result<u64, Errno> {
    match tid as i64 {
        0 => Ok(strand),
        tid if tid < 0 => Err(Errno::EINVAL),
        tid => {
            let tid = tid as u64;
            let known = STRANDS.lock().get(&tid).copied();
            known
                .or_else(|| process::strand_of_thread(tid))
                .ok_or(Errno::ESRCH)
        }
    }
}

/// The calling process's credentials (root's for a program outside the
/// personality).
fn credentials_of_strand(strand: u64) -> Credentials {
    crate::threads::process_of(strand)
        .and_then(|pid| crate::personality()?.files(pid))
        .map(|files| files.credentials())
        .unwrap_or_default()
}

/// The credentials of process `pid`, if the personality knows it.
fn credentials_of_process(pid: u64) -> Option<Credentials> {
    crate::personality()?
        .files(pid)
        .map(|files| files.credentials())
}

/// Reads a `struct sched_param` (one `int`): `EINVAL` for a null one.
fn read_param(address: u64) -> Result<i32, Errno> {
    if address == 0 {
        return Err(Errno::EINVAL);
    }
    let mut bytes = [0u8; 4];
    hal::user::copy_from_user(&mut bytes, address).map_err(|_| Errno::EFAULT)?;
    Ok(i32::from_le_bytes(bytes))
}

/// Whether `caller` acts for `target`'s user: its effective user is the
/// target's real or effective one (Linux's `set_one_prio` and
/// `check_same_owner`).
fn owns(caller: &Credentials, target: &Credentials) -> bool {
    caller.users.effective == target.users.real || caller.users.effective == target.users.effective
}

/// Whether the caller may give `target` the real-time settings `new`:
/// without `CAP_SYS_NICE` only its own user's threads, and never a
/// real-time policy or a higher real-time priority (`RLIMIT_RTPRIO` is
/// 0).
fn may_change(
    caller: &Credentials,
    target: Option<&Credentials>,
    old: ThreadScheduling,
    new: ThreadScheduling,
) -> Result<(), Errno> {
    if caller.capable(CAP_SYS_NICE) {
        return Ok(());
    }
    if target.is_some_and(|target| !owns(caller, target)) {
        return Err(Errno::EPERM);
    }
    if new.policy.is_realtime() && (!old.policy.is_realtime() || new.priority > old.priority) {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// The process a thread belongs to.
fn process_of_strand(strand: u64) -> Option<u64> {
    crate::threads::process_of(strand)
}

/// `sched_setscheduler(tid, policy, param)`.
fn set_scheduler(strand: u64, tid: u64, policy: u64, param: u64) -> Result<i64, Errno> {
    if (tid as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    let (policy, reset_on_fork) = scheduling::policy(policy)?;
    let priority = scheduling::priority(policy, read_param(param)?)?;
    let target = thread_named(strand, tid)?;
    let old = settings_of(target);
    let new = ThreadScheduling {
        policy,
        priority,
        reset_on_fork,
        ..old
    };
    let target_credentials = process_of_strand(target).and_then(credentials_of_process);
    may_change(
        &credentials_of_strand(strand),
        target_credentials.as_ref(),
        old,
        new,
    )?;
    apply(target, new);
    Ok(0)
}

/// `sched_setparam(tid, param)`: the priority within the thread's policy.
fn set_param(strand: u64, tid: u64, param: u64) -> Result<i64, Errno> {
    if (tid as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    let value = read_param(param)?;
    let target = thread_named(strand, tid)?;
    let old = settings_of(target);
    let new = ThreadScheduling {
        priority: scheduling::priority(old.policy, value)?,
        ..old
    };
    let target_credentials = process_of_strand(target).and_then(credentials_of_process);
    may_change(
        &credentials_of_strand(strand),
        target_credentials.as_ref(),
        old,
        new,
    )?;
    apply(target, new);
    Ok(0)
}

/// `sched_getparam(tid, param)`.
fn get_param(strand: u64, tid: u64, param: u64) -> Result<i64, Errno> {
    if (tid as i64) < 0 || param == 0 {
        return Err(Errno::EINVAL);
    }
    let target = thread_named(strand, tid)?;
    let priority = i32::from(settings_of(target).priority);
    hal::user::copy_to_user(param, &priority.to_le_bytes()).map_err(|_| Errno::EFAULT)?;
    Ok(0)
}

/// `sched_getscheduler(tid)`: the policy (with `SCHED_RESET_ON_FORK` if
/// set).
fn get_scheduler(strand: u64, tid: u64) -> Result<i64, Errno> {
    let settings = settings_of(thread_named(strand, tid)?);
    let reset = if settings.reset_on_fork {
        scheduling::RESET_ON_FORK as i64
    } else {
        0
    };
    Ok(settings.policy.number() | reset)
}

/// `sched_get_priority_max(policy)` (`max`) or `_min`: 0 for
/// `SCHED_DEADLINE`, which has no priorities, as on Linux.
fn priority_limit(policy: u64, max: bool) -> Result<i64, Errno> {
    if policy == scheduling::SCHED_DEADLINE {
        return Ok(0);
    }
    let (policy, _) = scheduling::policy(policy)?;
    let (low, high) = policy.priority_range();
    Ok(i64::from(if max { high } else { low }))
}

/// `sched_rr_get_interval(tid, interval)`: the thread's time slice (0
/// for `SCHED_FIFO`, which has none).
fn round_robin_interval(strand: u64, tid: u64, interval: u64) -> Result<i64, Errno> {
    let target = thread_named(strand, tid)?;
    let (_, slice) = settings_of(target).treatment(sched::TIME_SLICE_TICKS);
    let ns = slice.map_or(0, |ticks| {
        u64::from(ticks) * (1_000_000_000 / hal::timer::TICK_HZ)
    });
    let value = Timespec::from_nanoseconds(ns);
    hal::user::copy_to_user(interval, &value.to_bytes()).map_err(|_| Errno::EFAULT)?;
    Ok(0)
}

/// The threads a priority call names, as (strand, its process), and
/// their processes' credentials; `ESRCH` when none.
fn targets(strand: u64, target: PriorityTarget) -> Result<Vec<(u64, Option<Credentials>)>, Errno> {
    let personality = crate::personality().ok_or(Errno::ESRCH)?;
    let caller_pid = process_of_strand(strand).ok_or(Errno::ESRCH)?;
    let with_credentials = |strand: u64| {
        let credentials = process_of_strand(strand).and_then(credentials_of_process);
        (strand, credentials)
    };
    let found: Vec<(u64, Option<Credentials>)> = match target {
        PriorityTarget::Process(0) => alloc::vec![with_credentials(strand)],
        PriorityTarget::Process(tid) => thread_named(strand, tid)
            .ok()
            .map(with_credentials)
            .into_iter()
            .collect(),
        PriorityTarget::Group(group) => {
            let group = if group == 0 {
                personality.process_group(caller_pid).ok_or(Errno::ESRCH)?
            } else {
                group
            };
            personality
                .group_members(group)
                .into_iter()
                .flat_map(process::strands_of_process)
                .map(with_credentials)
                .collect()
        }
        PriorityTarget::User(uid) => {
            let uid = if uid == 0 {
                credentials_of_strand(strand).users.real
            } else {
                uid
            };
            personality
                .pids()
                .into_iter()
                .filter(|&pid| credentials_of_process(pid).is_some_and(|c| c.users.real == uid))
                .flat_map(process::strands_of_process)
                .map(with_credentials)
                .collect()
        }
    };
    if found.is_empty() {
        return Err(Errno::ESRCH);
    }
    Ok(found)
}

/// `getpriority(which, who)`: `20 - nice` of the highest-priority
/// (lowest nice) thread named.
fn get_priority(strand: u64, which: u64, who: u64) -> Result<i64, Errno> {
    let target = scheduling::priority_target(which, who)?;
    let nice = targets(strand, target)?
        .into_iter()
        .map(|(thread, _)| settings_of(thread).nice)
        .min()
        .unwrap_or(0);
    Ok(scheduling::priority_of_nice(nice))
}

/// `setpriority(which, who, nice)`: every thread named gets the nice
/// value (clamped to -20..19); `EACCES` for lowering it without
/// `CAP_SYS_NICE`, `EPERM` for another user's thread.
fn set_priority(strand: u64, which: u64, who: u64, nice: u64) -> Result<i64, Errno> {
    let target = scheduling::priority_target(which, who)?;
    let nice = scheduling::clamp_nice(nice);
    let caller = credentials_of_strand(strand);
    let mut result = Ok(0);
    for (thread, credentials) in targets(strand, target)? {
        let old = settings_of(thread);
        if !caller.capable(CAP_SYS_NICE) {
            if credentials
                .as_ref()
                .is_some_and(|target| !owns(&caller, target))
            {
                result = Err(Errno::EPERM);
                continue;
            }
            // Lowering a nice value needs the capability
            // (`RLIMIT_NICE` is 0).
            if nice < old.nice {
                result = Err(Errno::EACCES);
                continue;
            }
        }
        apply(thread, ThreadScheduling { nice, ..old });
    }
    result
}

/// `getcpu(cpu, node, cache)`: one processor, one memory node.
fn get_cpu(cpu: u64, node: u64) -> Result<i64, Errno> {
    for address in [cpu, node] {
        if address != 0 {
            hal::user::copy_to_user(address, &0u32.to_le_bytes()).map_err(|_| Errno::EFAULT)?;
        }
    }
    Ok(0)
}

/// The processes an I/O-priority call names.
fn io_targets(strand: u64, which: u64, who: u64) -> Result<Vec<u64>, Errno> {
    let target = scheduling::io_priority_target(which, who)?;
    let mut pids: Vec<u64> = targets(strand, target)?
        .into_iter()
        .filter_map(|(thread, _)| process_of_strand(thread))
        .collect();
    pids.dedup();
    Ok(pids)
}

/// `ioprio_get(which, who)`: the best (lowest) I/O priority named.
fn io_priority_get(strand: u64, which: u64, who: u64) -> Result<i64, Errno> {
    let priorities = IO_PRIORITIES.lock();
    Ok(io_targets(strand, which, who)?
        .into_iter()
        .map(|pid| {
            priorities
                .get(&pid)
                .copied()
                .unwrap_or(scheduling::IOPRIO_DEFAULT)
        })
        .min()
        .map_or(0, i64::from))
}

/// `ioprio_set(which, who, ioprio)`: the real-time class needs
/// `CAP_SYS_NICE` or `CAP_SYS_ADMIN`.
fn io_priority_set(strand: u64, which: u64, who: u64, value: u64) -> Result<i64, Errno> {
    let (value, class) = scheduling::io_priority(value)?;
    let caller = credentials_of_strand(strand);
    if class == IOPRIO_CLASS_REALTIME
        && !caller.capable(CAP_SYS_NICE)
        && !caller.capable(CAP_SYS_ADMIN)
    {
        return Err(Errno::EPERM);
    }
    let pids = io_targets(strand, which, who)?;
    let mut priorities = IO_PRIORITIES.lock();
    for pid in pids {
        priorities.insert(pid, value);
    }
    Ok(0)
}

/// The family's calls, by number; `None` for another's.
pub(crate) fn handle(strand: u64, number: u64, [a0, a1, a2, _, _, _]: [u64; 6]) -> Option<i64> {
    use linux_abi::syscall::*;
    let result = match number {
        SCHED_SETSCHEDULER => set_scheduler(strand, a0, a1, a2),
        SCHED_GETSCHEDULER => get_scheduler(strand, a0),
        SCHED_SETPARAM => set_param(strand, a0, a1),
        SCHED_GETPARAM => get_param(strand, a0, a1),
        SCHED_GET_PRIORITY_MAX => priority_limit(a0, true),
        SCHED_GET_PRIORITY_MIN => priority_limit(a0, false),
        SCHED_RR_GET_INTERVAL => round_robin_interval(strand, a0, a1),
        GETPRIORITY => get_priority(strand, a0, a1),
        SETPRIORITY => set_priority(strand, a0, a1, a2),
        GETCPU => get_cpu(a0, a1),
        IOPRIO_GET => io_priority_get(strand, a0, a1),
        IOPRIO_SET => io_priority_set(strand, a0, a1, a2),
        _ => return None,
    };
    Some(result.unwrap_or_else(|errno| errno.as_negative()))
}
