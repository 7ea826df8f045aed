//! User mode: entering ring 3, the `syscall` entry, and copying to and from
//! user memory.
//!
//! - **Segments and stacks.** The GDT has user code and data segments in
//!   the order `syscall`/`sysret` need (`gdt`). A trap from ring 3 lands on
//!   the running thread's own kernel stack (TSS RSP0); `syscall` switches to
//!   the same stack through the CPU-local area below. The context switch
//!   sets both for the incoming thread (`context`).
//! - **GS.** In kernel mode GS points at the CPU-local area, in user mode
//!   at the user's (0): `syscall` and every trap or interrupt from ring 3
//!   execute `swapgs` on the way in and out, so the kernel can always find
//!   its stack, and a user can never make the kernel use a GS of its own.
//! - **System calls** use the Linux ABI: number in RAX, arguments in RDI,
//!   RSI, RDX, R10, R8, R9, result in RAX. The entry saves the user's state
//!   as a [`SyscallFrame`] on the kernel stack and calls the registered
//!   [`SyscallHandler`] with interrupts enabled.
//! - **User memory** is reached only through [`copy_from_user`] and
//!   [`copy_to_user`]: the range is checked to lie in the user half, SMAP is
//!   lifted only for the copy (`stac`/`clac`), and a fault inside the copy
//!   (an unmapped user page) returns [`UserFault`] instead of faulting the
//!   kernel (the trap dispatcher resumes the copy at its fix-up label).

use core::{
    arch::global_asm,
    cell::UnsafeCell,
    sync::atomic::{AtomicU64, AtomicUsize, Ordering},
};

use x86_64::{
    registers::{
        control::{Cr4, Cr4Flags},
        model_specific::{Efer, EferFlags, GsBase, KernelGsBase, LStar, SFMask, Star},
        rflags::RFlags,
    },
    VirtAddr,
};

use crate::gdt;

pub use crate::{
    paging::USER_END,
    registers::{FpuState, UserRegisters, FPU_STATE_BYTES},
};

/// Room left on the kernel stack for `hal_user_run`'s own pushes (six
/// callee-saved registers, the return address, the five-word interrupt
/// frame) between `run`'s frame and the stack entries from user mode use.
const USER_RUN_FRAME_BYTES: u64 = 256;

/// RFLAGS.IF.
const RFLAGS_INTERRUPT_ENABLE: u64 = 1 << 9;
/// RFLAGS bit 1 is always set.
const RFLAGS_RESERVED_ONE: u64 = 1 << 1;

/// What `syscall` needs without a free register: the kernel stack to
/// switch to, and a slot for the user's stack pointer. `GS` points here in
/// kernel mode.
#[repr(C)]
struct CpuLocal {
    /// Offset 0: top of the running thread's kernel stack.
    kernel_rsp: u64,
    /// Offset 8: the user's RSP while the entry saves it.
    user_rsp: u64,
    /// Offset 16: the user code selector (RPL 3), for the entry's
    /// interrupt-return frame.
    user_cs: u64,
    /// Offset 24: the user data selector (RPL 3).
    user_ss: u64,
}

struct CpuLocalCell(UnsafeCell<CpuLocal>);

// SAFETY: one CPU. `kernel_rsp` is written by the context switch with
// interrupts disabled; both fields are otherwise touched only by the entry
// stub, with interrupts disabled (SFMASK clears IF on `syscall`).
unsafe impl Sync for CpuLocalCell {}

static CPU_LOCAL: CpuLocalCell = CpuLocalCell(UnsafeCell::new(CpuLocal {
    kernel_rsp: 0,
    user_rsp: 0,
    user_cs: 0,
    user_ss: 0,
}));

/// Sets the kernel stack `syscall` switches to. Only the context switch
/// calls it, with the incoming thread's stack top and interrupts disabled.
pub(crate) fn set_syscall_stack(top: u64) {
    debug_assert!(!crate::cpu::are_interrupts_enabled());
    // SAFETY: see `CpuLocalCell`.
    unsafe { (*CPU_LOCAL.0.get()).kernel_rsp = top };
}

/// The user state a system call saved, in the order the entry stub pushes
/// it: the general registers, then an interrupt-return frame (RIP, CS,
/// RFLAGS, RSP, SS). The number, arguments and result are the handler's
/// to read and write. Where the call returns to is not: it changes only
/// through [`SyscallFrame::start_program`] and
/// [`SyscallFrame::set_user_registers`], which check that the target is
/// a user address and keep the flags a user may choose, so safe code
/// cannot send the return anywhere but into user mode.
///
/// The call returns with `sysret` when RCX and R11 hold what `syscall`
/// left in them (the return address and the flags), and with `iretq`
/// otherwise (a signal handler entered or left: every register is
/// restored exactly).
#[repr(C)]
#[derive(Debug)]
pub struct SyscallFrame {
    r15: u64,
    r14: u64,
    r13: u64,
    r12: u64,
    rbp: u64,
    rbx: u64,
    r9: u64,
    r8: u64,
    r10: u64,
    rdx: u64,
    rsi: u64,
    rdi: u64,
    rax: u64,
    rcx: u64,
    r11: u64,
    rip: u64,
    cs: u64,
    rflags: u64,
    rsp: u64,
    ss: u64,
}

impl SyscallFrame {
    /// The system call number (RAX on entry).
    pub fn number(&self) -> u64 {
        self.rax
    }

    /// The six arguments (RDI, RSI, RDX, R10, R8, R9).
    pub fn args(&self) -> [u64; 6] {
        [self.rdi, self.rsi, self.rdx, self.r10, self.r8, self.r9]
    }

    /// Sets the result the caller finds in RAX.
    pub fn set_result(&mut self, value: u64) {
        self.rax = value;
    }

    /// Where the call returns to.
    pub fn rip(&self) -> u64 {
        self.rip
    }

    /// The caller's stack pointer.
    pub fn rsp(&self) -> u64 {
        self.rsp
    }

    /// Makes the call return into a new program (`execve`): at `rip` with
    /// stack `rsp`, every other register zero and flags fresh (interrupts
    /// on). `rip` must be a user address: `sysret` to a non-canonical one
    /// would fault in ring 0, so it is refused here.
    pub fn start_program(&mut self, rip: u64, rsp: u64) -> Result<(), EnterError> {
        self.set_user_registers(&UserRegisters {
            rip,
            rsp,
            ..UserRegisters::default()
        })
    }

    /// The caller's registers as the call left them (RCX and R11 hold the
    /// return address and flags, as `syscall` leaves them).
    pub fn registers(&self) -> UserRegisters {
        UserRegisters {
            rax: self.rax,
            rbx: self.rbx,
            rcx: self.rcx,
            rdx: self.rdx,
            rsi: self.rsi,
            rdi: self.rdi,
            rbp: self.rbp,
            r8: self.r8,
            r9: self.r9,
            r10: self.r10,
            r11: self.r11,
            r12: self.r12,
            r13: self.r13,
            r14: self.r14,
            r15: self.r15,
            rip: self.rip,
            rsp: self.rsp,
            rflags: self.rflags,
        }
    }

    /// Makes the call return to user mode with exactly `registers` (a
    /// signal handler's entry, or `rt_sigreturn` going back to where the
    /// signal came): RIP must be a user address and the stack pointer
    /// at most the top of the user half, and only the flags a user may
    /// choose are taken (interrupts on, IOPL 0). The return then goes by
    /// `iretq`, which restores RCX and R11 too.
    pub fn set_user_registers(&mut self, registers: &UserRegisters) -> Result<(), EnterError> {
        if registers.rip >= USER_END || registers.rsp > USER_END {
            return Err(EnterError::NotUserAddress);
        }
        let UserRegisters {
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
        } = *registers;
        let (cs, ss) = (self.cs, self.ss);
        *self = SyscallFrame {
            r15,
            r14,
            r13,
            r12,
            rbp,
            rbx,
            r9,
            r8,
            r10,
            rdx,
            rsi,
            rdi,
            rax,
            rcx,
            r11,
            rip,
            cs,
            rflags: user_flags(rflags),
            rsp,
            ss,
        };
        Ok(())
    }

    /// Whether the return must restore every register (`iretq`) rather
    /// than let `sysret` put the return address and flags in RCX and R11.
    fn needs_full_return(&self) -> bool {
        self.rcx != self.rip || self.r11 != self.rflags
    }
}

/// `rflags` with only what a user may choose kept, interrupts enabled.
pub(crate) fn user_flags(rflags: u64) -> u64 {
    (rflags & USER_CHOSEN_FLAGS) | RFLAGS_INTERRUPT_ENABLE | RFLAGS_RESERVED_ONE
}

/// Handles a system call; runs on the calling thread's kernel stack with
/// interrupts enabled. It may end the thread instead of returning.
pub type SyscallHandler = fn(&mut SyscallFrame);

static SYSCALL_HANDLER: AtomicUsize = AtomicUsize::new(0);

/// Registers the system-call handler.
pub fn set_syscall_handler(handler: SyscallHandler) {
    SYSCALL_HANDLER.store(handler as usize, Ordering::Release);
}

global_asm!(
    r#"
    .section .text.hal_syscall, "ax"
    .global hal_syscall_entry
hal_syscall_entry:
    swapgs
    mov gs:[8], rsp
    mov rsp, gs:[0]
    /* The interrupt-return frame (SS, RSP, RFLAGS, CS, RIP), then RCX and
       R11 as the user has them (what `syscall` put there), then the rest. */
    push qword ptr gs:[24]
    push qword ptr gs:[8]
    push r11
    push qword ptr gs:[16]
    push rcx
    push r11
    push rcx
    push rax
    push rdi
    push rsi
    push rdx
    push r10
    push r8
    push r9
    push rbx
    push rbp
    push r12
    push r13
    push r14
    push r15
    mov rdi, rsp
    cld
    call {dispatch}
    /* al = 1: return by iretq (every register as the frame holds it).
       `pop` leaves the flags alone, so the test holds across them. */
    test al, al
    pop r15
    pop r14
    pop r13
    pop r12
    pop rbp
    pop rbx
    pop r9
    pop r8
    pop r10
    pop rdx
    pop rsi
    pop rdi
    pop rax
    pop rcx
    pop r11
    jnz 3f
    /* Interrupts are off (the dispatcher turned them off): nothing can
       run on the user stack between this and sysret. */
    mov rcx, [rsp]
    mov r11, [rsp + 16]
    mov rsp, [rsp + 24]
    swapgs
    sysretq
3:
    swapgs
    iretq

    .global hal_user_run
hal_user_run:
    /* rdi = the UserRegisters to start with, rsi = user cs, rdx = user ss,
       rcx = where to keep the kernel stack pointer that `hal_user_return`
       resumes at. Saves the callee-saved registers, builds an interrupt
       frame, loads every general register from the block (so no kernel
       value is left in any) and leaves. */
    push rbx
    push rbp
    push r12
    push r13
    push r14
    push r15
    mov [rcx], rsp
    push rdx
    push qword ptr [rdi + 128]
    push qword ptr [rdi + 136]
    push rsi
    push qword ptr [rdi + 120]
    mov rax, [rdi + 0]
    mov rbx, [rdi + 8]
    mov rcx, [rdi + 16]
    mov rdx, [rdi + 24]
    mov rsi, [rdi + 32]
    mov rbp, [rdi + 48]
    mov r8, [rdi + 56]
    mov r9, [rdi + 64]
    mov r10, [rdi + 72]
    mov r11, [rdi + 80]
    mov r12, [rdi + 88]
    mov r13, [rdi + 96]
    mov r14, [rdi + 104]
    mov r15, [rdi + 112]
    mov rdi, [rdi + 40]
    swapgs
    iretq

    .global hal_user_return
hal_user_return:
    /* rdi = the stack pointer `hal_user_run` kept, rsi = its result:
       resumes `hal_user_run`'s caller as if it had returned. */
    mov rsp, rdi
    mov rax, rsi
    pop r15
    pop r14
    pop r13
    pop r12
    pop rbp
    pop rbx
    ret

    .global hal_copy_user
hal_copy_user:
    /* rdi = destination, rsi = source, rdx = length; rax = 0, or 1 if a
       page fault hit the copy (the trap dispatcher resumes at the fix-up).
       Eight-byte moves, 64 bytes a round: string instructions (`rep
       movsb`) run one element per step under QEMU's TCG, which made a
       1 KiB read cost twice Linux's (Linux copies with such a loop on a
       CPU without fast strings, as QEMU's is). A loop of its own rather
       than a call of `memcpy` (`mem.rs`): the fix-up covers only faults
       between `hal_copy_user_start` and `hal_copy_user_end`. */
    stac
    .global hal_copy_user_start
hal_copy_user_start:
    cmp rdx, 64
    jb 5f
4:
    mov rax, [rsi]
    mov rcx, [rsi + 8]
    mov r8, [rsi + 16]
    mov r9, [rsi + 24]
    mov [rdi], rax
    mov [rdi + 8], rcx
    mov [rdi + 16], r8
    mov [rdi + 24], r9
    mov rax, [rsi + 32]
    mov rcx, [rsi + 40]
    mov r8, [rsi + 48]
    mov r9, [rsi + 56]
    mov [rdi + 32], rax
    mov [rdi + 40], rcx
    mov [rdi + 48], r8
    mov [rdi + 56], r9
    add rsi, 64
    add rdi, 64
    sub rdx, 64
    cmp rdx, 64
    jae 4b
5:
    cmp rdx, 8
    jb 6f
    mov rax, [rsi]
    mov [rdi], rax
    add rsi, 8
    add rdi, 8
    sub rdx, 8
    jmp 5b
6:
    test rdx, rdx
    jz 7f
    mov al, [rsi]
    mov [rdi], al
    inc rsi
    inc rdi
    dec rdx
    jmp 6b
7:
    .global hal_copy_user_end
hal_copy_user_end:
    clac
    xor eax, eax
    ret
    .global hal_copy_user_fixup
hal_copy_user_fixup:
    clac
    mov eax, 1
    ret
"#,
    dispatch = sym hal_syscall_dispatch,
);

extern "C" {
    fn hal_syscall_entry();
    fn hal_user_run(registers: *const UserRegisters, cs: u64, ss: u64, resume: *mut u64) -> u64;
    fn hal_user_return(resume_rsp: u64, result: u64) -> !;
    fn hal_copy_user(destination: *mut u8, source: *const u8, len: u64) -> u64;
    static hal_copy_user_start: u8;
    static hal_copy_user_end: u8;
    static hal_copy_user_fixup: u8;
}

/// Called by the entry stub on the kernel stack, interrupts disabled;
/// returns whether the return must be by `iretq`.
extern "C" fn hal_syscall_dispatch(frame: &mut SyscallFrame) -> bool {
    crate::cpu::enable_interrupts();
    let handler = SYSCALL_HANDLER.load(Ordering::Acquire);
    if handler == 0 {
        frame.set_result(-38i64 as u64); // ENOSYS
    } else {
        // SAFETY: non-zero values are only ever stored from a
        // `SyscallHandler`.
        let handler = unsafe { core::mem::transmute::<usize, SyscallHandler>(handler) };
        handler(frame);
    }
    crate::cpu::disable_interrupts();
    frame.needs_full_return()
}

/// Sets up `syscall`/`sysret` (EFER.SCE, STAR, LSTAR, SFMASK), points GS at
/// the CPU-local area, and turns on SMEP and SMAP where the CPU has them.
/// Call once, after `gdt::init`.
pub fn init() {
    let selectors = gdt::selectors();
    Star::write(
        selectors.user_code,
        selectors.user_data,
        selectors.kernel_code,
        selectors.kernel_data,
    )
    .expect("the GDT's segment order fits syscall/sysret");
    LStar::write(VirtAddr::new(hal_syscall_entry as *const () as u64));
    // Interrupts off, direction and trap flags clear, AC clear (so SMAP
    // applies) on entry.
    SFMask::write(
        RFlags::INTERRUPT_FLAG
            | RFlags::DIRECTION_FLAG
            | RFlags::TRAP_FLAG
            | RFlags::ALIGNMENT_CHECK,
    );
    // SAFETY: enabling `syscall` changes nothing until a user executes it,
    // and the handler is installed above.
    unsafe { Efer::update(|flags| *flags |= EferFlags::SYSTEM_CALL_EXTENSIONS) };
    // SAFETY: see `CpuLocalCell`; no user program runs yet, so the entry
    // stub cannot be reading these.
    unsafe {
        (*CPU_LOCAL.0.get()).user_cs = u64::from(selectors.user_code.0);
        (*CPU_LOCAL.0.get()).user_ss = u64::from(selectors.user_data.0);
    }
    GsBase::write(VirtAddr::new(CPU_LOCAL.0.get() as u64));
    KernelGsBase::write(VirtAddr::new(0));
    // SSE for user code (the kernel is built without it): no x87
    // emulation, FXSAVE/FXRSTOR and SSE exceptions enabled. The context
    // switch keeps each thread's registers.
    // SAFETY: changes only how x87/SSE instructions behave; the kernel
    // executes none but the context switch's FXSAVE/FXRSTOR.
    unsafe {
        x86_64::registers::control::Cr0::update(|flags| {
            flags.remove(x86_64::registers::control::Cr0Flags::EMULATE_COPROCESSOR);
            flags.insert(x86_64::registers::control::Cr0Flags::MONITOR_COPROCESSOR);
        });
        Cr4::update(|flags| {
            flags.insert(Cr4Flags::OSFXSR | Cr4Flags::OSXMMEXCPT_ENABLE);
        });
    }
    enable_extended_state();
    let features = core::arch::x86_64::__cpuid_count(7, 0).ebx;
    let mut cr4 = Cr4Flags::empty();
    if features & (1 << 7) != 0 {
        cr4 |= Cr4Flags::SUPERVISOR_MODE_EXECUTION_PROTECTION;
    }
    if features & (1 << 20) != 0 {
        cr4 |= Cr4Flags::SUPERVISOR_MODE_ACCESS_PREVENTION;
    }
    // SAFETY: SMEP only forbids the kernel to execute user pages, which it
    // never does; SMAP forbids it to touch them outside `hal_copy_user`,
    // which lifts it with `stac`.
    unsafe { Cr4::update(|flags| *flags |= cr4) };
}

/// Turns on XSAVE with x87, SSE and (where the CPU has it) AVX state in
/// XCR0, and has the context switch keep that state per thread. Without
/// XSAVE the switch keeps x87/SSE with FXSAVE.
fn enable_extended_state() {
    use x86_64::registers::xcontrol::{XCr0, XCr0Flags};
    const CPUID_XSAVE: u32 = 1 << 26;
    if core::arch::x86_64::__cpuid(1).ecx & CPUID_XSAVE == 0 {
        return;
    }
    // SAFETY: OSXSAVE only makes XSETBV/XGETBV and the XSAVE family usable;
    // XCR0 is set below before anything uses them.
    unsafe { Cr4::update(|flags| flags.insert(Cr4Flags::OSXSAVE)) };
    let supported = core::arch::x86_64::__cpuid_count(0xd, 0).eax;
    let mut enabled = XCr0Flags::X87 | XCr0Flags::SSE;
    if supported & XCr0Flags::AVX.bits() as u32 != 0 && avx_is_whole() {
        enabled |= XCr0Flags::AVX;
    }
    // SAFETY: x87 and SSE are always valid; AVX only where CPUID says the
    // CPU has it. The kernel itself uses none of these registers.
    unsafe { XCr0::write(enabled) };
    // The XSAVE area size for what XCR0 now enables.
    let area_bytes = core::arch::x86_64::__cpuid_count(0xd, 0).ebx;
    crate::context::enable_xsave(u64::from(area_bytes));
}

/// Whether the processor has what every processor with AVX has: SSE3,
/// SSSE3, SSE4.1, SSE4.2 and POPCNT. Compilers assume it (GCC's `-mavx`
/// implies SSE4.2), so AVX code uses the VEX forms of SSE4 instructions;
/// an emulated CPU model that offers AVX without them (QEMU's `qemu64,+avx`)
/// makes such programs die of SIGILL on an instruction they were told
/// they may use. There, AVX state stays off in XCR0, and programs, which
/// check XCR0 before they use AVX, run their SSE code instead.
fn avx_is_whole() -> bool {
    const SSE3: u32 = 1 << 0;
    const SSSE3: u32 = 1 << 9;
    const SSE4_1: u32 = 1 << 19;
    const SSE4_2: u32 = 1 << 20;
    const POPCNT: u32 = 1 << 23;
    const NEEDED: u32 = SSE3 | SSSE3 | SSE4_1 | SSE4_2 | POPCNT;
    core::arch::x86_64::__cpuid(1).ecx & NEEDED == NEEDED
}

/// Whether the CPU's AVX state is enabled for user programs (and kept
/// across context switches).
pub fn avx_enabled() -> bool {
    use x86_64::registers::xcontrol::{XCr0, XCr0Flags};
    crate::context::saves_extended_state() && XCr0::read().contains(XCr0Flags::AVX)
}

/// Whether SMEP and SMAP are on.
pub fn protections() -> (bool, bool) {
    let flags = Cr4::read();
    (
        flags.contains(Cr4Flags::SUPERVISOR_MODE_EXECUTION_PROTECTION),
        flags.contains(Cr4Flags::SUPERVISOR_MODE_ACCESS_PREVENTION),
    )
}

/// Where a user program starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserEntry {
    /// First instruction.
    pub rip: u64,
    /// Initial stack pointer.
    pub rsp: u64,
}

/// RFLAGS bits a user may choose: CF, PF, AF, ZF, SF, DF, OF.
const USER_CHOSEN_FLAGS: u64 = 0x1 | 0x4 | 0x10 | 0x40 | 0x80 | 0x400 | 0x800;

impl From<UserEntry> for UserRegisters {
    fn from(entry: UserEntry) -> Self {
        UserRegisters {
            rip: entry.rip,
            rsp: entry.rsp,
            ..UserRegisters::default()
        }
    }
}

/// Why user mode could not be entered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnterError {
    /// The entry point or stack is not in the user half.
    NotUserAddress,
    /// The running thread has no kernel stack of its own (the boot thread).
    NoKernelStack,
}

/// Runs this thread in ring 3 from `entry`, with interrupts enabled and
/// every other register cleared; see [`run_with`].
pub fn run(entry: UserEntry) -> Result<u64, EnterError> {
    run_with(UserRegisters::from(entry))
}

/// Runs this thread in ring 3 with `registers` (flags sanitised: see
/// [`UserRegisters::rflags`]) until the kernel ends the user program with
/// [`end`]; returns the value given there. Meanwhile the thread comes back
/// into the kernel only through system calls, traps and interrupts, on its
/// own kernel stack.
///
/// The caller must have made the thread's address space map the entry
/// (see `context::set_address_space`); if it does not, the first
/// instruction faults in ring 3, which the trap handler sees as the
/// program's fault.
pub fn run_with(mut registers: UserRegisters) -> Result<u64, EnterError> {
    if registers.rip >= USER_END || registers.rsp > USER_END {
        return Err(EnterError::NotUserAddress);
    }
    registers.rflags = user_flags(registers.rflags);
    let resume = crate::context::current_user_resume_slot().ok_or(EnterError::NoKernelStack)?;
    let selectors = gdt::selectors();
    let were_enabled = crate::cpu::are_interrupts_enabled();
    crate::cpu::disable_interrupts();
    // Entries from user mode (system calls, traps) must land below this
    // frame and what `hal_user_run` pushes (at most 96 bytes), or they would
    // overwrite the state `end` resumes: they get the stack from here down.
    let here: u64;
    // SAFETY: reads the stack pointer; no memory is touched.
    unsafe {
        core::arch::asm!("mov {}, rsp", out(reg) here, options(nomem, nostack, preserves_flags))
    };
    crate::context::set_user_entry_top((here - USER_RUN_FRAME_BYTES) & !0xf);
    // The target is ring 3 (user selectors, RPL 3) at a user-half address
    // with IOPL 0: no kernel privileges, no kernel memory. Traps from there
    // land on this thread's own kernel stack (checked above); interrupts
    // stay off until `iretq` loads the new flags.
    // SAFETY: as just said; `registers` is read before the switch, `resume`
    // is this thread's own slot, and this frame stays live until `end`
    // resumes here (only entries from user mode run below it).
    let result = unsafe {
        hal_user_run(
            &registers,
            u64::from(selectors.user_code.0),
            u64::from(selectors.user_data.0),
            resume,
        )
    };
    crate::context::clear_user_resume_slot();
    if were_enabled {
        crate::cpu::enable_interrupts();
    }
    Ok(result)
}

/// Ends the user program of the running thread: [`run`] returns `result`.
/// Called by a system call (exit) or the trap handler (a fault in ring 3),
/// on the thread's kernel stack. The kernel frames between `run` and here
/// are abandoned without running their destructors (as `mem::forget`
/// would): callers hold no locks or resources at this point.
///
/// Returns only if the running thread is not in [`run`].
pub fn end(result: u64) {
    let Some(resume_rsp) = crate::context::current_user_resume_rsp() else {
        return;
    };
    crate::cpu::disable_interrupts();
    // `resume_rsp` was stored by `hal_user_run` on this thread's own kernel
    // stack, in `run`'s frame, still live above every frame of the entry
    // from user mode; interrupts are off, so nothing runs on those frames.
    // SAFETY: restoring it resumes `run`, as above.
    unsafe { hal_user_return(resume_rsp, result) }
}

/// Sets the running thread's FS base, the pointer user code reaches its
/// thread-local storage through (`arch_prctl(ARCH_SET_FS)`); it must be a
/// user-half address. The context switch keeps it per thread.
pub fn set_fs_base(value: u64) -> Result<(), UserFault> {
    if value >= USER_END {
        return Err(UserFault);
    }
    crate::context::set_current_fs_base(value);
    Ok(())
}

/// The running thread's FS base.
pub fn fs_base() -> u64 {
    crate::context::current_fs_base()
}

/// A user address that could not be read or written: outside the user
/// half, or not mapped with the needed access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserFault;

fn check_user_range(address: u64, len: usize) -> Result<(), UserFault> {
    match address.checked_add(len as u64) {
        Some(end) if end <= USER_END => Ok(()),
        _ => Err(UserFault),
    }
}

/// Asked when a user copy faults: may the fault at `address` (with the
/// page-fault error code) be resolved, by mapping the page or changing its
/// protection? The kernel answers with its `Translation` events, so a
/// system call's buffer in a demand-zero or copy-on-write page works as it
/// would for the program itself.
pub type CopyFaultResolver = fn(address: u64, error_code: u64) -> bool;

static COPY_FAULT_RESOLVER: AtomicUsize = AtomicUsize::new(0);
/// The address and error code of the last fault inside a user copy (one
/// CPU; written by the trap dispatcher, read by the copy that faulted).
static LAST_COPY_FAULT: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// Installs the resolver user copies ask when they fault.
pub fn set_copy_fault_resolver(resolver: CopyFaultResolver) {
    COPY_FAULT_RESOLVER.store(resolver as usize, Ordering::Release);
}

/// Records a fault inside a user copy (the trap dispatcher).
pub(crate) fn note_copy_fault(address: u64, error_code: u64) {
    LAST_COPY_FAULT[0].store(address, Ordering::Relaxed);
    LAST_COPY_FAULT[1].store(error_code, Ordering::Relaxed);
}

/// Runs `attempt` (a user copy of `len` bytes: 0 if done, 1 if it
/// faulted) until it succeeds, asking the resolver after each fault; gives
/// up when a fault is not resolved, or after one retry per page (a
/// resolver that claims success without mapping anything cannot loop).
fn copy_resolving_faults(len: usize, mut attempt: impl FnMut() -> u64) -> Result<(), UserFault> {
    let retries = (len as u64).div_ceil(4096) + 1;
    for _ in 0..=retries {
        if attempt() == 0 {
            return Ok(());
        }
        let resolver = COPY_FAULT_RESOLVER.load(Ordering::Acquire);
        if resolver == 0 {
            return Err(UserFault);
        }
        // SAFETY: non-zero values are only ever stored from a
        // `CopyFaultResolver`.
        let resolver = unsafe { core::mem::transmute::<usize, CopyFaultResolver>(resolver) };
        let address = LAST_COPY_FAULT[0].load(Ordering::Relaxed);
        let error_code = LAST_COPY_FAULT[1].load(Ordering::Relaxed);
        if !resolver(address, error_code) {
            return Err(UserFault);
        }
    }
    Err(UserFault)
}

/// Copies `destination.len()` bytes from user address `source` of the
/// running thread's address space.
pub fn copy_from_user(destination: &mut [u8], source: u64) -> Result<(), UserFault> {
    check_user_range(source, destination.len())?;
    let len = destination.len();
    copy_resolving_faults(len, || {
        // The destination is a live kernel buffer of the given length; the
        // source lies in the user half, where a bad address faults inside
        // `hal_copy_user` and returns 1 (`fixup_user_copy`).
        // SAFETY: no kernel memory is reachable through a user-half address.
        unsafe { hal_copy_user(destination.as_mut_ptr(), source as *const u8, len as u64) }
    })
}

/// Copies `source` to user address `destination` of the running thread's
/// address space.
pub fn copy_to_user(destination: u64, source: &[u8]) -> Result<(), UserFault> {
    check_user_range(destination, source.len())?;
    copy_resolving_faults(source.len(), || {
        // SAFETY: as in `copy_from_user`, roles swapped: writes go only to
        // user-half addresses, and a fault returns 1.
        unsafe { hal_copy_user(destination as *mut u8, source.as_ptr(), source.len() as u64) }
    })
}

/// If a kernel-mode page fault at `rip` hit a user copy, the address the
/// copy resumes at (its fix-up, which reports the fault).
pub(crate) fn fixup_user_copy(rip: u64) -> Option<u64> {
    let start = core::ptr::addr_of!(hal_copy_user_start) as u64;
    let end = core::ptr::addr_of!(hal_copy_user_end) as u64;
    (start..end)
        .contains(&rip)
        .then_some(core::ptr::addr_of!(hal_copy_user_fixup) as u64)
}

/// Offset of MXCSR in an `fxsave` area, and of the mask of the MXCSR bits
/// the CPU supports.
const MXCSR_OFFSET: usize = 24;
const MXCSR_MASK_OFFSET: usize = 28;
/// The mask to assume when the CPU reports none (Intel SDM vol. 1, 11.6.6).
const DEFAULT_MXCSR_MASK: u32 = 0xffbf;

/// A register state [`restore_fpu`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadFpuState;

/// The running thread's x87 and SSE registers: the user program's, since
/// the kernel itself uses none (a context switch in between keeps them).
pub fn save_fpu() -> FpuState {
    let mut state = FpuState([0; FPU_STATE_BYTES]);
    // SAFETY: `fxsave64` writes 512 bytes at a 16-byte aligned address;
    // `state` is exactly that (`align(16)`), owned here.
    unsafe {
        core::arch::asm!(
            "fxsave64 [{}]",
            in(reg) state.0.as_mut_ptr(),
            options(nostack, preserves_flags)
        )
    };
    state
}

/// The MXCSR bits this CPU supports.
fn supported_mxcsr_bits() -> u32 {
    static MASK: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);
    let known = MASK.load(Ordering::Relaxed);
    if known != 0 {
        return known;
    }
    let state = save_fpu();
    let reported = u32::from_le_bytes([
        state.0[MXCSR_MASK_OFFSET],
        state.0[MXCSR_MASK_OFFSET + 1],
        state.0[MXCSR_MASK_OFFSET + 2],
        state.0[MXCSR_MASK_OFFSET + 3],
    ]);
    let mask = if reported == 0 {
        DEFAULT_MXCSR_MASK
    } else {
        reported
    };
    MASK.store(mask, Ordering::Relaxed);
    mask
}

/// Loads the running thread's x87 and SSE registers from `state` (a
/// signal handler returning). An MXCSR with bits the CPU does not support
/// would make `fxrstor` fault in the kernel, so it is refused.
pub fn restore_fpu(state: &FpuState) -> Result<(), BadFpuState> {
    let mxcsr = u32::from_le_bytes([
        state.0[MXCSR_OFFSET],
        state.0[MXCSR_OFFSET + 1],
        state.0[MXCSR_OFFSET + 2],
        state.0[MXCSR_OFFSET + 3],
    ]);
    if mxcsr & !supported_mxcsr_bits() != 0 {
        return Err(BadFpuState);
    }
    // The kernel uses no x87/SSE register: only the user's state changes.
    // SAFETY: `fxrstor64` reads 512 bytes at a 16-byte aligned address (as
    // `state` is); its one fault, MXCSR's reserved bits, was ruled out above.
    unsafe {
        core::arch::asm!(
            "fxrstor64 [{}]",
            in(reg) state.0.as_ptr(),
            options(nostack, preserves_flags, readonly)
        )
    };
    Ok(())
}
