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

use hal::user::{FpuState, UserRegisters, FPU_STATE_BYTES};
use linux_abi::signal::{SA_ONSTACK, SA_RESTORER, SS_DISABLE, SS_ONSTACK};
use vfs::Errno;

use crate::{
    signal::{Handler, SignalInfo, SIGINFO_BYTES},
    user,
};

/// Bytes of `struct ucontext`: flags 8, link 8, `stack_t` 24,
/// `sigcontext` 256, mask 8.
const UCONTEXT_BYTES: usize = 304;
/// Offset of the `sigcontext` in the `ucontext`.
const SIGCONTEXT_AT: usize = 40;
/// Offset of `uc_sigmask` in the `ucontext`.
const SIGMASK_AT: usize = 296;
/// Bytes of the frame below the FPU state: return address, `ucontext`,
/// `siginfo`.
const FRAME_BYTES: usize = 8 + UCONTEXT_BYTES + SIGINFO_BYTES;
/// The red zone below a user stack pointer the frame must not touch.
const RED_ZONE: u64 = 128;
/// `uc_flags`: the `sigcontext` holds SS, and `rt_sigreturn` restores it
/// as is (what Linux sets on x86_64).
const UC_SIGCONTEXT_SS: u64 = 0x2;
const UC_STRICT_RESTORE_SS: u64 = 0x4;
/// User segment selectors as Linux reports them in `sigcontext`.
const USER_CS: u16 = 0x33;
const USER_SS: u16 = 0x2b;
/// RFLAGS bits a handler starts without: direction, trap, resume.
const HANDLER_CLEARED_FLAGS: u64 = 0x400 | 0x100 | 0x1_0000;

/// `sigcontext` register slots, in Linux's order (`gregs` of glibc).
const SIGCONTEXT_REGISTERS: usize = 18;

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
fn frame_top(rsp: u64, handler: &Handler, alternate: (u64, u32, u64)) -> (u64, bool) {
    let (base, flags, size) = alternate;
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
pub fn enter_handler(
    registers: &UserRegisters,
    fpu: &FpuState,
    info: &SignalInfo,
    fault: Option<FaultDetails>,
    handler: &Handler,
    restore_mask: u64,
    alternate: (u64, u32, u64),
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
        .checked_sub(FRAME_BYTES as u64)
        .ok_or(Errno::EFAULT)?
        & !15)
        .wrapping_sub(8);
    let mut frame = [0u8; FRAME_BYTES];
    let mut put = |at: usize, value: u64| frame[at..at + 8].copy_from_slice(&value.to_le_bytes());
    put(0, handler.restorer);
    let uc = 8;
    put(uc, UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS);
    put(uc + 8, 0);
    let (stack_base, stack_flags, stack_size) = alternate;
    put(uc + 16, stack_base);
    put(
        uc + 24,
        u64::from(if on_alternate {
            SS_ONSTACK
        } else {
            stack_flags & SS_DISABLE
        }),
    );
    put(uc + 32, stack_size);
    let context = uc + SIGCONTEXT_AT;
    for (index, value) in registers_in_sigcontext_order(registers).iter().enumerate() {
        put(context + index * 8, *value);
    }
    // cs, gs, fs, ss: four 16-bit selectors.
    let selectors = u64::from(USER_CS) | u64::from(USER_SS) << 48;
    put(context + 144, selectors);
    let fault = fault.unwrap_or_default();
    put(context + 152, fault.error_code);
    put(context + 160, fault.vector);
    put(context + 168, restore_mask);
    put(context + 176, fault.address);
    put(context + 184, fpu_at);
    put(uc + SIGMASK_AT, restore_mask);
    let info_at = uc + UCONTEXT_BYTES;
    frame[info_at..info_at + SIGINFO_BYTES].copy_from_slice(&info.to_bytes());
    user::write(fpu_at, &fpu.0)?;
    user::write(frame_at, &frame)?;
    Ok(UserRegisters {
        rip: handler.address,
        rsp: frame_at,
        rdi: u64::from(info.signal),
        rsi: frame_at + info_at as u64,
        rdx: frame_at + uc as u64,
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
    let mut uc = [0u8; UCONTEXT_BYTES];
    user::read(rsp, &mut uc)?;
    let word = |at: usize| u64::from_le_bytes(uc[at..at + 8].try_into().unwrap_or([0; 8]));
    let mut slots = [0u64; SIGCONTEXT_REGISTERS];
    for (index, slot) in slots.iter_mut().enumerate() {
        *slot = word(SIGCONTEXT_AT + index * 8);
    }
    let fpu_at = word(SIGCONTEXT_AT + 184);
    let fpu = if fpu_at == 0 {
        None
    } else {
        let mut state = FpuState([0; FPU_STATE_BYTES]);
        user::read(fpu_at, &mut state.0)?;
        Some(state)
    };
    Ok(Interrupted {
        registers: registers_from_sigcontext(&slots),
        mask: word(SIGMASK_AT),
        fpu,
    })
}
