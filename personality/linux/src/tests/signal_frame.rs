//! `signal_frame`: the frame pushed to run a handler and read back at
//! `rt_sigreturn`, on the fake user memory.

use hal::registers::{FpuState, UserRegisters, FPU_STATE_BYTES};
use linux_abi::{
    sigaction::SignalStack,
    signal::*,
    ucontext::{RT_SIGFRAME_BYTES, RT_SIGFRAME_SIGINFO_AT, RT_SIGFRAME_UCONTEXT_AT},
};
use vfs::Errno;

use super::*;
use crate::{
    signal::{Handler, SignalInfo, Source},
    signal_frame::{enter_handler, return_from_handler, FaultDetails},
};

/// The top of the interrupted code's stack.
const STACK_TOP: u64 = MAPPED + 0xc000;
/// An alternate signal stack inside the mapped memory.
const ALTERNATE: SignalStack = SignalStack {
    base: MAPPED + 0x1000,
    flags: 0,
    size: 0x4000,
};
const NO_ALTERNATE: SignalStack = SignalStack {
    base: 0,
    flags: SS_DISABLE,
    size: 0,
};

fn interrupted_registers(rsp: u64) -> UserRegisters {
    UserRegisters {
        rax: 1,
        rbx: 2,
        rcx: 3,
        rdx: 4,
        rsi: 5,
        rdi: 6,
        rbp: 7,
        r8: 8,
        r9: 9,
        r10: 10,
        r11: 11,
        r12: 12,
        r13: 13,
        r14: 14,
        r15: 15,
        rip: 0x40_1234,
        rsp,
        // The direction and trap flags, which a handler starts without.
        rflags: 0x202 | 0x400 | 0x100,
    }
}

fn fpu() -> FpuState {
    let mut state = FpuState([0; FPU_STATE_BYTES]);
    for (index, byte) in state.0.iter_mut().enumerate() {
        *byte = (index % 253) as u8;
    }
    state
}

fn handler(flags: u64) -> Handler {
    Handler {
        address: 0x40_2000,
        flags: flags | SA_RESTORER,
        restorer: 0x40_3000,
        mask: 0,
    }
}

fn info() -> SignalInfo {
    SignalInfo {
        signal: SIGSEGV,
        source: Source::Fault {
            code: 1,
            address: 0xdead_0000,
        },
    }
}

fn enter(
    registers: &UserRegisters,
    handler: &Handler,
    alternate: SignalStack,
) -> Result<UserRegisters, Errno> {
    let fault = FaultDetails {
        vector: 14,
        error_code: 6,
        address: 0xdead_0000,
    };
    enter_handler(
        registers,
        &fpu(),
        &info(),
        Some(fault),
        handler,
        bit(SIGUSR1),
        alternate,
    )
}

#[test]
fn a_handler_without_a_return_trampoline_is_efault() {
    let _fixture = Fixture::new();
    let registers = interrupted_registers(STACK_TOP);
    let mut no_restorer = handler(0);
    no_restorer.flags &= !SA_RESTORER;
    assert_eq!(
        enter(&registers, &no_restorer, NO_ALTERNATE),
        Err(Errno::EFAULT)
    );
    let mut null_restorer = handler(0);
    null_restorer.restorer = 0;
    assert_eq!(
        enter(&registers, &null_restorer, NO_ALTERNATE),
        Err(Errno::EFAULT)
    );
}

#[test]
fn a_stack_that_cannot_take_the_frame_is_efault() {
    let _fixture = Fixture::new();
    for rsp in [
        UNMAPPED + 0x4000,
        100,
        0,
        MAPPED + 0x200,
        KERNEL_ADDRESS + 0x10000,
    ] {
        assert_eq!(
            enter(&interrupted_registers(rsp), &handler(0), NO_ALTERNATE),
            Err(Errno::EFAULT),
            "stack pointer {rsp:#x}"
        );
    }
}

#[test]
fn the_handler_starts_on_an_aligned_frame_below_the_red_zone() {
    let _fixture = Fixture::new();
    let registers = interrupted_registers(STACK_TOP - 3);
    let entry = enter(&registers, &handler(0), NO_ALTERNATE).expect("a frame");
    assert_eq!(entry.rip, 0x40_2000);
    assert_eq!(entry.rdi, u64::from(SIGSEGV));
    assert_eq!(entry.rsi, entry.rsp + RT_SIGFRAME_SIGINFO_AT as u64);
    assert_eq!(entry.rdx, entry.rsp + RT_SIGFRAME_UCONTEXT_AT as u64);
    // As after a `call`: 16-byte aligned plus the return address.
    assert_eq!(entry.rsp % 16, 8);
    assert!(entry.rsp + RT_SIGFRAME_BYTES as u64 <= registers.rsp - 128);
    assert_eq!(entry.rflags & (0x400 | 0x100), 0);
    assert_eq!(entry.rbx, registers.rbx, "other registers are kept");
    assert_eq!(peek_u64(entry.rsp), 0x40_3000, "returns to the restorer");
    // `siginfo`: the signal and the fault address (at 16).
    assert_eq!(peek_u32(entry.rsi), u32::from(SIGSEGV));
    assert_eq!(peek_u64(entry.rsi + 16), 0xdead_0000);
}

#[test]
fn rt_sigreturn_gets_back_what_entering_the_handler_saved() {
    let _fixture = Fixture::new();
    let registers = interrupted_registers(STACK_TOP);
    let entry = enter(&registers, &handler(0), NO_ALTERNATE).expect("a frame");
    // The handler's `ret` took the return address.
    let back = return_from_handler(entry.rsp + 8).expect("the frame");
    assert_eq!(back.registers, registers);
    assert_eq!(back.mask, bit(SIGUSR1));
    assert_eq!(back.fpu.expect("an FPU state").0, fpu().0);
}

#[test]
fn the_frame_goes_on_the_alternate_stack_when_asked_and_not_on_it_already() {
    let _fixture = Fixture::new();
    let registers = interrupted_registers(STACK_TOP);
    let entry = enter(&registers, &handler(SA_ONSTACK), ALTERNATE).expect("a frame");
    assert!(entry.rsp >= ALTERNATE.base && entry.rsp < ALTERNATE.base + ALTERNATE.size);
    // Already on the alternate stack: below where it is, not at its top.
    let on_it = interrupted_registers(ALTERNATE.base + 0x3000);
    let nested = enter(&on_it, &handler(SA_ONSTACK), ALTERNATE).expect("a frame");
    assert!(nested.rsp < on_it.rsp - 128);
    // Without SA_ONSTACK, or with the stack disabled: the usual stack.
    let plain = enter(&registers, &handler(0), ALTERNATE).expect("a frame");
    assert!(plain.rsp > ALTERNATE.base + ALTERNATE.size);
    let disabled = SignalStack {
        flags: SS_DISABLE,
        ..ALTERNATE
    };
    let plain = enter(&registers, &handler(SA_ONSTACK), disabled).expect("a frame");
    assert!(plain.rsp > ALTERNATE.base + ALTERNATE.size);
}

#[test]
fn an_alternate_stack_that_faults_is_efault() {
    let _fixture = Fixture::new();
    let unmapped = SignalStack {
        base: UNMAPPED,
        flags: 0,
        size: 0x4000,
    };
    let registers = interrupted_registers(STACK_TOP);
    assert_eq!(
        enter(&registers, &handler(SA_ONSTACK), unmapped),
        Err(Errno::EFAULT)
    );
}

#[test]
fn rt_sigreturn_from_a_frame_that_faults_is_efault() {
    let _fixture = Fixture::new();
    assert!(return_from_handler(UNMAPPED).is_err());
    assert!(return_from_handler(UNMAPPED - 100).is_err());
    assert!(return_from_handler(u64::MAX - 10).is_err());
    // A frame whose FPU pointer the program pointed at nothing.
    let registers = interrupted_registers(STACK_TOP);
    let entry = enter(&registers, &handler(0), NO_ALTERNATE).expect("a frame");
    let ucontext = entry.rsp + RT_SIGFRAME_UCONTEXT_AT as u64;
    // `uc_mcontext.fpstate` is at offset 40 + 184 of the `ucontext`.
    let fpstate_at = ucontext + 40 + 184;
    assert_eq!(peek_u64(fpstate_at) % 64, 0, "the FPU state is aligned");
    fake::poke(fpstate_at, &UNMAPPED.to_le_bytes());
    assert_eq!(
        return_from_handler(entry.rsp + 8).err(),
        Some(Errno::EFAULT)
    );
    // And one without any: no FPU state to restore.
    fake::poke(fpstate_at, &0u64.to_le_bytes());
    let back = return_from_handler(entry.rsp + 8).expect("the frame");
    assert!(back.fpu.is_none());
    assert_eq!(back.registers, registers);
}
