//! Input and output: `write` and `writev` to the console (fds 1 and 2),
//! `ioctl` (no terminal yet). Files and the tty come with the Linux
//! personality.

use linux_abi::{uio::Iovec, Errno};

use super::WRITE_CHUNK;

/// `writev(fd, iov, iovcnt)`: each `(base, len)` pair written in turn.
pub(super) fn writev(fd: u64, vectors: u64, count: u64) -> i64 {
    const IOV_MAX: u64 = 1024;
    if count > IOV_MAX {
        return Errno::EINVAL.as_negative();
    }
    let mut total = 0i64;
    for index in 0..count {
        let mut bytes = [0u8; Iovec::BYTES];
        let Some(at) = Iovec::element_address(vectors, index) else {
            return Errno::EFAULT.as_negative();
        };
        if hal::user::copy_from_user(&mut bytes, at).is_err() {
            return Errno::EFAULT.as_negative();
        }
        let Iovec { base, len } = Iovec::from_bytes(&bytes);
        let mut done = 0;
        while done < len {
            let written = write(fd, base + done, len - done);
            if written < 0 {
                return if total > 0 { total } else { written };
            }
            done += written as u64;
            total += written;
        }
    }
    total
}

/// `write(fd, buf, count)` to the console for fds 1 and 2.
pub(super) fn write(fd: u64, buffer: u64, count: u64) -> i64 {
    if fd != 1 && fd != 2 {
        return Errno::EBADF.as_negative();
    }
    if count == 0 {
        return 0;
    }
    let mut chunk = [0u8; WRITE_CHUNK];
    let len = (count as usize).min(WRITE_CHUNK);
    if hal::user::copy_from_user(&mut chunk[..len], buffer).is_err() {
        return Errno::EFAULT.as_negative();
    }
    crate::console_output::console_write(&chunk[..len]);
    len as i64
}
