use crate::lock::*;

#[test]
fn commands_and_types_are_linux_values() {
    // From asm-generic/fcntl.h and linux/fcntl.h.
    assert_eq!((F_GETLK, F_SETLK, F_SETLKW), (5, 6, 7));
    assert_eq!((F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW), (36, 37, 38));
    assert_eq!((F_RDLCK, F_WRLCK, F_UNLCK), (0, 1, 2));
    assert_eq!(
        (LOCK_SH, LOCK_EX, LOCK_NB, LOCK_UN, LOCK_MAND),
        (1, 2, 4, 8, 32)
    );
}

#[test]
fn flock_has_the_x86_64_layout() {
    let lock = Flock {
        l_type: F_WRLCK,
        l_whence: 1,
        l_start: -5,
        l_len: 0x0102_0304_0506_0708,
        l_pid: -1,
    };
    let bytes = lock.to_bytes();
    assert_eq!(bytes.len(), 32);
    assert_eq!(bytes[0..2], 1i16.to_le_bytes());
    assert_eq!(bytes[2..4], 1i16.to_le_bytes());
    assert_eq!(bytes[8..16], (-5i64).to_le_bytes());
    assert_eq!(bytes[16..24], 0x0102_0304_0506_0708i64.to_le_bytes());
    assert_eq!(bytes[24..28], (-1i32).to_le_bytes());
    assert_eq!(Flock::from_bytes(&bytes), lock);
}
