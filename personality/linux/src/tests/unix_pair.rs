//! `unix_pair`: `socketpair(AF_UNIX, ...)`.

use linux_abi::{socket::*, syscall::*};
use vfs::{flags::*, Errno};

use super::*;

/// `fcntl`'s commands (Linux's numbers).
const F_GETFD: u64 = 1;
const F_GETFL: u64 = 3;

/// A new pair of `kind`: its two descriptors.
fn pair(fixture: &Fixture, kind: u64) -> (u64, u64) {
    let fds = at(0x800);
    assert_eq!(
        fixture.call(SOCKETPAIR, &[u64::from(AF_UNIX), kind, 0, fds]),
        0
    );
    (u64::from(peek_u32(fds)), u64::from(peek_u32(fds + 4)))
}

#[test]
fn arguments_are_checked_in_linuxs_order() {
    let fixture = Fixture::new();
    let fds = at(0x800);
    let unix = u64::from(AF_UNIX);
    let inet = u64::from(AF_INET);
    for (domain, kind, protocol, expected) in [
        (0, SOCK_STREAM, 0, Errno::EAFNOSUPPORT),
        (u64::from(AF_MAX), SOCK_STREAM, 0, Errno::EAFNOSUPPORT),
        (inet, 75, 0, Errno::EINVAL),
        (unix, SOCK_STREAM | 0x100, 0, Errno::EINVAL),
        (unix, 4, 0, Errno::ESOCKTNOSUPPORT),
        (unix, SOCK_STREAM, 6, Errno::EPROTONOSUPPORT),
        (inet, SOCK_DGRAM, IPPROTO_UDP, Errno::EOPNOTSUPP),
        (inet, SOCK_STREAM, IPPROTO_TCP, Errno::EOPNOTSUPP),
        (inet, SOCK_DGRAM, IPPROTO_TCP, Errno::EPROTONOSUPPORT),
        (inet, SOCK_RAW, 0, Errno::EPROTONOSUPPORT),
    ] {
        assert_eq!(
            fixture.call(SOCKETPAIR, &[domain, kind, protocol, fds]),
            err(expected),
            "socketpair({domain}, {kind}, {protocol})"
        );
    }
    let open_before = fixture.process().fds.descriptors().len();
    for bad in [0, 7, UNMAPPED] {
        assert_eq!(
            fixture.call(SOCKETPAIR, &[unix, SOCK_STREAM, 0, bad]),
            err(Errno::EFAULT)
        );
    }
    assert_eq!(
        fixture.process().fds.descriptors().len(),
        open_before,
        "no descriptor is left behind"
    );
}

#[test]
fn the_flags_reach_both_descriptors() {
    let fixture = Fixture::new();
    let (first, second) = pair(&fixture, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK);
    for fd in [first, second] {
        assert_eq!(fixture.call(FCNTL, &[fd, F_GETFD]), 1);
        assert_ne!(
            fixture.call(FCNTL, &[fd, F_GETFL]) & i64::from(O_NONBLOCK),
            0
        );
        assert_eq!(fixture.call(FSTAT, &[fd, at(0x100)]), 0);
        assert_eq!(peek_u32(at(0x100 + 24)) & 0o170000, 0o140000, "S_IFSOCK");
    }
    let (first, _) = pair(&fixture, SOCK_STREAM);
    assert_eq!(fixture.call(FCNTL, &[first, F_GETFD]), 0);
    assert_eq!(
        fixture.call(FCNTL, &[first, F_GETFL]) & i64::from(O_NONBLOCK),
        0
    );
}

#[test]
fn a_stream_carries_bytes_both_ways_and_ends_when_the_peer_closes() {
    let fixture = Fixture::new();
    let (first, second) = pair(&fixture, SOCK_STREAM | SOCK_NONBLOCK);
    let data = put(0, b"hello");
    assert_eq!(fixture.call(WRITE, &[first, data, 3]), 3);
    assert_eq!(fixture.call(WRITE, &[first, data + 3, 2]), 2);
    let buffer = at(0x200);
    assert_eq!(fixture.call(READ, &[second, buffer, 4]), 4);
    assert_eq!(fixture.call(READ, &[second, buffer + 4, 4]), 1);
    assert_eq!(fake::peek(buffer, 5), b"hello");
    assert_eq!(fixture.call(READ, &[second, buffer, 4]), err(Errno::EAGAIN));
    assert_eq!(fixture.call(WRITE, &[second, data, 1]), 1);
    assert_eq!(fixture.call(READ, &[first, buffer, 4]), 1);
    assert_eq!(fixture.call(CLOSE, &[first]), 0);
    assert_eq!(fixture.call(READ, &[second, buffer, 4]), 0, "end of file");
    assert_eq!(fixture.call(WRITE, &[second, data, 1]), err(Errno::EPIPE));
}

#[test]
fn datagrams_keep_their_boundaries_and_fill_the_buffer() {
    let fixture = Fixture::new();
    let (first, second) = pair(&fixture, SOCK_DGRAM | SOCK_NONBLOCK);
    let data = put(0, b"abcdef");
    assert_eq!(fixture.call(WRITE, &[first, data, 2]), 2);
    assert_eq!(fixture.call(WRITE, &[first, data + 2, 4]), 4);
    let buffer = at(0x200);
    assert_eq!(fixture.call(READ, &[second, buffer, 16]), 2);
    // What does not fit is dropped with its datagram.
    assert_eq!(fixture.call(READ, &[second, buffer, 1]), 1);
    assert_eq!(
        fixture.call(READ, &[second, buffer, 16]),
        err(Errno::EAGAIN)
    );
    let mut sent = 0;
    while fixture.call(WRITE, &[first, data, 1]) == 1 {
        sent += 1;
        assert!(sent < 10_000, "the buffer never filled");
    }
    assert_eq!(fixture.call(WRITE, &[first, data, 1]), err(Errno::EAGAIN));
    assert!(sent > 100, "only {sent} datagrams fitted");
    assert_eq!(fixture.call(CLOSE, &[second]), 0);
    assert_eq!(
        fixture.call(WRITE, &[first, data, 1]),
        err(Errno::ECONNREFUSED)
    );
}

#[test]
fn a_message_larger_than_the_buffer_is_emsgsize() {
    let fixture = Fixture::new();
    let directory = fixture.personality.pipes.clone();
    let (first, _second) = crate::unix_pair::make_pair(
        &directory,
        &fixture.personality.unix_names,
        crate::unix_pair::PairKind::SequencedPacket,
        crate::unix_connection::PeerCredentials::NOBODY,
        0,
    )
    .expect("a pair");
    let huge = alloc::vec![0u8; crate::unix_connection::BUFFER_BYTES];
    assert_eq!(first.write(&huge), Err(Errno::EMSGSIZE));
    assert_eq!(first.write(&huge[..1000]), Ok(1000));
}
