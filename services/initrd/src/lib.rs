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

/// `mode` bits giving a directory (`S_IFDIR`).
const DIRECTORY_TYPE: u32 = 0o040_000;
/// `mode` bits giving a symbolic link (`S_IFLNK`).
const SYMLINK_TYPE: u32 = 0o120_000;

/// One file in the archive.
///
/// Besides regular files, an archive holds directories, symbolic links
/// (whose target is the entry's data), device nodes and FIFOs; `mode`
/// carries the Linux `S_IF*` type bits and the permission bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    /// Path inside the archive, e.g. `ext/hello.wasm`.
    pub name: &'a str,
    /// The file's contents (for a symbolic link, its target).
    pub data: &'a [u8],
    /// Whether it is a regular file (not a directory, link, ...).
    pub is_regular_file: bool,
    /// The inode number in the archive; entries sharing one (with
    /// `nlink` > 1) are hard links to one file.
    pub ino: u32,
    /// File type (`S_IF*`) and permission bits, as in `st_mode`.
    pub mode: u32,
    /// Owner's user id.
    pub uid: u32,
    /// Owner's group id.
    pub gid: u32,
    /// Number of hard links to the file in the archive.
    pub nlink: u32,
    /// Modification time, seconds since the Unix epoch.
    pub mtime: u32,
    /// Major number of the device holding the file (scopes `ino`).
    pub dev_major: u32,
    /// Minor number of the device holding the file (scopes `ino`).
    pub dev_minor: u32,
    /// Major number of the device a device node stands for.
    pub rdev_major: u32,
    /// Minor number of the device a device node stands for.
    pub rdev_minor: u32,
}

impl Entry<'_> {
    /// A regular file `name` with permissions 0644 owned by root, the kind
    /// [`write_archive`] writes; a base to change with struct update syntax.
    pub fn file<'a>(name: &'a str, data: &'a [u8]) -> Entry<'a> {
        Entry {
            name,
            data,
            is_regular_file: true,
            ino: 0,
            mode: REGULAR_FILE_MODE,
            uid: 0,
            gid: 0,
            nlink: 1,
            mtime: 0,
            dev_major: 0,
            dev_minor: 0,
            rdev_major: 0,
            rdev_minor: 0,
        }
    }

    /// Whether the entry is a directory.
    pub fn is_directory(&self) -> bool {
        self.mode & FILE_TYPE_MASK == DIRECTORY_TYPE
    }

    /// Whether the entry is a symbolic link (its data is the target).
    pub fn is_symlink(&self) -> bool {
        self.mode & FILE_TYPE_MASK == SYMLINK_TYPE
    }
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
    hex_field_u32(header, index, offset).map(|value| value as usize)
}

fn hex_field_u32(header: &[u8], index: usize, offset: usize) -> Result<u32, ArchiveError> {
    let start = 6 + index * 8;
    let digits = header
        .get(start..start + 8)
        .ok_or(ArchiveError::Truncated { offset })?;
    let text = core::str::from_utf8(digits).map_err(|_| ArchiveError::BadField { offset })?;
    // from_str_radix accepts a leading '+', which is not a hex digit.
    if !digits.iter().all(u8::is_ascii_hexdigit) {
        return Err(ArchiveError::BadField { offset });
    }
    u32::from_str_radix(text, 16).map_err(|_| ArchiveError::BadField { offset })
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
        let ino = hex_field_u32(header, 0, offset)?;
        let mode = hex_field_u32(header, 1, offset)?;
        let uid = hex_field_u32(header, 2, offset)?;
        let gid = hex_field_u32(header, 3, offset)?;
        let nlink = hex_field_u32(header, 4, offset)?;
        let mtime = hex_field_u32(header, 5, offset)?;
        let dev_major = hex_field_u32(header, 7, offset)?;
        let dev_minor = hex_field_u32(header, 8, offset)?;
        let rdev_major = hex_field_u32(header, 9, offset)?;
        let rdev_minor = hex_field_u32(header, 10, offset)?;
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
            ino,
            mode,
            uid,
            gid,
            nlink,
            mtime,
            dev_major,
            dev_minor,
            rdev_major,
            rdev_minor,
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

fn push_entry(archive: &mut Vec<u8>, entry: &Entry<'_>) {
    let fields = [
        entry.ino as usize,
        entry.mode as usize,
        entry.uid as usize,
        entry.gid as usize,
        entry.nlink as usize,
        entry.mtime as usize,
        entry.data.len(),
        entry.dev_major as usize,
        entry.dev_minor as usize,
        entry.rdev_major as usize,
        entry.rdev_minor as usize,
        entry.name.len() + 1,
        0,
    ];
    archive.extend_from_slice(MAGIC);
    for field in fields {
        archive.extend_from_slice(alloc::format!("{field:08x}").as_bytes());
    }
    archive.extend_from_slice(entry.name.as_bytes());
    archive.push(0);
    archive.resize(archive.len().next_multiple_of(4), 0);
    archive.extend_from_slice(entry.data);
    archive.resize(archive.len().next_multiple_of(4), 0);
}

/// Builds a newc archive of regular files `(name, contents)`.
pub fn write_archive<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Vec<u8> {
    write_entries(
        files
            .into_iter()
            .enumerate()
            .map(|(index, (name, data))| Entry {
                ino: index as u32 + 1,
                ..Entry::file(name, data)
            }),
    )
}

/// Builds a newc archive of arbitrary entries (directories, symbolic links,
/// device nodes, hard links), written as given; `is_regular_file` is
/// ignored, `mode` decides the type.
pub fn write_entries<'a>(entries: impl IntoIterator<Item = Entry<'a>>) -> Vec<u8> {
    let mut archive = Vec::new();
    for entry in entries {
        push_entry(&mut archive, &entry);
    }
    let trailer = Entry {
        mode: 0,
        nlink: 1,
        ..Entry::file(TRAILER_NAME, &[])
    };
    push_entry(&mut archive, &trailer);
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
    fn every_header_field_reads_back() {
        let archive = write_entries([
            Entry {
                ino: 7,
                mode: 0o040_755,
                uid: 1000,
                gid: 100,
                nlink: 2,
                mtime: 0x6000_0000,
                ..Entry::file("bin", &[])
            },
            Entry {
                mode: 0o120_777,
                ..Entry::file("bin/sh", b"busybox")
            },
            Entry {
                mode: 0o020_666,
                rdev_major: 1,
                rdev_minor: 3,
                dev_major: 8,
                dev_minor: 1,
                ..Entry::file("null", &[])
            },
        ]);
        let read: Vec<_> = entries(&archive).collect::<Result<_, _>>().unwrap();
        assert_eq!(read.len(), 3);
        assert!(read[0].is_directory() && !read[0].is_regular_file && !read[0].is_symlink());
        assert_eq!(
            (
                read[0].ino,
                read[0].mode,
                read[0].uid,
                read[0].gid,
                read[0].nlink,
                read[0].mtime
            ),
            (7, 0o040_755, 1000, 100, 2, 0x6000_0000)
        );
        assert!(read[1].is_symlink() && !read[1].is_directory());
        assert_eq!(read[1].data, b"busybox");
        assert_eq!(
            (
                read[2].rdev_major,
                read[2].rdev_minor,
                read[2].dev_major,
                read[2].dev_minor
            ),
            (1, 3, 8, 1)
        );
        assert_eq!(read[2].mode, 0o020_666);
    }

    #[test]
    fn a_plus_sign_is_not_a_hex_digit() {
        let mut archive = write_archive([("a", &b"data"[..])]);
        archive[6 + 8] = b'+';
        assert_eq!(
            entries(&archive).next(),
            Some(Err(ArchiveError::BadField { offset: 0 }))
        );
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
