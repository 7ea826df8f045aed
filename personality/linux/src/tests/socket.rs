//! `socket`: `AF_INET` sockets as open files, on the `sockets` stack
//! over loopback.

use linux_abi::{socket::SockaddrIn, syscall::*};
use vfs::{flags::*, Errno};

use super::*;

const AF_INET: u64 = 2;
const SOCK_STREAM: u64 = 1;
const SOCK_DGRAM: u64 = 2;
const SOCK_RAW: u64 = 3;
const SOCK_NONBLOCK: u64 = 0o4000;
const SOCK_CLOEXEC: u64 = 0o2000000;
const IPPROTO_UDP: u64 = 17;
const SOL_SOCKET: u64 = 1;
const SO_TYPE: u64 = 3;
const SO_RCVBUF: u64 = 8;
const IPPROTO_TCP: u64 = 6;
const TCP_NODELAY: u64 = 1;
const LOOPBACK: [u8; 4] = [127, 0, 0, 1];

/// A new socket of `kind`: its descriptor.
fn socket(fixture: &Fixture, kind: u64) -> u64 {
    let fd = fixture.call(SOCKET, &[AF_INET, kind, 0]);
    assert!(fd >= 0, "socket: {fd}");
    fd as u64
}

/// Writes a `struct sockaddr_in` for `address:port` at `offset`.
fn put_address(offset: u64, address: [u8; 4], port: u16) -> u64 {
    put(offset, &SockaddrIn { port, address }.to_bytes())
}

/// Writes a `struct msghdr` naming `vectors` (`count` of them) at
/// `offset`, with no address.
fn put_message(offset: u64, vectors: u64, count: u64) -> u64 {
    let mut header = [0u8; 56];
    header[16..24].copy_from_slice(&vectors.to_le_bytes());
    header[24..32].copy_from_slice(&count.to_le_bytes());
    put(offset, &header)
}

#[test]
fn socket_checks_family_type_and_protocol() {
    let fixture = Fixture::new();
    // AF_NETLINK: no such family here.
    assert_eq!(
        fixture.call(SOCKET, &[16, SOCK_STREAM, 0]),
        err(Errno::EAFNOSUPPORT)
    );
    assert_eq!(
        fixture.call(SOCKET, &[AF_INET | 1 << 32, SOCK_STREAM, 0]),
        err(Errno::EAFNOSUPPORT)
    );
    assert_eq!(
        fixture.call(SOCKET, &[AF_INET, SOCK_STREAM | 0x100, 0]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(SOCKET, &[AF_INET, SOCK_RAW, 0]),
        err(Errno::ESOCKTNOSUPPORT)
    );
    assert_eq!(
        fixture.call(SOCKET, &[AF_INET, SOCK_STREAM, IPPROTO_UDP]),
        err(Errno::EPROTONOSUPPORT)
    );
    let fd = fixture.call(
        SOCKET,
        &[AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0],
    );
    assert_eq!(fd, 3);
    assert_eq!(fixture.call(FCNTL, &[3, 1]), 1, "close-on-exec");
    assert_ne!(fixture.call(FCNTL, &[3, 3]) & i64::from(O_NONBLOCK), 0);
}

#[test]
fn calls_on_a_descriptor_that_is_not_a_socket_are_refused() {
    let fixture = Fixture::new();
    let address = put_address(0, LOOPBACK, 80);
    let file = fixture.open(b"/tmp/data", O_RDWR | O_CREAT);
    for (fd, errno) in [
        (42, Errno::EBADF),
        (0xffff_ffff, Errno::EBADF),
        (file, Errno::ENOTSOCK),
    ] {
        for (number, args) in [
            (BIND, [fd, address, 16, 0, 0, 0]),
            (CONNECT, [fd, address, 16, 0, 0, 0]),
            (LISTEN, [fd, 5, 0, 0, 0, 0]),
            (ACCEPT, [fd, 0, 0, 0, 0, 0]),
            (SENDTO, [fd, at(64), 1, 0, 0, 0]),
            (RECVFROM, [fd, at(64), 1, 0, 0, 0]),
            (SHUTDOWN, [fd, 2, 0, 0, 0, 0]),
            (GETSOCKNAME, [fd, at(64), at(128), 0, 0, 0]),
            (GETPEERNAME, [fd, at(64), at(128), 0, 0, 0]),
            (SETSOCKOPT, [fd, SOL_SOCKET, SO_RCVBUF, at(64), 4, 0]),
            (GETSOCKOPT, [fd, SOL_SOCKET, SO_TYPE, at(64), at(128), 0]),
        ] {
            assert_eq!(
                fixture.call(number, &args),
                err(errno),
                "{} on descriptor {fd:#x}",
                linux_abi::syscall::name(number).unwrap_or("?"),
            );
        }
    }
}

#[test]
fn an_address_is_checked_for_length_family_and_memory() {
    let fixture = Fixture::new();
    let fd = socket(&fixture, SOCK_DGRAM);
    let address = put_address(0, LOOPBACK, 7000);
    for length in [0, 15] {
        assert_eq!(
            fixture.call(BIND, &[fd, address, length]),
            err(Errno::EINVAL)
        );
    }
    assert_eq!(fixture.call(BIND, &[fd, UNMAPPED, 16]), err(Errno::EFAULT));
    assert_eq!(
        fixture.call(BIND, &[fd, UNMAPPED - 8, 16]),
        err(Errno::EFAULT)
    );
    let unix = put(64, &[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        fixture.call(BIND, &[fd, unix, 16]),
        err(Errno::EAFNOSUPPORT)
    );
    assert_eq!(
        fixture.call(CONNECT, &[fd, unix, 110]),
        err(Errno::EAFNOSUPPORT)
    );
    assert_eq!(fixture.call(BIND, &[fd, address, 16]), 0);
    assert_eq!(
        fixture.call(BIND, &[fd, address, 16]),
        err(Errno::EINVAL),
        "bound already"
    );
}

#[test]
fn accept4_shutdown_and_options_refuse_what_they_do_not_know() {
    let fixture = Fixture::new();
    let fd = socket(&fixture, SOCK_STREAM);
    assert_eq!(fixture.call(ACCEPT4, &[fd, 0, 0, 0x1]), err(Errno::EINVAL));
    assert_eq!(
        fixture.call(ACCEPT4, &[fd, 0, 0, u64::from(O_RDWR) | 0x8]),
        err(Errno::EINVAL)
    );
    for how in [3, u64::MAX] {
        assert_eq!(fixture.call(SHUTDOWN, &[fd, how]), err(Errno::EINVAL));
    }
    assert_eq!(
        fixture.call(SETSOCKOPT, &[fd, SOL_SOCKET, 9999, at(0), 4]),
        err(Errno::ENOPROTOOPT)
    );
    assert_eq!(
        fixture.call(SETSOCKOPT, &[fd, 9999, SO_RCVBUF, at(0), 4]),
        err(Errno::ENOPROTOOPT)
    );
    assert_eq!(
        fixture.call(SETSOCKOPT, &[fd, IPPROTO_TCP, TCP_NODELAY, at(0), 3]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(SETSOCKOPT, &[fd, IPPROTO_TCP, TCP_NODELAY, UNMAPPED, 4]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(GETSOCKOPT, &[fd, SOL_SOCKET, 9999, at(0), at(8)]),
        err(Errno::ENOPROTOOPT)
    );
    assert_eq!(getpeer(&fixture, fd), err(Errno::ENOTCONN));
}

fn getpeer(fixture: &Fixture, fd: u64) -> i64 {
    put(64, &16u32.to_le_bytes());
    fixture.call(GETPEERNAME, &[fd, at(0), at(64)])
}

#[test]
fn getsockopt_checks_the_room_it_is_given() {
    let fixture = Fixture::new();
    let fd = socket(&fixture, SOCK_STREAM);
    let length = put(64, &(-1i32).to_le_bytes());
    assert_eq!(
        fixture.call(GETSOCKOPT, &[fd, SOL_SOCKET, SO_TYPE, at(0), length]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(GETSOCKOPT, &[fd, SOL_SOCKET, SO_TYPE, at(0), UNMAPPED]),
        err(Errno::EFAULT)
    );
    let length = put(64, &4u32.to_le_bytes());
    assert_eq!(
        fixture.call(GETSOCKOPT, &[fd, SOL_SOCKET, SO_TYPE, UNMAPPED, length]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(GETSOCKOPT, &[fd, SOL_SOCKET, SO_TYPE, at(0), length]),
        0
    );
    assert_eq!(peek_u32(at(0)), SOCK_STREAM as u32);
    // Less room: the value is cut, and the length says so.
    let length = put(64, &2u32.to_le_bytes());
    put(0, &[0xff; 4]);
    assert_eq!(
        fixture.call(GETSOCKOPT, &[fd, SOL_SOCKET, SO_TYPE, at(0), length]),
        0
    );
    assert_eq!(fake::peek(at(0), 4), [1, 0, 0xff, 0xff]);
    assert_eq!(peek_u32(length), 2);
}

#[test]
fn message_calls_check_their_header_and_vector_count() {
    let fixture = Fixture::new();
    let fd = socket(&fixture, SOCK_DGRAM);
    let vectors = put_iovecs(256, &[(at(1024), 8)]);
    assert_eq!(
        fixture.call(SENDMSG, &[fd, UNMAPPED, 0]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(RECVMSG, &[fd, UNMAPPED - 32, 0]),
        err(Errno::EFAULT)
    );
    // Past UIO_MAXIOV: EMSGSIZE (Linux's `__copy_msghdr`, LTP recvmsg01).
    for count in [1025, u64::MAX] {
        let message = put_message(0, vectors, count);
        assert_eq!(
            fixture.call(SENDMSG, &[fd, message, 0]),
            err(Errno::EMSGSIZE)
        );
        assert_eq!(
            fixture.call(RECVMSG, &[fd, message, 0]),
            err(Errno::EMSGSIZE)
        );
    }
    let message = put_message(0, UNMAPPED, 1);
    assert_eq!(fixture.call(SENDMSG, &[fd, message, 0]), err(Errno::EFAULT));
    let bad_base = put_iovecs(256, &[(UNMAPPED, 8)]);
    let message = put_message(0, bad_base, 1);
    assert_eq!(fixture.call(SENDMSG, &[fd, message, 0]), err(Errno::EFAULT));
}

#[test]
fn a_datagram_goes_round_the_loopback() {
    let fixture = Fixture::new();
    let receiver = socket(&fixture, SOCK_DGRAM | SOCK_NONBLOCK);
    let sender = socket(&fixture, SOCK_DGRAM);
    let address = put_address(0, LOOPBACK, 7001);
    assert_eq!(fixture.call(BIND, &[receiver, address, 16]), 0);
    // Nothing yet: a nonblocking receive is EAGAIN, and never blocks.
    assert_eq!(
        fixture.call(RECVFROM, &[receiver, at(256), 64, 0, 0, 0]),
        err(Errno::EAGAIN)
    );
    let data = put(128, b"datagram");
    assert_eq!(fixture.call(SENDTO, &[sender, data, 8, 0, address, 16]), 8);
    assert_eq!(
        fixture.call(SENDTO, &[sender, UNMAPPED, 8, 0, address, 16]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(SENDTO, &[sender, data, 8, 0, address, 8]),
        err(Errno::EINVAL)
    );
    put(512, &16u32.to_le_bytes());
    assert_eq!(
        fixture.call(RECVFROM, &[receiver, UNMAPPED, 64, 0, at(448), at(512)]),
        err(Errno::EFAULT)
    );
    assert_eq!(fixture.call(SENDTO, &[sender, data, 8, 0, address, 16]), 8);
    assert_eq!(
        fixture.call(RECVFROM, &[receiver, at(256), 64, 0, at(448), at(512)]),
        8
    );
    assert_eq!(fake::peek(at(256), 8), b"datagram");
    let from = SockaddrIn::from_bytes(&fake::peek(at(448), 16).try_into().expect("16 bytes"));
    assert_eq!(from.map(|from| from.address), Some(LOOPBACK));
    assert!(fake::blocks().is_empty());
}

#[test]
fn a_blocking_accept_waits_on_the_socket_events_until_interrupted() {
    let fixture = Fixture::new();
    let listener = socket(&fixture, SOCK_STREAM);
    let address = put_address(0, LOOPBACK, 7002);
    assert_eq!(fixture.call(BIND, &[listener, address, 16]), 0);
    assert_eq!(fixture.call(LISTEN, &[listener, 4]), 0);
    fake::once_blocked(|| fake::set_interrupted(true));
    assert_eq!(fixture.call(ACCEPT, &[listener, 0, 0]), err(Errno::EINTR));
    assert!(fake::blocks().iter().all(|block| block.0 == "socket"));
    assert!(!fake::blocks().is_empty());
    // A nonblocking listener answers at once.
    fake::set_interrupted(false);
    let blocks = fake::blocks().len();
    assert_eq!(
        fixture.call(FCNTL, &[listener, 4, u64::from(O_NONBLOCK)]),
        0
    );
    assert_eq!(fixture.call(ACCEPT, &[listener, 0, 0]), err(Errno::EAGAIN));
    assert_eq!(fake::blocks().len(), blocks);
}

#[test]
fn the_kernels_servers_wait_a_millisecond_at_most_for_the_network() {
    let _fixture = Fixture::new();
    let start = crate::machine::fake::FakeMachine::now();
    let mut round = 0;
    assert_eq!(crate::wait_for_the_network(&mut round), Ok(()));
    assert_eq!(round, 1);
    assert_eq!(fake::blocks(), [("network", Some(start + 1_000_000))]);
    assert_eq!(crate::machine::fake::FakeMachine::now(), start + 1_000_000);
    fake::set_interrupted(true);
    assert_eq!(crate::wait_for_the_network(&mut round), Err(Errno::EINTR));
    assert_eq!(fake::blocks().len(), 1, "interrupted, it does not wait");
}

#[test]
fn message_vectors_send_and_receive_several_datagrams_in_one_call() {
    let fixture = Fixture::new();
    let receiver = socket(&fixture, SOCK_DGRAM | SOCK_NONBLOCK);
    let sender = socket(&fixture, SOCK_DGRAM);
    let address = put_address(0, LOOPBACK, 7003);
    assert_eq!(fixture.call(BIND, &[receiver, address, 16]), 0);
    assert_eq!(fixture.call(CONNECT, &[sender, address, 16]), 0);
    // Two messages of 5 and 3 bytes, as a vector of `struct mmsghdr`.
    put(1024, b"firsttwo");
    let first = put_iovecs(128, &[(at(1024), 5)]);
    let second = put_iovecs(160, &[(at(1029), 3)]);
    put_message(256, first, 1);
    put_message(320, second, 1);
    // Bad descriptors first, then a bad vector.
    assert_eq!(
        fixture.call(SENDMMSG, &[99, at(256), 2, 0]),
        err(Errno::EBADF)
    );
    assert_eq!(
        fixture.call(SENDMMSG, &[sender, UNMAPPED, 1, 0]),
        err(Errno::EFAULT)
    );
    assert_eq!(fixture.call(SENDMMSG, &[sender, at(256), 0, 0]), 0);
    assert_eq!(fixture.call(SENDMMSG, &[sender, at(256), 2, 0]), 2);
    assert_eq!(peek_u32(at(256 + 56)), 5);
    assert_eq!(peek_u32(at(320 + 56)), 3);
    // Receive into a vector of three: two arrive, the third would block,
    // which ends the batch without an error.
    let buffers: Vec<u64> = (0..3).map(|index| 2048 + index * 64).collect();
    for (index, buffer) in buffers.iter().enumerate() {
        let vectors = put_iovecs(512 + index as u64 * 16, &[(at(*buffer), 64)]);
        put_message(640 + index as u64 * 64, vectors, 1);
    }
    assert_eq!(fixture.call(RECVMMSG, &[receiver, at(640), 3, 0, 0]), 2);
    assert_eq!(peek_u32(at(640 + 56)), 5);
    assert_eq!(peek_u32(at(704 + 56)), 3);
    assert_eq!(fake::peek(at(2048), 5), b"first");
    assert_eq!(fake::peek(at(2112), 3), b"two");
    // Nothing left: the first receive's error is the call's.
    assert_eq!(
        fixture.call(RECVMMSG, &[receiver, at(640), 3, 0, 0]),
        err(Errno::EAGAIN)
    );
    // A malformed timeout is EINVAL, a bad pointer to one EFAULT.
    put(896, &[0xff; 16]);
    assert_eq!(
        fixture.call(RECVMMSG, &[receiver, at(640), 1, 0, at(896)]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(RECVMMSG, &[receiver, at(640), 1, 0, UNMAPPED]),
        err(Errno::EFAULT)
    );
}
