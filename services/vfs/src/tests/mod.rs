//! Host tests of the VFS, one file per area.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicI64, Ordering};

use crate::{Clock, FileSystem, Inode, PathContext, RamFs, Timespec, Vfs};

mod cpio;
mod devices;
mod file;
mod names;
mod namespace;
mod path;
mod stat;

/// A clock that ticks one second per reading, so that every change has a
/// distinct time.
fn ticking_clock() -> Clock {
    let seconds = Arc::new(AtomicI64::new(1_000));
    Arc::new(move || Timespec {
        sec: seconds.fetch_add(1, Ordering::Relaxed),
        nsec: 500,
    })
}

/// A tree with an empty RamFs (device 1) at "/" and a root context.
fn setup() -> (Vfs, PathContext) {
    let vfs = Vfs::new(RamFs::new(1, ticking_clock()));
    let context = vfs.context(0, 0);
    (vfs, context)
}

/// Mounts a fresh RamFs with device `dev` on `path` (made first).
fn mount_new(vfs: &Vfs, context: &PathContext, path: &[u8], dev: u64) -> Arc<dyn Inode> {
    let mountpoint = vfs.mkdir(context, path, 0o755).unwrap();
    let fs = RamFs::new(dev, ticking_clock());
    let root = fs.root();
    vfs.mount(mountpoint, fs).unwrap();
    root
}

/// Writes `contents` to a new file at `path`.
fn write_file(vfs: &Vfs, context: &PathContext, path: &[u8], contents: &[u8]) {
    let file = vfs
        .open(
            context,
            path,
            crate::flags::O_WRONLY | crate::flags::O_CREAT | crate::flags::O_TRUNC,
            0o644,
        )
        .unwrap();
    assert_eq!(file.write(contents), Ok(contents.len()));
}

/// The whole contents of the file at `path`.
fn read_file(vfs: &Vfs, context: &PathContext, path: &[u8]) -> alloc::vec::Vec<u8> {
    let file = vfs.open(context, path, crate::flags::O_RDONLY, 0).unwrap();
    let mut contents = alloc::vec::Vec::new();
    let mut buf = [0; 7];
    loop {
        let count = file.read(&mut buf).unwrap();
        if count == 0 {
            return contents;
        }
        contents.extend_from_slice(&buf[..count]);
    }
}
