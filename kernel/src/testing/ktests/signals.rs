//! Signals under the Linux personality: handlers entered with a correct
//! frame and left with `rt_sigreturn`, default actions, masks, `EINTR`
//! and restarts, stops and continues, as programs written by us and by
//! others (Debian's busybox `sh`) see them.

use super::{
    ensure,
    user::{run_and_capture, run_program},
    KernelTest, TestResult,
};
use linux_process::threads::UserExit;

pub const TESTS: &[KernelTest] = &[
    KernelTest {
        name: "signal_handlers_get_siginfo_and_the_interrupted_state_back",
        run: signal_handlers,
    },
    KernelTest {
        name: "busybox_sh_traps_kill_background_jobs_and_wait",
        run: busybox_sh_traps,
    },
    KernelTest {
        name: "each_thread_has_its_own_mask_and_a_stop_stops_every_thread",
        run: thread_signals,
    },
    KernelTest {
        name: "a_process_waiting_ten_seconds_is_not_run_until_its_event",
        run: blocked_waits,
    },
];

/// `user/blockwake.c`: five processes wait ten seconds each, in `read`
/// and `poll` on an empty pipe, `ppoll` with a timeout, `sigsuspend` and
/// `sigtimedwait`; none is put on the processor more than twice in that
/// time (a waiter that looks again every millisecond was, thousands of
/// times), and each sees its event (a byte, `SIGUSR1`) and exits 0.
fn blocked_waits() -> TestResult {
    run_leaving_no_process_or_signal("blockwake")
}

/// `user/threadsignals.c`: masks per thread (`pthread_sigmask` in one
/// thread leaves the others alone, a new thread starts with its
/// creator's), `tgkill` pending for the named thread alone until it
/// unblocks, a process's signal taken by a thread not blocking it, and
/// `SIGSTOP` stopping a thread that spins in user mode. No process
/// outlives it and no signal stays pending.
fn thread_signals() -> TestResult {
    run_leaving_no_process_or_signal("threadsignals")
}

/// Runs `bin/<name>`, which must exit 0 printing `<name>: ok`; then no
/// process it made is left, nor a signal pending anywhere.
fn run_leaving_no_process_or_signal(name: &str) -> TestResult {
    let personality = crate::linux::personality().ok_or("the Linux personality is not set up")?;
    let processes = personality.processes();
    let (end, output) = run_and_capture(name, &[])?;
    ensure!(
        end == UserExit::Exited(0) && output.contains(&alloc::format!("{name}: ok")),
        "{name} {end}, printing:\n{output}"
    );
    ensure!(
        personality.processes() == processes,
        "{} processes outlived the test",
        personality.processes() - processes
    );
    ensure!(
        !linux::signals_may_be_pending(),
        "a signal is still pending after every process ended"
    );
    Ok(())
}

/// `user/signals.c`: every check of its own passes (handlers with
/// siginfo for kill, raise, faults, SIGCHLD and SIGPIPE; FPU state kept;
/// masks, sigpending, sigsuspend; EINTR and SA_RESTART; the alternate
/// stack; siglongjmp; default actions; stop and continue; process
/// groups; a garbage `rt_sigreturn` frame; `setitimer` and `alarm`).
/// Afterwards no process has a
/// signal pending, none kept its descriptors, and no frame is kept.
fn signal_handlers() -> TestResult {
    let frames = crate::page_cache::frames_free_or_kept();
    run_leaving_no_process_or_signal("signals")?;
    ensure!(
        crate::page_cache::frames_free_or_kept() >= frames,
        "{} frames were kept after the programs ended",
        frames - crate::page_cache::frames_free_or_kept()
    );
    Ok(())
}

/// A script for Debian's busybox `sh` using signals the way scripts do:
/// `trap` on a signal and on `EXIT`, `kill` of the shell itself and of a
/// background job, `$!`, `wait` for a job and its status (128 + the
/// signal), a subshell ended by its own trap, an ignored signal. The
/// expected output is what the same busybox prints on Linux (its
/// "Terminated" report of the killed job included).
const TRAP_SCRIPT: &str = r#"trap 'echo "got USR1"' USR1
kill -USR1 $$
echo "after USR1"
sleep 5 &
job=$!
kill $job
wait $job
echo "job status $?"
( trap 'echo "subshell TERM"; exit 3' TERM; sh -c 'kill -TERM $PPID'; sleep 1 )
echo "subshell status $?"
trap '' HUP
kill -HUP $$
echo "HUP ignored"
sleep 0.05 &
wait
echo "waited for all"
trap 'echo "bye from EXIT"' EXIT
exit 4
"#;

const TRAP_EXPECTED: &str = "got USR1\nafter USR1\nTerminated\njob status 143\nsubshell TERM\nsubshell status 3\nHUP ignored\nwaited for all\nbye from EXIT\n";

fn busybox_sh_traps() -> TestResult {
    let (end, output) = run_and_capture("busybox", &["sh", "-c", TRAP_SCRIPT])?;
    ensure!(
        end == UserExit::Exited(4) && output == TRAP_EXPECTED,
        "sh {end}; it printed:\n{output}\ninstead of:\n{TRAP_EXPECTED}"
    );
    let end = run_program("busybox", &["true"])?;
    ensure!(
        end == UserExit::Exited(0),
        "busybox true {end} after the script"
    );
    Ok(())
}
