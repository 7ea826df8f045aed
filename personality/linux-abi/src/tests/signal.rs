use crate::signal::{self, *};

#[test]
fn numbers_are_linux_x86_64_numbers() {
    let expected = [
        (SIGHUP, 1),
        (SIGINT, 2),
        (SIGQUIT, 3),
        (SIGILL, 4),
        (SIGTRAP, 5),
        (SIGABRT, 6),
        (SIGBUS, 7),
        (SIGFPE, 8),
        (SIGKILL, 9),
        (SIGUSR1, 10),
        (SIGSEGV, 11),
        (SIGUSR2, 12),
        (SIGPIPE, 13),
        (SIGALRM, 14),
        (SIGTERM, 15),
        (SIGCHLD, 17),
        (SIGCONT, 18),
        (SIGSTOP, 19),
        (SIGTSTP, 20),
        (SIGTTIN, 21),
        (SIGTTOU, 22),
        (SIGWINCH, 28),
        (SIGSYS, 31),
    ];
    for (number, linux) in expected {
        assert_eq!(number, linux);
    }
    assert_eq!(MAX_SIGNAL, 64);
}

#[test]
fn names_and_set_bits() {
    assert_eq!(signal::name(SIGSEGV), Some("SIGSEGV"));
    assert_eq!(signal::name(SIGCHLD), Some("SIGCHLD"));
    assert_eq!(signal::name(40), None);
    assert_eq!(bit(1), 1);
    assert_eq!(bit(SIGKILL), 0x100);
    assert_eq!(bit(MAX_SIGNAL), 1 << 63);
}

#[test]
fn flags_are_linux_values() {
    assert_eq!((SIG_BLOCK, SIG_UNBLOCK, SIG_SETMASK), (0, 1, 2));
    assert_eq!(SA_RESTORER, 0x0400_0000);
    assert_eq!(SA_RESTART, 0x1000_0000);
    assert_eq!(SA_SIGINFO, 4);
    assert_eq!(SI_TKILL, -6);
    assert_eq!(
        (CLD_EXITED, CLD_KILLED, CLD_STOPPED, CLD_CONTINUED),
        (1, 2, 5, 6)
    );
}
