//! File locks: `fcntl`'s record-lock commands and `struct flock`
//! (`asm-generic/fcntl.h`; on x86_64 the `*64` commands and `struct
//! flock64` are the same numbers and layout), and `flock`'s operations
//! (`linux/fcntl.h`, flock(2)).

use crate::bytes::{get, get_i64, get_u32, put};

/// `F_GETLK`: which lock, if any, would block the one described.
pub const F_GETLK: u64 = 5;
/// `F_SETLK`: takes or releases a record lock, failing at once on a
/// conflict.
pub const F_SETLK: u64 = 6;
/// `F_SETLKW`: as [`F_SETLK`], waiting for a conflicting lock to go.
pub const F_SETLKW: u64 = 7;
/// `F_OFD_GETLK`: [`F_GETLK`] for a lock owned by the open file
/// description.
pub const F_OFD_GETLK: u64 = 36;
/// `F_OFD_SETLK`: [`F_SETLK`] for a lock owned by the open file
/// description.
pub const F_OFD_SETLK: u64 = 37;
/// `F_OFD_SETLKW`: [`F_SETLKW`] for a lock owned by the open file
/// description.
pub const F_OFD_SETLKW: u64 = 38;

/// `l_type` `F_RDLCK`: a shared (read) lock.
pub const F_RDLCK: i16 = 0;
/// `l_type` `F_WRLCK`: an exclusive (write) lock.
pub const F_WRLCK: i16 = 1;
/// `l_type` `F_UNLCK`: no lock (release; `F_GETLK`'s "nothing in the
/// way").
pub const F_UNLCK: i16 = 2;

/// `flock` operation `LOCK_SH`: a shared lock.
pub const LOCK_SH: u32 = 1;
/// `flock` operation `LOCK_EX`: an exclusive lock.
pub const LOCK_EX: u32 = 2;
/// `flock` flag `LOCK_NB`: fail with `EWOULDBLOCK` instead of waiting.
pub const LOCK_NB: u32 = 4;
/// `flock` operation `LOCK_UN`: release the lock.
pub const LOCK_UN: u32 = 8;
/// `flock` flag `LOCK_MAND`: the old mandatory locks, which Linux (since
/// 5.15) accepts and ignores.
pub const LOCK_MAND: u32 = 32;

/// Linux's `OFFSET_MAX`: the largest file offset, where a lock of
/// length 0 ("to the end, however far it grows") ends.
pub const OFFSET_MAX: i64 = i64::MAX;

/// `struct flock` (x86_64; `struct flock64` is the same): a record lock
/// as `fcntl` reads and writes it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flock {
    /// `l_type`: [`F_RDLCK`], [`F_WRLCK`] or [`F_UNLCK`].
    pub l_type: i16,
    /// `l_whence`: what `l_start` counts from (`SEEK_SET`, `SEEK_CUR`,
    /// `SEEK_END`).
    pub l_whence: i16,
    /// `l_start`: the first byte, from `l_whence`.
    pub l_start: i64,
    /// `l_len`: bytes; 0 to the end of the file however far it grows,
    /// negative for the bytes before `l_start`.
    pub l_len: i64,
    /// `l_pid`: the process holding the conflicting lock (`F_GETLK`),
    /// -1 for an open file description's lock; must be 0 for the
    /// `F_OFD_*` commands.
    pub l_pid: i32,
}

impl Flock {
    /// Bytes of a `struct flock`.
    pub const BYTES: usize = 32;

    /// The record as user space reads it: type@0, whence@2, start@8,
    /// len@16, pid@24.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        put(&mut bytes, 0, self.l_type.to_le_bytes());
        put(&mut bytes, 2, self.l_whence.to_le_bytes());
        put(&mut bytes, 8, self.l_start.to_le_bytes());
        put(&mut bytes, 16, self.l_len.to_le_bytes());
        put(&mut bytes, 24, self.l_pid.to_le_bytes());
        bytes
    }

    /// The record user space wrote.
    pub fn from_bytes(bytes: &[u8; Self::BYTES]) -> Flock {
        Flock {
            l_type: i16::from_le_bytes(get(bytes, 0)),
            l_whence: i16::from_le_bytes(get(bytes, 2)),
            l_start: get_i64(bytes, 8),
            l_len: get_i64(bytes, 16),
            l_pid: get_u32(bytes, 24) as i32,
        }
    }
}
