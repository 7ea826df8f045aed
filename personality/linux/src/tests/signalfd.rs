//! `signalfd`: argument checks, and reads that take the caller's pending
//! signals of the mask.

use linux_abi::{signal::*, signalfd::*, syscall::*};
use vfs::{flags::O_NONBLOCK, Errno};

use super::*;
use crate::signal::{SignalInfo, Source};

/// A signal from process 1.
fn from_user(signal: u8) -> SignalInfo {
    SignalInfo {
        signal,
        source: Source::User {
            pid: 1,
            thread: false,
        },
    }
}

#[test]
fn signalfd4_checks_size_mask_flags_and_descriptor() {
    let fixture = Fixture::new();
    let mask = put(0, &bit(SIGUSR1).to_le_bytes());
    let minus_one = u64::MAX;
    assert_eq!(
        fixture.call(SIGNALFD4, &[minus_one, mask, 4, 0]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(SIGNALFD4, &[minus_one, UNMAPPED, 8, 0]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(SIGNALFD4, &[minus_one, mask, 8, u64::MAX]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(SIGNALFD4, &[u64::MAX - 1, mask, 8, 0]),
        err(Errno::EBADF)
    );
    assert_eq!(
        fixture.call(SIGNALFD, &[1, mask, 8]),
        err(Errno::EINVAL),
        "not one"
    );
    let fd = fixture.call(SIGNALFD4, &[minus_one, mask, 8, SFD_CLOEXEC | SFD_NONBLOCK]);
    assert!(fd >= 0);
    assert_eq!(fixture.call(FCNTL, &[fd as u64, 1]), 1);
    assert_ne!(
        fixture.call(FCNTL, &[fd as u64, 3]) & i64::from(O_NONBLOCK),
        0
    );
    // Another mask on the same descriptor returns it.
    let other = put(8, &bit(SIGUSR2).to_le_bytes());
    assert_eq!(fixture.call(SIGNALFD, &[fd as u64, other, 8]), fd);
}

#[test]
fn a_read_takes_pending_signals_of_the_mask_only() {
    let fixture = Fixture::new();
    let mask = put(
        0,
        &(bit(SIGUSR1) | bit(SIGUSR2) | bit(SIGKILL)).to_le_bytes(),
    );
    let fd = fixture.call(SIGNALFD, &[u64::MAX, mask, 8]) as u64;
    let process = fixture.process();
    process.signals.lock().set_mask(
        crate::signal::current_thread(),
        bit(SIGUSR1) | bit(SIGUSR2) | bit(SIGINT),
    );
    assert!(process.signals.lock().post(from_user(SIGINT)));
    assert!(process.signals.lock().post(from_user(SIGUSR2)));
    assert!(process.signals.lock().post(from_user(SIGUSR1)));
    assert_eq!(
        fixture.call(READ, &[fd, at(0x100), 127]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(READ, &[fd, at(0x100), 3 * 128]), 256);
    assert_eq!(peek_u32(at(0x100)), u32::from(SIGUSR1));
    assert_eq!(peek_u32(at(0x100 + 12)), 1, "the sender");
    assert_eq!(peek_u32(at(0x180)), u32::from(SIGUSR2));
    // SIGINT is not in the mask: it stays pending.
    assert_eq!(
        process
            .signals
            .lock()
            .pending_for(crate::signal::current_thread()),
        bit(SIGINT)
    );
    let poster = process.clone();
    fake::once_blocked(move || {
        poster.signals.lock().post(from_user(SIGUSR2));
    });
    assert_eq!(fixture.call(READ, &[fd, at(0x100), 128]), 128);
    assert_eq!(peek_u32(at(0x100)), u32::from(SIGUSR2));
    assert_eq!(fake::blocks(), [("signalfd read", None)]);
    let flags = fixture.call(FCNTL, &[fd, 3]) as u64;
    assert_eq!(
        fixture.call(FCNTL, &[fd, 4, flags | u64::from(O_NONBLOCK)]),
        0
    );
    assert_eq!(
        fixture.call(READ, &[fd, at(0x100), 128]),
        err(Errno::EAGAIN)
    );
}
