//! The lockup watchdog (`lockups`): a kernel thread that keeps the
//! processor is reported, whether it turned preemption off (a soft
//! lockup) or interrupts (a hard lockup), with its name, its backtrace
//! and the other threads, on the console and in `/proc/lockups`.

use alloc::string::String;

use super::{ensure, KernelTest, TestResult};
use crate::lockups;

pub const TESTS: &[KernelTest] = &[
    KernelTest {
        name: "a_thread_spinning_with_preemption_off_is_reported_as_a_soft_lockup",
        run: a_thread_spinning_with_preemption_off_is_reported_as_a_soft_lockup,
    },
    KernelTest {
        name: "a_thread_spinning_with_interrupts_off_is_reported_as_a_hard_lockup",
        run: a_thread_spinning_with_interrupts_off_is_reported_as_a_hard_lockup,
    },
];

/// Spins for `ns` nanoseconds of uptime (the TSC runs whatever the
/// interrupts do).
fn spin_for(ns: u64) {
    let until = hal::timer::uptime_ns() + ns;
    while hal::timer::uptime_ns() < until {
        core::hint::spin_loop();
    }
}

/// Runs `spin` on a kernel thread named `name` while another thread is
/// ready to run, and returns the reports the watchdog added meanwhile.
fn reports_while(name: &str, spin: fn()) -> Result<String, String> {
    let findings_before = lockups::findings();
    let kept_before = lockups::reports().len();
    // Queued behind the spinner: ready the whole time it holds the
    // processor.
    let spinner = sched::spawn(name, spin).map_err(|_| "no spinner")?;
    let bystander = sched::spawn("lockup-bystander", || {}).map_err(|_| "no bystander")?;
    ensure!(
        matches!(spinner.join(), sched::ExitReason::Finished),
        "the spinner did not finish"
    );
    let _ = bystander.join();
    ensure!(
        lockups::findings() > findings_before,
        "the watchdog reported nothing ({} findings before and after)",
        findings_before
    );
    let reports = lockups::reports();
    let added = &reports[kept_before.min(reports.len())..];
    Ok(String::from_utf8_lossy(added).into_owned())
}

fn a_thread_spinning_with_preemption_off_is_reported_as_a_soft_lockup() -> TestResult {
    let threshold = watchdog::Thresholds::KERNEL.soft_ns;
    let report = reports_while("lockup-spinner", || {
        let _off = sched::preemption_off();
        spin_for(watchdog::Thresholds::KERNEL.soft_ns + 1_000_000_000);
    })?;
    ensure!(
        report.contains("soft lockup: thread ") && report.contains("(lockup-spinner) has run"),
        "the report does not name the soft lockup and the spinner (threshold {threshold} ns): {report}"
    );
    for part in [
        "preemption off: 1",
        "backtrace: 0x",
        "lockup-bystander ready for",
    ] {
        ensure!(report.contains(part), "the report lacks `{part}`: {report}");
    }
    Ok(())
}

fn a_thread_spinning_with_interrupts_off_is_reported_as_a_hard_lockup() -> TestResult {
    let report = reports_while("lockup-irqs-off", || {
        hal::cpu::without_interrupts(|| {
            spin_for(watchdog::Thresholds::KERNEL.hard_ns + 1_000_000_000);
        });
    })?;
    ensure!(
        report.contains("hard lockup: no timer interrupt for "),
        "the report does not name a hard lockup: {report}"
    );
    for part in [
        "interrupted in the kernel at 0x",
        "(interrupts off)",
        "on the processor: thread ",
        "(lockup-irqs-off)",
        "backtrace: 0x",
    ] {
        ensure!(report.contains(part), "the report lacks `{part}`: {report}");
    }
    Ok(())
}
