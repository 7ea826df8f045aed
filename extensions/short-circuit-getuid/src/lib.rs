//! A per-application short-circuit (SPIN's, paper 002): a program installs
//! this module for one of its own system calls, and from then on the
//! kernel runs it, in place of the Linux personality, for that call of
//! that process only. It answers with an unprivileged user id, so the
//! program sees itself as user 1000 while every other process still sees
//! root: a personality changed for one application.
#![no_std]

// Keeps the SDK linked (its panic handler).
use spindle_sdk as _;

/// The user id this process is shown.
const USER_ID: i64 = 1000;

/// `MachineTrap.Syscall(strand, number, a0..a5) -> i64`: the kernel binds
/// it for one call number of one process, so it answers whatever it is
/// asked.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn on_syscall(
    _strand: u64,
    _number: u64,
    _a0: u64,
    _a1: u64,
    _a2: u64,
    _a3: u64,
    _a4: u64,
    _a5: u64,
) -> i64 {
    USER_ID
}
