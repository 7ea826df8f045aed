//! `timer_create`'s `struct sigevent` checks.

use linux_abi::{
    time::{Sigevent, SIGEV_NONE, SIGEV_SIGNAL, SIGEV_THREAD, SIGEV_THREAD_ID},
    Errno,
};

use crate::timer_args::{timer_notice, TimerNotice};

const OWN_THREAD: i32 = 12;

fn decode(notify: i32, signo: i32, thread_id: i32) -> Result<TimerNotice, Errno> {
    let event = Sigevent {
        value: 77,
        signo,
        notify,
        thread_id,
    };
    timer_notice(&event, |thread| thread == OWN_THREAD)
}

#[test]
fn a_signal_goes_to_the_process_with_its_value() {
    let expected = Ok(TimerNotice::Signal {
        signal: 10,
        thread: None,
        value: Some(77),
    });
    assert_eq!(decode(SIGEV_SIGNAL, 10, 0), expected);
    assert_eq!(
        decode(SIGEV_THREAD, 10, 0),
        expected,
        "the C library's threads"
    );
}

#[test]
fn a_thread_id_must_name_a_thread_of_the_callers_process() {
    assert_eq!(
        decode(SIGEV_THREAD_ID, 34, OWN_THREAD),
        Ok(TimerNotice::Signal {
            signal: 34,
            thread: Some(OWN_THREAD as u64),
            value: Some(77),
        })
    );
    assert_eq!(decode(SIGEV_THREAD_ID, 34, 13), Err(Errno::EINVAL));
    assert_eq!(decode(SIGEV_THREAD_ID, 34, -1), Err(Errno::EINVAL));
}

#[test]
fn signals_outside_one_to_sigrtmax_are_refused_unless_nothing_is_sent() {
    assert_eq!(decode(SIGEV_SIGNAL, 0, 0), Err(Errno::EINVAL));
    assert_eq!(decode(SIGEV_SIGNAL, 65, 0), Err(Errno::EINVAL));
    assert_eq!(decode(SIGEV_SIGNAL, -1, 0), Err(Errno::EINVAL));
    assert_eq!(decode(SIGEV_NONE, 0, 0), Ok(TimerNotice::Nothing));
}

#[test]
fn an_unknown_notification_is_refused_even_with_the_signal_bit() {
    // LTP's timer_create03 (CVE-2017-18344): SIGEV_SIGNAL | 54321.
    assert_eq!(decode(SIGEV_SIGNAL | 54321, 14, 0), Err(Errno::EINVAL));
    assert_eq!(
        decode(SIGEV_THREAD_ID | SIGEV_NONE, 14, OWN_THREAD),
        Err(Errno::EINVAL)
    );
    assert_eq!(decode(3, 14, 0), Err(Errno::EINVAL));
}
