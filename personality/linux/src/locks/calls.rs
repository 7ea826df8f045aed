//! The lock calls' arguments and errors: `fcntl(fd, F_GETLK | F_SETLK |
//! F_SETLKW | F_OFD_GETLK | F_OFD_SETLK | F_OFD_SETLKW, struct flock *)`
//! and `flock(fd, operation)`, checked in Linux's order (`fcntl_getlk`,
//! `fcntl_setlk`, `flock_to_posix_lock`, `SYSCALL_DEFINE2(flock)`).

use alloc::sync::Arc;

use linux_abi::lock::{
    Flock, F_GETLK, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_RDLCK, F_SETLK, F_SETLKW, F_UNLCK,
    F_WRLCK, LOCK_EX, LOCK_MAND, LOCK_NB, LOCK_SH, LOCK_UN, OFFSET_MAX,
};
use vfs::{
    flags::{SEEK_CUR, SEEK_END, SEEK_SET},
    Errno, OpenFile,
};

use super::{
    ranges::{ByteRange, LockKind, Owner},
    RecordRequest,
};
use crate::{user, LinuxProcess};

/// Whether `fcntl` command `command` is one of the lock commands.
pub(crate) fn is_lock_command(command: u64) -> bool {
    matches!(
        command,
        F_GETLK | F_SETLK | F_SETLKW | F_OFD_GETLK | F_OFD_SETLK | F_OFD_SETLKW
    )
}

/// `l_type` as a lock to take (`None`: release): `EINVAL` for anything
/// else (Linux's `assign_type`).
fn lock_kind(l_type: i16) -> Result<Option<LockKind>, Errno> {
    match l_type {
        F_RDLCK => Ok(Some(LockKind::Shared)),
        F_WRLCK => Ok(Some(LockKind::Exclusive)),
        F_UNLCK => Ok(None),
        _ => Err(Errno::EINVAL),
    }
}

/// The bytes `lock` describes on `file` (Linux's `flock_to_posix_lock`):
/// `l_start` from the start, the offset or the end (`EINVAL` for another
/// `l_whence`); `l_len` bytes from there, to the end for 0, before it
/// when negative. A start or end past `OFFSET_MAX` is `EOVERFLOW`, one
/// before byte 0 `EINVAL`.
fn byte_range(file: &OpenFile, lock: &Flock) -> Result<ByteRange, Errno> {
    let base = match u32::try_from(lock.l_whence).map_err(|_| Errno::EINVAL)? {
        SEEK_SET => 0,
        SEEK_CUR => i64::try_from(file.offset()).unwrap_or(OFFSET_MAX),
        SEEK_END => i64::try_from(file.metadata().size).unwrap_or(OFFSET_MAX),
        _ => return Err(Errno::EINVAL),
    };
    // `base` is at least 0, so neither sum below can wrap.
    if lock.l_start > OFFSET_MAX - base {
        return Err(Errno::EOVERFLOW);
    }
    let mut start = base + lock.l_start;
    if start < 0 {
        return Err(Errno::EINVAL);
    }
    let end = match lock.l_len {
        0 => OFFSET_MAX,
        length if length > 0 => {
            if length - 1 > OFFSET_MAX - start {
                return Err(Errno::EOVERFLOW);
            }
            start + (length - 1)
        }
        length => {
            if start + length < 0 {
                return Err(Errno::EINVAL);
            }
            let end = start - 1;
            start += length;
            end
        }
    };
    Ok(ByteRange {
        start: start as u64,
        end: end as u64,
    })
}

/// `fcntl(fd, command, lock)` for the lock commands, on `file` (the
/// descriptor's, already checked): `EFAULT` for a bad `lock` pointer.
pub(crate) fn fcntl_lock(
    process: &LinuxProcess,
    file: &Arc<OpenFile>,
    command: u64,
    address: u64,
) -> Result<i64, Errno> {
    let mut bytes = [0u8; Flock::BYTES];
    user::read(address, &mut bytes)?;
    let mut lock = Flock::from_bytes(&bytes);
    let is_description_lock = matches!(command, F_OFD_GETLK | F_OFD_SETLK | F_OFD_SETLKW);
    if matches!(command, F_GETLK | F_OFD_GETLK) && lock_kind(lock.l_type)?.is_none() {
        return Err(Errno::EINVAL);
    }
    let range = byte_range(file, &lock)?;
    let kind = lock_kind(lock.l_type)?;
    let is_test = matches!(command, F_GETLK | F_OFD_GETLK);
    if !is_test {
        // The access the lock stands for (Linux's `check_fmode_for_setlk`).
        match kind {
            Some(LockKind::Shared) if !file.is_readable() => return Err(Errno::EBADF),
            Some(LockKind::Exclusive) if !file.is_writable() => return Err(Errno::EBADF),
            _ => {}
        }
    }
    if is_description_lock && lock.l_pid != 0 {
        return Err(Errno::EINVAL);
    }
    let request = RecordRequest {
        owner: if is_description_lock {
            Owner::Description(file.id())
        } else {
            Owner::Process(process.pid)
        },
        pid: if is_description_lock {
            -1
        } else {
            process.pid as i32
        },
        kind,
        range,
    };
    if !is_test {
        let should_wait = matches!(command, F_SETLKW | F_OFD_SETLKW);
        process.locks.set_record(file, request, should_wait)?;
        return Ok(0);
    }
    match process.locks.test_record(file, request) {
        // Only the type changes when nothing is in the way (Linux leaves
        // the rest as the caller wrote it).
        None => lock.l_type = F_UNLCK,
        Some(holder) => {
            lock = Flock {
                l_type: match holder.kind {
                    LockKind::Shared => F_RDLCK,
                    LockKind::Exclusive => F_WRLCK,
                },
                l_whence: SEEK_SET as i16,
                l_start: holder.range.start as i64,
                l_len: if holder.range.end == OFFSET_MAX as u64 {
                    0
                } else {
                    (holder.range.end - holder.range.start + 1) as i64
                },
                l_pid: holder.pid,
            }
        }
    }
    user::write(address, &lock.to_bytes())?;
    Ok(0)
}

/// `flock(fd, operation)`: `LOCK_SH`, `LOCK_EX` or `LOCK_UN`, with
/// `LOCK_NB` not to wait (`EWOULDBLOCK`). The operation is checked before
/// the descriptor (`EINVAL`, then `EBADF`); `LOCK_MAND` is accepted and
/// ignored, as Linux has done since 5.15.
pub(crate) fn flock(process: &LinuxProcess, fd: u64, operation: u64) -> Result<i64, Errno> {
    let operation = operation as u32;
    if operation & LOCK_MAND != 0 {
        return Ok(0);
    }
    let kind = match operation & !LOCK_NB {
        LOCK_SH => Some(LockKind::Shared),
        LOCK_EX => Some(LockKind::Exclusive),
        LOCK_UN => None,
        _ => return Err(Errno::EINVAL),
    };
    let file = process.fds.get(fd as i64)?;
    if kind.is_some() && !file.is_readable() && !file.is_writable() {
        return Err(Errno::EBADF);
    }
    process.locks.flock(&file, kind, operation & LOCK_NB == 0)?;
    Ok(0)
}
