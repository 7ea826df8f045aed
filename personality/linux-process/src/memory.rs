//! Memory: `brk`, `mmap`, `munmap`, `mprotect`, on the calling
//! process's address map (`vm`): regions whose pages are mapped on first
//! touch.
//!
//! A private mapping of a file (what `ld.so` makes of every library) is
//! filled when it is made: the personality says what the descriptor maps
//! (`Personality::mapping_source`), and the file's bytes are copied into
//! fresh frames (or, for a boot-archive file, come from the page cache),
//! which the region then maps; pages past the end of the file are
//! demand-zero. It is private from the start, so later writes to the file
//! do not show in it (Linux shows them until the page is first written).
//!
//! Shared mappings (`MAP_SHARED`) map shared memory (`vm::SharedObject`):
//! anonymous memory their process's children share, or a file's pages
//! (`file_mappings`), shared by every shared mapping of the file and
//! written back to it by `msync` and when the last mapping goes. A
//! shared mapping of a file opened read-only cannot be made writable.

use hal::{
    address_space::{AddressSpace, UserProtection},
    memory::PAGE_SIZE,
};
use linux::process_args::{self, MapRequest, Protection};
use linux_abi::Errno;
use vm::VmError;

use ::process::{self, UserAddressMap};

/// The page protection `prot` asks for, checked
/// (`process_args::protection`).
fn protection(prot: u64) -> Result<UserProtection, i64> {
    process_args::protection(prot)
        .map(user_protection)
        .map_err(|error| error.as_negative())
}

/// The page protection a checked [`Protection`] is.
fn user_protection(protection: Protection) -> UserProtection {
    match protection {
        Protection::None => UserProtection::None,
        Protection::Read => UserProtection::Read,
        Protection::ReadWrite => UserProtection::ReadWrite,
        Protection::ReadExecute => UserProtection::ReadExecute,
        Protection::ReadWriteExecute => UserProtection::ReadWriteExecute,
    }
}

fn vm_errno(error: VmError) -> i64 {
    match error {
        VmError::BadRange => Errno::EINVAL.as_negative(),
        VmError::NoMemory => Errno::ENOMEM.as_negative(),
        VmError::Overlaps => Errno::EEXIST.as_negative(),
        VmError::BelowMinimum => Errno::EPERM.as_negative(),
        VmError::NotWritable => Errno::EACCES.as_negative(),
        VmError::NotOneMapping => Errno::EFAULT.as_negative(),
    }
}

/// Runs `f` on the calling thread's process's address map.
fn with_memory(strand: u64, f: impl FnOnce(&mut UserAddressMap) -> i64) -> i64 {
    process::of_strand(strand)
        .and_then(|process| process.with_memory(f))
        .unwrap_or(Errno::ESRCH.as_negative())
}

/// `brk(address)`: the new break, or the old one if it cannot move.
pub(crate) fn brk(strand: u64, address: u64) -> i64 {
    with_memory(strand, |memory| memory.set_break(address) as i64)
}

/// `mmap(address, len, prot, flags, fd, offset)`: anonymous private
/// memory, or a file's bytes (see the module's comment).
pub(crate) fn mmap(
    strand: u64,
    address: u64,
    len: u64,
    prot: u64,
    flags: u64,
    fd: u64,
    offset: u64,
) -> i64 {
    let request = match process_args::map_request(len, prot, flags) {
        Ok(request) => request,
        Err(error) => return error.as_negative(),
    };
    let protection = user_protection(request.protection);
    let MapRequest {
        shared,
        fixed,
        no_replace,
        ..
    } = request;
    if request.anonymous {
        if shared {
            return map_shared_anonymous(strand, address, len, protection, fixed, no_replace);
        }
        return map_anonymous(strand, address, len, protection, fixed, no_replace);
    }
    let Some(process) = process::of_strand(strand) else {
        return Errno::ESRCH.as_negative();
    };
    let Some(personality) = crate::personality() else {
        return Errno::ENODEV.as_negative();
    };
    let writable = request.protection == Protection::ReadWrite;
    let (inode, file_writable) =
        match personality.mapping_source(process.id(), fd, shared, writable) {
            Ok(linux::MapSource::File { inode, writable }) => (inode, writable),
            Ok(linux::MapSource::Zeros) if shared => {
                return map_shared_anonymous(strand, address, len, protection, fixed, no_replace)
            }
            Ok(linux::MapSource::Zeros) => {
                return map_anonymous(strand, address, len, protection, fixed, no_replace)
            }
            Err(error) => return error.as_negative(),
        };
    if !offset.is_multiple_of(PAGE_SIZE)
        || offset
            .checked_add(len)
            .is_none_or(|end| end > i64::MAX as u64)
    {
        return Errno::EINVAL.as_negative();
    }
    // What `/proc/PID/maps` names the mapping after.
    let label = personality
        .descriptor_identity(process.id(), fd)
        .map(|identity| vm::Label {
            name: identity.path,
            dev: identity.dev,
            ino: identity.ino,
        });
    let name = |memory: &mut UserAddressMap, start: u64| {
        if let (Some(label), Some(size)) = (label.clone(), len.checked_next_multiple_of(PAGE_SIZE))
        {
            memory.label(start, start + size, label, offset / PAGE_SIZE);
        }
    };
    if shared {
        // The file's shared pages, which every shared mapping of it maps.
        let object = file_mappings::of(&inode);
        return process
            .with_memory(|memory| {
                place(memory, address, len, no_replace, |memory| {
                    let source = vm::SharedSource {
                        object,
                        first_page: offset / PAGE_SIZE,
                        may_write: file_writable,
                    };
                    let start = memory.map_shared(address, len, protection, fixed, source)?;
                    name(memory, start);
                    Ok(start)
                })
            })
            .unwrap_or(Errno::ESRCH.as_negative());
    }
    // Pages that hold file bytes (the rest of the mapping is demand-zero).
    let file_size = inode.metadata().size;
    let pages = len
        .div_ceil(PAGE_SIZE)
        .min(file_size.saturating_sub(offset).div_ceil(PAGE_SIZE));
    // What shared mappings of the file wrote is the file's first.
    file_mappings::sync_file(&*inode);
    // A boot-archive file lends its bytes: its pages come from the page
    // cache, shared with every other mapping of it.
    let frames = match inode.borrowed_contents() {
        Some(bytes) => crate::page_cache()
            .frames(bytes, (offset / PAGE_SIZE) as usize, pages as usize)
            .map_err(|_| Errno::ENOMEM.as_negative()),
        None => read_pages(&*inode, offset, pages),
    };
    let frames = match frames {
        Ok(frames) => frames,
        Err(error) => return error,
    };
    let result = process
        .with_memory(|memory| {
            place(memory, address, len, no_replace, |memory| {
                let start = memory.map_pages(address, len, protection, fixed, true, &frames)?;
                name(memory, start);
                Ok(start)
            })
        })
        .unwrap_or(Errno::ESRCH.as_negative());
    // The page tables hold their own share of each frame they map.
    for frame in frames {
        hal::memory::free_frame(frame);
    }
    result
}

/// Anonymous shared memory (`MAP_SHARED | MAP_ANONYMOUS`, or a shared
/// mapping of `/dev/zero`): its pages are shared with the children the
/// process forks.
fn map_shared_anonymous(
    strand: u64,
    address: u64,
    len: u64,
    protection: UserProtection,
    fixed: bool,
    no_replace: bool,
) -> i64 {
    let Some(memory_object) = vm::AnonymousMemory::<AddressSpace>::new(len.div_ceil(PAGE_SIZE))
    else {
        return Errno::ENOMEM.as_negative();
    };
    let object = alloc::sync::Arc::new(memory_object);
    with_memory(strand, |memory| {
        place(memory, address, len, no_replace, |memory| {
            let source = vm::SharedSource {
                object,
                first_page: 0,
                may_write: true,
            };
            memory.map_shared(address, len, protection, fixed, source)
        })
    })
}

/// An anonymous private mapping.
fn map_anonymous(
    strand: u64,
    address: u64,
    len: u64,
    protection: UserProtection,
    fixed: bool,
    no_replace: bool,
) -> i64 {
    with_memory(strand, |memory| {
        place(memory, address, len, no_replace, |memory| {
            memory.map_anonymous(address, len, protection, fixed)
        })
    })
}

/// Makes a mapping with `map` unless `MAP_FIXED_NOREPLACE` (`no_replace`)
/// finds something in `[address, address + len)` (`EEXIST`); its start,
/// or the errno.
fn place(
    memory: &mut UserAddressMap,
    address: u64,
    len: u64,
    no_replace: bool,
    map: impl FnOnce(&mut UserAddressMap) -> Result<u64, VmError>,
) -> i64 {
    if no_replace && overlaps(memory, address, len) {
        return Errno::EEXIST.as_negative();
    }
    match map(memory) {
        Ok(start) => start as i64,
        Err(error) => vm_errno(error),
    }
}

/// Whether any page of `[address, address + len)` is in a region
/// (`MAP_FIXED_NOREPLACE` refuses to replace it).
fn overlaps(memory: &UserAddressMap, address: u64, len: u64) -> bool {
    let end = address.saturating_add(len);
    memory
        .regions()
        .any(|region| region.start < end && region.end > address)
}

/// `pages` fresh frames holding the file's bytes from `offset` on (the
/// part of the last page past the end of the file stays zero). Read
/// before the address map is locked: reading a file may wait.
fn read_pages(
    inode: &dyn vfs::Inode,
    offset: u64,
    pages: u64,
) -> Result<alloc::vec::Vec<hal::memory::Frame>, i64> {
    let mut frames = alloc::vec::Vec::new();
    if frames.try_reserve_exact(pages as usize).is_err() {
        return Err(Errno::ENOMEM.as_negative());
    }
    let mut buffer = [0u8; PAGE_SIZE as usize];
    for page in 0..pages {
        let read = hal::memory::allocate_frame()
            .ok_or(Errno::ENOMEM.as_negative())
            .and_then(|frame| {
                let filled =
                    fill(inode, offset + page * PAGE_SIZE, &mut buffer).and_then(|count| {
                        frame
                            .write(0, &buffer[..count])
                            .map_err(|_| Errno::EFAULT.as_negative())
                    });
                match filled {
                    Ok(()) => Ok(frame),
                    Err(error) => {
                        hal::memory::free_frame(frame);
                        Err(error)
                    }
                }
            });
        match read {
            Ok(frame) => frames.push(frame),
            Err(error) => {
                for frame in frames {
                    hal::memory::free_frame(frame);
                }
                return Err(error);
            }
        }
    }
    Ok(frames)
}

/// Reads up to a page of the file at `offset` into `buffer`; returns how
/// many bytes there were (fewer at the end of the file).
fn fill(inode: &dyn vfs::Inode, offset: u64, buffer: &mut [u8]) -> Result<usize, i64> {
    let mut done = 0;
    while done < buffer.len() {
        match inode.read_at(offset + done as u64, &mut buffer[done..]) {
            Ok(0) => break,
            Ok(count) => done += count,
            Err(error) => return Err(error.as_negative()),
        }
    }
    Ok(done)
}

/// `munmap(address, len)`.
pub(crate) fn munmap(strand: u64, address: u64, len: u64) -> i64 {
    with_memory(strand, |memory| match memory.unmap(address, len) {
        Ok(()) => 0,
        Err(error) => vm_errno(error),
    })
}

/// `mprotect(address, len, prot)`.
pub(crate) fn mprotect(strand: u64, address: u64, len: u64, prot: u64) -> i64 {
    let protection = match protection(prot) {
        Ok(protection) => protection,
        Err(error) => return error,
    };
    with_memory(strand, |memory| {
        match memory.protect(address, len, protection) {
            Ok(()) => 0,
            Err(error) => vm_errno(error),
        }
    })
}

/// `mincore(address, len, vec)`: one byte per page, 1 if the page is
/// resident (mapped). `ENOMEM` if a page is in no region.
pub(crate) fn mincore(strand: u64, address: u64, len: u64, vector: u64) -> i64 {
    /// Pages answered per copy to the caller.
    const CHUNK_PAGES: u64 = 512;
    if !address.is_multiple_of(4096) {
        return Errno::EINVAL.as_negative();
    }
    let pages = len.div_ceil(4096);
    let mut done = 0;
    while done < pages {
        let count = (pages - done).min(CHUNK_PAGES);
        let mut bytes = [0u8; CHUNK_PAGES as usize];
        let (Some(start), Some(at)) = (address.checked_add(done * 4096), vector.checked_add(done))
        else {
            return Errno::ENOMEM.as_negative();
        };
        let answer = with_memory(strand, |memory| {
            match memory.residency(start, count * 4096, &mut bytes[..count as usize]) {
                Ok(()) => 0,
                Err(error) => vm_errno(error),
            }
        });
        if answer != 0 {
            return answer;
        }
        if hal::user::copy_to_user(at, &bytes[..count as usize]).is_err() {
            return Errno::EFAULT.as_negative();
        }
        done += count;
    }
    0
}

/// `msync(address, len, flags)`: shared mappings of files in the range
/// write their pages back to the files (at once, whether `MS_SYNC` or
/// `MS_ASYNC` is asked: the files are in memory). `EINVAL` for an
/// unaligned address, unknown flags, or both `MS_SYNC` and `MS_ASYNC`;
/// `ENOMEM` for a range not all mapped.
pub(crate) fn msync(strand: u64, address: u64, len: u64, flags: u64) -> i64 {
    const MS_ASYNC: u64 = 1;
    const MS_INVALIDATE: u64 = 2;
    const MS_SYNC: u64 = 4;
    if !address.is_multiple_of(PAGE_SIZE)
        || flags & !(MS_ASYNC | MS_INVALIDATE | MS_SYNC) != 0
        || flags & (MS_ASYNC | MS_SYNC) == MS_ASYNC | MS_SYNC
    {
        return Errno::EINVAL.as_negative();
    }
    if len == 0 {
        return 0;
    }
    with_memory(strand, |memory| match memory.sync(address, len) {
        Ok(()) => 0,
        Err(error) => vm_errno(error),
    })
}

/// `madvise(address, len, advice)`: `MADV_DONTNEED` and `MADV_FREE` drop
/// the range's pages (they read as zeros when touched again); the hints
/// (`NORMAL`, `RANDOM`, `SEQUENTIAL`, `WILLNEED`, the huge-page and
/// fork ones) are accepted and change nothing. `EINVAL` for an unaligned
/// address or another advice, `ENOMEM` for a range not all mapped.
pub(crate) fn madvise(strand: u64, address: u64, len: u64, advice: u64) -> i64 {
    const MADV_DONTNEED: u64 = 4;
    const MADV_FREE: u64 = 8;
    const HINTS: [u64; 10] = [0, 1, 2, 3, 10, 11, 12, 13, 14, 15];
    if !address.is_multiple_of(4096) {
        return Errno::EINVAL.as_negative();
    }
    if len == 0 {
        return 0;
    }
    let advice = advice as u32 as u64;
    with_memory(strand, |memory| match advice {
        MADV_DONTNEED | MADV_FREE => match memory.discard(address, len) {
            Ok(()) => 0,
            Err(error) => vm_errno(error),
        },
        hint if HINTS.contains(&hint) => match memory.residency(address, len, &mut []) {
            Ok(()) => 0,
            Err(error) => vm_errno(error),
        },
        _ => Errno::EINVAL.as_negative(),
    })
}

/// `mremap(address, old_len, new_len, flags, new_address)`: shrinks a
/// mapping, or grows it where it is if the pages after it are free, or
/// moves it with its pages (`MREMAP_MAYMOVE` when it cannot grow in
/// place; `MREMAP_FIXED` to `new_address`, replacing what was there).
/// `ENOMEM` when it can neither grow nor move; `EINVAL` for an unaligned
/// address, a zero length, unknown flags, `MREMAP_FIXED` without
/// `MREMAP_MAYMOVE`, overlapping ranges or `MREMAP_DONTUNMAP` (not
/// offered); `EFAULT` if the old range is not all one mapping's
/// (unmapped, or running past its mapping's end).
pub(crate) fn mremap(
    strand: u64,
    address: u64,
    old_len: u64,
    new_len: u64,
    flags: u64,
    new_address: u64,
) -> i64 {
    const MREMAP_MAYMOVE: u64 = 1;
    const MREMAP_FIXED: u64 = 2;
    const MREMAP_DONTUNMAP: u64 = 4;
    if !address.is_multiple_of(4096)
        || new_len == 0
        || flags & !(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP) != 0
    {
        return Errno::EINVAL.as_negative();
    }
    // `MREMAP_FIXED` needs `MREMAP_MAYMOVE`; an old length of 0 asks for
    // a second mapping of shared memory, which private memory has not.
    if flags & MREMAP_FIXED != 0 && flags & MREMAP_MAYMOVE == 0 || old_len == 0 {
        return Errno::EINVAL.as_negative();
    }
    if flags & MREMAP_DONTUNMAP != 0 {
        // Leaving the old range mapped (empty) is not offered.
        return Errno::EINVAL.as_negative();
    }
    let placement = if flags & MREMAP_FIXED != 0 {
        if !new_address.is_multiple_of(PAGE_SIZE) {
            return Errno::EINVAL.as_negative();
        }
        vm::Remap::To(new_address)
    } else if flags & MREMAP_MAYMOVE != 0 {
        vm::Remap::MayMove
    } else {
        vm::Remap::InPlace
    };
    with_memory(strand, |memory| {
        match memory.remap(address, old_len, new_len, placement) {
            Ok(start) => start as i64,
            Err(vm::VmError::BadRange | vm::VmError::BelowMinimum) => Errno::EINVAL.as_negative(),
            Err(error) => vm_errno(error),
        }
    })
}
