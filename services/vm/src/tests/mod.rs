//! Host tests of the Unix memory model over page tables of their own
//! ([`fake::FakeTables`]): each operation's argument checks and error
//! paths ([`operations`]), and random sequences of operations checked
//! step by step against a simple model ([`model`]).

use alloc::sync::Arc;

use hal::paging::{UserProtection, PAGE_SIZE};

use crate::AddressMap;

mod fake;
mod model;
mod operations;

use fake::FakeTables;

/// Page-fault error code bits, as the CPU reports them.
const PRESENT: u64 = 1 << 0;
const WRITE: u64 = 1 << 1;
const FETCH: u64 = 1 << 4;

/// An access by user code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// A load.
    Read,
    /// A store of this word.
    Write(u64),
    /// An instruction fetch.
    Execute,
}

/// The access faulted and the model did not resolve it: the program
/// would get `SIGSEGV`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segv;

/// The page-fault error code for `access` to a page with `entry` (its
/// protection, if mapped), or `None` if the entry allows it.
fn fault(entry: Option<UserProtection>, access: Access) -> Option<u64> {
    let kind = match access {
        Access::Read => 0,
        Access::Write(_) => WRITE,
        Access::Execute => FETCH,
    };
    let allowed = match entry {
        // Not present (a `PROT_NONE` entry is not present either).
        None | Some(UserProtection::None) => return Some(kind),
        Some(UserProtection::Read) => access == Access::Read,
        Some(UserProtection::ReadWrite) => access != Access::Execute,
        Some(UserProtection::ReadExecute) => !matches!(access, Access::Write(_)),
        Some(UserProtection::ReadWriteExecute) => true,
    };
    (!allowed).then_some(PRESENT | kind)
}

/// Does `access` at `address` as the CPU would: through the page tables,
/// and on a fault through [`AddressMap::resolve_fault`], then again.
/// Returns the word read (or written).
fn touch(map: &mut AddressMap<FakeTables>, address: u64, access: Access) -> Result<u64, Segv> {
    // A first touch and then a write to a copy-on-write page: two faults
    // at most; a third means a resolved fault that resolved nothing.
    for _ in 0..3 {
        let entry = map.space().entry(address).map(|entry| entry.protection);
        match fault(entry, access) {
            None => {
                if let Access::Write(value) = access {
                    map.space().store(address, value);
                }
                return Ok(map.space().contents(address).unwrap_or_default());
            }
            Some(error_code) => {
                if !map.resolve_fault(address, error_code) {
                    return Err(Segv);
                }
            }
        }
    }
    panic!("{access:?} at {address:#x} faults again after every resolved fault");
}

/// An empty map over fresh page tables (and fresh physical memory), with
/// the break at `break_start`.
fn new_map(break_start: u64) -> AddressMap<FakeTables> {
    fake::reset_memory();
    AddressMap::new(Arc::new(FakeTables::default()), break_start)
}

/// `pages` pages in bytes.
const fn pages(pages: u64) -> u64 {
    pages * PAGE_SIZE
}
