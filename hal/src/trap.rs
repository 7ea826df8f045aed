//! Traps: the IDT, one assembly entry stub per vector, and dispatch to the
//! handlers the kernel registers.
//!
//! Every one of the 256 vectors gets a 16-byte stub that pushes a dummy error
//! code (for vectors where the CPU pushes none), the vector number, and jumps
//! to a common path that saves all general registers into a [`TrapFrame`] on
//! the current stack and calls [`hal_trap_dispatch`]. Handlers may change the
//! frame (e.g. to skip an instruction); it is restored on return.
//!
//! CPU exceptions (vectors 0-31) go to the kernel's exception handler; if none
//! is registered the exception is reported and the machine stops. Double
//! faults, NMIs and machine checks run on their own IST stacks (see `gdt`).

use core::{
    arch::global_asm,
    fmt,
    sync::atomic::{AtomicUsize, Ordering},
};

use x86_64::{
    instructions::{
        segmentation::{Segment, CS},
        tables::lidt,
    },
    registers::control::Cr2,
    structures::DescriptorTablePointer,
    VirtAddr,
};

use crate::gdt;

/// Number of CPU exception vectors.
pub const EXCEPTION_VECTORS: u8 = 32;
/// Vector of the page-fault exception.
pub const PAGE_FAULT_VECTOR: u8 = 14;
/// Vector of the non-maskable interrupt (the watchdog's, see `watchdog`).
const NMI_VECTOR: u64 = 2;
/// NMI, double fault, machine check: their handlers never run with
/// interrupts on.
const ABORT_VECTORS: [u64; 3] = [NMI_VECTOR, 8, 18];

/// Registers saved on trap entry, in the order the entry stub pushes them.
#[repr(C)]
#[derive(Debug, Clone)]
#[allow(missing_docs)] // register names
pub struct TrapFrame {
    pub r15: u64,
    pub r14: u64,
    pub r13: u64,
    pub r12: u64,
    pub r11: u64,
    pub r10: u64,
    pub r9: u64,
    pub r8: u64,
    pub rbp: u64,
    pub rdi: u64,
    pub rsi: u64,
    pub rdx: u64,
    pub rcx: u64,
    pub rbx: u64,
    pub rax: u64,
    /// The vector that was raised.
    pub vector: u64,
    /// The error code the CPU pushed, or 0.
    pub error_code: u64,
    // The interrupt frame `iretq` restores: private, so safe code can read
    // it but never point the return at another address, privilege level,
    // stack or flags (IOPL, interrupt flag).
    rip: u64,
    cs: u64,
    rflags: u64,
    rsp: u64,
    ss: u64,
}

impl TrapFrame {
    /// Where the trapped code resumes.
    pub fn rip(&self) -> u64 {
        self.rip
    }

    /// The trapped code's code segment selector (its low bits: the
    /// privilege level).
    pub fn cs(&self) -> u64 {
        self.cs
    }

    /// The trapped code's flags.
    pub fn rflags(&self) -> u64 {
        self.rflags
    }

    /// The trapped code's stack pointer.
    pub fn rsp(&self) -> u64 {
        self.rsp
    }

    /// The trapped code's stack segment selector.
    pub fn ss(&self) -> u64 {
        self.ss
    }

    /// The faulting address of a page fault (CR2); meaningful only while
    /// handling vector 14. For a fault in user mode, the value read when
    /// the trap arrived (its handler runs with interrupts on, and a
    /// preempting thread's fault would change CR2).
    pub fn fault_address(&self) -> u64 {
        if self.is_from_user() && self.vector == u64::from(PAGE_FAULT_VECTOR) {
            crate::context::user_fault_address()
        } else {
            Cr2::read_raw()
        }
    }

    /// Whether the trap came from user mode (CPL 3).
    pub fn is_from_user(&self) -> bool {
        self.cs & 3 == 3
    }

    /// The trapped user program's registers (meaningful for a trap from
    /// user mode).
    pub fn user_registers(&self) -> crate::user::UserRegisters {
        crate::user::UserRegisters {
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

    /// Makes a trap from user mode return to the user program with
    /// `registers` instead (a signal handler's entry): refused for a trap
    /// from the kernel, for a RIP outside the user half or a stack
    /// pointer above it. Only the flags a user may choose are taken; the
    /// segments stay the user's.
    pub fn set_user_registers(
        &mut self,
        registers: &crate::user::UserRegisters,
    ) -> Result<(), crate::user::EnterError> {
        if !self.is_from_user() {
            return Err(crate::user::EnterError::NotUserAddress);
        }
        if registers.rip >= crate::user::USER_END || registers.rsp > crate::user::USER_END {
            return Err(crate::user::EnterError::NotUserAddress);
        }
        self.rax = registers.rax;
        self.rbx = registers.rbx;
        self.rcx = registers.rcx;
        self.rdx = registers.rdx;
        self.rsi = registers.rsi;
        self.rdi = registers.rdi;
        self.rbp = registers.rbp;
        self.r8 = registers.r8;
        self.r9 = registers.r9;
        self.r10 = registers.r10;
        self.r11 = registers.r11;
        self.r12 = registers.r12;
        self.r13 = registers.r13;
        self.r14 = registers.r14;
        self.r15 = registers.r15;
        self.rip = registers.rip;
        self.rsp = registers.rsp;
        self.rflags = crate::user::user_flags(registers.rflags);
        Ok(())
    }

    /// The name of the exception, for vectors below 32.
    pub fn exception_name(&self) -> &'static str {
        exception_name(self.vector)
    }
}

/// A readable name for exception vector `vector` (Intel SDM vol. 3, table 6-1).
pub fn exception_name(vector: u64) -> &'static str {
    const NAMES: [&str; 32] = [
        "divide error",
        "debug",
        "non-maskable interrupt",
        "breakpoint",
        "overflow",
        "bound range exceeded",
        "invalid opcode",
        "device not available",
        "double fault",
        "coprocessor segment overrun",
        "invalid TSS",
        "segment not present",
        "stack-segment fault",
        "general protection fault",
        "page fault",
        "reserved (15)",
        "x87 floating-point error",
        "alignment check",
        "machine check",
        "SIMD floating-point exception",
        "virtualization exception",
        "control protection exception",
        "reserved (22)",
        "reserved (23)",
        "reserved (24)",
        "reserved (25)",
        "reserved (26)",
        "reserved (27)",
        "hypervisor injection exception",
        "VMM communication exception",
        "security exception",
        "reserved (31)",
    ];
    NAMES.get(vector as usize).copied().unwrap_or("interrupt")
}

impl fmt::Display for TrapFrame {
    /// The full exception report: vector, name, error code, RIP, CR2 and all
    /// general registers.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "EXCEPTION: {} (vector {}) error_code={:#x} RIP={:#018x} CR2={:#018x}",
            self.exception_name(),
            self.vector,
            self.error_code,
            self.rip,
            self.fault_address()
        )?;
        writeln!(
            f,
            "  RAX={:#018x} RBX={:#018x} RCX={:#018x} RDX={:#018x}",
            self.rax, self.rbx, self.rcx, self.rdx
        )?;
        writeln!(
            f,
            "  RSI={:#018x} RDI={:#018x} RBP={:#018x} RSP={:#018x}",
            self.rsi, self.rdi, self.rbp, self.rsp
        )?;
        writeln!(
            f,
            "  R8 ={:#018x} R9 ={:#018x} R10={:#018x} R11={:#018x}",
            self.r8, self.r9, self.r10, self.r11
        )?;
        writeln!(
            f,
            "  R12={:#018x} R13={:#018x} R14={:#018x} R15={:#018x}",
            self.r12, self.r13, self.r14, self.r15
        )?;
        write!(
            f,
            "  CS={:#06x} SS={:#06x} RFLAGS={:#010x}",
            self.cs, self.ss, self.rflags
        )
    }
}

// Vectors for which the CPU pushes an error code: 8, 10-14, 17, 21, 29, 30.
global_asm!(
    r#"
    .section .text.trap_stubs, "ax"
    .p2align 4
    .global hal_trap_stubs
hal_trap_stubs:
    .set vector, 0
    .rept 256
    .p2align 4
    .if (vector == 8) || ((vector >= 10) && (vector <= 14)) || (vector == 17) || (vector == 21) || (vector == 29) || (vector == 30)
    .else
    push 0
    .endif
    push vector
    jmp hal_trap_common
    .set vector, vector + 1
    .endr

hal_trap_common:
    /* From ring 3 (the CS the CPU pushed, above vector and error code):
       GS becomes the kernel's (see `user`). */
    test qword ptr [rsp + 24], 3
    jz 1f
    swapgs
1:
    push rax
    push rbx
    push rcx
    push rdx
    push rsi
    push rdi
    push rbp
    push r8
    push r9
    push r10
    push r11
    push r12
    push r13
    push r14
    push r15
    mov rdi, rsp
    cld
    call {dispatch}
    pop r15
    pop r14
    pop r13
    pop r12
    pop r11
    pop r10
    pop r9
    pop r8
    pop rbp
    pop rdi
    pop rsi
    pop rdx
    pop rcx
    pop rbx
    pop rax
    add rsp, 16
    /* Back to ring 3: GS becomes the user's again. */
    test qword ptr [rsp + 8], 3
    jz 2f
    swapgs
2:
    iretq
"#,
    dispatch = sym hal_trap_dispatch,
);

extern "C" {
    static hal_trap_stubs: u8;
}

/// Bytes between consecutive entry stubs (`.p2align 4` above).
const STUB_STRIDE: u64 = 16;

/// A handler for a trap: gets the saved registers, may change them.
pub type TrapHandler = fn(&mut TrapFrame);

/// Handler per vector, as `fn` addresses (0 = none).
static HANDLERS: [AtomicUsize; 256] = [const { AtomicUsize::new(0) }; 256];
/// Handler for all CPU exceptions (0 = none: report and stop).
static EXCEPTION_HANDLER: AtomicUsize = AtomicUsize::new(0);

/// Registers the handler for every CPU exception (vectors 0-31). It runs
/// with interrupts on for an exception in user mode (but NMI, double
/// fault and machine check), off for one in the kernel.
pub fn set_exception_handler(handler: TrapHandler) {
    EXCEPTION_HANDLER.store(handler as usize, Ordering::Release);
}

static RETURN_TO_USER_HANDLER: AtomicUsize = AtomicUsize::new(0);

/// Registers what runs after every interrupt taken in user mode, just
/// before the return to it (where the kernel acts on a kill, as it does
/// after a system call), with interrupts on.
pub fn set_return_to_user_handler(handler: TrapHandler) {
    RETURN_TO_USER_HANDLER.store(handler as usize, Ordering::Release);
}

/// Registers the handler for interrupt `vector` (32-255).
pub fn set_interrupt_handler(vector: u8, handler: TrapHandler) {
    assert!(
        vector >= EXCEPTION_VECTORS,
        "vector {vector} is a CPU exception"
    );
    HANDLERS[vector as usize].store(handler as usize, Ordering::Release);
}

fn load_handler(slot: &AtomicUsize) -> Option<TrapHandler> {
    let address = slot.load(Ordering::Acquire);
    // SAFETY: non-zero values are only ever stored from a `TrapHandler`.
    (address != 0).then(|| unsafe { core::mem::transmute::<usize, TrapHandler>(address) })
}

/// Called by the common entry path with the saved registers.
extern "C" fn hal_trap_dispatch(frame: &mut TrapFrame) {
    // A page fault inside a user-memory copy is the copy's to report: it
    // resumes at its fix-up, which returns the fault to its caller.
    if frame.vector == u64::from(PAGE_FAULT_VECTOR) && !frame.is_from_user() {
        if let Some(fixup) = crate::user::fixup_user_copy(frame.rip) {
            crate::user::note_copy_fault(frame.fault_address(), frame.error_code);
            frame.rip = fixup;
            return;
        }
    }
    if frame.vector == NMI_VECTOR && crate::watchdog::on_nmi(frame) {
        return;
    }
    if frame.vector < u64::from(EXCEPTION_VECTORS) {
        // An exception in user mode interrupted no kernel code: its handler
        // (demand paging, a signal, ending the program) runs with
        // interrupts on, as a system call does, so that a lock a
        // preempted thread holds is waited for, not spun on for ever.
        // Aborts keep them off.
        let with_interrupts = frame.is_from_user() && !ABORT_VECTORS.contains(&frame.vector);
        if with_interrupts && frame.vector == u64::from(PAGE_FAULT_VECTOR) {
            crate::context::set_user_fault_address(Cr2::read_raw());
        }
        match load_handler(&EXCEPTION_HANDLER) {
            Some(handler) => {
                if with_interrupts {
                    crate::cpu::enable_interrupts();
                }
                handler(frame);
                crate::cpu::disable_interrupts();
            }
            None => {
                crate::console::emergency_write_fmt(format_args!("{frame}\n"));
                crate::qemu::exit(crate::qemu::ExitCode::Failure);
            }
        }
        return;
    }
    if let Some(handler) = load_handler(&HANDLERS[frame.vector as usize]) {
        handler(frame);
    }
    if frame.is_from_user() {
        if let Some(handler) = load_handler(&RETURN_TO_USER_HANDLER) {
            // The interrupt came from user mode: no kernel code was
            // interrupted, so what the kernel does before the return
            // (signals, a stop, a kill) runs with interrupts on, as a
            // system call does and as Linux's exit to user mode does. With
            // them off, it could spin for ever on a lock that a preempted
            // thread holds (a hard lockup the watchdog caught under
            // stress-ng's sigsuspend). They go off again before the
            // return path restores the user's registers and GS.
            crate::cpu::enable_interrupts();
            handler(frame);
            crate::cpu::disable_interrupts();
        }
    }
}

/// One IDT gate (Intel SDM vol. 3, figure 6-8).
#[repr(C)]
#[derive(Clone, Copy)]
struct Gate {
    offset_low: u16,
    selector: u16,
    ist: u8,
    type_attributes: u8,
    offset_middle: u16,
    offset_high: u32,
    reserved: u32,
}

/// Present, DPL 0, 64-bit interrupt gate (interrupts disabled on entry).
const INTERRUPT_GATE: u8 = 0x8e;
/// The same, DPL 3: `int N` from user mode may raise it.
const USER_INTERRUPT_GATE: u8 = 0xee;
/// The breakpoint exception's vector (`int3`).
const BREAKPOINT_VECTOR: usize = 3;

static IDT: spin::Once<[Gate; 256]> = spin::Once::new();

/// Builds and loads the IDT. Call once, after `gdt::init`.
pub fn init() {
    let stubs = core::ptr::addr_of!(hal_trap_stubs) as u64;
    let code_selector = <CS as Segment>::get_reg().0;
    let idt = IDT.call_once(|| {
        let mut gates = [Gate {
            offset_low: 0,
            selector: 0,
            ist: 0,
            type_attributes: 0,
            offset_middle: 0,
            offset_high: 0,
            reserved: 0,
        }; 256];
        for (vector, gate) in gates.iter_mut().enumerate() {
            let address = stubs + vector as u64 * STUB_STRIDE;
            gate.offset_low = address as u16;
            gate.offset_middle = (address >> 16) as u16;
            gate.offset_high = (address >> 32) as u32;
            gate.selector = code_selector;
            gate.type_attributes = if vector == BREAKPOINT_VECTOR {
                // `int3` from user mode is a breakpoint (SIGTRAP), as on
                // Linux; a ring-0 gate would turn it into a #GP.
                USER_INTERRUPT_GATE
            } else {
                INTERRUPT_GATE
            };
            gate.ist = match vector {
                2 => gdt::NMI_IST,
                8 => gdt::DOUBLE_FAULT_IST,
                18 => gdt::MACHINE_CHECK_IST,
                _ => 0,
            };
        }
        gates
    });
    let pointer = DescriptorTablePointer {
        limit: (core::mem::size_of::<[Gate; 256]>() - 1) as u16,
        base: VirtAddr::new(idt.as_ptr() as u64),
    };
    // SAFETY: the IDT is a 'static array of valid gates pointing at the entry
    // stubs above, which preserve all state and return with iretq.
    unsafe { lidt(&pointer) };
}

/// Raises a breakpoint exception (`int3`), to test trap reporting.
pub fn breakpoint() {
    x86_64::instructions::interrupts::int3();
}
