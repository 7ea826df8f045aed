//! `signal`: dispositions, the mask, pending signals, and the waits for
//! them.

use linux_abi::{
    sigaction::{SigAction, SignalStack},
    signal::*,
    syscall::*,
    time::Timespec,
};
use vfs::Errno;

use super::*;
use crate::signal::{current_thread, Disposition, SignalInfo, Source};

/// A signal from process 1.
fn from_user(signal: u8) -> SignalInfo {
    SignalInfo {
        signal,
        source: Source::User {
            pid: 1,
            thread: false,
        },
    }
}

/// Writes a `struct sigaction` with `handler` and `flags` at `offset`.
fn put_action(offset: u64, handler: u64, flags: u64) -> u64 {
    put(
        offset,
        &SigAction {
            handler,
            flags,
            restorer: 0x40_1000,
            mask: bit(SIGUSR2),
        }
        .to_bytes(),
    )
}

#[test]
fn rt_sigaction_checks_the_signal_and_the_set_size() {
    let fixture = Fixture::new();
    let action = put_action(0, 0x40_2000, SA_RESTORER);
    for signal in [0, 65, u64::MAX] {
        assert_eq!(
            fixture.call(RT_SIGACTION, &[signal, action, 0, 8]),
            err(Errno::EINVAL)
        );
    }
    for size in [0, 4, 16, u64::MAX] {
        assert_eq!(
            fixture.call(RT_SIGACTION, &[u64::from(SIGUSR1), action, 0, size]),
            err(Errno::EINVAL)
        );
    }
    // SIGKILL and SIGSTOP cannot be caught, but may be asked about.
    for signal in [SIGKILL, SIGSTOP] {
        let signal = u64::from(signal);
        assert_eq!(
            fixture.call(RT_SIGACTION, &[signal, action, 0, 8]),
            err(Errno::EINVAL)
        );
        assert_eq!(fixture.call(RT_SIGACTION, &[signal, 0, at(256), 8]), 0);
    }
}

#[test]
fn rt_sigaction_faults_on_either_pointer_and_reads_back_what_it_set() {
    let fixture = Fixture::new();
    let usr1 = u64::from(SIGUSR1);
    assert_eq!(
        fixture.call(RT_SIGACTION, &[usr1, UNMAPPED, 0, 8]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(RT_SIGACTION, &[usr1, UNMAPPED - 16, 0, 8]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(RT_SIGACTION, &[usr1, 0, UNMAPPED, 8]),
        err(Errno::EFAULT)
    );
    let action = put_action(0, 0x40_2000, SA_RESTORER | SA_SIGINFO);
    assert_eq!(fixture.call(RT_SIGACTION, &[usr1, action, 0, 8]), 0);
    assert_eq!(fixture.call(RT_SIGACTION, &[usr1, 0, at(256), 8]), 0);
    assert_eq!(
        fake::peek(at(256), SigAction::BYTES),
        fake::peek(action, SigAction::BYTES)
    );
    match fixture.process().signals.lock().disposition(SIGUSR1) {
        Disposition::Handler(handler) => assert_eq!(handler.address, 0x40_2000),
        _ => panic!("SIGUSR1 should have a handler"),
    }
}

#[test]
fn ignoring_a_pending_signal_discards_it() {
    let fixture = Fixture::new();
    let process = fixture.process();
    process
        .signals
        .lock()
        .set_mask(current_thread(), bit(SIGUSR1));
    assert!(process.signals.lock().post(from_user(SIGUSR1)));
    assert_eq!(fixture.call(RT_SIGPENDING, &[at(0), 8]), 0);
    assert_eq!(peek_u64(at(0)), bit(SIGUSR1));
    const SIG_IGN: u64 = 1;
    let ignore = put_action(64, SIG_IGN, 0);
    assert_eq!(
        fixture.call(RT_SIGACTION, &[u64::from(SIGUSR1), ignore, 0, 8]),
        0
    );
    assert_eq!(fixture.call(RT_SIGPENDING, &[at(0), 8]), 0);
    assert_eq!(peek_u64(at(0)), 0);
}

#[test]
fn a_traced_process_keeps_the_signals_it_ignores_for_its_tracer() {
    let fixture = Fixture::new();
    let process = fixture.process();
    let thread = current_thread();
    assert!(
        !process.signals.lock().post(from_user(SIGCHLD)),
        "ignored by default: dropped"
    );
    process.signals.lock().set_traced(true);
    assert!(process.signals.lock().is_traced());
    assert!(process.signals.lock().post(from_user(SIGCHLD)));
    assert!(process
        .signals
        .lock()
        .post_to_thread(thread, from_user(SIGURG)));
    let (info, disposition) = process.signals.lock().take(thread).expect("kept");
    assert_eq!((info.signal, disposition), (SIGCHLD, Disposition::Ignore));
    let (info, _) = process.signals.lock().take(thread).expect("kept");
    assert_eq!(info.signal, SIGURG);
    fixture.personality.process_forked(PID, PID + 1);
    let child = fixture.personality.files(PID + 1).expect("the child");
    assert!(!child.signals.lock().is_traced(), "fork does not trace");
    fixture.personality.process_ended(PID + 1);
    process.signals.lock().set_traced(false);
    assert!(!process.signals.lock().post(from_user(SIGCHLD)));
}

#[test]
fn rt_sigprocmask_checks_how_and_never_blocks_kill_or_stop() {
    let fixture = Fixture::new();
    let everything = put(0, &u64::MAX.to_le_bytes());
    assert_eq!(
        fixture.call(RT_SIGPROCMASK, &[3, everything, 0, 8]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(RT_SIGPROCMASK, &[SIG_BLOCK, everything, 0, 4]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(RT_SIGPROCMASK, &[SIG_BLOCK, UNMAPPED, 0, 8]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(RT_SIGPROCMASK, &[SIG_BLOCK, 0, UNMAPPED, 8]),
        err(Errno::EFAULT)
    );
    // An unknown `how` without a set changes nothing, as on Linux.
    assert_eq!(fixture.call(RT_SIGPROCMASK, &[3, 0, at(64), 8]), 0);
    assert_eq!(
        fixture.call(RT_SIGPROCMASK, &[SIG_SETMASK, everything, 0, 8]),
        0
    );
    assert_eq!(fixture.call(RT_SIGPROCMASK, &[SIG_BLOCK, 0, at(64), 8]), 0);
    assert_eq!(peek_u64(at(64)), !(bit(SIGKILL) | bit(SIGSTOP)));
    let usr1 = put(128, &bit(SIGUSR1).to_le_bytes());
    assert_eq!(
        fixture.call(RT_SIGPROCMASK, &[SIG_UNBLOCK, usr1, at(64), 8]),
        0
    );
    assert_eq!(fixture.call(RT_SIGPROCMASK, &[SIG_BLOCK, 0, at(64), 8]), 0);
    assert_eq!(peek_u64(at(64)) & bit(SIGUSR1), 0);
}

#[test]
fn sigaltstack_faults_on_either_pointer_and_reads_back_what_it_set() {
    let fixture = Fixture::new();
    assert_eq!(
        fixture.call(SIGALTSTACK, &[UNMAPPED, 0]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(SIGALTSTACK, &[0, UNMAPPED]),
        err(Errno::EFAULT)
    );
    let stack = SignalStack {
        base: 0x7000_0000,
        flags: 0,
        size: 64 * 1024,
    };
    let new = put(0, &stack.to_bytes());
    assert_eq!(fixture.call(SIGALTSTACK, &[new, 0]), 0);
    assert_eq!(fixture.call(SIGALTSTACK, &[0, at(64)]), 0);
    assert_eq!(fake::peek(at(64), SignalStack::BYTES), stack.to_bytes());
}

#[test]
fn sigaltstack_checks_the_mode_and_size_and_disable_forgets_the_stack() {
    let fixture = Fixture::new();
    let stack = |flags: u32, size: u64| {
        put(
            0,
            &SignalStack {
                base: 0x7000_0000,
                flags,
                size,
            }
            .to_bytes(),
        )
    };
    let call = |new: u64| fixture.call(SIGALTSTACK, &[new, 0]);
    assert_eq!(call(stack(4, 8192)), err(Errno::EINVAL), "an unknown mode");
    assert_eq!(
        call(stack(SS_ONSTACK | SS_DISABLE, 8192)),
        err(Errno::EINVAL)
    );
    assert_eq!(
        call(stack(0, 2047)),
        err(Errno::ENOMEM),
        "below MINSIGSTKSZ"
    );
    assert_eq!(call(stack(SS_ONSTACK, 2048)), 0);
    // Not on it: the old stack's flags say 0, not SS_ONSTACK.
    assert_eq!(fixture.call(SIGALTSTACK, &[0, at(64)]), 0);
    assert_eq!(peek_u32(at(64 + 8)), 0);
    assert_eq!(peek_u64(at(64 + 16)), 2048);
    assert_eq!(call(stack(SS_AUTODISARM, 4096)), 0);
    assert_eq!(fixture.call(SIGALTSTACK, &[0, at(64)]), 0);
    assert_eq!(peek_u32(at(64 + 8)), SS_AUTODISARM);
    // SS_DISABLE takes any size, and forgets the stack.
    assert_eq!(call(stack(SS_DISABLE, 1)), 0);
    assert_eq!(fixture.call(SIGALTSTACK, &[0, at(64)]), 0);
    assert_eq!(
        fake::peek(at(64), SignalStack::BYTES),
        SignalStack::DISABLED.to_bytes()
    );
}

#[test]
fn rt_sigpending_checks_its_size_and_buffer() {
    let fixture = Fixture::new();
    assert_eq!(
        fixture.call(RT_SIGPENDING, &[at(0), 16]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(RT_SIGPENDING, &[UNMAPPED, 8]),
        err(Errno::EFAULT)
    );
    assert_eq!(fixture.call(RT_SIGPENDING, &[at(0), 8]), 0);
}

#[test]
fn rt_sigsuspend_waits_with_its_mask_for_a_signal() {
    let fixture = Fixture::new();
    let mask = put(0, &bit(SIGUSR2).to_le_bytes());
    assert_eq!(fixture.call(RT_SIGSUSPEND, &[mask, 4]), err(Errno::EINVAL));
    assert_eq!(
        fixture.call(RT_SIGSUSPEND, &[UNMAPPED, 8]),
        err(Errno::EFAULT)
    );
    let process = fixture.process();
    // SIGUSR2 (blocked by the suspend's mask) does not end the wait;
    // SIGUSR1 does.
    let poster = process.clone();
    fake::while_blocked(move || {
        let mut signals = poster.signals.lock();
        if signals.pending_for(current_thread()) == 0 {
            signals.post(from_user(SIGUSR2));
        } else {
            signals.post(from_user(SIGUSR1));
        }
    });
    assert_eq!(fixture.call(RT_SIGSUSPEND, &[mask, 8]), err(Errno::EINTR));
    assert_eq!(fake::blocks().len(), 2);
    // The handler entered now restores the mask from before the call.
    let mut signals = process.signals.lock();
    assert_eq!(signals.mask(current_thread()), bit(SIGUSR2));
    assert_eq!(signals.take_mask_to_restore(current_thread()), 0);
}

#[test]
fn pause_ends_when_interrupted() {
    let fixture = Fixture::new();
    fake::once_blocked(|| fake::set_interrupted(true));
    assert_eq!(fixture.call(PAUSE, &[]), err(Errno::EINTR));
    assert_eq!(fake::blocks(), [("signal", None)]);
}

#[test]
fn rt_sigtimedwait_checks_its_arguments() {
    let fixture = Fixture::new();
    let set = put(0, &bit(SIGUSR1).to_le_bytes());
    assert_eq!(
        fixture.call(RT_SIGTIMEDWAIT, &[set, 0, 0, 16]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(RT_SIGTIMEDWAIT, &[UNMAPPED, 0, 0, 8]),
        err(Errno::EFAULT)
    );
    for (sec, nsec) in [(-1, 0), (0, 1_000_000_000), (0, -1)] {
        let timeout = put(64, &Timespec { sec, nsec }.to_bytes());
        assert_eq!(
            fixture.call(RT_SIGTIMEDWAIT, &[set, 0, timeout, 8]),
            err(Errno::EINVAL)
        );
    }
    assert_eq!(
        fixture.call(RT_SIGTIMEDWAIT, &[set, 0, UNMAPPED, 8]),
        err(Errno::EFAULT)
    );
}

#[test]
fn rt_sigtimedwait_times_out_on_the_clock() {
    let fixture = Fixture::new();
    let set = put(0, &bit(SIGUSR1).to_le_bytes());
    let timeout = put(64, &Timespec { sec: 3, nsec: 0 }.to_bytes());
    let start = crate::machine::fake::FakeMachine::now();
    assert_eq!(
        fixture.call(RT_SIGTIMEDWAIT, &[set, 0, timeout, 8]),
        err(Errno::EAGAIN)
    );
    assert_eq!(fake::blocks(), [("signal", Some(start + 3_000_000_000))]);
}

#[test]
fn rt_sigtimedwait_takes_a_pending_signal_of_its_set() {
    let fixture = Fixture::new();
    let process = fixture.process();
    process
        .signals
        .lock()
        .set_mask(current_thread(), bit(SIGUSR1) | bit(SIGUSR2));
    assert!(process.signals.lock().post(from_user(SIGUSR2)));
    let set = put(0, &(bit(SIGUSR1) | bit(SIGUSR2)).to_le_bytes());
    // The siginfo cannot be written: the signal is still taken, as on
    // Linux, and the call is EFAULT.
    assert_eq!(
        fixture.call(RT_SIGTIMEDWAIT, &[set, UNMAPPED, 0, 8]),
        err(Errno::EFAULT)
    );
    assert!(process.signals.lock().post(from_user(SIGUSR2)));
    assert_eq!(
        fixture.call(RT_SIGTIMEDWAIT, &[set, at(64), 0, 8]),
        i64::from(SIGUSR2)
    );
    // `si_signo` first, `si_code` (SI_USER, 0) at 8, the sender at 16.
    assert_eq!(peek_u32(at(64)), u32::from(SIGUSR2));
    assert_eq!(peek_u32(at(64 + 8)), 0);
    assert_eq!(peek_u32(at(64 + 16)), 1);
    // One that arrives while it waits.
    let poster = process.clone();
    fake::once_blocked(move || {
        poster.signals.lock().post(from_user(SIGUSR1));
    });
    assert_eq!(
        fixture.call(RT_SIGTIMEDWAIT, &[set, 0, 0, 8]),
        i64::from(SIGUSR1)
    );
}
