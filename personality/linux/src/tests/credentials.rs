//! `credentials`: the rules of the `set*id` calls and of capabilities.

use alloc::vec;

use crate::credentials::*;
use vfs::Errno;

fn user(real: u32, effective: u32, saved: u32) -> Credentials {
    let mut credentials = Credentials::root();
    credentials
        .set_all_users(real, effective, saved)
        .expect("root may take any ids");
    credentials
}

#[test]
fn leaving_root_everywhere_drops_every_capability() {
    let mut credentials = Credentials::root();
    credentials.set_all_users(1, 2, 0).unwrap();
    assert_eq!(credentials.capabilities.effective, 0, "effective root left");
    assert_eq!(credentials.capabilities.permitted, ALL_CAPABILITIES);
    credentials.set_all_users(UNCHANGED, 0, UNCHANGED).unwrap();
    assert_eq!(
        credentials.capabilities.effective, ALL_CAPABILITIES,
        "back to effective root raises them"
    );
    credentials.set_user(5).unwrap();
    assert_eq!(credentials.users, Ids::all(5));
    assert_eq!(credentials.capabilities.permitted, 0);
    assert_eq!(credentials.set_user(0), Err(Errno::EPERM));
}

#[test]
fn an_unprivileged_setuid_only_moves_the_effective_id() {
    let mut credentials = user(10, 20, 30);
    assert_eq!(credentials.set_user(30), Ok(()));
    assert_eq!(
        (
            credentials.users.real,
            credentials.users.effective,
            credentials.users.saved
        ),
        (10, 30, 30)
    );
    assert_eq!(credentials.set_user(20), Err(Errno::EPERM), "20 is gone");
    assert_eq!(credentials.set_user(10), Ok(()));
    assert_eq!(credentials.users.file_system, 10);
}

#[test]
fn setreuid_saves_the_effective_id_as_linux_does() {
    let mut credentials = user(10, 20, 30);
    // The real id may only become the real or effective id.
    assert_eq!(
        credentials.set_real_effective_user(30, UNCHANGED),
        Err(Errno::EPERM)
    );
    // Effective set to the real id: the saved id stays.
    credentials.set_real_effective_user(UNCHANGED, 10).unwrap();
    assert_eq!(credentials.users.saved, 30);
    // Effective set to another: the saved id follows it.
    credentials.set_real_effective_user(UNCHANGED, 30).unwrap();
    assert_eq!(credentials.users.saved, 30);
    // Swapping real and effective: setting the real id saves.
    credentials.set_real_effective_user(30, 10).unwrap();
    assert_eq!(
        (
            credentials.users.real,
            credentials.users.effective,
            credentials.users.saved
        ),
        (30, 10, 10)
    );
}

#[test]
fn setresuid_picks_among_the_ids_it_holds() {
    let mut credentials = user(10, 20, 30);
    assert_eq!(credentials.set_all_users(30, 10, 20), Ok(()));
    assert_eq!(
        credentials.set_all_users(40, UNCHANGED, UNCHANGED),
        Err(Errno::EPERM)
    );
    assert_eq!(
        credentials.users,
        Ids {
            real: 30,
            effective: 10,
            saved: 20,
            file_system: 10
        },
        "a refused call changes nothing"
    );
}

#[test]
fn file_system_ids_carry_the_file_system_capabilities() {
    let mut credentials = Credentials::root();
    assert_eq!(credentials.set_file_system_user(7), 0);
    assert!(!credentials.capable(CAP_DAC_OVERRIDE));
    assert!(
        credentials.capable(CAP_SETUID),
        "not a file-system capability"
    );
    assert_eq!(credentials.set_file_system_user(0), 7);
    assert!(credentials.capable(CAP_DAC_OVERRIDE));
}

#[test]
fn groups_need_cap_setgid_and_are_kept_sorted() {
    let mut credentials = Credentials::root();
    credentials.set_supplementary(vec![9, 3, 5]).unwrap();
    assert_eq!(&*credentials.supplementary, [3, 5, 9]);
    assert!(credentials.in_group(5) && credentials.in_group(0) && !credentials.in_group(4));
    credentials.set_all_groups(1, 1, 1).unwrap();
    assert!(!credentials.in_group(0));
    let mut nobody = Credentials::root();
    nobody.set_all_groups(65534, 65534, 65534).unwrap();
    nobody.set_all_users(65534, 65534, 65534).unwrap();
    assert_eq!(nobody.set_supplementary(vec![]), Err(Errno::EPERM));
    assert_eq!(nobody.set_group(0), Err(Errno::EPERM));
    assert_eq!(
        nobody.set_file_system_group(0),
        65534,
        "refused, the old id"
    );
    assert_eq!(nobody.groups.file_system, 65534);
}

#[test]
fn capset_drops_but_never_adds() {
    let mut credentials = Credentials::root();
    let only = |effective: u64, permitted: u64, inheritable: u64| Capabilities {
        effective,
        permitted,
        inheritable,
    };
    // Bits beyond the last capability are ignored.
    assert_eq!(
        credentials.set_capabilities(only(u64::MAX, u64::MAX, 0)),
        Ok(())
    );
    assert_eq!(credentials.capabilities.permitted, ALL_CAPABILITIES);
    let setuid = 1 << CAP_SETUID;
    assert_eq!(
        credentials.set_capabilities(only(setuid, setuid, setuid)),
        Ok(())
    );
    assert_eq!(
        credentials.set_capabilities(only(setuid, setuid, 1 << CAP_KILL)),
        Err(Errno::EPERM),
        "inheritable beyond permitted without CAP_SETPCAP"
    );
    assert_eq!(
        credentials.set_capabilities(only(0, setuid | 1, 0)),
        Err(Errno::EPERM)
    );
    assert_eq!(credentials.set_capabilities(only(0, 0, 0)), Ok(()));
    assert_eq!(
        credentials.set_user(1),
        Err(Errno::EPERM),
        "CAP_SETUID is gone"
    );
}

#[test]
fn exec_of_a_set_id_program_takes_its_owner_and_saves_the_ids() {
    // A user runs a set-user-id-root program: effective root, every
    // capability, and the saved id follows, so it can switch back and
    // forth between the user and root.
    let mut credentials = user(1000, 1000, 1000);
    credentials.exec(Some(ProgramFile {
        mode: 0o104_755,
        uid: 0,
        gid: 0,
    }));
    assert_eq!(credentials.users.real, 1000);
    assert_eq!(credentials.users.effective, 0);
    assert_eq!(credentials.users.saved, 0);
    assert_eq!(credentials.users.file_system, 0);
    assert!(credentials.capable(CAP_SETUID));
    // A set-group-id program with group execute gives its group; without
    // it (mandatory locking's mark) it does not.
    let mut credentials = user(1000, 1000, 1000);
    credentials.exec(Some(ProgramFile {
        mode: 0o102_755,
        uid: 5,
        gid: 50,
    }));
    assert_eq!(credentials.groups.effective, 50);
    assert_eq!(credentials.users.effective, 1000);
    assert!(!credentials.capable(CAP_SETUID));
    let mut credentials = user(1000, 1000, 1000);
    credentials.exec(Some(ProgramFile {
        mode: 0o102_745,
        uid: 5,
        gid: 50,
    }));
    assert_eq!(credentials.groups.effective, credentials.groups.real);
}

#[test]
fn exec_keeps_roots_capabilities_and_drops_everyone_elses() {
    // Root runs an ordinary program: everything stays.
    let mut credentials = Credentials::root();
    credentials.exec(Some(ProgramFile {
        mode: 0o100_755,
        uid: 1000,
        gid: 1000,
    }));
    assert_eq!(credentials, Credentials::root());
    // Real root, effective user: permitted but not effective.
    let mut credentials = user(0, 1000, 1000);
    credentials.exec(None);
    assert!(!credentials.capable(CAP_SETUID));
    assert_eq!(credentials.users.saved, 1000);
    assert_ne!(credentials.capabilities.permitted, 0);
    // A user that kept capabilities loses them at exec, and a script's
    // set-id bits count for nothing.
    let mut credentials = user(1000, 1000, 1000);
    credentials.capabilities.permitted = 1 << CAP_SETUID;
    credentials.capabilities.effective = 1 << CAP_SETUID;
    credentials.exec(None);
    assert_eq!(credentials.capabilities.permitted, 0);
    assert!(!credentials.capable(CAP_SETUID));
}
