//! Host tests: the values and layouts here are checked against Linux's
//! (from the kernel's x86_64 headers), one file per module.

mod errno;
mod signal;
mod syscall;
