//! `ptrace(2)`, as far as a parent tracing its child goes: the child
//! asks to be traced (`PTRACE_TRACEME`); from then on every signal it
//! takes but `SIGKILL` first stops it (a signal-delivery stop, which
//! the parent's waits report without `WUNTRACED`), and the parent
//! resumes it with `PTRACE_CONT` (with the signal to take instead, or
//! none), `PTRACE_KILL` or `PTRACE_DETACH`. A successful `execve` of a
//! tracee sends it `SIGTRAP`. The stop and the tracer's hold on the
//! tracee are the process table's (`services/process`); which signals
//! a tracee keeps is the personality's (`SignalState::set_traced`).
//!
//! Not offered: attaching to another process (`PTRACE_ATTACH`,
//! `PTRACE_SEIZE`: `EPERM`, as where attaching is forbidden), and
//! reading or changing the tracee (`PTRACE_PEEK*`, `PTRACE_GETREGS`,
//! ...: `EIO`, Linux's answer to a request it does not know).

use linux::signal::{Disposition, SignalInfo, Source};
use linux_abi::{ptrace::*, signal::SIGKILL, Errno};

use ::process::{self, TraceResume};

/// `ptrace(request, pid, address, data)`.
pub(crate) fn ptrace(strand: u64, request: u64, pid: u64, data: u64) -> i64 {
    let Some(caller) = process::of_strand(strand) else {
        return Errno::ESRCH.as_negative();
    };
    match request {
        PTRACE_TRACEME => trace_me(&caller),
        PTRACE_ATTACH | PTRACE_SEIZE => Errno::EPERM.as_negative(),
        _ => {
            let pid = pid as i32;
            if pid <= 0 || !process::is_stopped_tracee(caller.id(), pid as u64) {
                return Errno::ESRCH.as_negative();
            }
            let pid = pid as u64;
            let how = match (request, signal_data(data)) {
                (PTRACE_CONT, Some(signal)) => TraceResume::Continue(signal),
                (PTRACE_KILL, _) => TraceResume::Continue(SIGKILL),
                (PTRACE_DETACH, Some(signal)) => TraceResume::Detach(signal),
                _ => return Errno::EIO.as_negative(),
            };
            if let (TraceResume::Detach(_), Some(tracee)) = (
                how,
                crate::personality().and_then(|personality| personality.files(pid)),
            ) {
                tracee.signals.lock().set_traced(false);
            }
            match process::resume_tracee(caller.id(), pid, how) {
                Ok(()) => 0,
                Err(_) => Errno::ESRCH.as_negative(),
            }
        }
    }
}

/// `PTRACE_TRACEME`: `EPERM` if already traced or the caller has no
/// parent process to trace it (a child of the kernel).
fn trace_me(caller: &process::Process) -> i64 {
    if caller.parent() == 0 || !process::trace_by_parent(caller) {
        return Errno::EPERM.as_negative();
    }
    if let Some(files) = crate::personality().and_then(|personality| personality.files(caller.id()))
    {
        files.signals.lock().set_traced(true);
    }
    0
}

/// `data` as the signal a resumed tracee takes: 0 (none) to the last
/// signal; `None` (`EIO`) otherwise, as Linux's `valid_signal`.
fn signal_data(data: u64) -> Option<u8> {
    u8::try_from(data)
        .ok()
        .filter(|&signal| signal <= linux_abi::signal::MAX_SIGNAL)
}

/// What a signal taken by a thread of process `pid` becomes.
pub(crate) enum TracedSignal {
    /// Take this signal, with this disposition.
    Take(SignalInfo, Disposition),
    /// Take nothing (the tracer suppressed it, or it was blocked and
    /// went back to pending).
    Skip,
    /// The process was killed while stopped.
    Killed,
}

/// Signal `info`, about to be taken by thread `thread` of `files`'s
/// process `pid` with `disposition` (`is_traced`: what the signal state
/// said when the signal was taken): if the process is traced and the
/// signal is not `SIGKILL`, the thread stops for the tracer first, and
/// takes what the tracer resumed it with (Linux's `ptrace_signal`: a
/// signal the tracer changed comes from the tracer, and goes back to
/// pending if the thread blocks it).
pub(crate) fn before_taking(
    pid: u64,
    files: &linux::LinuxProcess,
    thread: u64,
    info: SignalInfo,
    disposition: Disposition,
    is_traced: bool,
) -> TracedSignal {
    if info.signal == SIGKILL || !is_traced {
        return TracedSignal::Take(info, disposition);
    }
    let Some(resumed) = process::trace_stop(pid, info.signal) else {
        return TracedSignal::Killed;
    };
    if resumed == 0 {
        return TracedSignal::Skip;
    }
    if resumed == info.signal {
        return TracedSignal::Take(info, disposition);
    }
    let tracer = process::get(pid).map_or(0, |process| process.parent());
    let changed = SignalInfo {
        signal: resumed,
        source: Source::User {
            pid: tracer as u32,
            thread: false,
        },
    };
    let mut state = files.signals.lock();
    if state.mask(thread) & (1 << (resumed - 1)) != 0 {
        state.post_to_thread(thread, changed);
        return TracedSignal::Skip;
    }
    TracedSignal::Take(changed, state.disposition(resumed))
}
