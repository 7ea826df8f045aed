extern crate std;

use std::string::ToString;

use crate::Errno;

#[test]
fn numbers_are_linux_numbers() {
    let expected = [
        (Errno::ENOENT, 2),
        (Errno::EIO, 5),
        (Errno::EBADF, 9),
        (Errno::EACCES, 13),
        (Errno::EFAULT, 14),
        (Errno::EEXIST, 17),
        (Errno::EXDEV, 18),
        (Errno::ENOTDIR, 20),
        (Errno::EISDIR, 21),
        (Errno::EINVAL, 22),
        (Errno::EMFILE, 24),
        (Errno::ENOTTY, 25),
        (Errno::EFBIG, 27),
        (Errno::ENOSPC, 28),
        (Errno::ESPIPE, 29),
        (Errno::EROFS, 30),
        (Errno::EMLINK, 31),
        (Errno::EPIPE, 32),
        (Errno::ENAMETOOLONG, 36),
        (Errno::ENOSYS, 38),
        (Errno::ENOTEMPTY, 39),
        (Errno::ELOOP, 40),
        (Errno::EOPNOTSUPP, 95),
    ];
    for (errno, number) in expected {
        assert_eq!(errno.as_i32(), number);
        assert_eq!(errno.as_negative(), -i64::from(number));
        assert_eq!(Errno::new(number), Some(errno));
    }
    assert_eq!(Errno::EWOULDBLOCK, Errno::EAGAIN);
    assert_eq!(Errno::new(0), None);
    assert_eq!(Errno::new(4096), None);
}

#[test]
fn display_gives_the_linux_message() {
    assert_eq!(Errno::ENOENT.to_string(), "No such file or directory");
    assert_eq!(
        Errno::ELOOP.to_string(),
        "Too many levels of symbolic links"
    );
    assert_eq!(Errno::EXDEV.to_string(), "Invalid cross-device link");
    assert_eq!(Errno::new(300).unwrap().to_string(), "Unknown error 300");
    assert_eq!(Errno::ENOTEMPTY.name(), Some("ENOTEMPTY"));
}
