//! Linux x86_64 system-call numbers and flag values the personality's
//! table uses (`arch/x86/entry/syscalls/syscall_64.tbl`).

#![allow(missing_docs)] // Each constant is the Linux name of its number.

pub const READ: u64 = 0;
pub const GETPID: u64 = 39;
pub const WRITE: u64 = 1;
pub const OPEN: u64 = 2;
pub const CLOSE: u64 = 3;
pub const STAT: u64 = 4;
pub const FSTAT: u64 = 5;
pub const LSTAT: u64 = 6;
pub const LSEEK: u64 = 8;
pub const IOCTL: u64 = 16;
pub const PREAD64: u64 = 17;
pub const PWRITE64: u64 = 18;
pub const READV: u64 = 19;
pub const WRITEV: u64 = 20;
pub const ACCESS: u64 = 21;
pub const DUP: u64 = 32;
pub const DUP2: u64 = 33;
pub const UNAME: u64 = 63;
pub const FCNTL: u64 = 72;
pub const TRUNCATE: u64 = 76;
pub const FTRUNCATE: u64 = 77;
pub const GETCWD: u64 = 79;
pub const CHDIR: u64 = 80;
pub const FCHDIR: u64 = 81;
pub const RENAME: u64 = 82;
pub const MKDIR: u64 = 83;
pub const RMDIR: u64 = 84;
pub const CREAT: u64 = 85;
pub const LINK: u64 = 86;
pub const UNLINK: u64 = 87;
pub const SYMLINK: u64 = 88;
pub const READLINK: u64 = 89;
pub const CHMOD: u64 = 90;
pub const FCHMOD: u64 = 91;
pub const UMASK: u64 = 95;
pub const GETDENTS64: u64 = 217;
pub const OPENAT: u64 = 257;
pub const MKDIRAT: u64 = 258;
pub const NEWFSTATAT: u64 = 262;
pub const UNLINKAT: u64 = 263;
pub const RENAMEAT: u64 = 264;
pub const LINKAT: u64 = 265;
pub const SYMLINKAT: u64 = 266;
pub const READLINKAT: u64 = 267;
pub const FCHMODAT: u64 = 268;
pub const FACCESSAT: u64 = 269;
pub const DUP3: u64 = 292;
pub const RENAMEAT2: u64 = 316;
pub const STATX: u64 = 332;
pub const FACCESSAT2: u64 = 439;
pub const PIPE: u64 = 22;
pub const POLL: u64 = 7;
pub const PPOLL: u64 = 271;
pub const PIPE2: u64 = 293;
pub const RT_SIGACTION: u64 = 13;
pub const RT_SIGPROCMASK: u64 = 14;
pub const SIGALTSTACK: u64 = 131;
pub const RT_SIGPENDING: u64 = 127;
pub const RT_SIGSUSPEND: u64 = 130;
pub const PAUSE: u64 = 34;
pub const RT_SIGRETURN: u64 = 15;
pub const WAIT4: u64 = 61;
pub const SENDFILE: u64 = 40;
pub const WAITID: u64 = 247;
pub const GETUID: u64 = 102;
pub const GETGID: u64 = 104;
pub const SETUID: u64 = 105;
pub const SETGID: u64 = 106;
pub const GETEUID: u64 = 107;
pub const GETEGID: u64 = 108;
pub const SETPGID: u64 = 109;
pub const GETPGRP: u64 = 111;
pub const SETSID: u64 = 112;
pub const GETRESUID: u64 = 118;
pub const GETRESGID: u64 = 120;
pub const GETPGID: u64 = 121;
pub const GETSID: u64 = 124;
pub const GETRLIMIT: u64 = 97;
pub const SETRLIMIT: u64 = 160;
pub const PRLIMIT64: u64 = 302;
pub const GETRANDOM: u64 = 318;
pub const SET_ROBUST_LIST: u64 = 273;
pub const PRCTL: u64 = 157;
pub const SELECT: u64 = 23;
pub const PSELECT6: u64 = 270;
pub const GETRUSAGE: u64 = 98;
pub const SYSINFO: u64 = 99;
pub const TIMES: u64 = 100;
pub const GETGROUPS: u64 = 115;
pub const SETGROUPS: u64 = 116;
pub const CHOWN: u64 = 92;
pub const FCHOWN: u64 = 93;
pub const LCHOWN: u64 = 94;
pub const FCHOWNAT: u64 = 260;
pub const UTIME: u64 = 132;
pub const UTIMES: u64 = 235;
pub const FUTIMESAT: u64 = 261;
pub const UTIMENSAT: u64 = 280;
// Dynamically linked programs and bash (docs/design/0007).
pub const STATFS: u64 = 137;
pub const FSTATFS: u64 = 138;
pub const SETXATTR: u64 = 188;
pub const LSETXATTR: u64 = 189;
pub const FSETXATTR: u64 = 190;
pub const GETXATTR: u64 = 191;
pub const LGETXATTR: u64 = 192;
pub const FGETXATTR: u64 = 193;
pub const LISTXATTR: u64 = 194;
pub const LLISTXATTR: u64 = 195;
pub const FLISTXATTR: u64 = 196;
pub const REMOVEXATTR: u64 = 197;
pub const LREMOVEXATTR: u64 = 198;
pub const FREMOVEXATTR: u64 = 199;
pub const FADVISE64: u64 = 221;
pub const SCHED_GETAFFINITY: u64 = 204;
pub const SOCKET: u64 = 41;
pub const GETSOCKNAME: u64 = 51;
pub const GETPEERNAME: u64 = 52;

/// `AT_FDCWD`: "relative to the current directory" (-100 as a register).
pub const AT_FDCWD: u64 = -100i64 as u64;
/// `AT_SYMLINK_NOFOLLOW`.
pub const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
/// `AT_REMOVEDIR` (`unlinkat`).
pub const AT_REMOVEDIR: u64 = 0x200;
/// `AT_SYMLINK_FOLLOW` (`linkat`).
pub const AT_SYMLINK_FOLLOW: u64 = 0x400;
/// `AT_EACCESS` (`faccessat2`).
pub const AT_EACCESS: u64 = 0x200;
/// `AT_EMPTY_PATH`: the descriptor itself when the path is empty.
pub const AT_EMPTY_PATH: u64 = 0x1000;
/// `creat(path, mode)` is `open(path, O_CREAT|O_WRONLY|O_TRUNC, mode)`.
pub const CREAT_FLAGS: u64 = 0o1101;
