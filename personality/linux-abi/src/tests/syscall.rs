use crate::syscall::{self, *};

#[test]
fn numbers_are_linux_x86_64_numbers() {
    // From arch/x86/entry/syscalls/syscall_64.tbl.
    let expected = [
        (READ, 0),
        (WRITE, 1),
        (OPEN, 2),
        (CLOSE, 3),
        (MMAP, 9),
        (RT_SIGACTION, 13),
        (RT_SIGRETURN, 15),
        (IOCTL, 16),
        (PIPE, 22),
        (DUP2, 33),
        (GETPID, 39),
        (SOCKET, 41),
        (CLONE, 56),
        (FORK, 57),
        (EXECVE, 59),
        (EXIT, 60),
        (WAIT4, 61),
        (KILL, 62),
        (FCNTL, 72),
        (FLOCK, 73),
        (GETCWD, 79),
        (GETTIMEOFDAY, 96),
        (GETUID, 102),
        (ARCH_PRCTL, 158),
        (GETTID, 186),
        (FUTEX, 202),
        (GETDENTS64, 217),
        (SET_TID_ADDRESS, 218),
        (CLOCK_GETTIME, 228),
        (EXIT_GROUP, 231),
        (TGKILL, 234),
        (OPENAT, 257),
        (NEWFSTATAT, 262),
        (PPOLL, 271),
        (PIPE2, 293),
        (PRLIMIT64, 302),
        (GETRANDOM, 318),
        (STATX, 332),
        (RSEQ, 334),
        (FACCESSAT2, 439),
    ];
    for (number, linux) in expected {
        assert_eq!(number, linux);
    }
}

#[test]
fn names_are_the_reverse_of_the_numbers() {
    assert_eq!(syscall::name(0), Some("read"));
    assert_eq!(syscall::name(EXIT_GROUP), Some("exit_group"));
    assert_eq!(syscall::name(OPENAT), Some("openat"));
    assert_eq!(syscall::name(NEWFSTATAT), Some("newfstatat"));
    assert_eq!(syscall::name(1023), None);
}
