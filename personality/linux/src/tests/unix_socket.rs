//! `AF_UNIX` sockets that `socket` makes: names (`bind`, `getsockname`),
//! connections (`listen`, `connect`, `accept`), datagrams by name, the
//! socket calls on `socketpair`'s ends, and their error paths.

use linux_abi::{socket::*, syscall::*};
use vfs::Errno;

use super::*;

/// `AF_UNIX`, as a system call argument.
const UNIX: u64 = AF_UNIX as u64;
/// `MSG_*` and `SOL_SOCKET` as arguments.
const NOSIGNAL: u64 = MSG_NOSIGNAL;

/// A new socket of `kind` (non-blocking): its descriptor.
fn socket(fixture: &Fixture, kind: u64) -> u64 {
    let fd = fixture.call(SOCKET, &[UNIX, kind | SOCK_NONBLOCK, 0]);
    assert!(fd >= 0, "socket: {fd}");
    fd as u64
}

/// Writes a `struct sockaddr_un` naming `path` (a leading NUL: an
/// abstract name) at `offset`: its address and the length to pass.
fn address(offset: u64, path: &[u8]) -> (u64, u64) {
    let mut bytes = alloc::vec![AF_UNIX as u8, 0];
    bytes.extend_from_slice(path);
    if path.first() != Some(&0) {
        bytes.push(0);
    }
    (put(offset, &bytes), bytes.len() as u64)
}

/// Binds `fd` to `path`: the call's result.
fn bind(fixture: &Fixture, fd: u64, path: &[u8]) -> i64 {
    let (name, length) = address(0x100, path);
    fixture.call(BIND, &[fd, name, length])
}

/// Connects `fd` to `path`: the call's result.
fn connect(fixture: &Fixture, fd: u64, path: &[u8]) -> i64 {
    let (name, length) = address(0x100, path);
    fixture.call(CONNECT, &[fd, name, length])
}

/// `getsockname` (or with `call` `GETPEERNAME`) of `fd`: the record's
/// bytes, or the error.
fn name_of(fixture: &Fixture, call: u64, fd: u64) -> Result<Vec<u8>, i64> {
    let length_at = put(0x300, &128u32.to_le_bytes());
    let result = fixture.call(call, &[fd, at(0x400), length_at]);
    if result < 0 {
        return Err(result);
    }
    Ok(fake::peek(at(0x400), peek_u32(length_at) as usize))
}

/// The record user space reads for `path`.
fn record(path: &[u8]) -> Vec<u8> {
    let mut bytes = alloc::vec![AF_UNIX as u8, 0];
    bytes.extend_from_slice(path);
    bytes
}

/// An `int` option of `fd`.
fn int_option(fixture: &Fixture, fd: u64, name: u64) -> i64 {
    let length_at = put(0x500, &4u32.to_le_bytes());
    let result = fixture.call(GETSOCKOPT, &[fd, SOL_SOCKET, name, at(0x510), length_at]);
    assert_eq!(result, 0, "getsockopt({name})");
    i64::from(peek_u32(at(0x510)) as i32)
}

/// Sends `data` on `fd` with `flags`: the call's result.
fn send(fixture: &Fixture, fd: u64, data: &[u8], flags: u64) -> i64 {
    let buffer = put(0x600, data);
    fixture.call(SENDTO, &[fd, buffer, data.len() as u64, flags, 0, 0])
}

/// Receives up to 64 bytes on `fd`: what came, or the error.
fn receive(fixture: &Fixture, fd: u64) -> Result<Vec<u8>, i64> {
    let count = fixture.call(RECVFROM, &[fd, at(0x700), 64, 0, 0, 0]);
    if count < 0 {
        return Err(count);
    }
    Ok(fake::peek(at(0x700), count as usize))
}

#[test]
fn socket_checks_type_and_protocol() {
    let fixture = Fixture::new();
    for kind in [SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET, SOCK_RAW] {
        assert!(fixture.call(SOCKET, &[UNIX, kind, 0]) >= 0, "type {kind}");
    }
    assert!(fixture.call(SOCKET, &[UNIX, SOCK_STREAM, UNIX]) >= 0);
    assert_eq!(
        fixture.call(SOCKET, &[UNIX, 4, 0]),
        err(Errno::ESOCKTNOSUPPORT)
    );
    assert_eq!(
        fixture.call(SOCKET, &[UNIX, SOCK_STREAM, 6]),
        err(Errno::EPROTONOSUPPORT)
    );
    let raw = fixture.call(SOCKET, &[UNIX, SOCK_RAW, 0]) as u64;
    assert_eq!(int_option(&fixture, raw, SO_TYPE), SOCK_DGRAM as i64);
}

#[test]
fn an_unconnected_stream_socket_cannot_send_or_receive() {
    let fixture = Fixture::new();
    let fd = socket(&fixture, SOCK_STREAM);
    assert_eq!(fixture.call(WRITE, &[fd, at(0), 1]), err(Errno::ENOTCONN));
    assert_eq!(fixture.call(READ, &[fd, at(0), 1]), err(Errno::EINVAL));
    assert_eq!(
        name_of(&fixture, GETPEERNAME, fd),
        Err(err(Errno::ENOTCONN))
    );
    assert_eq!(name_of(&fixture, GETSOCKNAME, fd), Ok(record(b"")));
    let seqpacket = socket(&fixture, SOCK_SEQPACKET);
    assert_eq!(receive(&fixture, seqpacket), Err(err(Errno::ENOTCONN)));
}

#[test]
fn bind_makes_a_socket_node_once() {
    let fixture = Fixture::new();
    let first = socket(&fixture, SOCK_STREAM);
    let second = socket(&fixture, SOCK_STREAM);
    assert_eq!(bind(&fixture, first, b"/tmp/a"), 0);
    let stat = at(0x800);
    assert_eq!(fixture.call_path(STAT, b"/tmp/a", &[stat]), 0);
    let mode = peek_u32(stat + 24);
    assert_eq!(mode, 0o140000 | (0o777 & !0o022), "S_IFSOCK, umask applied");
    assert_eq!(
        name_of(&fixture, GETSOCKNAME, first),
        Ok(record(b"/tmp/a\0"))
    );
    // bind03: a bound socket cannot be bound again, and leaves no node.
    assert_eq!(bind(&fixture, first, b"/tmp/b"), err(Errno::EINVAL));
    assert_eq!(
        fixture.call_path(STAT, b"/tmp/b", &[stat]),
        err(Errno::ENOENT)
    );
    assert_eq!(bind(&fixture, second, b"/tmp/a"), err(Errno::EADDRINUSE));
    assert_eq!(bind(&fixture, second, b"/tmp/no/a"), err(Errno::ENOENT));
    assert_eq!(bind(&fixture, second, b"/dev/null/a"), err(Errno::ENOTDIR));
    // Closing the socket leaves its node, which still holds the name.
    assert_eq!(fixture.call(CLOSE, &[first]), 0);
    assert_eq!(bind(&fixture, second, b"/tmp/a"), err(Errno::EADDRINUSE));
}

#[test]
fn bind_checks_the_address() {
    let fixture = Fixture::new();
    let fd = socket(&fixture, SOCK_STREAM);
    let (name, _) = address(0x100, b"/tmp/x");
    assert_eq!(fixture.call(BIND, &[fd, name, 1]), err(Errno::EINVAL));
    assert_eq!(fixture.call(BIND, &[fd, name, 111]), err(Errno::EINVAL));
    assert_eq!(fixture.call(BIND, &[fd, UNMAPPED, 10]), err(Errno::EFAULT));
    let inet = put(0x200, &[AF_INET as u8, 0, b'x', 0]);
    assert_eq!(fixture.call(BIND, &[fd, inet, 4]), err(Errno::EINVAL));
    assert_eq!(fixture.call(BIND, &[99, name, 8]), err(Errno::EBADF));
    let file = fixture.open(b"/dev/null", 0);
    assert_eq!(fixture.call(BIND, &[file, name, 8]), err(Errno::ENOTSOCK));
}

#[test]
fn an_unprivileged_caller_needs_write_permission_on_the_directory() {
    let fixture = Fixture::new();
    fixture.call(UMASK, &[0]);
    assert_eq!(fixture.call_path(MKDIR, b"/tmp/closed", &[0o555]), 0);
    assert_eq!(fixture.call_path(MKDIR, b"/tmp/open", &[0o777]), 0);
    fixture
        .process()
        .change_credentials(|credentials| {
            credentials.users.effective = 1000;
            credentials.users.file_system = 1000;
            Ok(())
        })
        .expect("new ids");
    let fd = socket(&fixture, SOCK_STREAM);
    assert_eq!(bind(&fixture, fd, b"/tmp/closed/s"), err(Errno::EACCES));
    assert_eq!(bind(&fixture, fd, b"/tmp/open/s"), 0);
    let stat = at(0x800);
    assert_eq!(fixture.call_path(STAT, b"/tmp/open/s", &[stat]), 0);
    assert_eq!(peek_u32(stat + 28), 1000, "owned by the caller");
}

#[test]
fn abstract_and_automatic_names() {
    let fixture = Fixture::new();
    let first = socket(&fixture, SOCK_STREAM);
    let second = socket(&fixture, SOCK_STREAM);
    assert_eq!(bind(&fixture, first, b"\0name"), 0);
    assert_eq!(name_of(&fixture, GETSOCKNAME, first), Ok(record(b"\0name")));
    assert_eq!(bind(&fixture, second, b"\0name"), err(Errno::EADDRINUSE));
    let family = put(0x100, &[AF_UNIX as u8, 0]);
    assert_eq!(fixture.call(BIND, &[second, family, 2]), 0);
    let name = name_of(&fixture, GETSOCKNAME, second).expect("a name");
    assert_eq!(name.len(), 8, "the family, a NUL and five hex digits");
    assert_eq!(name[2], 0);
    assert!(name[3..].iter().all(u8::is_ascii_hexdigit));
    assert_eq!(fixture.call(CLOSE, &[first]), 0);
    let third = socket(&fixture, SOCK_STREAM);
    assert_eq!(bind(&fixture, third, b"\0name"), 0, "free once closed");
}

#[test]
fn a_connection_is_queued_accepted_and_carries_bytes() {
    let fixture = Fixture::new();
    let listener = socket(&fixture, SOCK_STREAM);
    assert_eq!(fixture.call(LISTEN, &[listener, 5]), err(Errno::EINVAL));
    assert_eq!(bind(&fixture, listener, b"/tmp/server"), 0);
    assert_eq!(fixture.call(ACCEPT, &[listener, 0, 0]), err(Errno::EINVAL));
    assert_eq!(fixture.call(LISTEN, &[listener, 5]), 0);
    assert_eq!(int_option(&fixture, listener, SO_ACCEPTCONN), 1);
    assert_eq!(fixture.call(ACCEPT, &[listener, 0, 0]), err(Errno::EAGAIN));
    let client = socket(&fixture, SOCK_STREAM);
    assert_eq!(connect(&fixture, client, b"/tmp/server"), 0);
    assert_eq!(
        connect(&fixture, client, b"/tmp/server"),
        err(Errno::EISCONN)
    );
    assert_eq!(
        name_of(&fixture, GETPEERNAME, client),
        Ok(record(b"/tmp/server\0"))
    );
    let length_at = put(0x300, &128u32.to_le_bytes());
    let server = fixture.call(ACCEPT4, &[listener, at(0x400), length_at, SOCK_NONBLOCK]);
    assert!(server >= 0, "accept: {server}");
    let server = server as u64;
    assert_eq!(peek_u32(length_at), 2, "an unnamed peer: the family alone");
    assert_eq!(
        name_of(&fixture, GETSOCKNAME, server),
        Ok(record(b"/tmp/server\0"))
    );
    assert_eq!(send(&fixture, client, b"ping", 0), 4);
    assert_eq!(receive(&fixture, server), Ok(b"ping".to_vec()));
    assert_eq!(send(&fixture, server, b"pong", 0), 4);
    assert_eq!(receive(&fixture, client), Ok(b"pong".to_vec()));
    assert_eq!(receive(&fixture, client), Err(err(Errno::EAGAIN)));
    // Peer credentials: this process, as root.
    let length_at = put(0x500, &12u32.to_le_bytes());
    let credentials = at(0x510);
    assert_eq!(
        fixture.call(
            GETSOCKOPT,
            &[server, SOL_SOCKET, SO_PEERCRED, credentials, length_at]
        ),
        0
    );
    assert_eq!(peek_u32(credentials), PID as u32);
    assert_eq!(peek_u32(credentials + 4), 0);
    assert_eq!(fixture.call(CLOSE, &[client]), 0);
    assert_eq!(receive(&fixture, server), Ok(Vec::new()), "end of file");
    assert_eq!(send(&fixture, server, b"x", NOSIGNAL), err(Errno::EPIPE));
}

#[test]
fn connect_errors_follow_linux() {
    let fixture = Fixture::new();
    let client = socket(&fixture, SOCK_STREAM);
    assert_eq!(
        connect(&fixture, client, b"/tmp/nothing"),
        err(Errno::ENOENT)
    );
    assert_eq!(
        connect(&fixture, client, b"\0nobody"),
        err(Errno::ECONNREFUSED)
    );
    fixture.make_file(b"/tmp/file", b"");
    assert_eq!(
        connect(&fixture, client, b"/tmp/file"),
        err(Errno::ECONNREFUSED),
        "not a socket"
    );
    let bound = socket(&fixture, SOCK_STREAM);
    assert_eq!(bind(&fixture, bound, b"/tmp/bound"), 0);
    assert_eq!(
        connect(&fixture, client, b"/tmp/bound"),
        err(Errno::ECONNREFUSED),
        "not listening"
    );
    let datagram = socket(&fixture, SOCK_DGRAM);
    assert_eq!(bind(&fixture, datagram, b"/tmp/datagram"), 0);
    assert_eq!(
        connect(&fixture, client, b"/tmp/datagram"),
        err(Errno::EPROTOTYPE)
    );
    let family = put(0x100, &[AF_UNIX as u8, 0]);
    assert_eq!(
        fixture.call(CONNECT, &[client, family, 2]),
        err(Errno::EINVAL)
    );
    // A full backlog: backlog 0 takes one connection, then EAGAIN.
    assert_eq!(fixture.call(LISTEN, &[bound, 0]), 0);
    assert_eq!(connect(&fixture, client, b"/tmp/bound"), 0);
    let another = socket(&fixture, SOCK_STREAM);
    assert_eq!(
        connect(&fixture, another, b"/tmp/bound"),
        err(Errno::EAGAIN)
    );
    // Unlinked, the path no longer leads to the listener.
    assert_eq!(fixture.call_path(UNLINK, b"/tmp/bound", &[]), 0);
    assert_eq!(
        connect(&fixture, another, b"/tmp/bound"),
        err(Errno::ENOENT)
    );
}

#[test]
fn closing_a_listener_resets_its_queued_connections() {
    let fixture = Fixture::new();
    let listener = socket(&fixture, SOCK_SEQPACKET);
    assert_eq!(bind(&fixture, listener, b"\0queue"), 0);
    assert_eq!(
        fixture.call(LISTEN, &[listener, u64::MAX]),
        0,
        "-1: SOMAXCONN"
    );
    let client = socket(&fixture, SOCK_SEQPACKET);
    assert_eq!(connect(&fixture, client, b"\0queue"), 0);
    let poll = put(0x900, &[client as u8, 0, 0, 0, 1, 0, 0, 0]);
    assert_eq!(fixture.call(POLL, &[poll, 1, 0]), 0, "nothing to read yet");
    assert_eq!(fixture.call(CLOSE, &[listener]), 0);
    assert_eq!(fixture.call(POLL, &[poll, 1, 0]), 1);
    assert_eq!(receive(&fixture, client), Err(err(Errno::ECONNRESET)));
    assert_eq!(
        receive(&fixture, client),
        Ok(Vec::new()),
        "then end of file"
    );
}

#[test]
fn a_listener_polls_readable_with_a_connection_queued() {
    let fixture = Fixture::new();
    let listener = socket(&fixture, SOCK_STREAM);
    assert_eq!(bind(&fixture, listener, b"\0poll"), 0);
    assert_eq!(fixture.call(LISTEN, &[listener, 1]), 0);
    let poll = put(0x900, &[listener as u8, 0, 0, 0, 1 | 4, 0, 0, 0]);
    assert_eq!(fixture.call(POLL, &[poll, 1, 0]), 0);
    let client = socket(&fixture, SOCK_STREAM);
    assert_eq!(connect(&fixture, client, b"\0poll"), 0);
    assert_eq!(fixture.call(POLL, &[poll, 1, 0]), 1);
    assert_eq!(fake::peek(poll + 6, 2), [1, 0], "POLLIN only");
}

#[test]
fn datagrams_go_by_name_and_say_who_sent_them() {
    let fixture = Fixture::new();
    let server = socket(&fixture, SOCK_DGRAM);
    let client = socket(&fixture, SOCK_DGRAM);
    assert_eq!(bind(&fixture, server, b"/tmp/log"), 0);
    assert_eq!(send(&fixture, client, b"x", 0), err(Errno::ENOTCONN));
    let (name, length) = address(0x180, b"/tmp/log");
    let data = put(0x600, b"hello");
    assert_eq!(fixture.call(SENDTO, &[client, data, 5, 0, name, length]), 5);
    let length_at = put(0x300, &128u32.to_le_bytes());
    assert_eq!(
        fixture.call(RECVFROM, &[server, at(0x700), 64, 0, at(0x400), length_at]),
        5
    );
    assert_eq!(fake::peek(at(0x700), 5), b"hello");
    assert_eq!(peek_u32(length_at), 0, "an unnamed sender");
    assert_eq!(bind(&fixture, client, b"\0client"), 0);
    assert_eq!(fixture.call(SENDTO, &[client, data, 5, 0, name, length]), 5);
    let length_at = put(0x300, &128u32.to_le_bytes());
    assert_eq!(
        fixture.call(
            RECVFROM,
            &[server, at(0x700), 2, MSG_TRUNC, at(0x400), length_at]
        ),
        5,
        "MSG_TRUNC: the whole datagram's length"
    );
    assert_eq!(
        fake::peek(at(0x400), peek_u32(length_at) as usize),
        record(b"\0client")
    );
    // A default peer; an unlinked name still reaches a connected peer.
    assert_eq!(connect(&fixture, client, b"/tmp/log"), 0);
    assert_eq!(fixture.call_path(UNLINK, b"/tmp/log", &[]), 0);
    assert_eq!(send(&fixture, client, b"again", 0), 5);
    assert_eq!(receive(&fixture, server), Ok(b"again".to_vec()));
    assert_eq!(
        fixture.call(SENDTO, &[client, data, 5, 0, name, length]),
        err(Errno::ENOENT)
    );
    let stream = socket(&fixture, SOCK_STREAM);
    assert_eq!(bind(&fixture, stream, b"\0stream"), 0);
    let (name, length) = address(0x180, b"\0stream");
    assert_eq!(
        fixture.call(SENDTO, &[server, data, 5, 0, name, length]),
        err(Errno::EPROTOTYPE)
    );
    assert_eq!(fixture.call(CLOSE, &[server]), 0);
    assert_eq!(send(&fixture, client, b"x", 0), err(Errno::ECONNREFUSED));
}

#[test]
fn a_stream_refuses_an_address() {
    let fixture = Fixture::new();
    let (first, _second) = pair(&fixture, SOCK_STREAM);
    let (name, length) = address(0x100, b"/tmp/x");
    let data = put(0x600, b"x");
    assert_eq!(
        fixture.call(SENDTO, &[first, data, 1, 0, name, length]),
        err(Errno::EISCONN)
    );
    let unconnected = socket(&fixture, SOCK_STREAM);
    assert_eq!(
        fixture.call(SENDTO, &[unconnected, data, 1, 0, name, length]),
        err(Errno::EOPNOTSUPP)
    );
}

/// A `socketpair` of `kind` (non-blocking): its descriptors.
fn pair(fixture: &Fixture, kind: u64) -> (u64, u64) {
    let fds = at(0xa00);
    assert_eq!(
        fixture.call(SOCKETPAIR, &[UNIX, kind | SOCK_NONBLOCK, 0, fds]),
        0
    );
    (u64::from(peek_u32(fds)), u64::from(peek_u32(fds + 4)))
}

#[test]
fn a_pair_answers_the_socket_calls() {
    let fixture = Fixture::new();
    let (first, second) = pair(&fixture, SOCK_SEQPACKET);
    assert_eq!(int_option(&fixture, first, SO_TYPE), SOCK_SEQPACKET as i64);
    assert_eq!(int_option(&fixture, first, SO_DOMAIN), i64::from(AF_UNIX));
    assert_eq!(int_option(&fixture, first, SO_PROTOCOL), 0);
    assert_eq!(int_option(&fixture, first, SO_ERROR), 0);
    assert_eq!(int_option(&fixture, first, SO_ACCEPTCONN), 0);
    assert_eq!(int_option(&fixture, first, SO_SNDBUF), 212_992);
    let value = put(0x520, &4096u32.to_le_bytes());
    assert_eq!(
        fixture.call(SETSOCKOPT, &[first, SOL_SOCKET, SO_SNDBUF, value, 4]),
        0
    );
    assert_eq!(int_option(&fixture, first, SO_SNDBUF), 8192, "doubled");
    assert_eq!(
        fixture.call(SETSOCKOPT, &[first, SOL_SOCKET, SO_SNDBUF, value, 2]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(SETSOCKOPT, &[first, 6, 1, value, 4]),
        err(Errno::EOPNOTSUPP),
        "no TCP options"
    );
    assert_eq!(
        fixture.call(SETSOCKOPT, &[first, SOL_SOCKET, 999, value, 4]),
        err(Errno::ENOPROTOOPT)
    );
    assert_eq!(name_of(&fixture, GETPEERNAME, first), Ok(record(b"")));
    assert_eq!(fixture.call(LISTEN, &[first, 1]), err(Errno::EINVAL));
    assert_eq!(fixture.call(SHUTDOWN, &[first, 3]), err(Errno::EINVAL));
    assert_eq!(fixture.call(SHUTDOWN, &[first, SHUT_WR]), 0);
    assert_eq!(receive(&fixture, second), Ok(Vec::new()), "end of file");
    assert_eq!(send(&fixture, first, b"x", NOSIGNAL), err(Errno::EPIPE));
    assert_eq!(send(&fixture, second, b"back", 0), 4, "the other way works");
    assert_eq!(receive(&fixture, first), Ok(b"back".to_vec()));
}

#[test]
fn epipe_raises_sigpipe_unless_msg_nosignal() {
    let fixture = Fixture::new();
    let (first, second) = pair(&fixture, SOCK_STREAM);
    assert_eq!(fixture.call(CLOSE, &[second]), 0);
    let pending = || {
        fixture
            .process()
            .signals
            .lock()
            .pending_for(crate::signal::current_thread())
    };
    assert_eq!(send(&fixture, first, b"x", NOSIGNAL), err(Errno::EPIPE));
    assert_eq!(pending(), 0);
    assert_eq!(send(&fixture, first, b"x", 0), err(Errno::EPIPE));
    assert_ne!(pending() & (1 << (13 - 1)), 0, "SIGPIPE");
}

/// Writes a `struct msghdr` for one vector of `length` bytes at `data`,
/// with `control_length` bytes of control at `control`: its address.
fn message(data: u64, length: u64, control: u64, control_length: u64) -> u64 {
    let vector = put_iovecs(0xb00, &[(data, length)]);
    let mut header = [0u8; 56];
    header[16..24].copy_from_slice(&vector.to_le_bytes());
    header[24..32].copy_from_slice(&1u64.to_le_bytes());
    header[32..40].copy_from_slice(&control.to_le_bytes());
    header[40..48].copy_from_slice(&control_length.to_le_bytes());
    put(0xc00, &header)
}

#[test]
fn descriptors_pass_with_scm_rights() {
    let fixture = Fixture::new();
    let (first, second) = pair(&fixture, SOCK_STREAM);
    let passed = fixture.open(b"/dev/null", 0);
    let mut control = alloc::vec![0u8; 24];
    control[..8].copy_from_slice(&20u64.to_le_bytes());
    control[8..12].copy_from_slice(&1u32.to_le_bytes());
    control[12..16].copy_from_slice(&SCM_RIGHTS.to_le_bytes());
    control[16..20].copy_from_slice(&(passed as u32).to_le_bytes());
    let control_at = put(0xd00, &control);
    let data = put(0x600, b"fd");
    let header = message(data, 2, control_at, 24);
    assert_eq!(fixture.call(SENDMSG, &[first, header, 0]), 2);
    assert_eq!(fixture.call(CLOSE, &[passed]), 0);
    let header = message(at(0x700), 16, at(0xe00), 64);
    assert_eq!(fixture.call(RECVMSG, &[second, header, 0]), 2);
    assert_eq!(peek_u64(header + 40), 24, "one message, aligned");
    assert_eq!(peek_u64(at(0xe00)), 20);
    assert_eq!(peek_u32(at(0xe00) + 12), SCM_RIGHTS);
    let received = u64::from(peek_u32(at(0xe00) + 16));
    let stat = at(0x800);
    assert_eq!(fixture.call(FSTAT, &[received, stat]), 0);
    assert_eq!(peek_u32(stat + 24) & 0o170000, 0o020000, "/dev/null");
    // A bad descriptor or a malformed message is refused.
    let mut bad = control.clone();
    bad[16..20].copy_from_slice(&99u32.to_le_bytes());
    let bad_at = put(0xd00, &bad);
    let header = message(data, 2, bad_at, 24);
    assert_eq!(
        fixture.call(SENDMSG, &[first, header, 0]),
        err(Errno::EBADF)
    );
    let vector = put_iovecs(0xb00, &[(data, 2)]);
    let mut many = [0u8; 56];
    many[16..24].copy_from_slice(&vector.to_le_bytes());
    many[24..32].copy_from_slice(&1025u64.to_le_bytes());
    let many = put(0xc80, &many);
    assert_eq!(
        fixture.call(SENDMSG, &[first, many, 0]),
        err(Errno::EMSGSIZE),
        "more vectors than UIO_MAXIOV"
    );
    let mut short = control;
    short[..8].copy_from_slice(&8u64.to_le_bytes());
    let short_at = put(0xd00, &short);
    let header = message(data, 2, short_at, 24);
    assert_eq!(
        fixture.call(SENDMSG, &[first, header, 0]),
        err(Errno::EINVAL)
    );
}

#[test]
fn passcred_reports_the_sender() {
    let fixture = Fixture::new();
    let (first, second) = pair(&fixture, SOCK_DGRAM);
    let on = put(0x520, &1u32.to_le_bytes());
    assert_eq!(
        fixture.call(SETSOCKOPT, &[second, SOL_SOCKET, SO_PASSCRED, on, 4]),
        0
    );
    assert_eq!(int_option(&fixture, second, SO_PASSCRED), 1);
    let data = put(0x600, b"hi");
    assert_eq!(
        fixture.call(SENDMSG, &[first, message(data, 2, 0, 0), 0]),
        2
    );
    let header = message(at(0x700), 16, at(0xe00), 64);
    assert_eq!(fixture.call(RECVMSG, &[second, header, 0]), 2);
    assert_eq!(peek_u64(header + 40), 32);
    assert_eq!(peek_u32(at(0xe00) + 12), SCM_CREDENTIALS);
    assert_eq!(peek_u32(at(0xe00) + 16), PID as u32);
}
