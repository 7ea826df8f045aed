//! Waiting for descriptors: `poll`, `ppoll`, `select` and `pselect6`.
//!
//! Each descriptor's open file says whether it is ready (`readiness`:
//! regular files always, pipes, sockets and the terminal for
//! themselves). With nothing ready the calling thread registers on the
//! wait queue of every watched file (`OpenFile::wait_queue`), looks once
//! more, and blocks until one of them wakes it, the timeout passes, or a
//! signal interrupts it; then it unregisters from all of them.
//!
//! `select` is `poll` over the descriptors its sets name, as Linux's
//! `do_select` is: readable means `POLLIN`, `POLLHUP` or `POLLERR`;
//! writable `POLLOUT` or `POLLERR`; exceptional `POLLPRI`.

use alloc::vec::Vec;

use linux_abi::{
    signal::SIGSET_BYTES,
    time::{Timespec, Timeval},
};
use vfs::Errno;

use crate::{
    machine::{Blocking, Clock, Machine},
    user, LinuxProcess,
};

const POLLIN: u16 = 0x1;
const POLLPRI: u16 = 0x2;
const POLLOUT: u16 = 0x4;
const POLLERR: u16 = 0x8;
const POLLHUP: u16 = 0x10;
const POLLNVAL: u16 = 0x20;
/// `POLLRDNORM` and `POLLWRNORM` (what `select` asks, as Linux maps it).
const POLLRDNORM: u16 = 0x40;
const POLLWRNORM: u16 = 0x100;
/// What makes a descriptor count as readable, writable, exceptional for
/// `select` (Linux's `POLLIN_SET`, `POLLOUT_SET`, `POLLEX_SET`).
const SELECT_READ: u16 = POLLIN | POLLRDNORM | POLLHUP | POLLERR;
const SELECT_WRITE: u16 = POLLOUT | POLLWRNORM | POLLERR;
const SELECT_EXCEPT: u16 = POLLPRI;
/// Most descriptors one call may watch (`RLIMIT_NOFILE`).
const MAX_WATCHED: u64 = crate::MAX_DESCRIPTORS as u64;
/// Nanoseconds in a second.
const NS_PER_SECOND: u64 = 1_000_000_000;
/// Bytes of an `fd_set` word (`unsigned long`): sets are read and written
/// whole words at a time, as Linux does.
const FD_SET_WORD_BYTES: u64 = 8;

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
    if readiness.error {
        events |= POLLERR;
    }
    events & (wanted | POLLERR | POLLHUP) & !POLLPRI
}

/// One descriptor a wait watches: what it wants and what it got.
#[derive(Clone, Copy, Default)]
struct Watch {
    fd: i32,
    wanted: u16,
    /// The events that count: all for `poll` (errors and hang-ups are
    /// reported unasked), only those of the sets asked for `select`.
    counted: u16,
    got: u16,
}

/// Looks at `watches` until one is ready (each one's `got` says what),
/// until uptime `deadline` (ns; `None`: no end), or until the caller is
/// interrupted (`EINTR`). The number of ready watches (0: the deadline
/// passed).
fn wait_for(
    process: &LinuxProcess,
    watches: &mut [Watch],
    deadline: Option<u64>,
) -> Result<usize, Errno> {
    let look = |watches: &mut [Watch]| {
        let mut ready_count = 0;
        for watch in watches.iter_mut() {
            watch.got = ready(process, watch.fd, watch.wanted) & watch.counted;
            if watch.got != 0 {
                ready_count += 1;
            }
        }
        ready_count
    };
    let expired = || deadline.is_some_and(|deadline| Machine::uptime_ns() >= deadline);
    let ready_count = look(watches);
    if ready_count > 0 || expired() {
        return Ok(ready_count);
    }
    // As any wait (`wait::wait_on`): a few switches to ready threads
    // first, cheaper than blocking when a peer is about to answer.
    for _ in 0..crate::wait::YIELDS_BEFORE_BLOCKING {
        if crate::pipe::interrupted() {
            return Err(Errno::EINTR);
        }
        if !Machine::yield_to_ready() {
            break;
        }
        let ready_count = look(watches);
        if ready_count > 0 || expired() {
            return Ok(ready_count);
        }
    }
    // The files are held while registered on their queues, even if a
    // descriptor is closed meanwhile.
    let files: Vec<_> = watches
        .iter()
        .filter(|watch| watch.fd >= 0)
        .filter_map(|watch| process.fds.get(i64::from(watch.fd)).ok())
        .collect();
    let me = Machine::current_thread();
    let mut blocks_forever = true;
    for file in &files {
        match file.wait_queue() {
            Some(queue) => queue.register(me),
            // Never ready yet without a queue to say when it becomes so:
            // no such device today, but should one come, its waiters
            // look again every few milliseconds rather than hang.
            None => blocks_forever = false,
        }
    }
    let block_until = || {
        let mut until = deadline;
        if !blocks_forever {
            until = earliest(
                until,
                Some(Machine::uptime_ns().saturating_add(UNWAITABLE_LOOK_NS)),
            );
        }
        // A file that turns ready by itself (a timer) wakes nobody: the
        // wait ends by then to look at it.
        files
            .iter()
            .fold(until, |until, file| earliest(until, file.ready_at()))
    };
    let result = loop {
        // Prepared before the look: a wake-up between the look and the
        // block makes the block return at once.
        Machine::prepare_to_wait();
        let ready_count = look(watches);
        if ready_count > 0 || expired() {
            break Ok(ready_count);
        }
        if crate::pipe::interrupted() {
            break Err(Errno::EINTR);
        }
        Machine::block_prepared("poll", block_until());
    };
    for file in &files {
        if let Some(queue) = file.wait_queue() {
            queue.unregister(me);
        }
    }
    result
}

/// The earlier of two optional uptimes (`None`: never).
pub(crate) fn earliest(first: Option<u64>, second: Option<u64>) -> Option<u64> {
    match (first, second) {
        (Some(first), Some(second)) => Some(first.min(second)),
        (first, second) => first.or(second),
    }
}

/// How often a wait looks again at a file that has no wait queue.
const UNWAITABLE_LOOK_NS: u64 = 5_000_000;

/// The uptime `timeout_ns` from now.
fn deadline_after(timeout_ns: Option<u64>) -> Option<u64> {
    timeout_ns.map(|ns| Machine::uptime_ns().saturating_add(ns))
}

/// `poll(fds, nfds, timeout_ms)` with the timeout in nanoseconds (`None`:
/// forever).
pub fn poll(
    process: &LinuxProcess,
    fds: u64,
    count: u64,
    timeout_ns: Option<u64>,
) -> Result<i64, Errno> {
    if count > MAX_WATCHED {
        return Err(Errno::EINVAL);
    }
    let count = count as usize;
    // A program polling a few descriptors in a loop (a shell, `nc`)
    // should not pay two allocations a call.
    if count <= POLL_ON_STACK {
        let mut entries = [0u8; POLL_ON_STACK * POLLFD_BYTES];
        let mut watches = [Watch::default(); POLL_ON_STACK];
        poll_with(
            process,
            fds,
            &mut entries[..count * POLLFD_BYTES],
            &mut watches[..count],
            timeout_ns,
        )
    } else {
        let mut entries = alloc::vec![0u8; count * POLLFD_BYTES];
        let mut watches = alloc::vec![Watch::default(); count];
        poll_with(process, fds, &mut entries, &mut watches, timeout_ns)
    }
}

/// Descriptors `poll` watches without allocating.
const POLL_ON_STACK: usize = 8;
/// `struct pollfd`: int fd, short events, short revents.
const POLLFD_BYTES: usize = 8;

/// [`poll`] with room for the entries and the watches given.
fn poll_with(
    process: &LinuxProcess,
    fds: u64,
    entries: &mut [u8],
    watches: &mut [Watch],
    timeout_ns: Option<u64>,
) -> Result<i64, Errno> {
    user::read(fds, entries)?;
    for (entry, watch) in entries.chunks_exact(POLLFD_BYTES).zip(watches.iter_mut()) {
        *watch = Watch {
            fd: i32::from_le_bytes([entry[0], entry[1], entry[2], entry[3]]),
            wanted: u16::from_le_bytes([entry[4], entry[5]]),
            counted: u16::MAX,
            got: 0,
        };
    }
    let ready_count = wait_for(process, watches, deadline_after(timeout_ns))?;
    for (entry, watch) in entries.chunks_exact_mut(POLLFD_BYTES).zip(watches.iter()) {
        entry[6..8].copy_from_slice(&watch.got.to_le_bytes());
    }
    user::write(fds, entries)?;
    Ok(ready_count as i64)
}

/// Reads a `struct timespec` (`ppoll`, `pselect6`) as nanoseconds; `None`
/// for a null pointer (forever). `EINVAL` for a negative or malformed one.
pub fn timespec_ns(address: u64) -> Result<Option<u64>, Errno> {
    if address == 0 {
        return Ok(None);
    }
    let mut bytes = [0u8; Timespec::BYTES];
    user::read(address, &mut bytes)?;
    match Timespec::from_bytes(&bytes).to_nanoseconds() {
        Some(ns) => Ok(Some(ns)),
        None => Err(Errno::EINVAL),
    }
}

/// Reads a `struct timeval` (`select`) as nanoseconds; `None` for a null
/// pointer. Microseconds beyond a second carry into the seconds (Linux
/// normalises them); a negative time is `EINVAL`.
fn timeval_ns(address: u64) -> Result<Option<u64>, Errno> {
    if address == 0 {
        return Ok(None);
    }
    let mut bytes = [0u8; Timeval::BYTES];
    user::read(address, &mut bytes)?;
    let Timeval {
        sec: seconds,
        usec: microseconds,
    } = Timeval::from_bytes(&bytes);
    if seconds < 0 || microseconds < 0 {
        return Err(Errno::EINVAL);
    }
    let ns = (seconds as u64)
        .saturating_add(microseconds as u64 / 1_000_000)
        .saturating_mul(NS_PER_SECOND)
        .saturating_add(microseconds as u64 % 1_000_000 * 1000);
    Ok(Some(ns))
}

/// `poll`'s `int timeout` in milliseconds as nanoseconds: negative is
/// forever.
pub fn timeout_argument(timeout_ms: u64) -> Option<u64> {
    let timeout_ms = timeout_ms as i32;
    (timeout_ms >= 0).then(|| timeout_ms as u64 * 1_000_000)
}

/// How `select` and `pselect6` write back the time left.
#[derive(Clone, Copy)]
enum TimeLayout {
    /// `struct timeval`: seconds, microseconds.
    Timeval,
    /// `struct timespec`: seconds, nanoseconds.
    Timespec,
}

/// `select(nfds, readfds, writefds, exceptfds, timeout)`.
pub fn select(
    process: &LinuxProcess,
    count: u64,
    sets: [u64; 3],
    timeout: u64,
) -> Result<i64, Errno> {
    let timeout_ns = timeval_ns(timeout)?;
    select_sets(
        process,
        count,
        sets,
        (timeout, timeout_ns, TimeLayout::Timeval),
    )
}

/// `pselect6(nfds, readfds, writefds, exceptfds, timeout, sigmask)`:
/// `sigmask` points to the mask's address and size (8); that mask is in
/// force during the wait (`EFAULT`, `EINVAL` for another size).
pub fn pselect6(
    process: &LinuxProcess,
    count: u64,
    sets: [u64; 3],
    timeout: u64,
    sigmask: u64,
) -> Result<i64, Errno> {
    let timeout_ns = timespec_ns(timeout)?;
    let mut mask = None;
    if sigmask != 0 {
        let [address, size] = user::read_u64s::<2>(sigmask)?;
        if address != 0 {
            if size != SIGSET_BYTES {
                return Err(Errno::EINVAL);
            }
            mask = Some(user::read_u64(address)?);
        }
    }
    with_mask(process, mask, || {
        select_sets(
            process,
            count,
            sets,
            (timeout, timeout_ns, TimeLayout::Timespec),
        )
    })
}

/// Runs a wait with signal mask `mask` in force (`pselect6`, `ppoll`,
/// `epoll_pwait`).
/// Interrupted (`EINTR`), the mask stays until the handler the kernel is
/// about to enter returns (it restores the caller's); otherwise the
/// caller's comes back at once.
pub(crate) fn with_mask(
    process: &LinuxProcess,
    mask: Option<u64>,
    wait: impl FnOnce() -> Result<i64, Errno>,
) -> Result<i64, Errno> {
    let Some(mask) = mask else {
        return wait();
    };
    process
        .signals
        .lock()
        .suspend_with(crate::signal::current_thread(), mask);
    let result = wait();
    if result != Err(Errno::EINTR) {
        process
            .signals
            .lock()
            .end_suspend(crate::signal::current_thread());
    }
    result
}

/// `ppoll(fds, nfds, timeout, sigmask, sigsetsize)`: `poll` with a
/// `struct timespec` timeout and, if `sigmask` is not null, that mask in
/// force during the wait.
pub fn ppoll(
    process: &LinuxProcess,
    fds: u64,
    count: u64,
    timeout: u64,
    sigmask: u64,
    size: u64,
) -> Result<i64, Errno> {
    let timeout_ns = timespec_ns(timeout)?;
    let mask = if sigmask == 0 {
        None
    } else {
        if size != SIGSET_BYTES {
            return Err(Errno::EINVAL);
        }
        Some(user::read_u64(sigmask)?)
    };
    with_mask(process, mask, || poll(process, fds, count, timeout_ns))
}

/// The common part of `select` and `pselect6`: read the sets (bits of
/// descriptors below `count`), wait, write back the ready bits (all
/// clear when the time ran out) and the time left.
fn select_sets(
    process: &LinuxProcess,
    count: u64,
    sets: [u64; 3],
    (timeout, timeout_ns, layout): (u64, Option<u64>, TimeLayout),
) -> Result<i64, Errno> {
    // `nfds` is an int: negative, or beyond the descriptors a process may
    // have, is EINVAL (select(2); Linux itself cuts a large one down to
    // its table's size).
    let count = count as i32;
    if count < 0 || count as u64 > MAX_WATCHED {
        return Err(Errno::EINVAL);
    }
    let count = count as u64;
    let set_bytes = count.div_ceil(64) * FD_SET_WORD_BYTES;
    let mut bits: [Vec<u8>; 3] = Default::default();
    for (set, address) in bits.iter_mut().zip(sets) {
        if address != 0 {
            set.resize(set_bytes as usize, 0);
            user::read(address, set)?;
        }
    }
    let is_set = |set: &Vec<u8>, fd: u64| {
        set.get(fd as usize / 8)
            .is_some_and(|byte| byte >> (fd % 8) & 1 != 0)
    };
    let mut watches = Vec::new();
    for fd in 0..count {
        let mut wanted = 0;
        for (set, events) in bits.iter().zip([SELECT_READ, SELECT_WRITE, SELECT_EXCEPT]) {
            if is_set(set, fd) {
                wanted |= events;
            }
        }
        if wanted == 0 {
            continue;
        }
        // Every descriptor named must be open (Linux's `max_select_fd`).
        process.fds.get(fd as i64)?;
        watches.push(Watch {
            fd: fd as i32,
            wanted,
            counted: wanted,
            got: 0,
        });
    }
    let deadline = deadline_after(timeout_ns);
    let waited = wait_for(process, &mut watches, deadline);
    if let Some(deadline) = deadline {
        // Also when a signal cut the wait short (Linux writes it then too).
        write_time_left(
            timeout,
            deadline.saturating_sub(Machine::uptime_ns()),
            layout,
        );
    }
    waited?;
    for set in bits.iter_mut() {
        set.fill(0);
    }
    let mut ready_bits = 0;
    for watch in &watches {
        for (set, events) in bits
            .iter_mut()
            .zip([SELECT_READ, SELECT_WRITE, SELECT_EXCEPT])
        {
            // Only sets that asked about this descriptor answer for it.
            if watch.wanted & events != 0 && watch.got & events != 0 {
                set[watch.fd as usize / 8] |= 1 << (watch.fd % 8);
                ready_bits += 1;
            }
        }
    }
    for (set, address) in bits.iter().zip(sets) {
        if address != 0 {
            user::write(address, set)?;
        }
    }
    Ok(ready_bits)
}

/// Writes the time left before the deadline over the caller's timeout, as
/// Linux does for `select` and `pselect6`. A timeout that cannot be
/// written back is not an error (the call's result stands, as on Linux).
fn write_time_left(address: u64, left_ns: u64, layout: TimeLayout) {
    let value = match layout {
        TimeLayout::Timeval => Timeval::from_nanoseconds(left_ns).to_bytes(),
        TimeLayout::Timespec => Timespec::from_nanoseconds(left_ns).to_bytes(),
    };
    let _ = user::write(address, &value);
}
