//! `close_range` and `unshare`: their flags and bounds, and what each
//! does to the descriptors and the process.

use linux_abi::{clone::*, fcntl::*, syscall::*};
use vfs::{flags::O_RDONLY, Errno};

use super::*;

#[test]
fn close_range_checks_flags_and_bounds() {
    let fixture = Fixture::new();
    assert_eq!(fixture.call(CLOSE_RANGE, &[4, 3, 0]), err(Errno::EINVAL));
    assert_eq!(
        fixture.call(CLOSE_RANGE, &[3, u64::from(u32::MAX), u64::from(u32::MAX)]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(CLOSE_RANGE, &[3, 3, 1]), err(Errno::EINVAL));
    let max = u64::from(u32::MAX);
    assert_eq!(
        fixture.call(CLOSE_RANGE, &[max, max, 0]),
        0,
        "nothing there"
    );
    assert_eq!(
        fixture.call(CLOSE_RANGE, &[1 << 32 | 3, 3, 0]),
        0,
        "unsigned ints: the high half is not read"
    );
}

#[test]
fn close_range_closes_or_marks_the_open_descriptors_in_range() {
    let fixture = Fixture::new();
    let first = fixture.open(b"/dev/null", O_RDONLY);
    assert_eq!(fixture.call(DUP2, &[first, 100]), 100);
    let between = fixture.open(b"/dev/null", O_RDONLY);
    assert_eq!(
        fixture.call(CLOSE_RANGE, &[between, between, CLOSE_RANGE_CLOEXEC]),
        0
    );
    assert_eq!(fixture.call(FCNTL, &[between, 1]), 1, "close-on-exec");
    assert_eq!(
        fixture.call(CLOSE_RANGE, &[first, 100, CLOSE_RANGE_UNSHARE]),
        0
    );
    for fd in [first, between, 100] {
        assert_eq!(fixture.call(FCNTL, &[fd, 1]), err(Errno::EBADF));
    }
    assert_eq!(fixture.call(FCNTL, &[2, 1]), 0, "below the range");
}

#[test]
fn unshare_checks_flags_threads_and_privilege() {
    let fixture = Fixture::new();
    assert_eq!(
        fixture.call(UNSHARE, &[CLONE_VFORK_FLAG]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(UNSHARE, &[CLONE_FS | CLONE_FILES | CLONE_SYSVSEM]),
        0
    );
    assert_eq!(fixture.call(UNSHARE, &[CLONE_NEWNS]), 0);
    // The fake system says the caller has three threads.
    for flags in [CLONE_THREAD, CLONE_SIGHAND, CLONE_VM, CLONE_NEWUSER] {
        assert_eq!(fixture.call(UNSHARE, &[flags]), err(Errno::EINVAL));
    }
    for absent in [
        CLONE_NEWUTS,
        CLONE_NEWIPC,
        CLONE_NEWNET,
        CLONE_NEWPID,
        CLONE_NEWTIME,
    ] {
        assert_eq!(fixture.call(UNSHARE, &[absent]), err(Errno::EINVAL));
    }
    assert_eq!(fixture.call(SETUID, &[1000]), 0);
    assert_eq!(fixture.call(UNSHARE, &[CLONE_NEWNS]), err(Errno::EPERM));
    assert_eq!(fixture.call(UNSHARE, &[CLONE_NEWUTS]), err(Errno::EPERM));
    assert_eq!(fixture.call(UNSHARE, &[CLONE_FS]), 0);
}

/// `CLONE_VFORK`, which `unshare` does not know.
const CLONE_VFORK_FLAG: u64 = 0x4000;
