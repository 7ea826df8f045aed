//! The plain data of a user thread's processor state: its general
//! registers and its x87/SSE state in `fxsave` layout.
//!
//! These are values, not mechanism, so they build for every target: the
//! Linux personality writes them into and reads them out of signal frames
//! and is tested on the host. `user`, which enters ring 3 with them and
//! saves and restores the FPU, re-exports them where they have always
//! been.

/// A user thread's registers: the sixteen general ones, where it runs and
/// its flags. What `user::run_with` starts a thread with (a `fork` child
/// resumes its parent's registers, with RAX cleared).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct UserRegisters {
    pub rax: u64,
    pub rbx: u64,
    pub rcx: u64,
    pub rdx: u64,
    pub rsi: u64,
    pub rdi: u64,
    pub rbp: u64,
    pub r8: u64,
    pub r9: u64,
    pub r10: u64,
    pub r11: u64,
    pub r12: u64,
    pub r13: u64,
    pub r14: u64,
    pub r15: u64,
    /// The next instruction (offset 120, as `hal_user_run` reads it).
    pub rip: u64,
    /// The stack pointer (offset 128).
    pub rsp: u64,
    /// The flags (offset 136); only the arithmetic flags and DF are kept,
    /// interrupts are always enabled and IOPL is 0.
    pub rflags: u64,
}

/// A user program's x87 and SSE registers as `fxsave` lays them out (512
/// bytes): what a signal frame keeps while a handler runs.
#[repr(C, align(16))]
#[derive(Clone)]
pub struct FpuState(pub [u8; FPU_STATE_BYTES]);

/// Bytes of an `fxsave` area.
pub const FPU_STATE_BYTES: usize = 512;

#[cfg(test)]
mod tests {
    use super::*;

    /// `hal_user_run` reads RIP, RSP and RFLAGS at fixed offsets.
    #[test]
    fn the_entry_reads_rip_rsp_and_rflags_where_they_are() {
        assert_eq!(core::mem::offset_of!(UserRegisters, rip), 120);
        assert_eq!(core::mem::offset_of!(UserRegisters, rsp), 128);
        assert_eq!(core::mem::offset_of!(UserRegisters, rflags), 136);
    }

    /// `fxsave` and `fxrstor` need a 16-byte aligned 512-byte area.
    #[test]
    fn an_fpu_state_is_an_aligned_fxsave_area() {
        assert_eq!(core::mem::size_of::<FpuState>(), 512);
        assert_eq!(core::mem::align_of::<FpuState>(), 16);
    }
}
