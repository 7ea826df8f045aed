//! The per-application system-call tracer (the Unix server's tracer of
//! paper 002): the kernel loads it for one process and binds
//! `on_syscall_done` to `MachineTrap.SyscallDone`, asynchronously, so the
//! traced program never waits for it; the event's authorizer lets it see
//! that process's calls alone. Each call is logged as strace shows it:
//! `openat(-100, 0x4a2b10, 0x80000, 0) = 3`, or `= -2 ENOENT` for an
//! error. Switch it on from the kernel shell with `trace PID`.
#![no_std]

use core::fmt::Write;

use spindle_sdk::LineBuffer;

/// How many arguments a call the tracer has no name for shows.
const ARGUMENTS_SHOWN: usize = 6;

/// The handler: a call of the traced process returned `result`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn on_syscall_done(result: u64, number: u64, a0: u64, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64) {
    let mut line = LineBuffer::new();
    let (shown, _) = match name(number) {
        Some((name, arguments)) => (arguments, write!(line, "{name}(")),
        None => (ARGUMENTS_SHOWN, write!(line, "syscall_{number}(")),
    };
    for (index, argument) in [a0, a1, a2, a3, a4, a5].iter().take(shown).enumerate() {
        if index > 0 {
            let _ = line.write_str(", ");
        }
        write_argument(&mut line, *argument);
    }
    let result = result as i64;
    let _ = if (-4095..0).contains(&result) {
        match errno_name(-result) {
            Some(errno) => write!(line, ") = {result} {errno}"),
            None => write!(line, ") = {result}"),
        }
    } else if result > 0xffff {
        write!(line, ") = {result:#x}")
    } else {
        write!(line, ") = {result}")
    };
    spindle_sdk::log(line.as_str());
}

/// Small values (and small negative ones, such as `AT_FDCWD`) in decimal,
/// addresses and flags in hexadecimal.
fn write_argument(line: &mut LineBuffer, argument: u64) {
    let signed = argument as i64;
    let _ = if (-4096..=0xffff).contains(&signed) {
        write!(line, "{signed}")
    } else if (argument as i32 as i64) < 0 && argument >> 32 == 0 {
        // An `int` such as -100 passed zero-extended.
        write!(line, "{}", argument as i32)
    } else {
        write!(line, "{argument:#x}")
    };
}

/// Linux x86_64 names of the calls programs commonly make, with how many
/// arguments each takes.
fn name(number: u64) -> Option<(&'static str, usize)> {
    Some(match number {
        0 => ("read", 3),
        1 => ("write", 3),
        2 => ("open", 3),
        3 => ("close", 1),
        4 => ("stat", 2),
        5 => ("fstat", 2),
        6 => ("lstat", 2),
        7 => ("poll", 3),
        8 => ("lseek", 3),
        9 => ("mmap", 6),
        10 => ("mprotect", 3),
        11 => ("munmap", 2),
        12 => ("brk", 1),
        13 => ("rt_sigaction", 4),
        14 => ("rt_sigprocmask", 4),
        15 => ("rt_sigreturn", 0),
        16 => ("ioctl", 3),
        17 => ("pread64", 4),
        18 => ("pwrite64", 4),
        19 => ("readv", 3),
        20 => ("writev", 3),
        21 => ("access", 2),
        22 => ("pipe", 1),
        23 => ("select", 5),
        24 => ("sched_yield", 0),
        25 => ("mremap", 5),
        26 => ("msync", 3),
        27 => ("mincore", 3),
        28 => ("madvise", 3),
        32 => ("dup", 1),
        33 => ("dup2", 2),
        34 => ("pause", 0),
        35 => ("nanosleep", 2),
        36 => ("getitimer", 2),
        37 => ("alarm", 1),
        38 => ("setitimer", 3),
        39 => ("getpid", 0),
        41 => ("socket", 3),
        42 => ("connect", 3),
        56 => ("clone", 5),
        57 => ("fork", 0),
        58 => ("vfork", 0),
        59 => ("execve", 3),
        60 => ("exit", 1),
        61 => ("wait4", 4),
        62 => ("kill", 2),
        63 => ("uname", 1),
        72 => ("fcntl", 3),
        74 => ("fsync", 1),
        76 => ("truncate", 2),
        77 => ("ftruncate", 2),
        78 => ("getdents", 3),
        79 => ("getcwd", 2),
        80 => ("chdir", 1),
        81 => ("fchdir", 1),
        82 => ("rename", 2),
        83 => ("mkdir", 2),
        84 => ("rmdir", 1),
        85 => ("creat", 2),
        86 => ("link", 2),
        87 => ("unlink", 1),
        88 => ("symlink", 2),
        89 => ("readlink", 3),
        90 => ("chmod", 2),
        91 => ("fchmod", 2),
        92 => ("chown", 3),
        95 => ("umask", 1),
        96 => ("gettimeofday", 2),
        97 => ("getrlimit", 2),
        98 => ("getrusage", 2),
        99 => ("sysinfo", 1),
        100 => ("times", 1),
        102 => ("getuid", 0),
        104 => ("getgid", 0),
        105 => ("setuid", 1),
        106 => ("setgid", 1),
        107 => ("geteuid", 0),
        108 => ("getegid", 0),
        109 => ("setpgid", 2),
        110 => ("getppid", 0),
        111 => ("getpgrp", 0),
        112 => ("setsid", 0),
        121 => ("getpgid", 1),
        124 => ("getsid", 1),
        127 => ("rt_sigpending", 2),
        130 => ("rt_sigsuspend", 2),
        131 => ("sigaltstack", 2),
        137 => ("statfs", 2),
        157 => ("prctl", 5),
        158 => ("arch_prctl", 2),
        186 => ("gettid", 0),
        200 => ("tkill", 2),
        201 => ("time", 1),
        202 => ("futex", 6),
        217 => ("getdents64", 3),
        218 => ("set_tid_address", 1),
        228 => ("clock_gettime", 2),
        230 => ("clock_nanosleep", 4),
        231 => ("exit_group", 1),
        234 => ("tgkill", 3),
        247 => ("waitid", 5),
        257 => ("openat", 4),
        258 => ("mkdirat", 3),
        262 => ("newfstatat", 4),
        263 => ("unlinkat", 3),
        264 => ("renameat", 4),
        265 => ("linkat", 5),
        266 => ("symlinkat", 3),
        267 => ("readlinkat", 4),
        268 => ("fchmodat", 3),
        269 => ("faccessat", 3),
        270 => ("pselect6", 6),
        271 => ("ppoll", 5),
        273 => ("set_robust_list", 2),
        280 => ("utimensat", 4),
        292 => ("dup3", 3),
        293 => ("pipe2", 2),
        302 => ("prlimit64", 4),
        318 => ("getrandom", 3),
        332 => ("statx", 5),
        334 => ("rseq", 4),
        439 => ("faccessat2", 4),
        _ => return None,
    })
}

/// Names of the common errno values.
fn errno_name(errno: i64) -> Option<&'static str> {
    Some(match errno {
        1 => "EPERM",
        2 => "ENOENT",
        3 => "ESRCH",
        4 => "EINTR",
        5 => "EIO",
        6 => "ENXIO",
        7 => "E2BIG",
        8 => "ENOEXEC",
        9 => "EBADF",
        10 => "ECHILD",
        11 => "EAGAIN",
        12 => "ENOMEM",
        13 => "EACCES",
        14 => "EFAULT",
        16 => "EBUSY",
        17 => "EEXIST",
        18 => "EXDEV",
        19 => "ENODEV",
        20 => "ENOTDIR",
        21 => "EISDIR",
        22 => "EINVAL",
        23 => "ENFILE",
        24 => "EMFILE",
        25 => "ENOTTY",
        26 => "ETXTBSY",
        27 => "EFBIG",
        28 => "ENOSPC",
        29 => "ESPIPE",
        30 => "EROFS",
        31 => "EMLINK",
        32 => "EPIPE",
        34 => "ERANGE",
        36 => "ENAMETOOLONG",
        38 => "ENOSYS",
        39 => "ENOTEMPTY",
        40 => "ELOOP",
        _ => return None,
    })
}
