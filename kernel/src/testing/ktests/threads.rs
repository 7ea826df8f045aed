//! Timer, preemptive scheduling, sleep, mutex and condition variable.

use alloc::{sync::Arc, vec::Vec};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use sched::{
    sync::{Condvar, Mutex},
    ExitReason,
};

use super::{ensure, KernelTest, TestResult};

pub const TESTS: &[KernelTest] = &[
    KernelTest {
        name: "timer_ticks_advance",
        run: timer_ticks_advance,
    },
    KernelTest {
        name: "sleep_lasts_at_least_its_duration",
        run: sleep_lasts_at_least_its_duration,
    },
    KernelTest {
        name: "busy_threads_both_progress_under_preemption",
        run: busy_threads_both_progress,
    },
    KernelTest {
        name: "a_ranked_thread_runs_first_but_cannot_starve_the_rest",
        run: a_ranked_thread_runs_first_but_cannot_starve_the_rest,
    },
    KernelTest {
        name: "mutex_excludes_and_condvar_hands_off",
        run: mutex_and_condvar_handoff,
    },
    KernelTest {
        name: "thread_exit_frees_its_stack",
        run: thread_exit_frees_its_stack,
    },
    KernelTest {
        name: "irq_locks_released_out_of_order_keep_interrupts_off",
        run: irq_locks_released_out_of_order_keep_interrupts_off,
    },
    KernelTest {
        name: "threads_with_capturing_entries_leak_nothing",
        run: threads_with_capturing_entries_leak_nothing,
    },
];

fn timer_ticks_advance() -> TestResult {
    let before = hal::timer::ticks();
    let start = hal::timer::uptime_ns();
    while hal::timer::uptime_ns() - start < 30_000_000 {
        core::hint::spin_loop();
    }
    let after = hal::timer::ticks();
    ensure!(
        after > before + 5,
        "only {} ticks in 30 ms of busy time",
        after - before
    );
    Ok(())
}

fn sleep_lasts_at_least_its_duration() -> TestResult {
    let start = hal::timer::uptime_ns();
    sched::sleep_ms(20);
    let slept_ns = hal::timer::uptime_ns() - start;
    ensure!(slept_ns >= 19_000_000, "slept only {slept_ns} ns");
    Ok(())
}

fn busy_threads_both_progress() -> TestResult {
    // Two threads spin without ever yielding; only preemption lets both run.
    let stop = Arc::new(AtomicBool::new(false));
    let counters: Vec<Arc<AtomicU64>> = (0..2).map(|_| Arc::new(AtomicU64::new(0))).collect();
    let switches_before = sched::context_switches();
    let handles: Vec<_> = counters
        .iter()
        .map(|counter| {
            let (counter, stop) = (counter.clone(), stop.clone());
            sched::spawn("busy", move || {
                while !stop.load(Ordering::Relaxed) {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect::<Result<_, _>>()
        .map_err(|error| alloc::format!("{error:?}"))?;
    // Let them run for 100 ms (this thread sleeps, so it does not compete).
    sched::sleep_ms(100);
    stop.store(true, Ordering::Relaxed);
    for handle in handles {
        ensure!(
            handle.join() == ExitReason::Finished,
            "busy thread did not finish"
        );
    }
    let counts: Vec<u64> = counters.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    ensure!(
        counts.iter().all(|&count| count > 0),
        "a busy thread never ran: {counts:?}"
    );
    let switches = sched::context_switches() - switches_before;
    ensure!(switches >= 4, "only {switches} context switches in 100 ms");
    Ok(())
}

/// A thread of rank 5 with no time slice (Linux's `SCHED_FIFO`) that
/// spins without blocking keeps a rank-0 thread that is ready from running
/// (this thread's 50 ms sleep ends long after 50 ms), but only for its
/// share of the second: throttling lets this thread run again, stop it,
/// and see that the rank-0 spinner beside it ran too.
fn a_ranked_thread_runs_first_but_cannot_starve_the_rest() -> TestResult {
    let stop = Arc::new(AtomicBool::new(false));
    let counters: Vec<Arc<AtomicU64>> = (0..2).map(|_| Arc::new(AtomicU64::new(0))).collect();
    let spin = |counter: &Arc<AtomicU64>| {
        let (counter, stop) = (counter.clone(), stop.clone());
        sched::spawn("spinner", move || {
            while !stop.load(Ordering::Relaxed) {
                counter.fetch_add(1, Ordering::Relaxed);
            }
        })
        .map_err(|error| alloc::format!("{error:?}"))
    };
    let plain = spin(&counters[0])?;
    let ranked = spin(&counters[1])?;
    let first_in_line = sched::Scheduling {
        rank: 5,
        slice_ticks: None,
    };
    ensure!(
        sched::set_scheduling(ranked.id(), first_in_line),
        "the spinner vanished"
    );
    let start = hal::timer::uptime_ns();
    sched::sleep_ms(50);
    let held_back_ns = hal::timer::uptime_ns() - start;
    stop.store(true, Ordering::Relaxed);
    sched::set_scheduling(ranked.id(), sched::Scheduling::DEFAULT);
    for handle in [plain, ranked] {
        ensure!(
            handle.join() == ExitReason::Finished,
            "a spinner did not finish"
        );
    }
    let counts: Vec<u64> = counters.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    ensure!(
        counts.iter().all(|&count| count > 0),
        "a spinner never ran: {counts:?}"
    );
    // Waking 50 ms later would mean the ranked spinner did not come first.
    ensure!(
        held_back_ns >= 500_000_000,
        "a rank-0 thread woke after {held_back_ns} ns beside a ranked spinner"
    );
    Ok(())
}

fn mutex_and_condvar_handoff() -> TestResult {
    // A ping-pong: the consumer waits for each value the producer hands it
    // through a one-slot mailbox guarded by a mutex, with two conditions.
    const ROUNDS: u64 = 200;
    struct Mailbox {
        slot: Mutex<Option<u64>>,
        filled: Condvar,
        emptied: Condvar,
    }
    let mailbox = Arc::new(Mailbox {
        slot: Mutex::new(None),
        filled: Condvar::new(),
        emptied: Condvar::new(),
    });
    let sum = Arc::new(AtomicU64::new(0));
    let consumer = {
        let (mailbox, sum) = (mailbox.clone(), sum.clone());
        sched::spawn("consumer", move || {
            for _ in 0..ROUNDS {
                let mut slot = mailbox.slot.lock();
                while slot.is_none() {
                    slot = mailbox.filled.wait(slot);
                }
                sum.fetch_add(slot.take().unwrap_or(0), Ordering::Relaxed);
                mailbox.emptied.notify_one();
            }
        })
        .map_err(|error| alloc::format!("{error:?}"))?
    };
    for value in 1..=ROUNDS {
        let mut slot = mailbox.slot.lock();
        while slot.is_some() {
            slot = mailbox.emptied.wait(slot);
        }
        *slot = Some(value);
        mailbox.filled.notify_one();
    }
    ensure!(
        consumer.join() == ExitReason::Finished,
        "consumer did not finish"
    );
    let expected = ROUNDS * (ROUNDS + 1) / 2;
    ensure!(
        sum.load(Ordering::Relaxed) == expected,
        "sum {} != {expected}",
        sum.load(Ordering::Relaxed)
    );

    // Mutual exclusion under preemption: 4 threads increment a shared count
    // with a deliberately non-atomic read-modify-write inside the lock.
    let shared = Arc::new(Mutex::new(0u64));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let shared = shared.clone();
            sched::spawn("incrementer", move || {
                for _ in 0..2000 {
                    let mut value = shared.lock();
                    let read = *value;
                    core::hint::spin_loop();
                    *value = read + 1;
                }
            })
        })
        .collect::<Result<_, _>>()
        .map_err(|error| alloc::format!("{error:?}"))?;
    for handle in handles {
        handle.join();
    }
    ensure!(*shared.lock() == 8000, "lost updates: {}", *shared.lock());
    Ok(())
}

fn thread_exit_frees_its_stack() -> TestResult {
    // Warm up (first spawns grow the heap and stack-slot list).
    for _ in 0..4 {
        sched::spawn("warmup", || {})
            .map_err(|e| alloc::format!("{e:?}"))?
            .join();
    }
    let before = hal::memory::frame_stats().free;
    for _ in 0..50 {
        sched::spawn("short", || {})
            .map_err(|e| alloc::format!("{e:?}"))?
            .join();
    }
    // The last thread's stack is freed when the next thread runs.
    sched::yield_now();
    let after = hal::memory::frame_stats().free;
    ensure!(
        after + 32 >= before,
        "50 threads leaked {} frames",
        before.saturating_sub(after)
    );
    Ok(())
}

/// Interrupts stay off until the last interrupt-disabling lock is released,
/// whatever the order: take A, take B, release A, and B is still held with
/// interrupts off (a timer handler taking B would otherwise spin forever).
fn irq_locks_released_out_of_order_keep_interrupts_off() -> TestResult {
    ensure!(
        hal::cpu::are_interrupts_enabled(),
        "the test thread runs with interrupts off"
    );
    let first = hal::sync::IrqMutex::new(1u32);
    let second = hal::sync::IrqMutex::new(2u32);
    let a = first.lock();
    let b = second.lock();
    let held = hal::sync::locks_held();
    drop(a);
    let on_with_b_held = hal::cpu::are_interrupts_enabled();
    drop(b);
    let on_after_both = hal::cpu::are_interrupts_enabled();
    ensure!(held >= 2, "two locks held, but the CPU counts {held}");
    ensure!(
        !on_with_b_held,
        "releasing the first lock turned interrupts on while the second is held"
    );
    ensure!(
        on_after_both,
        "interrupts stayed off after both locks were released"
    );
    Ok(())
}

/// A thread's boxed entry is freed when the thread ends, whatever it
/// captured (it used to be freed only if it returned, and the scheduler's
/// wrapper never did: one leaked allocation per capturing thread).
fn threads_with_capturing_entries_leak_nothing() -> TestResult {
    let run_one = || -> TestResult {
        let captured = Arc::new(AtomicU64::new(0));
        let seen = captured.clone();
        let thread = sched::spawn("captures", move || {
            seen.fetch_add(1, Ordering::Relaxed);
        })
        .map_err(|_| alloc::string::String::from("cannot spawn"))?;
        let _ = thread.join();
        ensure!(
            captured.load(Ordering::Relaxed) == 1,
            "the thread did not run"
        );
        Ok(())
    };
    for _ in 0..5 {
        run_one()?;
    }
    let before = hal::heap::stats().allocated_bytes;
    for _ in 0..100 {
        run_one()?;
    }
    let after = hal::heap::stats().allocated_bytes;
    ensure!(
        after <= before + 256,
        "100 threads kept {} heap bytes",
        after as i64 - before as i64
    );
    Ok(())
}
