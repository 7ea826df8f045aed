//! Who a process is: user and group ids, process groups and sessions.
//!
//! Every process runs as root until users exist: the `get*id` calls say
//! 0, and the `set*id` calls accept 0 (or -1, "unchanged") and refuse
//! other ids with `EPERM`, because becoming another user would have to
//! change every permission check. Process groups and sessions
//! (`setpgid`, `getpgid`, `getpgrp`, `setsid`, `getsid`) are kept per
//! process for job control and the tty.

use vfs::Errno;

use crate::LinuxProcess;

/// `getuid`, `geteuid`, `getgid`, `getegid`: root.
pub fn root_id() -> Result<i64, Errno> {
    Ok(0)
}

/// `setuid`, `setgid` and friends: root may become root.
pub fn set_id(id: u64) -> Result<i64, Errno> {
    if id as u32 == 0 || id as i32 == -1 {
        Ok(0)
    } else {
        Err(Errno::EPERM)
    }
}

/// `getresuid(r, e, s)` / `getresgid`: all zero.
pub fn getres_ids(real: u64, effective: u64, saved: u64) -> Result<i64, Errno> {
    for address in [real, effective, saved] {
        crate::user::write(address, &0u32.to_le_bytes())?;
    }
    Ok(0)
}

/// `setpgid(pid, pgid)` for the caller (`pid` 0 or its own id); a child's
/// group is set through the child's own state (see `Personality`).
pub fn setpgid(process: &LinuxProcess, own_pid: u64, pgid: u64) -> Result<i64, Errno> {
    let pgid = if pgid == 0 { own_pid } else { pgid };
    if (pgid as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    process.groups.lock().0 = pgid;
    Ok(0)
}

/// `setsid()`: a new session and group led by the caller; `EPERM` if it
/// already leads a group.
pub fn setsid(process: &LinuxProcess, own_pid: u64) -> Result<i64, Errno> {
    let mut groups = process.groups.lock();
    if groups.0 == own_pid {
        return Err(Errno::EPERM);
    }
    *groups = (own_pid, own_pid);
    Ok(own_pid as i64)
}
