//! Executable memory for the native engine's generated code, and the one
//! entry into it (docs/design/0008-native-engine.md).
//!
//! Code memory is W^X: mapped writable, filled, then remapped read-execute
//! before anything can run it, and never writable again; dropping a
//! [`CodeMemory`] unmaps its pages and frees their frames. In the kernel
//! the pages are in their own region (`memory::CODE_BASE`), one
//! 4 MiB slot per module; on the host (the runtime's tests) they are an
//! `mmap` made read-execute with `mprotect`.
//!
//! The trust boundary: making code memory is safe (it only copies bytes
//! into pages nobody else uses); running it is not, since this module
//! cannot tell compiler output from other bytes, nor a well-formed context
//! from a forged one. So [`CodeMemory::enter`] is an `unsafe fn`: its one
//! caller is the native engine's entry (the `native_entry` crate,
//! `wasm/native-entry`), which the runtime uses only to enter code its
//! compiler produced, with a context it built.

/// The signature every entry has: the context, then up to eight integer
/// arguments (a function with fewer ignores the rest, as the System V
/// convention allows: the caller cleans up the stack), an integer result in
/// `rax`.
type Entry = extern "sysv64" fn(*mut u64, i64, i64, i64, i64, i64, i64, i64, i64) -> i64;

/// The most arguments [`CodeMemory::enter`] passes.
pub const ENTRY_ARGUMENTS: usize = 8;

/// [`Entry`] for functions of [`REGISTER_ARGUMENTS`] parameters: the
/// context and five arguments, all in registers (System V passes six
/// integer arguments in registers, the rest on the stack).
type RegisterEntry = extern "sysv64" fn(*mut u64, i64, i64, i64, i64, i64) -> i64;

/// The most arguments [`EntryPoint::call`] passes.
pub const REGISTER_ARGUMENTS: usize = 5;

/// Read-execute memory holding generated code.
pub struct CodeMemory {
    pages: backing::Pages,
    code_bytes: usize,
}

impl CodeMemory {
    /// Copies `code` into fresh pages and makes them read-execute; `None`
    /// when `code` is empty or larger than a slot, or no memory is left.
    pub fn new(code: &[u8]) -> Option<CodeMemory> {
        if code.is_empty() {
            return None;
        }
        let pages = backing::Pages::new(code)?;
        Some(CodeMemory {
            pages,
            code_bytes: code.len(),
        })
    }

    /// The address of the code at `offset`, for the runtime's function
    /// table; `None` past the end.
    pub fn address(&self, offset: usize) -> Option<u64> {
        (offset < self.code_bytes).then(|| self.pages.base() + offset as u64)
    }

    /// Bytes of code held.
    pub fn len(&self) -> usize {
        self.code_bytes
    }

    /// Whether no code is held (never, once made).
    pub fn is_empty(&self) -> bool {
        self.code_bytes == 0
    }

    /// Runs the function at `offset` with `context` and `arguments`; its
    /// integer result. `None` when `offset` is past the end.
    ///
    /// # Safety
    ///
    /// 1. The function at `offset` must be the start of a function the
    ///    native engine's compiler emitted into this memory (System V
    ///    convention, the context first, integer parameters only, at most
    ///    [`ENTRY_ARGUMENTS`]).
    /// 2. `context` must point to a context laid out as
    ///    `wasm::engine::native::vmctx` says, whose addresses (linear
    ///    memory and its size, globals, table, function table, runtime
    ///    procedures) are all valid for the whole call, and whose stack
    ///    limit leaves the generated code room on the current stack.
    pub unsafe fn enter(
        &self,
        offset: usize,
        context: *mut u64,
        arguments: [i64; ENTRY_ARGUMENTS],
    ) -> Option<i64> {
        let address = self.address(offset)?;
        // SAFETY: `address` is inside this read-execute memory, at the start
        // of a compiled function (condition 1), so it is a function of the
        // `Entry` type as far as the used arguments go.
        let entry: Entry = unsafe { core::mem::transmute::<u64, Entry>(address) };
        let [a, b, c, d, e, f, g, h] = arguments;
        // Calling it runs code that only touches what the context names
        // (condition 2) and its own stack frames, bounded by the context's
        // stack limit.
        Some(entry(context, a, b, c, d, e, f, g, h))
    }
}

/// The start of one function in a [`CodeMemory`], its offset checked
/// once ([`CodeMemory::entry_point`]) rather than at every entry: what a
/// hot caller keeps beside the code memory it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryPoint {
    address: u64,
}

impl CodeMemory {
    /// The entry point of the function at `offset`; `None` past the end.
    pub fn entry_point(&self, offset: usize) -> Option<EntryPoint> {
        self.address(offset).map(|address| EntryPoint { address })
    }
}

impl EntryPoint {
    /// Runs the function with `context` and the first `count` of
    /// `arguments` (all in registers; a `count` of [`REGISTER_ARGUMENTS`]
    /// or more passes all five); its integer result. Always inlined: with
    /// a constant `count` (an event's arity) the call passes exactly the
    /// registers the function reads, with no test.
    ///
    /// # Safety
    ///
    /// As for [`CodeMemory::enter`], where the code memory is the one this
    /// entry point came from, which must be alive for the whole call; the
    /// function takes `count` parameters after the context, at most
    /// [`REGISTER_ARGUMENTS`].
    #[inline(always)]
    pub unsafe fn call(
        self,
        context: *mut u64,
        arguments: [i64; REGISTER_ARGUMENTS],
        count: usize,
    ) -> i64 {
        let [a, b, c, d, e] = arguments;
        let address = self.address;
        // SAFETY: (each arm) `address` is inside a live read-execute code
        // memory (the caller's condition), at the start of a compiled
        // function of `count` parameters after the context (condition 1 of
        // `CodeMemory::enter`), so it is a function of the type the arm
        // gives it; calling it runs code that touches only what the
        // context names and its own frames (condition 2).
        unsafe {
            match count {
                0 => core::mem::transmute::<u64, extern "sysv64" fn(*mut u64) -> i64>(address)(
                    context,
                ),
                1 => {
                    core::mem::transmute::<u64, extern "sysv64" fn(*mut u64, i64) -> i64>(address)(
                        context, a,
                    )
                }
                2 => core::mem::transmute::<u64, extern "sysv64" fn(*mut u64, i64, i64) -> i64>(
                    address,
                )(context, a, b),
                3 => {
                    core::mem::transmute::<u64, extern "sysv64" fn(*mut u64, i64, i64, i64) -> i64>(
                        address,
                    )(context, a, b, c)
                }
                4 => core::mem::transmute::<
                    u64,
                    extern "sysv64" fn(*mut u64, i64, i64, i64, i64) -> i64,
                >(address)(context, a, b, c, d),
                _ => core::mem::transmute::<u64, RegisterEntry>(address)(context, a, b, c, d, e),
            }
        }
    }
}

/// The x87/SSE state as `fxsave64` writes it (Intel SDM vol. 1, 10.5.1).
#[repr(C, align(16))]
struct FpuImage([u8; 512]);

/// The MXCSR Wasm's floats need: round to nearest, every exception
/// masked (the value a thread starts with).
const WASM_MXCSR: u32 = 0x1f80;

/// Runs `run` (an entry into generated code that uses floats) with the
/// x87/SSE registers it finds saved, and put back when it returns: the
/// kernel itself uses none (it is built without SSE), so the registers
/// hold whatever the interrupted thread had, a user program's among
/// them when a system call raises an event that Wasm code handles.
/// Generated float code would change them, and would round as the
/// program's MXCSR says instead of as Wasm requires: so the control word
/// is set to round to nearest for the call. Legacy SSE only (the
/// compiler emits no VEX code), so the upper halves of AVX registers
/// are left alone and `fxsave64` is enough.
#[inline]
pub fn keeping_fpu_state<R>(run: impl FnOnce() -> R) -> R {
    let mut image = core::mem::MaybeUninit::<FpuImage>::uninit();
    let image = image.as_mut_ptr();
    // SAFETY: `fxsave64` writes the 512 bytes at `image`, 16-byte aligned
    // (the type's alignment) and ours, and changes no register; `ldmxcsr`
    // only changes how SSE arithmetic rounds and traps (all exceptions
    // stay masked, so it raises none). CR4.OSFXSR is set (by
    // `user::init` in the kernel, by the host's kernel in tests) before
    // anything runs generated code.
    unsafe {
        core::arch::asm!(
            "fxsave64 [{image}]",
            "ldmxcsr [{mxcsr}]",
            image = in(reg) image,
            mxcsr = in(reg) &WASM_MXCSR,
            options(nostack, preserves_flags),
        );
    }
    let result = run();
    // SAFETY: `image` holds what `fxsave64` wrote above (a valid image,
    // as `fxrstor64` requires); restoring it changes only the x87/SSE
    // registers, which the compiler keeps nothing in across this block
    // (`clobber_abi`: every caller-saved register is assumed changed).
    unsafe {
        core::arch::asm!(
            "fxrstor64 [{image}]",
            image = in(reg) image,
            clobber_abi("sysv64"),
            options(nostack, preserves_flags),
        );
    }
    result
}

/// [`keeping_fpu_state`] when `uses_floats` (the code to run uses the
/// x87/SSE registers), else `run` alone: the one test entries into
/// generated code without floats pay.
#[inline(always)]
pub fn keeping_fpu_state_if<R>(uses_floats: bool, run: impl FnOnce() -> R) -> R {
    if uses_floats {
        keeping_fpu_state(run)
    } else {
        run()
    }
}

/// Bytes of code memory mapped now (whole pages), for leak checks.
pub fn mapped_bytes() -> usize {
    backing::MAPPED_BYTES.load(core::sync::atomic::Ordering::Relaxed)
}

#[cfg(target_os = "none")]
mod backing {
    //! The kernel's code memory: 4 MiB slots of the code region, pages
    //! mapped from fresh frames.

    use core::sync::atomic::{AtomicUsize, Ordering};

    use crate::{
        memory::{self, CODE_BASE, CODE_END, PAGE_SIZE},
        slots::Slots,
    };

    /// Address space of one module's code (the compiler refuses more than
    /// 4 MiB of code per module).
    const SLOT_BYTES: u64 = 4 << 20;
    const SLOT_COUNT: usize = ((CODE_END - CODE_BASE) / SLOT_BYTES) as usize;

    /// Which slots are taken.
    static SLOTS: Slots<{ SLOT_COUNT.div_ceil(64) }> = Slots::new(SLOT_COUNT);
    /// Bytes mapped by live code memories.
    pub(super) static MAPPED_BYTES: AtomicUsize = AtomicUsize::new(0);

    /// Pages of one slot holding code.
    pub(super) struct Pages {
        slot: usize,
        pages: u64,
    }

    impl Pages {
        pub(super) fn new(code: &[u8]) -> Option<Pages> {
            let pages = (code.len() as u64).div_ceil(PAGE_SIZE);
            if pages * PAGE_SIZE > SLOT_BYTES {
                return None;
            }
            let slot = SLOTS.take()?;
            let base = CODE_BASE + slot as u64 * SLOT_BYTES;
            if memory::map_internal(base, pages).is_err() {
                SLOTS.release(slot);
                return None;
            }
            // From here on, dropping `mapped` unmaps and frees.
            let mapped = Pages { slot, pages };
            MAPPED_BYTES.fetch_add((pages * PAGE_SIZE) as usize, Ordering::Relaxed);
            // SAFETY: `base` starts `pages` fresh, writable pages just mapped
            // for this slot alone (at least `code.len()` bytes), which no
            // Rust object lives in and which cannot overlap `code`.
            unsafe {
                core::ptr::copy_nonoverlapping(code.as_ptr(), base as *mut u8, code.len());
            }
            // W^X: read-execute from here on, never writable again.
            memory::make_code_executable(base, pages).ok()?;
            Some(mapped)
        }

        pub(super) fn base(&self) -> u64 {
            CODE_BASE + self.slot as u64 * SLOT_BYTES
        }
    }

    impl Drop for Pages {
        fn drop(&mut self) {
            // Entries run only through `&CodeMemory`, so nothing runs this
            // code any more.
            memory::unmap_internal(self.base(), self.pages);
            MAPPED_BYTES.fetch_sub((self.pages * PAGE_SIZE) as usize, Ordering::Relaxed);
            SLOTS.release(self.slot);
        }
    }
}

#[cfg(not(target_os = "none"))]
mod backing {
    //! The host's code memory, for the runtime's tests: an anonymous
    //! mapping, filled, then made read-execute.

    use core::{
        ffi::c_void,
        sync::atomic::{AtomicUsize, Ordering},
    };

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

    /// Bytes mapped by live code memories.
    pub(super) static MAPPED_BYTES: AtomicUsize = AtomicUsize::new(0);

    /// One mapping holding code.
    pub(super) struct Pages {
        base: *mut c_void,
        mapped_bytes: usize,
    }

    // SAFETY: after `new` the mapping is read-only and owned by this value
    // alone; sharing or moving it between threads races on nothing.
    unsafe impl Send for Pages {}
    // SAFETY: as above: `&Pages` only reads immutable memory.
    unsafe impl Sync for Pages {}

    impl Pages {
        pub(super) fn new(code: &[u8]) -> Option<Pages> {
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
            let pages = Pages { base, mapped_bytes };
            MAPPED_BYTES.fetch_add(mapped_bytes, Ordering::Relaxed);
            // SAFETY: `base` starts `mapped_bytes >= code.len()` writable
            // bytes of our own fresh mapping, which cannot overlap `code`.
            unsafe { core::ptr::copy_nonoverlapping(code.as_ptr(), base.cast::<u8>(), code.len()) };
            // SAFETY: our own mapping; from here on it is read-execute (W^X).
            if unsafe { mprotect(base, mapped_bytes, PROT_READ | PROT_EXEC) } != 0 {
                return None;
            }
            Some(pages)
        }

        pub(super) fn base(&self) -> u64 {
            self.base as u64
        }
    }

    impl Drop for Pages {
        fn drop(&mut self) {
            // SAFETY: the mapping is ours and nothing refers to it any more
            // (entries run only through `&CodeMemory`).
            unsafe { munmap(self.base, self.mapped_bytes) };
            MAPPED_BYTES.fetch_sub(self.mapped_bytes, Ordering::Relaxed);
        }
    }
}
