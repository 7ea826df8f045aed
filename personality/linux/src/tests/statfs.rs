//! `statfs`: `statfs` and `fstatfs`.

use linux_abi::{statfs::TMPFS_MAGIC, syscall::*};
use vfs::{flags::*, Errno};

use super::*;

#[test]
fn statfs_checks_its_path_and_buffer() {
    let fixture = Fixture::new();
    let path = put_string(0, b"/tmp");
    let missing = put_string(64, b"/sys/fs/selinux");
    assert_eq!(
        fixture.call(STATFS, &[UNMAPPED, at(256)]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(STATFS, &[missing, at(256)]),
        err(Errno::ENOENT)
    );
    assert_eq!(fixture.call(STATFS, &[path, UNMAPPED]), err(Errno::EFAULT));
    assert_eq!(
        fixture.call(STATFS, &[path, UNMAPPED - 8]),
        err(Errno::EFAULT)
    );
    assert_eq!(fixture.call(STATFS, &[path, at(256)]), 0);
    assert_eq!(peek_u64(at(256)), TMPFS_MAGIC as u64, "f_type");
}

#[test]
fn fstatfs_checks_its_descriptor_and_buffer() {
    let fixture = Fixture::new();
    assert_eq!(fixture.call(FSTATFS, &[42, at(0)]), err(Errno::EBADF));
    assert_eq!(
        fixture.call(FSTATFS, &[0xffff_ffff, at(0)]),
        err(Errno::EBADF)
    );
    let fd = fixture.open(b"/tmp", O_RDONLY | O_DIRECTORY);
    assert_eq!(fixture.call(FSTATFS, &[fd, UNMAPPED]), err(Errno::EFAULT));
    assert_eq!(fixture.call(FSTATFS, &[fd, at(0)]), 0);
    assert_eq!(peek_u64(at(0)), TMPFS_MAGIC as u64);
}
