//! The boot archive: cpio "newc" (the format of Linux's initramfs, see
//! `man 5 cpio`), which QEMU hands to the kernel as its `-initrd` module.
//!
//! The reader is the kernel's and must never panic on a corrupt image: every
//! header field is checked and every slice bound verified, and a malformed
//! entry ends iteration with an [`ArchiveError`]. The `cpio_reader` crate was
//! considered, but its header parsing subtracts from an unchecked name size
//! (a panic in debug builds on a zero-length name). The writer is used by
//! xtask to build the archive, so both sides share one definition.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::vec::Vec;
use core::fmt;

const MAGIC: &[u8; 6] = b"070701";
const HEADER_BYTES: usize = 110;
const TRAILER_NAME: &str = "TRAILER!!!";
/// `mode` of a regular file with permissions 0644.
const REGULAR_FILE_MODE: u32 = 0o100_644;
const FILE_TYPE_MASK: u32 = 0o170_000;
const REGULAR_FILE_TYPE: u32 = 0o100_000;

/// One file in the archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    /// Path inside the archive, e.g. `ext/hello.wasm`.
    pub name: &'a str,
    /// The file's contents.
    pub data: &'a [u8],
    /// Whether it is a regular file (not a directory, link, ...).
    pub is_regular_file: bool,
}

/// What is wrong with an archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveError {
    /// The header at this offset does not start with the newc magic.
    BadMagic {
        /// Byte offset of the entry's header.
        offset: usize,
    },
    /// A header field at this offset is not eight hex digits.
    BadField {
        /// Byte offset of the entry's header.
        offset: usize,
    },
    /// The entry at this offset runs past the end of the archive.
    Truncated {
        /// Byte offset of the entry's header.
        offset: usize,
    },
    /// The entry's name at this offset is empty, unterminated or not UTF-8.
    BadName {
        /// Byte offset of the entry's header.
        offset: usize,
    },
}

impl fmt::Display for ArchiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadMagic { offset } => write!(f, "no cpio newc magic at offset {offset}"),
            Self::BadField { offset } => write!(f, "malformed header field at offset {offset}"),
            Self::Truncated { offset } => write!(f, "entry at offset {offset} is truncated"),
            Self::BadName { offset } => write!(f, "bad file name in entry at offset {offset}"),
        }
    }
}

/// Iterates over the entries of a newc archive, up to its trailer.
pub fn entries(archive: &[u8]) -> Entries<'_> {
    Entries {
        archive,
        offset: 0,
        is_done: false,
    }
}

/// Iterator returned by [`entries`].
pub struct Entries<'a> {
    archive: &'a [u8],
    offset: usize,
    is_done: bool,
}

fn align4(value: usize) -> Option<usize> {
    value.checked_add(3).map(|value| value & !3)
}

fn hex_field(header: &[u8], index: usize, offset: usize) -> Result<usize, ArchiveError> {
    let start = 6 + index * 8;
    let digits = header
        .get(start..start + 8)
        .ok_or(ArchiveError::Truncated { offset })?;
    let text = core::str::from_utf8(digits).map_err(|_| ArchiveError::BadField { offset })?;
    u32::from_str_radix(text, 16)
        .map(|value| value as usize)
        .map_err(|_| ArchiveError::BadField { offset })
}

impl<'a> Entries<'a> {
    fn parse_next(&mut self) -> Result<Option<Entry<'a>>, ArchiveError> {
        let offset = self.offset;
        let header = self
            .archive
            .get(offset..offset.saturating_add(HEADER_BYTES))
            .ok_or(ArchiveError::Truncated { offset })?;
        if &header[..6] != MAGIC {
            return Err(ArchiveError::BadMagic { offset });
        }
        // Fields after the magic: ino, mode, uid, gid, nlink, mtime,
        // filesize, devmajor, devminor, rdevmajor, rdevminor, namesize, check.
        let mode = hex_field(header, 1, offset)? as u32;
        let file_size = hex_field(header, 6, offset)?;
        let name_size = hex_field(header, 11, offset)?;
        if name_size == 0 {
            return Err(ArchiveError::BadName { offset });
        }
        let name_start = offset + HEADER_BYTES;
        let name_end = name_start
            .checked_add(name_size)
            .ok_or(ArchiveError::Truncated { offset })?;
        let name_bytes = self
            .archive
            .get(name_start..name_end)
            .ok_or(ArchiveError::Truncated { offset })?;
        let (terminator, name) = name_bytes
            .split_last()
            .ok_or(ArchiveError::BadName { offset })?;
        if *terminator != 0 {
            return Err(ArchiveError::BadName { offset });
        }
        let name = core::str::from_utf8(name).map_err(|_| ArchiveError::BadName { offset })?;
        let data_start = align4(name_end).ok_or(ArchiveError::Truncated { offset })?;
        let data_end = data_start
            .checked_add(file_size)
            .ok_or(ArchiveError::Truncated { offset })?;
        let data = self
            .archive
            .get(data_start..data_end)
            .ok_or(ArchiveError::Truncated { offset })?;
        self.offset = align4(data_end).ok_or(ArchiveError::Truncated { offset })?;
        if name == TRAILER_NAME {
            return Ok(None);
        }
        Ok(Some(Entry {
            name,
            data,
            is_regular_file: mode & FILE_TYPE_MASK == REGULAR_FILE_TYPE,
        }))
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<Entry<'a>, ArchiveError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.is_done {
            return None;
        }
        match self.parse_next() {
            Ok(Some(entry)) => Some(Ok(entry)),
            Ok(None) => {
                self.is_done = true;
                None
            }
            Err(error) => {
                self.is_done = true;
                Some(Err(error))
            }
        }
    }
}

fn push_entry(archive: &mut Vec<u8>, inode: usize, name: &str, mode: u32, data: &[u8]) {
    let fields = [
        inode,
        mode as usize,
        0,
        0,
        1,
        0,
        data.len(),
        0,
        0,
        0,
        0,
        name.len() + 1,
        0,
    ];
    archive.extend_from_slice(MAGIC);
    for field in fields {
        archive.extend_from_slice(alloc::format!("{field:08x}").as_bytes());
    }
    archive.extend_from_slice(name.as_bytes());
    archive.push(0);
    archive.resize(archive.len().next_multiple_of(4), 0);
    archive.extend_from_slice(data);
    archive.resize(archive.len().next_multiple_of(4), 0);
}

/// Builds a newc archive of regular files `(name, contents)`.
pub fn write_archive<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Vec<u8> {
    let mut archive = Vec::new();
    for (index, (name, data)) in files.into_iter().enumerate() {
        push_entry(&mut archive, index + 1, name, REGULAR_FILE_MODE, data);
    }
    push_entry(&mut archive, 0, TRAILER_NAME, 0, &[]);
    archive
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_archives_read_back() {
        let archive = write_archive([
            ("ext/hello.wasm", &b"\0asm"[..]),
            ("empty", &b""[..]),
            ("odd", &b"12345"[..]),
        ]);
        let read: Vec<_> = entries(&archive).collect::<Result<_, _>>().unwrap();
        assert_eq!(read.len(), 3);
        assert_eq!(read[0].name, "ext/hello.wasm");
        assert_eq!(read[0].data, b"\0asm");
        assert!(read[0].is_regular_file);
        assert_eq!(read[1].data, b"");
        assert_eq!(read[2].data, b"12345");
    }

    #[test]
    fn corrupt_archives_give_errors() {
        let archive = write_archive([("a", &b"data"[..])]);
        let mut bad_magic = archive.clone();
        bad_magic[0] = b'9';
        assert_eq!(
            entries(&bad_magic).next(),
            Some(Err(ArchiveError::BadMagic { offset: 0 }))
        );
        let mut bad_field = archive.clone();
        bad_field[6 + 6 * 8] = b'z';
        assert_eq!(
            entries(&bad_field).next(),
            Some(Err(ArchiveError::BadField { offset: 0 }))
        );
        let mut huge_file = archive.clone();
        huge_file[6 + 6 * 8..6 + 7 * 8].copy_from_slice(b"ffffffff");
        assert_eq!(
            entries(&huge_file).next(),
            Some(Err(ArchiveError::Truncated { offset: 0 }))
        );
        let mut empty_name = archive.clone();
        empty_name[6 + 11 * 8..6 + 12 * 8].copy_from_slice(b"00000000");
        assert_eq!(
            entries(&empty_name).next(),
            Some(Err(ArchiveError::BadName { offset: 0 }))
        );
        assert_eq!(
            entries(&archive[..50]).next(),
            Some(Err(ArchiveError::Truncated { offset: 0 }))
        );
        assert_eq!(
            entries(&[]).next(),
            Some(Err(ArchiveError::Truncated { offset: 0 }))
        );
    }

    #[test]
    fn every_truncation_and_byte_flip_is_an_error_or_entries_never_a_panic() {
        let archive = write_archive([("one", &b"first file"[..]), ("two", &b"2"[..])]);
        for length in 0..archive.len() {
            let _ = entries(&archive[..length]).count();
        }
        for index in 0..archive.len() {
            for value in [0u8, b'0', b'f', 0xff] {
                let mut corrupt = archive.clone();
                corrupt[index] = value;
                let _ = entries(&corrupt).count();
            }
        }
    }
}
