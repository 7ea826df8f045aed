use crate::socket::{SockaddrIn, AF_INET};

#[test]
fn sockaddr_in_has_network_order_port_and_address() {
    let address = SockaddrIn {
        port: 8080,
        address: [10, 0, 2, 15],
    };
    let bytes = address.to_bytes();
    assert_eq!(bytes.len(), 16);
    assert_eq!(bytes[..8], [2, 0, 0x1f, 0x90, 10, 0, 2, 15]);
    assert!(bytes[8..].iter().all(|byte| *byte == 0));
    assert_eq!(SockaddrIn::from_bytes(&bytes), Some(address));
    let mut other_family = bytes;
    other_family[0] = 10;
    assert_eq!(SockaddrIn::from_bytes(&other_family), None);
    assert_eq!(AF_INET, 2);
}
