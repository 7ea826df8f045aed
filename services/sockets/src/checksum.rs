//! The Internet checksum (RFC 1071), eight bytes a step: what verifying a
//! received segment costs, once per segment. smoltcp's own takes two
//! bytes a step; the one's-complement sum does not depend on how the
//! bytes are grouped or on byte order (RFC 1071 §2), so 64-bit words in
//! the machine's order, folded at the end, give the same sum.

/// Adds `data` to the running sum `sum` (64-bit, end-around carry).
/// `data` must start at an even offset of what is summed; an odd last
/// byte is padded with zero, as the RFC says.
fn add(mut sum: u64, data: &[u8]) -> u64 {
    let mut words = data.chunks_exact(8);
    for word in &mut words {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        let (total, carry) = sum.overflowing_add(u64::from_ne_bytes(bytes));
        sum = total + u64::from(carry);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut bytes = [0u8; 8];
        bytes[..rest.len()].copy_from_slice(rest);
        let (total, carry) = sum.overflowing_add(u64::from_ne_bytes(bytes));
        sum = total + u64::from(carry);
    }
    sum
}

/// Folds a running sum to 16 bits (end-around carry).
fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Whether the TCP or UDP `segment` carried between `source` and
/// `destination` (IPv4) with `protocol` has a correct checksum: the sum
/// over the pseudo-header and the segment, its checksum field included,
/// is all ones.
pub(crate) fn verifies(
    source: [u8; 4],
    destination: [u8; 4],
    protocol: u8,
    segment: &[u8],
) -> bool {
    let Ok(length) = u16::try_from(segment.len()) else {
        return false;
    };
    let mut pseudo = [0u8; 12];
    pseudo[..4].copy_from_slice(&source);
    pseudo[4..8].copy_from_slice(&destination);
    pseudo[9] = protocol;
    pseudo[10..].copy_from_slice(&length.to_be_bytes());
    // All ones reads the same in either byte order.
    fold(add(add(0, &pseudo), segment)) == 0xffff
}

#[cfg(test)]
mod tests {
    extern crate std;

    use smoltcp::wire::{IpAddress, Ipv4Address, TcpPacket};

    use super::verifies;

    /// Against smoltcp's checksum, on segments of every length from 20 to
    /// 1,500 bytes with pseudo-random contents, correct and with one bit
    /// flipped.
    #[test]
    fn agrees_with_smoltcp_on_good_and_damaged_segments() {
        let (source, destination) = ([10, 0, 2, 2], [10, 0, 2, 15]);
        let mut state = 0x2545_f491_u32;
        let mut random = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state
        };
        for len in 20..1500usize {
            let mut bytes: std::vec::Vec<u8> = (0..len).map(|_| random() as u8).collect();
            bytes[12] = 0x50; // a 20-byte header
            let mut segment = TcpPacket::new_unchecked(&mut bytes[..]);
            let (src, dst) = (
                IpAddress::Ipv4(Ipv4Address::from(source)),
                IpAddress::Ipv4(Ipv4Address::from(destination)),
            );
            segment.fill_checksum(&src, &dst);
            assert!(verifies(source, destination, 6, &bytes), "length {len}");
            let flip = random() as usize % len;
            bytes[flip] ^= 1 << (random() % 8);
            let smoltcp = TcpPacket::new_unchecked(&bytes[..]).verify_checksum(&src, &dst);
            assert_eq!(
                verifies(source, destination, 6, &bytes),
                smoltcp,
                "length {len}, byte {flip}"
            );
        }
    }
}
