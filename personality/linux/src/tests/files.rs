//! `files`: the calls on descriptors.

use linux_abi::syscall::*;
use vfs::{flags::*, Errno};

use super::*;

/// Descriptors the tests never open.
const CLOSED_FD: u64 = 42;
const NEGATIVE_FD: u64 = 0xffff_ffff;

#[test]
fn calls_on_a_descriptor_that_is_not_open_are_ebadf() {
    let fixture = Fixture::new();
    let buffer = at(0);
    for fd in [CLOSED_FD, NEGATIVE_FD, 5000] {
        for (number, args) in [
            (READ, [fd, buffer, 1, 0]),
            (WRITE, [fd, buffer, 1, 0]),
            (PREAD64, [fd, buffer, 1, 0]),
            (PWRITE64, [fd, buffer, 1, 0]),
            (READV, [fd, buffer, 0, 0]),
            (WRITEV, [fd, buffer, 0, 0]),
            (LSEEK, [fd, 0, 0, 0]),
            (CLOSE, [fd, 0, 0, 0]),
            (DUP, [fd, 0, 0, 0]),
            (DUP2, [fd, 3, 0, 0]),
            (DUP3, [fd, 3, 0, 0]),
            (FCNTL, [fd, 1, 0, 0]),
            (IOCTL, [fd, 0x5401, buffer, 0]),
            (FSTAT, [fd, buffer, 0, 0]),
            (GETDENTS64, [fd, buffer, 4096, 0]),
            (FTRUNCATE, [fd, 0, 0, 0]),
            (FCHMOD, [fd, 0o644, 0, 0]),
            (FCHOWN, [fd, 0, 0, 0]),
            (FADVISE64, [fd, 0, 0, 0]),
            (FSYNC, [fd, 0, 0, 0]),
            (FDATASYNC, [fd, 0, 0, 0]),
            (SYNCFS, [fd, 0, 0, 0]),
        ] {
            assert_eq!(
                fixture.call(number, &args),
                err(Errno::EBADF),
                "{} on descriptor {fd:#x}",
                linux_abi::syscall::name(number).unwrap_or("?"),
            );
        }
    }
}

#[test]
fn only_the_low_32_bits_of_a_descriptor_count() {
    let fixture = Fixture::new();
    let data = put(0, b"x");
    // Descriptor 1 (`/dev/null`) with garbage in the upper half.
    assert_eq!(fixture.call(WRITE, &[0xdead_0000_0000_0001, data, 1]), 1);
    assert_eq!(
        fixture.call(WRITE, &[0xdead_0000_0000_0000 | CLOSED_FD, data, 1]),
        err(Errno::EBADF)
    );
}

#[test]
fn a_written_file_reads_back() {
    let fixture = Fixture::new();
    let fd = fixture.open(b"/tmp/data", O_RDWR | O_CREAT);
    let text = put(0, b"hello, world");
    assert_eq!(fixture.call(WRITE, &[fd, text, 12]), 12);
    assert_eq!(fixture.call(LSEEK, &[fd, 0, 0]), 0);
    assert_eq!(fixture.call(READ, &[fd, at(100), 64]), 12);
    assert_eq!(fake::peek(at(100), 12), b"hello, world");
    assert_eq!(fixture.call(PREAD64, &[fd, at(200), 5, 7]), 5);
    assert_eq!(fake::peek(at(200), 5), b"world");
    assert_eq!(fixture.file_contents(b"/tmp/data"), b"hello, world");
}

#[test]
fn transfers_of_every_buffer_size_move_every_byte() {
    // The transfer path picks a different kernel buffer by size.
    let fixture = Fixture::new();
    for size in [
        1usize, 16, 17, 128, 129, 1024, 1025, 2048, 2049, 16384, 20000,
    ] {
        let contents: Vec<u8> = (0..size).map(|index| (index * 7 % 251) as u8).collect();
        fixture.make_file(b"/tmp/sized", &contents);
        let fd = fixture.open(b"/tmp/sized", O_RDWR);
        assert_eq!(
            fixture.call(READ, &[fd, at(0), size as u64 + 10]),
            size as i64
        );
        assert_eq!(fake::peek(at(0), size), contents);
        // And written back from user memory, reversed.
        let reversed: Vec<u8> = contents.iter().rev().copied().collect();
        put(0, &reversed);
        assert_eq!(
            fixture.call(PWRITE64, &[fd, at(0), size as u64, 0]),
            size as i64
        );
        assert_eq!(fixture.file_contents(b"/tmp/sized"), reversed);
        assert_eq!(fixture.call(CLOSE, &[fd]), 0);
    }
}

#[test]
fn a_buffer_in_an_unmapped_page_is_efault() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"some bytes");
    for buffer in [UNMAPPED, 0, KERNEL_ADDRESS, u64::MAX - 3] {
        // A descriptor of its own each time: a failed read has moved the
        // offset past the bytes it could not copy.
        let fd = fixture.open(b"/tmp/data", O_RDWR);
        assert_eq!(fixture.call(READ, &[fd, buffer, 4]), err(Errno::EFAULT));
        assert_eq!(fixture.call(WRITE, &[fd, buffer, 4]), err(Errno::EFAULT));
        assert_eq!(
            fixture.call(PREAD64, &[fd, buffer, 4, 0]),
            err(Errno::EFAULT)
        );
        assert_eq!(
            fixture.call(PWRITE64, &[fd, buffer, 4, 0]),
            err(Errno::EFAULT)
        );
        assert_eq!(fixture.call(FSTAT, &[fd, buffer]), err(Errno::EFAULT));
    }
    // Nothing was written from the bad buffers.
    assert_eq!(fixture.file_contents(b"/tmp/data"), b"some bytes");
}

#[test]
fn a_read_only_page_cannot_take_a_read() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"abc");
    let fd = fixture.open(b"/tmp/data", O_RDONLY);
    fake::map_read_only(at(0), 4096);
    assert_eq!(
        fixture.call(PREAD64, &[fd, at(0), 3, 0]),
        err(Errno::EFAULT)
    );
    assert_eq!(fixture.call(FSTAT, &[fd, at(0)]), err(Errno::EFAULT));
    assert_eq!(fixture.call(PREAD64, &[fd, at(4096), 3, 0]), 3);
    assert_eq!(fake::peek(at(4096), 3), b"abc");
}

#[test]
fn a_negative_offset_is_einval() {
    let fixture = Fixture::new();
    let fd = fixture.open(b"/tmp/data", O_RDWR | O_CREAT);
    let negative = (-1i64) as u64;
    assert_eq!(
        fixture.call(PREAD64, &[fd, at(0), 1, negative]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(PWRITE64, &[fd, at(0), 1, negative]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(PREAD64, &[fd, at(0), 1, 1 << 63]),
        err(Errno::EINVAL)
    );
}

#[test]
fn vector_counts_beyond_iov_max_are_einval() {
    let fixture = Fixture::new();
    let vectors = put_iovecs(0, &[(at(4096), 1)]);
    for count in [1025, u64::MAX, 1 << 32] {
        assert_eq!(
            fixture.call(READV, &[0, vectors, count]),
            err(Errno::EINVAL)
        );
        assert_eq!(
            fixture.call(WRITEV, &[1, vectors, count]),
            err(Errno::EINVAL)
        );
    }
}

#[test]
fn vector_lengths_whose_sum_overflows_are_einval() {
    let fixture = Fixture::new();
    for lengths in [[1u64 << 62, 1 << 62], [u64::MAX, 1], [i64::MAX as u64, 1]] {
        let vectors = put_iovecs(0, &[(at(4096), lengths[0]), (at(8192), lengths[1])]);
        assert_eq!(fixture.call(WRITEV, &[1, vectors, 2]), err(Errno::EINVAL));
        assert_eq!(fixture.call(READV, &[0, vectors, 2]), err(Errno::EINVAL));
    }
}

#[test]
fn a_vector_array_that_faults_or_wraps_is_efault() {
    let fixture = Fixture::new();
    // The array itself: unmapped, running into the unmapped page, or
    // wrapping past the top of the address space.
    let last_whole = put_iovecs(MAPPED_BYTES as u64 - 16, &[(at(0), 1)]);
    assert_eq!(fixture.call(WRITEV, &[1, last_whole, 1]), 1);
    assert_eq!(
        fixture.call(WRITEV, &[1, last_whole, 2]),
        err(Errno::EFAULT)
    );
    assert_eq!(fixture.call(WRITEV, &[1, UNMAPPED, 1]), err(Errno::EFAULT));
    assert_eq!(
        fixture.call(WRITEV, &[1, u64::MAX - 15, 2]),
        err(Errno::EFAULT)
    );
    // A vector's base in the unmapped page, with nothing before it.
    let vectors = put_iovecs(0, &[(UNMAPPED, 4)]);
    assert_eq!(fixture.call(WRITEV, &[1, vectors, 1]), err(Errno::EFAULT));
}

#[test]
fn vectors_gather_and_scatter_in_order() {
    let fixture = Fixture::new();
    let fd = fixture.open(b"/tmp/vectors", O_RDWR | O_CREAT);
    put(4096, b"abc");
    put(8192, b"defgh");
    let vectors = put_iovecs(0, &[(at(4096), 3), (at(8192), 0), (at(8192), 5)]);
    assert_eq!(fixture.call(WRITEV, &[fd, vectors, 3]), 8);
    assert_eq!(fixture.file_contents(b"/tmp/vectors"), b"abcdefgh");
    assert_eq!(fixture.call(LSEEK, &[fd, 0, 0]), 0);
    let vectors = put_iovecs(64, &[(at(12288), 2), (at(16384), 10)]);
    assert_eq!(fixture.call(READV, &[fd, vectors, 2]), 8);
    assert_eq!(fake::peek(at(12288), 2), b"ab");
    assert_eq!(fake::peek(at(16384), 6), b"cdefgh");
    // A vector that faults after one that moved bytes: those count.
    assert_eq!(fixture.call(LSEEK, &[fd, 0, 0]), 0);
    let vectors = put_iovecs(128, &[(at(12288), 3), (UNMAPPED, 3)]);
    assert_eq!(fixture.call(READV, &[fd, vectors, 2]), 3);
}

#[test]
fn lseek_checks_whence_and_the_resulting_offset() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"0123456789");
    let fd = fixture.open(b"/tmp/data", O_RDONLY);
    assert_eq!(fixture.call(LSEEK, &[fd, 0, 99]), err(Errno::EINVAL));
    assert_eq!(fixture.call(LSEEK, &[fd, 0, 1 << 32]), err(Errno::EINVAL));
    assert_eq!(
        fixture.call(LSEEK, &[fd, (-1i64) as u64, 0]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(LSEEK, &[fd, (-3i64) as u64, 2]), 7);
    assert_eq!(fixture.call(LSEEK, &[fd, 2, 1]), 9);
}

#[test]
fn dup3_refuses_unknown_flags_and_the_same_descriptor() {
    let fixture = Fixture::new();
    assert_eq!(fixture.call(DUP3, &[1, 5, 1]), err(Errno::EINVAL));
    assert_eq!(
        fixture.call(DUP3, &[1, 5, u64::from(O_NONBLOCK)]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(DUP3, &[1, 1, 0]), err(Errno::EINVAL));
    assert_eq!(fixture.call(DUP3, &[1, 5, u64::from(O_CLOEXEC)]), 5);
    assert_eq!(fixture.call(FCNTL, &[5, 1]), 1, "F_GETFD: close-on-exec");
}

#[test]
fn dup2_checks_the_target_descriptor() {
    let fixture = Fixture::new();
    assert_eq!(fixture.call(DUP2, &[1, 1024]), err(Errno::EBADF));
    assert_eq!(fixture.call(DUP2, &[1, NEGATIVE_FD]), err(Errno::EBADF));
    // The same open descriptor twice is a no-op; a closed one is EBADF.
    assert_eq!(fixture.call(DUP2, &[1, 1]), 1);
    assert_eq!(
        fixture.call(DUP2, &[CLOSED_FD, CLOSED_FD]),
        err(Errno::EBADF)
    );
    assert_eq!(fixture.call(DUP2, &[1, 1023]), 1023);
    assert_eq!(fixture.call(DUP, &[1]), 3);
}

#[test]
fn fcntl_checks_its_command_and_argument() {
    let fixture = Fixture::new();
    const F_DUPFD: u64 = 0;
    const F_GETFD: u64 = 1;
    const F_SETFD: u64 = 2;
    const F_GETFL: u64 = 3;
    const F_SETFL: u64 = 4;
    assert_eq!(fixture.call(FCNTL, &[1, 9999]), err(Errno::EINVAL));
    assert_eq!(fixture.call(FCNTL, &[1, F_DUPFD, 1024]), err(Errno::EINVAL));
    assert_eq!(
        fixture.call(FCNTL, &[1, F_DUPFD, (-1i64) as u64]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(FCNTL, &[1, F_DUPFD, 10]), 10);
    assert_eq!(fixture.call(FCNTL, &[10, F_GETFD]), 0);
    assert_eq!(fixture.call(FCNTL, &[10, F_SETFD, 1]), 0);
    assert_eq!(fixture.call(FCNTL, &[10, F_GETFD]), 1);
    assert_eq!(
        fixture.call(FCNTL, &[10, F_SETFL, u64::from(O_NONBLOCK)]),
        0
    );
    let status = fixture.call(FCNTL, &[10, F_GETFL]);
    assert_ne!(status & i64::from(O_NONBLOCK), 0);
}

#[test]
fn close_closes_once() {
    let fixture = Fixture::new();
    assert_eq!(fixture.call(CLOSE, &[2]), 0);
    assert_eq!(fixture.call(CLOSE, &[2]), err(Errno::EBADF));
    assert_eq!(fixture.call(WRITE, &[2, at(0), 1]), err(Errno::EBADF));
}

#[test]
fn fstat_reports_the_size() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"0123456789");
    let fd = fixture.open(b"/tmp/data", O_RDONLY);
    assert_eq!(fixture.call(FSTAT, &[fd, at(0)]), 0);
    // `st_size` is at offset 48 of the x86_64 `struct stat`.
    assert_eq!(peek_u64(at(48)), 10);
}

#[test]
fn ftruncate_needs_a_writable_descriptor_and_a_length() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"0123456789");
    let read_only = fixture.open(b"/tmp/data", O_RDONLY);
    assert_eq!(fixture.call(FTRUNCATE, &[read_only, 2]), err(Errno::EINVAL));
    let writable = fixture.open(b"/tmp/data", O_WRONLY);
    assert_eq!(
        fixture.call(FTRUNCATE, &[writable, (-1i64) as u64]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(FTRUNCATE, &[writable, 4]), 0);
    assert_eq!(fixture.file_contents(b"/tmp/data"), b"0123");
}

#[test]
fn getdents64_lists_a_directory_and_refuses_a_file() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/entry", b"");
    let file = fixture.open(b"/tmp/entry", O_RDONLY);
    assert_eq!(
        fixture.call(GETDENTS64, &[file, at(0), 4096]),
        err(Errno::ENOTDIR)
    );
    let directory = fixture.open(b"/tmp", O_RDONLY | O_DIRECTORY);
    assert_eq!(
        fixture.call(GETDENTS64, &[directory, UNMAPPED, 4096]),
        err(Errno::EFAULT)
    );
    let directory = fixture.open(b"/tmp", O_RDONLY | O_DIRECTORY);
    let filled = fixture.call(GETDENTS64, &[directory, at(0), u64::MAX]);
    assert!(filled > 0, "getdents64 gave {filled}");
    let listing = fake::peek(at(0), filled as usize);
    assert!(listing.windows(5).any(|name| name == b"entry"));
}

#[test]
fn ioctl_on_a_regular_file_is_enotty() {
    let fixture = Fixture::new();
    let fd = fixture.open(b"/tmp/data", O_RDWR | O_CREAT);
    assert_eq!(
        fixture.call(IOCTL, &[fd, 0x5401, at(0)]),
        err(Errno::ENOTTY)
    );
}

#[test]
fn sendfile_checks_its_descriptors_and_offset() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/source", b"0123456789");
    let source = fixture.open(b"/tmp/source", O_RDONLY);
    let sink = fixture.open(b"/tmp/sink", O_WRONLY | O_CREAT);
    assert_eq!(
        fixture.call(SENDFILE, &[sink, CLOSED_FD, 0, 4]),
        err(Errno::EBADF)
    );
    assert_eq!(
        fixture.call(SENDFILE, &[CLOSED_FD, source, 0, 4]),
        err(Errno::EBADF)
    );
    assert_eq!(
        fixture.call(SENDFILE, &[sink, source, UNMAPPED, 4]),
        err(Errno::EFAULT)
    );
    let offset = put(0, &(-5i64).to_le_bytes());
    assert_eq!(
        fixture.call(SENDFILE, &[sink, source, offset, 4]),
        err(Errno::EINVAL)
    );
    // From offset 3, four bytes; the offset moves, the file's does not.
    let offset = put(0, &3i64.to_le_bytes());
    assert_eq!(fixture.call(SENDFILE, &[sink, source, offset, 4]), 4);
    assert_eq!(peek_u64(offset), 7);
    assert_eq!(fixture.file_contents(b"/tmp/sink"), b"3456");
    assert_eq!(fixture.call(SENDFILE, &[sink, source, 0, u64::MAX]), 10);
    assert_eq!(fixture.file_contents(b"/tmp/sink"), b"34560123456789");
}

#[test]
fn sendfile_checks_each_descriptors_mode_before_copying() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/source", b"0123456789");
    let source = fixture.open(b"/tmp/source", O_RDONLY);
    let sink = fixture.open(b"/tmp/sink", O_WRONLY | O_CREAT);
    let appending = fixture.open(b"/tmp/sink", O_WRONLY | O_APPEND);
    assert_eq!(
        fixture.call(SENDFILE, &[source, source, 0, 1]),
        err(Errno::EBADF),
        "an output open only for reading"
    );
    assert_eq!(
        fixture.call(SENDFILE, &[sink, sink, 0, 1]),
        err(Errno::EBADF),
        "an input open only for writing"
    );
    assert_eq!(
        fixture.call(SENDFILE, &[appending, source, 0, 1]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(PIPE2, &[at(0), 0]), 0);
    let (read_end, write_end) = (u64::from(peek_u32(at(0))), u64::from(peek_u32(at(4))));
    let offset = put(16, &0i64.to_le_bytes());
    assert_eq!(
        fixture.call(SENDFILE, &[sink, read_end, offset, 1]),
        err(Errno::ESPIPE)
    );
    // Into a pipe, from the input's own offset, which moves.
    assert_eq!(fixture.call(SENDFILE, &[write_end, source, 0, 4]), 4);
    assert_eq!(fixture.call(LSEEK, &[source, 0, 1]), 4);
}

#[test]
fn sendfile_into_a_full_nonblocking_socket_is_eagain_and_reads_nothing() {
    const AF_UNIX: u64 = 1;
    const SOCK_DGRAM_NONBLOCK: u64 = 2 | 0o4000;
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/source", b"0123456789");
    let source = fixture.open(b"/tmp/source", O_RDONLY);
    assert_eq!(
        fixture.call(SOCKETPAIR, &[AF_UNIX, SOCK_DGRAM_NONBLOCK, 0, at(0)]),
        0
    );
    let out = u64::from(peek_u32(at(4)));
    let byte = put(16, b"a");
    while fixture.call(WRITE, &[out, byte, 1]) == 1 {}
    assert_eq!(
        fixture.call(SENDFILE, &[out, source, 0, 1]),
        err(Errno::EAGAIN)
    );
    assert_eq!(fixture.call(LSEEK, &[source, 0, 1]), 0, "nothing was taken");
}

#[test]
fn fadvise_and_fsync_refuse_pipes_and_unknown_advice() {
    let fixture = Fixture::new();
    let fd = fixture.open(b"/tmp/data", O_RDWR | O_CREAT);
    assert_eq!(fixture.call(FADVISE64, &[fd, 0, 0, 6]), err(Errno::EINVAL));
    assert_eq!(
        fixture.call(FADVISE64, &[fd, 0, 0, 0xffff_ffff]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(FADVISE64, &[fd, 0, 0, 5]), 0);
    assert_eq!(fixture.call(FSYNC, &[fd]), 0);
    assert_eq!(fixture.call(PIPE2, &[at(0), 0]), 0);
    let read_end = u64::from(peek_u32(at(0)));
    assert_eq!(
        fixture.call(FADVISE64, &[read_end, 0, 0, 0]),
        err(Errno::ESPIPE)
    );
    assert_eq!(fixture.call(FSYNC, &[read_end]), err(Errno::EINVAL));
    assert_eq!(fixture.call(FDATASYNC, &[read_end]), err(Errno::EINVAL));
    assert_eq!(fixture.call(SYNCFS, &[read_end]), 0);
}

#[test]
fn fchmod_and_fchown_change_the_descriptors_file() {
    let fixture = Fixture::new();
    let fd = fixture.open(b"/tmp/data", O_RDWR | O_CREAT);
    assert_eq!(fixture.call(FCHMOD, &[fd, 0o4751]), 0);
    assert_eq!(fixture.call(FCHOWN, &[fd, 12, 0xffff_ffff]), 0);
    assert_eq!(fixture.call(FSTAT, &[fd, at(0)]), 0);
    // `st_mode` at 24, `st_uid` at 28, `st_gid` at 32: the set-user-id
    // bit goes with a change of owner.
    assert_eq!(peek_u32(at(24)) & 0o7777, 0o751);
    assert_eq!(peek_u32(at(28)), 12);
    assert_eq!(peek_u32(at(32)), 0);
}

#[test]
fn dup2_and_dup3_compare_and_answer_descriptors_as_ints() {
    // Regression: dup2(1 << 63, 1 << 63) answered 1 << 63 as it came,
    // a result that is neither a descriptor nor an errno.
    let fixture = Fixture::new();
    assert_eq!(fixture.call(DUP2, &[1 << 63, 1 << 63]), 0);
    assert_eq!(fixture.call(DUP2, &[1, (1 << 32) | 1]), 1);
    assert_eq!(
        fixture.call(DUP3, &[1, (1 << 32) | 1, 0]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(DUP3, &[(1 << 32) | 1, 5, 0]), 5);
}

#[test]
fn preadv_and_pwritev_move_vectors_at_a_position_and_leave_the_offset() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/v", b"0123456789");
    let fd = fixture.open(b"/tmp/v", flags::O_RDWR);
    put(4096, b"ab");
    put(8192, b"cd");
    let vectors = put_iovecs(0, &[(at(4096), 2), (at(8192), 2)]);
    assert_eq!(fixture.call(PWRITEV, &[fd, vectors, 2, 3, 0]), 4);
    assert_eq!(fixture.file_contents(b"/tmp/v"), b"012abcd789");
    assert_eq!(fixture.call(LSEEK, &[fd, 0, 1]), 0, "the offset stayed");
    let into = put_iovecs(64, &[(at(12288), 3), (at(16384), 20)]);
    assert_eq!(fixture.call(PREADV, &[fd, into, 2, 4, 0]), 6);
    assert_eq!(fake::peek(at(12288), 3), b"bcd");
    assert_eq!(fake::peek(at(16384), 3), b"789");
    // The *v2 forms: -1 is the file's own position, which then moves.
    assert_eq!(fixture.call(PREADV2, &[fd, into, 1, u64::MAX, 0, 0]), 3);
    assert_eq!(fake::peek(at(12288), 3), b"012");
    assert_eq!(fixture.call(LSEEK, &[fd, 0, 1]), 3);
    // Errors in Linux's order: position, descriptor, flags.
    assert_eq!(
        fixture.call(PREADV, &[fd, into, 1, u64::MAX, 0]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(PREADV, &[99, into, 1, u64::MAX, 0]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(PREADV2, &[99, into, 1, 0, 0, 0]),
        err(Errno::EBADF)
    );
    assert_eq!(
        fixture.call(PWRITEV2, &[fd, vectors, 1, 0, 0, 1 << 8]),
        err(Errno::EOPNOTSUPP)
    );
}

#[test]
fn fallocate_checks_in_linuxs_order_then_extends_keeps_or_punches() {
    use linux_abi::fcntl::{FALLOC_FL_KEEP_SIZE as KEEP, FALLOC_FL_PUNCH_HOLE as PUNCH};
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"0123456789");
    let fd = fixture.open(b"/tmp/data", O_RDWR);
    let read_only = fixture.open(b"/tmp/data", O_RDONLY);
    let directory = fixture.open(b"/tmp", O_RDONLY | O_DIRECTORY);
    assert_eq!(fixture.call(PIPE2, &[at(0), 0]), 0);
    let write_end = u64::from(peek_u32(at(4)));
    let null = fixture.open(b"/dev/null", O_RDWR);
    for (fd, mode, offset, length, expected) in [
        (CLOSED_FD, 0, 0, 1, Errno::EBADF),
        (fd, 0, u64::MAX, 1, Errno::EINVAL),
        (fd, 0, 0, 0, Errno::EINVAL),
        (fd, 0x80, 0, 1, Errno::EOPNOTSUPP),
        (fd, PUNCH, 0, 1, Errno::EOPNOTSUPP),
        (fd, 0x08 | KEEP, 0, 1, Errno::EINVAL),
        (read_only, 0, 0, 1, Errno::EBADF),
        (write_end, 0, 0, 1, Errno::ESPIPE),
        (null, 0, 0, 1, Errno::ENODEV),
        (fd, 0, i64::MAX as u64, 1, Errno::EFBIG),
        (fd, 0x10, 0, 1, Errno::EOPNOTSUPP),
    ] {
        assert_eq!(
            fixture.call(FALLOCATE, &[fd, mode, offset, length]),
            err(expected),
            "fallocate({fd}, {mode:#x}, {offset}, {length})"
        );
    }
    // A directory opened for reading is EBADF before EISDIR.
    assert_eq!(
        fixture.call(FALLOCATE, &[directory, 0, 0, 1]),
        err(Errno::EBADF)
    );
    assert_eq!(fixture.call(FALLOCATE, &[fd, KEEP, 8, 100]), 0);
    assert_eq!(fixture.file_contents(b"/tmp/data"), b"0123456789");
    assert_eq!(fixture.call(FALLOCATE, &[fd, PUNCH | KEEP, 2, 3]), 0);
    assert_eq!(fixture.file_contents(b"/tmp/data"), b"01\x00\x00\x0056789");
    assert_eq!(fixture.call(FALLOCATE, &[fd, PUNCH | KEEP, 8, 100]), 0);
    assert_eq!(
        fixture.file_contents(b"/tmp/data"),
        b"01\x00\x00\x00567\x00\x00"
    );
    assert_eq!(
        fixture.call(FALLOCATE, &[fd, 0, 4, 2]),
        0,
        "within: unchanged"
    );
    assert_eq!(fixture.call(FALLOCATE, &[fd, 0, 10, 4]), 0);
    assert_eq!(fixture.file_contents(b"/tmp/data").len(), 14);
}
