//! `poll`: `poll`, `ppoll`, `select`, `pselect6`, with their timeouts on
//! the fake clock.

use linux_abi::{syscall::*, time::Timespec};
use vfs::{flags::*, Errno};

use super::*;

const POLLIN: u16 = 0x1;
const POLLOUT: u16 = 0x4;
const POLLHUP: u16 = 0x10;
const POLLNVAL: u16 = 0x20;

/// Writes `struct pollfd`s `(fd, events)` at `offset`: their address.
fn put_pollfds(offset: u64, entries: &[(i32, u16)]) -> u64 {
    let bytes: Vec<u8> = entries
        .iter()
        .flat_map(|&(fd, events)| {
            let mut entry = [0u8; 8];
            entry[..4].copy_from_slice(&fd.to_le_bytes());
            entry[4..6].copy_from_slice(&events.to_le_bytes());
            entry
        })
        .collect();
    put(offset, &bytes)
}

/// The `revents` of entry `index` of the `pollfd`s at `address`.
fn revents(address: u64, index: u64) -> u16 {
    let bytes = fake::peek(address + index * 8 + 6, 2);
    u16::from_le_bytes([bytes[0], bytes[1]])
}

/// Writes a `struct timespec` at `offset`: its address.
fn put_timespec(offset: u64, sec: i64, nsec: i64) -> u64 {
    put(offset, &Timespec { sec, nsec }.to_bytes())
}

/// A pipe: its read and write descriptors.
fn pipe(fixture: &Fixture) -> (u64, u64) {
    assert_eq!(fixture.call(PIPE2, &[at(0x8000), 0]), 0);
    (
        u64::from(peek_u32(at(0x8000))),
        u64::from(peek_u32(at(0x8004))),
    )
}

#[test]
fn poll_refuses_more_descriptors_than_a_process_may_have() {
    let fixture = Fixture::new();
    let fds = put_pollfds(0, &[(0, POLLIN)]);
    for count in [1025, u64::MAX, 1 << 32, (1 << 63) + 1] {
        assert_eq!(fixture.call(POLL, &[fds, count, 0]), err(Errno::EINVAL));
        assert_eq!(
            fixture.call(PPOLL, &[fds, count, 0, 0, 8]),
            err(Errno::EINVAL)
        );
    }
}

#[test]
fn poll_entries_that_fault_are_efault() {
    let fixture = Fixture::new();
    assert_eq!(fixture.call(POLL, &[UNMAPPED, 1, 0]), err(Errno::EFAULT));
    // Eight entries whose last runs into the unmapped page (on the stack
    // path), and many more (on the allocating path).
    assert_eq!(
        fixture.call(POLL, &[UNMAPPED - 60, 8, 0]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(POLL, &[UNMAPPED - 800, 101, 0]),
        err(Errno::EFAULT)
    );
    // Entries that can be read but not written back.
    let fds = put_pollfds(4096, &[(1, POLLOUT)]);
    fake::map_read_only(fds, 8);
    assert_eq!(fixture.call(POLL, &[fds, 1, 0]), err(Errno::EFAULT));
}

#[test]
fn poll_reports_closed_descriptors_and_skips_negative_ones() {
    let fixture = Fixture::new();
    let fds = put_pollfds(0, &[(-1, POLLIN), (42, POLLIN), (1, POLLOUT)]);
    assert_eq!(fixture.call(POLL, &[fds, 3, 0]), 2);
    assert_eq!(revents(fds, 0), 0);
    assert_eq!(revents(fds, 1), POLLNVAL);
    assert_ne!(revents(fds, 2) & POLLOUT, 0);
}

#[test]
fn poll_times_out_on_the_clock() {
    let fixture = Fixture::new();
    let (read_end, _write_end) = pipe(&fixture);
    let fds = put_pollfds(0, &[(read_end as i32, POLLIN)]);
    let start = crate::machine::fake::FakeMachine::now();
    assert_eq!(fixture.call(POLL, &[fds, 1, 250]), 0);
    assert_eq!(revents(fds, 0), 0);
    let deadline = start + 250_000_000;
    assert_eq!(fake::blocks(), [("poll", Some(deadline))]);
    assert!(crate::machine::fake::FakeMachine::now() >= deadline);
    // A timeout of 0 looks once and never blocks.
    assert_eq!(fixture.call(POLL, &[fds, 1, 0]), 0);
    assert_eq!(fake::blocks().len(), 1);
}

#[test]
fn poll_wakes_when_a_watched_pipe_gets_bytes() {
    let fixture = Fixture::new();
    let (read_end, write_end) = pipe(&fixture);
    let writer = fixture.process().fds.get(write_end as i64).expect("open");
    fake::once_blocked(move || {
        assert_eq!(writer.write(b"!"), Ok(1));
    });
    let fds = put_pollfds(0, &[(read_end as i32, POLLIN)]);
    // A negative timeout is forever.
    assert_eq!(fixture.call(POLL, &[fds, 1, 0xffff_ffff]), 1);
    assert_eq!(revents(fds, 0), POLLIN);
    assert_eq!(fake::blocks(), [("poll", None)]);
}

#[test]
fn poll_reports_a_hang_up_unasked() {
    let fixture = Fixture::new();
    let (read_end, write_end) = pipe(&fixture);
    assert_eq!(fixture.call(CLOSE, &[write_end]), 0);
    let fds = put_pollfds(0, &[(read_end as i32, 0)]);
    assert_eq!(fixture.call(POLL, &[fds, 1, 0]), 1);
    assert_eq!(revents(fds, 0), POLLHUP);
}

#[test]
fn a_pipe_without_writers_is_hung_up_and_readable_only_while_bytes_remain() {
    let fixture = Fixture::new();
    let (read_end, write_end) = pipe(&fixture);
    let data = put(0x100, b"x");
    assert_eq!(fixture.call(WRITE, &[write_end, data, 1]), 1);
    assert_eq!(fixture.call(CLOSE, &[write_end]), 0);
    let fds = put_pollfds(0, &[(read_end as i32, POLLIN)]);
    assert_eq!(fixture.call(POLL, &[fds, 1, 0]), 1);
    assert_eq!(revents(fds, 0), POLLIN | POLLHUP);
    assert_eq!(fixture.call(READ, &[read_end, at(0x200), 1]), 1);
    assert_eq!(fixture.call(POLL, &[fds, 1, 0]), 1);
    assert_eq!(revents(fds, 0), POLLHUP, "no POLLIN with nothing to read");
}

#[test]
fn an_interrupted_poll_is_eintr() {
    let fixture = Fixture::new();
    let (read_end, _write_end) = pipe(&fixture);
    let fds = put_pollfds(0, &[(read_end as i32, POLLIN)]);
    fake::once_blocked(|| fake::set_interrupted(true));
    assert_eq!(
        fixture.call(POLL, &[fds, 1, 0xffff_ffff]),
        err(Errno::EINTR)
    );
}

#[test]
fn ppoll_checks_its_timeout_and_mask() {
    let fixture = Fixture::new();
    let fds = put_pollfds(0, &[(1, POLLOUT)]);
    let mask = put(512, &0u64.to_le_bytes());
    for (sec, nsec) in [(-1, 0), (0, -1), (0, 1_000_000_000)] {
        let timeout = put_timespec(256, sec, nsec);
        assert_eq!(
            fixture.call(PPOLL, &[fds, 1, timeout, 0, 8]),
            err(Errno::EINVAL)
        );
    }
    let timeout = put_timespec(256, 0, 0);
    assert_eq!(
        fixture.call(PPOLL, &[fds, 1, UNMAPPED, 0, 8]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(PPOLL, &[fds, 1, timeout, mask, 4]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(PPOLL, &[fds, 1, timeout, mask, 16]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(PPOLL, &[fds, 1, timeout, UNMAPPED, 8]),
        err(Errno::EFAULT)
    );
    assert_eq!(fixture.call(PPOLL, &[fds, 1, timeout, mask, 8]), 1);
}

#[test]
fn ppoll_waits_with_its_mask_and_puts_the_old_one_back() {
    let fixture = Fixture::new();
    let (read_end, _write_end) = pipe(&fixture);
    let fds = put_pollfds(0, &[(read_end as i32, POLLIN)]);
    let during = 1u64 << 9;
    let mask = put(512, &during.to_le_bytes());
    let timeout = put_timespec(256, 1, 0);
    let process = fixture.process();
    let thread = crate::signal::current_thread();
    let seen = alloc::sync::Arc::new(core::sync::atomic::AtomicU64::new(0));
    let seen_during = seen.clone();
    fake::once_blocked(move || {
        let mask = process.signals.lock().mask(thread);
        seen_during.store(mask, core::sync::atomic::Ordering::Relaxed);
    });
    assert_eq!(fixture.call(PPOLL, &[fds, 1, timeout, mask, 8]), 0);
    assert_eq!(seen.load(core::sync::atomic::Ordering::Relaxed), during);
    assert_eq!(fixture.process().signals.lock().mask(thread), 0);
}

#[test]
fn select_checks_its_count_sets_and_timeout() {
    let fixture = Fixture::new();
    let set = put(0, &0b10u64.to_le_bytes());
    for count in [(-1i32) as u32 as u64, 1025, 0x7fff_ffff] {
        assert_eq!(
            fixture.call(SELECT, &[count, set, 0, 0, 0]),
            err(Errno::EINVAL)
        );
    }
    // Only the low 32 bits of the count are an int.
    assert_eq!(fixture.call(SELECT, &[(1 << 32) | 2, 0, set, 0, 0]), 1);
    // A set naming a descriptor that is not open.
    let closed = put(8, &(1u64 << 42).to_le_bytes());
    assert_eq!(
        fixture.call(SELECT, &[43, closed, 0, 0, 0]),
        err(Errno::EBADF)
    );
    assert_eq!(
        fixture.call(SELECT, &[2, UNMAPPED, 0, 0, 0]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(SELECT, &[2, 0, 0, UNMAPPED - 4, 0]),
        err(Errno::EFAULT)
    );
    let negative = put(
        64,
        &linux_abi::time::Timeval { sec: -1, usec: 0 }.to_bytes(),
    );
    assert_eq!(
        fixture.call(SELECT, &[2, set, 0, 0, negative]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(SELECT, &[2, set, 0, 0, UNMAPPED]),
        err(Errno::EFAULT)
    );
}

#[test]
fn select_answers_only_the_sets_that_asked_and_writes_back_the_time_left() {
    let fixture = Fixture::new();
    let (read_end, write_end) = pipe(&fixture);
    let read_set = put(0, &(1u64 << read_end).to_le_bytes());
    let write_set = put(8, &(1u64 << write_end | 1 << read_end).to_le_bytes());
    let timeout = put(64, &linux_abi::time::Timeval { sec: 2, usec: 0 }.to_bytes());
    // The write end is writable; the read end is neither.
    assert_eq!(
        fixture.call(SELECT, &[write_end + 1, read_set, write_set, 0, timeout]),
        1
    );
    assert_eq!(peek_u64(read_set), 0);
    assert_eq!(peek_u64(write_set), 1 << write_end);
    assert_eq!(peek_u64(at(64)), 2, "nothing waited: two seconds left");
    // Nothing ready: the whole timeout passes and zero is left.
    let read_set = put(0, &(1u64 << read_end).to_le_bytes());
    let timeout = put(
        64,
        &linux_abi::time::Timeval { sec: 0, usec: 1500 }.to_bytes(),
    );
    assert_eq!(
        fixture.call(SELECT, &[read_end + 1, read_set, 0, 0, timeout]),
        0
    );
    assert_eq!(peek_u64(read_set), 0);
    assert_eq!(fake::peek(at(64), 16), [0u8; 16]);
}

#[test]
fn pselect6_checks_its_mask_argument() {
    let fixture = Fixture::new();
    let set = put(0, &0b10u64.to_le_bytes());
    let mask = put(64, &0u64.to_le_bytes());
    let wrong_size = put(128, &[mask.to_le_bytes(), 4u64.to_le_bytes()].concat());
    assert_eq!(
        fixture.call(PSELECT6, &[2, 0, set, 0, 0, wrong_size]),
        err(Errno::EINVAL)
    );
    let unmapped_mask = put(128, &[UNMAPPED.to_le_bytes(), 8u64.to_le_bytes()].concat());
    assert_eq!(
        fixture.call(PSELECT6, &[2, 0, set, 0, 0, unmapped_mask]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(PSELECT6, &[2, 0, set, 0, 0, UNMAPPED - 8]),
        err(Errno::EFAULT)
    );
    let bad_timeout = put_timespec(256, 0, 2_000_000_000);
    assert_eq!(
        fixture.call(PSELECT6, &[2, 0, set, 0, bad_timeout, 0]),
        err(Errno::EINVAL)
    );
    let good = put(128, &[mask.to_le_bytes(), 8u64.to_le_bytes()].concat());
    assert_eq!(fixture.call(PSELECT6, &[2, 0, set, 0, 0, good]), 1);
    // A null mask address inside the pair means no mask.
    let no_mask = put(192, &[0u64.to_le_bytes(), 99u64.to_le_bytes()].concat());
    let set = put(0, &0b10u64.to_le_bytes());
    assert_eq!(fixture.call(PSELECT6, &[2, 0, set, 0, 0, no_mask]), 1);
}

#[test]
fn a_regular_file_is_always_ready() {
    let fixture = Fixture::new();
    let fd = fixture.open(b"/tmp/data", O_RDWR | O_CREAT);
    let fds = put_pollfds(0, &[(fd as i32, POLLIN | POLLOUT)]);
    assert_eq!(fixture.call(POLL, &[fds, 1, 0xffff_ffff]), 1);
    assert_eq!(revents(fds, 0), POLLIN | POLLOUT);
    assert!(fake::blocks().is_empty());
}
