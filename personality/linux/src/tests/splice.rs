//! `splice`, `tee`, `vmsplice` and `copy_file_range`: which bytes move,
//! where the offsets end up, and the errors.

use linux_abi::syscall::*;
use vfs::{flags::*, Errno};

use super::*;

const SPLICE_F_NONBLOCK: u64 = 2;

/// Makes a pipe with `flags`: its read and write descriptors.
fn pipe(fixture: &Fixture, flags: u32) -> (u64, u64) {
    assert_eq!(fixture.call(PIPE2, &[at(0), u64::from(flags)]), 0);
    (u64::from(peek_u32(at(0))), u64::from(peek_u32(at(4))))
}

#[test]
fn splice_moves_a_file_through_a_pipe_into_another_file() {
    let fixture = Fixture::new();
    fixture.make_file(b"/source", b"0123456789");
    let source = fixture.open(b"/source", O_RDONLY);
    let sink = fixture.open(b"/sink", O_WRONLY | O_CREAT);
    let (read_end, write_end) = pipe(&fixture, 0);
    // From offset 2 of the file (a pointer: the file's position stays).
    let offset = put(64, &2u64.to_le_bytes());
    assert_eq!(
        fixture.call(SPLICE, &[source, offset, write_end, 0, 5, 0]),
        5
    );
    assert_eq!(peek_u64(offset), 7);
    assert_eq!(fixture.call(LSEEK, &[source, 0, 1]), 0);
    // Out of the pipe into the file at its position.
    assert_eq!(fixture.call(SPLICE, &[read_end, 0, sink, 0, 100, 0]), 5);
    assert_eq!(fixture.call(LSEEK, &[sink, 0, 1]), 5);
    assert_eq!(fixture.file_contents(b"/sink"), b"23456");
    // The pipe is empty now: a nonblocking splice out of it is EAGAIN.
    assert_eq!(
        fixture.call(SPLICE, &[read_end, 0, sink, 0, 100, SPLICE_F_NONBLOCK]),
        err(Errno::EAGAIN)
    );
    // From the file's own position to its end, then 0.
    assert_eq!(fixture.call(LSEEK, &[source, 8, 0]), 8);
    assert_eq!(fixture.call(SPLICE, &[source, 0, write_end, 0, 100, 0]), 2);
    assert_eq!(fixture.call(SPLICE, &[source, 0, write_end, 0, 100, 0]), 0);
}

#[test]
fn splice_checks_its_descriptors_offsets_and_flags() {
    let fixture = Fixture::new();
    fixture.make_file(b"/file", b"data");
    let file = fixture.open(b"/file", O_RDWR);
    let appending = fixture.open(b"/file", O_WRONLY | O_APPEND);
    let (read_end, write_end) = pipe(&fixture, 0);
    let (other_read, other_write) = pipe(&fixture, 0);
    // Neither side a pipe.
    assert_eq!(
        fixture.call(SPLICE, &[file, 0, file, 0, 4, 0]),
        err(Errno::EINVAL)
    );
    // Unknown flags; a closed descriptor; the wrong direction.
    assert_eq!(
        fixture.call(SPLICE, &[file, 0, write_end, 0, 4, 0x100]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(SPLICE, &[99, 0, write_end, 0, 4, 0]),
        err(Errno::EBADF)
    );
    assert_eq!(
        fixture.call(SPLICE, &[write_end, 0, file, 0, 4, 0]),
        err(Errno::EBADF)
    );
    // An offset for a pipe; a negative or unreadable one for a file.
    let offset = put(64, &0u64.to_le_bytes());
    assert_eq!(
        fixture.call(SPLICE, &[read_end, offset, file, 0, 4, 0]),
        err(Errno::ESPIPE)
    );
    let negative = put(72, &(-1i64).to_le_bytes());
    assert_eq!(
        fixture.call(SPLICE, &[file, negative, write_end, 0, 4, 0]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(SPLICE, &[file, UNMAPPED, write_end, 0, 4, 0]),
        err(Errno::EFAULT)
    );
    // An appending output.
    assert_eq!(
        fixture.call(SPLICE, &[read_end, 0, appending, 0, 4, 0]),
        err(Errno::EINVAL)
    );
    // One pipe on both sides is EINVAL; two different ones move bytes.
    assert_eq!(
        fixture.call(SPLICE, &[read_end, 0, write_end, 0, 4, 0]),
        err(Errno::EINVAL)
    );
    let data = put(128, b"ab");
    assert_eq!(fixture.call(WRITE, &[write_end, data, 2]), 2);
    assert_eq!(
        fixture.call(SPLICE, &[read_end, 0, other_write, 0, 4, 0]),
        2
    );
    assert_eq!(fixture.call(READ, &[other_read, at(256), 4]), 2);
    assert_eq!(fake::peek(at(256), 2), b"ab");
}

#[test]
fn tee_copies_a_pipes_bytes_and_leaves_them() {
    let fixture = Fixture::new();
    let (first_read, first_write) = pipe(&fixture, 0);
    let (second_read, second_write) = pipe(&fixture, 0);
    let data = put(64, b"teeing");
    assert_eq!(fixture.call(WRITE, &[first_write, data, 6]), 6);
    assert_eq!(fixture.call(TEE, &[first_read, second_write, 4, 0]), 4);
    assert_eq!(fixture.call(READ, &[second_read, at(256), 100]), 4);
    assert_eq!(fake::peek(at(256), 4), b"teei");
    // The first pipe still holds all six.
    assert_eq!(fixture.call(READ, &[first_read, at(256), 100]), 6);
    assert_eq!(fake::peek(at(256), 6), b"teeing");
    // Empty now: nonblocking is EAGAIN.
    assert_eq!(
        fixture.call(TEE, &[first_read, second_write, 4, SPLICE_F_NONBLOCK]),
        err(Errno::EAGAIN)
    );
    // Not pipes, or one pipe twice.
    fixture.make_file(b"/file", b"x");
    let file = fixture.open(b"/file", O_RDWR);
    assert_eq!(
        fixture.call(TEE, &[file, second_write, 4, 0]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(TEE, &[first_read, file, 4, 0]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(TEE, &[first_read, first_write, 4, 0]),
        err(Errno::EINVAL)
    );
    // No writer left and nothing queued: 0.
    assert_eq!(fixture.call(CLOSE, &[first_write]), 0);
    assert_eq!(fixture.call(TEE, &[first_read, second_write, 4, 0]), 0);
}

#[test]
fn vmsplice_writes_user_memory_into_a_pipe_and_reads_it_out() {
    let fixture = Fixture::new();
    let (read_end, write_end) = pipe(&fixture, 0);
    put(512, b"vectorsplice");
    let vectors = put_iovecs(128, &[(at(512), 6), (at(518), 6)]);
    assert_eq!(fixture.call(VMSPLICE, &[write_end, vectors, 2, 0]), 12);
    let out = put_iovecs(192, &[(at(1024), 12)]);
    assert_eq!(fixture.call(VMSPLICE, &[read_end, out, 1, 0]), 12);
    assert_eq!(fake::peek(at(1024), 12), b"vectorsplice");
    // Not a pipe; too many vectors; a bad vector.
    fixture.make_file(b"/file", b"x");
    let file = fixture.open(b"/file", O_RDWR);
    assert_eq!(
        fixture.call(VMSPLICE, &[file, vectors, 2, 0]),
        err(Errno::EBADF)
    );
    assert_eq!(
        fixture.call(VMSPLICE, &[write_end, vectors, 1025, 0]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(VMSPLICE, &[write_end, UNMAPPED, 1, 0]),
        err(Errno::EFAULT)
    );
}

#[test]
fn copy_file_range_copies_between_files_and_moves_the_offsets_it_used() {
    let fixture = Fixture::new();
    fixture.make_file(b"/in", b"abcdefghij");
    let input = fixture.open(b"/in", O_RDONLY);
    let output = fixture.open(b"/out", O_RDWR | O_CREAT);
    // From the input's position (advanced) to offset 3 of the output
    // (the pointer advanced, the position not).
    let out_offset = put(64, &3u64.to_le_bytes());
    assert_eq!(
        fixture.call(COPY_FILE_RANGE, &[input, 0, output, out_offset, 4, 0]),
        4
    );
    assert_eq!(fixture.call(LSEEK, &[input, 0, 1]), 4);
    assert_eq!(peek_u64(out_offset), 7);
    assert_eq!(fixture.call(LSEEK, &[output, 0, 1]), 0);
    assert_eq!(fixture.file_contents(b"/out"), b"\0\0\0abcd");
    // Past the input's end: 0.
    let in_offset = put(72, &20u64.to_le_bytes());
    assert_eq!(
        fixture.call(COPY_FILE_RANGE, &[input, in_offset, output, 0, 4, 0]),
        0
    );
    // Flags, directions, kinds of file, overlapping ranges of one file.
    assert_eq!(
        fixture.call(COPY_FILE_RANGE, &[input, 0, output, 0, 4, 1]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(COPY_FILE_RANGE, &[output, 0, input, 0, 4, 0]),
        err(Errno::EBADF)
    );
    let appending = fixture.open(b"/out", O_WRONLY | O_APPEND);
    assert_eq!(
        fixture.call(COPY_FILE_RANGE, &[input, 0, appending, 0, 4, 0]),
        err(Errno::EBADF)
    );
    let (read_end, write_end) = pipe(&fixture, 0);
    assert_eq!(
        fixture.call(COPY_FILE_RANGE, &[read_end, 0, output, 0, 4, 0]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(COPY_FILE_RANGE, &[input, 0, write_end, 0, 4, 0]),
        err(Errno::EINVAL)
    );
    let directory = fixture.open(b"/", O_RDONLY);
    assert_eq!(
        fixture.call(COPY_FILE_RANGE, &[directory, 0, output, 0, 4, 0]),
        err(Errno::EISDIR)
    );
    let same = fixture.open(b"/out", O_RDWR);
    let from = put(80, &0u64.to_le_bytes());
    let to = put(88, &2u64.to_le_bytes());
    assert_eq!(
        fixture.call(COPY_FILE_RANGE, &[same, from, output, to, 4, 0]),
        err(Errno::EINVAL)
    );
    let huge = put(96, &(i64::MAX - 1).to_le_bytes());
    assert_eq!(
        fixture.call(COPY_FILE_RANGE, &[input, huge, output, 0, 4, 0]),
        err(Errno::EOVERFLOW)
    );
}
