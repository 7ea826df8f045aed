//! The lockup watchdog: hard lockups, soft lockups and hung tasks cannot
//! go unnoticed (Linux's `kernel/watchdog.c`, `kernel/hung_task.c`).
//!
//! `hal::watchdog` delivers a non-maskable interrupt 20 times a second,
//! which arrives even when the processor has interrupts off. At each, this
//! module samples the tick count and the scheduler and asks the
//! `watchdog` crate's [`Watchdog`] (the judgement, host-tested) whether
//! the kernel is stuck; a finding is printed on the console at once and
//! kept for `/proc/lockups`:
//!
//! ```text
//! watchdog: soft lockup: thread 12 (spinner) has run 5.01 s without a switch while others are ready
//!   interrupted in the kernel at 0xffffffff8021b3c4; preemption off (1), 0 interrupt-disabling locks held
//!   backtrace: 0xffffffff8021b3c4 0xffffffff80254d10 ...
//!   threads: 12 spinner running 5.01 s; 1 idle ready 5.00 s; 3 shell blocked on kernel mutex 4.20 s ...
//! ```
//!
//! The report is built from the interrupted registers and from what can
//! be read without waiting: the NMI may have interrupted the holder of any
//! lock, so everything here uses `try_lock`, allocates nothing and writes
//! to the console through its emergency path. A part that could not be
//! read is said to be busy. Addresses map to functions with
//! `addr2line -f -e target/kernel/x86_64-unknown-none/release/spindle` (or
//! `spindle-testing`, the image `./x test` boots).

use core::fmt::{self, Write};

use hal::trap::TrapFrame;
use watchdog::{Finding, MutexWaiter, Running, Thresholds, Watchdog};

/// The watchdog's memory between NMIs. Only the NMI handler takes it
/// (NMIs do not nest), so `try_lock` always succeeds there.
static WATCHDOG: spin::Mutex<Watchdog> = spin::Mutex::new(Watchdog::new(Thresholds::KERNEL));

/// Bytes of reports kept for `/proc/lockups` (the newest ones: older
/// text is dropped from the front).
const KEPT_BYTES: usize = 8 * 1024;

/// Reports kept for `/proc/lockups`.
struct Kept {
    bytes: [u8; KEPT_BYTES],
    length: usize,
    /// Findings since boot.
    findings: u64,
}

static KEPT: spin::Mutex<Kept> = spin::Mutex::new(Kept {
    bytes: [0; KEPT_BYTES],
    length: 0,
    findings: 0,
});

/// Return addresses printed per report.
const BACKTRACE_DEPTH: usize = 16;

/// Starts the watchdog (after the scheduler, which it samples).
pub fn init() {
    if let Err(error) = hal::watchdog::start(on_nmi) {
        log::warn!("watchdog: lockups go unreported: {error}");
    }
}

/// Findings reported since boot.
pub fn findings() -> u64 {
    KEPT.lock().findings
}

/// The reports kept, oldest first (`/proc/lockups`).
pub fn reports() -> alloc::vec::Vec<u8> {
    let kept = KEPT.lock();
    kept.bytes[..kept.length].to_vec()
}

/// Each watchdog NMI: samples, judges, reports.
fn on_nmi(frame: &TrapFrame) {
    let Some(mut dog) = WATCHDOG.try_lock() else {
        return;
    };
    let now = hal::timer::uptime_ns();
    if let Some(finding) = dog.observe_ticks(now, hal::timer::ticks()) {
        report(&finding, frame, now);
    }
    // The running thread, whether another is ready, and mutex waiters.
    let mut running = None;
    let mut is_any_ready = false;
    let mut hung = [None::<MutexWaiter>; 4];
    let mut hung_count = 0;
    let is_read = sched::for_each_thread(|thread| match thread.state {
        _ if thread.is_idle => {}
        sched::ThreadState::Running => {
            running = Some(Running {
                id: thread.id.0,
                since_ns: thread.since_ns,
            })
        }
        sched::ThreadState::Ready => is_any_ready = true,
        sched::ThreadState::Blocked
            if thread.waiting_on == "kernel mutex" && hung_count < hung.len() =>
        {
            hung[hung_count] = Some(MutexWaiter {
                id: thread.id.0,
                since_ns: thread.since_ns,
            });
            hung_count += 1;
        }
        _ => {}
    });
    if !is_read {
        return;
    }
    if let Some(finding) = dog.observe_running(now, running, is_any_ready) {
        report(&finding, frame, now);
    }
    for waiter in hung.iter().flatten() {
        if let Some(finding) = dog.observe_mutex_waiter(now, *waiter) {
            report(&finding, frame, now);
        }
    }
}

/// Prints `finding` on the console and keeps it for `/proc/lockups`.
fn report(finding: &Finding, frame: &TrapFrame, now: u64) {
    let mut out = Report {
        kept: KEPT.try_lock(),
    };
    if let Some(kept) = out.kept.as_mut() {
        kept.findings += 1;
    }
    let _ = write_report(&mut out, finding, frame, now);
}

/// Where a report goes: the console (without its lock) and the kept text.
struct Report<'a> {
    kept: Option<spin::MutexGuard<'a, Kept>>,
}

impl Write for Report<'_> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        hal::console::emergency_write_fmt(format_args!("{text}"));
        if let Some(kept) = self.kept.as_mut() {
            let bytes = text.as_bytes();
            let bytes = &bytes[bytes.len().saturating_sub(KEPT_BYTES)..];
            let overflow = (kept.length + bytes.len()).saturating_sub(KEPT_BYTES);
            if overflow > 0 {
                let length = kept.length;
                kept.bytes.copy_within(overflow..length, 0);
                kept.length -= overflow;
            }
            let start = kept.length;
            kept.bytes[start..start + bytes.len()].copy_from_slice(bytes);
            kept.length += bytes.len();
        }
        Ok(())
    }
}

/// Nanoseconds as seconds with two decimals.
struct Seconds(u64);

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hundredths = self.0 / 10_000_000;
        write!(f, "{}.{:02} s", hundredths / 100, hundredths % 100)
    }
}

fn write_report(
    out: &mut Report<'_>,
    finding: &Finding,
    frame: &TrapFrame,
    now: u64,
) -> fmt::Result {
    out.write_str("\nwatchdog: ")?;
    match *finding {
        Finding::HardLockup { stalled_ns } => write!(
            out,
            "hard lockup: no timer interrupt for {}: the processor runs with interrupts off",
            Seconds(stalled_ns)
        )?,
        Finding::SoftLockup { thread, running_ns } => {
            write!(out, "soft lockup: thread {thread}")?;
            write_thread_name(out, thread)?;
            write!(
                out,
                " has run {} without a switch while others are ready",
                Seconds(running_ns)
            )?;
        }
        Finding::HungTask { thread, blocked_ns } => {
            write!(out, "hung task: thread {thread}")?;
            write_thread_name(out, thread)?;
            write!(
                out,
                " has waited {} for a kernel mutex",
                Seconds(blocked_ns)
            )?;
        }
    }
    let current = sched::current().0;
    write!(out, "\n  on the processor: thread {current}")?;
    write_thread_name(out, current)?;
    process::describe_strand_without_waiting(current, |pid, tid, command| {
        let _ = write!(
            out,
            ", process {pid} ({}) thread {tid}",
            core::str::from_utf8(command).unwrap_or("?")
        );
    });
    if frame.is_from_user() {
        write!(out, "\n  interrupted in user mode at {:#x}", frame.rip())?;
    } else {
        write!(
            out,
            "\n  interrupted in the kernel at {:#x} (interrupts {})",
            frame.rip(),
            if frame.rflags() & (1 << 9) != 0 {
                "on"
            } else {
                "off"
            }
        )?;
    }
    write!(
        out,
        "; preemption off: {}; interrupt-disabling locks held: {} \
         (context switches made holding one: {})",
        sched::preemption_off_depth(),
        hal::sync::locks_held(),
        hal::context::switches_holding_locks()
    )?;
    if !frame.is_from_user() {
        let mut callers = [0u64; BACKTRACE_DEPTH];
        hal::backtrace::callers_of(frame, &mut callers);
        write!(out, "\n  backtrace: {:#x}", frame.rip())?;
        for caller in callers.iter().take_while(|&&caller| caller != 0) {
            write!(out, " {caller:#x}")?;
        }
    }
    out.write_str("\n  threads:")?;
    let mut result = Ok(());
    let is_read = sched::for_each_thread(|thread| {
        if result.is_err() {
            return;
        }
        result = write_thread_line(out, thread, now);
    });
    result?;
    if !is_read {
        out.write_str(" (the scheduler is busy: its lock is held)")?;
    }
    out.write_str("\n")
}

fn write_thread_name(out: &mut Report<'_>, id: u64) -> fmt::Result {
    let mut result = Ok(());
    sched::for_each_thread(|thread| {
        if thread.id.0 == id {
            result = write!(out, " ({})", thread.name);
        }
    });
    result
}

fn write_thread_line(
    out: &mut Report<'_>,
    thread: &sched::ThreadView<'_>,
    now: u64,
) -> fmt::Result {
    let state = match thread.state {
        sched::ThreadState::Running => "running",
        sched::ThreadState::Ready => "ready",
        sched::ThreadState::Blocked => "blocked on",
        sched::ThreadState::Sleeping => "sleeping",
    };
    write!(out, "\n    {} {} {state}", thread.id, thread.name)?;
    if thread.state == sched::ThreadState::Blocked {
        write!(out, " {}", thread.waiting_on)?;
    }
    write!(out, " for {}", Seconds(now.saturating_sub(thread.since_ns)))?;
    process::describe_strand_without_waiting(thread.id.0, |pid, _, command| {
        let _ = write!(
            out,
            " (process {pid}, {})",
            core::str::from_utf8(command).unwrap_or("?")
        );
    });
    Ok(())
}

use ::process;
