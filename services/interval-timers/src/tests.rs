//! The timers on made-up clocks, with a host that records the expiries
//! it is asked to send.

use std::{
    collections::BTreeMap,
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Mutex,
    },
    vec,
    vec::Vec,
};

use super::*;

const MS: u64 = 1_000_000;
const SECOND: u64 = 1_000_000_000;
/// The fake wall clock's time at boot.
const EPOCH_OFFSET_NS: u64 = 1_000_000 * SECOND;
/// The signal the tests' interval timers send (any number will do).
const ALARM: Notice = Notice {
    signal: 14,
    thread: None,
    value: 0,
};

/// Clocks the test moves, and the expiries sent.
#[derive(Default)]
struct FakeHost {
    now: AtomicU64,
    /// Processor time by (process, clock): `ThreadCpu` keyed by its id,
    /// `ProcessCpu` by `u64::MAX`.
    cpu: Mutex<BTreeMap<(u64, u64), u64>>,
    sent: Mutex<Vec<Expiry>>,
    /// Processes that no longer exist: sending to them fails.
    gone: Mutex<Vec<u64>>,
    wakes: AtomicUsize,
}

fn cpu_key(pid: u64, clock: TimerClock) -> (u64, u64) {
    match clock {
        TimerClock::ThreadCpu(tid) => (pid, tid),
        _ => (pid, u64::MAX),
    }
}

impl Host for FakeHost {
    fn now_ns(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }

    fn epoch_offset_ns(&self) -> u64 {
        EPOCH_OFFSET_NS
    }

    fn cpu_ns(&self, pid: u64, clock: TimerClock) -> Option<u64> {
        Some(
            *self
                .cpu
                .lock()
                .unwrap()
                .get(&cpu_key(pid, clock))
                .unwrap_or(&0),
        )
    }

    fn notify(&self, expiry: &Expiry) -> bool {
        if self.gone.lock().unwrap().contains(&expiry.pid) {
            return false;
        }
        self.sent.lock().unwrap().push(*expiry);
        true
    }

    fn sleep_keeper(&self, _until: Option<u64>, _rearmed: &dyn Fn() -> bool) {
        unreachable!("the tests run the keeper's rounds, not its loop");
    }

    fn wake_keeper(&self) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }
}

type Timers = IntervalTimers<FakeHost>;

fn timers_at(now: u64) -> Timers {
    let timers = IntervalTimers::new(FakeHost::default());
    timers.host.now.store(now, Ordering::SeqCst);
    timers
}

fn advance_to(timers: &Timers, now: u64) {
    timers.host.now.store(now, Ordering::SeqCst);
}

fn run_cpu(timers: &Timers, pid: u64, clock: TimerClock, ns: u64) {
    timers
        .host
        .cpu
        .lock()
        .unwrap()
        .insert(cpu_key(pid, clock), ns);
}

/// The processes the expiries since the last look went to.
fn sent(timers: &Timers) -> Vec<u64> {
    sent_expiries(timers)
        .iter()
        .map(|expiry| expiry.pid)
        .collect()
}

fn sent_expiries(timers: &Timers) -> Vec<Expiry> {
    core::mem::take(&mut *timers.host.sent.lock().unwrap())
}

/// `setitimer(ITIMER_REAL)` on the fake.
fn set(timers: &Timers, pid: u64, value_ns: u64, interval_ns: u64) -> Setting {
    timers.set_interval(
        pid,
        Slot::Real,
        TimerClock::Uptime,
        ALARM,
        value_ns,
        interval_ns,
    )
}

/// `getitimer(ITIMER_REAL)` on the fake.
fn get(timers: &Timers, pid: u64) -> Setting {
    timers.get_interval(pid, Slot::Real)
}

#[test]
fn a_zero_value_disarms_whatever_the_interval() {
    assert_eq!(Timer::starting(5, 0, 10 * MS), None);
    assert_eq!(
        Timer::starting(5, 3, 10 * MS),
        Some(Timer {
            deadline_ns: 8,
            interval_ns: 10 * MS
        })
    );
}

#[test]
fn a_timer_reads_as_the_time_left_and_a_due_one_as_one_nanosecond() {
    let timer = Timer {
        deadline_ns: 100 * MS,
        interval_ns: 7 * MS,
    };
    assert_eq!(
        timer.setting_at(40 * MS),
        Setting {
            value_ns: 60 * MS,
            interval_ns: 7 * MS
        }
    );
    assert_eq!(timer.setting_at(100 * MS).value_ns, 1);
    assert_eq!(timer.setting_at(500 * MS).value_ns, 1);
}

#[test]
fn a_due_interval_timer_reads_as_one_microsecond() {
    let timers = timers_at(0);
    set(&timers, 1, 10 * MS, 0);
    // The keeper has not run yet.
    advance_to(&timers, 20 * MS);
    assert_eq!(get(&timers, 1).value_ns, 1_000);
}

#[test]
fn alarm_returns_the_seconds_left_rounded_up_and_never_zero_while_armed() {
    assert_eq!(Setting::default().seconds_left(), 0);
    let left = |value_ns| {
        Setting {
            value_ns,
            interval_ns: 0,
        }
        .seconds_left()
    };
    assert_eq!(left(1_000), 1);
    assert_eq!(left(SECOND), 1);
    assert_eq!(left(SECOND + 1), 2);
    assert_eq!(left(3 * SECOND), 3);
}

#[test]
fn setitimer_arms_from_now_and_getitimer_counts_down() {
    let timers = timers_at(10 * SECOND);
    assert_eq!(set(&timers, 7, 2 * SECOND, 500 * MS), Setting::default());
    advance_to(&timers, 10 * SECOND + 500 * MS);
    assert_eq!(
        get(&timers, 7),
        Setting {
            value_ns: 1_500 * MS,
            interval_ns: 500 * MS
        }
    );
    assert_eq!(
        get(&timers, 8),
        Setting::default(),
        "another process has none"
    );
}

#[test]
fn setting_a_timer_returns_the_previous_one_and_wakes_the_keeper() {
    let timers = timers_at(0);
    set(&timers, 7, 5 * SECOND, 0);
    assert_eq!(timers.host.wakes.load(Ordering::SeqCst), 1);
    advance_to(&timers, SECOND);
    let previous = set(&timers, 7, 0, 0);
    assert_eq!(previous.value_ns, 4 * SECOND);
    assert_eq!(
        get(&timers, 7),
        Setting::default(),
        "a zero value disarmed it"
    );
    assert_eq!(timers.host.wakes.load(Ordering::SeqCst), 2);
}

#[test]
fn alarm_replaces_the_previous_alarm_and_zero_cancels() {
    let timers = timers_at(0);
    assert_eq!(timers.alarm(3, 10, ALARM), 0);
    advance_to(&timers, 2 * SECOND + 1);
    // 8 s less 1 ns left: rounded up.
    assert_eq!(timers.alarm(3, 0, ALARM), 8);
    assert_eq!(get(&timers, 3), Setting::default());
    assert_eq!(timers.alarm(3, 0, ALARM), 0);
}

#[test]
fn a_one_shot_timer_fires_once_and_is_gone() {
    let timers = timers_at(0);
    set(&timers, 4, 10 * MS, 0);
    let (next, _) = timers.expire_due();
    assert_eq!(
        next,
        Some(10 * MS),
        "not due yet: the keeper sleeps until then"
    );
    assert!(sent(&timers).is_empty());
    advance_to(&timers, 10 * MS);
    let (next, _) = timers.expire_due();
    assert_eq!(sent(&timers), vec![4]);
    assert_eq!(
        next, None,
        "nothing left armed: the keeper sleeps without a deadline"
    );
    assert_eq!(get(&timers, 4), Setting::default());
}

#[test]
fn a_periodic_timer_keeps_its_phase_and_counts_missed_periods_as_overruns() {
    let timers = timers_at(0);
    set(&timers, 4, 10 * MS, 10 * MS);
    // The keeper runs late, 35 ms in: three periods went by.
    advance_to(&timers, 35 * MS);
    let (next, _) = timers.expire_due();
    let expiries = sent_expiries(&timers);
    assert_eq!(expiries.len(), 1, "one signal, not three");
    assert_eq!(expiries[0].overrun, 2);
    assert_eq!(next, Some(40 * MS), "in phase with the first deadline");
    assert_eq!(get(&timers, 4).value_ns, 5 * MS);
    advance_to(&timers, 40 * MS);
    timers.expire_due();
    assert_eq!(sent_expiries(&timers)[0].overrun, 0);
}

#[test]
fn due_timers_fire_earliest_deadline_first_and_the_next_deadline_is_the_earliest_left() {
    let timers = timers_at(0);
    set(&timers, 1, 30 * MS, 0);
    set(&timers, 2, 10 * MS, 0);
    set(&timers, 3, 20 * MS, 0);
    set(&timers, 4, 50 * MS, 0);
    set(&timers, 5, 20 * MS, 100 * MS);
    advance_to(&timers, 30 * MS);
    let (next, _) = timers.expire_due();
    // Deadlines 10, 20, 20, 30 ms; the tie goes to the lower pid.
    assert_eq!(sent(&timers), vec![2, 3, 5, 1]);
    assert_eq!(next, Some(50 * MS), "4's, before 5's re-armed 130 ms");
}

#[test]
fn a_timer_of_a_process_that_is_gone_is_disarmed_when_it_fires() {
    let timers = timers_at(0);
    set(&timers, 9, 10 * MS, 10 * MS);
    timers.host.gone.lock().unwrap().push(9);
    advance_to(&timers, 10 * MS);
    timers.expire_due();
    assert!(sent(&timers).is_empty());
    assert_eq!(
        get(&timers, 9),
        Setting::default(),
        "not re-armed for nobody"
    );
}

#[test]
fn a_process_that_ends_loses_its_timer_and_only_its_own() {
    let timers = timers_at(0);
    set(&timers, 1, SECOND, 0);
    set(&timers, 2, SECOND, 0);
    timers.process_ended(1);
    assert_eq!(get(&timers, 1), Setting::default());
    assert_eq!(get(&timers, 2).value_ns, SECOND);
    let wakes = timers.host.wakes.load(Ordering::SeqCst);
    timers.process_ended(3);
    assert_eq!(
        timers.host.wakes.load(Ordering::SeqCst),
        wakes,
        "a process without a timer costs the keeper nothing"
    );
}

#[test]
fn the_keeper_sleeps_only_while_no_timer_was_set_since_it_looked() {
    let timers = timers_at(0);
    let (_, sets) = timers.expire_due();
    assert!(!timers.set_since(sets));
    // Armed between the keeper's look and its sleep: it must not sleep.
    set(&timers, 1, SECOND, 0);
    assert!(timers.set_since(sets));
    let (_, sets) = timers.expire_due();
    assert!(!timers.set_since(sets));
    set(&timers, 1, 0, 0);
    assert!(timers.set_since(sets), "disarming counts too");
}

#[test]
fn disarming_or_expiring_the_last_timer_leaves_it_disarmed_and_removing_it_empties_the_table() {
    let timers = timers_at(0);
    let id = timers.create(1, TimerClock::Uptime, |_| ALARM).unwrap();
    timers.arm(1, Slot::Posix(id), 1, 0, false);
    advance_to(&timers, 1);
    assert_eq!(timers.expire_due().0, None);
    assert_eq!(sent(&timers), vec![1]);
    assert_eq!(timers.get(1, Slot::Posix(id)), Some(Setting::default()));
    assert!(timers.delete(1, id));
    assert!(timers.state.lock().table.is_empty());
}

#[test]
fn posix_timers_get_the_lowest_free_id_of_their_process_and_unknown_ids_are_refused() {
    let timers = timers_at(0);
    assert_eq!(timers.create(1, TimerClock::Uptime, |_| ALARM), Ok(0));
    assert_eq!(timers.create(1, TimerClock::Uptime, |_| ALARM), Ok(1));
    assert_eq!(
        timers.create(2, TimerClock::Uptime, |_| ALARM),
        Ok(0),
        "ids are per process"
    );
    assert!(timers.delete(1, 0));
    assert!(!timers.delete(1, 0), "deleted already");
    assert_eq!(
        timers.create(1, TimerClock::Uptime, |_| ALARM),
        Ok(0),
        "the freed id again"
    );
    assert_eq!(timers.create(1, TimerClock::Uptime, |_| ALARM), Ok(2));
    assert_eq!(timers.arm(1, Slot::Posix(9), SECOND, 0, false), None);
    assert_eq!(timers.get(1, Slot::Posix(9)), None);
    assert_eq!(timers.overrun(1, 9), None);
    assert_eq!(
        timers.get(3, Slot::Posix(0)),
        None,
        "another process has none"
    );
}

#[test]
fn an_absolute_setting_expires_when_the_clock_reads_it_and_a_past_one_at_once() {
    let timers = timers_at(10 * SECOND);
    let id = timers.create(5, TimerClock::Uptime, |_| ALARM).unwrap();
    let slot = Slot::Posix(id);
    timers.arm(5, slot, 12 * SECOND, 0, true);
    assert_eq!(timers.get(5, slot).unwrap().value_ns, 2 * SECOND);
    timers.arm(5, slot, SECOND, 0, true);
    assert_eq!(timers.expire_due().0, None);
    assert_eq!(sent(&timers), vec![5]);
}

#[test]
fn processor_time_timers_expire_on_the_accounting_of_their_own_process_only() {
    let timers = timers_at(0);
    let virtual_alarm = Notice {
        signal: 26,
        ..ALARM
    };
    timers.set_interval(
        7,
        Slot::Virtual,
        TimerClock::ProcessCpu,
        virtual_alarm,
        50 * MS,
        0,
    );
    let thread_clock = TimerClock::ThreadCpu(8);
    let id = timers.create(7, thread_clock, |_| ALARM).unwrap();
    timers.arm(7, Slot::Posix(id), 30 * MS, 0, false);
    // Elapsed time does not count.
    advance_to(&timers, SECOND);
    assert_eq!(
        timers.expire_due().0,
        None,
        "the keeper has nothing to wait for"
    );
    timers.account(7);
    assert!(sent(&timers).is_empty());
    run_cpu(&timers, 7, TimerClock::ProcessCpu, 40 * MS);
    run_cpu(&timers, 7, thread_clock, 30 * MS);
    timers.account(6);
    assert!(
        sent(&timers).is_empty(),
        "another process's return to user mode"
    );
    timers.account(7);
    assert_eq!(sent_expiries(&timers)[0].slot, Slot::Posix(id));
    assert_eq!(timers.get_interval(7, Slot::Virtual).value_ns, 10 * MS);
    run_cpu(&timers, 7, TimerClock::ProcessCpu, 50 * MS);
    timers.account(7);
    assert_eq!(sent_expiries(&timers)[0].notice.signal, 26);
    assert!(
        !timers.has_cpu_timers.load(Ordering::SeqCst),
        "nothing armed: one load again"
    );
}

#[test]
fn a_new_program_loses_its_posix_timers_and_keeps_its_interval_timers() {
    let timers = timers_at(0);
    set(&timers, 1, SECOND, 0);
    let id = timers.create(1, TimerClock::Uptime, |_| ALARM).unwrap();
    timers.program_replaced(1);
    assert_eq!(timers.get(1, Slot::Posix(id)), None);
    assert_eq!(get(&timers, 1).value_ns, SECOND);
}

#[test]
fn an_absolute_wall_clock_setting_falls_at_its_uptime_and_one_before_boot_is_past() {
    let timers = timers_at(10 * SECOND);
    let id = timers
        .create(5, TimerClock::Wall, |id| Notice {
            value: u64::from(id),
            ..ALARM
        })
        .unwrap();
    let slot = Slot::Posix(id);
    timers.arm(5, slot, EPOCH_OFFSET_NS + 12 * SECOND, 0, true);
    assert_eq!(timers.get(5, slot).unwrap().value_ns, 2 * SECOND);
    assert_eq!(
        timers.expire_due().0,
        Some(12 * SECOND),
        "the keeper's deadline is an uptime"
    );
    timers.arm(5, slot, SECOND, 0, true);
    timers.expire_due();
    let expiries = sent_expiries(&timers);
    assert_eq!(expiries.len(), 1);
    assert_eq!(
        expiries[0].notice.value,
        u64::from(id),
        "the notice made for its id"
    );
}
