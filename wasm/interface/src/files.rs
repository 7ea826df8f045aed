//! Files and stream service as extensions hold them: capabilities the
//! kernel grants at load (a directory of its file tree as `files`, the
//! right to listen on TCP ports as `streams`), and what an extension makes
//! of them (an open file, a port listened on).
//!
//! The runtime knows them only through these traits; the kernel implements
//! them over its file tree (`vfs`) and its socket stack, so the runtime
//! stays free of both and the host's tests give their own.

use alloc::sync::Arc;
use core::fmt;

/// A regular file opened read-only.
pub trait FileAccess: Send + Sync {
    /// Its length in bytes.
    fn len(&self) -> u64;
    /// Whether it is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A number that changes when the file is written (size and
    /// modification time): what a cache keys on.
    fn version(&self) -> u64;
    /// Copies bytes from `offset` into `out`; how many (0 at the end).
    fn read(&self, offset: u64, out: &mut [u8]) -> usize;
    /// Its bytes, when the kernel keeps them in memory for as long as it
    /// runs (the boot archive's files): sent from there without a copy.
    fn resident(&self) -> Option<&'static [u8]> {
        None
    }
}

/// Why a file was not opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// No regular file at that path.
    NotFound,
    /// The path is not one: empty, absolute past the root, with `..` or a
    /// NUL.
    BadPath,
}

/// A directory of the kernel's file tree, readable beneath it only.
pub trait DirectoryAccess: Send + Sync {
    /// Opens the regular file at `path`, relative to the directory.
    fn open(&self, path: &str) -> Result<Arc<dyn FileAccess>, OpenError>;
    /// Where the directory is, for messages.
    fn describe(&self) -> alloc::string::String;
}

/// Why a port was not listened on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListenError {
    /// Another socket or extension has the port.
    PortTaken,
    /// The port is not one (0).
    BadPort,
    /// The kernel has no socket stack or no memory for the listener.
    Unavailable,
}

impl fmt::Display for ListenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ListenError::PortTaken => "the port is taken",
            ListenError::BadPort => "not a port",
            ListenError::Unavailable => "no socket stack",
        })
    }
}

/// A port listened on; dropping the last reference stops listening.
pub trait Listening: Send + Sync {
    /// The port.
    fn port(&self) -> u16;
}

/// The stream service: listening on TCP ports for an extension. The data
/// of each connection accepted raises `TCP.StreamData`.
pub trait StreamService: Send + Sync {
    /// Listens on `port` for the extension named `owner`.
    fn listen(&self, port: u16, owner: &str) -> Result<Arc<dyn Listening>, ListenError>;
}
