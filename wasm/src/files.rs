//! Files and stream service as extensions hold them: capabilities the
//! kernel grants at load (a directory of its file tree as `files`, the
//! right to listen on TCP ports as `streams`), and what an extension makes
//! of them (an open file, a port listened on).
//!
//! The types are `extension_interface`'s (a leaf crate, so the services
//! implement them without this runtime), re-exported here. The runtime
//! knows files and streams only through these traits; the kernel
//! implements them over its file tree (`vfs`) and its socket stack, so the
//! runtime stays free of both and the host's tests give their own.

pub use extension_interface::files::*;
