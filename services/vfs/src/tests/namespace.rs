use alloc::vec::Vec;

use super::{mount_new, read_file, setup, write_file};
use crate::{
    flags::{O_CREAT, O_RDWR},
    same_inode, Errno, FileType, NodeKind, SetAttributes, TimeChange, Timespec, S_IFCHR, S_IFDIR,
    S_IFIFO, S_IFLNK, S_IFREG,
};

#[test]
fn mkdir_makes_directories_with_the_umask_applied_and_eexist_after() {
    let (vfs, context) = setup();
    let dir = vfs.mkdir(&context, b"/a", 0o777).unwrap();
    assert_eq!(dir.metadata().mode, S_IFDIR | 0o755);
    assert_eq!(dir.metadata().nlink, 2);
    assert_eq!(
        vfs.root().metadata().nlink,
        3,
        "the child's \"..\" links the root"
    );
    assert_eq!(vfs.mkdir(&context, b"/a", 0o777).err(), Some(Errno::EEXIST));
    assert_eq!(
        vfs.mkdir(&context, b"/a/", 0o777).err(),
        Some(Errno::EEXIST)
    );
    assert_eq!(vfs.mkdir(&context, b"/", 0o777).err(), Some(Errno::EEXIST));
    assert_eq!(
        vfs.mkdir(&context, b"/a/.", 0o777).err(),
        Some(Errno::EEXIST)
    );
    assert_eq!(
        vfs.mkdir(&context, b"/nope/b", 0o777).err(),
        Some(Errno::ENOENT)
    );
    assert!(
        vfs.mkdir(&context, b"/a/b/", 0o700).is_ok(),
        "a trailing slash is fine for mkdir"
    );
    assert_eq!(
        vfs.stat(&context, b"/a/b", true).unwrap().mode,
        S_IFDIR | 0o700
    );
}

#[test]
fn files_under_files_are_enotdir() {
    let (vfs, context) = setup();
    write_file(&vfs, &context, b"/f", b"x");
    assert_eq!(
        vfs.mkdir(&context, b"/f/d", 0o755).err(),
        Some(Errno::ENOTDIR)
    );
    assert_eq!(
        vfs.resolve(&context, b"/f/", true).err(),
        Some(Errno::ENOTDIR)
    );
    assert_eq!(
        vfs.resolve(&context, b"/f/.", true).err(),
        Some(Errno::ENOTDIR)
    );
    assert!(vfs.resolve(&context, b"/f", true).is_ok());
}

#[test]
fn creating_a_non_directory_with_a_trailing_slash_is_enoent_or_eexist() {
    let (vfs, context) = setup();
    assert_eq!(
        vfs.symlink(&context, b"t", b"/l/").err(),
        Some(Errno::ENOENT)
    );
    assert_eq!(
        vfs.mknod(&context, b"/n/", S_IFIFO | 0o644, 0).err(),
        Some(Errno::ENOENT)
    );
    write_file(&vfs, &context, b"/f", b"");
    assert_eq!(
        vfs.mknod(&context, b"/f/", S_IFIFO | 0o644, 0).err(),
        Some(Errno::EEXIST)
    );
}

#[test]
fn mknod_makes_fifos_and_devices_and_rejects_directories() {
    let (vfs, mut context) = setup();
    let fifo = vfs.mknod(&context, b"/fifo", S_IFIFO | 0o666, 0).unwrap();
    assert_eq!(fifo.metadata().mode, S_IFIFO | 0o644);
    assert_eq!(fifo.file_type(), FileType::Fifo);
    let null = vfs
        .mknod(&context, b"/null", S_IFCHR | 0o666, crate::makedev(1, 3))
        .unwrap();
    assert_eq!(null.metadata().rdev, crate::makedev(1, 3));
    // Linux's `may_mknod`: a directory is EPERM (mkdir makes those),
    // an unknown type EINVAL.
    assert_eq!(
        vfs.mknod(&context, b"/d", S_IFDIR | 0o755, 0).err(),
        Some(Errno::EPERM)
    );
    assert_eq!(
        vfs.mknod(&context, b"/odd", 0o170_755, 0).err(),
        Some(Errno::EINVAL)
    );
    assert_eq!(
        vfs.mknod(&context, b"/l", S_IFLNK | 0o755, 0).err(),
        Some(Errno::EINVAL)
    );
    assert_eq!(
        vfs.mknod(&context, b"/fifo", S_IFIFO, 0).err(),
        Some(Errno::EEXIST)
    );
    let plain = vfs.mknod(&context, b"/plain", 0o600, 0).unwrap();
    assert_eq!(plain.metadata().mode, S_IFREG | 0o600);
    context.uid = 1000;
    vfs.set_attributes(
        &vfs.context(0, 0),
        &vfs.root(),
        &SetAttributes {
            mode: Some(0o777),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        vfs.mknod(&context, b"/tty", S_IFCHR | 0o666, 5).err(),
        Some(Errno::EPERM)
    );
}

#[test]
fn unlink_removes_files_and_refuses_directories_with_eisdir() {
    let (vfs, context) = setup();
    vfs.mkdir(&context, b"/d", 0o755).unwrap();
    write_file(&vfs, &context, b"/d/f", b"data");
    let file = vfs.resolve(&context, b"/d/f", true).unwrap();
    assert_eq!(vfs.unlink(&context, b"/d").err(), Some(Errno::EISDIR));
    assert_eq!(vfs.unlink(&context, b"/d/").err(), Some(Errno::EISDIR));
    assert_eq!(vfs.unlink(&context, b"/").err(), Some(Errno::EISDIR));
    assert_eq!(vfs.unlink(&context, b"/d/.").err(), Some(Errno::EISDIR));
    assert_eq!(vfs.unlink(&context, b"/d/f/").err(), Some(Errno::ENOTDIR));
    assert_eq!(vfs.unlink(&context, b"/d/nope").err(), Some(Errno::ENOENT));
    vfs.unlink(&context, b"/d/f").unwrap();
    assert_eq!(
        vfs.resolve(&context, b"/d/f", true).err(),
        Some(Errno::ENOENT)
    );
    assert_eq!(file.metadata().nlink, 0);
    // The inode lives on for whoever holds it.
    let mut buf = [0; 4];
    assert_eq!(file.read_at(0, &mut buf), Ok(4));
    assert_eq!(&buf, b"data");
}

#[test]
fn rmdir_rules() {
    let (vfs, context) = setup();
    vfs.mkdir(&context, b"/d", 0o755).unwrap();
    vfs.mkdir(&context, b"/d/e", 0o755).unwrap();
    write_file(&vfs, &context, b"/f", b"");
    assert_eq!(vfs.rmdir(&context, b"/d").err(), Some(Errno::ENOTEMPTY));
    assert_eq!(vfs.rmdir(&context, b"/f").err(), Some(Errno::ENOTDIR));
    assert_eq!(vfs.rmdir(&context, b"/d/e/.").err(), Some(Errno::EINVAL));
    assert_eq!(
        vfs.rmdir(&context, b"/d/e/..").err(),
        Some(Errno::ENOTEMPTY)
    );
    assert_eq!(vfs.rmdir(&context, b"/").err(), Some(Errno::EBUSY));
    assert_eq!(vfs.rmdir(&context, b"/nope").err(), Some(Errno::ENOENT));
    assert_eq!(vfs.root().metadata().nlink, 3);
    let e = vfs.resolve(&context, b"/d/e", true).unwrap();
    vfs.rmdir(&context, b"/d/e/").unwrap();
    assert_eq!(e.metadata().nlink, 0);
    assert_eq!(
        vfs.resolve(&context, b"/d", true).unwrap().metadata().nlink,
        2
    );
    // Making something in a removed directory is ENOENT.
    assert_eq!(
        e.create(
            b"x",
            crate::NewNode {
                kind: NodeKind::Regular,
                permissions: 0o644,
                uid: 0,
                gid: 0
            }
        )
        .err(),
        Some(Errno::ENOENT)
    );
    vfs.rmdir(&context, b"/d").unwrap();
    assert_eq!(vfs.root().metadata().nlink, 2);
}

#[test]
fn rmdir_of_a_mount_point_or_the_context_root_is_ebusy() {
    let (vfs, mut context) = setup();
    mount_new(&vfs, &context, b"/mnt", 2);
    assert_eq!(vfs.rmdir(&context, b"/mnt").err(), Some(Errno::EBUSY));
    vfs.mkdir(&context, b"/jail", 0o755).unwrap();
    vfs.mkdir(&context, b"/jail/sub", 0o755).unwrap();
    context.root = vfs.resolve(&context, b"/jail", true).unwrap();
    context.cwd = vfs.resolve(&context, b"/sub", true).unwrap();
    assert_eq!(vfs.rmdir(&context, b"..").err(), Some(Errno::ENOTEMPTY));
    // After chroot without chdir the current directory is outside the
    // root; the root cannot be removed from there either.
    let mut chrooted = vfs.context(0, 0);
    chrooted.cwd = vfs.resolve(&chrooted, b"/jail", true).unwrap();
    chrooted.root = vfs.resolve(&chrooted, b"/jail/sub", true).unwrap();
    assert_eq!(vfs.rmdir(&chrooted, b"sub").err(), Some(Errno::EBUSY));
    assert_eq!(
        vfs.rmdir(&vfs.context(0, 0), b"/jail/sub").ok(),
        Some(()),
        "not busy for others"
    );
}

#[test]
fn rename_replaces_files_and_moves_directories() {
    let (vfs, context) = setup();
    write_file(&vfs, &context, b"/a", b"A");
    write_file(&vfs, &context, b"/b", b"B");
    let b = vfs.resolve(&context, b"/b", true).unwrap();
    vfs.rename(&context, b"/a", b"/b").unwrap();
    assert_eq!(read_file(&vfs, &context, b"/b"), b"A");
    assert_eq!(
        vfs.resolve(&context, b"/a", true).err(),
        Some(Errno::ENOENT)
    );
    assert_eq!(b.metadata().nlink, 0, "the replaced file lost its name");

    vfs.mkdir(&context, b"/d1", 0o755).unwrap();
    vfs.mkdir(&context, b"/d2", 0o755).unwrap();
    vfs.mkdir(&context, b"/d1/sub", 0o755).unwrap();
    write_file(&vfs, &context, b"/d1/sub/f", b"deep");
    vfs.rename(&context, b"/d1/sub", b"/d2/moved").unwrap();
    assert_eq!(read_file(&vfs, &context, b"/d2/moved/f"), b"deep");
    assert_eq!(vfs.stat(&context, b"/d1", true).unwrap().nlink, 2);
    assert_eq!(vfs.stat(&context, b"/d2", true).unwrap().nlink, 3);
    let moved = vfs.resolve(&context, b"/d2/moved", true).unwrap();
    let parent = moved.lookup(b"..").unwrap();
    assert!(
        same_inode(&*parent, &*vfs.resolve(&context, b"/d2", true).unwrap()),
        "\"..\" follows the move"
    );
    assert_eq!(read_file(&vfs, &context, b"/d2/moved/../moved/f"), b"deep");
}

#[test]
fn rename_directory_rules() {
    let (vfs, context) = setup();
    vfs.mkdir(&context, b"/d", 0o755).unwrap();
    vfs.mkdir(&context, b"/d/inner", 0o755).unwrap();
    vfs.mkdir(&context, b"/empty", 0o755).unwrap();
    vfs.mkdir(&context, b"/full", 0o755).unwrap();
    write_file(&vfs, &context, b"/full/x", b"");
    write_file(&vfs, &context, b"/file", b"");
    assert_eq!(
        vfs.rename(&context, b"/d", b"/file").err(),
        Some(Errno::ENOTDIR)
    );
    assert_eq!(
        vfs.rename(&context, b"/file", b"/empty").err(),
        Some(Errno::EISDIR)
    );
    assert_eq!(
        vfs.rename(&context, b"/d", b"/full").err(),
        Some(Errno::ENOTEMPTY)
    );
    assert_eq!(
        vfs.rename(&context, b"/d", b"/d/inner/d").err(),
        Some(Errno::EINVAL)
    );
    assert_eq!(
        vfs.rename(&context, b"/d", b"/d/d").err(),
        Some(Errno::EINVAL)
    );
    assert_eq!(
        vfs.rename(&context, b"/d/inner", b"/d").err(),
        Some(Errno::ENOTEMPTY),
        "onto its own ancestor"
    );
    assert_eq!(
        vfs.rename(&context, b"/file/", b"/file2").err(),
        Some(Errno::ENOTDIR)
    );
    assert_eq!(
        vfs.rename(&context, b"/file", b"/file2/").err(),
        Some(Errno::ENOTDIR)
    );
    assert_eq!(
        vfs.rename(&context, b"/d/.", b"/x").err(),
        Some(Errno::EBUSY)
    );
    assert_eq!(vfs.rename(&context, b"/d", b"/").err(), Some(Errno::EBUSY));
    assert_eq!(
        vfs.rename(&context, b"/nope", b"/x").err(),
        Some(Errno::ENOENT)
    );
    let nlink = vfs.root().metadata().nlink;
    vfs.rename(&context, b"/d", b"/empty/").unwrap();
    assert_eq!(
        vfs.root().metadata().nlink,
        nlink - 1,
        "the replaced directory's \"..\" is gone"
    );
    assert!(vfs.resolve(&context, b"/empty/inner", true).is_ok());
    assert_eq!(
        vfs.resolve(&context, b"/d", true).err(),
        Some(Errno::ENOENT)
    );
}

#[test]
fn rename_between_links_of_one_file_does_nothing() {
    let (vfs, context) = setup();
    write_file(&vfs, &context, b"/a", b"x");
    vfs.link(&context, b"/a", b"/b", false).unwrap();
    vfs.rename(&context, b"/a", b"/b").unwrap();
    assert!(vfs.resolve(&context, b"/a", true).is_ok());
    assert_eq!(vfs.stat(&context, b"/b", true).unwrap().nlink, 2);
    vfs.rename(&context, b"/a", b"/a").unwrap();
    assert!(vfs.resolve(&context, b"/a", true).is_ok());
}

#[test]
fn rename_and_link_across_file_systems_are_exdev_and_mount_points_ebusy() {
    let (vfs, context) = setup();
    mount_new(&vfs, &context, b"/mnt", 2);
    write_file(&vfs, &context, b"/f", b"x");
    assert_eq!(
        vfs.rename(&context, b"/f", b"/mnt/f").err(),
        Some(Errno::EXDEV)
    );
    assert_eq!(
        vfs.link(&context, b"/f", b"/mnt/f", false).err(),
        Some(Errno::EXDEV)
    );
    assert_eq!(
        vfs.rename(&context, b"/mnt", b"/mnt2").err(),
        Some(Errno::EBUSY)
    );
    vfs.mkdir(&context, b"/other", 0o755).unwrap();
    assert_eq!(
        vfs.rename(&context, b"/other", b"/mnt").err(),
        Some(Errno::EBUSY)
    );
    write_file(&vfs, &context, b"/mnt/g", b"y");
    vfs.rename(&context, b"/mnt/g", b"/mnt/h").unwrap();
    assert_eq!(read_file(&vfs, &context, b"/mnt/h"), b"y");
}

#[test]
fn hard_links_share_the_inode_and_count() {
    let (vfs, context) = setup();
    write_file(&vfs, &context, b"/a", b"one");
    vfs.link(&context, b"/a", b"/b", false).unwrap();
    assert_eq!(vfs.stat(&context, b"/a", true).unwrap().nlink, 2);
    assert_eq!(
        vfs.stat(&context, b"/a", true).unwrap().ino,
        vfs.stat(&context, b"/b", true).unwrap().ino
    );
    write_file(&vfs, &context, b"/b", b"two");
    assert_eq!(read_file(&vfs, &context, b"/a"), b"two");
    vfs.mkdir(&context, b"/d", 0o755).unwrap();
    assert_eq!(
        vfs.link(&context, b"/d", b"/d2", false).err(),
        Some(Errno::EPERM)
    );
    assert_eq!(
        vfs.link(&context, b"/a", b"/b", false).err(),
        Some(Errno::EEXIST)
    );
    assert_eq!(
        vfs.link(&context, b"/nope", b"/c", false).err(),
        Some(Errno::ENOENT)
    );
    vfs.unlink(&context, b"/a").unwrap();
    assert_eq!(vfs.stat(&context, b"/b", true).unwrap().nlink, 1);
    // link(2) does not follow a symbolic link; linkat(AT_SYMLINK_FOLLOW) does.
    vfs.symlink(&context, b"/b", b"/s").unwrap();
    vfs.link(&context, b"/s", b"/s2", false).unwrap();
    assert_eq!(
        vfs.stat(&context, b"/s2", false).unwrap().mode & crate::S_IFMT,
        S_IFLNK
    );
    vfs.link(&context, b"/s", b"/b2", true).unwrap();
    assert_eq!(vfs.stat(&context, b"/b", true).unwrap().nlink, 2);
}

#[test]
fn readlink_and_symlink_rules() {
    let (vfs, context) = setup();
    let link = vfs.symlink(&context, b"../some/where", b"/l").unwrap();
    assert_eq!(link.metadata().mode, S_IFLNK | 0o777);
    assert_eq!(link.metadata().size, 13);
    assert_eq!(vfs.readlink(&context, b"/l").unwrap(), b"../some/where");
    write_file(&vfs, &context, b"/f", b"");
    assert_eq!(vfs.readlink(&context, b"/f").err(), Some(Errno::EINVAL));
    assert_eq!(vfs.symlink(&context, b"", b"/e").err(), Some(Errno::ENOENT));
    assert_eq!(
        vfs.symlink(&context, &[b'a'; 4096], b"/e").err(),
        Some(Errno::ENAMETOOLONG)
    );
    assert_eq!(
        vfs.symlink(&context, b"x", b"/l").err(),
        Some(Errno::EEXIST)
    );
}

#[test]
fn sparse_writes_read_zeros_and_truncate_cuts_and_extends() {
    let (vfs, context) = setup();
    let file = vfs.open(&context, b"/f", O_RDWR | O_CREAT, 0o644).unwrap();
    assert_eq!(file.pwrite(b"end", 10), Ok(3));
    assert_eq!(file.metadata().size, 13);
    let mut buf = [0xff; 13];
    assert_eq!(file.pread(&mut buf, 0), Ok(13));
    assert_eq!(&buf, b"\0\0\0\0\0\0\0\0\0\0end");
    file.truncate(2).unwrap();
    assert_eq!(file.metadata().size, 2);
    file.truncate(5).unwrap();
    assert_eq!(file.pread(&mut buf, 0), Ok(5));
    assert_eq!(&buf[..5], b"\0\0\0\0\0");
    assert_eq!(vfs.truncate(&context, b"/f", -1).err(), Some(Errno::EINVAL));
    vfs.truncate(&context, b"/f", 1).unwrap();
    assert_eq!(vfs.stat(&context, b"/f", true).unwrap().size, 1);
    assert_eq!(vfs.truncate(&context, b"/", 0).err(), Some(Errno::EISDIR));
    assert_eq!(
        vfs.stat(&context, b"/f", true).unwrap().blocks,
        8,
        "one 4096-byte block in 512-byte units"
    );
}

#[test]
fn huge_sparse_writes_fail_cleanly() {
    let fs = crate::RamFs::with_max_file_size(1, super::ticking_clock(), 1 << 20);
    let vfs = crate::Vfs::new(fs);
    let context = vfs.context(0, 0);
    let file = vfs.open(&context, b"/f", O_RDWR | O_CREAT, 0o644).unwrap();
    assert_eq!(file.pwrite(b"x", 1 << 20), Err(Errno::EFBIG));
    assert_eq!(
        file.pwrite(b"abc", (1 << 20) - 1),
        Ok(1),
        "what fits below the limit"
    );
    assert_eq!(file.truncate((1 << 20) + 1), Err(Errno::EFBIG));
    let (vfs, context) = setup();
    let file = vfs.open(&context, b"/g", O_RDWR | O_CREAT, 0o644).unwrap();
    assert_eq!(file.pwrite(b"x", i64::MAX - 1), Err(Errno::ENOSPC));
}

#[test]
fn attributes_change_and_ctime_moves() {
    let (vfs, context) = setup();
    write_file(&vfs, &context, b"/f", b"");
    let file = vfs.resolve(&context, b"/f", true).unwrap();
    let before = file.metadata();
    vfs.set_attributes(
        &context,
        &file,
        &SetAttributes {
            mode: Some(0o4711),
            uid: Some(5),
            gid: Some(6),
            atime: Some(TimeChange::At(Timespec { sec: 7, nsec: 8 })),
            mtime: Some(TimeChange::Now),
        },
    )
    .unwrap();
    let after = file.metadata();
    assert_eq!(after.mode, S_IFREG | 0o4711);
    assert_eq!((after.uid, after.gid), (5, 6));
    assert_eq!(after.atime, Timespec { sec: 7, nsec: 8 });
    assert!(after.mtime > before.mtime);
    assert!(after.ctime > before.ctime);
    // Not the owner: EPERM; the owner may chmod but not give the file away.
    let user = vfs.context(5, 6);
    let other = vfs.context(9, 9);
    assert_eq!(
        vfs.set_attributes(
            &other,
            &file,
            &SetAttributes {
                mode: Some(0o777),
                ..Default::default()
            }
        )
        .err(),
        Some(Errno::EPERM)
    );
    assert!(vfs
        .set_attributes(
            &user,
            &file,
            &SetAttributes {
                mode: Some(0o600),
                ..Default::default()
            }
        )
        .is_ok());
    assert_eq!(
        vfs.set_attributes(
            &user,
            &file,
            &SetAttributes {
                uid: Some(0),
                ..Default::default()
            }
        )
        .err(),
        Some(Errno::EPERM)
    );
    assert_eq!(file.metadata().mode, S_IFREG | 0o600);
}

#[test]
fn writes_move_mtime_and_the_parent_changes_with_its_entries() {
    let (vfs, context) = setup();
    let root_before = vfs.root().metadata();
    write_file(&vfs, &context, b"/f", b"1");
    let root_after = vfs.root().metadata();
    assert!(root_after.mtime > root_before.mtime);
    let file = vfs.resolve(&context, b"/f", true).unwrap();
    let before = file.metadata();
    file.write_at(0, b"2").unwrap();
    assert!(file.metadata().mtime > before.mtime);
}

#[test]
fn permissions_are_checked_for_non_root() {
    let (vfs, root) = setup();
    vfs.mkdir(&root, b"/private", 0o700).unwrap();
    write_file(&vfs, &root, b"/private/f", b"secret");
    write_file(&vfs, &root, b"/readonly", b"r");
    let user = vfs.context(1000, 1000);
    assert_eq!(
        vfs.resolve(&user, b"/private/f", true).err(),
        Some(Errno::EACCES)
    );
    assert_eq!(
        vfs.open(&user, b"/readonly", crate::flags::O_WRONLY, 0)
            .err(),
        Some(Errno::EACCES)
    );
    assert!(vfs
        .open(&user, b"/readonly", crate::flags::O_RDONLY, 0)
        .is_ok());
    assert_eq!(vfs.mkdir(&user, b"/mine", 0o755).err(), Some(Errno::EACCES));
    assert_eq!(vfs.unlink(&user, b"/readonly").err(), Some(Errno::EACCES));
    assert_eq!(vfs.directory(&user, b"/private").err(), Some(Errno::EACCES));
    assert!(vfs.directory(&root, b"/private").is_ok());
}

#[test]
fn readdir_lists_dot_dot_dot_and_children_in_order() {
    let (vfs, context) = setup();
    vfs.mkdir(&context, b"/d", 0o755).unwrap();
    write_file(&vfs, &context, b"/d/b", b"");
    vfs.mkdir(&context, b"/d/a", 0o755).unwrap();
    vfs.symlink(&context, b"b", b"/d/c").unwrap();
    let d = vfs.resolve(&context, b"/d", true).unwrap();
    let mut seen = Vec::new();
    d.readdir(0, &mut |entry, next| {
        seen.push((entry.name.to_vec(), entry.file_type, entry.ino, next));
        true
    })
    .unwrap();
    let names: Vec<&[u8]> = seen.iter().map(|(name, ..)| name.as_slice()).collect();
    assert_eq!(names, [&b"."[..], b"..", b"a", b"b", b"c"]);
    assert_eq!(seen[0].2, d.ino());
    assert_eq!(seen[1].2, vfs.root().ino());
    assert_eq!(seen[2].1, FileType::Directory);
    assert_eq!(seen[3].1, FileType::Regular);
    assert_eq!(seen[4].1, FileType::Symlink);
    let offsets: Vec<u64> = seen.iter().map(|entry| entry.3).collect();
    assert_eq!(offsets, [1, 2, 3, 4, 5]);
    let mut resumed = Vec::new();
    d.readdir(3, &mut |entry, _| {
        resumed.push(entry.name.to_vec());
        true
    })
    .unwrap();
    assert_eq!(resumed, [b"b".to_vec(), b"c".to_vec()]);
    let file = vfs.resolve(&context, b"/d/b", true).unwrap();
    assert_eq!(
        file.readdir(0, &mut |_, _| true).err(),
        Some(Errno::ENOTDIR)
    );
}

#[test]
fn concurrent_renames_creates_and_listings_neither_deadlock_nor_lose_files() {
    let (vfs, context) = setup();
    for path in [b"/a", b"/b", b"/c", b"/d"] {
        vfs.mkdir(&context, path, 0o755).unwrap();
    }
    let vfs = alloc::sync::Arc::new(vfs);
    // Two threads try to put /a under /b and /b under /a at once: only the
    // rename lock keeps them from making a cycle.
    let swappers = [(b"/a", b"/b/a"), (b"/b", b"/a/b")].map(|(from, to)| {
        let vfs = vfs.clone();
        let context = context.clone();
        std::thread::spawn(move || {
            for _ in 0..2000 {
                let _ = vfs.rename(&context, from, to);
                let _ = vfs.rename(&context, to, from);
            }
        })
    });
    let workers: Vec<_> = (0..2)
        .map(|thread| {
            let vfs = vfs.clone();
            let context = context.clone();
            std::thread::spawn(move || {
                for round in 0..300 {
                    let name = alloc::format!("/c/t{thread}-{round}").into_bytes();
                    let moved = alloc::format!("/d/t{thread}-{round}").into_bytes();
                    write_file(&vfs, &context, &name, b"x");
                    vfs.rename(&context, &name, &moved).unwrap();
                    vfs.unlink(&context, &moved).unwrap();
                    vfs.root().readdir(0, &mut |_, _| true).unwrap();
                }
            })
        })
        .collect();
    for thread in swappers.into_iter().chain(workers) {
        thread.join().unwrap();
    }
    // Every directory is still reachable from the root, once.
    let mut reachable = 0;
    let mut pending = alloc::vec![vfs.root()];
    while let Some(directory) = pending.pop() {
        let mut children = Vec::new();
        directory
            .readdir(2, &mut |entry, _| {
                children.push(entry.name.to_vec());
                true
            })
            .unwrap();
        let subdirectories = children.len() as u64;
        assert_eq!(directory.metadata().nlink, 2 + subdirectories);
        for child in children {
            reachable += 1;
            pending.push(directory.lookup(&child).unwrap());
        }
    }
    assert_eq!(reachable, 4, "a, b, c and d, files all removed");
}
