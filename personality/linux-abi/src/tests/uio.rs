use crate::uio::Iovec;

#[test]
fn iovec_is_base_then_length() {
    let vector = Iovec {
        base: 0x1000,
        len: 42,
    };
    let bytes = vector.to_bytes();
    assert_eq!(bytes.len(), 16);
    assert_eq!(bytes[8..], 42u64.to_le_bytes());
    assert_eq!(Iovec::from_bytes(&bytes), vector);
    assert_eq!(Iovec::element_address(0x2000, 3), Some(0x2030));
    assert_eq!(Iovec::element_address(u64::MAX, 1), None);
}
