use alloc::vec::Vec;

use super::{mount_new, read_file, setup, write_file};
use crate::{same_inode, Errno, FileType, LastComponent};

#[test]
fn absolute_relative_dot_and_repeated_slashes() {
    let (vfs, mut context) = setup();
    vfs.mkdir(&context, b"/a", 0o755).unwrap();
    vfs.mkdir(&context, b"/a/b", 0o755).unwrap();
    write_file(&vfs, &context, b"/a/b/f", b"x");
    let f = vfs.resolve(&context, b"/a/b/f", true).unwrap();
    for path in [
        &b"//a///b//f"[..],
        b"/a/./b/./f",
        b"/a/b/../b/f",
        b"a/b/f",
        b"./a/b/f",
    ] {
        let found = vfs.resolve(&context, path, true).unwrap();
        assert!(
            same_inode(&*found, &*f),
            "{}",
            core::str::from_utf8(path).unwrap()
        );
    }
    context.cwd = vfs.resolve(&context, b"/a/b", true).unwrap();
    assert!(same_inode(
        &*vfs.resolve(&context, b"f", true).unwrap(),
        &*f
    ));
    assert!(same_inode(
        &*vfs.resolve(&context, b"../b/f", true).unwrap(),
        &*f
    ));
    assert!(same_inode(
        &*vfs.resolve(&context, b".", true).unwrap(),
        &*context.cwd
    ));
    assert!(same_inode(
        &*vfs.resolve(&context, b"/", true).unwrap(),
        &*vfs.root()
    ));
    assert!(same_inode(
        &*vfs.resolve(&context, b"///", true).unwrap(),
        &*vfs.root()
    ));
    assert_eq!(vfs.resolve(&context, b"", true).err(), Some(Errno::ENOENT));
    assert_eq!(
        vfs.resolve(&context, b"missing", true).err(),
        Some(Errno::ENOENT)
    );
}

#[test]
fn dot_dot_stops_at_the_root_and_at_a_chroot() {
    let (vfs, mut context) = setup();
    vfs.mkdir(&context, b"/jail", 0o755).unwrap();
    write_file(&vfs, &context, b"/jail/inside", b"in");
    write_file(&vfs, &context, b"/outside", b"out");
    assert!(same_inode(
        &*vfs.resolve(&context, b"/../../..", true).unwrap(),
        &*vfs.root()
    ));
    assert_eq!(read_file(&vfs, &context, b"/../outside"), b"out");
    context.root = vfs.resolve(&context, b"/jail", true).unwrap();
    context.cwd = context.root.clone();
    assert_eq!(read_file(&vfs, &context, b"../../inside"), b"in");
    assert_eq!(
        vfs.resolve(&context, b"/../outside", true).err(),
        Some(Errno::ENOENT)
    );
    // An absolute symbolic link resolves against the context's root.
    vfs.symlink(&context, b"/inside", b"/abs").unwrap();
    assert_eq!(read_file(&vfs, &context, b"/abs"), b"in");
}

#[test]
fn dot_dot_crosses_mount_points() {
    let (vfs, context) = setup();
    vfs.mkdir(&context, b"/top", 0o755).unwrap();
    let mounted_root = mount_new(&vfs, &context, b"/top/mnt", 2);
    write_file(&vfs, &context, b"/top/mnt/file", b"on mnt");
    write_file(&vfs, &context, b"/top/sibling", b"sibling");
    let mnt = vfs.resolve(&context, b"/top/mnt", true).unwrap();
    assert!(
        same_inode(&*mnt, &*mounted_root),
        "walking onto a mount point enters the mount"
    );
    assert_eq!(mnt.dev(), 2);
    assert_eq!(
        read_file(&vfs, &context, b"/top/mnt/../sibling"),
        b"sibling"
    );
    let mut inside = context.clone();
    inside.cwd = mnt.clone();
    assert_eq!(read_file(&vfs, &inside, b"../sibling"), b"sibling");
    assert!(same_inode(
        &*vfs.resolve(&inside, b"../..", true).unwrap(),
        &*vfs.root()
    ));
    assert!(same_inode(
        &*vfs.resolve(&inside, b"./.", true).unwrap(),
        &*mounted_root
    ));
    // Nested mount, and unmounting uncovers the directory beneath.
    let nested = mount_new(&vfs, &context, b"/top/mnt/deeper", 3);
    assert!(same_inode(
        &*vfs.resolve(&context, b"/top/mnt/deeper/..", true).unwrap(),
        &*mounted_root
    ));
    assert_eq!(vfs.unmount(&mounted_root).err(), Some(Errno::EBUSY));
    vfs.unmount(&nested).unwrap();
    vfs.unmount(&mounted_root).unwrap();
    let uncovered = vfs.resolve(&context, b"/top/mnt", true).unwrap();
    assert_eq!(uncovered.dev(), 1);
    assert_eq!(
        vfs.resolve(&context, b"/top/mnt/file", true).err(),
        Some(Errno::ENOENT)
    );
    assert_eq!(vfs.unmount(&uncovered).err(), Some(Errno::EINVAL));
}

#[test]
fn mounting_needs_a_directory_and_a_new_device() {
    let (vfs, context) = setup();
    write_file(&vfs, &context, b"/f", b"");
    let file = vfs.resolve(&context, b"/f", true).unwrap();
    let fs = crate::RamFs::new(5, super::ticking_clock());
    assert_eq!(vfs.mount(file, fs.clone()).err(), Some(Errno::ENOTDIR));
    let dir = vfs.mkdir(&context, b"/d", 0o755).unwrap();
    let same_dev = crate::RamFs::new(1, super::ticking_clock());
    assert_eq!(vfs.mount(dir.clone(), same_dev).err(), Some(Errno::EBUSY));
    vfs.mount(dir, fs.clone()).unwrap();
    let other = vfs.mkdir(&context, b"/e", 0o755).unwrap();
    assert_eq!(vfs.mount(other, fs).err(), Some(Errno::EBUSY));
}

#[test]
fn symbolic_links_in_the_middle_and_at_the_end() {
    let (vfs, context) = setup();
    vfs.mkdir(&context, b"/real", 0o755).unwrap();
    vfs.mkdir(&context, b"/real/sub", 0o755).unwrap();
    write_file(&vfs, &context, b"/real/sub/f", b"content");
    vfs.symlink(&context, b"real", b"/rel").unwrap();
    vfs.symlink(&context, b"/real/sub", b"/abs").unwrap();
    vfs.symlink(&context, b"../sub/f", b"/real/sub/up").unwrap();
    vfs.symlink(&context, b"sub/f", b"/real/file_link").unwrap();
    assert_eq!(read_file(&vfs, &context, b"/rel/sub/f"), b"content");
    assert_eq!(read_file(&vfs, &context, b"/abs/f"), b"content");
    assert_eq!(read_file(&vfs, &context, b"/abs/up"), b"content");
    assert_eq!(read_file(&vfs, &context, b"/rel/file_link"), b"content");
    // The last component is followed only when asked.
    let unfollowed = vfs.resolve(&context, b"/rel", false).unwrap();
    assert_eq!(unfollowed.file_type(), FileType::Symlink);
    let followed = vfs.resolve(&context, b"/rel", true).unwrap();
    assert_eq!(followed.file_type(), FileType::Directory);
    // ...but a trailing slash always follows, and a file then is ENOTDIR.
    assert_eq!(
        vfs.resolve(&context, b"/rel/", false).unwrap().file_type(),
        FileType::Directory
    );
    assert_eq!(
        vfs.resolve(&context, b"/real/file_link/", false).err(),
        Some(Errno::ENOTDIR)
    );
    // ".." after a followed link is the target's parent, not the link's.
    assert!(same_inode(
        &*vfs.resolve(&context, b"/abs/..", true).unwrap(),
        &*vfs.resolve(&context, b"/real", true).unwrap()
    ));
    vfs.symlink(&context, b"nowhere", b"/dangling").unwrap();
    assert_eq!(
        vfs.resolve(&context, b"/dangling", true).err(),
        Some(Errno::ENOENT)
    );
    assert!(vfs.resolve(&context, b"/dangling", false).is_ok());
}

#[test]
fn symbolic_link_loops_are_eloop_and_forty_follows_are_allowed() {
    let (vfs, context) = setup();
    vfs.symlink(&context, b"/loop", b"/loop").unwrap();
    assert_eq!(
        vfs.resolve(&context, b"/loop", true).err(),
        Some(Errno::ELOOP)
    );
    assert_eq!(
        vfs.resolve(&context, b"/loop/x", false).err(),
        Some(Errno::ELOOP)
    );
    assert!(vfs.resolve(&context, b"/loop", false).is_ok());
    vfs.symlink(&context, b"b", b"/a").unwrap();
    vfs.symlink(&context, b"a", b"/b").unwrap();
    assert_eq!(vfs.resolve(&context, b"/a", true).err(), Some(Errno::ELOOP));
    // A chain: l1 -> l2 -> ... -> l40 -> target: 40 follows, fine; 41 not.
    write_file(&vfs, &context, b"/target", b"t");
    let name = |index: usize| alloc::format!("/l{index}").into_bytes();
    vfs.symlink(&context, b"/target", &name(40)).unwrap();
    for index in (1..40).rev() {
        vfs.symlink(&context, &name(index + 1), &name(index))
            .unwrap();
    }
    assert_eq!(read_file(&vfs, &context, &name(1)), b"t");
    vfs.symlink(&context, &name(1), b"/l0").unwrap();
    assert_eq!(
        vfs.resolve(&context, b"/l0", true).err(),
        Some(Errno::ELOOP)
    );
}

#[test]
fn long_names_and_paths_are_enametoolong() {
    let (vfs, context) = setup();
    let long_name: Vec<u8> = [b"/".as_slice(), &[b'n'; 256]].concat();
    assert_eq!(
        vfs.resolve(&context, &long_name, true).err(),
        Some(Errno::ENAMETOOLONG)
    );
    assert_eq!(
        vfs.mkdir(&context, &long_name, 0o755).err(),
        Some(Errno::ENAMETOOLONG)
    );
    let just_fits: Vec<u8> = [b"/".as_slice(), &[b'n'; 255]].concat();
    assert!(vfs.mkdir(&context, &just_fits, 0o755).is_ok());
    let mut long_path = Vec::new();
    while long_path.len() < 4096 {
        long_path.extend_from_slice(b"/.");
    }
    assert_eq!(
        vfs.resolve(&context, &long_path, true).err(),
        Some(Errno::ENAMETOOLONG)
    );
    assert_eq!(
        vfs.resolve(&context, &long_path[..4094], true)
            .ok()
            .map(|inode| inode.ino()),
        Some(vfs.root().ino())
    );
}

#[test]
fn resolve_parent_splits_the_last_component() {
    let (vfs, context) = setup();
    vfs.mkdir(&context, b"/d", 0o755).unwrap();
    vfs.symlink(&context, b"d", b"/link").unwrap();
    let split = vfs.resolve_parent(&context, b"/link/new//").unwrap();
    assert!(same_inode(
        &*split.parent,
        &*vfs.resolve(&context, b"/d", true).unwrap()
    ));
    assert_eq!(split.last, LastComponent::Name(b"new".to_vec()));
    assert!(split.trailing_slash);
    let split = vfs.resolve_parent(&context, b"name").unwrap();
    assert!(same_inode(&*split.parent, &*context.cwd));
    assert!(!split.trailing_slash);
    assert_eq!(
        vfs.resolve_parent(&context, b"//").unwrap().last,
        LastComponent::Root
    );
    assert_eq!(
        vfs.resolve_parent(&context, b"/d/.").unwrap().last,
        LastComponent::Dot
    );
    assert_eq!(
        vfs.resolve_parent(&context, b"/d/..").unwrap().last,
        LastComponent::DotDot
    );
    assert_eq!(
        vfs.resolve_parent(&context, b"/nope/x").err(),
        Some(Errno::ENOENT)
    );
    assert_eq!(vfs.resolve_parent(&context, b"").err(), Some(Errno::ENOENT));
}

#[test]
fn resolve_at_starts_from_the_given_directory() {
    let (vfs, context) = setup();
    let d = vfs.mkdir(&context, b"/d", 0o755).unwrap();
    write_file(&vfs, &context, b"/d/f", b"x");
    let f = vfs.resolve_at(&context, &d, b"f", true).unwrap();
    assert_eq!(f.file_type(), FileType::Regular);
    assert_eq!(
        vfs.resolve_at(&context, &f, b"x", true).err(),
        Some(Errno::ENOTDIR)
    );
    assert!(
        vfs.resolve_at(&context, &f, b"/d", true).is_ok(),
        "absolute paths ignore the start"
    );
}
