//! `xattr`: extended attributes, none kept, with Linux's checks first.

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
fn no_attribute_is_kept() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"");
    let path = put_string(0, b"/tmp/data");
    let name = put_string(64, b"security.selinux");
    let fd = fixture.open(b"/tmp/data", O_RDONLY);
    assert_eq!(fixture.call(GETXATTR, &[path, name]), err(Errno::ENODATA));
    assert_eq!(fixture.call(FGETXATTR, &[fd, name]), err(Errno::ENODATA));
    assert_eq!(
        fixture.call(SETXATTR, &[path, name]),
        err(Errno::EOPNOTSUPP)
    );
    assert_eq!(
        fixture.call(REMOVEXATTR, &[path, name]),
        err(Errno::ENODATA)
    );
    assert_eq!(fixture.call(LISTXATTR, &[path]), 0);
    assert_eq!(fixture.call(FLISTXATTR, &[fd]), 0);
}
