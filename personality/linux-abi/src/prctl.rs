//! `prctl(2)`'s options and their argument values
//! (`include/uapi/linux/prctl.h`, `include/uapi/linux/securebits.h`).

/// Set the signal the caller gets when its parent ends.
pub const PR_SET_PDEATHSIG: u64 = 1;
/// Read that signal into an `int`.
pub const PR_GET_PDEATHSIG: u64 = 2;
/// Whether the process may be dumped and traced by its own user.
pub const PR_GET_DUMPABLE: u64 = 3;
/// Set that (0 or 1).
pub const PR_SET_DUMPABLE: u64 = 4;
/// Whether `SECBIT_KEEP_CAPS` is set.
pub const PR_GET_KEEPCAPS: u64 = 7;
/// Set or clear `SECBIT_KEEP_CAPS` (0 or 1).
pub const PR_SET_KEEPCAPS: u64 = 8;
/// Set the process timing method (only `PR_TIMING_STATISTICAL`, 0).
pub const PR_SET_TIMING: u64 = 14;
/// Get it.
pub const PR_GET_TIMING: u64 = 13;
/// Set the thread's name (16 bytes with the NUL).
pub const PR_SET_NAME: u64 = 15;
/// Read the thread's name.
pub const PR_GET_NAME: u64 = 16;
/// The seccomp mode (`EINVAL` where seccomp is not built, as here).
pub const PR_GET_SECCOMP: u64 = 21;
/// Set it.
pub const PR_SET_SECCOMP: u64 = 22;
/// Whether a capability is in the bounding set.
pub const PR_CAPBSET_READ: u64 = 23;
/// Drop a capability from the bounding set (needs `CAP_SETPCAP`).
pub const PR_CAPBSET_DROP: u64 = 24;
/// The security bits (`SECBIT_*`).
pub const PR_GET_SECUREBITS: u64 = 27;
/// Set them (needs `CAP_SETPCAP`).
pub const PR_SET_SECUREBITS: u64 = 28;
/// Whether `execve` may grant privileges no more (set once, for good).
pub const PR_SET_NO_NEW_PRIVS: u64 = 38;
/// Read that flag.
pub const PR_GET_NO_NEW_PRIVS: u64 = 39;
/// Disable transparent huge pages for the process.
pub const PR_SET_THP_DISABLE: u64 = 41;
/// Read that flag.
pub const PR_GET_THP_DISABLE: u64 = 42;

/// The only timing method Linux has.
pub const PR_TIMING_STATISTICAL: u64 = 0;

/// Every security bit Linux defines (`SECURE_ALL_BITS`): `NOROOT`,
/// `NO_SETUID_FIXUP`, `KEEP_CAPS`, `NO_CAP_AMBIENT_RAISE`.
pub const SECURE_ALL_BITS: u64 = 0x01 | 0x04 | 0x10 | 0x40;
/// Their lock bits (`SECURE_ALL_LOCKS`): a locked bit never changes
/// again.
pub const SECURE_ALL_LOCKS: u64 = SECURE_ALL_BITS << 1;
