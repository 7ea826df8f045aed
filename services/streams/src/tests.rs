//! Host tests: a listener on a loopback stack, clients connecting to it,
//! and kernel handlers on `TCP.StreamData` (as an extension's would be).

extern crate std;

use alloc::{sync::Arc, vec::Vec};
use core::net::{Ipv4Addr, SocketAddrV4};
use std::sync::{
    atomic::{AtomicU64, Ordering},
    Mutex,
};

use dispatch::{Field, Guard, Handler, Install, Predicate, Principal};
use extension_interface::FileAccess;
use sockets::{Kind, Shutdown, Socket, SocketError, Stack};

use crate::{Listener, Next, Service, StreamArgs, LOCAL_PORT, MAX_PENDING_BYTES};

fn ticking() -> u64 {
    static NOW: AtomicU64 = AtomicU64::new(0);
    NOW.fetch_add(1_000_000, Ordering::Relaxed)
}

/// A file of the kernel's, kept in memory or read piece by piece.
struct TestFile {
    bytes: Vec<u8>,
    resident: Option<&'static [u8]>,
}

impl FileAccess for TestFile {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }
    fn version(&self) -> u64 {
        1
    }
    fn read(&self, offset: u64, out: &mut [u8]) -> usize {
        let rest = self.bytes.get(offset as usize..).unwrap_or(&[]);
        let count = rest.len().min(out.len());
        out[..count].copy_from_slice(&rest[..count]);
        count
    }
    fn resident(&self) -> Option<&'static [u8]> {
        self.resident
    }
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|index| (index * 7 % 251) as u8).collect()
}

/// Connects a client to `port`, steps the listener until it is accepted.
fn connect(stack: &Arc<Stack>, listener: &Listener, port: u16) -> Socket {
    let client = Socket::new(stack.clone(), Kind::Stream);
    let _ = client.connect(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
    for _ in 0..1000 {
        listener.step();
        if client.connection().is_ok() && listener.open_connections() > 0 {
            return client;
        }
    }
    panic!("the connection to port {port} was not accepted");
}

/// Reads `client` to its end, stepping the listener meanwhile.
fn read_to_end(client: &Socket, listener: &Listener) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buffer = [0u8; 4096];
    for _ in 0..100_000 {
        listener.step();
        match client.receive(&mut buffer, false) {
            Ok((0, _, _)) => return got,
            Ok((count, _, _)) => got.extend_from_slice(&buffer[..count]),
            Err(SocketError::WouldBlock) => {}
            Err(error) => panic!("reading the answer: {error}"),
        }
    }
    panic!("the answer did not end ({} bytes read)", got.len());
}

/// A request in two pieces is raised twice, the first kept (more data),
/// the second with both; the answer (bytes, a resident file's range, a
/// range of a file read piece by piece) arrives whole, then the end.
#[test]
fn a_request_in_pieces_is_answered_with_bytes_and_file_ranges_then_closed() {
    let stack = Arc::new(Stack::new(ticking));
    let service = Service::new(stack.clone(), ticking);
    let listener = service.listen(8080).unwrap();
    let resident: &'static [u8] = std::boxed::Box::leak(pattern(100_000).into_boxed_slice());
    let in_memory: Arc<dyn FileAccess> = Arc::new(TestFile {
        bytes: resident.to_vec(),
        resident: Some(resident),
    });
    let read_in_pieces: Arc<dyn FileAccess> = Arc::new(TestFile {
        bytes: pattern(300_000),
        resident: None,
    });
    let seen = Arc::new(Mutex::new(Vec::<Vec<u8>>::new()));
    let (files, record) = ((in_memory, read_in_pieces), seen.clone());
    let handler = Handler::new(move |args: &StreamArgs| {
        let mut data = std::vec![0; args.0 .0.len()];
        args.0 .0.read(0, &mut data);
        record.lock().unwrap().push(data.clone());
        if !data.ends_with(b"\r\n\r\n") {
            return Next::MoreData as u32;
        }
        args.0 .0.reply(b"HEAD\n").unwrap();
        args.0 .0.reply_file(&files.0, 10, 50_000).unwrap();
        args.0 .0.reply_file(&files.1, 1, 200_000).unwrap();
        assert!(
            args.0 .0.reply_file(&files.1, 1, 300_000).is_err(),
            "past the end"
        );
        Next::Close as u32
    });
    let install = Install::new(handler).guard(Guard::when(Predicate::equals(
        Field::Param(LOCAL_PORT),
        8080,
    )));
    service.event().install(Principal::KERNEL, install).unwrap();

    let client = connect(&stack, &listener, 8080);
    client.send(b"GET / HTTP/1.1\r\n", None).unwrap();
    for _ in 0..50 {
        listener.step();
    }
    client.send(b"\r\n", None).unwrap();
    let answer = read_to_end(&client, &listener);
    let mut expected = b"HEAD\n".to_vec();
    expected.extend_from_slice(&resident[10..50_010]);
    expected.extend_from_slice(&pattern(300_000)[1..200_001]);
    assert_eq!(answer.len(), expected.len());
    assert!(answer == expected, "the answer's bytes differ");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "one raise per piece of the request");
    assert_eq!(seen[0], b"GET / HTTP/1.1\r\n");
    assert_eq!(seen[1], b"GET / HTTP/1.1\r\n\r\n", "kept data comes again");
    for _ in 0..100 {
        listener.step();
    }
    let counters = listener.counters();
    assert_eq!(
        (counters.accepted, counters.raised, counters.answered),
        (1, 2, 1)
    );
    assert_eq!(listener.open_connections(), 0);
}

/// Without a handler the connection is closed unanswered; a client
/// sending more than a handler may keep unconsumed is cut off; a handler
/// that keeps the connection open (an echo) answers each piece.
#[test]
fn unhandled_oversized_and_kept_open_connections() {
    let stack = Arc::new(Stack::new(ticking));
    let service = Service::new(stack.clone(), ticking);

    let unhandled = service.listen(7001).unwrap();
    let client = connect(&stack, &unhandled, 7001);
    client.send(b"anyone?", None).unwrap();
    assert!(read_to_end(&client, &unhandled).is_empty());
    assert_eq!(unhandled.counters().answered, 1);

    let greedy = service.listen(7002).unwrap();
    let wants_more = Install::new(Handler::new(|_: &StreamArgs| Next::MoreData as u32)).guard(
        Guard::when(Predicate::equals(Field::Param(LOCAL_PORT), 7002)),
    );
    service
        .event()
        .install(Principal::KERNEL, wants_more)
        .unwrap();
    let client = connect(&stack, &greedy, 7002);
    let flood = pattern(MAX_PENDING_BYTES + 10_000);
    let mut sent = 0;
    for _ in 0..10_000 {
        greedy.step();
        match client.send(&flood[sent..], None) {
            Ok(count) => sent += count,
            Err(SocketError::WouldBlock) => {}
            Err(_) => break,
        }
        if sent == flood.len() || greedy.open_connections() == 0 {
            break;
        }
    }
    for _ in 0..100 {
        greedy.step();
    }
    assert_eq!(greedy.open_connections(), 0, "the flood was cut off");
    assert_eq!(greedy.counters().dropped, 1);

    let echo = service.listen(7003).unwrap();
    let echoing = Install::new(Handler::new(|args: &StreamArgs| {
        let mut data = std::vec![0; args.0 .0.len()];
        args.0 .0.read(0, &mut data);
        args.0 .0.reply(&data).unwrap();
        Next::KeepOpen as u32
    }))
    .guard(Guard::when(Predicate::equals(
        Field::Param(LOCAL_PORT),
        7003,
    )));
    service.event().install(Principal::KERNEL, echoing).unwrap();
    let client = connect(&stack, &echo, 7003);
    for round in 0..3u8 {
        let piece = [b'a' + round; 10];
        client.send(&piece, None).unwrap();
        let mut got = Vec::new();
        let mut buffer = [0u8; 64];
        for _ in 0..1000 {
            echo.step();
            if let Ok((count, _, _)) = client.receive(&mut buffer, false) {
                got.extend_from_slice(&buffer[..count]);
            }
            if got.len() >= piece.len() {
                break;
            }
        }
        assert_eq!(got, piece, "round {round}: each piece echoed, once");
    }
    client.shutdown(Shutdown::Write).unwrap();
    assert!(read_to_end(&client, &echo).is_empty());
    assert_eq!(echo.counters().raised, 3);

    // Closed, the port is free at once (an extension unloaded, another
    // program binding it next).
    greedy.close();
    assert!(greedy.is_closed());
    let again = service.listen(7002).expect("the port is free once closed");
    drop(again);
}

/// A handler may close the listener it is called for (an extension
/// dropping its listener handle): the step ends without deadlock, the
/// connection with it, and the port is free.
#[test]
fn a_handler_closing_its_own_listener_ends_it() {
    let stack = Arc::new(Stack::new(ticking));
    let service = Service::new(stack.clone(), ticking);
    let listener = Arc::new(service.listen(7004).unwrap());
    let closing = listener.clone();
    let handler = Install::new(Handler::new(move |_: &StreamArgs| {
        closing.close();
        Next::KeepOpen as u32
    }))
    .guard(Guard::when(Predicate::equals(
        Field::Param(LOCAL_PORT),
        7004,
    )));
    service.event().install(Principal::KERNEL, handler).unwrap();
    let client = connect(&stack, &listener, 7004);
    client.send(b"bye", None).unwrap();
    for _ in 0..100 {
        listener.step();
    }
    assert!(listener.is_closed());
    assert_eq!(listener.open_connections(), 0);
    assert!(service.listen(7004).is_ok(), "the port is free");
}
