//! `timer_create`'s notification: which `struct sigevent` Linux takes
//! (its `good_sigevent`) and what the timer then sends. Decoded here, on
//! plain values, so the checks are tested on the host; the timers
//! themselves are the kernel's interval-timer service.

use linux_abi::{
    signal::{MAX_SIGNAL, SIGALRM},
    time::{Sigevent, SIGEV_NONE, SIGEV_SIGNAL, SIGEV_THREAD, SIGEV_THREAD_ID},
    Errno,
};

/// What a timer's expiry sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerNotice {
    /// Nothing: the timer is only read (`SIGEV_NONE`).
    Nothing,
    /// `signal` to the process, or to its thread `thread`
    /// (`SIGEV_THREAD_ID`), carrying `value` (`si_value`).
    Signal {
        /// The signal.
        signal: u8,
        /// The thread id it goes to; `None`: the process.
        thread: Option<u64>,
        /// `sigev_value`; without a `struct sigevent`, the timer's id.
        value: Option<u64>,
    },
}

/// What a timer created without a `struct sigevent` sends: `SIGALRM` to
/// the process, carrying the timer's id.
pub const DEFAULT_TIMER_NOTICE: TimerNotice = TimerNotice::Signal {
    signal: SIGALRM,
    thread: None,
    value: None,
};

/// Checks `timer_create`'s `struct sigevent` as Linux's `good_sigevent`
/// does: `SIGEV_SIGNAL` and `SIGEV_THREAD` (a signal to the process, the
/// C library makes the thread), `SIGEV_THREAD_ID` (a signal to a thread
/// of the caller's process: `is_own_thread` says which are) with a
/// signal from 1 to `SIGRTMAX`, or `SIGEV_NONE`. Anything else, another
/// notification bit set, a bad signal, a thread not the caller's, is
/// `EINVAL`.
pub fn timer_notice(
    event: &Sigevent,
    is_own_thread: impl Fn(i32) -> bool,
) -> Result<TimerNotice, Errno> {
    let thread = match event.notify {
        SIGEV_NONE => return Ok(TimerNotice::Nothing),
        SIGEV_SIGNAL | SIGEV_THREAD => None,
        SIGEV_THREAD_ID if event.thread_id > 0 && is_own_thread(event.thread_id) => {
            Some(event.thread_id as u64)
        }
        _ => return Err(Errno::EINVAL),
    };
    let signal = u8::try_from(event.signo)
        .ok()
        .filter(|&signal| (1..=MAX_SIGNAL).contains(&signal))
        .ok_or(Errno::EINVAL)?;
    Ok(TimerNotice::Signal {
        signal,
        thread,
        value: Some(event.value),
    })
}
