//! Who a process is: user and group ids, supplementary groups, process
//! groups and sessions.
//!
//! Every process runs as root until users exist: the `get*id` calls say
//! 0, and the `set*id` calls accept 0 (or -1, "unchanged") and refuse
//! other ids with `EPERM`, because becoming another user would have to
//! change every permission check. Supplementary groups (`getgroups`,
//! `setgroups`) are kept per process, as root may set them; permission
//! checks do not consult them yet. Process groups and sessions
//! (`setpgid`, `getpgid`, `getpgrp`, `setsid`, `getsid`) are kept per
//! process for job control and the tty.

use alloc::vec::Vec;

use vfs::Errno;

use crate::{user, LinuxProcess};

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

/// Most supplementary groups a process may have (`NGROUPS_MAX`).
const MAX_GROUPS: u64 = 65536;

/// `getgroups(size, list)`: the number of supplementary groups, written
/// to `list` unless `size` is 0; `EINVAL` if `size` is negative or too
/// small for them.
pub fn getgroups(process: &LinuxProcess, size: u64, list: u64) -> Result<i64, Errno> {
    let size = size as i32;
    if size < 0 {
        return Err(Errno::EINVAL);
    }
    let groups = process.supplementary_groups();
    if size == 0 {
        return Ok(groups.len() as i64);
    }
    if (size as usize) < groups.len() {
        return Err(Errno::EINVAL);
    }
    let bytes: Vec<u8> = groups
        .iter()
        .flat_map(|group| group.to_le_bytes())
        .collect();
    user::write(list, &bytes)?;
    Ok(groups.len() as i64)
}

/// `setgroups(size, list)`: the caller's supplementary groups become the
/// `size` ids at `list` (every process is root, which may); `EINVAL` for
/// a negative size or more than `NGROUPS_MAX`.
pub fn setgroups(process: &LinuxProcess, size: u64, list: u64) -> Result<i64, Errno> {
    let size = size as i32;
    if size < 0 || size as u64 > MAX_GROUPS {
        return Err(Errno::EINVAL);
    }
    let mut bytes = alloc::vec![0u8; size as usize * 4];
    if size > 0 {
        user::read(list, &mut bytes)?;
    }
    let mut groups: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|group| u32::from_le_bytes([group[0], group[1], group[2], group[3]]))
        .collect();
    // Linux keeps them sorted (`groups_sort`), and getgroups shows that.
    groups.sort_unstable();
    *process.supplementary.lock() = groups;
    Ok(0)
}
