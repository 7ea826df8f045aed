//! `identity`: ids, groups, process groups and sessions.

use linux_abi::syscall::*;
use vfs::Errno;

use super::*;

#[test]
fn every_process_is_root_and_may_only_stay_root() {
    let fixture = Fixture::new();
    for number in [GETUID, GETEUID, GETGID, GETEGID] {
        assert_eq!(fixture.call(number, &[]), 0);
    }
    for number in [SETUID, SETGID] {
        assert_eq!(fixture.call(number, &[1000]), err(Errno::EPERM));
        assert_eq!(fixture.call(number, &[1 << 32]), 0, "an id is 32 bits");
        assert_eq!(fixture.call(number, &[0]), 0);
        assert_eq!(fixture.call(number, &[0xffff_ffff]), 0, "-1: unchanged");
    }
}

#[test]
fn getresuid_writes_three_zeros_or_faults() {
    let fixture = Fixture::new();
    put(0, &[0xff; 12]);
    assert_eq!(fixture.call(GETRESUID, &[at(0), at(4), at(8)]), 0);
    assert_eq!(fake::peek(at(0), 12), [0; 12]);
    assert_eq!(
        fixture.call(GETRESGID, &[at(0), at(4), UNMAPPED]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(GETRESGID, &[0, at(4), at(8)]),
        err(Errno::EFAULT)
    );
}

#[test]
fn getgroups_checks_its_size() {
    let fixture = Fixture::new();
    let groups = put(0, &[5u32, 3, 9].map(u32::to_le_bytes).concat());
    assert_eq!(fixture.call(SETGROUPS, &[3, groups]), 0);
    assert_eq!(fixture.call(GETGROUPS, &[0, 0]), 3, "size 0 only counts");
    assert_eq!(fixture.call(GETGROUPS, &[2, at(64)]), err(Errno::EINVAL));
    assert_eq!(
        fixture.call(GETGROUPS, &[0xffff_ffff, at(64)]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(GETGROUPS, &[3, UNMAPPED]), err(Errno::EFAULT));
    assert_eq!(fixture.call(GETGROUPS, &[100, at(64)]), 3);
    // Kept sorted, as Linux keeps them.
    assert_eq!(
        fake::peek(at(64), 12),
        [3u32, 5, 9].map(u32::to_le_bytes).concat()
    );
}

#[test]
fn setgroups_checks_its_size_and_list() {
    let fixture = Fixture::new();
    assert_eq!(
        fixture.call(SETGROUPS, &[0xffff_ffff, at(0)]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(SETGROUPS, &[65537, at(0)]), err(Errno::EINVAL));
    assert_eq!(fixture.call(SETGROUPS, &[1, UNMAPPED]), err(Errno::EFAULT));
    assert_eq!(
        fixture.call(SETGROUPS, &[2, UNMAPPED - 4]),
        err(Errno::EFAULT)
    );
    assert!(fixture.process().supplementary_groups().is_empty());
    // Size 0 clears them without reading the list.
    let group = put(0, &7u32.to_le_bytes());
    assert_eq!(fixture.call(SETGROUPS, &[1, group]), 0);
    assert_eq!(fixture.process().supplementary_groups(), [7]);
    assert_eq!(fixture.call(SETGROUPS, &[0, UNMAPPED]), 0);
    assert!(fixture.process().supplementary_groups().is_empty());
}

#[test]
fn process_groups_and_sessions() {
    let fixture = Fixture::new();
    assert_eq!(fixture.call(GETPGRP, &[]), PID as i64);
    assert_eq!(fixture.call(GETSID, &[0]), PID as i64);
    assert_eq!(fixture.call(GETPGID, &[999]), err(Errno::ESRCH));
    assert_eq!(fixture.call(GETSID, &[999]), err(Errno::ESRCH));
    assert_eq!(fixture.call(SETPGID, &[999, 0]), err(Errno::ESRCH));
    assert_eq!(fixture.call(SETPGID, &[0, u64::MAX]), err(Errno::EINVAL));
    // A group leader may not start a session.
    assert_eq!(fixture.call(SETSID, &[]), err(Errno::EPERM));
    assert_eq!(fixture.call(SETPGID, &[0, 3]), 0);
    assert_eq!(fixture.call(GETPGID, &[PID]), 3);
    assert_eq!(fixture.call(SETSID, &[]), PID as i64);
    assert_eq!(fixture.call(GETPGRP, &[]), PID as i64);
}
