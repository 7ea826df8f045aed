//! Timers as files: `timerfd_create`, `timerfd_settime` and
//! `timerfd_gettime` (timerfd_create(2)).
//!
//! The file's [`Timer`] counts expirations (the pure arithmetic: a
//! periodic timer that was not read for a while has expired as many
//! times as periods went by); a read of 8 bytes returns the count and
//! sets it back to zero, waiting while it is zero. Times are kept as
//! uptimes: an absolute time of a wall clock (`CLOCK_REALTIME`,
//! `CLOCK_REALTIME_ALARM`) is turned into the uptime it falls at, as the
//! wall clock reads when the timer is set; the other clocks read the
//! uptime.
//!
//! Nobody wakes anything when a timer expires: a waiting read, `poll` or
//! `epoll` asks the file when it turns ready (`vfs::Device::ready_at`)
//! and blocks no longer than that; setting the timer wakes them so that
//! they ask again.

use alloc::sync::Arc;

use linux_abi::{
    time::{
        clock::{BOOTTIME, BOOTTIME_ALARM, MONOTONIC, REALTIME, REALTIME_ALARM},
        Itimerspec, Timespec,
    },
    timerfd::*,
};
use vfs::{Errno, Inode, Readiness};

use crate::{
    anonymous,
    machine::{Clock, Machine},
    user,
    wait::{wait_on_any, FileWaitQueue},
    LinuxProcess,
};

/// A timer's setting and its expirations not read yet, apart from any
/// waiting. Times are uptimes in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Timer {
    /// The next expiry; `None` when disarmed.
    next: Option<u64>,
    /// The period; 0 for a one-shot timer.
    interval_ns: u64,
    /// Expirations since the last read (or setting).
    expirations: u64,
}

/// What `timerfd_gettime` tells: the time to the next expiry (0:
/// disarmed) and the period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Setting {
    /// Nanoseconds to the next expiry; 0 when disarmed.
    pub remaining_ns: u64,
    /// The period in nanoseconds; 0 for a one-shot timer.
    pub interval_ns: u64,
}

impl Setting {
    /// As `struct itimerspec`.
    fn to_itimerspec(self) -> Itimerspec {
        Itimerspec {
            interval: Timespec::from_nanoseconds(self.interval_ns),
            value: Timespec::from_nanoseconds(self.remaining_ns),
        }
    }
}

impl Timer {
    /// Counts the expiries up to uptime `now`.
    fn settle(&mut self, now: u64) {
        let Some(next) = self.next else {
            return;
        };
        if now < next {
            return;
        }
        if self.interval_ns == 0 {
            self.expirations = self.expirations.saturating_add(1);
            self.next = None;
            return;
        }
        let periods = (now - next) / self.interval_ns + 1;
        self.expirations = self.expirations.saturating_add(periods);
        self.next = periods
            .checked_mul(self.interval_ns)
            .and_then(|elapsed| next.checked_add(elapsed));
    }

    /// Arms it at uptime `now` to expire after `value_ns` (or at uptime
    /// `value_ns` if `is_absolute`), then every `interval_ns`; a zero
    /// `value_ns` disarms it. Expirations not read are forgotten, as on
    /// Linux. Returns the setting it had.
    pub fn set(&mut self, now: u64, value_ns: u64, interval_ns: u64, is_absolute: bool) -> Setting {
        let old = self.setting(now);
        self.expirations = 0;
        self.interval_ns = interval_ns;
        self.next = match (value_ns, is_absolute) {
            (0, _) => None,
            (at, true) => Some(at),
            (delay, false) => Some(now.saturating_add(delay)),
        };
        old
    }

    /// Its setting at uptime `now`.
    pub fn setting(&mut self, now: u64) -> Setting {
        self.settle(now);
        Setting {
            remaining_ns: self.next.map_or(0, |next| next - now),
            interval_ns: self.interval_ns,
        }
    }

    /// A read at uptime `now`: the expirations since the last, set back
    /// to zero; `None` while there are none.
    pub fn take(&mut self, now: u64) -> Option<u64> {
        self.settle(now);
        (self.expirations > 0).then(|| core::mem::take(&mut self.expirations))
    }

    /// Whether a read at uptime `now` would return at once.
    pub fn is_ready(&self, now: u64) -> bool {
        self.expirations > 0 || self.next.is_some_and(|next| next <= now)
    }

    /// When it turns ready by itself: its next expiry, unless it is
    /// ready already.
    pub fn ready_at(&self) -> Option<u64> {
        if self.expirations > 0 {
            return None;
        }
        self.next
    }
}

/// The device of a timer's open file.
struct TimerFd {
    timer: spin::Mutex<Timer>,
    /// Whether its clock is a wall clock: absolute times are then
    /// wall-clock times.
    is_wall_clock: bool,
    /// Woken when the timer is set: waiters ask again when it expires.
    changed: FileWaitQueue,
}

impl vfs::Device for TimerFd {
    /// Returns the expirations as 8 bytes (`EINVAL` for a shorter
    /// buffer), waiting for one.
    fn read(&self, _offset: u64, buf: &mut [u8], nonblocking: bool) -> Result<usize, Errno> {
        if buf.len() < TIMERFD_COUNT_BYTES {
            return Err(Errno::EINVAL);
        }
        let attempt = || match self.timer.lock().take(Machine::uptime_ns()) {
            Some(count) => Some(Ok(count)),
            None => nonblocking.then_some(Err(Errno::EAGAIN)),
        };
        let look_again_at = || self.timer.lock().ready_at();
        let count = wait_on_any(&self.changed, "timerfd read", None, look_again_at, attempt)?
            .unwrap_or(Err(Errno::EAGAIN))?;
        buf[..TIMERFD_COUNT_BYTES].copy_from_slice(&count.to_le_bytes());
        Ok(TIMERFD_COUNT_BYTES)
    }

    fn write(&self, _offset: u64, _buf: &[u8], _nonblocking: bool) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }

    fn readiness(&self) -> Readiness {
        Readiness {
            readable: self.timer.lock().is_ready(Machine::uptime_ns()),
            writable: false,
            hung_up: false,
            error: false,
        }
    }

    fn wait_queue(&self) -> Option<&dyn vfs::WaitQueue> {
        Some(&self.changed)
    }

    fn ready_at(&self) -> Option<u64> {
        self.timer.lock().ready_at()
    }

    fn as_any(&self) -> Option<&dyn core::any::Any> {
        Some(self)
    }
}

/// Runs `f` on the timer open as `fd`: `EBADF` for no descriptor,
/// `EINVAL` for another kind of file.
fn with_timer<T>(
    process: &LinuxProcess,
    fd: u64,
    f: impl FnOnce(&TimerFd) -> T,
) -> Result<T, Errno> {
    let file = process.fds.get(i64::from(fd as i32))?;
    let timer = file
        .device()
        .and_then(|device| device.as_any())
        .and_then(|device| device.downcast_ref::<TimerFd>())
        .ok_or(Errno::EINVAL)?;
    Ok(f(timer))
}

/// `timerfd_create(clockid, flags)`: `CLOCK_REALTIME`,
/// `CLOCK_MONOTONIC`, `CLOCK_BOOTTIME` and their `_ALARM` variants;
/// `TFD_NONBLOCK`, `TFD_CLOEXEC` (`EINVAL` for anything else).
pub fn timerfd_create(
    directory: &Arc<dyn Inode>,
    process: &LinuxProcess,
    clock: u64,
    flags: u64,
) -> Result<i64, Errno> {
    let flags = flags as u32 as u64;
    let clock = clock as u32 as u64;
    // The alarm clocks are their plain ones: nothing suspends.
    let known_clock = matches!(
        clock,
        REALTIME | MONOTONIC | BOOTTIME | REALTIME_ALARM | BOOTTIME_ALARM
    );
    if flags & !(TFD_CLOEXEC | TFD_NONBLOCK) != 0 || !known_clock {
        return Err(Errno::EINVAL);
    }
    let device = TimerFd {
        timer: spin::Mutex::new(Timer::default()),
        is_wall_clock: matches!(clock, REALTIME | REALTIME_ALARM),
        changed: FileWaitQueue::new(),
    };
    let file = anonymous::anonymous_file(
        directory,
        "timerfd",
        (flags & TFD_NONBLOCK) as u32,
        Arc::new(device),
    )?;
    anonymous::install(process, file, flags & TFD_CLOEXEC != 0)
}

/// `timerfd_settime(fd, flags, new, old)`, its checks in Linux's order:
/// `new` (`EFAULT`), the flags (`TFD_TIMER_ABSTIME`,
/// `TFD_TIMER_CANCEL_ON_SET`), a malformed time (`EINVAL`), the
/// descriptor (`EBADF`, `EINVAL` if not a timer). The previous setting
/// goes to `old` unless it is null.
pub fn timerfd_settime(
    process: &LinuxProcess,
    fd: u64,
    flags: u64,
    new: u64,
    old: u64,
) -> Result<i64, Errno> {
    let mut bytes = [0u8; Itimerspec::BYTES];
    user::read(new, &mut bytes)?;
    let setting = Itimerspec::from_bytes(&bytes);
    let flags = flags as u32 as u64;
    if flags & !(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET) != 0 {
        return Err(Errno::EINVAL);
    }
    let value_ns = setting.value.to_nanoseconds().ok_or(Errno::EINVAL)?;
    let interval_ns = setting.interval.to_nanoseconds().ok_or(Errno::EINVAL)?;
    let is_absolute = flags & TFD_TIMER_ABSTIME != 0;
    let previous = with_timer(process, fd, |device| {
        let value_ns = if is_absolute && device.is_wall_clock && value_ns != 0 {
            // The uptime it falls at; a time before boot is past (not
            // zero, which would disarm).
            value_ns.saturating_sub(Machine::epoch_offset_ns()).max(1)
        } else {
            value_ns
        };
        let previous =
            device
                .timer
                .lock()
                .set(Machine::uptime_ns(), value_ns, interval_ns, is_absolute);
        // Waiters ask again when the timer expires.
        device.changed.wake_all();
        previous
    })?;
    if old != 0 {
        user::write(old, &previous.to_itimerspec().to_bytes())?;
    }
    Ok(0)
}

/// `timerfd_gettime(fd, curr)`: the time to the next expiry and the
/// period.
pub fn timerfd_gettime(process: &LinuxProcess, fd: u64, current: u64) -> Result<i64, Errno> {
    let setting = with_timer(process, fd, |device| {
        device.timer.lock().setting(Machine::uptime_ns())
    })?;
    user::write(current, &setting.to_itimerspec().to_bytes())?;
    Ok(0)
}
