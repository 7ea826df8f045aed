//! `xattr`: extended attributes kept by the in-memory file system, with
//! Linux's checks and namespace rules.

use linux_abi::syscall::*;
use vfs::{flags::*, Errno};

use super::*;

#[test]
fn the_target_is_checked_before_the_name() {
    let fixture = Fixture::new();
    let name = put_string(0, b"user.test");
    let missing = put_string(64, b"/tmp/missing");
    for number in [
        GETXATTR,
        LGETXATTR,
        SETXATTR,
        LSETXATTR,
        REMOVEXATTR,
        LREMOVEXATTR,
    ] {
        assert_eq!(fixture.call(number, &[missing, name]), err(Errno::ENOENT));
        assert_eq!(fixture.call(number, &[UNMAPPED, name]), err(Errno::EFAULT));
    }
    for number in [FGETXATTR, FSETXATTR, FREMOVEXATTR] {
        assert_eq!(fixture.call(number, &[42, name]), err(Errno::EBADF));
    }
    assert_eq!(fixture.call(LISTXATTR, &[missing]), err(Errno::ENOENT));
    assert_eq!(fixture.call(LLISTXATTR, &[UNMAPPED]), err(Errno::EFAULT));
    assert_eq!(fixture.call(FLISTXATTR, &[42]), err(Errno::EBADF));
}

#[test]
fn a_name_must_be_readable_and_between_one_and_255_bytes() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"");
    let path = put_string(0, b"/tmp/data");
    let empty = put_string(64, b"");
    let longest = put_string(128, &[b'n'; 255]);
    let too_long = put_string(512, &[b'n'; 256]);
    for number in [GETXATTR, SETXATTR, REMOVEXATTR] {
        assert_eq!(fixture.call(number, &[path, empty]), err(Errno::ERANGE));
        assert_eq!(fixture.call(number, &[path, too_long]), err(Errno::ERANGE));
        assert_eq!(fixture.call(number, &[path, UNMAPPED]), err(Errno::EFAULT));
        assert_ne!(fixture.call(number, &[path, longest]), err(Errno::ERANGE));
    }
}

#[test]
fn attributes_are_kept_read_listed_and_removed() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"");
    let path = put_string(0, b"/tmp/data");
    let user_name = put_string(64, b"user.colour");
    let security_name = put_string(128, b"security.label");
    let value = put(192, b"blue");
    let fd = fixture.open(b"/tmp/data", O_RDONLY);
    assert_eq!(
        fixture.call(GETXATTR, &[path, user_name, at(256), 64]),
        err(Errno::ENODATA)
    );
    assert_eq!(fixture.call(LISTXATTR, &[path, at(256), 64]), 0);
    assert_eq!(fixture.call(SETXATTR, &[path, user_name, value, 4, 0]), 0);
    assert_eq!(
        fixture.call(FSETXATTR, &[fd, security_name, value, 2, 1]),
        0
    );
    // Size 0 asks the length; a short buffer is ERANGE.
    assert_eq!(fixture.call(GETXATTR, &[path, user_name, 0, 0]), 4);
    assert_eq!(
        fixture.call(GETXATTR, &[path, user_name, at(256), 3]),
        err(Errno::ERANGE)
    );
    assert_eq!(fixture.call(FGETXATTR, &[fd, user_name, at(256), 64]), 4);
    assert_eq!(fake::peek(at(256), 4), b"blue");
    let names = b"security.label\0user.colour\0";
    assert_eq!(fixture.call(LISTXATTR, &[path, 0, 0]), names.len() as i64);
    assert_eq!(
        fixture.call(FLISTXATTR, &[fd, at(256), 1]),
        err(Errno::ERANGE)
    );
    assert_eq!(
        fixture.call(LLISTXATTR, &[path, at(256), 64]),
        names.len() as i64
    );
    assert_eq!(fake::peek(at(256), names.len()), names);
    assert_eq!(
        fixture.call(LISTXATTR, &[path, UNMAPPED, 64]),
        err(Errno::EFAULT)
    );
    assert_eq!(fixture.call(REMOVEXATTR, &[path, user_name]), 0);
    assert_eq!(
        fixture.call(REMOVEXATTR, &[path, user_name]),
        err(Errno::ENODATA)
    );
    assert_eq!(
        fixture.call(GETXATTR, &[path, user_name, 0, 0]),
        err(Errno::ENODATA)
    );
}

#[test]
fn setxattr_checks_flags_size_and_namespace() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"");
    let path = put_string(0, b"/tmp/data");
    let name = put_string(64, b"user.a");
    let value = put(192, b"v");
    assert_eq!(
        fixture.call(SETXATTR, &[path, name, value, 1, 4]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(SETXATTR, &[path, name, value, 1, 2]),
        err(Errno::ENODATA)
    );
    assert_eq!(fixture.call(SETXATTR, &[path, name, value, 1, 1]), 0);
    assert_eq!(
        fixture.call(SETXATTR, &[path, name, value, 1, 1]),
        err(Errno::EEXIST)
    );
    assert_eq!(
        fixture.call(SETXATTR, &[path, name, value, 0, 2]),
        0,
        "an empty value"
    );
    assert_eq!(
        fixture.call(SETXATTR, &[path, name, value, 65_537, 0]),
        err(Errno::E2BIG)
    );
    assert_eq!(
        fixture.call(SETXATTR, &[path, name, UNMAPPED, 1, 0]),
        err(Errno::EFAULT)
    );
    let unknown = put_string(256, b"other.a");
    assert_eq!(
        fixture.call(SETXATTR, &[path, unknown, value, 1, 0]),
        err(Errno::EOPNOTSUPP)
    );
    let bare = put_string(320, b"user.");
    assert_eq!(
        fixture.call(SETXATTR, &[path, bare, value, 1, 0]),
        err(Errno::EINVAL)
    );
}

#[test]
fn user_attributes_belong_to_files_and_directories_and_follow_the_mode() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"");
    let path = put_string(0, b"/tmp/data");
    let link = put_string(32, b"/tmp/link");
    assert_eq!(fixture.call(SYMLINK, &[path, link]), 0);
    let name = put_string(64, b"user.a");
    let trusted = put_string(96, b"trusted.a");
    let value = put(192, b"v");
    assert_eq!(
        fixture.call(LSETXATTR, &[link, name, value, 1, 0]),
        err(Errno::EPERM)
    );
    assert_eq!(
        fixture.call(LGETXATTR, &[link, name, 0, 0]),
        err(Errno::ENODATA)
    );
    assert_eq!(fixture.call(SETXATTR, &[path, trusted, value, 1, 0]), 0);
    assert_eq!(fixture.call(SETRESUID, &[1000, 1000, 1000]), 0);
    // Mode 0644, owned by root: others may read but not write.
    assert_eq!(
        fixture.call(SETXATTR, &[path, name, value, 1, 0]),
        err(Errno::EACCES)
    );
    assert_eq!(
        fixture.call(GETXATTR, &[path, name, 0, 0]),
        err(Errno::ENODATA)
    );
    assert_eq!(
        fixture.call(SETXATTR, &[path, trusted, value, 1, 0]),
        err(Errno::EPERM)
    );
    assert_eq!(
        fixture.call(LISTXATTR, &[path, 0, 0]),
        0,
        "trusted.a is hidden"
    );
}
