//! Keeping `read` and `write` coherent with shared mappings of a file.
//!
//! A shared mapping of a file (`MAP_SHARED`) writes to pages the kernel
//! keeps (`services/file-mappings`), not to the file's bytes here. So
//! that `read` sees what a mapping wrote, and a mapping what `write`
//! wrote, the file layer tells the keeper of those pages before a regular
//! file is read or written and after it was written. The keeper registers
//! itself once ([`set_mapped_pages`]); until it does, and for files with
//! no shared mapping, this costs a call and a check.

use crate::inode::Inode;

/// The keeper of files' shared-mapping pages.
pub trait MappedPages: Send + Sync {
    /// `inode` is about to be read or written: pages its mappings changed
    /// go back to it first.
    fn before_access(&self, inode: &dyn Inode);
    /// `len` bytes of `inode` at `offset` were written: mapped pages over
    /// them take the new bytes.
    fn after_write(&self, inode: &dyn Inode, offset: u64, len: usize);
}

static KEEPER: spin::Once<&'static dyn MappedPages> = spin::Once::new();

/// Registers the keeper of shared-mapping pages (once; later calls are
/// ignored).
pub fn set_mapped_pages(keeper: &'static dyn MappedPages) {
    KEEPER.call_once(|| keeper);
}

/// Before a regular file's bytes are read or written.
pub(crate) fn before_access(inode: &dyn Inode) {
    if let Some(keeper) = KEEPER.get() {
        keeper.before_access(inode);
    }
}

/// After `len` bytes of a regular file were written at `offset`.
pub(crate) fn after_write(inode: &dyn Inode, offset: u64, len: usize) {
    if let Some(keeper) = KEEPER.get() {
        keeper.after_write(inode, offset, len);
    }
}
