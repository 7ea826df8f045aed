//! Limits and what a process has used: `prlimit64`, `getrlimit`,
//! `setrlimit`, `times`, `getrusage`, `getrandom`, `set_robust_list`
//! (`prctl` has a file of its own).
//!
//! Processor time comes from the kernel's accounting (timer ticks while a
//! thread runs, so 1 ms granularity). The kernel does not tell user time
//! from system time yet: all of it is reported as user time.

use linux_abi::{resource::Rusage, time::Timeval};
use procfs::{clock_ticks, Source};
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
pub fn getrandom(
    urandom: &dyn vfs::Device,
    buffer: u64,
    count: u64,
    flags: u64,
) -> Result<i64, Errno> {
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

/// `times(buf)`: the caller's processor time and its waited-for
/// children's, in clock ticks (`USER_HZ`), written to `buf` unless it is
/// null; returns the clock ticks since boot.
pub fn times(system: &dyn Source, pid: u64, buffer: u64) -> Result<i64, Errno> {
    if buffer != 0 {
        let process = system.process(pid).ok_or(Errno::ESRCH)?;
        let mut record = [0u8; 32];
        // tms_utime, tms_stime, tms_cutime, tms_cstime.
        record[..8].copy_from_slice(&clock_ticks(process.cpu_ns).to_le_bytes());
        record[16..24].copy_from_slice(&clock_ticks(process.children_cpu_ns).to_le_bytes());
        user::write(buffer, &record)?;
    }
    Ok(clock_ticks(system.uptime_ns()) as i64)
}

/// `getrusage(who, usage)`'s `who`.
const RUSAGE_SELF: i32 = 0;
const RUSAGE_CHILDREN: i32 = -1;
const RUSAGE_THREAD: i32 = 1;
/// Bytes of a page, the unit of resident sizes.
const PAGE_BYTES: u64 = 4096;

/// `getrusage(who, usage)` for the caller (`RUSAGE_SELF`), its waited-for
/// children (`RUSAGE_CHILDREN`) or the calling thread (`RUSAGE_THREAD`):
/// processor time, `ru_maxrss` (for the caller its resident size now, a
/// lower bound of its peak; for children the largest any had when it
/// ended) and minor faults; the rest is 0. `EINVAL` for another `who`.
pub fn getrusage(system: &dyn Source, pid: u64, who: u64, usage: u64) -> Result<i64, Errno> {
    let process = system.process(pid).ok_or(Errno::ESRCH)?;
    let (cpu_ns, resident_pages, minor_faults) = match who as i32 {
        RUSAGE_SELF => (process.cpu_ns, process.resident_pages, process.minor_faults),
        RUSAGE_THREAD => (system.caller_thread_cpu_ns(), process.resident_pages, 0),
        RUSAGE_CHILDREN => (
            process.children_cpu_ns,
            process.children_max_resident_pages,
            process.children_minor_faults,
        ),
        _ => return Err(Errno::EINVAL),
    };
    // The processor time counts as user time; ru_maxrss is in kilobytes.
    let record = Rusage {
        utime: Timeval::from_nanoseconds(cpu_ns),
        maxrss: (resident_pages * PAGE_BYTES / 1024) as i64,
        minflt: minor_faults as i64,
        ..Rusage::default()
    };
    user::write(usage, &record.to_bytes())?;
    Ok(0)
}
