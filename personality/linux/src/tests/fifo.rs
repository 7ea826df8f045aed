//! Named pipes: opens that wait for the other side, `O_NONBLOCK`'s
//! answers, one queue shared by every open, and `poll` on them.

use linux_abi::syscall::*;
use vfs::{flags::*, Errno, S_IFIFO};

use super::*;

const POLLIN: u16 = 0x1;
const POLLOUT: u16 = 0x4;
const POLLHUP: u16 = 0x10;

/// Makes the FIFO `/tmp/fifo`: its path's address.
fn make_fifo(fixture: &Fixture) -> u64 {
    let path = put_string(0x800, b"/tmp/fifo");
    assert_eq!(
        fixture.call(MKNOD, &[path, u64::from(S_IFIFO | 0o666), 0]),
        0
    );
    path
}

/// Opens `path` with `flags`: the descriptor or `-errno`.
fn open(fixture: &Fixture, path: u64, flags: u32) -> i64 {
    fixture.call(OPEN, &[path, u64::from(flags)])
}

/// `poll`s descriptor `fd` for `events` without waiting: its `revents`.
fn poll_now(fixture: &Fixture, fd: i64, events: u16) -> u16 {
    let mut entry = [0u8; 8];
    entry[..4].copy_from_slice(&(fd as i32).to_le_bytes());
    entry[4..6].copy_from_slice(&events.to_le_bytes());
    let address = put(0x900, &entry);
    fixture.call(POLL, &[address, 1, 0]);
    let revents = fake::peek(address + 6, 2);
    u16::from_le_bytes([revents[0], revents[1]])
}

#[test]
fn a_fifo_opened_for_reading_and_writing_is_one_pipe() {
    let fixture = Fixture::new();
    let path = make_fifo(&fixture);
    let both = open(&fixture, path, O_RDWR);
    assert!(both >= 0);
    let data = put(0, b"fifo");
    assert_eq!(fixture.call(WRITE, &[both as u64, data, 4]), 4);
    assert_eq!(poll_now(&fixture, both, POLLIN | POLLOUT), POLLIN | POLLOUT);
    let again = fixture.call(DUP, &[both as u64]);
    assert_eq!(fixture.call(READ, &[again as u64, at(0x100), 16]), 4);
    assert_eq!(fake::peek(at(0x100), 4), b"fifo");
    assert_eq!(poll_now(&fixture, both, POLLIN | POLLOUT), POLLOUT);
    assert_eq!(
        fixture.call(LSEEK, &[both as u64, 0, 0]),
        err(Errno::ESPIPE)
    );
    assert_eq!(fixture.call(FSTAT, &[both as u64, at(0x200)]), 0);
    assert_eq!(peek_u32(at(0x200 + 24)) & 0o170000, S_IFIFO, "st_mode");
}

#[test]
fn nonblocking_opens_do_not_wait_and_a_lone_writer_is_enxio() {
    let fixture = Fixture::new();
    let path = make_fifo(&fixture);
    assert_eq!(
        open(&fixture, path, O_WRONLY | O_NONBLOCK),
        err(Errno::ENXIO)
    );
    let reader = open(&fixture, path, O_RDONLY | O_NONBLOCK);
    assert!(reader >= 0);
    // No writer has come yet: no hang-up, and a read is the end.
    assert_eq!(poll_now(&fixture, reader, POLLIN), 0);
    assert_eq!(fixture.call(READ, &[reader as u64, at(0x100), 1]), 0);
    let writer = open(&fixture, path, O_WRONLY | O_NONBLOCK);
    assert!(writer >= 0);
    let data = put(0, b"x");
    assert_eq!(fixture.call(WRITE, &[writer as u64, data, 1]), 1);
    assert_eq!(poll_now(&fixture, reader, POLLIN), POLLIN);
    assert_eq!(fixture.call(CLOSE, &[writer as u64]), 0);
    assert_eq!(poll_now(&fixture, reader, POLLIN), POLLIN | POLLHUP);
    assert_eq!(fixture.call(READ, &[reader as u64, at(0x100), 8]), 1);
    assert_eq!(poll_now(&fixture, reader, POLLIN), POLLHUP);
}

#[test]
fn a_blocking_open_for_reading_waits_for_a_writer() {
    let fixture = Fixture::new();
    let path = make_fifo(&fixture);
    let vfs = fixture.personality.vfs().clone();
    let root = fixture.root();
    fake::once_blocked(move || {
        let writer = vfs
            .open(&root, b"/tmp/fifo", O_WRONLY, 0)
            .expect("a reader is there");
        assert_eq!(writer.write(b"hi"), Ok(2));
    });
    let reader = open(&fixture, path, O_RDONLY);
    assert!(reader >= 0);
    assert_eq!(fake::blocks(), [("fifo open", None)]);
    // The writer's open file is gone: its bytes remain, then the end.
    assert_eq!(fixture.call(READ, &[reader as u64, at(0x100), 8]), 2);
    assert_eq!(fixture.call(READ, &[reader as u64, at(0x100), 8]), 0);
}

#[test]
fn an_interrupted_open_is_eintr_and_opens_nothing() {
    let fixture = Fixture::new();
    let path = make_fifo(&fixture);
    fake::once_blocked(|| fake::set_interrupted(true));
    assert_eq!(open(&fixture, path, O_WRONLY), err(Errno::EINTR));
    fake::set_interrupted(false);
    assert_eq!(fixture.process().fds.descriptors(), [0, 1, 2]);
    // The interrupted writer left no end behind: a reader still finds
    // none.
    assert_eq!(
        open(&fixture, path, O_WRONLY | O_NONBLOCK),
        err(Errno::ENXIO)
    );
}
