//! `epoll`: the argument checks of `epoll_create1`, `epoll_ctl` and the
//! waits, the interest-list rules (`interest_list`, driven with made-up
//! files), and waits over pipes, nested instances and timers on the fake
//! machine.

use linux_abi::{epoll::*, syscall::*};
use vfs::{flags::*, Errno};

use super::*;
use crate::interest_list::{InterestList, Observation};

/// Makes a pipe: its read and write descriptors.
fn pipe(fixture: &Fixture) -> (u64, u64) {
    assert_eq!(fixture.call(PIPE2, &[at(0), 0]), 0);
    (u64::from(peek_u32(at(0))), u64::from(peek_u32(at(4))))
}

/// A new instance's descriptor.
fn epoll(fixture: &Fixture) -> u64 {
    let fd = fixture.call(EPOLL_CREATE1, &[0]);
    assert!(fd >= 0, "epoll_create1: {fd}");
    fd as u64
}

/// Writes a `struct epoll_event` at `offset`: its address.
fn put_event(offset: u64, events: u32, data: u64) -> u64 {
    put(offset, &EpollEvent { events, data }.to_bytes())
}

/// `epoll_ctl(epfd, op, fd, {events, data = fd})`.
fn ctl(fixture: &Fixture, epfd: u64, op: u64, fd: u64, events: u32) -> i64 {
    let event = put_event(0x800, events, fd);
    fixture.call(EPOLL_CTL, &[epfd, op, fd, event])
}

/// The `n` events written at user address `address`.
fn events_at(address: u64, n: usize) -> Vec<EpollEvent> {
    (0..n)
        .map(|index| {
            let bytes = fake::peek(address + (index * EpollEvent::BYTES) as u64, 12);
            EpollEvent::from_bytes(&bytes.try_into().expect("12 bytes"))
        })
        .collect()
}

#[test]
fn epoll_create_checks_its_size_and_flags() {
    let fixture = Fixture::new();
    assert_eq!(fixture.call(EPOLL_CREATE, &[0]), err(Errno::EINVAL));
    assert_eq!(
        fixture.call(EPOLL_CREATE, &[u64::from(u32::MAX)]),
        err(Errno::EINVAL),
        "-1"
    );
    assert_eq!(fixture.call(EPOLL_CREATE, &[1]), 3);
    assert_eq!(fixture.call(EPOLL_CREATE, &[i32::MAX as u64]), 4);
    for flags in [u64::MAX, EPOLL_CLOEXEC + 1, 1] {
        assert_eq!(fixture.call(EPOLL_CREATE1, &[flags]), err(Errno::EINVAL));
    }
    let fd = fixture.call(EPOLL_CREATE1, &[EPOLL_CLOEXEC]) as u64;
    assert_eq!(fixture.call(FCNTL, &[fd, 1]), 1, "close-on-exec");
}

#[test]
fn epoll_ctl_errors_come_in_linux_order() {
    let fixture = Fixture::new();
    let epfd = epoll(&fixture);
    let (read_end, write_end) = pipe(&fixture);
    fixture.make_file(b"/tmp/regular", b"");
    let regular = fixture.open(b"/tmp/regular", O_RDONLY);
    assert_eq!(
        ctl(&fixture, 99, EPOLL_CTL_ADD, write_end, EPOLLOUT),
        err(Errno::EBADF)
    );
    assert_eq!(
        ctl(&fixture, epfd, EPOLL_CTL_ADD, 99, EPOLLOUT),
        err(Errno::EBADF)
    );
    assert_eq!(
        ctl(&fixture, epfd, EPOLL_CTL_ADD, regular, EPOLLIN),
        err(Errno::EPERM)
    );
    assert_eq!(
        ctl(&fixture, read_end, EPOLL_CTL_ADD, write_end, EPOLLIN),
        err(Errno::EINVAL)
    );
    assert_eq!(
        ctl(&fixture, epfd, EPOLL_CTL_ADD, epfd, EPOLLIN),
        err(Errno::EINVAL)
    );
    assert_eq!(
        ctl(&fixture, epfd, u64::MAX, write_end, EPOLLIN),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(EPOLL_CTL, &[epfd, EPOLL_CTL_ADD, write_end, 0]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(EPOLL_CTL, &[epfd, EPOLL_CTL_ADD, write_end, UNMAPPED - 4]),
        err(Errno::EFAULT)
    );
    // DEL reads no event.
    assert_eq!(
        fixture.call(EPOLL_CTL, &[epfd, EPOLL_CTL_DEL, write_end, 0]),
        err(Errno::ENOENT)
    );
    assert_eq!(
        ctl(&fixture, epfd, EPOLL_CTL_MOD, write_end, EPOLLIN),
        err(Errno::ENOENT)
    );
    assert_eq!(ctl(&fixture, epfd, EPOLL_CTL_ADD, read_end, EPOLLIN), 0);
    assert_eq!(
        ctl(&fixture, epfd, EPOLL_CTL_ADD, read_end, EPOLLIN),
        err(Errno::EEXIST)
    );
    assert_eq!(
        ctl(&fixture, epfd, EPOLL_CTL_MOD, read_end, EPOLLIN | EPOLLET),
        0
    );
    assert_eq!(ctl(&fixture, epfd, EPOLL_CTL_DEL, read_end, 0), 0);
    assert_eq!(
        ctl(&fixture, epfd, EPOLL_CTL_DEL, read_end, 0),
        err(Errno::ENOENT)
    );
}

#[test]
fn exclusive_entries_are_added_only_and_not_modified() {
    let fixture = Fixture::new();
    let epfd = epoll(&fixture);
    let inner = epoll(&fixture);
    let (read_end, write_end) = pipe(&fixture);
    assert_eq!(
        ctl(
            &fixture,
            epfd,
            EPOLL_CTL_ADD,
            read_end,
            EPOLLIN | EPOLLEXCLUSIVE | EPOLLONESHOT
        ),
        err(Errno::EINVAL)
    );
    assert_eq!(
        ctl(
            &fixture,
            epfd,
            EPOLL_CTL_ADD,
            inner,
            EPOLLIN | EPOLLEXCLUSIVE
        ),
        err(Errno::EINVAL),
        "not on an instance"
    );
    assert_eq!(
        ctl(
            &fixture,
            epfd,
            EPOLL_CTL_ADD,
            read_end,
            EPOLLIN | EPOLLEXCLUSIVE
        ),
        0
    );
    assert_eq!(
        ctl(&fixture, epfd, EPOLL_CTL_MOD, read_end, EPOLLIN),
        err(Errno::EINVAL)
    );
    assert_eq!(ctl(&fixture, epfd, EPOLL_CTL_ADD, write_end, EPOLLOUT), 0);
    assert_eq!(
        ctl(
            &fixture,
            epfd,
            EPOLL_CTL_MOD,
            write_end,
            EPOLLOUT | EPOLLEXCLUSIVE
        ),
        err(Errno::EINVAL)
    );
}

#[test]
fn instances_may_not_watch_themselves_through_a_cycle_or_nest_too_deep() {
    let fixture = Fixture::new();
    let (read_end, _write_end) = pipe(&fixture);
    // A chain of five, each watching the one before, the first the pipe.
    let mut below = read_end;
    let mut chain = Vec::new();
    for _ in 0..5 {
        let epfd = epoll(&fixture);
        assert_eq!(ctl(&fixture, epfd, EPOLL_CTL_ADD, below, EPOLLIN), 0);
        chain.push(epfd);
        below = epfd;
    }
    let top = epoll(&fixture);
    assert_eq!(
        ctl(&fixture, top, EPOLL_CTL_ADD, below, EPOLLIN),
        err(Errno::ELOOP)
    );
    assert_eq!(
        ctl(&fixture, chain[0], EPOLL_CTL_ADD, chain[1], EPOLLIN),
        err(Errno::ELOOP),
        "a cycle"
    );
}

#[test]
fn a_zero_timeout_looks_once_and_gives_the_processor_to_nobody() {
    let fixture = Fixture::new();
    let epfd = epoll(&fixture);
    let (read_end, _write_end) = pipe(&fixture);
    assert_eq!(ctl(&fixture, epfd, EPOLL_CTL_ADD, read_end, EPOLLIN), 0);
    // Other threads are ready: a wait that may wait would yield to them
    // first (LTP's epoll_wait04 times a zero timeout).
    fake::set_others_ready(true);
    assert_eq!(fixture.call(EPOLL_WAIT, &[epfd, at(0x1000), 1, 0]), 0);
    assert_eq!(fake::yields(), 0);
    assert!(fake::blocks().is_empty());
    // A timeout that has not passed does yield before it blocks.
    fake::once_blocked(|| fake::set_interrupted(true));
    assert_eq!(
        fixture.call(EPOLL_WAIT, &[epfd, at(0x1000), 1, 10]),
        err(Errno::EINTR)
    );
    assert!(fake::yields() > 0);
}

#[test]
fn waits_check_maxevents_the_array_and_the_descriptor() {
    let fixture = Fixture::new();
    let epfd = epoll(&fixture);
    let (read_end, write_end) = pipe(&fixture);
    assert_eq!(ctl(&fixture, epfd, EPOLL_CTL_ADD, write_end, EPOLLOUT), 0);
    let events = at(0x1000);
    for max in [0, u64::from(u32::MAX), i32::MAX as u64] {
        assert_eq!(
            fixture.call(EPOLL_WAIT, &[epfd, events, max, 0]),
            err(Errno::EINVAL)
        );
    }
    assert_eq!(
        fixture.call(EPOLL_WAIT, &[epfd, KERNEL_ADDRESS, 1, 0]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(EPOLL_WAIT, &[99, events, 1, 0]),
        err(Errno::EBADF)
    );
    assert_eq!(
        fixture.call(EPOLL_WAIT, &[read_end, events, 1, 0]),
        err(Errno::EINVAL)
    );
    fake::map_read_only(at(0x3000), 4096);
    assert_eq!(
        fixture.call(EPOLL_WAIT, &[epfd, at(0x3000), 1, 0]),
        err(Errno::EFAULT),
        "a ready event cannot be written"
    );
}

#[test]
fn pwaits_check_the_mask_and_the_timeout() {
    let fixture = Fixture::new();
    let epfd = epoll(&fixture);
    let events = at(0x1000);
    let mask = put(0x100, &0u64.to_le_bytes());
    assert_eq!(
        fixture.call(EPOLL_PWAIT, &[epfd, events, 1, 0, mask, 4]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(EPOLL_PWAIT, &[epfd, events, 1, 0, UNMAPPED, 8]),
        err(Errno::EFAULT)
    );
    assert_eq!(fixture.call(EPOLL_PWAIT, &[epfd, events, 1, 0, mask, 8]), 0);
    for (sec, nsec) in [(-1i64, 0i64), (0, -1), (0, 1_000_000_000)] {
        let mut timespec = sec.to_le_bytes().to_vec();
        timespec.extend_from_slice(&nsec.to_le_bytes());
        let timeout = put(0x200, &timespec);
        assert_eq!(
            fixture.call(EPOLL_PWAIT2, &[epfd, events, 1, timeout, 0, 0]),
            err(Errno::EINVAL)
        );
    }
    assert_eq!(
        fixture.call(EPOLL_PWAIT2, &[epfd, events, 1, UNMAPPED, 0, 0]),
        err(Errno::EFAULT)
    );
    let timeout = put(0x200, &[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        fixture.call(EPOLL_PWAIT2, &[epfd, events, 1, timeout, 0, 0]),
        0
    );
    assert_eq!(fake::blocks().last().map(|block| block.0), Some("epoll"));
}

#[test]
fn a_wait_reports_ready_pipe_ends_with_their_data() {
    let fixture = Fixture::new();
    let epfd = epoll(&fixture);
    let (read_end, write_end) = pipe(&fixture);
    assert_eq!(ctl(&fixture, epfd, EPOLL_CTL_ADD, read_end, EPOLLIN), 0);
    assert_eq!(ctl(&fixture, epfd, EPOLL_CTL_ADD, write_end, EPOLLOUT), 0);
    let events = at(0x1000);
    assert_eq!(fixture.call(EPOLL_WAIT, &[epfd, events, 2, 0]), 1);
    assert_eq!(
        events_at(events, 1),
        [EpollEvent {
            events: EPOLLOUT,
            data: write_end
        }]
    );
    let data = put(0x100, b"x");
    assert_eq!(fixture.call(WRITE, &[write_end, data, 1]), 1);
    assert_eq!(fixture.call(EPOLL_WAIT, &[epfd, events, 2, 0]), 2);
    assert_eq!(
        events_at(events, 2),
        [
            EpollEvent {
                events: EPOLLIN,
                data: read_end
            },
            EpollEvent {
                events: EPOLLOUT,
                data: write_end
            }
        ]
    );
    // Room for one: the first only.
    assert_eq!(fixture.call(EPOLL_WAIT, &[epfd, events, 1, 0]), 1);
    assert_eq!(events_at(events, 1)[0].data, read_end);
}

#[test]
fn a_blocked_wait_wakes_for_a_write_and_is_interrupted_by_a_signal() {
    let fixture = Fixture::new();
    let epfd = epoll(&fixture);
    let (read_end, write_end) = pipe(&fixture);
    assert_eq!(ctl(&fixture, epfd, EPOLL_CTL_ADD, read_end, EPOLLIN), 0);
    let writer = fixture.process().fds.get(write_end as i64).expect("open");
    fake::once_blocked(move || {
        assert_eq!(writer.write(b"!"), Ok(1));
    });
    let events = at(0x1000);
    assert_eq!(fixture.call(EPOLL_WAIT, &[epfd, events, 1, u64::MAX]), 1);
    assert_eq!(fake::blocks(), [("epoll", None)]);
    assert_eq!(fixture.call(READ, &[read_end, at(0x100), 1]), 1);
    fake::once_blocked(|| fake::set_interrupted(true));
    assert_eq!(
        fixture.call(EPOLL_WAIT, &[epfd, events, 1, u64::MAX]),
        err(Errno::EINTR)
    );
    fake::set_interrupted(false);
    // A timeout ends the wait with nothing.
    let before = crate::machine::fake::FakeMachine::now();
    assert_eq!(fixture.call(EPOLL_WAIT, &[epfd, events, 1, 50]), 0);
    assert_eq!(
        crate::machine::fake::FakeMachine::now() - before,
        50_000_000
    );
}

#[test]
fn closing_the_last_descriptor_of_a_file_drops_its_entry() {
    let fixture = Fixture::new();
    let epfd = epoll(&fixture);
    let (read_end, write_end) = pipe(&fixture);
    assert_eq!(ctl(&fixture, epfd, EPOLL_CTL_ADD, write_end, EPOLLOUT), 0);
    assert_eq!(fixture.call(CLOSE, &[write_end]), 0);
    // The instance does not keep the write end open: the reader sees the
    // end of the file.
    assert_eq!(fixture.call(READ, &[read_end, at(0x100), 1]), 0);
    assert_eq!(fixture.call(EPOLL_WAIT, &[epfd, at(0x1000), 1, 0]), 0);
}

#[test]
fn an_instance_is_readable_while_a_wait_would_report() {
    let fixture = Fixture::new();
    let outer = epoll(&fixture);
    let inner = epoll(&fixture);
    let (read_end, write_end) = pipe(&fixture);
    assert_eq!(ctl(&fixture, inner, EPOLL_CTL_ADD, read_end, EPOLLIN), 0);
    assert_eq!(ctl(&fixture, outer, EPOLL_CTL_ADD, inner, EPOLLIN), 0);
    let events = at(0x1000);
    assert_eq!(fixture.call(EPOLL_WAIT, &[outer, events, 1, 0]), 0);
    let writer = fixture.process().fds.get(write_end as i64).expect("open");
    fake::once_blocked(move || {
        assert_eq!(writer.write(b"!"), Ok(1));
    });
    assert_eq!(fixture.call(EPOLL_WAIT, &[outer, events, 1, u64::MAX]), 1);
    assert_eq!(
        events_at(events, 1),
        [EpollEvent {
            events: EPOLLIN,
            data: inner
        }]
    );
}

/// A made-up file for the interest list: a number.
type Made = u32;

/// An observation of `ready` bits after `wakes` wake-ups.
fn seen(ready: u32, wakes: u64) -> Option<Observation> {
    Some(Observation { ready, wakes })
}

#[test]
fn level_triggered_entries_report_while_ready() {
    let mut list = InterestList::<Made>::default();
    let event = EpollEvent {
        events: EPOLLIN,
        data: 7,
    };
    assert_eq!(list.add(3, 1, 1, event, false), Ok(()));
    assert_eq!(list.add(3, 1, 1, event, false), Err(Errno::EEXIST));
    assert_eq!(list.add(3, 2, 2, event, false), Ok(()), "another file");
    let reports = list.collect(8, |&file| {
        seen(if file == 1 { EPOLLIN | EPOLLOUT } else { 0 }, 0)
    });
    assert_eq!(
        reports,
        [EpollEvent {
            events: EPOLLIN,
            data: 7
        }]
    );
    let again = list.collect(8, |&file| seen(if file == 1 { EPOLLIN } else { 0 }, 0));
    assert_eq!(again.len(), 1);
    // Errors and hang-ups are reported unasked.
    let hung = list.collect(8, |_| seen(EPOLLHUP, 0));
    assert_eq!(hung.len(), 2);
    assert!(hung.iter().all(|report| report.events == EPOLLHUP));
}

#[test]
fn edge_triggered_entries_report_once_per_wake_up() {
    let mut list = InterestList::<Made>::default();
    let event = EpollEvent {
        events: EPOLLIN | EPOLLET,
        data: 1,
    };
    assert_eq!(list.add(3, 1, 1, event, false), Ok(()));
    // Ready when added: reported once.
    assert_eq!(list.collect(8, |_| seen(EPOLLIN, 4)).len(), 1);
    assert_eq!(list.collect(8, |_| seen(EPOLLIN, 4)).len(), 0);
    // A wake-up while still ready (more data): reported again.
    assert_eq!(list.collect(8, |_| seen(EPOLLIN, 5)).len(), 1);
    // Not ready, then ready with no wake-up (a timer): reported.
    assert_eq!(list.collect(8, |_| seen(0, 5)).len(), 0);
    assert_eq!(list.collect(8, |_| seen(EPOLLIN, 5)).len(), 1);
    // No room: the report is kept for the next wait.
    assert_eq!(list.collect(0, |_| seen(EPOLLIN, 6)).len(), 0);
    assert_eq!(list.collect(8, |_| seen(EPOLLIN, 6)).len(), 1);
    // MOD reports a ready file again, as an add does.
    assert_eq!(list.modify(3, 1, event), Ok(()));
    assert!(list.any_ready(|_| seen(EPOLLIN, 6)));
    assert_eq!(list.collect(8, |_| seen(EPOLLIN, 6)).len(), 1);
    assert!(!list.any_ready(|_| seen(EPOLLIN, 6)));
}

#[test]
fn one_shot_entries_fall_silent_until_modified() {
    let mut list = InterestList::<Made>::default();
    let event = EpollEvent {
        events: EPOLLIN | EPOLLONESHOT,
        data: 1,
    };
    assert_eq!(list.add(3, 1, 1, event, false), Ok(()));
    assert_eq!(list.collect(8, |_| seen(EPOLLIN, 0)).len(), 1);
    assert_eq!(list.collect(8, |_| seen(EPOLLIN | EPOLLHUP, 1)).len(), 0);
    assert_eq!(list.modify(3, 1, event), Ok(()));
    assert_eq!(list.collect(8, |_| seen(EPOLLIN, 1)).len(), 1);
}

#[test]
fn entries_of_closed_files_are_dropped_and_delete_returns_the_file() {
    let mut list = InterestList::<Made>::default();
    let event = EpollEvent {
        events: EPOLLIN,
        data: 1,
    };
    assert_eq!(list.add(3, 1, 1, event, false), Ok(()));
    assert_eq!(list.add(4, 2, 2, event, false), Ok(()));
    assert_eq!(
        list.collect(8, |&file| if file == 1 { None } else { seen(0, 0) })
            .len(),
        0
    );
    assert_eq!(list.files().copied().collect::<Vec<_>>(), [2]);
    assert_eq!(list.delete(3, 1), Err(Errno::ENOENT));
    assert_eq!(list.delete(4, 2), Ok(2));
    assert_eq!(list.modify(4, 2, event), Err(Errno::ENOENT));
}

#[test]
fn with_more_ready_than_room_each_is_reported_in_turn() {
    let mut list = InterestList::<Made>::default();
    for fd in 0..4 {
        let event = EpollEvent {
            events: EPOLLIN,
            data: u64::from(fd as u32),
        };
        assert_eq!(list.add(fd, fd as usize, fd as u32, event, false), Ok(()));
    }
    let mut counts = [0; 4];
    for _ in 0..6 {
        for report in list.collect(2, |_| seen(EPOLLIN, 0)) {
            counts[report.data as usize] += 1;
        }
    }
    assert_eq!(counts, [3, 3, 3, 3]);
}

#[test]
fn a_write_end_without_readers_reports_an_error_not_a_hang_up() {
    let fixture = Fixture::new();
    let epfd = epoll(&fixture);
    let (read_end, write_end) = pipe(&fixture);
    assert_eq!(ctl(&fixture, epfd, EPOLL_CTL_ADD, write_end, EPOLLOUT), 0);
    assert_eq!(fixture.call(CLOSE, &[read_end]), 0);
    let events = at(0x1000);
    assert_eq!(fixture.call(EPOLL_WAIT, &[epfd, events, 1, 0]), 1);
    assert_eq!(events_at(events, 1)[0].events, EPOLLOUT | EPOLLERR);
}
