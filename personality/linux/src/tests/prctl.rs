//! `prctl`: each option's argument checks, the parent-death signal, the
//! flags set once, the security bits and the bounding set.

use linux_abi::{prctl::*, syscall::*};
use vfs::Errno;

use super::*;

#[test]
fn prctl_names_the_process_and_refuses_what_it_does_not_know() {
    let fixture = Fixture::new();
    assert_eq!(fixture.call(PRCTL, &[9999, 0]), err(Errno::EINVAL));
    assert_eq!(
        fixture.call(PRCTL, &[PR_SET_DUMPABLE, 2]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(PRCTL, &[PR_SET_DUMPABLE, 1]), 0);
    assert_eq!(fixture.call(PRCTL, &[PR_GET_DUMPABLE, 0]), 1);
    assert_eq!(
        fixture.call(PRCTL, &[PR_SET_NAME, UNMAPPED]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(PRCTL, &[PR_GET_NAME, UNMAPPED]),
        err(Errno::EFAULT)
    );
    let name = put_string(0, b"a-name-longer-than-fifteen-bytes");
    assert_eq!(fixture.call(PRCTL, &[PR_SET_NAME, name]), 0);
    assert_eq!(fixture.call(PRCTL, &[PR_GET_NAME, at(64)]), 0);
    assert_eq!(fake::peek(at(64), 16), b"a-name-longer-t\0");
    assert_eq!(
        fixture.process().command_name().as_deref(),
        Some(&b"a-name-longer-t"[..])
    );
}

#[test]
fn the_parent_death_signal_is_a_valid_signal_read_back_as_an_int() {
    let fixture = Fixture::new();
    for bad in [65, u64::from(u32::MAX), u64::MAX] {
        assert_eq!(
            fixture.call(PRCTL, &[PR_SET_PDEATHSIG, bad]),
            err(Errno::EINVAL)
        );
    }
    assert_eq!(fixture.call(PRCTL, &[PR_SET_PDEATHSIG, 12]), 0);
    assert_eq!(
        fixture.call(PRCTL, &[PR_GET_PDEATHSIG, UNMAPPED]),
        err(Errno::EFAULT)
    );
    assert_eq!(fixture.call(PRCTL, &[PR_GET_PDEATHSIG, at(0)]), 0);
    assert_eq!(peek_u32(at(0)), 12);
    assert_eq!(fixture.personality.parent_death_signal(PID), Some(12));
}

#[test]
fn the_parent_death_signal_is_not_inherited_and_goes_with_a_new_identity() {
    let fixture = Fixture::new();
    assert_eq!(fixture.call(PRCTL, &[PR_SET_PDEATHSIG, 10]), 0);
    fixture.personality.process_forked(PID, PID + 1);
    assert_eq!(fixture.personality.parent_death_signal(PID + 1), None);
    assert_eq!(fixture.call(SETUID, &[1000]), 0);
    assert_eq!(fixture.personality.parent_death_signal(PID), None);
    fixture.personality.process_ended(PID + 1);
}

#[test]
fn no_new_privileges_and_huge_pages_check_every_argument() {
    let fixture = Fixture::new();
    assert_eq!(fixture.call(PRCTL, &[PR_GET_NO_NEW_PRIVS, 0]), 0);
    for args in [[0, 0, 0, 0], [1, 1, 0, 0], [1, 0, 0, 1], [2, 0, 0, 0]] {
        let mut call = alloc::vec![PR_SET_NO_NEW_PRIVS];
        call.extend(args);
        assert_eq!(fixture.call(PRCTL, &call), err(Errno::EINVAL));
    }
    assert_eq!(
        fixture.call(PRCTL, &[PR_GET_NO_NEW_PRIVS, 1]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(PRCTL, &[PR_SET_NO_NEW_PRIVS, 1]), 0);
    assert_eq!(fixture.call(PRCTL, &[PR_GET_NO_NEW_PRIVS, 0]), 1);
    fixture.personality.process_forked(PID, PID + 1);
    assert_eq!(
        fixture
            .personality
            .handle(PID + 1, PRCTL, [PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0, 0]),
        Some(1),
        "inherited"
    );
    fixture.personality.process_ended(PID + 1);
    assert_eq!(
        fixture.call(PRCTL, &[PR_SET_THP_DISABLE, 0, 1]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(PRCTL, &[PR_GET_THP_DISABLE, 1]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(PRCTL, &[PR_SET_THP_DISABLE, 1]), 0);
    assert_eq!(fixture.call(PRCTL, &[PR_GET_THP_DISABLE, 0]), 1);
}

#[test]
fn timing_is_statistical_and_seccomp_is_not_built() {
    let fixture = Fixture::new();
    assert_eq!(fixture.call(PRCTL, &[PR_GET_TIMING]), 0);
    assert_eq!(fixture.call(PRCTL, &[PR_SET_TIMING, 1]), err(Errno::EINVAL));
    assert_eq!(fixture.call(PRCTL, &[PR_SET_TIMING, 0]), 0);
    assert_eq!(fixture.call(PRCTL, &[PR_GET_SECCOMP]), err(Errno::EINVAL));
}

#[test]
fn security_bits_and_the_bounding_set_need_cap_setpcap() {
    let fixture = Fixture::new();
    const SECBIT_KEEP_CAPS: u64 = 0x10;
    const SECBIT_KEEP_CAPS_LOCKED: u64 = 0x20;
    assert_eq!(fixture.call(PRCTL, &[PR_CAPBSET_READ, 8]), 1);
    assert_eq!(
        fixture.call(PRCTL, &[PR_CAPBSET_READ, 41]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(PRCTL, &[PR_CAPBSET_DROP, 41]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(PRCTL, &[PR_CAPBSET_DROP, 7]), 0);
    assert_eq!(fixture.call(PRCTL, &[PR_CAPBSET_READ, 7]), 0);
    assert_eq!(
        fixture.call(PRCTL, &[PR_SET_SECUREBITS, 0x100]),
        err(Errno::EPERM),
        "an undefined bit"
    );
    assert_eq!(
        fixture.call(
            PRCTL,
            &[
                PR_SET_SECUREBITS,
                SECBIT_KEEP_CAPS | SECBIT_KEEP_CAPS_LOCKED
            ]
        ),
        0
    );
    assert_eq!(
        fixture.call(PRCTL, &[PR_GET_SECUREBITS]),
        (SECBIT_KEEP_CAPS | SECBIT_KEEP_CAPS_LOCKED) as i64
    );
    assert_eq!(fixture.call(PRCTL, &[PR_GET_KEEPCAPS]), 1);
    assert_eq!(
        fixture.call(PRCTL, &[PR_SET_KEEPCAPS, 0]),
        err(Errno::EPERM),
        "locked"
    );
    assert_eq!(
        fixture.call(PRCTL, &[PR_SET_SECUREBITS, SECBIT_KEEP_CAPS_LOCKED]),
        err(Errno::EPERM),
        "a locked bit may not change"
    );
    // Keeping capabilities: leaving root keeps the permitted set.
    assert_eq!(fixture.call(SETUID, &[1000]), 0);
    let credentials = fixture.process().credentials();
    assert_ne!(credentials.capabilities.permitted, 0);
    assert_eq!(credentials.capabilities.effective, 0);
    // Without CAP_SETPCAP (not effective now): EPERM first.
    assert_eq!(
        fixture.call(PRCTL, &[PR_CAPBSET_DROP, 41]),
        err(Errno::EPERM)
    );
    assert_eq!(
        fixture.call(PRCTL, &[PR_SET_SECUREBITS, 0]),
        err(Errno::EPERM)
    );
}

#[test]
fn keep_capabilities_takes_zero_or_one_and_ends_with_the_program() {
    let fixture = Fixture::new();
    assert_eq!(
        fixture.call(PRCTL, &[PR_SET_KEEPCAPS, 2]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(PRCTL, &[PR_SET_KEEPCAPS, 1]), 0);
    assert_eq!(fixture.call(PRCTL, &[PR_GET_KEEPCAPS]), 1);
    fixture.personality.process_executed(PID, None);
    assert_eq!(fixture.call(PRCTL, &[PR_GET_KEEPCAPS]), 0);
    assert_eq!(fixture.call(SETUID, &[1000]), 0);
    assert_eq!(fixture.process().credentials().capabilities.permitted, 0);
}
