//! An `epoll` instance's interest list as a pure state machine: the
//! rules of `epoll_ctl` (`EEXIST`, `ENOENT`, `EPOLLEXCLUSIVE`) and which
//! entries a wait reports, level- or edge-triggered, once or again
//! (epoll(7)). It knows nothing of files: the caller says, for each
//! entry, what is ready now and how often its wait queue has been woken
//! ([`Observation`]), so the host tests drive it with made-up files.
//!
//! Edge-triggered entries follow Linux's rule, one report per wake-up of
//! the file's queue: an entry is reported when it is ready and either
//! its queue was woken since the last look or it was not ready then (a
//! file that turns ready by itself, a timer, wakes nobody). A report
//! that finds no room in the caller's array is not consumed.

use alloc::vec::Vec;

use linux_abi::epoll::*;
use vfs::Errno;

/// What a wait learns of one watched file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Observation {
    /// The `EPOLL*` bits ready now.
    pub ready: u32,
    /// Its wait queue's wake count (`vfs::WaitQueue::wake_count`).
    pub wakes: u64,
}

/// The bits `epoll_ctl` keeps of what the caller asked (Linux ignores
/// the others).
const KEPT_BITS: u32 = EPOLLIN
    | EPOLLPRI
    | EPOLLOUT
    | EPOLLERR
    | EPOLLHUP
    | EPOLLRDNORM
    | EPOLLRDBAND
    | EPOLLWRNORM
    | EPOLLWRBAND
    | EPOLLMSG
    | EPOLLRDHUP
    | EPOLLEXCLUSIVE
    | EPOLLWAKEUP
    | EPOLLONESHOT
    | EPOLLET;

/// The bits that are events rather than modes.
const EVENT_BITS: u32 = !(EPOLLEXCLUSIVE | EPOLLWAKEUP | EPOLLONESHOT | EPOLLET);

/// One watched descriptor.
struct Entry<F> {
    /// The descriptor it was added as.
    fd: i32,
    /// Which open file that was (the same descriptor number may later
    /// name another file, which is another entry, as on Linux).
    file_id: usize,
    /// The file, as the owner keeps it.
    file: F,
    /// What was asked, with `EPOLLERR | EPOLLHUP` always added.
    events: u32,
    /// The caller's word.
    data: u64,
    /// A one-shot entry already reported: silent until `EPOLL_CTL_MOD`.
    is_disabled: bool,
    /// Edge-triggered: whether it was ready at the last look.
    was_ready: bool,
    /// Edge-triggered: its queue's wake count at the last look.
    seen_wakes: u64,
}

impl<F> Entry<F> {
    /// The events of `observation` this entry reports, if it reports now.
    fn report(&self, observation: Observation) -> Option<u32> {
        if self.is_disabled {
            return None;
        }
        let ready = observation.ready & self.events & EVENT_BITS;
        if ready == 0 {
            return None;
        }
        if self.events & EPOLLET != 0 && self.was_ready && observation.wakes == self.seen_wakes {
            return None;
        }
        Some(ready)
    }

    /// Records a look at it (edge-triggered state).
    fn looked(&mut self, observation: Observation) {
        self.was_ready = observation.ready & self.events & EVENT_BITS != 0;
        self.seen_wakes = observation.wakes;
    }
}

/// An interest list over files of type `F`.
pub(crate) struct InterestList<F> {
    entries: Vec<Entry<F>>,
}

impl<F> Default for InterestList<F> {
    fn default() -> Self {
        InterestList {
            entries: Vec::new(),
        }
    }
}

/// One report of a wait: the ready events and the caller's word.
pub(crate) type Report = EpollEvent;

impl<F> InterestList<F> {
    fn position(&self, fd: i32, file_id: usize) -> Option<usize> {
        self.entries
            .iter()
            .position(|entry| entry.fd == fd && entry.file_id == file_id)
    }

    /// The files watched (to register on their queues).
    pub fn files(&self) -> impl Iterator<Item = &F> {
        self.entries.iter().map(|entry| &entry.file)
    }

    /// `EPOLL_CTL_ADD` of descriptor `fd`, open file `file_id`:
    /// `EEXIST` if it is there; `EINVAL` for `EPOLLEXCLUSIVE` with bits
    /// it does not allow, or on an epoll file (`target_is_epoll`).
    pub fn add(
        &mut self,
        fd: i32,
        file_id: usize,
        file: F,
        event: EpollEvent,
        target_is_epoll: bool,
    ) -> Result<(), Errno> {
        check_exclusive(event.events, target_is_epoll)?;
        if self.position(fd, file_id).is_some() {
            return Err(Errno::EEXIST);
        }
        self.entries.push(Entry {
            fd,
            file_id,
            file,
            events: (event.events & KEPT_BITS) | EPOLLERR | EPOLLHUP,
            data: event.data,
            is_disabled: false,
            // Not ready at a "last look": ready now, it is reported once,
            // as Linux queues a file found ready when it is added.
            was_ready: false,
            seen_wakes: 0,
        });
        Ok(())
    }

    /// `EPOLL_CTL_MOD`: `ENOENT` if it is not there; `EINVAL` if it was
    /// added exclusive or the change asks for `EPOLLEXCLUSIVE`. Re-arms a
    /// one-shot entry, and reports a ready file again as a fresh add
    /// does.
    pub fn modify(&mut self, fd: i32, file_id: usize, event: EpollEvent) -> Result<(), Errno> {
        if event.events & EPOLLEXCLUSIVE != 0 {
            return Err(Errno::EINVAL);
        }
        let at = self.position(fd, file_id).ok_or(Errno::ENOENT)?;
        let entry = &mut self.entries[at];
        if entry.events & EPOLLEXCLUSIVE != 0 {
            return Err(Errno::EINVAL);
        }
        entry.events = (event.events & KEPT_BITS) | EPOLLERR | EPOLLHUP;
        entry.data = event.data;
        entry.is_disabled = false;
        entry.was_ready = false;
        Ok(())
    }

    /// `EPOLL_CTL_DEL`: `ENOENT` if it is not there.
    pub fn delete(&mut self, fd: i32, file_id: usize) -> Result<F, Errno> {
        let at = self.position(fd, file_id).ok_or(Errno::ENOENT)?;
        Ok(self.entries.remove(at).file)
    }

    /// Whether a wait would report something now, without consuming any
    /// report (`poll` of the epoll file). `observe` says `None` for a
    /// file that is gone.
    pub fn any_ready(&self, mut observe: impl FnMut(&F) -> Option<Observation>) -> bool {
        self.entries.iter().any(|entry| {
            observe(&entry.file).is_some_and(|observation| entry.report(observation).is_some())
        })
    }

    /// The reports of a wait, at most `max`: each entry that reports
    /// (see the module) in order, one-shot entries disabled once
    /// reported, the reported ones then last in the order. Entries whose file is gone (`observe` says `None`) are
    /// dropped, as Linux drops an entry when its file's last descriptor
    /// is closed.
    pub fn collect(
        &mut self,
        max: usize,
        mut observe: impl FnMut(&F) -> Option<Observation>,
    ) -> Vec<Report> {
        let mut reports = Vec::new();
        let mut kept = Vec::with_capacity(self.entries.len());
        let mut reported = Vec::new();
        for mut entry in self.entries.drain(..) {
            let Some(observation) = observe(&entry.file) else {
                continue;
            };
            match entry.report(observation) {
                Some(events) if reports.len() < max => {
                    reports.push(EpollEvent {
                        events,
                        data: entry.data,
                    });
                    if entry.events & EPOLLONESHOT != 0 {
                        entry.is_disabled = true;
                    }
                    entry.looked(observation);
                    reported.push(entry);
                }
                // No room: the report waits for the next call.
                Some(_) => kept.push(entry),
                None => {
                    entry.looked(observation);
                    kept.push(entry);
                }
            }
        }
        // Reported entries go to the back, as Linux puts a level-triggered
        // file back at the tail of its ready list: with more ready than
        // room, each is reported in turn and none is starved.
        kept.append(&mut reported);
        self.entries = kept;
        reports
    }
}

/// `EPOLLEXCLUSIVE` on `EPOLL_CTL_ADD`: only with
/// [`EPOLLEXCLUSIVE_OK_BITS`], and not on an epoll file.
pub(crate) fn check_exclusive(events: u32, target_is_epoll: bool) -> Result<(), Errno> {
    if events & EPOLLEXCLUSIVE != 0 && (target_is_epoll || events & !EPOLLEXCLUSIVE_OK_BITS != 0) {
        return Err(Errno::EINVAL);
    }
    Ok(())
}
