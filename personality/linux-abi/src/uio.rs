//! `struct iovec`: one buffer of `readv`, `writev`, `sendmsg`, ... (16
//! bytes).

use crate::bytes::{get_u64, put};

/// `struct iovec`: a buffer's address and length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Iovec {
    /// `iov_base`.
    pub base: u64,
    /// `iov_len`.
    pub len: u64,
}

impl Iovec {
    /// Bytes of a `struct iovec`.
    pub const BYTES: usize = 16;

    /// The record as user space reads it: base@0, len@8.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        put(&mut bytes, 0, self.base.to_le_bytes());
        put(&mut bytes, 8, self.len.to_le_bytes());
        bytes
    }

    /// The record user space wrote.
    pub fn from_bytes(bytes: &[u8; Self::BYTES]) -> Iovec {
        Iovec {
            base: get_u64(bytes, 0),
            len: get_u64(bytes, 8),
        }
    }

    /// The address of element `index` of an array of them at `vectors`;
    /// `None` if it overflows.
    pub fn element_address(vectors: u64, index: u64) -> Option<u64> {
        index
            .checked_mul(Self::BYTES as u64)
            .and_then(|offset| vectors.checked_add(offset))
    }
}
