//! `pipe`: `pipe`, `pipe2`, and reads and writes of both ends, blocking
//! on the fake machine.

use linux_abi::syscall::*;
use vfs::{flags::*, Errno};

use super::*;

/// Makes a pipe with `flags`: its read and write descriptors.
fn pipe(fixture: &Fixture, flags: u32) -> (u64, u64) {
    assert_eq!(fixture.call(PIPE2, &[at(0), u64::from(flags)]), 0);
    (u64::from(peek_u32(at(0))), u64::from(peek_u32(at(4))))
}

#[test]
fn pipe2_refuses_unknown_flags() {
    let fixture = Fixture::new();
    for flags in [O_APPEND, O_CREAT, O_RDWR, 1 << 31] {
        assert_eq!(
            fixture.call(PIPE2, &[at(0), u64::from(flags)]),
            err(Errno::EINVAL)
        );
    }
    assert_eq!(fixture.process().fds.descriptors(), [0, 1, 2]);
}

#[test]
fn a_pipe_whose_descriptors_cannot_be_written_back_leaves_none_open() {
    let fixture = Fixture::new();
    for fds in [UNMAPPED, UNMAPPED - 4, KERNEL_ADDRESS, 0] {
        assert_eq!(fixture.call(PIPE, &[fds]), err(Errno::EFAULT));
        assert_eq!(fixture.process().fds.descriptors(), [0, 1, 2]);
    }
    fake::map_read_only(at(4096), 8);
    assert_eq!(fixture.call(PIPE, &[at(4096)]), err(Errno::EFAULT));
    assert_eq!(fixture.process().fds.descriptors(), [0, 1, 2]);
}

#[test]
fn bytes_written_are_read_in_order() {
    let fixture = Fixture::new();
    let (read_end, write_end) = pipe(&fixture, O_CLOEXEC);
    assert_eq!((read_end, write_end), (3, 4));
    assert_eq!(fixture.call(FCNTL, &[read_end, 1]), 1, "close-on-exec");
    let data = put(64, b"through the pipe");
    assert_eq!(fixture.call(WRITE, &[write_end, data, 16]), 16);
    assert_eq!(fixture.call(READ, &[read_end, at(256), 7]), 7);
    assert_eq!(fixture.call(READ, &[read_end, at(263), 100]), 9);
    assert_eq!(fake::peek(at(256), 16), b"through the pipe");
    // Each end refuses the other's direction.
    assert_eq!(
        fixture.call(READ, &[write_end, at(256), 1]),
        err(Errno::EBADF)
    );
    assert_eq!(fixture.call(WRITE, &[read_end, data, 1]), err(Errno::EBADF));
    assert_eq!(fixture.call(LSEEK, &[read_end, 0, 0]), err(Errno::ESPIPE));
}

#[test]
fn an_empty_nonblocking_pipe_is_eagain_and_a_full_one_takes_what_fits() {
    let fixture = Fixture::new();
    let (read_end, write_end) = pipe(&fixture, O_NONBLOCK);
    assert_eq!(
        fixture.call(READ, &[read_end, at(0), 1]),
        err(Errno::EAGAIN)
    );
    let capacity = crate::pipe::PIPE_CAPACITY as u64;
    let room = 40_000;
    assert_eq!(fixture.call(WRITE, &[write_end, at(0), room]), room as i64);
    assert_eq!(
        fixture.call(WRITE, &[write_end, at(0), room]),
        (capacity - room) as i64
    );
    assert_eq!(
        fixture.call(WRITE, &[write_end, at(0), 1]),
        err(Errno::EAGAIN)
    );
    assert!(fake::blocks().is_empty(), "a nonblocking pipe never blocks");
}

#[test]
fn with_no_writer_a_read_is_the_end_and_with_no_reader_a_write_is_epipe() {
    let fixture = Fixture::new();
    let (read_end, write_end) = pipe(&fixture, 0);
    assert_eq!(fixture.call(CLOSE, &[write_end]), 0);
    assert_eq!(fixture.call(READ, &[read_end, at(0), 10]), 0);
    let (read_end, write_end) = pipe(&fixture, 0);
    assert_eq!(fixture.call(CLOSE, &[read_end]), 0);
    assert_eq!(
        fixture.call(WRITE, &[write_end, at(0), 10]),
        err(Errno::EPIPE)
    );
}

#[test]
fn a_blocked_read_gets_what_a_writer_writes_meanwhile() {
    let fixture = Fixture::new();
    let (read_end, write_end) = pipe(&fixture, 0);
    let writer = fixture.process().fds.get(write_end as i64).expect("open");
    fake::once_blocked(move || {
        assert_eq!(writer.write(b"late"), Ok(4));
    });
    assert_eq!(fixture.call(READ, &[read_end, at(0), 64]), 4);
    assert_eq!(fake::peek(at(0), 4), b"late");
    assert_eq!(fake::blocks(), [("pipe read", None)]);
}

#[test]
fn a_write_larger_than_the_pipe_waits_for_the_reader() {
    let fixture = Fixture::new();
    let (read_end, write_end) = pipe(&fixture, 0);
    let reader = fixture.process().fds.get(read_end as i64).expect("open");
    // Each time the writer blocks, the reader drains the pipe.
    fake::while_blocked(move || {
        let mut sink = alloc::vec![0u8; crate::pipe::PIPE_CAPACITY];
        assert!(reader.read(&mut sink).expect("a read") > 0);
    });
    fake::map(at(0), 4 * crate::pipe::PIPE_CAPACITY);
    let count = 3 * crate::pipe::PIPE_CAPACITY as u64 + 5;
    assert_eq!(
        fixture.call(WRITE, &[write_end, at(0), count]),
        count as i64
    );
    assert!(fake::blocks().iter().all(|block| block.0 == "pipe write"));
    assert!(fake::blocks().len() >= 3);
}

#[test]
fn a_blocked_read_ends_with_eintr_when_interrupted() {
    let fixture = Fixture::new();
    let (read_end, _write_end) = pipe(&fixture, 0);
    fake::once_blocked(|| fake::set_interrupted(true));
    assert_eq!(fixture.call(READ, &[read_end, at(0), 1]), err(Errno::EINTR));
    // Interrupted before it waits, it does not wait at all.
    let blocks = fake::blocks().len();
    assert_eq!(fixture.call(READ, &[read_end, at(0), 1]), err(Errno::EINTR));
    assert_eq!(fake::blocks().len(), blocks);
}

#[test]
fn the_last_writer_closing_wakes_a_blocked_reader() {
    let fixture = Fixture::new();
    let (read_end, write_end) = pipe(&fixture, 0);
    let process = fixture.process();
    fake::once_blocked(move || {
        process.fds.close(write_end as i64).expect("open");
    });
    assert_eq!(fixture.call(READ, &[read_end, at(0), 8]), 0);
}

#[test]
fn a_pipe_stats_as_a_fifo() {
    let fixture = Fixture::new();
    let (read_end, _) = pipe(&fixture, 0);
    assert_eq!(fixture.call(FSTAT, &[read_end, at(64)]), 0);
    const S_IFMT: u32 = 0o170000;
    const S_IFIFO: u32 = 0o010000;
    assert_eq!(peek_u32(at(64 + 24)) & S_IFMT, S_IFIFO);
}
