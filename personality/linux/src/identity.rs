//! Who a process is: user and group ids, supplementary groups and
//! capabilities (the `get*id`/`set*id` families, `getgroups`,
//! `setgroups`, `capget`, `capset`), process groups and sessions.
//!
//! The rules for changing ids and capabilities are in
//! [`crate::credentials`]; this file reads the arguments, applies the
//! rules to the calling process and keeps its file-system view (the ids
//! that path lookups check permissions for) in step. Process groups and
//! sessions (`setpgid`, `getpgid`, `getpgrp`, `setsid`, `getsid`) are
//! kept per process for job control and the tty.

use alloc::vec::Vec;

use vfs::Errno;

use crate::{
    credentials::{Capabilities, Credentials, MAX_GROUPS},
    user, LinuxProcess,
};

/// Which id a `get*id` call reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// `getuid`.
    RealUser,
    /// `geteuid`.
    EffectiveUser,
    /// `getgid`.
    RealGroup,
    /// `getegid`.
    EffectiveGroup,
}

/// `getuid`, `geteuid`, `getgid`, `getegid`.
pub fn get_id(process: &LinuxProcess, which: Which) -> Result<i64, Errno> {
    let credentials = process.credentials();
    Ok(i64::from(match which {
        Which::RealUser => credentials.users.real,
        Which::EffectiveUser => credentials.users.effective,
        Which::RealGroup => credentials.groups.real,
        Which::EffectiveGroup => credentials.groups.effective,
    }))
}

/// An id argument: the low 32 bits of the register, as Linux reads a
/// `uid_t`.
fn id(argument: u64) -> u32 {
    argument as u32
}

/// A change of the calling process's ids, as the `set*id` calls make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdChange {
    /// `setuid(id)`.
    User(u64),
    /// `setreuid(real, effective)`.
    RealEffectiveUser(u64, u64),
    /// `setresuid(real, effective, saved)`.
    AllUsers(u64, u64, u64),
    /// `setgid(id)`.
    Group(u64),
    /// `setregid(real, effective)`.
    RealEffectiveGroup(u64, u64),
    /// `setresgid(real, effective, saved)`.
    AllGroups(u64, u64, u64),
}

/// `setuid`, `setreuid`, `setresuid` and their group twins: 0, or
/// `EPERM` when an unprivileged process asks for an id it does not hold,
/// `EINVAL` for `setuid(-1)`.
pub fn set_ids(process: &LinuxProcess, change: IdChange) -> Result<i64, Errno> {
    process.change_credentials(|credentials| match change {
        IdChange::User(uid) => credentials.set_user(id(uid)),
        IdChange::RealEffectiveUser(real, effective) => {
            credentials.set_real_effective_user(id(real), id(effective))
        }
        IdChange::AllUsers(real, effective, saved) => {
            credentials.set_all_users(id(real), id(effective), id(saved))
        }
        IdChange::Group(gid) => credentials.set_group(id(gid)),
        IdChange::RealEffectiveGroup(real, effective) => {
            credentials.set_real_effective_group(id(real), id(effective))
        }
        IdChange::AllGroups(real, effective, saved) => {
            credentials.set_all_groups(id(real), id(effective), id(saved))
        }
    })?;
    Ok(0)
}

/// `setfsuid(uid)` (`group` false) or `setfsgid(gid)`: the previous
/// file-system id, whether or not the change was allowed.
pub fn set_file_system_id(process: &LinuxProcess, new: u64, group: bool) -> Result<i64, Errno> {
    let mut previous = 0;
    process.change_credentials(|credentials| {
        previous = if group {
            credentials.set_file_system_group(id(new))
        } else {
            credentials.set_file_system_user(id(new))
        };
        Ok(())
    })?;
    Ok(i64::from(previous))
}

/// `getresuid(real, effective, saved)` (`group` false) or `getresgid`.
pub fn getres_ids(process: &LinuxProcess, addresses: [u64; 3], group: bool) -> Result<i64, Errno> {
    let credentials = process.credentials();
    let ids = if group {
        credentials.groups
    } else {
        credentials.users
    };
    for (address, value) in addresses
        .into_iter()
        .zip([ids.real, ids.effective, ids.saved])
    {
        user::write(address, &value.to_le_bytes())?;
    }
    Ok(0)
}

/// `_LINUX_CAPABILITY_VERSION_1`: one 32-bit word per set.
const CAPABILITY_VERSION_1: u32 = 0x1998_0330;
/// `_LINUX_CAPABILITY_VERSION_2` (deprecated, read as version 3).
const CAPABILITY_VERSION_2: u32 = 0x2007_1026;
/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set; what
/// Linux reports as its preferred version.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;
/// One `__user_cap_data_struct`: effective, permitted, inheritable.
const CAPABILITY_DATA_BYTES: usize = 12;

/// Reads `capget`/`capset`'s header: how many data words its version
/// uses, and the pid. An unknown version is `EINVAL`, after the header
/// is given the preferred version (so a program can ask which it is).
fn capability_header(header: u64) -> Result<(usize, i32), Errno> {
    let mut bytes = [0u8; 8];
    user::read(header, &mut bytes)?;
    let version = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let words = match version {
        CAPABILITY_VERSION_1 => 1,
        CAPABILITY_VERSION_2 | CAPABILITY_VERSION_3 => 2,
        _ => {
            user::write(header, &CAPABILITY_VERSION_3.to_le_bytes())?;
            return Err(Errno::EINVAL);
        }
    };
    let pid = i32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
    Ok((words, pid))
}

/// `capget(header, data)`: the capability sets of process `header.pid`
/// (0: the caller) found by `find`. A null `data` only asks for the
/// version: 0 even when the version was unknown.
pub fn capget(
    header: u64,
    data: u64,
    find: impl FnOnce(u64) -> Option<alloc::sync::Arc<LinuxProcess>>,
) -> Result<i64, Errno> {
    let (words, pid) = match capability_header(header) {
        Err(Errno::EINVAL) if data == 0 => return Ok(0),
        other => other?,
    };
    if data == 0 {
        return Ok(0);
    }
    if pid < 0 {
        return Err(Errno::EINVAL);
    }
    let process = find(pid as u64).ok_or(Errno::ESRCH)?;
    let sets = process.credentials().capabilities;
    let mut bytes = Vec::with_capacity(words * CAPABILITY_DATA_BYTES);
    for word in 0..words {
        for set in [sets.effective, sets.permitted, sets.inheritable] {
            bytes.extend_from_slice(&((set >> (32 * word)) as u32).to_le_bytes());
        }
    }
    user::write(data, &bytes)?;
    Ok(0)
}

/// `capset(header, data)` for the caller (`header.pid` 0 or its own
/// `pid`, else `EPERM`): the new sets, if [`Credentials::set_capabilities`]
/// allows them.
pub fn capset(process: &LinuxProcess, own_pid: u64, header: u64, data: u64) -> Result<i64, Errno> {
    let (words, pid) = capability_header(header)?;
    if pid != 0 && pid as i64 != own_pid as i64 {
        return Err(Errno::EPERM);
    }
    let mut bytes = alloc::vec![0u8; words * CAPABILITY_DATA_BYTES];
    user::read(data, &mut bytes)?;
    let mut sets = [0u64; 3];
    for (word, chunk) in bytes.chunks_exact(CAPABILITY_DATA_BYTES).enumerate() {
        for (set, value) in sets.iter_mut().zip(chunk.chunks_exact(4)) {
            let value = u32::from_le_bytes([value[0], value[1], value[2], value[3]]);
            *set |= u64::from(value) << (32 * word);
        }
    }
    let [effective, permitted, inheritable] = sets;
    process.change_credentials(|credentials| {
        credentials.set_capabilities(Capabilities {
            effective,
            permitted,
            inheritable,
        })
    })?;
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

/// `getgroups(size, list)`: the number of supplementary groups, written
/// to `list` unless `size` is 0; `EINVAL` if `size` is negative or too
/// small for them.
pub fn getgroups(process: &LinuxProcess, size: u64, list: u64) -> Result<i64, Errno> {
    let size = size as i32;
    if size < 0 {
        return Err(Errno::EINVAL);
    }
    let groups = process.credentials().supplementary;
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
/// `size` ids at `list`; `EINVAL` for a negative size or more than
/// `NGROUPS_MAX`, `EPERM` without `CAP_SETGID`.
pub fn setgroups(process: &LinuxProcess, size: u64, list: u64) -> Result<i64, Errno> {
    let size = size as i32;
    if size < 0 || size as usize > MAX_GROUPS {
        return Err(Errno::EINVAL);
    }
    let mut bytes = alloc::vec![0u8; size as usize * 4];
    if size > 0 {
        user::read(list, &mut bytes)?;
    }
    let groups: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|group| u32::from_le_bytes([group[0], group[1], group[2], group[3]]))
        .collect();
    process.change_credentials(|credentials| credentials.set_supplementary(groups))?;
    Ok(0)
}

/// Whether `sender` may signal `target` (`kill_ok_by_cred`): with
/// `CAP_KILL`, or when the sender's real or effective user is the
/// target's real or saved user.
pub fn may_signal(sender: &Credentials, target: &Credentials) -> bool {
    sender.capable(crate::credentials::CAP_KILL)
        || [sender.users.real, sender.users.effective]
            .iter()
            .any(|&id| id == target.users.real || id == target.users.saved)
}
