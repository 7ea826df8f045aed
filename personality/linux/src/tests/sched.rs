//! `sched`: `sched_getaffinity` and `sched_setaffinity`.

use linux_abi::syscall::*;
use vfs::Errno;

use super::*;

#[test]
fn getaffinity_needs_a_whole_mask_of_words() {
    let fixture = Fixture::new();
    for size in [0, 7, 12, u64::MAX] {
        assert_eq!(
            fixture.call(SCHED_GETAFFINITY, &[0, size, at(0)]),
            err(Errno::EINVAL)
        );
    }
    assert_eq!(
        fixture.call(SCHED_GETAFFINITY, &[999, 8, at(0)]),
        err(Errno::ESRCH)
    );
    assert_eq!(
        fixture.call(SCHED_GETAFFINITY, &[0, 8, UNMAPPED]),
        err(Errno::EFAULT)
    );
    put(0, &u64::MAX.to_le_bytes());
    // Returns the bytes written: one word, CPU 0 only.
    assert_eq!(fixture.call(SCHED_GETAFFINITY, &[PID, 128, at(0)]), 8);
    assert_eq!(peek_u64(at(0)), 1);
}

#[test]
fn setaffinity_must_allow_cpu_0() {
    let fixture = Fixture::new();
    let cpu1 = put(0, &2u64.to_le_bytes());
    let cpu0 = put(8, &1u64.to_le_bytes());
    assert_eq!(
        fixture.call(SCHED_SETAFFINITY, &[0, 8, cpu1]),
        err(Errno::EINVAL)
    );
    // No bytes: an empty mask.
    assert_eq!(
        fixture.call(SCHED_SETAFFINITY, &[0, 0, cpu0]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(SCHED_SETAFFINITY, &[999, 8, cpu0]),
        err(Errno::ESRCH)
    );
    assert_eq!(
        fixture.call(SCHED_SETAFFINITY, &[0, 8, UNMAPPED]),
        err(Errno::EFAULT)
    );
    assert_eq!(fixture.call(SCHED_SETAFFINITY, &[0, 8, cpu0]), 0);
    // Only the first word is read, however large the size says it is.
    assert_eq!(fixture.call(SCHED_SETAFFINITY, &[0, u64::MAX, cpu0]), 0);
    assert_eq!(fixture.call(SCHED_SETAFFINITY, &[0, 1, cpu0]), 0);
}
