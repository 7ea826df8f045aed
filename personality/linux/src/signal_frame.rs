//! The signal frame of the Linux x86_64 ABI: what the kernel pushes on a
//! user stack to run a handler, and reads back at `rt_sigreturn`.
//!
//! From the handler's stack pointer up (`struct rt_sigframe`):
//! - the return address: `sa_restorer`, a trampoline that calls
//!   `rt_sigreturn` (musl and glibc provide it);
//! - `struct ucontext` (304 bytes): flags, link, the stack in use, the
//!   `sigcontext` of the interrupted code (its registers, flags, fault
//!   details, a pointer to its FPU state) and the mask to restore;
//! - `siginfo_t` (128 bytes);
//! - above, 64-byte aligned, the FPU state in `fxsave` layout (512 bytes).
//!
//! The handler is entered as `handler(signal, &info, &ucontext)` with its
//! stack 16-byte aligned plus the return address, as after a `call`.

use hal::registers::{FpuState, UserRegisters, FPU_STATE_BYTES};
use linux_abi::{
    sigaction::SignalStack,
    signal::{SA_ONSTACK, SA_RESTORER, SS_DISABLE, SS_ONSTACK},
    ucontext::{
        Sigcontext, Ucontext, RT_SIGFRAME_BYTES, RT_SIGFRAME_SIGINFO_AT, RT_SIGFRAME_UCONTEXT_AT,
        SIGCONTEXT_REGISTERS, UC_SIGCONTEXT_SS, UC_STRICT_RESTORE_SS,
    },
};
use vfs::Errno;

use crate::{
    signal::{Handler, SignalInfo},
    user,
};

/// The red zone below a user stack pointer the frame must not touch.
const RED_ZONE: u64 = 128;
/// User segment selectors as Linux reports them in `sigcontext`.
const USER_CS: u16 = 0x33;
const USER_SS: u16 = 0x2b;
/// RFLAGS bits a handler starts without: direction, trap, resume.
const HANDLER_CLEARED_FLAGS: u64 = 0x400 | 0x100 | 0x1_0000;

/// What the CPU said of a fault, for `sigcontext` (`trapno`, `err`,
/// `cr2`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultDetails {
    /// The exception vector.
    pub vector: u64,
    /// The error code.
    pub error_code: u64,
    /// The faulting address (page faults).
    pub address: u64,
}

fn registers_in_sigcontext_order(r: &UserRegisters) -> [u64; SIGCONTEXT_REGISTERS] {
    [
        r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rdi, r.rsi, r.rbp, r.rbx, r.rdx,
        r.rax, r.rcx, r.rsp, r.rip, r.rflags,
    ]
}

fn registers_from_sigcontext(slots: &[u64; SIGCONTEXT_REGISTERS]) -> UserRegisters {
    let [r8, r9, r10, r11, r12, r13, r14, r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, rflags] =
        *slots;
    UserRegisters {
        rax,
        rbx,
        rcx,
        rdx,
        rsi,
        rdi,
        rbp,
        r8,
        r9,
        r10,
        r11,
        r12,
        r13,
        r14,
        r15,
        rip,
        rsp,
        rflags,
    }
}

/// Where the handler's frame goes: on the alternate stack if the handler
/// asked for it, one is set, and the program is not already on it; else
/// below the interrupted stack's red zone.
fn frame_top(rsp: u64, handler: &Handler, alternate: SignalStack) -> (u64, bool) {
    let SignalStack { base, flags, size } = alternate;
    let usable = flags & SS_DISABLE == 0 && size > 0;
    let on_it = usable && rsp > base && rsp <= base.wrapping_add(size);
    if handler.flags & SA_ONSTACK != 0 && usable && !on_it {
        (base.wrapping_add(size), true)
    } else {
        (rsp.wrapping_sub(RED_ZONE), on_it)
    }
}

/// Pushes the frame for `handler` on the program's stack: the state of
/// the interrupted code (`registers`, `fpu`), `info`, and `restore_mask`
/// (the mask `rt_sigreturn` puts back). Returns the registers that enter
/// the handler. `EFAULT` if the stack cannot take the frame, or the
/// handler has no return trampoline: the kernel then kills the program
/// with `SIGSEGV`, as Linux does.
#[inline]
pub fn enter_handler(
    registers: &UserRegisters,
    fpu: &FpuState,
    info: &SignalInfo,
    fault: Option<FaultDetails>,
    handler: &Handler,
    restore_mask: u64,
    alternate: SignalStack,
) -> Result<UserRegisters, Errno> {
    if handler.flags & SA_RESTORER == 0 || handler.restorer == 0 {
        return Err(Errno::EFAULT);
    }
    let (top, on_alternate) = frame_top(registers.rsp, handler, alternate);
    let fpu_at = top
        .checked_sub(FPU_STATE_BYTES as u64)
        .ok_or(Errno::EFAULT)?
        & !63;
    let frame_at = (fpu_at
        .checked_sub(RT_SIGFRAME_BYTES as u64)
        .ok_or(Errno::EFAULT)?
        & !15)
        .wrapping_sub(8);
    let fault = fault.unwrap_or_default();
    let context = Ucontext {
        // The `sigcontext` holds SS and `rt_sigreturn` restores it as is:
        // what Linux sets on x86_64.
        flags: UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS,
        link: 0,
        stack: SignalStack {
            flags: if on_alternate {
                SS_ONSTACK
            } else {
                alternate.flags & SS_DISABLE
            },
            ..alternate
        },
        mcontext: Sigcontext {
            registers: registers_in_sigcontext_order(registers),
            cs: USER_CS,
            gs: 0,
            fs: 0,
            ss: USER_SS,
            err: fault.error_code,
            trapno: fault.vector,
            oldmask: restore_mask,
            cr2: fault.address,
            fpstate: fpu_at,
        },
        sigmask: restore_mask,
    };
    let mut frame = [0u8; RT_SIGFRAME_BYTES];
    frame[..8].copy_from_slice(&handler.restorer.to_le_bytes());
    frame[RT_SIGFRAME_UCONTEXT_AT..RT_SIGFRAME_SIGINFO_AT].copy_from_slice(&context.to_bytes());
    frame[RT_SIGFRAME_SIGINFO_AT..].copy_from_slice(&info.to_siginfo().to_bytes());
    user::write(fpu_at, &fpu.0)?;
    user::write(frame_at, &frame)?;
    Ok(UserRegisters {
        rip: handler.address,
        rsp: frame_at,
        rdi: u64::from(info.signal),
        rsi: frame_at + RT_SIGFRAME_SIGINFO_AT as u64,
        rdx: frame_at + RT_SIGFRAME_UCONTEXT_AT as u64,
        rax: 0,
        rflags: registers.rflags & !HANDLER_CLEARED_FLAGS,
        ..*registers
    })
}

/// What `rt_sigreturn` finds in the frame: the interrupted code's
/// registers, the mask to restore, and its FPU state (if the frame
/// points at one).
pub struct Interrupted {
    /// The registers to resume with.
    pub registers: UserRegisters,
    /// The signal mask to restore.
    pub mask: u64,
    /// The FPU state to restore.
    pub fpu: Option<FpuState>,
}

/// Reads the frame a handler returned from: `rsp` is the stack pointer at
/// `rt_sigreturn`, just above the return address the handler's `ret`
/// took, so it points at the `ucontext`. Anything the program changed
/// there is taken as it is (as on Linux); only what the kernel could not
/// survive is refused later (the FPU's reserved bits, a kernel address).
pub fn return_from_handler(rsp: u64) -> Result<Interrupted, Errno> {
    let mut bytes = [0u8; Ucontext::BYTES];
    user::read(rsp, &mut bytes)?;
    let context = Ucontext::from_bytes(&bytes);
    let fpu_at = context.mcontext.fpstate;
    let fpu = if fpu_at == 0 {
        None
    } else {
        let mut state = FpuState([0; FPU_STATE_BYTES]);
        user::read(fpu_at, &mut state.0)?;
        Some(state)
    };
    Ok(Interrupted {
        registers: registers_from_sigcontext(&context.mcontext.registers),
        mask: context.sigmask,
        fpu,
    })
}
