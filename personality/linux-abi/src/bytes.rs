//! Little-endian reads and writes at an offset: how every layout here
//! puts its fields where Linux has them, in safe code.

/// Writes `bytes` at `at` in `buffer`.
pub(crate) fn put<const N: usize>(buffer: &mut [u8], at: usize, bytes: [u8; N]) {
    buffer[at..at + N].copy_from_slice(&bytes);
}

/// The `N` bytes at `at` in `buffer`.
pub(crate) fn get<const N: usize>(buffer: &[u8], at: usize) -> [u8; N] {
    let mut bytes = [0; N];
    bytes.copy_from_slice(&buffer[at..at + N]);
    bytes
}

/// The `i64` at `at`.
pub(crate) fn get_i64(buffer: &[u8], at: usize) -> i64 {
    i64::from_le_bytes(get(buffer, at))
}

/// The `u64` at `at`.
pub(crate) fn get_u64(buffer: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(get(buffer, at))
}

/// The `u32` at `at`.
pub(crate) fn get_u32(buffer: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(get(buffer, at))
}
