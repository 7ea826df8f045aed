//! In-kernel tests, run by `spindle.mode=test` after the kernel is up.
//!
//! Each test is a function returning `Ok(())` or a message saying what went
//! wrong. The runner prints `test <name> ... ok` or `... FAILED: <why>` per
//! test and the plain summary line `N passed, N failed` that `./x test`
//! checks against the `running N tests` line printed first. Tests are grouped by the subsystem they prove.

use alloc::string::String;

mod busybox;
mod dynamic;
mod extensions;
mod lockups;
mod memory;
mod native;
mod network;
mod page_cache;
mod procfs;
mod services;
mod shared_memory;
mod signals;
mod sockets;
mod strands;
mod threads;
mod tracing;
mod traps;
mod user;

/// A test's outcome: `Err` says what went wrong.
pub type TestResult = Result<(), String>;

/// One named in-kernel test.
pub struct KernelTest {
    /// Name printed by the runner.
    pub name: &'static str,
    /// The test body.
    pub run: fn() -> TestResult,
}

/// Fails the enclosing test with a formatted message unless `condition`.
macro_rules! ensure {
    ($condition:expr, $($message:tt)+) => {
        if !$condition {
            return Err(alloc::format!($($message)+));
        }
    };
}
pub(crate) use ensure;

/// Runs every test; returns whether all passed.
pub fn run_all() -> bool {
    let groups: [&[KernelTest]; 18] = [
        memory::TESTS,
        lockups::TESTS,
        services::TESTS,
        traps::TESTS,
        threads::TESTS,
        strands::TESTS,
        extensions::TESTS,
        native::TESTS,
        user::TESTS,
        signals::TESTS,
        tracing::TESTS,
        procfs::TESTS,
        busybox::TESTS,
        dynamic::TESTS,
        page_cache::TESTS,
        shared_memory::TESTS,
        sockets::TESTS,
        network::TESTS,
    ];
    let (mut passed, mut failed) = (0, 0);
    // The harness checks that this many passed: a runner that stopped
    // early, or ran none, must not look like a success.
    let planned: usize = groups.iter().map(|group| group.len()).sum();
    hal::console::write_fmt(format_args!("running {planned} tests\n"));
    for test in groups.iter().flat_map(|group| group.iter()) {
        hal::console::write_fmt(format_args!("test {} ... ", test.name));
        let mut result = (test.run)();
        // A test that returns with interrupts off would leave every later
        // one without a timer (the lockup watchdog reports it as a hard
        // lockup): its failure, and the runner turns them back on.
        if !hal::cpu::are_interrupts_enabled() {
            hal::cpu::enable_interrupts();
            result = result.and(Err(String::from("it returned with interrupts disabled")));
        }
        match result {
            Ok(()) => {
                passed += 1;
                hal::console::write_str("ok\n");
            }
            Err(why) => {
                failed += 1;
                hal::console::write_fmt(format_args!("FAILED: {why}\n"));
            }
        }
    }
    hal::console::write_fmt(format_args!("{passed} passed, {failed} failed\n"));
    failed == 0
}
