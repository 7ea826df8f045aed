//! `struct sockaddr_un`: the names of `AF_UNIX` sockets, read from and
//! written back to user space with Linux's lengths (`net/unix/af_unix.c`:
//! `unix_validate_addr`, `unix_mkname_bsd`, `unix_copy_addr`).
//!
//! A name is a path in the file tree (`sun_path` up to its first NUL),
//! an abstract name (a leading NUL, then every byte the length covers,
//! NULs included), or nothing (an unbound socket, or a `bind` of the
//! family alone, which asks for an automatic abstract name).

use alloc::vec::Vec;

use linux_abi::socket::{AF_UNIX, SOCKADDR_UN_BYTES, SUN_PATH_OFFSET};
use vfs::Errno;

/// An `AF_UNIX` socket's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnixAddress {
    /// No name: the family alone.
    Unnamed,
    /// A path in the file tree (without its NUL).
    Path(Vec<u8>),
    /// A name in the abstract namespace (without the leading NUL).
    Abstract(Vec<u8>),
}

impl UnixAddress {
    /// The name in the `length` bytes user space passed (`bytes` holds
    /// them): `EINVAL` for a length shorter than the family or longer
    /// than a `struct sockaddr_un`, or for another family. The family
    /// alone is [`UnixAddress::Unnamed`] (what `bind` autobinds).
    pub fn parse(bytes: &[u8]) -> Result<UnixAddress, Errno> {
        if bytes.len() < SUN_PATH_OFFSET || bytes.len() > SOCKADDR_UN_BYTES {
            return Err(Errno::EINVAL);
        }
        if u16::from_le_bytes([bytes[0], bytes[1]]) != AF_UNIX {
            return Err(Errno::EINVAL);
        }
        let path = &bytes[SUN_PATH_OFFSET..];
        match path.first() {
            None => Ok(UnixAddress::Unnamed),
            Some(0) => Ok(UnixAddress::Abstract(path[1..].to_vec())),
            Some(_) => {
                // The path ends at its NUL, or where the length ends.
                let end = path.iter().position(|&byte| byte == 0);
                Ok(UnixAddress::Path(
                    path[..end.unwrap_or(path.len())].to_vec(),
                ))
            }
        }
    }

    /// The record as user space reads it back, at Linux's length: the
    /// family alone for no name, the path and its NUL, or the NUL and the
    /// abstract name.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(SOCKADDR_UN_BYTES);
        bytes.extend_from_slice(&AF_UNIX.to_le_bytes());
        match self {
            UnixAddress::Unnamed => {}
            UnixAddress::Path(path) => {
                bytes.extend_from_slice(path);
                bytes.push(0);
            }
            UnixAddress::Abstract(name) => {
                bytes.push(0);
                bytes.extend_from_slice(name);
            }
        }
        // A path of all 108 bytes has no room for its NUL: Linux reports
        // the whole record then.
        bytes.truncate(SOCKADDR_UN_BYTES);
        bytes
    }

    /// Whether it names something (is not [`UnixAddress::Unnamed`]).
    pub fn is_named(&self) -> bool {
        *self != UnixAddress::Unnamed
    }
}
