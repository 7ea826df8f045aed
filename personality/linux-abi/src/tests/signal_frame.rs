//! `sigaction`, `stack_t`, `siginfo_t`, `sigcontext`, `ucontext` and
//! `rt_sigframe`: the records of signal delivery.

use crate::{
    sigaction::{SigAction, SignalStack},
    siginfo::{Siginfo, SiginfoFields, SIGINFO_BYTES},
    signal::{CLD_EXITED, SEGV_MAPERR, SIGCHLD, SIGSEGV, SS_DISABLE},
    ucontext::{
        Sigcontext, Ucontext, RT_SIGFRAME_BYTES, RT_SIGFRAME_SIGINFO_AT, RT_SIGFRAME_UCONTEXT_AT,
        SIGCONTEXT_REGISTERS,
    },
};

fn i32_at(bytes: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

#[test]
fn sizes_are_linux_x86_64_sizes() {
    assert_eq!(SigAction::BYTES, 32);
    assert_eq!(SignalStack::BYTES, 24);
    assert_eq!(SIGINFO_BYTES, 128);
    assert_eq!(Sigcontext::BYTES, 256);
    assert_eq!(Ucontext::BYTES, 304);
    assert_eq!(SIGCONTEXT_REGISTERS, 18);
    assert_eq!(RT_SIGFRAME_UCONTEXT_AT, 8);
    assert_eq!(RT_SIGFRAME_SIGINFO_AT, 312);
    assert_eq!(RT_SIGFRAME_BYTES, 440);
}

#[test]
fn sigaction_round_trips_at_linux_offsets() {
    let action = SigAction {
        handler: 0x40_1000,
        flags: 0x0400_0004,
        restorer: 0x40_2000,
        mask: 1 << 9,
    };
    let bytes = action.to_bytes();
    assert_eq!(u64_at(&bytes, 0), 0x40_1000, "sa_handler");
    assert_eq!(u64_at(&bytes, 8), 0x0400_0004, "sa_flags");
    assert_eq!(u64_at(&bytes, 16), 0x40_2000, "sa_restorer");
    assert_eq!(u64_at(&bytes, 24), 1 << 9, "sa_mask");
    assert_eq!(SigAction::from_bytes(&bytes), action);
}

#[test]
fn stack_t_round_trips() {
    let stack = SignalStack {
        base: 0x7000_0000,
        flags: 1,
        size: 8192,
    };
    let bytes = stack.to_bytes();
    assert_eq!(i32_at(&bytes, 8), 1, "ss_flags");
    assert_eq!(u64_at(&bytes, 16), 8192, "ss_size");
    assert_eq!(SignalStack::from_bytes(&bytes), stack);
    assert_eq!(SignalStack::DISABLED.flags, SS_DISABLE);
}

#[test]
fn siginfo_puts_each_member_at_its_offset() {
    let child = Siginfo {
        signo: i32::from(SIGCHLD),
        code: CLD_EXITED,
        fields: SiginfoFields::Child {
            pid: 42,
            uid: 7,
            status: 3,
        },
    }
    .to_bytes();
    assert_eq!(i32_at(&child, 0), 17, "si_signo");
    assert_eq!(i32_at(&child, 4), 0, "si_errno");
    assert_eq!(i32_at(&child, 8), CLD_EXITED, "si_code");
    assert_eq!(i32_at(&child, 16), 42, "si_pid");
    assert_eq!(i32_at(&child, 20), 7, "si_uid");
    assert_eq!(i32_at(&child, 24), 3, "si_status");
    let fault = Siginfo {
        signo: i32::from(SIGSEGV),
        code: SEGV_MAPERR,
        fields: SiginfoFields::Fault {
            address: 0xdead_beef,
        },
    }
    .to_bytes();
    assert_eq!(u64_at(&fault, 16), 0xdead_beef, "si_addr");
    assert!(fault[24..].iter().all(|byte| *byte == 0));
}

#[test]
fn ucontext_round_trips_at_linux_offsets() {
    let mut registers = [0; SIGCONTEXT_REGISTERS];
    for (index, register) in registers.iter_mut().enumerate() {
        *register = 0x100 + index as u64;
    }
    let context = Ucontext {
        flags: 0x6,
        link: 0,
        stack: SignalStack::DISABLED,
        mcontext: Sigcontext {
            registers,
            cs: 0x33,
            gs: 0,
            fs: 0,
            ss: 0x2b,
            err: 4,
            trapno: 14,
            oldmask: 0x10,
            cr2: 0x1234,
            fpstate: 0x7fff_0000,
        },
        sigmask: 0x10,
    };
    let bytes = context.to_bytes();
    assert_eq!(u64_at(&bytes, 0), 0x6, "uc_flags");
    assert_eq!(i32_at(&bytes, 24), 2, "uc_stack.ss_flags");
    assert_eq!(u64_at(&bytes, 40), 0x100, "r8");
    assert_eq!(u64_at(&bytes, 40 + 16 * 8), 0x110, "rip");
    assert_eq!(u64_at(&bytes, 40 + 17 * 8), 0x111, "eflags");
    assert_eq!(u16::from_le_bytes([bytes[184], bytes[185]]), 0x33, "cs");
    assert_eq!(u16::from_le_bytes([bytes[190], bytes[191]]), 0x2b, "ss");
    assert_eq!(u64_at(&bytes, 40 + 160), 14, "trapno");
    assert_eq!(u64_at(&bytes, 40 + 176), 0x1234, "cr2");
    assert_eq!(u64_at(&bytes, 40 + 184), 0x7fff_0000, "fpstate");
    assert_eq!(u64_at(&bytes, 296), 0x10, "uc_sigmask");
    assert_eq!(Ucontext::from_bytes(&bytes), context);
}

#[test]
fn a_timer_siginfo_carries_the_timer_id_its_overruns_and_its_value() {
    use crate::signal::SI_TIMER;
    let info = Siginfo {
        signo: 14,
        code: SI_TIMER,
        fields: SiginfoFields::Timer {
            id: 3,
            overrun: 2,
            value: 0xfeed,
        },
    };
    let bytes = info.to_bytes();
    assert_eq!(i32_at(&bytes, 8), SI_TIMER, "si_code");
    assert_eq!(i32_at(&bytes, 16), 3, "si_timerid");
    assert_eq!(i32_at(&bytes, 20), 2, "si_overrun");
    assert_eq!(bytes[24..32], 0xfeedu64.to_le_bytes(), "si_value");
}
