//! `clone` and `unshare` flags that say what a new process shares or
//! gets anew (clone(2), unshare(2), `include/uapi/linux/sched.h`).

/// Share the address space.
pub const CLONE_VM: u64 = 0x100;
/// Share the root, current directory and umask.
pub const CLONE_FS: u64 = 0x200;
/// Share the descriptor table.
pub const CLONE_FILES: u64 = 0x400;
/// Share the signal handlers.
pub const CLONE_SIGHAND: u64 = 0x800;
/// Write a process descriptor for the child where `CLONE_PARENT_SETTID`
/// would write its id.
pub const CLONE_PIDFD: u64 = 0x1000;
/// The parent waits until the child calls `execve` or ends.
pub const CLONE_VFORK: u64 = 0x4000;
/// Ignored since Linux 2.6.2, refused with `CLONE_PIDFD`.
pub const CLONE_DETACHED: u64 = 0x40_0000;
/// Be a thread of the caller's process.
pub const CLONE_THREAD: u64 = 0x1_0000;
/// Set the new thread's FS base (TLS) to the fifth argument.
pub const CLONE_SETTLS: u64 = 0x8_0000;
/// Write the new thread's id to the third argument (in the parent).
pub const CLONE_PARENT_SETTID: u64 = 0x10_0000;
/// Clear and wake the fourth argument when the thread ends.
pub const CLONE_CHILD_CLEARTID: u64 = 0x20_0000;
/// Write the new thread's id to the fourth argument (in the child).
pub const CLONE_CHILD_SETTID: u64 = 0x100_0000;
/// A new mount namespace.
pub const CLONE_NEWNS: u64 = 0x2_0000;
/// Share System V semaphore undo lists.
pub const CLONE_SYSVSEM: u64 = 0x4_0000;
/// A new time namespace.
pub const CLONE_NEWTIME: u64 = 0x80;
/// A new cgroup namespace.
pub const CLONE_NEWCGROUP: u64 = 0x0200_0000;
/// A new UTS (host and domain name) namespace.
pub const CLONE_NEWUTS: u64 = 0x0400_0000;
/// A new System V IPC namespace.
pub const CLONE_NEWIPC: u64 = 0x0800_0000;
/// A new user namespace.
pub const CLONE_NEWUSER: u64 = 0x1000_0000;
/// A new process id namespace.
pub const CLONE_NEWPID: u64 = 0x2000_0000;
/// A new network namespace.
pub const CLONE_NEWNET: u64 = 0x4000_0000;

/// The flags `unshare` knows (`ksys_unshare`'s check): any other bit is
/// `EINVAL`.
pub const UNSHARE_FLAGS: u64 = CLONE_THREAD
    | CLONE_FS
    | CLONE_NEWNS
    | CLONE_SIGHAND
    | CLONE_VM
    | CLONE_FILES
    | CLONE_SYSVSEM
    | CLONE_NEWUTS
    | CLONE_NEWIPC
    | CLONE_NEWNET
    | CLONE_NEWUSER
    | CLONE_NEWPID
    | CLONE_NEWCGROUP
    | CLONE_NEWTIME;
