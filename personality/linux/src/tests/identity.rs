//! `identity`: ids, groups, process groups and sessions.

use linux_abi::syscall::*;
use vfs::Errno;

use super::*;

#[test]
fn a_process_starts_as_root_and_may_become_nobody_and_back() {
    let fixture = Fixture::new();
    for number in [GETUID, GETEUID, GETGID, GETEGID] {
        assert_eq!(fixture.call(number, &[]), 0);
    }
    // An id is 32 bits: the rest of the register is not read.
    assert_eq!(
        fixture.call(SETRESGID, &[(1 << 32) | 65534, 65534, 65534]),
        0
    );
    assert_eq!(fixture.call(GETGID, &[]), 65534);
    assert_eq!(fixture.call(SETREUID, &[u64::from(u32::MAX), 65534]), 0);
    assert_eq!(fixture.call(GETEUID, &[]), 65534);
    assert_eq!(fixture.call(GETUID, &[]), 0);
    // Setting the effective id to something but the real id saves it.
    assert_eq!(fixture.call(GETRESUID, &[at(0), at(4), at(8)]), 0);
    assert_eq!(
        fake::peek(at(0), 12),
        [0u32, 65534, 65534].map(u32::to_le_bytes).concat()
    );
    // Still root by its real id: back to effective root is allowed.
    assert_eq!(fixture.call(SETREUID, &[u64::from(u32::MAX), 0]), 0);
    assert_eq!(fixture.call(GETEUID, &[]), 0);
    // setuid as root sets all three: then there is no way back.
    assert_eq!(fixture.call(SETUID, &[1000]), 0);
    assert_eq!(fixture.call(SETUID, &[0]), err(Errno::EPERM));
    assert_eq!(
        fixture.call(SETUID, &[u64::from(u32::MAX)]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(SETRESUID, &[0, 0, 0]), err(Errno::EPERM));
    assert_eq!(fixture.call(SETGROUPS, &[0, 0]), err(Errno::EPERM));
}

#[test]
fn a_process_that_left_root_is_refused_by_the_file_system() {
    let fixture = Fixture::new();
    fixture.make_file(b"/secret", b"root's");
    assert_eq!(
        fixture.call_path(CHMOD, b"/secret", &[0o600]),
        0,
        "root owns it"
    );
    assert_eq!(fixture.call(SETRESUID, &[u64::from(u32::MAX), 65534, 0]), 0);
    assert_eq!(
        fixture.call_path(OPEN, b"/secret", &[0]),
        err(Errno::EACCES),
        "the effective (file-system) user reads no other's 0600 file"
    );
    assert_eq!(
        fixture.call_path(CHMOD, b"/secret", &[0o644]),
        err(Errno::EPERM)
    );
    // setfsuid back to the saved root id lets it in again.
    assert_eq!(fixture.call(SETFSUID, &[0]), 65534, "the old id");
    assert!(fixture.call_path(OPEN, b"/secret", &[0]) >= 0);
}

#[test]
fn setfsuid_answers_the_old_id_even_when_refused() {
    let fixture = Fixture::new();
    assert_eq!(fixture.call(SETRESUID, &[1000, 1000, 1000]), 0);
    assert_eq!(
        fixture.call(SETFSUID, &[0]),
        1000,
        "refused: not one of its ids"
    );
    assert_eq!(fixture.call(SETFSUID, &[u64::from(u32::MAX)]), 1000);
    assert_eq!(fixture.call(SETFSGID, &[5]), 0, "groups are still root's");
}

#[test]
fn getresuid_writes_three_ids_or_faults() {
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
fn capget_reports_root_capabilities_and_checks_its_header() {
    let fixture = Fixture::new();
    const V3: u32 = 0x2008_0522;
    let header =
        |version: u32, pid: i32| put(0, &[version.to_le_bytes(), pid.to_le_bytes()].concat());
    assert_eq!(fixture.call(CAPGET, &[header(V3, 0), at(64)]), 0);
    let data = fake::peek(at(64), 24);
    let word =
        |index: usize| u32::from_le_bytes(data[index * 4..index * 4 + 4].try_into().unwrap());
    assert_eq!((word(0), word(1), word(2)), (u32::MAX, u32::MAX, 0));
    assert_eq!((word(3), word(4), word(5)), (0x1ff, 0x1ff, 0));
    // An unknown version: EINVAL, and the header says which is preferred.
    assert_eq!(
        fixture.call(CAPGET, &[header(0, 0), at(64)]),
        err(Errno::EINVAL)
    );
    assert_eq!(fake::peek(at(0), 4), V3.to_le_bytes());
    // A null data pointer only asks for the version.
    assert_eq!(fixture.call(CAPGET, &[header(0, 0), 0]), 0);
    assert_eq!(
        fixture.call(CAPGET, &[header(V3, -1), at(64)]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(CAPGET, &[header(V3, 999), at(64)]),
        err(Errno::ESRCH)
    );
    assert_eq!(
        fixture.call(CAPGET, &[UNMAPPED, at(64)]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(CAPGET, &[header(V3, 0), UNMAPPED]),
        err(Errno::EFAULT)
    );
}

#[test]
fn capset_may_only_drop_capabilities() {
    let fixture = Fixture::new();
    const V3: u32 = 0x2008_0522;
    let header = put(0, &[V3.to_le_bytes(), 0i32.to_le_bytes()].concat());
    // Keep only CAP_SETUID (7), effective and permitted.
    let sets = |effective: u32, permitted: u32| {
        put(
            64,
            &[effective, permitted, 0, 0, 0, 0]
                .map(u32::to_le_bytes)
                .concat(),
        )
    };
    assert_eq!(
        fixture.call(CAPSET, &[header, sets(1 << 8, 1 << 7)]),
        err(Errno::EPERM),
        "effective beyond permitted"
    );
    assert_eq!(fixture.call(CAPSET, &[header, sets(1 << 7, 1 << 7)]), 0);
    assert_eq!(
        fixture.call(CAPSET, &[header, sets(1 << 7, 3 << 7)]),
        err(Errno::EPERM),
        "permitted may not grow"
    );
    let other = put(0, &[V3.to_le_bytes(), 999i32.to_le_bytes()].concat());
    assert_eq!(
        fixture.call(CAPSET, &[other, sets(0, 0)]),
        err(Errno::EPERM)
    );
    // Without CAP_SETGID, setgroups is refused; CAP_SETUID still works.
    assert_eq!(fixture.call(SETGROUPS, &[0, 0]), err(Errno::EPERM));
    assert_eq!(fixture.call(SETUID, &[1000]), 0);
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
    assert!(fixture.process().credentials().supplementary.is_empty());
    // Size 0 clears them without reading the list.
    let group = put(0, &7u32.to_le_bytes());
    assert_eq!(fixture.call(SETGROUPS, &[1, group]), 0);
    assert_eq!(&*fixture.process().credentials().supplementary, [7]);
    assert_eq!(fixture.call(SETGROUPS, &[0, UNMAPPED]), 0);
    assert!(fixture.process().credentials().supplementary.is_empty());
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
