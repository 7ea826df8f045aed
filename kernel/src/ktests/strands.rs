//! Application-specific scheduling on the `Strand` events.

use alloc::{string::String, sync::Arc, vec::Vec};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::strands::{self, Group};

use super::{ensure, KernelTest, TestResult};

pub const TESTS: &[KernelTest] = &[KernelTest {
    name: "an_application_scheduler_runs_its_strands_in_its_order_and_no_others",
    run: an_application_scheduler_runs_its_strands_in_its_order,
}];

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
    let (log_a, log_b) = (Arc::new(spin::Mutex::new(Vec::new())), Arc::new(spin::Mutex::new(Vec::new())));
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
        ensure!(rounds > 0, "the ordinary thread did not run while the groups ran");
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
