//! Signal numbers (`asm/signal.h`) and the constants of the calls on
//! signals: `rt_sigprocmask`'s `how`, `sigaction`'s handler values and
//! flags, `sigaltstack`'s flags, and the `si_code`s of `siginfo_t`.
//!
//! Signal numbers are `u8`: they are 1..=64, and a signal set (`sigset_t`,
//! one `u64`) has bit `signal - 1` for each.

/// Defines each signal number as a constant and [`name`] as its reverse.
macro_rules! signals {
    ($($name:ident = $number:literal, $meaning:literal,)*) => {
        $(
            #[doc = concat!("`", stringify!($name), "` (", stringify!($number), "): ", $meaning, ".")]
            pub const $name: u8 = $number;
        )*

        /// The name of `signal` (`"SIGSEGV"` for 11), if it is one of the
        /// standard signals.
        pub fn name(signal: u8) -> Option<&'static str> {
            match signal {
                $($number => Some(stringify!($name)),)*
                _ => None,
            }
        }
    };
}

signals! {
    SIGHUP = 1, "hang up",
    SIGINT = 2, "interrupt from the terminal",
    SIGQUIT = 3, "quit from the terminal",
    SIGILL = 4, "illegal instruction",
    SIGTRAP = 5, "trace or breakpoint trap",
    SIGABRT = 6, "abort",
    SIGBUS = 7, "bus error",
    SIGFPE = 8, "arithmetic fault",
    SIGKILL = 9, "kill, which cannot be caught",
    SIGUSR1 = 10, "user-defined signal 1",
    SIGSEGV = 11, "invalid memory reference",
    SIGUSR2 = 12, "user-defined signal 2",
    SIGPIPE = 13, "write to a pipe with no reader",
    SIGALRM = 14, "timer signal from alarm",
    SIGTERM = 15, "termination request",
    SIGSTKFLT = 16, "coprocessor stack fault (unused)",
    SIGCHLD = 17, "a child stopped, continued or ended",
    SIGCONT = 18, "continue if stopped",
    SIGSTOP = 19, "stop, which cannot be caught",
    SIGTSTP = 20, "stop from the terminal",
    SIGTTIN = 21, "terminal input for a background process",
    SIGTTOU = 22, "terminal output for a background process",
    SIGURG = 23, "urgent condition on a socket",
    SIGXCPU = 24, "processor time limit exceeded",
    SIGXFSZ = 25, "file size limit exceeded",
    SIGVTALRM = 26, "virtual alarm clock",
    SIGPROF = 27, "profiling timer expired",
    SIGWINCH = 28, "terminal window size changed",
    SIGIO = 29, "I/O now possible",
    SIGPWR = 30, "power failure",
    SIGSYS = 31, "bad system call",
}

/// The highest signal number (`_NSIG`): signals are 1..=64, 32..=64 the
/// real-time ones.
pub const MAX_SIGNAL: u8 = 64;

/// The bit of `signal` (1..=64) in a signal set (`sigset_t`).
pub const fn bit(signal: u8) -> u64 {
    1u64 << (signal - 1)
}

/// Bytes of a `sigset_t` as the kernel takes it (`sigsetsize`).
pub const SIGSET_BYTES: u64 = 8;

/// `rt_sigprocmask`'s `how`: add the set to the mask.
pub const SIG_BLOCK: u64 = 0;
/// `rt_sigprocmask`'s `how`: remove the set from the mask.
pub const SIG_UNBLOCK: u64 = 1;
/// `rt_sigprocmask`'s `how`: the set becomes the mask.
pub const SIG_SETMASK: u64 = 2;

/// `sa_handler` value: the signal's default action.
pub const SIG_DFL: u64 = 0;
/// `sa_handler` value: ignore the signal.
pub const SIG_IGN: u64 = 1;

/// `sa_flags`: `SIGCHLD` is not sent for a child that stops or continues.
pub const SA_NOCLDSTOP: u64 = 0x1;
/// `sa_flags`: the handler takes `(signal, siginfo, ucontext)`.
pub const SA_SIGINFO: u64 = 0x4;
/// `sa_flags`: `sa_restorer` holds the return trampoline (musl and glibc
/// set it).
pub const SA_RESTORER: u64 = 0x0400_0000;
/// `sa_flags`: run the handler on the alternate stack.
pub const SA_ONSTACK: u64 = 0x0800_0000;
/// `sa_flags`: restart interrupted system calls.
pub const SA_RESTART: u64 = 0x1000_0000;
/// `sa_flags`: do not block the signal while its handler runs.
pub const SA_NODEFER: u64 = 0x4000_0000;
/// `sa_flags`: back to `SIG_DFL` once delivered.
pub const SA_RESETHAND: u64 = 0x8000_0000;

/// `ss_flags`: the thread is running on the alternate stack.
pub const SS_ONSTACK: u32 = 1;
/// `ss_flags`: no alternate stack.
pub const SS_DISABLE: u32 = 2;
/// `ss_flags`: the alternate stack is disarmed while a handler runs on
/// it (a flag beside the mode).
pub const SS_AUTODISARM: u32 = 1 << 31;
/// The smallest alternate stack `sigaltstack` takes (`MINSIGSTKSZ`).
pub const MINSIGSTKSZ: u64 = 2048;

/// `si_code`: sent by `kill`.
pub const SI_USER: i32 = 0;
/// `si_code`: sent by the kernel.
pub const SI_KERNEL: i32 = 0x80;
/// `si_code`: sent by `tkill` or `tgkill`.
pub const SI_TKILL: i32 = -6;
/// `si_code`: sent by a `timer_create` timer's expiry.
pub const SI_TIMER: i32 = -2;

/// `si_code` of `SIGSEGV`: the address is in no mapping.
pub const SEGV_MAPERR: i32 = 1;
/// `si_code` of `SIGSEGV`: the mapping does not allow the access.
pub const SEGV_ACCERR: i32 = 2;

/// `si_code` of `SIGCHLD`: the child exited.
pub const CLD_EXITED: i32 = 1;
/// `si_code` of `SIGCHLD`: a signal killed the child.
pub const CLD_KILLED: i32 = 2;
/// `si_code` of `SIGCHLD`: a signal stopped the child.
pub const CLD_STOPPED: i32 = 5;
/// `si_code` of `SIGCHLD` for a traced child that stopped for its tracer
/// (a signal-delivery stop).
pub const CLD_TRAPPED: i32 = 4;
/// `si_code` of `SIGCHLD`: `SIGCONT` continued the stopped child.
pub const CLD_CONTINUED: i32 = 6;
