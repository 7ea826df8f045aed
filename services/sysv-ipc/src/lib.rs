//! System V semaphore sets (`semget`, `semop`, `semctl`) as plain state,
//! with Linux's semantics and errno values (`ipc/sem.c`, `ipc/util.c`).
//!
//! - [`permissions`]: an object's `ipc_perm` and Linux's `ipcperms`
//!   check against a [`Caller`]'s credentials;
//! - [`set`]: one [`SemaphoreSet`]: its values, `semop`'s
//!   all-or-nothing operations and the undo adjustments of `SEM_UNDO`;
//! - [`table`]: [`SemaphoreSets`], the system's sets by key and by id,
//!   and the `semctl` commands.
//!
//! Nothing here waits: an operation that cannot proceed says which
//! semaphore it waits on ([`Outcome::Blocked`]), and the Linux
//! personality blocks the caller and tries again when a set changes. The
//! crate is host-tested (`cargo test -p sysv-ipc`).

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod permissions;
pub mod set;
pub mod table;

#[cfg(test)]
mod tests;

pub use linux_abi::Errno;
pub use permissions::{Caller, Permissions};
pub use set::{Outcome, SemaphoreSet, Wait};
pub use table::{SemaphoreSets, Status};
