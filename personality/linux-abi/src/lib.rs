//! The Linux x86_64 user ABI as data, defined once for the kernel, the
//! Linux personality and the services: system-call numbers
//! ([`syscall`]), error numbers ([`Errno`]), signals ([`signal`]), and
//! the byte layouts of the structures system calls exchange with user
//! space.
//!
//! Layouts are plain Rust structs with `to_bytes`/`from_bytes` that write
//! and read Linux's little-endian byte image at Linux's offsets, rather
//! than `#[repr(C)]` types cast to bytes: no `unsafe`, no padding to get
//! wrong, and each offset written down once, here.

#![no_std]
#![forbid(unsafe_code)]

mod bytes;
pub mod clone;
pub mod epoll;
pub mod errno;
pub mod eventfd;
pub mod fcntl;
pub mod ipc;
pub mod lock;
pub mod persona;
pub mod pidfd;
pub mod prctl;
pub mod ptrace;
pub mod resource;
pub mod sigaction;
pub mod siginfo;
pub mod signal;
pub mod signalfd;
pub mod socket;
pub mod stat;
pub mod statfs;
pub mod syscall;
pub mod sysinfo;
pub mod termios;
pub mod time;
pub mod timerfd;
pub mod ucontext;
pub mod uio;
pub mod xattr;

pub use errno::Errno;

/// The highest `pid_max` Linux allows on 64-bit machines
/// (`PID_MAX_LIMIT`, `include/linux/threads.h`): process and thread ids
/// stay below it.
pub const PID_MAX_LIMIT: u64 = 4 * 1024 * 1024;

#[cfg(test)]
mod tests;
