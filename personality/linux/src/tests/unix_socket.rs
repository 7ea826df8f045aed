//! `AF_UNIX` stream sockets: `socketpair`'s checks, bytes both ways
//! between the ends, a closed peer, and an unconnected `socket`.

use linux_abi::{
    socket::{SOCK_CLOEXEC, SOCK_DGRAM, SOCK_NONBLOCK, SOCK_STREAM},
    syscall::*,
};
use vfs::{flags::O_NONBLOCK, Errno};

use super::*;

/// `AF_UNIX`, as a system call argument.
const UNIX: u64 = 1;

/// Makes a connected pair with `kind`: its two descriptors.
fn pair(fixture: &Fixture, kind: u64) -> (u64, u64) {
    assert_eq!(fixture.call(SOCKETPAIR, &[UNIX, kind, 0, at(0)]), 0);
    (u64::from(peek_u32(at(0))), u64::from(peek_u32(at(4))))
}

#[test]
fn socketpair_checks_family_type_protocol_and_pointer() {
    let fixture = Fixture::new();
    assert_eq!(
        fixture.call(SOCKETPAIR, &[2, SOCK_STREAM, 0, at(0)]),
        err(Errno::EAFNOSUPPORT)
    );
    assert_eq!(
        fixture.call(SOCKETPAIR, &[UNIX, SOCK_STREAM | 0x100, 0, at(0)]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(SOCKETPAIR, &[UNIX, SOCK_DGRAM, 0, at(0)]),
        err(Errno::ESOCKTNOSUPPORT)
    );
    assert_eq!(
        fixture.call(SOCKETPAIR, &[UNIX, SOCK_STREAM, 6, at(0)]),
        err(Errno::EPROTONOSUPPORT)
    );
    assert_eq!(
        fixture.call(SOCKETPAIR, &[UNIX, SOCK_STREAM, 0, UNMAPPED - 4]),
        err(Errno::EFAULT)
    );
    assert_eq!(fixture.process().fds.descriptors(), [0, 1, 2]);
}

#[test]
fn bytes_go_both_ways_and_a_closed_peer_ends_the_stream() {
    let fixture = Fixture::new();
    let (first, second) = pair(&fixture, SOCK_STREAM | SOCK_CLOEXEC);
    assert_eq!(fixture.call(FCNTL, &[first, 1]), 1, "close-on-exec");
    let ping = put(0x100, b"ping");
    let pong = put(0x110, b"pong");
    assert_eq!(fixture.call(WRITE, &[first, ping, 4]), 4);
    assert_eq!(fixture.call(WRITE, &[second, pong, 4]), 4);
    assert_eq!(fixture.call(READ, &[second, at(0x200), 16]), 4);
    assert_eq!(fake::peek(at(0x200), 4), b"ping");
    assert_eq!(fixture.call(READ, &[first, at(0x200), 16]), 4);
    assert_eq!(fake::peek(at(0x200), 4), b"pong");
    assert_eq!(fixture.call(CLOSE, &[second]), 0);
    assert_eq!(
        fixture.call(READ, &[first, at(0x200), 16]),
        0,
        "end of file"
    );
    assert_eq!(fixture.call(WRITE, &[first, ping, 4]), err(Errno::EPIPE));
}

#[test]
fn a_nonblocking_end_with_nothing_to_read_is_eagain() {
    let fixture = Fixture::new();
    let (first, _second) = pair(&fixture, SOCK_STREAM | SOCK_NONBLOCK);
    assert_ne!(fixture.call(FCNTL, &[first, 3]) & i64::from(O_NONBLOCK), 0);
    assert_eq!(
        fixture.call(READ, &[first, at(0x200), 1]),
        err(Errno::EAGAIN)
    );
}

#[test]
fn an_unconnected_socket_cannot_send_or_receive() {
    let fixture = Fixture::new();
    let fd = fixture.call(SOCKET, &[UNIX, SOCK_STREAM, 0]) as u64;
    assert_eq!(fixture.call(WRITE, &[fd, at(0), 1]), err(Errno::ENOTCONN));
    assert_eq!(fixture.call(READ, &[fd, at(0), 1]), err(Errno::EINVAL));
    assert_eq!(
        fixture.call(SOCKET, &[UNIX, SOCK_DGRAM, 0]),
        err(Errno::ESOCKTNOSUPPORT)
    );
}
