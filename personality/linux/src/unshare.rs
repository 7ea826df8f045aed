//! `unshare(flags)` (unshare(2)): the caller stops sharing parts of its
//! context with other processes, or gets new namespaces.
//!
//! What a process may share: `clone` makes every new process with its
//! own descriptor table, root, current directory and umask, signal
//! handlers and address space (threads share them as one process), so
//! unsharing those is a check and nothing more. Of the namespaces there
//! is one mount namespace, and as no system call changes the mount
//! table, a new one would be a copy that stays equal to it: a
//! privileged `CLONE_NEWNS` succeeds. The others are `EINVAL`, as on a
//! Linux built without them.

use linux_abi::clone::*;
use vfs::Errno;

use crate::{credentials::CAP_SYS_ADMIN, LinuxProcess};

/// The namespaces `unshare` could make, which all need `CAP_SYS_ADMIN`
/// (a user namespace does not, and is not built here either).
const PRIVILEGED_NAMESPACES: u64 = CLONE_NEWNS
    | CLONE_NEWUTS
    | CLONE_NEWIPC
    | CLONE_NEWNET
    | CLONE_NEWPID
    | CLONE_NEWCGROUP
    | CLONE_NEWTIME;

/// The namespaces Spindle is built without.
const ABSENT_NAMESPACES: u64 = (PRIVILEGED_NAMESPACES | CLONE_NEWUSER) & !CLONE_NEWNS;

/// `unshare(flags)` by a process of `threads` threads, in Linux's order
/// (`ksys_unshare`): `EINVAL` for an unknown flag; the flags each
/// implies added; `EINVAL` for a thread group, signal handlers or an
/// address space to unshare while other threads share them; `EPERM` for
/// namespaces without `CAP_SYS_ADMIN`; `EINVAL` for a namespace not
/// built.
pub fn unshare(process: &LinuxProcess, threads: u64, flags: u64) -> Result<i64, Errno> {
    let mut flags = u64::from(flags as u32);
    if flags & !UNSHARE_FLAGS != 0 {
        return Err(Errno::EINVAL);
    }
    // What each implies (`ksys_unshare`).
    if flags & CLONE_NEWUSER != 0 {
        flags |= CLONE_THREAD | CLONE_FS;
    }
    if flags & CLONE_VM != 0 {
        flags |= CLONE_SIGHAND;
    }
    if flags & CLONE_SIGHAND != 0 {
        flags |= CLONE_THREAD;
    }
    if flags & CLONE_NEWNS != 0 {
        flags |= CLONE_FS;
    }
    // A thread group cannot leave itself (`check_unshare_flags`).
    if flags & (CLONE_THREAD | CLONE_SIGHAND | CLONE_VM) != 0 && threads > 1 {
        return Err(Errno::EINVAL);
    }
    if flags & PRIVILEGED_NAMESPACES != 0 && !process.credentials().capable(CAP_SYS_ADMIN) {
        return Err(Errno::EPERM);
    }
    if flags & ABSENT_NAMESPACES != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(0)
}
