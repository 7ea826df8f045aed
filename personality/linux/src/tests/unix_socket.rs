//! `AF_UNIX` stream sockets that `socket` makes: not connected.

use linux_abi::{
    socket::{SOCK_DGRAM, SOCK_STREAM},
    syscall::*,
};
use vfs::Errno;

use super::*;

/// `AF_UNIX`, as a system call argument.
const UNIX: u64 = 1;

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
