use crate::time::{Itimerval, Timespec, Timeval, UTIME_NOW, UTIME_OMIT};

#[test]
fn timespec_is_seconds_then_nanoseconds() {
    let time = Timespec::from_nanoseconds(3_000_000_042);
    assert_eq!(time, Timespec { sec: 3, nsec: 42 });
    let bytes = time.to_bytes();
    assert_eq!(bytes.len(), 16);
    assert_eq!(bytes[..8], 3i64.to_le_bytes());
    assert_eq!(bytes[8..], 42i64.to_le_bytes());
    assert_eq!(Timespec::from_bytes(&bytes), time);
    assert_eq!(time.to_nanoseconds(), Some(3_000_000_042));
}

#[test]
fn invalid_times_have_no_nanoseconds() {
    assert_eq!(Timespec { sec: -1, nsec: 0 }.to_nanoseconds(), None);
    assert_eq!(
        Timespec {
            sec: 0,
            nsec: 1_000_000_000
        }
        .to_nanoseconds(),
        None
    );
    assert_eq!(Timespec { sec: 0, nsec: -1 }.to_nanoseconds(), None);
    assert_eq!(
        Timeval {
            sec: 0,
            usec: 1_000_000
        }
        .to_nanoseconds(),
        None
    );
    assert_eq!(
        Timespec {
            sec: i64::MAX,
            nsec: 0
        }
        .to_nanoseconds(),
        Some(u64::MAX)
    );
}

#[test]
fn timeval_is_seconds_then_microseconds() {
    let time = Timeval::from_nanoseconds(2_000_345_678);
    assert_eq!(time, Timeval { sec: 2, usec: 345 });
    assert_eq!(time.to_nanoseconds(), Some(2_000_345_000));
    let bytes = time.to_bytes();
    assert_eq!(bytes.len(), 16);
    assert_eq!(bytes[8..], 345i64.to_le_bytes());
    assert_eq!(Timeval::from_bytes(&bytes), time);
}

#[test]
fn itimerval_is_interval_then_value() {
    let timer = Itimerval {
        interval: Timeval { sec: 1, usec: 2 },
        value: Timeval { sec: 3, usec: 4 },
    };
    let bytes = timer.to_bytes();
    assert_eq!(bytes.len(), 32);
    assert_eq!(bytes[16..24], 3i64.to_le_bytes());
    assert_eq!(Itimerval::from_bytes(&bytes), timer);
    assert_eq!((UTIME_NOW, UTIME_OMIT), (0x3fff_ffff, 0x3fff_fffe));
}

#[test]
fn sigevent_is_value_signal_notify_then_the_thread_id() {
    use crate::time::{Sigevent, SIGEV_THREAD_ID};
    let mut bytes = [0u8; Sigevent::BYTES];
    bytes[..8].copy_from_slice(&0x1234_5678_9abc_def0u64.to_le_bytes());
    bytes[8..12].copy_from_slice(&14i32.to_le_bytes());
    bytes[12..16].copy_from_slice(&SIGEV_THREAD_ID.to_le_bytes());
    bytes[16..20].copy_from_slice(&42i32.to_le_bytes());
    assert_eq!(
        Sigevent::from_bytes(&bytes),
        Sigevent {
            value: 0x1234_5678_9abc_def0,
            signo: 14,
            notify: SIGEV_THREAD_ID,
            thread_id: 42,
        }
    );
}
