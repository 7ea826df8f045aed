//! Moving data between descriptors without the program copying it:
//! `splice` (to or from a pipe), `tee` (one pipe's bytes into another,
//! leaving them), `vmsplice` (user memory and a pipe) and
//! `copy_file_range` (between regular files).
//!
//! Linux moves page references where it can; here the kernel copies
//! through a buffer of its own, at most [`CHUNK`] bytes at a time, which
//! gives the same results: what a program sees is which bytes arrive,
//! where the offsets end up and the errors, not how the kernel moved
//! them. A chunk is read only once there is a place to write it, and an
//! offset advances only by what was written, so a partial write loses no
//! bytes of a file; from a pipe or socket, what was taken is always
//! written out in full (a blocking write).

use alloc::{sync::Arc, vec};

use vfs::{flags, Errno, FileType, OpenFile};

use crate::{pipe::ReadEnd, user, LinuxProcess};

/// `splice`/`tee`/`vmsplice` flags: `SPLICE_F_MOVE`, `SPLICE_F_NONBLOCK`,
/// `SPLICE_F_MORE`, `SPLICE_F_GIFT`.
const SPLICE_F_NONBLOCK: u64 = 0x2;
const SPLICE_F_ALL: u64 = 0xf;
/// The most one call moves: Linux's pipe holds 64 KiB, so a splice
/// through one never moves more at once.
const CHUNK: usize = 64 * 1024;
/// `IOV_MAX`.
const IOV_MAX: u64 = 1024;

fn is_pipe(file: &OpenFile) -> bool {
    file.inode().file_type() == FileType::Fifo
}

fn same_inode(a: &OpenFile, b: &OpenFile) -> bool {
    core::ptr::addr_eq(Arc::as_ptr(a.inode()), Arc::as_ptr(b.inode()))
}

/// The offset a `loff_t *` names: `None` for a null pointer (the file's
/// own position is used); `ESPIPE` for one given for a pipe, `EINVAL`
/// for a negative one, `EFAULT` for a bad pointer.
fn given_offset(file: &OpenFile, pointer: u64) -> Result<Option<i64>, Errno> {
    if pointer == 0 {
        return Ok(None);
    }
    if is_pipe(file) {
        return Err(Errno::ESPIPE);
    }
    let offset = user::read_u64(pointer)? as i64;
    if offset < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(Some(offset))
}

/// Reads from `file` at `at` (or its position), without blocking if
/// `nonblocking` and it is a pipe or device.
fn read_from(
    file: &OpenFile,
    at: Option<i64>,
    buf: &mut [u8],
    nonblocking: bool,
) -> Result<usize, Errno> {
    match (at, file.device()) {
        (Some(offset), _) => file.pread(buf, offset),
        (None, Some(device)) if nonblocking => device.read(0, buf, true),
        (None, _) => file.read(buf),
    }
}

/// Writes all of `buf` to `file` at `at` (or its position) unless it
/// fails or, when `nonblocking` for a pipe or device, has no room: how
/// much went.
fn write_to(
    file: &OpenFile,
    at: Option<i64>,
    buf: &[u8],
    nonblocking: bool,
) -> Result<usize, Errno> {
    let mut done = 0;
    while done < buf.len() {
        let wrote = match (at, file.device()) {
            (Some(offset), _) => file.pwrite(&buf[done..], offset + done as i64),
            (None, Some(device)) if nonblocking => device.write(0, &buf[done..], true),
            (None, _) => file.write(&buf[done..]),
        };
        match wrote {
            Ok(0) => break,
            Ok(count) => done += count,
            Err(error) if done == 0 => return Err(error),
            Err(_) => break,
        }
    }
    Ok(done)
}

/// The files `splice` and `tee` move bytes between: `EINVAL` for
/// unknown `flags`, `EBADF` for a descriptor that is not open, an input
/// not open for reading or an output not open for writing.
fn input_and_output(
    files: &LinuxProcess,
    fd_in: u64,
    fd_out: u64,
    flags: u64,
) -> Result<(Arc<OpenFile>, Arc<OpenFile>), Errno> {
    if flags & !SPLICE_F_ALL != 0 {
        return Err(Errno::EINVAL);
    }
    let input = files.fds.get(fd_in as i64)?;
    let output = files.fds.get(fd_out as i64)?;
    if !input.is_readable() || !output.is_writable() {
        return Err(Errno::EBADF);
    }
    Ok((input, output))
}

/// `splice(fd_in, off_in, fd_out, off_out, len, flags)`: moves up to
/// `len` bytes from `fd_in` to `fd_out`, one of which must be a pipe
/// (`EINVAL` otherwise, or for the same pipe on both sides). An offset
/// pointer is used and advanced instead of the file's position
/// (`ESPIPE` for a pipe's); `SPLICE_F_NONBLOCK` makes the pipe side not
/// wait (`EAGAIN`). `EBADF` for a side not open the right way, `EINVAL`
/// for an output opened `O_APPEND` or unknown flags. Returns how many
/// bytes moved; 0 at the end of the input.
pub fn splice(
    files: &LinuxProcess,
    fd_in: u64,
    offset_in: u64,
    fd_out: u64,
    offset_out: u64,
    length: u64,
    splice_flags: u64,
) -> Result<i64, Errno> {
    let (input, output) = input_and_output(files, fd_in, fd_out, splice_flags)?;
    if !is_pipe(&input) && !is_pipe(&output) {
        return Err(Errno::EINVAL);
    }
    if is_pipe(&input) && is_pipe(&output) && same_inode(&input, &output) {
        return Err(Errno::EINVAL);
    }
    if output.flags() & flags::O_APPEND != 0 {
        return Err(Errno::EINVAL);
    }
    let at_in = given_offset(&input, offset_in)?;
    let at_out = given_offset(&output, offset_out)?;
    if length == 0 {
        return Ok(0);
    }
    let nonblocking = splice_flags & SPLICE_F_NONBLOCK != 0;
    let mut buffer = vec![0u8; (length as usize).min(CHUNK)];
    // From a file into a pipe, no more than the pipe could hold at once
    // is read: a blocking write then waits for the reader.
    let got = read_from(&input, at_in, &mut buffer, nonblocking && is_pipe(&input))?;
    if got == 0 {
        return Ok(0);
    }
    let wrote = write_to(
        &output,
        at_out,
        &buffer[..got],
        nonblocking && is_pipe(&output),
    )?;
    if wrote < got && at_in.is_none() && !is_pipe(&input) && input.device().is_none() {
        // A file's position went past what was written: back to it.
        let _ = input.seek(-((got - wrote) as i64), flags::SEEK_CUR);
    }
    if let Some(offset) = at_in {
        user::write(offset_in, &(offset + wrote as i64).to_le_bytes())?;
    }
    if let Some(offset) = at_out {
        user::write(offset_out, &(offset + wrote as i64).to_le_bytes())?;
    }
    Ok(wrote as i64)
}

/// The read end behind `file`, if it is a pipe's read side.
fn read_end(file: &OpenFile) -> Option<&ReadEnd> {
    file.device()?.as_any()?.downcast_ref::<ReadEnd>()
}

/// `tee(fd_in, fd_out, len, flags)`: copies up to `len` bytes queued in
/// pipe `fd_in` into pipe `fd_out`, leaving them in `fd_in`. `EINVAL`
/// unless both are pipes, different ones, `fd_in` open for reading and
/// `fd_out` for writing; waits for bytes unless `SPLICE_F_NONBLOCK`
/// (`EAGAIN`); 0 when the input has no writer left and nothing queued.
pub fn tee(
    files: &LinuxProcess,
    fd_in: u64,
    fd_out: u64,
    length: u64,
    tee_flags: u64,
) -> Result<i64, Errno> {
    let (input, output) = input_and_output(files, fd_in, fd_out, tee_flags)?;
    let Some(source) = read_end(&input) else {
        return Err(Errno::EINVAL);
    };
    if !is_pipe(&output) || same_inode(&input, &output) {
        return Err(Errno::EINVAL);
    }
    if length == 0 {
        return Ok(0);
    }
    let nonblocking = tee_flags & SPLICE_F_NONBLOCK != 0;
    let mut buffer = vec![0u8; (length as usize).min(CHUNK)];
    let got = source.peek(
        &mut buffer,
        nonblocking || input.flags() & flags::O_NONBLOCK != 0,
    )?;
    if got == 0 {
        return Ok(0);
    }
    write_to(&output, None, &buffer[..got], nonblocking).map(|count| count as i64)
}

/// `vmsplice(fd, iov, nr_segs, flags)`: the bytes of the `iovec`s into
/// pipe `fd` when it is a write end, or the pipe's bytes out into them
/// when it is a read end (as `writev`/`readv` would). `EBADF` unless
/// `fd` is a pipe open the matching way, `EINVAL` for more than
/// `IOV_MAX` vectors or unknown flags, `EFAULT` for a bad vector.
pub fn vmsplice(
    files: &LinuxProcess,
    fd: u64,
    vectors: u64,
    count: u64,
    vmsplice_flags: u64,
) -> Result<i64, Errno> {
    if vmsplice_flags & !SPLICE_F_ALL != 0 || count > IOV_MAX {
        return Err(Errno::EINVAL);
    }
    let file = files.fds.get(fd as i64)?;
    if !is_pipe(&file) {
        return Err(Errno::EBADF);
    }
    let nonblocking = vmsplice_flags & SPLICE_F_NONBLOCK != 0;
    let mut total = 0usize;
    for index in 0..count {
        let (base, length) = user::read_iovec(vectors, index)?;
        if length == 0 {
            continue;
        }
        let mut buffer = vec![0u8; (length as usize).min(CHUNK)];
        let moved = if file.is_writable() {
            user::read(base, &mut buffer)?;
            write_to(&file, None, &buffer, nonblocking)
        } else if file.is_readable() {
            read_from(&file, None, &mut buffer, nonblocking).and_then(|got| {
                user::write(base, &buffer[..got])?;
                Ok(got)
            })
        } else {
            Err(Errno::EBADF)
        };
        match moved {
            Ok(moved) => {
                total += moved;
                if moved < buffer.len() {
                    break;
                }
            }
            Err(error) if total == 0 => return Err(error),
            Err(_) => break,
        }
    }
    Ok(total as i64)
}

/// `copy_file_range(fd_in, off_in, fd_out, off_out, len, flags)`: copies
/// up to `len` bytes between regular files, from `off_in` (or the input's
/// position) to `off_out` (or the output's), advancing whichever was
/// used. `EINVAL` for flags, a file that is not regular (`EISDIR` for a
/// directory), a negative offset or overlapping ranges of one file;
/// `EBADF` for an input not open for reading or an output not open for
/// writing or opened `O_APPEND`; `EOVERFLOW` for a range past the
/// largest offset. Returns how many bytes were copied (0 at the input's
/// end).
pub fn copy_file_range(
    files: &LinuxProcess,
    fd_in: u64,
    offset_in: u64,
    fd_out: u64,
    offset_out: u64,
    length: u64,
    copy_flags: u64,
) -> Result<i64, Errno> {
    if copy_flags != 0 {
        return Err(Errno::EINVAL);
    }
    let input = files.fds.get(fd_in as i64)?;
    let output = files.fds.get(fd_out as i64)?;
    if !input.is_readable() || !output.is_writable() || output.flags() & flags::O_APPEND != 0 {
        return Err(Errno::EBADF);
    }
    for file in [&input, &output] {
        match file.inode().file_type() {
            FileType::Regular => {}
            FileType::Directory => return Err(Errno::EISDIR),
            _ => return Err(Errno::EINVAL),
        }
    }
    let read_offset = |file: &OpenFile, pointer: u64| -> Result<i64, Errno> {
        match given_offset(file, pointer)? {
            Some(offset) => Ok(offset),
            None => Ok(file.offset() as i64),
        }
    };
    let from = read_offset(&input, offset_in)?;
    let to = read_offset(&output, offset_out)?;
    let length = i64::try_from(length).unwrap_or(i64::MAX);
    if from.checked_add(length).is_none() || to.checked_add(length).is_none() {
        return Err(Errno::EOVERFLOW);
    }
    if same_inode(&input, &output) && from < to + length && to < from + length {
        return Err(Errno::EINVAL);
    }
    let mut buffer = vec![0u8; (length as usize).min(CHUNK)];
    let mut done = 0i64;
    while done < length {
        let want = ((length - done) as usize).min(buffer.len());
        let got = match input.pread(&mut buffer[..want], from + done) {
            Ok(0) => break,
            Ok(got) => got,
            Err(error) if done == 0 => return Err(error),
            Err(_) => break,
        };
        match write_to(&output, Some(to + done), &buffer[..got], false) {
            Ok(wrote) => {
                done += wrote as i64;
                if wrote < got {
                    break;
                }
            }
            Err(error) if done == 0 => return Err(error),
            Err(_) => break,
        }
    }
    if offset_in == 0 {
        input.seek(from + done, flags::SEEK_SET)?;
    } else {
        user::write(offset_in, &(from + done).to_le_bytes())?;
    }
    if offset_out == 0 {
        output.seek(to + done, flags::SEEK_SET)?;
    } else {
        user::write(offset_out, &(to + done).to_le_bytes())?;
    }
    Ok(done)
}
