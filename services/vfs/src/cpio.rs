//! Filling a [`RamFs`] from the initramfs (a cpio "newc" archive read by
//! the `initrd` crate), as Linux's `init/initramfs.c` does.
//!
//! Regular files borrow their bytes from the archive, which lives as long
//! as the kernel (`&'static`), and are copied only when first written:
//! the big binaries (busybox, bash, libc) cost no second copy.

use alloc::{collections::BTreeMap, string::String, sync::Arc, vec::Vec};
use core::fmt;

use initrd::{ArchiveError, Entry};

use crate::{
    inode::{FileSystem, Inode, NewNode, NodeKind},
    metadata::{makedev, FileType, SetAttributes, TimeChange, Timespec, MODE_PERMISSION_BITS},
    ramfs::{RamFs, RamInode},
    Errno,
};

/// Why the initramfs could not be unpacked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PopulateError {
    /// The archive is corrupt.
    Archive(ArchiveError),
    /// An entry could not be made.
    Entry {
        /// The entry's name in the archive.
        name: String,
        /// What went wrong.
        errno: Errno,
    },
}

impl fmt::Display for PopulateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PopulateError::Archive(error) => write!(f, "initramfs: {error}"),
            PopulateError::Entry { name, errno } => write!(f, "initramfs: {name}: {errno}"),
        }
    }
}

/// Unpacks `archive` into `fs` (usually empty) and returns how many entries
/// it made: directories (missing parents made with mode 0755), regular
/// files borrowing their data, symbolic links, device nodes, FIFOs and
/// sockets, with the archive's modes, owners and modification times, and
/// hard links (entries sharing an inode number). An entry over an
/// existing non-directory replaces it. Stops at the first corrupt header
/// or impossible entry (a name with "..", a file under a file); what was
/// made so far stays.
pub fn populate_from_cpio(fs: &RamFs, archive: &'static [u8]) -> Result<usize, PopulateError> {
    let mut made = 0;
    let mut state = Unpacking::default();
    let result = initrd::entries(archive).try_for_each(|entry| {
        let entry = entry.map_err(PopulateError::Archive)?;
        populate_entry(fs, &entry, &mut state).map_err(|errno| PopulateError::Entry {
            name: String::from(entry.name),
            errno,
        })?;
        made += 1;
        Ok(())
    });
    // Directories' times last, since filling them changed them (Linux's
    // initramfs defers them the same way); also after an error, so what
    // was made is consistent.
    for (directory, entry_mtime) in state.directory_times {
        let mtime = TimeChange::At(Timespec::from_secs(i64::from(entry_mtime)));
        let times = SetAttributes {
            atime: Some(mtime),
            mtime: Some(mtime),
            ..SetAttributes::default()
        };
        if let Err(errno) = directory.set_attributes(&times) {
            return result.and(Err(PopulateError::Entry {
                name: String::from("(directory times)"),
                errno,
            }));
        }
    }
    result.map(|()| made)
}

/// What unpacking remembers between entries.
#[derive(Default)]
struct Unpacking {
    /// (device, inode number) -> the first entry made for it, for hard
    /// links.
    hard_links: BTreeMap<(u32, u32, u32), Arc<dyn Inode>>,
    /// Directories and the modification times to give them at the end.
    directory_times: Vec<(Arc<dyn Inode>, u32)>,
}

/// The components of an archive name ("./bin/sh", "/bin/sh" and "bin//sh"
/// are all `["bin", "sh"]`; "." alone is the root); `EINVAL` for "..",
/// which could climb out.
fn components(name: &str) -> Result<Vec<&[u8]>, Errno> {
    let mut parts = Vec::new();
    for part in name.as_bytes().split(|byte| *byte == b'/') {
        match part {
            b"" | b"." => {}
            b".." => return Err(Errno::EINVAL),
            _ => parts.push(part),
        }
    }
    Ok(parts)
}

fn root_node(kind: NodeKind<'_>, permissions: u32) -> NewNode<'_> {
    NewNode {
        kind,
        permissions,
        uid: 0,
        gid: 0,
    }
}

fn populate_entry(fs: &RamFs, entry: &Entry<'static>, state: &mut Unpacking) -> Result<(), Errno> {
    let hard_links = &mut state.hard_links;
    let file_type = FileType::from_mode(entry.mode).ok_or(Errno::EINVAL)?;
    let parts = components(entry.name)?;
    let mut directory: Arc<dyn Inode> = fs.root();
    let Some((last, parents)) = parts.split_last() else {
        // The root itself (".").
        if file_type != FileType::Directory {
            return Err(Errno::EEXIST);
        }
        state.directory_times.push((directory.clone(), entry.mtime));
        return set_attributes(&directory, entry);
    };
    for part in parents {
        directory = match directory.lookup(part) {
            Ok(found) => found,
            Err(Errno::ENOENT) => directory.create(part, root_node(NodeKind::Directory, 0o755))?,
            Err(error) => return Err(error),
        };
        if directory.file_type() != FileType::Directory {
            return Err(Errno::ENOTDIR);
        }
    }
    // What is there already: a directory stays for a directory entry (its
    // attributes updated); anything else makes way.
    match directory.lookup(last) {
        Ok(existing) if existing.file_type() == FileType::Directory => {
            if file_type == FileType::Directory {
                state.directory_times.push((existing.clone(), entry.mtime));
                return set_attributes(&existing, entry);
            }
            directory.rmdir(last)?;
        }
        Ok(_) => directory.unlink(last)?,
        Err(Errno::ENOENT) => {}
        Err(error) => return Err(error),
    }
    let link_key = (entry.dev_major, entry.dev_minor, entry.ino);
    let is_hard_link = file_type != FileType::Directory && entry.nlink > 1;
    if is_hard_link {
        if let Some(first) = hard_links.get(&link_key) {
            directory.link(last, first)?;
            // GNU cpio stores the data with the last of the names.
            if !entry.data.is_empty() {
                set_contents(first, entry.data)?;
            }
            return set_attributes(first, entry);
        }
    }
    let rdev = makedev(entry.rdev_major, entry.rdev_minor);
    let kind = match file_type {
        FileType::Directory => NodeKind::Directory,
        FileType::Regular => NodeKind::Regular,
        FileType::Symlink => NodeKind::Symlink(entry.data),
        FileType::CharDevice => NodeKind::CharDevice(rdev),
        FileType::BlockDevice => NodeKind::BlockDevice(rdev),
        FileType::Fifo => NodeKind::Fifo,
        FileType::Socket => NodeKind::Socket,
    };
    let inode = directory.create(last, root_node(kind, entry.mode & MODE_PERMISSION_BITS))?;
    if file_type == FileType::Regular {
        set_contents(&inode, entry.data)?;
    }
    if is_hard_link {
        hard_links.insert(link_key, inode.clone());
    }
    if file_type == FileType::Directory {
        state.directory_times.push((inode.clone(), entry.mtime));
    }
    set_attributes(&inode, entry)
}

fn set_contents(inode: &Arc<dyn Inode>, data: &'static [u8]) -> Result<(), Errno> {
    match inode.as_any().downcast_ref::<RamInode>() {
        Some(ram) => ram.set_static_contents(data),
        // Not a RamFs inode (cannot happen for inodes of `fs`): copy.
        None => inode.write_at(0, data).map(|_| ()),
    }
}

fn set_attributes(inode: &Arc<dyn Inode>, entry: &Entry<'_>) -> Result<(), Errno> {
    let mtime = TimeChange::At(Timespec::from_secs(i64::from(entry.mtime)));
    let is_symlink = inode.file_type() == FileType::Symlink;
    inode.set_attributes(&SetAttributes {
        // A symbolic link's permissions are always 0777.
        mode: (!is_symlink).then_some(entry.mode & MODE_PERMISSION_BITS),
        uid: Some(entry.uid),
        gid: Some(entry.gid),
        atime: Some(mtime),
        mtime: Some(mtime),
    })
}
