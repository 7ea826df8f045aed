//! `scheduling`: policies, priorities, nice values and I/O priorities.

use linux_abi::Errno;

use crate::scheduling::*;

#[test]
fn policies_decode_with_their_priority_ranges() {
    assert_eq!(policy(0), Ok((Policy::Other, false)));
    assert_eq!(policy(2 | RESET_ON_FORK), Ok((Policy::RoundRobin, true)));
    assert_eq!(policy(4), Err(Errno::EINVAL), "there is no policy 4");
    assert_eq!(policy(6), Err(Errno::EINVAL), "SCHED_DEADLINE");
    assert_eq!(policy(u64::MAX), Err(Errno::EINVAL));
    assert_eq!(Policy::Fifo.priority_range(), (1, 99));
    assert_eq!(Policy::Batch.priority_range(), (0, 0));
    assert_eq!(priority(Policy::Fifo, 99), Ok(99));
    assert_eq!(priority(Policy::Fifo, 0), Err(Errno::EINVAL));
    assert_eq!(priority(Policy::RoundRobin, 100), Err(Errno::EINVAL));
    assert_eq!(priority(Policy::Other, 1), Err(Errno::EINVAL));
    assert_eq!(priority(Policy::Other, -1), Err(Errno::EINVAL));
    assert_eq!(Policy::Idle.number(), 5);
}

#[test]
fn nice_values_are_clamped_and_reported_as_linux_does() {
    assert_eq!(clamp_nice(5), 5);
    assert_eq!(clamp_nice(-100i64 as u64), -20);
    assert_eq!(clamp_nice(100), 19);
    assert_eq!(
        clamp_nice((1 << 32) | 3),
        3,
        "an int: the high half is not read"
    );
    assert_eq!(priority_of_nice(-20), 40);
    assert_eq!(priority_of_nice(19), 1);
}

#[test]
fn priority_targets_decode() {
    assert_eq!(priority_target(0, 0), Ok(PriorityTarget::Process(0)));
    assert_eq!(priority_target(1, 7), Ok(PriorityTarget::Group(7)));
    assert_eq!(priority_target(2, 1000), Ok(PriorityTarget::User(1000)));
    assert_eq!(priority_target(3, 0), Err(Errno::EINVAL));
    assert_eq!(priority_target(0, u64::MAX), Err(Errno::ESRCH));
    assert_eq!(io_priority_target(1, 0), Ok(PriorityTarget::Process(0)));
    assert_eq!(io_priority_target(0, 0), Err(Errno::EINVAL));
}

#[test]
fn the_scheduler_gets_ranks_for_real_time_and_slices_for_nice() {
    let mut thread = ThreadScheduling::default();
    assert_eq!(thread.treatment(10), (0, Some(10)));
    thread.nice = 19;
    assert_eq!(thread.treatment(10), (0, Some(1)), "at least a tick");
    thread.nice = -5;
    assert_eq!(thread.treatment(10), (0, Some(30)));
    thread.nice = -20;
    assert_eq!(thread.treatment(10), (0, Some(100)), "bounded");
    thread.policy = Policy::Fifo;
    thread.priority = 50;
    assert_eq!(thread.treatment(10), (50, None));
    thread.policy = Policy::RoundRobin;
    assert_eq!(thread.treatment(10), (50, Some(10)));
    thread.policy = Policy::Idle;
    assert_eq!(thread.treatment(10), (0, Some(1)));
}

#[test]
fn reset_on_fork_gives_children_the_defaults() {
    let parent = ThreadScheduling {
        policy: Policy::Fifo,
        priority: 10,
        nice: -3,
        reset_on_fork: true,
    };
    assert_eq!(parent.for_child(), ThreadScheduling::default());
    let kept = ThreadScheduling {
        reset_on_fork: false,
        ..parent
    };
    assert_eq!(kept.for_child(), kept);
}

#[test]
fn io_priorities_need_a_known_class_and_level() {
    assert_eq!(io_priority(IOPRIO_DEFAULT as u64), Ok((IOPRIO_DEFAULT, 2)));
    assert_eq!(io_priority((1 << 13) | 7), Ok(((1 << 13) | 7, 1)));
    assert_eq!(io_priority((2 << 13) | 8), Err(Errno::EINVAL));
    assert_eq!(
        io_priority(1),
        Err(Errno::EINVAL),
        "class none takes no level"
    );
    assert_eq!(io_priority(4 << 13), Err(Errno::EINVAL));
    assert_eq!(io_priority(3 << 13), Ok((3 << 13, 3)));
}
