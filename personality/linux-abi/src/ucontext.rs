//! The signal frame of x86_64 (`struct rt_sigframe`): what a handler
//! finds on its stack, and `rt_sigreturn` reads back. From the handler's
//! stack pointer up: the return address (`sa_restorer`), a `struct
//! ucontext` holding the interrupted code's `struct sigcontext`, and a
//! `siginfo_t`.

use crate::{
    bytes::{get, get_u64, put},
    sigaction::SignalStack,
    siginfo::SIGINFO_BYTES,
};

/// General registers in a `sigcontext`, in Linux's order: r8, r9, r10,
/// r11, r12, r13, r14, r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip,
/// eflags (glibc's `gregs`).
pub const SIGCONTEXT_REGISTERS: usize = 18;

/// x86_64 `struct sigcontext` (`asm/sigcontext.h`): 256 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sigcontext {
    /// The general registers, in [`SIGCONTEXT_REGISTERS`]' order.
    pub registers: [u64; SIGCONTEXT_REGISTERS],
    /// `cs`.
    pub cs: u16,
    /// `gs`.
    pub gs: u16,
    /// `fs`.
    pub fs: u16,
    /// `ss` (kept when `UC_SIGCONTEXT_SS` is set).
    pub ss: u16,
    /// `err`: the fault's error code.
    pub err: u64,
    /// `trapno`: the fault's exception vector.
    pub trapno: u64,
    /// `oldmask`: the signal mask (the first word of it).
    pub oldmask: u64,
    /// `cr2`: the faulting address of a page fault.
    pub cr2: u64,
    /// `fpstate`: where the FPU state (`fxsave` layout) is, or 0.
    pub fpstate: u64,
}

impl Sigcontext {
    /// Bytes of a `struct sigcontext`.
    pub const BYTES: usize = 256;

    /// The record as user space reads it: registers@0 (8 bytes each),
    /// cs@144, gs@146, fs@148, ss@150, err@152, trapno@160, oldmask@168,
    /// cr2@176, fpstate@184, 64 reserved bytes.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        for (index, value) in self.registers.iter().enumerate() {
            put(&mut bytes, index * 8, value.to_le_bytes());
        }
        put(&mut bytes, 144, self.cs.to_le_bytes());
        put(&mut bytes, 146, self.gs.to_le_bytes());
        put(&mut bytes, 148, self.fs.to_le_bytes());
        put(&mut bytes, 150, self.ss.to_le_bytes());
        put(&mut bytes, 152, self.err.to_le_bytes());
        put(&mut bytes, 160, self.trapno.to_le_bytes());
        put(&mut bytes, 168, self.oldmask.to_le_bytes());
        put(&mut bytes, 176, self.cr2.to_le_bytes());
        put(&mut bytes, 184, self.fpstate.to_le_bytes());
        bytes
    }

    /// The record user space left (a handler may change it).
    pub fn from_bytes(bytes: &[u8; Self::BYTES]) -> Sigcontext {
        let mut registers = [0; SIGCONTEXT_REGISTERS];
        for (index, value) in registers.iter_mut().enumerate() {
            *value = get_u64(bytes, index * 8);
        }
        Sigcontext {
            registers,
            cs: u16::from_le_bytes(get(bytes, 144)),
            gs: u16::from_le_bytes(get(bytes, 146)),
            fs: u16::from_le_bytes(get(bytes, 148)),
            ss: u16::from_le_bytes(get(bytes, 150)),
            err: get_u64(bytes, 152),
            trapno: get_u64(bytes, 160),
            oldmask: get_u64(bytes, 168),
            cr2: get_u64(bytes, 176),
            fpstate: get_u64(bytes, 184),
        }
    }
}

/// `uc_flags`: the `sigcontext` holds SS.
pub const UC_SIGCONTEXT_SS: u64 = 0x2;
/// `uc_flags`: `rt_sigreturn` restores SS as it is.
pub const UC_STRICT_RESTORE_SS: u64 = 0x4;

/// x86_64 `struct ucontext` as the kernel builds it: 304 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ucontext {
    /// `uc_flags` (`UC_*`).
    pub flags: u64,
    /// `uc_link`: unused by the kernel (0).
    pub link: u64,
    /// `uc_stack`: the alternate stack when the signal came.
    pub stack: SignalStack,
    /// `uc_mcontext`: the interrupted code's registers.
    pub mcontext: Sigcontext,
    /// `uc_sigmask`: the mask `rt_sigreturn` restores.
    pub sigmask: u64,
}

impl Ucontext {
    /// Bytes of a `struct ucontext`.
    pub const BYTES: usize = 304;

    /// The record as user space reads it: flags@0, link@8, stack@16,
    /// mcontext@40, sigmask@296.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        put(&mut bytes, 0, self.flags.to_le_bytes());
        put(&mut bytes, 8, self.link.to_le_bytes());
        put(&mut bytes, 16, self.stack.to_bytes());
        put(&mut bytes, 40, self.mcontext.to_bytes());
        put(&mut bytes, 296, self.sigmask.to_le_bytes());
        bytes
    }

    /// The record user space left.
    pub fn from_bytes(bytes: &[u8; Self::BYTES]) -> Ucontext {
        Ucontext {
            flags: get_u64(bytes, 0),
            link: get_u64(bytes, 8),
            stack: SignalStack::from_bytes(&get(bytes, 16)),
            mcontext: Sigcontext::from_bytes(&get(bytes, 40)),
            sigmask: get_u64(bytes, 296),
        }
    }
}

/// Offset of the `ucontext` in `struct rt_sigframe` (after the return
/// address).
pub const RT_SIGFRAME_UCONTEXT_AT: usize = 8;
/// Offset of the `siginfo_t` in `struct rt_sigframe`.
pub const RT_SIGFRAME_SIGINFO_AT: usize = RT_SIGFRAME_UCONTEXT_AT + Ucontext::BYTES;
/// Bytes of `struct rt_sigframe` (the FPU state it points at is apart).
pub const RT_SIGFRAME_BYTES: usize = RT_SIGFRAME_SIGINFO_AT + SIGINFO_BYTES;
