//! Waiting for descriptors: `poll` and `ppoll`.
//!
//! Each descriptor's open file says whether it is ready (`readiness`:
//! regular files always, pipes and the terminal for themselves). With
//! nothing ready the call waits, looking again every millisecond, until
//! something is, the timeout passes, or the caller is interrupted.

use alloc::vec::Vec;

use vfs::Errno;

use crate::{user, LinuxProcess};

const POLLIN: u16 = 0x1;
const POLLPRI: u16 = 0x2;
const POLLOUT: u16 = 0x4;
const POLLERR: u16 = 0x8;
const POLLHUP: u16 = 0x10;
const POLLNVAL: u16 = 0x20;
/// `POLLRDNORM` and `POLLWRNORM` (what `select` asks, as Linux maps it).
const POLLRDNORM: u16 = 0x40;
const POLLWRNORM: u16 = 0x100;
/// Most descriptors one call may watch (`RLIMIT_NOFILE`).
const MAX_WATCHED: u64 = crate::MAX_DESCRIPTORS as u64;

/// The events ready for `fd` among `wanted` (and the ones always
/// reported: errors, hang-up, a bad descriptor).
fn ready(process: &LinuxProcess, fd: i32, wanted: u16) -> u16 {
    if fd < 0 {
        return 0;
    }
    let Ok(file) = process.fds.get(i64::from(fd)) else {
        return POLLNVAL;
    };
    let readiness = file.readiness();
    let mut events = 0;
    if readiness.readable {
        events |= POLLIN | POLLRDNORM;
    }
    if readiness.writable {
        events |= POLLOUT | POLLWRNORM;
    }
    if readiness.hung_up {
        events |= POLLHUP;
    }
    events & (wanted | POLLERR | POLLHUP) & !POLLPRI
}

/// `poll(fds, nfds, timeout_ms)` with the timeout in milliseconds (`None`:
/// forever).
pub fn poll(process: &LinuxProcess, fds: u64, count: u64, timeout_ms: Option<u64>) -> Result<i64, Errno> {
    if count > MAX_WATCHED {
        return Err(Errno::EINVAL);
    }
    let mut entries: Vec<[u8; 8]> = Vec::with_capacity(count as usize);
    for index in 0..count {
        let mut entry = [0u8; 8];
        user::read(fds + index * 8, &mut entry)?;
        entries.push(entry);
    }
    let mut round = 0;
    let deadline = timeout_ms.map(|ms| hal::timer::uptime_ns().saturating_add(ms.saturating_mul(1_000_000)));
    loop {
        let mut ready_count = 0;
        for entry in &mut entries {
            let fd = i32::from_le_bytes([entry[0], entry[1], entry[2], entry[3]]);
            let wanted = u16::from_le_bytes([entry[4], entry[5]]);
            let revents = ready(process, fd, wanted);
            entry[6..8].copy_from_slice(&revents.to_le_bytes());
            if revents != 0 {
                ready_count += 1;
            }
        }
        let expired = deadline.is_some_and(|deadline| hal::timer::uptime_ns() >= deadline);
        if ready_count > 0 || expired {
            for (index, entry) in entries.iter().enumerate() {
                user::write(fds + index as u64 * 8 + 6, &entry[6..8])?;
            }
            return Ok(ready_count);
        }
        crate::pipe::wait_a_little(&mut round)?;
    }
}

/// A `struct timespec` argument as milliseconds (rounded up); `None` for a
/// null pointer (forever). `EINVAL` for a negative or malformed one.
pub fn timespec_ms(address: u64) -> Result<Option<u64>, Errno> {
    if address == 0 {
        return Ok(None);
    }
    let seconds = user::read_u64(address)? as i64;
    let nanoseconds = user::read_u64(address + 8)? as i64;
    if seconds < 0 || !(0..1_000_000_000).contains(&nanoseconds) {
        return Err(Errno::EINVAL);
    }
    Ok(Some((seconds as u64).saturating_mul(1000) + (nanoseconds as u64).div_ceil(1_000_000)))
}

/// `poll`'s `int timeout`: negative is forever.
pub fn timeout_argument(timeout: u64) -> Option<u64> {
    let timeout = timeout as i32;
    (timeout >= 0).then_some(timeout as u64)
}
