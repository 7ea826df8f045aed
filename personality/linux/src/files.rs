//! The calls on descriptors: `read`, `write`, their vector and
//! positioned forms, `lseek`, `close`, `dup`/`dup2`/`dup3`, `fcntl`,
//! `ioctl`, `fstat`, `fchmod`, `fchown`, `ftruncate`, `getdents64`,
//! `sendfile`, `fadvise64`.
//!
//! Data moves through a kernel buffer of at most [`CHUNK`] bytes at a
//! time; a fault part-way through a transfer ends it with what was done
//! (Linux's short count), or `EFAULT` if nothing was.

use alloc::{vec, vec::Vec};

use vfs::{flags, stat::Stat, Errno, SetAttributes, Vfs};

use crate::{user, LinuxProcess};

/// Bytes copied per step of a transfer.
const CHUNK: usize = 16 * 1024;
/// Transfers up to this size go through a buffer on the stack.
const SMALL: usize = 2048;
/// Transfers up to this size go through a smaller one: the buffer is
/// zeroed before use (safe code cannot skip that), and for the many
/// one-byte and one-line transfers zeroing 2 KiB cost more than the rest
/// of the call.
const TINY: usize = 128;
/// Transfers up to this size (a byte, a word: the null I/O call) go
/// through the smallest, whose zeroing is two stores.
const WORD: usize = 16;
/// Transfers up to this size (a block of 1 KiB) go through one of
/// exactly that size, half the zeroing of [`SMALL`].
const BLOCK: usize = 1024;
/// Most vectors `readv`/`writev` take (`IOV_MAX`).
const IOV_MAX: u64 = 1024;

/// `fcntl` commands.
const F_DUPFD: u64 = 0;
const F_GETFD: u64 = 1;
const F_SETFD: u64 = 2;
const F_GETFL: u64 = 3;
const F_SETFL: u64 = 4;
const F_DUPFD_CLOEXEC: u64 = 1030;
const FD_CLOEXEC: u64 = 1;

/// Which end of a transfer failed.
fn partial(done: usize, error: Errno) -> Result<i64, Errno> {
    if done > 0 {
        Ok(done as i64)
    } else {
        Err(error)
    }
}

/// A process's buffer for transfers of more than a few bytes ([`CHUNK`]
/// bytes, made at its first use): kept between calls, so it is not
/// zeroed again for each one (safe code zeroes a buffer it makes, and for
/// a reader taking 1 KiB at a time that zeroing was as much work as the
/// copies). What it holds between calls is the process's own earlier
/// data, and a transfer copies out only what the file wrote. One thread
/// at a time: another thread of the process (or a transfer blocked in a
/// read holding it) falls back to a buffer of its own.
#[derive(Default)]
pub(crate) struct TransferBuffer(spin::Mutex<Vec<u8>>);

impl TransferBuffer {
    /// The buffer, unless another transfer of the process holds it.
    fn try_take(&self) -> Option<spin::MutexGuard<'_, Vec<u8>>> {
        let mut buffer = self.0.try_lock()?;
        if buffer.is_empty() {
            buffer.resize(CHUNK, 0);
        }
        Some(buffer)
    }
}

/// The kernel buffer a transfer of `count` bytes moves through: `small`
/// (on the caller's stack: most transfers, no allocation) when it fits,
/// else `large`, made [`CHUNK`] bytes or fewer.
fn transfer_buffer<'a>(
    count: usize,
    small: &'a mut [u8; SMALL],
    large: &'a mut Vec<u8>,
) -> &'a mut [u8] {
    if count <= SMALL {
        small
    } else {
        large.resize(count.min(CHUNK), 0);
        large
    }
}

/// Reads up to `count` bytes with `read_some` (a file read at an offset
/// or the current one) into user memory at `buffer`.
fn read_into(
    transfer: &TransferBuffer,
    buffer: u64,
    count: u64,
    read_some: impl FnMut(&mut [u8], usize) -> Result<usize, Errno>,
) -> Result<i64, Errno> {
    let count = usize::try_from(count).map_err(|_| Errno::EINVAL)?;
    if count <= WORD {
        let mut word = [0u8; WORD];
        return read_through(buffer, count, &mut word, read_some);
    }
    if let Some(mut kernel) = transfer.try_take() {
        return read_through(buffer, count, &mut kernel, read_some);
    }
    if count <= TINY {
        let mut tiny = [0u8; TINY];
        return read_through(buffer, count, &mut tiny, read_some);
    }
    if count <= BLOCK {
        let mut block = [0u8; BLOCK];
        return read_through(buffer, count, &mut block, read_some);
    }
    let mut small = [0u8; SMALL];
    let mut large = Vec::new();
    let kernel = transfer_buffer(count, &mut small, &mut large);
    read_through(buffer, count, kernel, read_some)
}

/// [`read_into`] through the kernel buffer `kernel`.
fn read_through(
    buffer: u64,
    count: usize,
    kernel: &mut [u8],
    mut read_some: impl FnMut(&mut [u8], usize) -> Result<usize, Errno>,
) -> Result<i64, Errno> {
    let mut done = 0;
    while done < count {
        let want = (count - done).min(kernel.len());
        let got = match read_some(&mut kernel[..want], done) {
            Ok(got) => got,
            Err(error) => return partial(done, error),
        };
        if got == 0 {
            break;
        }
        if let Err(error) = user::write(buffer + done as u64, &kernel[..got]) {
            return partial(done, error);
        }
        done += got;
        if got < want {
            break;
        }
    }
    Ok(done as i64)
}

/// Writes `count` bytes from user memory at `buffer` with `write_some`.
fn write_from(
    transfer: &TransferBuffer,
    buffer: u64,
    count: u64,
    write_some: impl FnMut(&[u8], usize) -> Result<usize, Errno>,
) -> Result<i64, Errno> {
    let count = usize::try_from(count).map_err(|_| Errno::EINVAL)?;
    if count <= WORD {
        let mut word = [0u8; WORD];
        return write_through(buffer, count, &mut word, write_some);
    }
    if let Some(mut kernel) = transfer.try_take() {
        return write_through(buffer, count, &mut kernel, write_some);
    }
    if count <= TINY {
        let mut tiny = [0u8; TINY];
        return write_through(buffer, count, &mut tiny, write_some);
    }
    if count <= BLOCK {
        let mut block = [0u8; BLOCK];
        return write_through(buffer, count, &mut block, write_some);
    }
    let mut small = [0u8; SMALL];
    let mut large = Vec::new();
    let kernel = transfer_buffer(count, &mut small, &mut large);
    write_through(buffer, count, kernel, write_some)
}

/// [`write_from`] through the kernel buffer `kernel`.
fn write_through(
    buffer: u64,
    count: usize,
    kernel: &mut [u8],
    mut write_some: impl FnMut(&[u8], usize) -> Result<usize, Errno>,
) -> Result<i64, Errno> {
    let mut done = 0;
    while done < count {
        let want = (count - done).min(kernel.len());
        if let Err(error) = user::read(buffer + done as u64, &mut kernel[..want]) {
            return partial(done, error);
        }
        let wrote = match write_some(&kernel[..want], done) {
            Ok(wrote) => wrote,
            Err(error) => return partial(done, error),
        };
        done += wrote;
        if wrote < want {
            break;
        }
    }
    Ok(done as i64)
}

/// `read(fd, buf, count)`.
pub fn read(files: &LinuxProcess, fd: u64, buffer: u64, count: u64) -> Result<i64, Errno> {
    let file = files.fds.get(fd as i64)?;
    read_into(&files.transfer, buffer, count, |chunk, _| file.read(chunk))
}

/// `write(fd, buf, count)`.
pub fn write(files: &LinuxProcess, fd: u64, buffer: u64, count: u64) -> Result<i64, Errno> {
    let file = files.fds.get(fd as i64)?;
    write_from(&files.transfer, buffer, count, |chunk, _| file.write(chunk))
}

/// An offset argument: `EINVAL` if negative.
fn offset(value: u64) -> Result<i64, Errno> {
    let offset = value as i64;
    if offset < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(offset)
}

/// `pread64(fd, buf, count, offset)`.
pub fn pread(
    files: &LinuxProcess,
    fd: u64,
    buffer: u64,
    count: u64,
    at: u64,
) -> Result<i64, Errno> {
    let file = files.fds.get(fd as i64)?;
    let at = offset(at)?;
    read_into(&files.transfer, buffer, count, |chunk, done| {
        file.pread(chunk, at + done as i64)
    })
}

/// `pwrite64(fd, buf, count, offset)`.
pub fn pwrite(
    files: &LinuxProcess,
    fd: u64,
    buffer: u64,
    count: u64,
    at: u64,
) -> Result<i64, Errno> {
    let file = files.fds.get(fd as i64)?;
    let at = offset(at)?;
    write_from(&files.transfer, buffer, count, |chunk, done| {
        file.pwrite(chunk, at + done as i64)
    })
}

/// The vectors of `readv`/`writev`, checked: `EINVAL` for too many or a
/// total that overflows `ssize_t`.
fn vectors(address: u64, count: u64) -> Result<Vec<(u64, u64)>, Errno> {
    if count > IOV_MAX {
        return Err(Errno::EINVAL);
    }
    let mut total: u64 = 0;
    let mut list = Vec::with_capacity(count as usize);
    for index in 0..count {
        let (base, len) = user::read_iovec(address, index)?;
        total = total.checked_add(len).ok_or(Errno::EINVAL)?;
        if total > i64::MAX as u64 {
            return Err(Errno::EINVAL);
        }
        list.push((base, len));
    }
    Ok(list)
}

/// Transfers each vector of `iov` in turn with `transfer` (a whole
/// `read_into` or `write_from`), stopping at the first short one, as
/// `readv` and `writev` do.
fn each_vector(
    address: u64,
    count: u64,
    mut transfer: impl FnMut(u64, u64) -> Result<i64, Errno>,
) -> Result<i64, Errno> {
    let mut total = 0i64;
    for (base, len) in vectors(address, count)? {
        match transfer(base, len) {
            Ok(done) => {
                total += done;
                if (done as u64) < len {
                    break;
                }
            }
            Err(error) => return partial(total as usize, error),
        }
    }
    Ok(total)
}

/// `readv(fd, iov, iovcnt)`.
pub fn readv(files: &LinuxProcess, fd: u64, address: u64, count: u64) -> Result<i64, Errno> {
    let file = files.fds.get(fd as i64)?;
    each_vector(address, count, |base, len| {
        read_into(&files.transfer, base, len, |chunk, _| file.read(chunk))
    })
}

/// `writev(fd, iov, iovcnt)`.
pub fn writev(files: &LinuxProcess, fd: u64, address: u64, count: u64) -> Result<i64, Errno> {
    let file = files.fds.get(fd as i64)?;
    each_vector(address, count, |base, len| {
        write_from(&files.transfer, base, len, |chunk, _| file.write(chunk))
    })
}

/// `preadv2`/`pwritev2` flags Linux knows (`RWF_HIPRI`, `RWF_DSYNC`,
/// `RWF_SYNC`, `RWF_NOWAIT`, `RWF_APPEND`): accepted, since every
/// transfer here is already synchronous and none waits for a device.
const RWF_KNOWN: u64 = 0x1f;

/// The position a `preadv`-family call names (its `pos_l`: Linux joins
/// `pos_l` and `pos_h` as `pos_h << 32 << 32 | pos_l`, so on a 64-bit
/// machine the high word never counts), `None` for -1 in the `*v2`
/// forms (the file's own position), `EINVAL` for another negative one.
fn vector_position(position: u64, current_allowed: bool) -> Result<Option<i64>, Errno> {
    if position as i64 == -1 && current_allowed {
        return Ok(None);
    }
    offset(position).map(Some)
}

/// `preadv(fd, iov, iovcnt, pos_l, pos_h)` and `preadv2(..., flags)`
/// (`flags` `None` for the first): `readv` at a position, leaving the
/// file's own alone; `EOPNOTSUPP` for unknown flags.
pub fn preadv(
    files: &LinuxProcess,
    fd: u64,
    address: u64,
    count: u64,
    [low, _high]: [u64; 2],
    flags: Option<u64>,
) -> Result<i64, Errno> {
    // Checked in Linux's order: the position, the descriptor, the flags.
    let position = vector_position(low, flags.is_some())?;
    let file = files.fds.get(fd as i64)?;
    if flags.is_some_and(|flags| flags & !RWF_KNOWN != 0) {
        return Err(Errno::EOPNOTSUPP);
    }
    let Some(at) = position else {
        return readv(files, fd, address, count);
    };
    let mut done = 0i64;
    each_vector(address, count, |base, len| {
        let moved = read_into(&files.transfer, base, len, |chunk, so_far| {
            file.pread(chunk, at + done + so_far as i64)
        })?;
        done += moved;
        Ok(moved)
    })
}

/// `pwritev(fd, iov, iovcnt, pos_l, pos_h)` and `pwritev2(..., flags)`:
/// `writev` at a position.
pub fn pwritev(
    files: &LinuxProcess,
    fd: u64,
    address: u64,
    count: u64,
    [low, _high]: [u64; 2],
    flags: Option<u64>,
) -> Result<i64, Errno> {
    // Checked in Linux's order: the position, the descriptor, the flags.
    let position = vector_position(low, flags.is_some())?;
    let file = files.fds.get(fd as i64)?;
    if flags.is_some_and(|flags| flags & !RWF_KNOWN != 0) {
        return Err(Errno::EOPNOTSUPP);
    }
    let Some(at) = position else {
        return writev(files, fd, address, count);
    };
    let mut done = 0i64;
    each_vector(address, count, |base, len| {
        let moved = write_from(&files.transfer, base, len, |chunk, so_far| {
            file.pwrite(chunk, at + done + so_far as i64)
        })?;
        done += moved;
        Ok(moved)
    })
}

/// `lseek(fd, offset, whence)`.
pub fn lseek(files: &LinuxProcess, fd: u64, to: u64, whence: u64) -> Result<i64, Errno> {
    let file = files.fds.get(fd as i64)?;
    let whence = u32::try_from(whence).map_err(|_| Errno::EINVAL)?;
    let position = file.seek(to as i64, whence)?;
    i64::try_from(position).map_err(|_| Errno::EOVERFLOW)
}

/// `close(fd)`.
pub fn close(files: &LinuxProcess, fd: u64) -> Result<i64, Errno> {
    files.close(fd as i64).map(|()| 0)
}

/// `dup(fd)`: the lowest free descriptor, without `FD_CLOEXEC`.
pub fn dup(files: &LinuxProcess, fd: u64) -> Result<i64, Errno> {
    let file = files.fds.get_raw(fd as i64)?;
    files.fds.install(file, 0, false).map(i64::from)
}

/// `dup2(old, new)`: `new` names `old`'s file (closing what it named);
/// the same descriptor twice is a no-op if it is open. Descriptors are
/// `int`s: only the low 32 bits of each count, in the comparison and the
/// answer too.
pub fn dup2(files: &LinuxProcess, old: u64, new: u64) -> Result<i64, Errno> {
    let (old, new) = (u64::from(old as u32), u64::from(new as u32));
    let file = files.fds.get_raw(old as i64)?;
    if old == new {
        return Ok(old as i64);
    }
    files.install_at(file, new as i64, false).map(i64::from)
}

/// `dup3(old, new, flags)`: as `dup2` with `O_CLOEXEC` allowed, and
/// `EINVAL` for the same descriptor twice.
pub fn dup3(files: &LinuxProcess, old: u64, new: u64, dup_flags: u64) -> Result<i64, Errno> {
    let (old, new) = (u64::from(old as u32), u64::from(new as u32));
    if dup_flags & !u64::from(flags::O_CLOEXEC) != 0 || old == new {
        return Err(Errno::EINVAL);
    }
    let file = files.fds.get_raw(old as i64)?;
    let cloexec = dup_flags != 0;
    files.install_at(file, new as i64, cloexec).map(i64::from)
}

/// `fcntl(fd, cmd, arg)`: duplication, the descriptor flag, the status
/// flags, record locks (`crate::locks`); other commands are `EINVAL` (as
/// Linux answers unknown ones). A descriptor that only names a file
/// (`O_PATH`) takes only duplication, the descriptor flag and `F_GETFL`
/// (Linux's `check_fcntl_cmd`); anything else on it is `EBADF`.
pub fn fcntl(files: &LinuxProcess, fd: u64, command: u64, argument: u64) -> Result<i64, Errno> {
    let file = files.fds.get_raw(fd as i64)?;
    let allowed_on_path_only = matches!(
        command,
        F_DUPFD | F_DUPFD_CLOEXEC | F_GETFD | F_SETFD | F_GETFL
    );
    if file.is_path_only() && !allowed_on_path_only {
        return Err(Errno::EBADF);
    }
    match command {
        F_DUPFD | F_DUPFD_CLOEXEC => {
            let lowest = i32::try_from(argument as i64)
                .ok()
                .filter(|&lowest| (0..crate::MAX_DESCRIPTORS).contains(&lowest))
                .ok_or(Errno::EINVAL)?;
            files
                .fds
                .install(file, lowest, command == F_DUPFD_CLOEXEC)
                .map(i64::from)
        }
        F_GETFD => Ok(i64::from(files.fds.close_on_exec(fd as i64)?)),
        F_SETFD => files
            .fds
            .set_close_on_exec(fd as i64, argument & FD_CLOEXEC != 0)
            .map(|()| 0),
        F_GETFL => Ok(i64::from(file.flags())),
        F_SETFL => {
            file.set_status_flags(argument as u32);
            Ok(0)
        }
        _ if crate::locks::is_lock_command(command) => {
            crate::locks::fcntl_lock(files, &file, command, argument)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// `ioctl(fd, request, arg)`: the device's (a regular file has none:
/// `ENOTTY`).
pub fn ioctl(files: &LinuxProcess, fd: u64, request: u64, argument: u64) -> Result<i64, Errno> {
    let file = files.fds.get(fd as i64)?;
    file.ioctl(request as u32, argument)
}

/// `fstat(fd, statbuf)`.
pub fn fstat(files: &LinuxProcess, fd: u64, buffer: u64) -> Result<i64, Errno> {
    let file = files.fds.get_raw(fd as i64)?;
    user::write(buffer, &Stat::from(&file.metadata()).to_bytes())?;
    Ok(0)
}

/// `fchmod(fd, mode)`.
pub fn fchmod(vfs: &Vfs, files: &LinuxProcess, fd: u64, mode: u64) -> Result<i64, Errno> {
    let file = files.fds.get(fd as i64)?;
    let changes = SetAttributes {
        mode: Some(mode as u32 & 0o7777),
        ..SetAttributes::default()
    };
    vfs.set_attributes(&files.context(), file.inode(), &changes)?;
    Ok(0)
}

/// `fchown(fd, uid, gid)`: as `chown` on the descriptor's file.
pub fn fchown(vfs: &Vfs, files: &LinuxProcess, fd: u64, uid: u64, gid: u64) -> Result<i64, Errno> {
    let file = files.fds.get(fd as i64)?;
    crate::fs::change_owner(vfs, files, file.inode(), uid, gid)
}

/// `ftruncate(fd, length)`.
pub fn ftruncate(files: &LinuxProcess, fd: u64, length: u64) -> Result<i64, Errno> {
    let file = files.fds.get(fd as i64)?;
    if !file.is_writable() {
        return Err(Errno::EINVAL);
    }
    file.truncate(length as i64)?;
    Ok(0)
}

/// `getdents64(fd, dirp, count)`.
pub fn getdents64(files: &LinuxProcess, fd: u64, buffer: u64, count: u64) -> Result<i64, Errno> {
    let file = files.fds.get(fd as i64)?;
    let count = (count.min(u64::from(u32::MAX))) as usize;
    let mut kernel = vec![0u8; count.min(CHUNK)];
    let filled = file.getdents64(&mut kernel)?;
    user::write(buffer, &kernel[..filled])?;
    Ok(filled as i64)
}

/// `sendfile(out_fd, in_fd, offset, count)`: copies up to `count` bytes
/// from `in_fd` (at `*offset`, which is then advanced, or at its own
/// offset if `offset` is null) to `out_fd`, through a kernel buffer.
/// Returns the bytes written; a short write ends the copy. Linux's
/// checks, in `do_sendfile`'s order: `EFAULT` for a bad `offset`,
/// `EBADF` for an input not open for reading, `ESPIPE` for an offset on
/// an input without one, `EINVAL` for a negative offset, `EBADF` for an
/// output not open for writing, `EINVAL` for an output in append mode.
/// A seekable input's own offset moves only by what was written.
pub fn sendfile(
    files: &LinuxProcess,
    out: u64,
    input: u64,
    offset: u64,
    count: u64,
) -> Result<i64, Errno> {
    let given = if offset == 0 {
        None
    } else {
        Some(user::read_u64(offset)? as i64)
    };
    let source = files.fds.get(input as i64)?;
    if !source.is_readable() {
        return Err(Errno::EBADF);
    }
    // The input's own offset, where it has one (a pipe or socket has
    // none: its reads take what comes).
    let own = source.seek(0, flags::SEEK_CUR).ok();
    if given.is_some() && own.is_none() {
        return Err(Errno::ESPIPE);
    }
    if given.is_some_and(|value| value < 0) {
        return Err(Errno::EINVAL);
    }
    let sink = files.fds.get(out as i64)?;
    if !sink.is_writable() {
        return Err(Errno::EBADF);
    }
    if sink.flags() & flags::O_APPEND != 0 {
        return Err(Errno::EINVAL);
    }
    let mut at = given.or(own.map(|position| position as i64));
    let count = usize::try_from(count).map_err(|_| Errno::EINVAL)?;
    let mut buffer = vec![0u8; count.min(CHUNK)];
    let mut done = 0usize;
    let mut failure = None;
    while done < count {
        let want = (count - done).min(buffer.len());
        let got = match at {
            Some(position) => source.pread(&mut buffer[..want], position),
            None => source.read(&mut buffer[..want]),
        };
        let got = match got {
            Ok(0) => break,
            Ok(got) => got,
            Err(error) => {
                failure = Some(error);
                break;
            }
        };
        let wrote = match sink.write(&buffer[..got]) {
            Ok(wrote) => wrote,
            Err(error) => {
                failure = Some(error);
                break;
            }
        };
        done += wrote;
        if let Some(position) = at.as_mut() {
            *position += wrote as i64;
        }
        if wrote < got {
            break;
        }
    }
    match (given, at) {
        (Some(_), Some(position)) => user::write(offset, &position.to_le_bytes())?,
        (None, Some(position)) => {
            source.seek(position, flags::SEEK_SET)?;
        }
        _ => {}
    }
    match failure {
        Some(error) => partial(done, error),
        None => Ok(done as i64),
    }
}

/// `fallocate(fd, mode, offset, len)`, in Linux's `vfs_fallocate`
/// order: `EINVAL` for a negative offset or a length not above 0;
/// `EOPNOTSUPP` for unknown mode bits, a hole punched with zeroing or
/// without `FALLOC_FL_KEEP_SIZE`; `EINVAL` for collapse, insert or
/// unshare mixed with other bits; then the file's checks
/// ([`vfs::OpenFile::allocate`]). The RAM file system does what tmpfs
/// does: mode 0, `FALLOC_FL_KEEP_SIZE`, and punching holes;
/// `EOPNOTSUPP` for the rest.
pub fn fallocate(
    files: &LinuxProcess,
    fd: u64,
    mode: u64,
    offset: u64,
    length: u64,
) -> Result<i64, Errno> {
    use linux_abi::fcntl::*;
    let file = files.fds.get(fd as i64)?;
    // The mode is an `int`; offset and length are `loff_t`.
    let mode = u64::from(mode as u32);
    let (offset, length) = (offset as i64, length as i64);
    if offset < 0 || length <= 0 {
        return Err(Errno::EINVAL);
    }
    let is_only = |bits: u64, allowed: u64| mode & bits == 0 || mode & !allowed == 0;
    let punch_and_zero = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE;
    if mode & !FALLOC_FL_SUPPORTED_MASK != 0
        || mode & punch_and_zero == punch_and_zero
        || (mode & FALLOC_FL_PUNCH_HOLE != 0 && mode & FALLOC_FL_KEEP_SIZE == 0)
    {
        return Err(Errno::EOPNOTSUPP);
    }
    if !is_only(FALLOC_FL_COLLAPSE_RANGE, FALLOC_FL_COLLAPSE_RANGE)
        || !is_only(FALLOC_FL_INSERT_RANGE, FALLOC_FL_INSERT_RANGE)
        || !is_only(
            FALLOC_FL_UNSHARE_RANGE,
            FALLOC_FL_UNSHARE_RANGE | FALLOC_FL_KEEP_SIZE,
        )
    {
        return Err(Errno::EINVAL);
    }
    let how = match mode {
        0 => vfs::Allocation::Extend,
        FALLOC_FL_KEEP_SIZE => vfs::Allocation::KeepSize,
        _ if mode == FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE => vfs::Allocation::PunchHole,
        _ => vfs::Allocation::Other,
    };
    file.allocate(how, offset as u64, length as u64).map(|()| 0)
}

/// `fadvise64(fd, offset, len, advice)`: advice is taken and ignored
/// (every file is in memory already), after Linux's checks: `EBADF`,
/// `ESPIPE` for a pipe, `EINVAL` for unknown advice.
pub fn fadvise64(files: &LinuxProcess, fd: u64, advice: u64) -> Result<i64, Errno> {
    /// `POSIX_FADV_NORMAL` .. `POSIX_FADV_NOREUSE`.
    const LAST_ADVICE: u64 = 5;
    let file = files.fds.get(fd as i64)?;
    if file.inode().file_type() == vfs::FileType::Fifo {
        return Err(Errno::ESPIPE);
    }
    // An `int`: a negative one reads as a large unsigned value here.
    if u64::from(advice as u32) > LAST_ADVICE {
        return Err(Errno::EINVAL);
    }
    Ok(0)
}

/// `fsync(fd)` and `fdatasync(fd)`. Every file system here keeps its files
/// in memory (the RAM file system, `/proc`, the devices), so a file's data
/// and metadata are as durable as they will get once written: nothing to
/// write back. The descriptor is checked as Linux checks it: `EBADF` for
/// none, `EINVAL` for a pipe or a socket, which cannot be synchronised.
pub fn fsync(files: &LinuxProcess, fd: u64) -> Result<i64, Errno> {
    let file = files.fds.get(fd as i64)?;
    match file.inode().file_type() {
        vfs::FileType::Fifo | vfs::FileType::Socket => Err(Errno::EINVAL),
        _ => Ok(0),
    }
}

/// `syncfs(fd)`: writes back the file system `fd` is on; in memory, as
/// for [`fsync`], there is nothing to write. `EBADF` for no descriptor.
pub fn syncfs(files: &LinuxProcess, fd: u64) -> Result<i64, Errno> {
    files.fds.get(fd as i64)?;
    Ok(0)
}
