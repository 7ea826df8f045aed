//! `/proc`: Linux's window on processes and the system, as a file system
//! of the VFS ([`vfs::FileSystem`], [`vfs::Inode`]) whose files are
//! written out afresh on each read.
//!
//! The pieces:
//! - [`Source`]: what the kernel tells `/proc` (its processes, their
//!   descriptors, memory, time, mounts, processors). The kernel, which
//!   alone sees both its process table and the personality's descriptors,
//!   implements it; the Linux personality asks the same source for
//!   `sysinfo`, `times` and `getrusage`, so the calls and the files agree.
//! - [`ProcFs`]: the file system, mounted at `/proc`. Its tree:
//!   - `self`: a link to the caller's `PID` directory;
//!   - `cpuinfo`, `loadavg`, `meminfo`, `mounts`, `stat`, `uptime`,
//!     `version`, and Spindle's own `lockups` (the lockup watchdog's
//!     reports);
//!   - `sys/kernel/`: `domainname`, `hostname`, `ostype`, `osrelease`,
//!     `pid_max`, `version` (read-only);
//!   - `PID/`: `cmdline`, `comm`, `cwd`, `environ`, `exe`, `fd/`, `maps`,
//!     `mounts`, `stat`, `statm`, `status`, `task/`; `fd/N` links to what
//!     descriptor `N` names; `task/TID/` holds each thread's `comm`,
//!     `stat` and `status`.
//! - `format`: the text of each file, in Linux's layouts (`fs/proc/array.c`,
//!   `meminfo.c`, ...), which programs such as busybox `ps` parse.
//!
//! The formats are Linux's because the whole VFS speaks Linux (errno,
//! `stat` layouts); nothing here depends on the personality, so it lives
//! beside the VFS as a service of its own and is tested on the host with
//! a made-up [`Source`].
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

mod format;
mod inode;
mod source;

#[cfg(test)]
mod tests;

pub use format::{clock_ticks, CLOCK_TICKS_PER_SECOND};
pub use inode::ProcFs;
pub use source::{
    Access, Counters, Cpu, Descriptor, KernelSettings, Mapping, MemoryInfo, Mount, ProcessInfo,
    ProcessState, Source, ThreadInfo,
};
