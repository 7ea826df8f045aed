//! `close_range(first, last, flags)` (close_range(2)): closes, or marks
//! close-on-exec, every open descriptor from `first` to `last`.

use linux_abi::fcntl::{CLOSE_RANGE_CLOEXEC, CLOSE_RANGE_UNSHARE};
use vfs::Errno;

use crate::LinuxProcess;

/// `close_range(first, last, flags)`: the three are C `unsigned int`s.
/// `EINVAL` for an unknown flag or `first` above `last`; a range with
/// no open descriptor is no error. `CLOSE_RANGE_UNSHARE` asks for a
/// table of the caller's own first: every process's table is its own
/// here (`clone` shares none), so there is nothing to unshare.
pub fn close_range(
    process: &LinuxProcess,
    first: u64,
    last: u64,
    flags: u64,
) -> Result<i64, Errno> {
    let (first, last, flags) = (first as u32, last as u32, u64::from(flags as u32));
    if flags & !(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC) != 0 || first > last {
        return Err(Errno::EINVAL);
    }
    let in_range = process
        .fds
        .descriptors()
        .into_iter()
        .filter(|&fd| (first..=last).contains(&(fd as u32)));
    for fd in in_range {
        let fd = i64::from(fd);
        // Another thread may have closed it since the listing: no error.
        let _ = if flags & CLOSE_RANGE_CLOEXEC != 0 {
            process.fds.set_close_on_exec(fd, true)
        } else {
            process.close(fd)
        };
    }
    Ok(0)
}
