//! `resource`: limits, usage, `getrandom`, `set_robust_list`.

use linux_abi::syscall::*;
use vfs::Errno;

use super::*;

const RLIMIT_STACK: u64 = 3;
const RLIMIT_NOFILE: u64 = 7;

#[test]
fn prlimit64_checks_the_resource_and_the_limits() {
    let fixture = Fixture::new();
    for resource in [16, u64::MAX, 1 << 32] {
        assert_eq!(
            fixture.call(PRLIMIT64, &[0, resource, 0, at(0)]),
            err(Errno::EINVAL)
        );
    }
    assert_eq!(
        fixture.call(PRLIMIT64, &[999, RLIMIT_NOFILE, 0, at(0)]),
        err(Errno::ESRCH)
    );
    let soft_above_hard = put(64, &[20u64.to_le_bytes(), 10u64.to_le_bytes()].concat());
    assert_eq!(
        fixture.call(PRLIMIT64, &[0, RLIMIT_NOFILE, soft_above_hard, 0]),
        err(Errno::EINVAL)
    );
    let raised = put(64, &[10u64.to_le_bytes(), 4096u64.to_le_bytes()].concat());
    assert_eq!(
        fixture.call(PRLIMIT64, &[0, RLIMIT_NOFILE, raised, 0]),
        err(Errno::EPERM)
    );
    assert_eq!(
        fixture.call(PRLIMIT64, &[0, RLIMIT_NOFILE, UNMAPPED, 0]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(PRLIMIT64, &[0, RLIMIT_NOFILE, UNMAPPED - 8, 0]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(PRLIMIT64, &[0, RLIMIT_NOFILE, 0, UNMAPPED]),
        err(Errno::EFAULT)
    );
    let lowered = put(64, &[100u64.to_le_bytes(), 1024u64.to_le_bytes()].concat());
    assert_eq!(
        fixture.call(PRLIMIT64, &[PID, RLIMIT_NOFILE, lowered, at(0)]),
        0
    );
    assert_eq!(peek_u64(at(0)), crate::MAX_DESCRIPTORS as u64);
    assert_eq!(fixture.call(GETRLIMIT, &[RLIMIT_STACK, at(0)]), 0);
    assert_eq!(peek_u64(at(0)), 8 << 20);
    assert_eq!(fixture.call(SETRLIMIT, &[RLIMIT_STACK, raised]), 0);
    assert_eq!(fixture.call(GETRLIMIT, &[16, at(0)]), err(Errno::EINVAL));
}

#[test]
fn getrandom_checks_its_flags_and_buffer() {
    let fixture = Fixture::new();
    assert_eq!(fixture.call(GETRANDOM, &[at(0), 16, 8]), err(Errno::EINVAL));
    assert_eq!(
        fixture.call(GETRANDOM, &[at(0), 16, 1 << 40]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(GETRANDOM, &[UNMAPPED, 16, 0]),
        err(Errno::EFAULT)
    );
    assert_eq!(fixture.call(GETRANDOM, &[0, 16, 0]), err(Errno::EFAULT));
    assert_eq!(fixture.call(GETRANDOM, &[at(0), 0, 0]), 0);
    assert_eq!(fixture.call(GETRANDOM, &[at(0), 64, 0x7]), 64);
    assert_ne!(fake::peek(at(0), 64), [0u8; 64]);
}

#[test]
fn getrandom_of_a_huge_count_gives_at_most_a_mebibyte() {
    let fixture = Fixture::new();
    fake::map(at(0), 1 << 20);
    assert_eq!(fixture.call(GETRANDOM, &[at(0), u64::MAX, 0]), 1 << 20);
}

#[test]
fn set_robust_list_wants_linuxs_head_size() {
    let fixture = Fixture::new();
    for length in [0, 23, 25, u64::MAX] {
        assert_eq!(
            fixture.call(SET_ROBUST_LIST, &[at(0), length]),
            err(Errno::EINVAL)
        );
    }
    assert_eq!(fixture.call(SET_ROBUST_LIST, &[at(0), 24]), 0);
}

#[test]
fn times_reports_ticks_and_faults_on_its_buffer() {
    let fixture = Fixture::new();
    let ticks_since_boot = (SYSTEM_UPTIME_NS / 10_000_000) as i64;
    assert_eq!(fixture.call(TIMES, &[0]), ticks_since_boot);
    assert_eq!(fixture.call(TIMES, &[UNMAPPED]), err(Errno::EFAULT));
    assert_eq!(fixture.call(TIMES, &[at(0)]), ticks_since_boot);
    assert_eq!(peek_u64(at(0)), PROCESS_CPU_NS / 10_000_000);
}

#[test]
fn getrusage_checks_who_and_its_buffer() {
    let fixture = Fixture::new();
    for who in [2, 0xffff_fffe, (1 << 32) | 2] {
        assert_eq!(fixture.call(GETRUSAGE, &[who, at(0)]), err(Errno::EINVAL));
    }
    assert_eq!(fixture.call(GETRUSAGE, &[0, UNMAPPED]), err(Errno::EFAULT));
    // `who` is an int: only its low 32 bits count.
    for who in [0, 1, 0xffff_ffff, 1 << 32] {
        assert_eq!(fixture.call(GETRUSAGE, &[who, at(0)]), 0);
    }
    assert_eq!(fixture.call(GETRUSAGE, &[0, at(0)]), 0);
    // `ru_utime`: seconds, microseconds.
    assert_eq!(peek_u64(at(0)), PROCESS_CPU_NS / 1_000_000_000);
    assert_eq!(peek_u64(at(8)), PROCESS_CPU_NS % 1_000_000_000 / 1000);
}
