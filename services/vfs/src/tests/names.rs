use alloc::sync::Arc;

use super::{mount_new, setup, write_file};
use crate::{flags::*, Errno, Inode, NewNode, NodeKind, OpenFile, RamFs};

#[test]
fn path_of_walks_up_through_mounts() {
    let (vfs, context) = setup();
    vfs.mkdir(&context, b"/a", 0o755).unwrap();
    let mounted = mount_new(&vfs, &context, b"/a/m", 7);
    let deep = vfs.mkdir(&context, b"/a/m/b", 0o755).unwrap();
    assert_eq!(vfs.path_of(&context, &deep).unwrap(), b"/a/m/b");
    // The mounted root is named after the directory it covers.
    assert_eq!(vfs.path_of(&context, &mounted).unwrap(), b"/a/m");
    assert_eq!(vfs.path_of(&context, &vfs.root()).unwrap(), b"/");
    // From a context rooted at /a, the path starts there.
    let mut inner = context.clone();
    inner.root = vfs.resolve(&context, b"/a", true).unwrap();
    assert_eq!(vfs.path_of(&inner, &deep).unwrap(), b"/m/b");
}

#[test]
fn path_of_a_removed_directory_is_enoent() {
    let (vfs, context) = setup();
    let gone = vfs.mkdir(&context, b"/gone", 0o755).unwrap();
    vfs.rmdir(&context, b"/gone").unwrap();
    assert_eq!(vfs.path_of(&context, &gone), Err(Errno::ENOENT));
}

#[test]
fn open_files_say_the_path_they_were_opened_by() {
    let (vfs, context) = setup();
    vfs.mkdir(&context, b"/d", 0o755).unwrap();
    write_file(&vfs, &context, b"/d/f", b"x");
    vfs.symlink(&context, b"/d/f", b"/link").unwrap();
    let mut in_d = context.clone();
    in_d.cwd = vfs.resolve(&context, b"/d", true).unwrap();
    // Relative, through a symbolic link, with "." and "//" on the way.
    for (cwd, path) in [
        (&in_d, &b"f"[..]),
        (&context, b"/link"),
        (&context, b"/d/.//f"),
    ] {
        let file = vfs.open(cwd, path, O_RDONLY, 0).unwrap();
        assert_eq!(vfs.open_file_path(&context, &file), b"/d/f");
    }
    let made = vfs.open(&in_d, b"new", O_CREAT | O_WRONLY, 0o644).unwrap();
    assert_eq!(vfs.open_file_path(&context, &made), b"/d/new");
    let directory = vfs.open(&in_d, b"..", O_RDONLY, 0).unwrap();
    assert_eq!(vfs.open_file_path(&context, &directory), b"/");
    let directory = vfs
        .open(&context, b"/d/", O_RDONLY | O_DIRECTORY, 0)
        .unwrap();
    assert_eq!(vfs.open_file_path(&context, &directory), b"/d");
    // Removed: Linux's suffix.
    vfs.unlink(&context, b"/d/new").unwrap();
    assert_eq!(vfs.open_file_path(&context, &made), b"/d/new (deleted)");
}

#[test]
fn files_without_a_name_say_what_they_are() {
    let (vfs, context) = setup();
    let hidden = RamFs::new(9, super::ticking_clock());
    let node = NewNode {
        kind: NodeKind::Fifo,
        permissions: 0o600,
        uid: 0,
        gid: 0,
    };
    let fifo = crate::FileSystem::root(&*hidden)
        .create(b"p", node)
        .unwrap();
    let ino = fifo.ino();
    let pipe = OpenFile::new(fifo as Arc<dyn Inode>, O_RDONLY, None);
    assert_eq!(
        vfs.open_file_path(&context, &pipe),
        alloc::format!("pipe:[{ino}]").into_bytes()
    );
}

#[test]
fn mounts_lists_the_root_then_each_mount() {
    let (vfs, context) = setup();
    mount_new(&vfs, &context, b"/m", 5);
    let mounts = vfs.mounts();
    assert_eq!(mounts.len(), 2);
    assert!(mounts[0].mountpoint.is_none());
    assert_eq!(mounts[0].fs.dev(), 1);
    let mountpoint = mounts[1].mountpoint.as_ref().unwrap();
    assert_eq!(vfs.path_of(&context, mountpoint).unwrap(), b"/m");
    assert_eq!(mounts[1].fs.type_name(), "ramfs");
}
