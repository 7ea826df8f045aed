//! The timers on a made-up clock, with a host that records the alarms
//! it is asked to send.

use std::{
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

/// A clock the test moves, and the alarms sent.
#[derive(Default)]
struct FakeHost {
    now: AtomicU64,
    sent: Mutex<Vec<u64>>,
    /// Processes that no longer exist: sending to them fails.
    gone: Mutex<Vec<u64>>,
    wakes: AtomicUsize,
}

impl Host for FakeHost {
    fn now_ns(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }

    fn send_alarm(&self, pid: u64) -> bool {
        if self.gone.lock().unwrap().contains(&pid) {
            return false;
        }
        self.sent.lock().unwrap().push(pid);
        true
    }

    fn sleep_keeper(&self, _until: Option<u64>, _rearmed: &dyn Fn() -> bool) {
        unreachable!("the tests run the keeper's rounds, not its loop");
    }

    fn wake_keeper(&self) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }
}

fn timers_at(now: u64) -> IntervalTimers<FakeHost> {
    let timers = IntervalTimers::new(FakeHost::default());
    timers.host.now.store(now, Ordering::SeqCst);
    timers
}

fn advance_to(timers: &IntervalTimers<FakeHost>, now: u64) {
    timers.host.now.store(now, Ordering::SeqCst);
}

fn sent(timers: &IntervalTimers<FakeHost>) -> Vec<u64> {
    core::mem::take(&mut *timers.host.sent.lock().unwrap())
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
fn a_timer_reads_as_the_time_left_and_a_due_one_as_one_microsecond() {
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
    assert_eq!(timer.setting_at(100 * MS).value_ns, 1_000);
    assert_eq!(timer.setting_at(500 * MS).value_ns, 1_000);
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
    assert_eq!(timers.set(7, 2 * SECOND, 500 * MS), Setting::default());
    advance_to(&timers, 10 * SECOND + 500 * MS);
    assert_eq!(
        timers.get(7),
        Setting {
            value_ns: 1_500 * MS,
            interval_ns: 500 * MS
        }
    );
    assert_eq!(
        timers.get(8),
        Setting::default(),
        "another process has none"
    );
}

#[test]
fn setting_a_timer_returns_the_previous_one_and_wakes_the_keeper() {
    let timers = timers_at(0);
    timers.set(7, 5 * SECOND, 0);
    assert_eq!(timers.host.wakes.load(Ordering::SeqCst), 1);
    advance_to(&timers, SECOND);
    let previous = timers.set(7, 0, 0);
    assert_eq!(previous.value_ns, 4 * SECOND);
    assert_eq!(
        timers.get(7),
        Setting::default(),
        "a zero value disarmed it"
    );
    assert_eq!(timers.host.wakes.load(Ordering::SeqCst), 2);
}

#[test]
fn alarm_replaces_the_previous_alarm_and_zero_cancels() {
    let timers = timers_at(0);
    assert_eq!(timers.alarm(3, 10), 0);
    advance_to(&timers, 2 * SECOND + 1);
    // 8 s less 1 ns left: rounded up.
    assert_eq!(timers.alarm(3, 0), 8);
    assert_eq!(timers.get(3), Setting::default());
    assert_eq!(timers.alarm(3, 0), 0);
}

#[test]
fn a_one_shot_timer_fires_once_and_is_gone() {
    let timers = timers_at(0);
    timers.set(4, 10 * MS, 0);
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
    assert_eq!(timers.get(4), Setting::default());
}

#[test]
fn a_periodic_timer_is_rearmed_from_when_it_expired_without_making_up_missed_periods() {
    let timers = timers_at(0);
    timers.set(4, 10 * MS, 10 * MS);
    // The keeper runs late, 35 ms in: three periods were missed.
    advance_to(&timers, 35 * MS);
    let (next, _) = timers.expire_due();
    assert_eq!(sent(&timers), vec![4], "one signal, not three");
    assert_eq!(next, Some(45 * MS));
    assert_eq!(timers.get(4).value_ns, 10 * MS);
    advance_to(&timers, 45 * MS);
    timers.expire_due();
    assert_eq!(sent(&timers), vec![4]);
}

#[test]
fn due_timers_fire_earliest_deadline_first_and_the_next_deadline_is_the_earliest_left() {
    let timers = timers_at(0);
    timers.set(1, 30 * MS, 0);
    timers.set(2, 10 * MS, 0);
    timers.set(3, 20 * MS, 0);
    timers.set(4, 50 * MS, 0);
    timers.set(5, 20 * MS, 100 * MS);
    advance_to(&timers, 30 * MS);
    let (next, _) = timers.expire_due();
    // Deadlines 10, 20, 20, 30 ms; the tie goes to the lower pid.
    assert_eq!(sent(&timers), vec![2, 3, 5, 1]);
    assert_eq!(next, Some(50 * MS), "4's, before 5's re-armed 130 ms");
}

#[test]
fn a_timer_of_a_process_that_is_gone_is_disarmed_when_it_fires() {
    let timers = timers_at(0);
    timers.set(9, 10 * MS, 10 * MS);
    timers.host.gone.lock().unwrap().push(9);
    advance_to(&timers, 10 * MS);
    timers.expire_due();
    assert!(sent(&timers).is_empty());
    assert_eq!(timers.get(9), Setting::default(), "not re-armed for nobody");
}

#[test]
fn a_process_that_ends_loses_its_timer_and_only_its_own() {
    let timers = timers_at(0);
    timers.set(1, SECOND, 0);
    timers.set(2, SECOND, 0);
    timers.process_ended(1);
    assert_eq!(timers.get(1), Setting::default());
    assert_eq!(timers.get(2).value_ns, SECOND);
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
    timers.set(1, SECOND, 0);
    assert!(timers.set_since(sets));
    let (_, sets) = timers.expire_due();
    assert!(!timers.set_since(sets));
    timers.set(1, 0, 0);
    assert!(timers.set_since(sets), "disarming counts too");
}

#[test]
fn disarming_or_expiring_the_last_timer_empties_the_table() {
    let mut table = Table::new();
    table.set(1, Timer::starting(0, 1, 0));
    table.set(1, None);
    assert!(table.is_empty());
    let mut due = Vec::new();
    table.set(2, Timer::starting(0, 1, 0));
    assert_eq!(table.expire(1, &mut due), None);
    assert_eq!(due, vec![2]);
    assert!(table.is_empty());
}
