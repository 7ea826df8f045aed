//! Process descriptors: `pidfd_open`'s flags, `waitid`'s `P_PIDFD` and
//! `pidfd_getfd`'s and `pidfd_send_signal`'s flags (pidfd_open(2),
//! `include/uapi/linux/pidfd.h`).

/// `pidfd_open`: the descriptor's file is non-blocking (`O_NONBLOCK`),
/// so a `waitid(P_PIDFD, ...)` of a process still running answers
/// `EAGAIN` instead of waiting.
pub const PIDFD_NONBLOCK: u64 = 0o4000;

/// `waitid`'s `idtype` naming the child by a process descriptor.
pub const P_PIDFD: u64 = 3;
