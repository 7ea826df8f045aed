//! The interface between extensions and the services that lend them
//! packets and files: what an extension may do with a packet
//! ([`PacketAccess`], lent as a [`PacketRef`]) or a file ([`FileAccess`]),
//! and the directory and stream-service capabilities the kernel grants.
//!
//! A leaf crate: the network and stream services (`services/net`,
//! `services/streams`) implement these traits without depending on the
//! extension runtime (`wasm-runtime`, which compiles wasmi and
//! wasmparser); the runtime depends on this crate and re-exports it.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod files;
pub mod packet;

pub use files::{DirectoryAccess, FileAccess, ListenError, Listening, OpenError, StreamService};
pub use packet::{check_file_range, PacketAccess, PacketRef, ReplyError, MAX_FILE_REPLY_BYTES};
