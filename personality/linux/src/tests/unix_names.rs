//! `unix_names` and `unix_address`: the registry of bound names and the
//! `struct sockaddr_un` records, on their own.

use alloc::{sync::Arc, vec::Vec};

use vfs::Errno;

use crate::{unix_address::UnixAddress, unix_names::Registry};

/// The bytes of a `struct sockaddr_un` with `path` (family `AF_UNIX`).
fn record(path: &[u8]) -> Vec<u8> {
    let mut bytes = alloc::vec![1, 0];
    bytes.extend_from_slice(path);
    bytes
}

#[test]
fn addresses_parse_as_linux_reads_them() {
    assert_eq!(UnixAddress::parse(&record(b"")), Ok(UnixAddress::Unnamed));
    assert_eq!(
        UnixAddress::parse(&record(b"sock\0junk")),
        Ok(UnixAddress::Path(b"sock".to_vec())),
        "a path ends at its NUL"
    );
    assert_eq!(
        UnixAddress::parse(&record(b"sock")),
        Ok(UnixAddress::Path(b"sock".to_vec())),
        "or where the length ends"
    );
    assert_eq!(
        UnixAddress::parse(&record(b"\0a\0b")),
        Ok(UnixAddress::Abstract(b"a\0b".to_vec())),
        "an abstract name keeps every byte"
    );
    assert_eq!(UnixAddress::parse(&[1]), Err(Errno::EINVAL), "too short");
    assert_eq!(
        UnixAddress::parse(&[2, 0, b'x']),
        Err(Errno::EINVAL),
        "AF_INET"
    );
    assert_eq!(
        UnixAddress::parse(&record(&[b'x'; 109])),
        Err(Errno::EINVAL),
        "longer than a sockaddr_un"
    );
}

#[test]
fn addresses_are_written_back_at_linuxs_lengths() {
    assert_eq!(UnixAddress::Unnamed.to_bytes(), record(b""));
    assert_eq!(
        UnixAddress::Path(b"/tmp/s".to_vec()).to_bytes(),
        record(b"/tmp/s\0")
    );
    assert_eq!(
        UnixAddress::Abstract(b"name".to_vec()).to_bytes(),
        record(b"\0name")
    );
    assert_eq!(
        UnixAddress::Path(alloc::vec![b'p'; 108]).to_bytes().len(),
        110
    );
}

#[test]
fn abstract_names_are_taken_once_while_their_socket_lives() {
    let registry = Registry::<u32>::default();
    let first = Arc::new(1);
    let second = Arc::new(2);
    assert_eq!(registry.bind_abstract(b"name", &first), Ok(()));
    assert_eq!(
        registry.bind_abstract(b"name", &second),
        Err(Errno::EADDRINUSE)
    );
    assert_eq!(registry.find_abstract(b"name").as_deref(), Some(&1));
    assert!(registry.find_abstract(b"other").is_none());
    drop(first);
    assert!(registry.find_abstract(b"name").is_none(), "a closed socket");
    assert_eq!(registry.bind_abstract(b"name", &second), Ok(()));
    registry.release_abstract(b"name", &9);
    assert_eq!(registry.len(), 1, "another socket's name stays");
    registry.release_abstract(b"name", &second);
    assert!(registry.is_empty());
}

#[test]
fn nodes_name_their_socket_until_released() {
    let registry = Registry::<u32>::default();
    let socket = Arc::new(7);
    registry.bind_node((1, 42), &socket);
    assert_eq!(registry.find_node((1, 42)).as_deref(), Some(&7));
    assert!(registry.find_node((2, 42)).is_none(), "another device");
    registry.release_node((1, 42), &7);
    assert_eq!(registry.len(), 1, "another socket's node stays");
    registry.release_node((1, 42), &socket);
    assert!(registry.is_empty());
    let gone = Arc::new(8);
    registry.bind_node((1, 43), &gone);
    drop(gone);
    registry.release_node((1, 43), &0);
    assert!(registry.is_empty(), "a dead entry goes");
}

#[test]
fn automatic_names_are_five_hex_digits_and_distinct() {
    let registry = Registry::<u32>::default();
    let socket = Arc::new(0);
    assert_eq!(registry.bind_abstract(b"00000", &socket), Ok(()));
    let name = registry.bind_automatic(&socket).expect("a name");
    assert_eq!(name, b"00001", "the taken one is skipped");
    let next = registry.bind_automatic(&socket).expect("a name");
    assert_eq!(next, b"00002");
}
