use alloc::{string::ToString, vec::Vec};

use initrd::{write_entries, ArchiveError, Entry};

use super::{read_file, ticking_clock};
use crate::{
    flags::O_WRONLY, makedev, populate_from_cpio, Errno, FileSystem, FileType, PopulateError,
    RamFs, RamInode, Timespec, Vfs, S_IFCHR, S_IFDIR, S_IFLNK, S_IFREG,
};

fn leak(bytes: Vec<u8>) -> &'static [u8] {
    bytes.leak()
}

fn dir(name: &str, mode: u32) -> Entry<'_> {
    Entry {
        mode: S_IFDIR | mode,
        ..Entry::file(name, &[])
    }
}

fn sample_archive() -> &'static [u8] {
    leak(write_entries([
        Entry {
            mtime: 1_700_000_000,
            ..dir(".", 0o755)
        },
        dir("bin", 0o755),
        Entry {
            mode: S_IFREG | 0o755,
            uid: 0,
            gid: 0,
            mtime: 1_600_000_000,
            ..Entry::file("bin/busybox", b"\x7fELF busybox")
        },
        Entry {
            mode: S_IFLNK | 0o777,
            ..Entry::file("bin/sh", b"busybox")
        },
        Entry {
            mode: S_IFLNK | 0o777,
            ..Entry::file("usr/bin/env", b"/bin/busybox")
        },
        Entry {
            mode: S_IFREG | 0o600,
            uid: 1000,
            gid: 100,
            ..Entry::file("./home/user/.profile", b"export PS1='$ '\n")
        },
        Entry {
            mode: S_IFCHR | 0o600,
            rdev_major: 5,
            rdev_minor: 1,
            ..Entry::file("dev/console", &[])
        },
        dir("tmp", 0o1777),
    ]))
}

#[test]
fn an_archive_becomes_a_tree() {
    let fs = RamFs::new(1, ticking_clock());
    assert_eq!(populate_from_cpio(&fs, sample_archive()), Ok(8));
    let vfs = Vfs::new(fs.clone());
    let context = vfs.context(0, 0);
    assert_eq!(
        read_file(&vfs, &context, b"/bin/busybox"),
        b"\x7fELF busybox"
    );
    assert_eq!(
        read_file(&vfs, &context, b"/bin/sh"),
        b"\x7fELF busybox",
        "relative symlink"
    );
    assert_eq!(
        read_file(&vfs, &context, b"/usr/bin/env"),
        b"\x7fELF busybox",
        "absolute symlink, parents made"
    );
    assert_eq!(vfs.readlink(&context, b"/bin/sh").unwrap(), b"busybox");
    let busybox = vfs.stat(&context, b"/bin/busybox", true).unwrap();
    assert_eq!(busybox.mode, S_IFREG | 0o755);
    assert_eq!(busybox.mtime, Timespec::from_secs(1_600_000_000));
    assert_eq!(busybox.size, 12);
    let profile = vfs.stat(&context, b"/home/user/.profile", true).unwrap();
    assert_eq!(
        (profile.mode, profile.uid, profile.gid),
        (S_IFREG | 0o600, 1000, 100)
    );
    assert_eq!(
        vfs.stat(&context, b"/home/user", true).unwrap().mode,
        S_IFDIR | 0o755,
        "a made parent"
    );
    assert_eq!(vfs.stat(&context, b"/usr", true).unwrap().nlink, 3);
    let console = vfs.stat(&context, b"/dev/console", true).unwrap();
    assert_eq!(
        (console.mode, console.rdev),
        (S_IFCHR | 0o600, makedev(5, 1))
    );
    assert_eq!(
        vfs.stat(&context, b"/tmp", true).unwrap().mode,
        S_IFDIR | 0o1777
    );
    assert_eq!(
        vfs.stat(&context, b"/", true).unwrap().mtime,
        Timespec::from_secs(1_700_000_000),
        "\".\" is the root"
    );
}

#[test]
fn files_borrow_the_archive_until_written() {
    let fs = RamFs::new(1, ticking_clock());
    let archive = sample_archive();
    populate_from_cpio(&fs, archive).unwrap();
    let vfs = Vfs::new(fs.clone());
    let context = vfs.context(0, 0);
    let inode = vfs.resolve(&context, b"/bin/busybox", true).unwrap();
    let ram = inode.as_any().downcast_ref::<RamInode>().unwrap();
    assert!(ram.is_borrowing());
    let whole = inode
        .borrowed_contents()
        .expect("an archive file lends its bytes");
    assert!(whole.starts_with(b"\x7fELF busybox"));
    vfs.truncate(&context, b"/bin/busybox", 4).unwrap();
    assert!(ram.is_borrowing(), "shrinking keeps borrowing");
    assert_eq!(
        inode.borrowed_contents(),
        Some(&whole[..4]),
        "a shrunk file lends the shorter slice"
    );
    assert_eq!(read_file(&vfs, &context, b"/bin/busybox"), b"\x7fELF");
    let file = vfs.open(&context, b"/bin/busybox", O_WRONLY, 0).unwrap();
    file.write(b"\x7fFLE").unwrap();
    assert!(!ram.is_borrowing(), "the first write copies");
    assert_eq!(
        inode.borrowed_contents(),
        None,
        "written bytes are not lent"
    );
    assert_eq!(read_file(&vfs, &context, b"/bin/busybox"), b"\x7fFLE");
    let archive_text = archive
        .windows(12)
        .any(|window| window == b"\x7fELF busybox");
    assert!(archive_text, "the archive itself is unchanged");
}

#[test]
fn hard_links_in_the_archive_share_an_inode() {
    let archive = leak(write_entries([
        Entry {
            ino: 9,
            nlink: 2,
            ..Entry::file("a", &[])
        },
        Entry {
            ino: 9,
            nlink: 2,
            ..Entry::file("b", b"shared")
        },
    ]));
    let fs = RamFs::new(1, ticking_clock());
    populate_from_cpio(&fs, archive).unwrap();
    let root = fs.root();
    let a = root.lookup(b"a").unwrap();
    let b = root.lookup(b"b").unwrap();
    assert_eq!(a.ino(), b.ino());
    assert_eq!(a.metadata().nlink, 2);
    let mut buf = [0; 6];
    assert_eq!(a.read_at(0, &mut buf), Ok(6));
    assert_eq!(&buf, b"shared");
}

#[test]
fn later_entries_replace_earlier_files_and_update_directories() {
    let archive = leak(write_entries([
        Entry::file("x", b"old"),
        Entry::file("x", b"new"),
        dir("d", 0o700),
        Entry::file("d/f", b""),
        dir("d", 0o750),
    ]));
    let fs = RamFs::new(1, ticking_clock());
    populate_from_cpio(&fs, archive).unwrap();
    let vfs = Vfs::new(fs);
    let context = vfs.context(0, 0);
    assert_eq!(read_file(&vfs, &context, b"/x"), b"new");
    assert_eq!(
        vfs.stat(&context, b"/d", true).unwrap().mode,
        S_IFDIR | 0o750
    );
    assert!(
        vfs.resolve(&context, b"/d/f", true).is_ok(),
        "the directory was kept"
    );
}

#[test]
fn corrupt_archives_are_errors_not_panics() {
    let fs = RamFs::new(1, ticking_clock());
    let mut bytes = sample_archive().to_vec();
    bytes[0] = b'X';
    let error = populate_from_cpio(&fs, leak(bytes)).unwrap_err();
    assert_eq!(
        error,
        PopulateError::Archive(ArchiveError::BadMagic { offset: 0 })
    );
    assert_eq!(
        error.to_string(),
        "initramfs: no cpio newc magic at offset 0"
    );
    let truncated = &sample_archive()[..200];
    assert!(matches!(
        populate_from_cpio(&RamFs::new(2, ticking_clock()), truncated),
        Err(PopulateError::Archive(ArchiveError::Truncated { .. }))
    ));
    // Every truncation and byte flip: an error or a tree, never a panic.
    let archive = sample_archive();
    for length in (0..archive.len()).step_by(3) {
        let _ = populate_from_cpio(&RamFs::new(3, ticking_clock()), &archive[..length]);
    }
    for index in (0..archive.len()).step_by(2) {
        for value in [b'0', b'7', b'f', b'/', 0] {
            let mut corrupt = archive.to_vec();
            corrupt[index] = value;
            let _ = populate_from_cpio(&RamFs::new(3, ticking_clock()), leak(corrupt));
        }
    }
}

#[test]
fn impossible_entries_are_errors() {
    let escape = leak(write_entries([Entry::file("../etc/passwd", b"x")]));
    assert_eq!(
        populate_from_cpio(&RamFs::new(1, ticking_clock()), escape),
        Err(PopulateError::Entry {
            name: "../etc/passwd".to_string(),
            errno: Errno::EINVAL
        })
    );
    let under_file = leak(write_entries([
        Entry::file("f", b""),
        Entry::file("f/g", b""),
    ]));
    let error = populate_from_cpio(&RamFs::new(1, ticking_clock()), under_file).unwrap_err();
    assert_eq!(error.to_string(), "initramfs: f/g: Not a directory");
    let no_type = leak(write_entries([Entry {
        mode: 0o644,
        ..Entry::file("weird", b"")
    }]));
    assert!(populate_from_cpio(&RamFs::new(1, ticking_clock()), no_type).is_err());
    let fs = RamFs::new(1, ticking_clock());
    assert_eq!(fs.root().lookup(b"weird").err(), Some(Errno::ENOENT));
    assert_eq!(fs.root().file_type(), FileType::Directory);
}
