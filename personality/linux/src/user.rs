//! User memory as the personality reaches it: every pointer a program
//! passes is an allegation, checked by the machine's fallible copies
//! ([`crate::machine::UserMemory`]: `hal::user` in the kernel); a bad one
//! is `EFAULT`, never a kernel fault.

use alloc::vec::Vec;

use linux_abi::uio::Iovec;
use vfs::{Errno, PATH_MAX};

use crate::machine::{Machine, UserMemory};

/// Copies `out.len()` bytes from user address `address`.
pub fn read(address: u64, out: &mut [u8]) -> Result<(), Errno> {
    Machine::read(address, out).map_err(|_| Errno::EFAULT)
}

/// Copies `bytes` to user address `address`.
pub fn write(address: u64, bytes: &[u8]) -> Result<(), Errno> {
    Machine::write(address, bytes).map_err(|_| Errno::EFAULT)
}

/// Whether `length` bytes from `address` lie in the user half (Linux's
/// `access_ok`: what a call checks of an array before it waits, mapping
/// aside, which the copy itself finds out).
pub fn is_user_range(address: u64, length: u64) -> bool {
    address
        .checked_add(length)
        .is_some_and(|end| end <= hal::paging::USER_END)
}

/// Reads a little-endian `u64` at `address`.
pub fn read_u64(address: u64) -> Result<u64, Errno> {
    let mut bytes = [0u8; 8];
    read(address, &mut bytes)?;
    Ok(u64::from_le_bytes(bytes))
}

/// Reads `N` little-endian `u64`s in a row at `address` (a `timespec`, a
/// pair of them, ...), in one copy: no address arithmetic that a pointer
/// near the top of the address space could overflow.
pub fn read_u64s<const N: usize>(address: u64) -> Result<[u64; N], Errno> {
    let mut bytes = alloc::vec![0u8; N * 8];
    read(address, &mut bytes)?;
    let mut values = [0u64; N];
    for (value, chunk) in values.iter_mut().zip(bytes.chunks_exact(8)) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        *value = u64::from_le_bytes(word);
    }
    Ok(values)
}

/// Reads a NUL-terminated path: `ENAMETOOLONG` past `PATH_MAX` bytes
/// (with its NUL), `EFAULT` where it leaves mapped memory, `ENOENT` for
/// an empty one (Linux's answer for `""` without `AT_EMPTY_PATH`).
pub fn read_path(address: u64) -> Result<Vec<u8>, Errno> {
    let path = read_c_string(address, PATH_MAX)?;
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    Ok(path)
}

/// Reads a NUL-terminated string of at most `limit` bytes with its NUL.
/// It is copied a page piece at a time: a string that ends just before
/// an unmapped page is read without touching that page.
pub fn read_c_string(address: u64, limit: usize) -> Result<Vec<u8>, Errno> {
    const PAGE: u64 = 4096;
    let mut bytes = Vec::new();
    let mut at = address;
    loop {
        let room = (PAGE - at % PAGE) as usize;
        let want = room.min(limit + 1 - bytes.len().min(limit));
        let mut chunk = [0u8; PAGE as usize];
        read(at, &mut chunk[..want])?;
        if let Some(end) = chunk[..want].iter().position(|&byte| byte == 0) {
            bytes.extend_from_slice(&chunk[..end]);
            if bytes.len() >= limit {
                return Err(Errno::ENAMETOOLONG);
            }
            return Ok(bytes);
        }
        bytes.extend_from_slice(&chunk[..want]);
        if bytes.len() >= limit {
            return Err(Errno::ENAMETOOLONG);
        }
        at = at.checked_add(want as u64).ok_or(Errno::EFAULT)?;
    }
}

/// One `struct iovec`: base and length.
pub fn read_iovec(vectors: u64, index: u64) -> Result<(u64, u64), Errno> {
    let at = Iovec::element_address(vectors, index).ok_or(Errno::EFAULT)?;
    let mut bytes = [0u8; Iovec::BYTES];
    read(at, &mut bytes)?;
    let vector = Iovec::from_bytes(&bytes);
    Ok((vector.base, vector.len))
}

/// Reads a NULL-terminated array of string pointers (`argv`, `envp`):
/// `E2BIG` past [`MAX_STRINGS`] strings or [`MAX_STRING_BYTES`] bytes in
/// all; a null array is empty (Linux accepts it).
pub fn read_string_vector(address: u64) -> Result<Vec<Vec<u8>>, Errno> {
    let mut strings = Vec::new();
    if address == 0 {
        return Ok(strings);
    }
    let mut total = 0;
    for index in 0..=MAX_STRINGS as u64 {
        let at = address.checked_add(index * 8).ok_or(Errno::EFAULT)?;
        let pointer = read_u64(at)?;
        if pointer == 0 {
            return Ok(strings);
        }
        let string = read_c_string(pointer, MAX_STRING_BYTES).map_err(|error| {
            if error == Errno::ENAMETOOLONG {
                Errno::E2BIG
            } else {
                error
            }
        })?;
        total += string.len() + 1;
        if total > MAX_STRING_BYTES {
            return Err(Errno::E2BIG);
        }
        strings.push(string);
    }
    Err(Errno::E2BIG)
}

/// Most strings `execve` takes in `argv` and `envp` each.
pub const MAX_STRINGS: usize = 4096;
/// Most bytes the strings of `argv` (or `envp`) may have in all: they
/// must fit the stack pages mapped before the program starts.
pub const MAX_STRING_BYTES: usize = 32 * 1024;
