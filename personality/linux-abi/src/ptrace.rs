//! `ptrace(2)`'s requests (`include/uapi/linux/ptrace.h`).

/// The caller's parent traces it from now on.
pub const PTRACE_TRACEME: u64 = 0;
/// Resume a stopped tracee, with the signal in `data` (0: none).
pub const PTRACE_CONT: u64 = 7;
/// Resume a stopped tracee with `SIGKILL`.
pub const PTRACE_KILL: u64 = 8;
/// Trace a process that is not the caller's child.
pub const PTRACE_ATTACH: u64 = 16;
/// Stop tracing a stopped tracee, resuming it with the signal in `data`.
pub const PTRACE_DETACH: u64 = 17;
/// Trace a process without stopping it.
pub const PTRACE_SEIZE: u64 = 0x4206;
