//! The system-call table itself: which calls are the personality's, and
//! that every one of them answers any arguments with a result or an
//! errno, never a panic.

use linux_abi::syscall::*;
use proptest::prelude::*;

use super::*;
use crate::owns;

/// Numbers past every x86_64 system call.
const NUMBERS: u64 = 512;

/// The calls of the personality's own families.
fn own_calls() -> Vec<u64> {
    (0..NUMBERS).filter(|&number| owns(number)).collect()
}

#[test]
fn the_personality_owns_its_families_and_leaves_the_core_its_own() {
    for number in [
        READ,
        WRITE,
        OPENAT,
        POLL,
        RT_SIGACTION,
        SOCKET,
        PIPE2,
        UNAME,
    ] {
        assert!(owns(number), "{}", name(number).unwrap_or("?"));
    }
    for number in [
        MMAP, CLONE, EXECVE, WAIT4, KILL, FUTEX, NANOSLEEP, EXIT_GROUP,
    ] {
        assert!(!owns(number), "{}", name(number).unwrap_or("?"));
    }
    assert!(!owns(NUMBERS) && !owns(u64::MAX));
    assert!(own_calls().len() > 100);
}

#[test]
fn a_call_is_answered_only_for_a_process_of_the_personality() {
    let fixture = Fixture::new();
    assert_eq!(fixture.personality.handle(999, GETPID, [0; 6]), None);
    assert_eq!(fixture.personality.handle(PID, MMAP, [0; 6]), None);
    assert_eq!(fixture.personality.handle(999, GETUID, [0; 6]), None);
    assert_eq!(fixture.personality.handle(PID, GETUID, [0; 6]), Some(0));
}

#[test]
fn every_call_answers_the_simplest_and_the_wildest_arguments() {
    for args in [
        [0; 6],
        [u64::MAX; 6],
        [UNMAPPED; 6],
        [at(0); 6],
        [1 << 63; 6],
    ] {
        for number in own_calls() {
            let fixture = Fixture::new();
            // A wait ends at once: a signal to take.
            fake::set_interrupted(true);
            let result = fixture.call(number, &args);
            assert!(
                result >= -4095,
                "{} answered {result}",
                name(number).unwrap_or("?")
            );
        }
    }
}

/// An argument as a program might pass it, good or bad.
fn argument() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        0u64..8,
        Just(u64::MAX),
        Just(0xffff_ffff),
        Just(1 << 63),
        Just(UNMAPPED),
        Just(KERNEL_ADDRESS),
        (0..MAPPED_BYTES as u64).prop_map(|offset| MAPPED + offset),
        any::<u64>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Random calls of the table with random arguments, on a machine
    /// whose waits end at once: every one answers, none panics.
    #[test]
    fn random_calls_never_panic(
        index in any::<prop::sample::Index>(),
        args in proptest::array::uniform6(argument()),
        memory in proptest::collection::vec(any::<u8>(), 64),
    ) {
        let calls = own_calls();
        let number = calls[index.index(calls.len())];
        let fixture = Fixture::new();
        fake::set_interrupted(true);
        // Some of the pointed-to memory holds random bytes.
        put(0, &memory);
        let result = fixture.call(number, &args);
        prop_assert!(result >= -4095, "{} answered {}", name(number).unwrap_or("?"), result);
    }
}
