//! `epoll`: the event bits, `epoll_ctl`'s operations, `epoll_create1`'s
//! flag and `struct epoll_event` (epoll_ctl(2), `include/uapi/linux/eventpoll.h`).

use crate::bytes::{get_u32, get_u64, put};

/// Data to read (`POLLIN`).
pub const EPOLLIN: u32 = 0x1;
/// Urgent data to read (`POLLPRI`).
pub const EPOLLPRI: u32 = 0x2;
/// Room to write (`POLLOUT`).
pub const EPOLLOUT: u32 = 0x4;
/// An error (always reported, never asked for).
pub const EPOLLERR: u32 = 0x8;
/// Hang-up (always reported, never asked for).
pub const EPOLLHUP: u32 = 0x10;
/// Normal data to read (`POLLRDNORM`).
pub const EPOLLRDNORM: u32 = 0x40;
/// Priority data to read (`POLLRDBAND`).
pub const EPOLLRDBAND: u32 = 0x80;
/// Room to write normal data (`POLLWRNORM`).
pub const EPOLLWRNORM: u32 = 0x100;
/// Room to write priority data (`POLLWRBAND`).
pub const EPOLLWRBAND: u32 = 0x200;
/// A message (unused by Linux itself).
pub const EPOLLMSG: u32 = 0x400;
/// The peer shut its writing half down.
pub const EPOLLRDHUP: u32 = 0x2000;
/// Wake one of several epoll instances watching the same file (`ADD`
/// only).
pub const EPOLLEXCLUSIVE: u32 = 1 << 28;
/// Hold a wakeup source while events are pending (suspend: nothing to
/// do here).
pub const EPOLLWAKEUP: u32 = 1 << 29;
/// Report once, then disable until `EPOLL_CTL_MOD` re-arms.
pub const EPOLLONESHOT: u32 = 1 << 30;
/// Edge-triggered: report changes, not states.
pub const EPOLLET: u32 = 1 << 31;

/// The bits `EPOLLEXCLUSIVE` may come with (Linux's
/// `EPOLLEXCLUSIVE_OK_BITS`).
pub const EPOLLEXCLUSIVE_OK_BITS: u32 =
    EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLWAKEUP | EPOLLET | EPOLLEXCLUSIVE;

/// `epoll_ctl`: add a descriptor to the interest list.
pub const EPOLL_CTL_ADD: u64 = 1;
/// `epoll_ctl`: remove one.
pub const EPOLL_CTL_DEL: u64 = 2;
/// `epoll_ctl`: change what one is watched for.
pub const EPOLL_CTL_MOD: u64 = 3;

/// `epoll_create1`: close the descriptor on `execve` (`O_CLOEXEC`).
pub const EPOLL_CLOEXEC: u64 = 0o2000000;

/// `struct epoll_event`: what to watch for and the caller's word to give
/// back. Packed on x86_64: 12 bytes, `data` at 4.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EpollEvent {
    /// `events`: `EPOLL*` bits.
    pub events: u32,
    /// `data`: returned untouched with each report.
    pub data: u64,
}

impl EpollEvent {
    /// Bytes of a `struct epoll_event` on x86_64 (packed).
    pub const BYTES: usize = 12;

    /// The record as user space reads it: `events`@0, `data`@4.
    pub fn to_bytes(self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        put(&mut bytes, 0, self.events.to_le_bytes());
        put(&mut bytes, 4, self.data.to_le_bytes());
        bytes
    }

    /// The record user space wrote.
    pub fn from_bytes(bytes: &[u8; Self::BYTES]) -> EpollEvent {
        EpollEvent {
            events: get_u32(bytes, 0),
            data: get_u64(bytes, 4),
        }
    }
}
