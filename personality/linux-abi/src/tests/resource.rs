use crate::{resource::Rusage, time::Timeval};

#[test]
fn rusage_has_the_linux_layout() {
    let usage = Rusage {
        utime: Timeval { sec: 2, usec: 5 },
        maxrss: 1024,
        minflt: 77,
        nivcsw: 9,
        ..Rusage::default()
    };
    let bytes = usage.to_bytes();
    let long_at = |at: usize| i64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    assert_eq!(bytes.len(), 144);
    assert_eq!(long_at(0), 2, "ru_utime.tv_sec");
    assert_eq!(long_at(8), 5, "ru_utime.tv_usec");
    assert_eq!(long_at(32), 1024, "ru_maxrss");
    assert_eq!(long_at(64), 77, "ru_minflt");
    assert_eq!(long_at(136), 9, "ru_nivcsw");
}
