//! `struct linux_dirent64`, the record `getdents64` fills a buffer with:
//!
//! ```text
//! u64 d_ino; i64 d_off; u16 d_reclen; u8 d_type; char d_name[];  // NUL-terminated
//! ```
//!
//! Each record is padded to a multiple of 8 bytes (`d_reclen` includes the
//! padding); `d_off` is the position to resume after this entry.

/// Bytes before `d_name`.
pub const DIRENT64_HEADER_BYTES: usize = 19;

/// The record length of an entry named `name_length` bytes.
pub const fn dirent64_length(name_length: usize) -> usize {
    (DIRENT64_HEADER_BYTES + name_length + 1).next_multiple_of(8)
}

/// Writes one record at the start of `buf` and returns its length, or
/// `None` if it does not fit (nothing is written then).
pub fn encode_dirent64(
    buf: &mut [u8],
    ino: u64,
    next_offset: i64,
    dirent_type: u8,
    name: &[u8],
) -> Option<usize> {
    let length = dirent64_length(name.len());
    let record = buf.get_mut(..length)?;
    let reclen = u16::try_from(length).ok()?;
    record[0..8].copy_from_slice(&ino.to_le_bytes());
    record[8..16].copy_from_slice(&next_offset.to_le_bytes());
    record[16..18].copy_from_slice(&reclen.to_le_bytes());
    record[18] = dirent_type;
    let name_end = DIRENT64_HEADER_BYTES + name.len();
    record[DIRENT64_HEADER_BYTES..name_end].copy_from_slice(name);
    // The terminator and the padding.
    record[name_end..].fill(0);
    Some(length)
}

/// One record read back from a `getdents64` buffer (for tests and for
/// tools that list directories from kernel space).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dirent64<'a> {
    /// `d_ino`.
    pub ino: u64,
    /// `d_off`.
    pub next_offset: i64,
    /// `d_type`.
    pub dirent_type: u8,
    /// `d_name` without the terminator.
    pub name: &'a [u8],
}

/// Decodes the records of a filled `getdents64` buffer; stops at the first
/// malformed one.
pub fn decode_dirents64(mut buf: &[u8]) -> impl Iterator<Item = Dirent64<'_>> {
    core::iter::from_fn(move || {
        let header = buf.get(..DIRENT64_HEADER_BYTES)?;
        let ino = u64::from_le_bytes(header[0..8].try_into().ok()?);
        let next_offset = i64::from_le_bytes(header[8..16].try_into().ok()?);
        let reclen = u16::from_le_bytes(header[16..18].try_into().ok()?) as usize;
        let record = buf.get(..reclen)?;
        let name_area = record.get(DIRENT64_HEADER_BYTES..)?;
        let name_length = name_area.iter().position(|byte| *byte == 0)?;
        buf = &buf[reclen..];
        Some(Dirent64 {
            ino,
            next_offset,
            dirent_type: header[18],
            name: &name_area[..name_length],
        })
    })
}
