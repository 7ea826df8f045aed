//! Host tests: the values and layouts here are checked against Linux's
//! (from the kernel's x86_64 headers), one file per area.

mod errno;
mod ipc;
mod lock;
mod resource;
mod signal;
mod signal_frame;
mod socket;
mod stat;
mod statfs;
mod syscall;
mod termios;
mod time;
mod uio;
