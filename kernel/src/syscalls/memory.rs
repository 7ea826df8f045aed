//! Memory: `brk`, anonymous `mmap`, `munmap`, `mprotect`, on the calling
//! process's address map (`vm`): regions whose pages are mapped on first
//! touch.

use hal::address_space::UserProtection;
use vm::VmError;

use super::errno;
use crate::process;

/// `mmap` flags.
mod flag {
    /// Changes are shared with other mappings of the object.
    pub const MAP_SHARED: u64 = 0x01;
    /// Place exactly at the address given, replacing what was there.
    pub const MAP_FIXED: u64 = 0x10;
    /// Not backed by a file: zero-filled.
    pub const MAP_ANONYMOUS: u64 = 0x20;
    /// Like `MAP_FIXED`, but fail rather than replace.
    pub const MAP_FIXED_NOREPLACE: u64 = 0x10_0000;
}

/// `PROT_READ`, `PROT_WRITE`, `PROT_EXEC`.
const PROT_READ: u64 = 1;
const PROT_WRITE: u64 = 2;
const PROT_EXEC: u64 = 4;

/// The protection `prot` asks for; writable and executable at once is
/// refused (W^X, `EACCES`), as are unknown bits (`EINVAL`).
fn protection(prot: u64) -> Result<UserProtection, i64> {
    if prot & !(PROT_READ | PROT_WRITE | PROT_EXEC) != 0 {
        return Err(-errno::EINVAL);
    }
    Ok(match (prot & PROT_WRITE != 0, prot & PROT_EXEC != 0, prot & PROT_READ != 0) {
        (true, true, _) => return Err(-errno::EACCES),
        (true, false, _) => UserProtection::ReadWrite,
        (false, true, _) => UserProtection::ReadExecute,
        (false, false, true) => UserProtection::Read,
        (false, false, false) => UserProtection::None,
    })
}

fn vm_errno(error: VmError) -> i64 {
    match error {
        VmError::BadRange => -errno::EINVAL,
        VmError::NoMemory => -errno::ENOMEM,
        VmError::Overlaps => -errno::EEXIST,
        VmError::BelowMinimum => -errno::EPERM,
    }
}

/// Runs `f` on the calling thread's process's address map.
fn with_memory(strand: u64, f: impl FnOnce(&mut vm::AddressMap) -> i64) -> i64 {
    process::of_strand(strand)
        .and_then(|process| process.with_memory(f))
        .unwrap_or(-errno::ESRCH)
}

/// `brk(address)`: the new break, or the old one if it cannot move.
pub(super) fn brk(strand: u64, address: u64) -> i64 {
    with_memory(strand, |memory| memory.set_break(address) as i64)
}

/// `mmap(address, len, prot, flags, fd, offset)`, anonymous and private
/// only (file and shared mappings come with the personality's files).
pub(super) fn mmap(strand: u64, address: u64, len: u64, prot: u64, flags: u64) -> i64 {
    if flags & flag::MAP_ANONYMOUS == 0 || flags & flag::MAP_SHARED != 0 {
        return -errno::ENODEV;
    }
    let protection = match protection(prot) {
        Ok(protection) => protection,
        Err(error) => return error,
    };
    let no_replace = flags & flag::MAP_FIXED_NOREPLACE != 0;
    let fixed = flags & flag::MAP_FIXED != 0 || no_replace;
    with_memory(strand, |memory| {
        if no_replace && memory.region_at(address).is_some() {
            return -errno::EEXIST;
        }
        match memory.map_anonymous(address, len, protection, fixed) {
            Ok(start) => start as i64,
            Err(error) => vm_errno(error),
        }
    })
}

/// `munmap(address, len)`.
pub(super) fn munmap(strand: u64, address: u64, len: u64) -> i64 {
    with_memory(strand, |memory| match memory.unmap(address, len) {
        Ok(()) => 0,
        Err(error) => vm_errno(error),
    })
}

/// `mprotect(address, len, prot)`.
pub(super) fn mprotect(strand: u64, address: u64, len: u64, prot: u64) -> i64 {
    let protection = match protection(prot) {
        Ok(protection) => protection,
        Err(error) => return error,
    };
    with_memory(strand, |memory| match memory.protect(address, len, protection) {
        Ok(()) => 0,
        Err(error) => vm_errno(error),
    })
}

/// `mincore(address, len, vec)`: one byte per page, 1 if the page is
/// resident (mapped). `ENOMEM` if a page is in no region.
pub(super) fn mincore(strand: u64, address: u64, len: u64, vector: u64) -> i64 {
    /// Pages answered per copy to the caller.
    const CHUNK_PAGES: u64 = 512;
    if address % 4096 != 0 {
        return -errno::EINVAL;
    }
    let pages = len.div_ceil(4096);
    let mut done = 0;
    while done < pages {
        let count = (pages - done).min(CHUNK_PAGES);
        let mut bytes = [0u8; CHUNK_PAGES as usize];
        let (Some(start), Some(at)) = (address.checked_add(done * 4096), vector.checked_add(done))
        else {
            return -errno::ENOMEM;
        };
        let answer = with_memory(strand, |memory| {
            match memory.residency(start, count * 4096, &mut bytes[..count as usize]) {
                Ok(()) => 0,
                Err(error) => vm_errno(error),
            }
        });
        if answer != 0 {
            return answer;
        }
        if hal::user::copy_to_user(at, &bytes[..count as usize]).is_err() {
            return -errno::EFAULT;
        }
        done += count;
    }
    0
}
