//! Limits and system facts: `prlimit64`, `getrlimit`, `setrlimit`,
//! `getrandom`, `set_robust_list`, `prctl`.

use vfs::Errno;

use crate::{user, LinuxProcess};

/// `RLIM_INFINITY`.
const INFINITY: u64 = u64::MAX;
/// Resources: `RLIMIT_STACK`, `RLIMIT_NOFILE`, ..., up to `RLIMIT_RTTIME`.
const RESOURCES: u64 = 16;
const RLIMIT_STACK: u64 = 3;
const RLIMIT_NOFILE: u64 = 7;

/// The (soft, hard) limit of `resource` as Spindle enforces it.
fn limit(resource: u64) -> (u64, u64) {
    match resource {
        // 8 MiB: the stack region the loader makes.
        RLIMIT_STACK => (8 << 20, 8 << 20),
        RLIMIT_NOFILE => (crate::MAX_DESCRIPTORS as u64, crate::MAX_DESCRIPTORS as u64),
        _ => (INFINITY, INFINITY),
    }
}

/// `prlimit64(pid, resource, new, old)` for the caller: the limits in
/// force are reported; raising one above them is `EPERM`.
pub fn prlimit64(resource: u64, new: u64, old: u64) -> Result<i64, Errno> {
    if resource >= RESOURCES {
        return Err(Errno::EINVAL);
    }
    let (soft, hard) = limit(resource);
    if new != 0 {
        let wanted_soft = user::read_u64(new)?;
        let wanted_hard = user::read_u64(new + 8)?;
        if wanted_soft > wanted_hard {
            return Err(Errno::EINVAL);
        }
        if wanted_hard > hard {
            return Err(Errno::EPERM);
        }
        // A lower limit is accepted and not enforced yet: the program
        // keeps running under the limit in force.
    }
    if old != 0 {
        let mut pair = [0u8; 16];
        pair[..8].copy_from_slice(&soft.to_le_bytes());
        pair[8..].copy_from_slice(&hard.to_le_bytes());
        user::write(old, &pair)?;
    }
    Ok(0)
}

/// `getrandom(buf, count, flags)`: bytes from `/dev/urandom`'s generator.
pub fn getrandom(urandom: &dyn vfs::Device, buffer: u64, count: u64, flags: u64) -> Result<i64, Errno> {
    // GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE.
    if flags & !0x7 != 0 {
        return Err(Errno::EINVAL);
    }
    let count = (count as usize).min(1 << 20);
    let mut bytes = alloc::vec![0u8; count.min(4096)];
    let mut done = 0;
    while done < count {
        let chunk = (count - done).min(bytes.len());
        urandom.read(0, &mut bytes[..chunk], true)?;
        user::write(buffer + done as u64, &bytes[..chunk])?;
        done += chunk;
    }
    Ok(done as i64)
}

/// `set_robust_list(head, len)`: recorded for the thread (the list is
/// walked at exit by futex owners; musl and glibc register one).
pub fn set_robust_list(process: &LinuxProcess, head: u64, length: u64) -> Result<i64, Errno> {
    if length != 24 {
        return Err(Errno::EINVAL);
    }
    *process.robust_list.lock() = head;
    Ok(0)
}

/// `prctl(option, ...)`: `PR_SET_NAME`/`PR_GET_NAME` (the thread's name,
/// 16 bytes), `PR_GET_DUMPABLE`/`PR_SET_DUMPABLE`; others `EINVAL`.
pub fn prctl(process: &LinuxProcess, option: u64, argument: u64) -> Result<i64, Errno> {
    const PR_SET_NAME: u64 = 15;
    const PR_GET_NAME: u64 = 16;
    const PR_GET_DUMPABLE: u64 = 3;
    const PR_SET_DUMPABLE: u64 = 4;
    match option {
        PR_SET_NAME => {
            let name = user::read_c_string(argument, 4096)?;
            let mut stored = [0u8; 16];
            let length = name.len().min(15);
            stored[..length].copy_from_slice(&name[..length]);
            *process.name.lock() = stored;
            Ok(0)
        }
        PR_GET_NAME => {
            let name = *process.name.lock();
            user::write(argument, &name)?;
            Ok(0)
        }
        PR_GET_DUMPABLE => Ok(1),
        PR_SET_DUMPABLE if argument <= 1 => Ok(0),
        _ => Err(Errno::EINVAL),
    }
}
