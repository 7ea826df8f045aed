//! Application-specific scheduling on the `Strand` events.

use alloc::{collections::VecDeque, format, string::String, sync::Arc, vec::Vec};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use dispatch::{BindingId, Install, Principal};
use sched::sync::{Condvar, Mutex};

use strands::{Group, StrandArgs};

use super::{ensure, KernelTest, TestResult};

pub const TESTS: &[KernelTest] = &[
    KernelTest {
        name: "an_application_scheduler_runs_its_strands_in_its_order_and_no_others",
        run: an_application_scheduler_runs_its_strands_in_its_order,
    },
    KernelTest {
        name: "a_strand_blocked_on_a_condvar_raises_block_and_its_group_runs_another",
        run: a_strand_blocked_on_a_condvar_gives_its_group_to_another,
    },
    KernelTest {
        name: "a_sleeping_strand_raises_block_and_unblock_and_waits_for_its_turn",
        run: a_sleeping_strand_waits_for_its_turn,
    },
    KernelTest {
        name: "an_ungrouped_thread_blocks_and_wakes_without_strand_events",
        run: an_ungrouped_thread_blocks_without_strand_events,
    },
];

/// Spawns strands with `priorities` in `group`; each appends its priority
/// to `log` three times, yielding after each.
fn spawn_workers(
    group: &Group,
    priorities: &[u64],
    log: &Arc<spin::Mutex<Vec<u64>>>,
) -> Result<Vec<sched::JoinHandle>, String> {
    let mut handles = Vec::new();
    for &priority in priorities {
        let log = log.clone();
        let handle = group
            .spawn("worker", priority, move || {
                for _ in 0..3 {
                    log.lock().push(priority);
                    strands::yield_now();
                }
            })
            .map_err(|_| String::from("no memory for a strand"))?;
        handles.push(handle);
    }
    Ok(handles)
}

/// Group A is scheduled by the `priority-scheduler` Wasm extension: its
/// strands run highest priority first, each to its end although it
/// yields. Group B, beside it, has no scheduler of its own (the kernel's
/// fallback runs the oldest strand first) and the extension never sees
/// its events. An ordinary kernel thread runs on throughout.
fn an_application_scheduler_runs_its_strands_in_its_order() -> TestResult {
    let extensions = crate::extensions::get().ok_or("no extensions")?;
    let (a, b) = (Group::new()?, Group::new()?);
    let scheduler = extensions.load_scheduler("priority-scheduler", a.id())?;
    let (log_a, log_b) = (
        Arc::new(spin::Mutex::new(Vec::new())),
        Arc::new(spin::Mutex::new(Vec::new())),
    );
    let done = Arc::new(AtomicBool::new(false));
    let outside_rounds = Arc::new(AtomicU64::new(0));
    let outside = {
        let (done, rounds) = (done.clone(), outside_rounds.clone());
        sched::spawn("outside", move || {
            while !done.load(Ordering::Relaxed) {
                rounds.fetch_add(1, Ordering::Relaxed);
                sched::yield_now();
            }
        })
        .map_err(|_| "no memory for a thread")?
    };
    let result = (|| -> TestResult {
        let mut handles = spawn_workers(&a, &[2, 4, 1, 3], &log_a)?;
        handles.extend(spawn_workers(&b, &[5, 6], &log_b)?);
        let rounds_before = outside_rounds.load(Ordering::Relaxed);
        a.start();
        b.start();
        for handle in handles {
            handle.join();
        }
        let rounds = outside_rounds.load(Ordering::Relaxed) - rounds_before;
        ensure!(
            rounds > 0,
            "the ordinary thread did not run while the groups ran"
        );
        Ok(())
    })();
    done.store(true, Ordering::Relaxed);
    outside.join();
    let choices = match scheduler.call("choices", &[]) {
        Ok(Some(wasm_runtime::WasmValue::I64(count))) => Ok(count),
        _ => Err(String::from("the scheduler's choices export gave no count")),
    };
    let _ = extensions.unload_scheduler(&scheduler);
    result?;
    let log_a = log_a.lock().clone();
    let log_b = log_b.lock().clone();
    ensure!(
        log_a == [4, 4, 4, 3, 3, 3, 2, 2, 2, 1, 1, 1],
        "group A ran in the order {log_a:?}, not highest priority first"
    );
    ensure!(
        log_b == [5, 5, 5, 6, 6, 6],
        "group B ran in the order {log_b:?}, not oldest first"
    );
    // Group A alone: the start, 3 yields and the end of each of 4 strands.
    let choices = choices?;
    ensure!(
        choices == 17,
        "the scheduler was asked {choices} times, expected group A's 17 (it saw another group's strands?)"
    );
    Ok(())
}

/// One recorded strand event: its kind (`U`nblock, `B`lock, `C`heckpoint,
/// `R`esume), its strand, and Checkpoint's answer.
type Record = (char, u64, u64);

/// A round-robin scheduler installed by the kernel on one group's events
/// (or on every group's, `group` 0), recording each event it sees.
struct Recorder {
    /// Runnable strands, next first.
    queue: spin::Mutex<VecDeque<u64>>,
    log: spin::Mutex<Vec<Record>>,
}

/// The recorder's four bindings, removed by [`uninstall`].
struct Bindings {
    unblock: BindingId,
    block: BindingId,
    checkpoint: BindingId,
    resume: BindingId,
}

fn install(group: u64) -> Result<(Arc<Recorder>, Bindings), String> {
    let events = strands::events().ok_or("no strand events")?;
    let recorder = Arc::new(Recorder {
        queue: spin::Mutex::new(VecDeque::new()),
        log: spin::Mutex::new(Vec::new()),
    });
    let mine = move |args: &StrandArgs| group == 0 || args.1 == group;
    let error = |error: dispatch::Error| format!("install: {error}");
    let unblock = {
        let recorder = recorder.clone();
        events
            .unblock
            .install(
                Principal::KERNEL,
                Install::guarded(mine, move |&(strand, _, _): &StrandArgs| {
                    recorder.log.lock().push(('U', strand, 0));
                    recorder.queue.lock().push_back(strand);
                }),
            )
            .map_err(error)?
    };
    let block = {
        let recorder = recorder.clone();
        events
            .block
            .install(
                Principal::KERNEL,
                Install::guarded(mine, move |&(strand, _, _): &StrandArgs| {
                    recorder.log.lock().push(('B', strand, 0));
                    recorder.queue.lock().retain(|&queued| queued != strand);
                }),
            )
            .map_err(error)?
    };
    let checkpoint = {
        let recorder = recorder.clone();
        events
            .checkpoint
            .install(
                Principal::KERNEL,
                Install::guarded(mine, move |&(leaving, _, _): &StrandArgs| {
                    // Round robin: a strand that yields goes to the back.
                    let mut queue = recorder.queue.lock();
                    if let Some(at) = queue.iter().position(|&queued| queued == leaving) {
                        queue.remove(at);
                        queue.push_back(leaving);
                    }
                    let next = queue.front().copied().unwrap_or(0);
                    drop(queue);
                    recorder.log.lock().push(('C', leaving, next));
                    next
                }),
            )
            .map_err(error)?
    };
    let resume = {
        let recorder = recorder.clone();
        events
            .resume
            .install(
                Principal::KERNEL,
                Install::guarded(mine, move |&(strand, _, _): &StrandArgs| {
                    recorder.log.lock().push(('R', strand, 0));
                }),
            )
            .map_err(error)?
    };
    Ok((
        recorder,
        Bindings {
            unblock,
            block,
            checkpoint,
            resume,
        },
    ))
}

fn uninstall(bindings: Bindings) {
    if let Some(events) = strands::events() {
        let _ = events.unblock.remove(Principal::KERNEL, bindings.unblock);
        let _ = events.block.remove(Principal::KERNEL, bindings.block);
        let _ = events
            .checkpoint
            .remove(Principal::KERNEL, bindings.checkpoint);
        let _ = events.resume.remove(Principal::KERNEL, bindings.resume);
    }
}

/// The recorded events as text, strands named by `names` (`?` for any
/// other): `UA UB C0A RA ...`, Checkpoint as leaving then answer.
fn render(log: &[Record], names: &[(u64, char)]) -> String {
    let name = |strand: u64| match strand {
        0 => '0',
        _ => names
            .iter()
            .find(|(id, _)| *id == strand)
            .map_or('?', |(_, name)| *name),
    };
    let mut text = String::new();
    for &(kind, strand, answer) in log {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push(kind);
        text.push(name(strand));
        if kind == 'C' {
            text.push(name(answer));
        }
    }
    text
}

/// How strand A of [`a_blocked_strand_yields_its_group`] blocks in the
/// kernel, and who wakes it.
#[derive(Clone, Copy)]
enum Blocker {
    /// On a condition variable that B notifies.
    Condvar,
    /// In `sleep_ms` (the timer tick wakes it).
    Sleep,
}

/// Group of strands A then B under a kernel-installed round-robin
/// scheduler. A runs first and blocks in the kernel; B must get the
/// processor (Block(A), then Checkpoint names B). A is woken while B runs:
/// Unblock(A) must be raised, yet A must not run until B yields and the
/// scheduler names A. Then A ends, B runs to its end.
fn a_blocked_strand_yields_its_group(blocker: Blocker) -> TestResult {
    let group = Group::new()?;
    let (recorder, bindings) = install(group.id())?;
    let trace: Arc<spin::Mutex<Vec<&'static str>>> = Arc::default();
    let go = Arc::new(Mutex::new(false));
    let changed = Arc::new(Condvar::new());
    let result = (|| -> Result<(u64, u64), String> {
        let a = {
            let (trace, go, changed) = (trace.clone(), go.clone(), changed.clone());
            group
                .spawn("strand-a", 1, move || {
                    trace.lock().push("A1");
                    match blocker {
                        Blocker::Condvar => {
                            let mut is_go = go.lock();
                            while !*is_go {
                                is_go = changed.wait(is_go);
                            }
                        }
                        Blocker::Sleep => sched::sleep_ms(20),
                    }
                    trace.lock().push("A2");
                })
                .map_err(|_| String::from("no memory for strand A"))?
        };
        let a_id = a.id().0;
        let b = {
            let (trace, go, changed, recorder) =
                (trace.clone(), go.clone(), changed.clone(), recorder.clone());
            group
                .spawn("strand-b", 2, move || {
                    trace.lock().push("B1");
                    if let Blocker::Condvar = blocker {
                        *go.lock() = true;
                        changed.notify_one();
                    }
                    // Let the whole kernel run (A included, were it made
                    // ready) until A's Unblock has been raised: B still
                    // holds the group's processor.
                    let unblocked = || {
                        recorder
                            .log
                            .lock()
                            .iter()
                            .filter(|&&(kind, strand, _)| kind == 'U' && strand == a_id)
                            .count()
                            == 2
                    };
                    let deadline = hal::timer::uptime_ns() + 2_000_000_000;
                    while !unblocked() && hal::timer::uptime_ns() < deadline {
                        sched::yield_now();
                    }
                    trace.lock().push("B2");
                    strands::yield_now();
                    trace.lock().push("B3");
                })
                .map_err(|_| String::from("no memory for strand B"))?
        };
        let b_id = b.id().0;
        group.start();
        a.join();
        b.join();
        Ok((a_id, b_id))
    })();
    uninstall(bindings);
    let (a, b) = result?;
    let trace = trace.lock().join(" ");
    let events = render(&recorder.log.lock(), &[(a, 'A'), (b, 'B')]);
    ensure!(
        trace == "A1 B1 B2 A2 B3",
        "the strands ran as {trace}, not A1 B1 B2 A2 B3 (B while A was blocked, A after B yielded)"
    );
    let expected = "UA UB C0A RA BA CAB RB UA CBA RA BA CAB RB BB CB0";
    ensure!(
        events == expected,
        "the scheduler saw {events}, expected {expected}"
    );
    Ok(())
}

fn a_strand_blocked_on_a_condvar_gives_its_group_to_another() -> TestResult {
    a_blocked_strand_yields_its_group(Blocker::Condvar)
}

fn a_sleeping_strand_waits_for_its_turn() -> TestResult {
    a_blocked_strand_yields_its_group(Blocker::Sleep)
}

/// An ordinary kernel thread waits on a condition variable, sleeps and is
/// joined while the strand hooks are installed (a group exists): no
/// strand event is raised and the hooks report nothing.
fn an_ungrouped_thread_blocks_without_strand_events() -> TestResult {
    let group = Group::new()?;
    let (recorder, bindings) = install(0)?;
    let notes_before = strands::notes_queued();
    let go = Arc::new(Mutex::new(false));
    let changed = Arc::new(Condvar::new());
    let done = Arc::new(AtomicBool::new(false));
    let result = (|| -> TestResult {
        let thread = {
            let (go, changed, done) = (go.clone(), changed.clone(), done.clone());
            sched::spawn("ungrouped", move || {
                let mut is_go = go.lock();
                while !*is_go {
                    is_go = changed.wait(is_go);
                }
                drop(is_go);
                sched::sleep_ms(2);
                done.store(true, Ordering::Relaxed);
            })
            .map_err(|_| "no memory for a thread")?
        };
        // Long enough for the thread to be waiting.
        sched::sleep_ms(5);
        *go.lock() = true;
        changed.notify_one();
        thread.join();
        Ok(())
    })();
    uninstall(bindings);
    drop(group);
    result?;
    ensure!(
        done.load(Ordering::Relaxed),
        "the thread did not run to its end"
    );
    let notes = strands::notes_queued() - notes_before;
    ensure!(
        notes == 0,
        "the strand hooks reported {notes} blocks or wakes of ungrouped threads"
    );
    let events = render(&recorder.log.lock(), &[]);
    ensure!(events.is_empty(), "strand events were raised: {events}");
    Ok(())
}
