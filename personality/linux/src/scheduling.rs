//! Linux's scheduling policies, real-time priorities, `nice` values and
//! I/O priorities, as plain data: the argument checks of `sched_*`,
//! `getpriority`/`setpriority` and `ioprio_*`, and how a thread's Linux
//! settings map onto what the scheduler applies (a rank and a time slice,
//! `sched::Scheduling`). The calls themselves act on threads and live in
//! `personality/linux-process`.

use linux_abi::Errno;

/// A scheduling policy (`SCHED_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// `SCHED_OTHER` (0): time sharing, weighted by `nice`.
    Other,
    /// `SCHED_FIFO` (1): real time, runs until it blocks or yields.
    Fifo,
    /// `SCHED_RR` (2): real time, taking turns within its priority.
    RoundRobin,
    /// `SCHED_BATCH` (3): time sharing for work that does not interact.
    Batch,
    /// `SCHED_IDLE` (5): runs only when nothing else wants to.
    Idle,
}

/// `SCHED_DEADLINE` (6): known to `sched_get_priority_max`/`min` (no
/// priorities), not offered to `sched_setscheduler`.
pub const SCHED_DEADLINE: u64 = 6;
/// `SCHED_RESET_ON_FORK`, or-ed into a policy: children start as
/// `SCHED_OTHER` at nice 0.
pub const RESET_ON_FORK: u64 = 0x4000_0000;
/// The highest real-time priority (`MAX_RT_PRIO - 1`).
pub const MAX_REALTIME_PRIORITY: u8 = 99;
/// The lowest and highest `nice` values.
pub const NICE_RANGE: (i8, i8) = (-20, 19);

impl Policy {
    /// Its `SCHED_*` number.
    pub fn number(self) -> i64 {
        match self {
            Policy::Other => 0,
            Policy::Fifo => 1,
            Policy::RoundRobin => 2,
            Policy::Batch => 3,
            Policy::Idle => 5,
        }
    }

    /// Whether it is a real-time policy (priorities 1 to 99).
    pub fn is_realtime(self) -> bool {
        matches!(self, Policy::Fifo | Policy::RoundRobin)
    }

    /// The lowest and highest priority it takes
    /// (`sched_get_priority_min`/`max`).
    pub fn priority_range(self) -> (u8, u8) {
        if self.is_realtime() {
            (1, MAX_REALTIME_PRIORITY)
        } else {
            (0, 0)
        }
    }
}

/// Decodes a policy argument: the policy and whether
/// `SCHED_RESET_ON_FORK` was or-ed in; `EINVAL` for an unknown one
/// (`SCHED_DEADLINE` included: it needs `sched_setattr`'s parameters).
pub fn policy(value: u64) -> Result<(Policy, bool), Errno> {
    let reset = value & RESET_ON_FORK != 0;
    let policy = match (value & !RESET_ON_FORK) as i64 {
        0 => Policy::Other,
        1 => Policy::Fifo,
        2 => Policy::RoundRobin,
        3 => Policy::Batch,
        5 => Policy::Idle,
        _ => return Err(Errno::EINVAL),
    };
    Ok((policy, reset))
}

/// Checks `sched_priority` (an `int`) against `policy`'s range:
/// `EINVAL` outside it.
pub fn priority(policy: Policy, value: i32) -> Result<u8, Errno> {
    let (low, high) = policy.priority_range();
    u8::try_from(value)
        .ok()
        .filter(|value| (low..=high).contains(value))
        .ok_or(Errno::EINVAL)
}

/// A `nice` value asked for (`setpriority`'s `int`), brought into
/// [`NICE_RANGE`] as Linux does rather than refused.
pub fn clamp_nice(value: u64) -> i8 {
    (value as i32).clamp(i32::from(NICE_RANGE.0), i32::from(NICE_RANGE.1)) as i8
}

/// What `getpriority` returns for `nice` (`20 - nice`, 1 to 40, so that
/// no answer looks like an error; the C library turns it back).
pub fn priority_of_nice(nice: i8) -> i64 {
    20 - i64::from(nice)
}

/// Whom `getpriority`/`setpriority` name (`PRIO_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PriorityTarget {
    /// `PRIO_PROCESS`: a thread (0: the caller).
    Process(u64),
    /// `PRIO_PGRP`: a process group (0: the caller's).
    Group(u64),
    /// `PRIO_USER`: every process of a user (0: the caller's real user).
    User(u32),
}

/// Decodes `(which, who)`: `EINVAL` for an unknown `which`; `who` is an
/// `int`, and a negative one names nobody (`ESRCH`).
pub fn priority_target(which: u64, who: u64) -> Result<PriorityTarget, Errno> {
    let who = who as i32;
    let target = match which as i32 {
        0 => PriorityTarget::Process,
        1 => PriorityTarget::Group,
        2 => return Ok(PriorityTarget::User(who as u32)),
        _ => return Err(Errno::EINVAL),
    };
    if who < 0 {
        return Err(Errno::ESRCH);
    }
    Ok(target(who as u64))
}

/// A thread's scheduling as Linux describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadScheduling {
    /// Its policy.
    pub policy: Policy,
    /// Its real-time priority (0 unless the policy is real time).
    pub priority: u8,
    /// Its `nice` value (used by the time-sharing policies).
    pub nice: i8,
    /// Whether its children start at the defaults.
    pub reset_on_fork: bool,
}

impl Default for ThreadScheduling {
    /// `SCHED_OTHER` at nice 0.
    fn default() -> Self {
        ThreadScheduling {
            policy: Policy::Other,
            priority: 0,
            nice: 0,
            reset_on_fork: false,
        }
    }
}

/// Linux's CFS weights by `nice` (`sched_prio_to_weight`): each step is
/// about 25% more or less processor time.
const NICE_WEIGHTS: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];
/// The weight of nice 0.
const NICE_0_WEIGHT: u32 = 1024;
/// The longest slice a high priority earns, in ticks: long enough for a
/// nice -20 thread to get about ten times the turns of a nice 0 one
/// without making everyone else wait for seconds.
const LONGEST_SLICE_TICKS: u32 = 100;

impl ThreadScheduling {
    /// The settings a child gets: the parent's, or the defaults if the
    /// parent asked for `SCHED_RESET_ON_FORK` (which also takes back a
    /// negative nice, as on Linux).
    pub fn for_child(&self) -> ThreadScheduling {
        if self.reset_on_fork {
            ThreadScheduling {
                nice: self.nice.max(0),
                ..ThreadScheduling::default()
            }
        } else {
            *self
        }
    }

    /// What the scheduler applies: a rank (the real-time priority; 0
    /// for time sharing) and a slice in ticks of `base_slice_ticks`
    /// scaled by the nice value's weight (`None` for `SCHED_FIFO`, which
    /// runs until it blocks; one tick for `SCHED_IDLE`).
    pub fn treatment(&self, base_slice_ticks: u32) -> (u8, Option<u32>) {
        match self.policy {
            Policy::Fifo => (self.priority, None),
            Policy::RoundRobin => (self.priority, Some(base_slice_ticks)),
            Policy::Idle => (0, Some(1)),
            Policy::Other | Policy::Batch => {
                let weight = NICE_WEIGHTS[(i32::from(self.nice) + 20) as usize];
                let ticks =
                    u64::from(base_slice_ticks) * u64::from(weight) / u64::from(NICE_0_WEIGHT);
                (0, Some((ticks as u32).clamp(1, LONGEST_SLICE_TICKS)))
            }
        }
    }
}

/// An I/O priority's class (`ioprio >> 13`).
const IOPRIO_CLASS_SHIFT: u32 = 13;
/// The real-time I/O class, which needs `CAP_SYS_ADMIN`.
pub const IOPRIO_CLASS_REALTIME: u16 = 1;
/// What a process has until it sets one: best effort, level 4 (Linux's
/// `IOPRIO_DEFAULT`).
pub const IOPRIO_DEFAULT: u16 = (2 << IOPRIO_CLASS_SHIFT) | 4;

/// Checks an I/O priority (`ioprio_set`): a class of none (0), real
/// time, best effort or idle, a level 0 to 7 (only 0 for none and
/// idle); `EINVAL` otherwise. Returns it and its class.
pub fn io_priority(value: u64) -> Result<(u16, u16), Errno> {
    let value = u16::try_from(value as u32).map_err(|_| Errno::EINVAL)?;
    let class = value >> IOPRIO_CLASS_SHIFT;
    let level = value & ((1 << IOPRIO_CLASS_SHIFT) - 1);
    match class {
        0 if level == 0 => {}
        1 | 2 if level < 8 => {}
        3 => {}
        _ => return Err(Errno::EINVAL),
    }
    Ok((value, class))
}

/// Whom `ioprio_get`/`ioprio_set` name (`IOPRIO_WHO_*`): process (1),
/// process group (2) or user (3), with `who` 0 meaning the caller's;
/// `EINVAL` for another `which`, `ESRCH` for a negative process or group.
pub fn io_priority_target(which: u64, who: u64) -> Result<PriorityTarget, Errno> {
    match which as i32 {
        1 => priority_target(0, who),
        2 => priority_target(1, who),
        3 => priority_target(2, who),
        _ => Err(Errno::EINVAL),
    }
}
