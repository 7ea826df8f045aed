//! Executable memory for the native engine's generated code, and the one
//! entry into it (docs/design/0008-native-engine.md).
//!
//! Code memory is W^X: mapped writable, filled, then remapped read-execute
//! before anything can run it, and never writable again. This is the host
//! implementation (over `mmap`/`mprotect`), for the runtime's host tests;
//! the kernel's (frames mapped through the kernel address space) is still
//! to come.
//!
//! The trust boundary: what runs here is the output of the native
//! engine's compiler (`wasm::engine::native`), which checks every memory
//! access, call depth, fuel and indirect call itself, and the context it
//! gets is the runtime's. Both are trusted as wasmi's executor is: this
//! module cannot tell compiler output from other bytes.

use core::ffi::c_void;

const PAGE_BYTES: usize = 4096;
const PROT_READ: i32 = 1;
const PROT_WRITE: i32 = 2;
const PROT_EXEC: i32 = 4;
const MAP_PRIVATE: i32 = 2;
const MAP_ANONYMOUS: i32 = 0x20;

extern "C" {
    fn mmap(
        addr: *mut c_void,
        len: usize,
        prot: i32,
        flags: i32,
        fd: i32,
        offset: i64,
    ) -> *mut c_void;
    fn mprotect(addr: *mut c_void, len: usize, prot: i32) -> i32;
    fn munmap(addr: *mut c_void, len: usize) -> i32;
}

/// The signature every entry has: the context, then up to four integer
/// arguments (a function with fewer ignores the rest, as the System V
/// convention allows), an integer result in `rax`.
type Entry = extern "sysv64" fn(*mut u64, i64, i64, i64, i64) -> i64;

/// Read-execute memory holding generated code.
pub struct CodeMemory {
    base: *mut c_void,
    mapped_bytes: usize,
    code_bytes: usize,
}

// SAFETY: after `new` the mapping is read-only and owned by this value
// alone; sharing or moving it between threads races on nothing.
unsafe impl Send for CodeMemory {}
// SAFETY: as above: `&CodeMemory` only reads immutable memory.
unsafe impl Sync for CodeMemory {}

impl CodeMemory {
    /// Copies `code` into fresh pages and makes them read-execute; `None`
    /// when `code` is empty or the mapping fails.
    pub fn new(code: &[u8]) -> Option<CodeMemory> {
        if code.is_empty() {
            return None;
        }
        let mapped_bytes = code.len().div_ceil(PAGE_BYTES) * PAGE_BYTES;
        // SAFETY: a new anonymous private mapping touches no existing
        // memory; failure is checked below.
        let base = unsafe {
            mmap(
                core::ptr::null_mut(),
                mapped_bytes,
                PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base as isize == -1 || base.is_null() {
            return None;
        }
        let memory = CodeMemory {
            base,
            mapped_bytes,
            code_bytes: code.len(),
        };
        // SAFETY: `base` starts `mapped_bytes >= code.len()` writable bytes
        // of our own fresh mapping, which cannot overlap `code`.
        unsafe { core::ptr::copy_nonoverlapping(code.as_ptr(), base.cast::<u8>(), code.len()) };
        // SAFETY: our own mapping; from here on it is read-execute (W^X).
        if unsafe { mprotect(base, mapped_bytes, PROT_READ | PROT_EXEC) } != 0 {
            return None;
        }
        Some(memory)
    }

    /// The address of the code at `offset`, for the runtime's function
    /// table; `None` past the end.
    pub fn address(&self, offset: usize) -> Option<u64> {
        (offset < self.code_bytes).then(|| self.base as u64 + offset as u64)
    }

    /// Runs the function at `offset` with `context` (the runtime's
    /// `vmctx`, laid out as `wasm::engine::native::vmctx` says) and
    /// `arguments`; its integer result. `None` when `offset` is past the
    /// end.
    pub fn enter(&self, offset: usize, context: &mut [u64], arguments: [i64; 4]) -> Option<i64> {
        let address = self.address(offset)?;
        // SAFETY: `address` is inside this read-execute mapping, at the
        // start of a function the native compiler emitted with the System V
        // convention taking the context first (the trust boundary in the
        // module documentation); a function of fewer integer parameters
        // ignores the extra argument registers.
        let entry: Entry = unsafe { core::mem::transmute::<u64, Entry>(address) };
        Some(entry(
            context.as_mut_ptr(),
            arguments[0],
            arguments[1],
            arguments[2],
            arguments[3],
        ))
    }
}

impl Drop for CodeMemory {
    fn drop(&mut self) {
        // SAFETY: the mapping is ours and nothing refers to it any more
        // (entries run only through `&self`).
        unsafe { munmap(self.base, self.mapped_bytes) };
    }
}
