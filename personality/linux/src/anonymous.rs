//! Files with no name in the tree (Linux's anonymous inodes): `epoll`
//! instances, event counters, timers and signal descriptors. Each is an
//! open file on a node of the personality's hidden file system, unlinked
//! at once so only its open file holds it, with the device that does
//! its reads, writes and `poll`.

use alloc::{format, sync::Arc};
use core::sync::atomic::{AtomicU64, Ordering};

use vfs::{flags, Device, Errno, Inode, NewNode, NodeKind, OpenFile};

/// Numbers the hidden nodes.
static NEXT_NODE: AtomicU64 = AtomicU64::new(1);

/// A new open file, read-write with `status_flags` (`O_NONBLOCK`), for
/// `device` on a node made in `directory` (a directory of the
/// personality's hidden file system); `kind` names the node
/// (`eventfd`, `eventpoll`, ...), as Linux's `anon_inode:[eventfd]`.
pub(crate) fn anonymous_file(
    directory: &Arc<dyn Inode>,
    kind: &str,
    status_flags: u32,
    device: Arc<dyn Device>,
) -> Result<Arc<OpenFile>, Errno> {
    let name = format!("{kind}-{}", NEXT_NODE.fetch_add(1, Ordering::Relaxed));
    let inode = directory.create(
        name.as_bytes(),
        NewNode {
            kind: NodeKind::Regular,
            permissions: 0o600,
            uid: 0,
            gid: 0,
        },
    )?;
    let _ = directory.unlink(name.as_bytes());
    Ok(Arc::new(OpenFile::new(
        inode,
        flags::O_RDWR | (status_flags & flags::O_NONBLOCK),
        Some(device),
    )))
}

/// Installs `file` in `process`'s table at the lowest free descriptor,
/// close-on-exec if asked: the new descriptor.
pub(crate) fn install(
    process: &crate::LinuxProcess,
    file: Arc<OpenFile>,
    close_on_exec: bool,
) -> Result<i64, Errno> {
    Ok(i64::from(process.fds.install(file, 0, close_on_exec)?))
}
