//! The plain data of user paging: the page size, where the user half ends,
//! how user code may access a page, and why a page-table change failed.
//!
//! These are values, not mechanism, so they build for every target: the
//! policy crates above `hal` (the Unix memory model, `vm`) name them in
//! their interfaces and are tested on the host against page tables of
//! their own. The modules that act on them (`memory`, `address_space`,
//! `user`) re-export them where they have always been.

use crate::frames::FRAME_SIZE;

/// Size of a small page.
pub const PAGE_SIZE: u64 = FRAME_SIZE;

/// First address above the user half (the canonical lower half).
pub const USER_END: u64 = 0x0000_8000_0000_0000;

/// How user code may access a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserProtection {
    /// No access (`PROT_NONE`): the page keeps its frame, but every access
    /// faults as if it were not present, and user copies fail on it.
    None,
    /// Read only.
    Read,
    /// Read and write.
    ReadWrite,
    /// Read and execute (code).
    ReadExecute,
    /// Read, write and execute: what a user program may ask for (Linux
    /// allows `PROT_WRITE | PROT_EXEC`, and code generators such as
    /// `tcc -run` and executable stacks use it). The kernel's own memory
    /// is never mapped so (`native_code` keeps W^X).
    ReadWriteExecute,
}

impl UserProtection {
    /// Whether user code may write the page.
    pub fn is_writable(self) -> bool {
        matches!(
            self,
            UserProtection::ReadWrite | UserProtection::ReadWriteExecute
        )
    }

    /// Whether user code may execute the page.
    pub fn is_executable(self) -> bool {
        matches!(
            self,
            UserProtection::ReadExecute | UserProtection::ReadWriteExecute
        )
    }

    /// The same without write access: what a page shared copy-on-write
    /// is mapped as until its first write.
    pub fn without_write(self) -> UserProtection {
        match self {
            UserProtection::ReadWrite => UserProtection::Read,
            UserProtection::ReadWriteExecute => UserProtection::ReadExecute,
            other => other,
        }
    }
}

/// Why a page-table operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapError {
    /// The address is not page aligned.
    Unaligned(u64),
    /// The address lies outside the region the operation may touch.
    OutsideRegion(u64),
    /// The page is already mapped.
    AlreadyMapped(u64),
    /// The page is not mapped.
    NotMapped(u64),
    /// No physical frame was free.
    OutOfFrames,
    /// The page's frame has another owner (a process it was shared with
    /// by `fork`, or the page cache): writing to it through the kernel's
    /// window would change their page too.
    SharedFrame(u64),
}

/// As a person reads it: what failed, and at which address.
impl core::fmt::Display for MapError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            MapError::Unaligned(address) => write!(f, "{address:#x} is not page aligned"),
            MapError::OutsideRegion(address) => {
                write!(f, "{address:#x} is outside the region allowed")
            }
            MapError::AlreadyMapped(address) => write!(f, "{address:#x} is mapped already"),
            MapError::NotMapped(address) => write!(f, "{address:#x} is not mapped"),
            MapError::OutOfFrames => f.write_str("no physical frame is free"),
            MapError::SharedFrame(address) => {
                write!(f, "the frame at {address:#x} is shared with another owner")
            }
        }
    }
}
