//! The test code of the kernel image, built only with the `testing` feature
//! (`./x test`, `./x bench`, `./x fuzz`): the in-kernel tests ([`ktests`]),
//! the in-guest benchmarks ([`mod@bench`]), the module fuzzer ([`fuzz`]), the
//! system-call fuzzer ([`sysfuzz`]) and the modes that exercise the fatal
//! paths on purpose. A production image (`./x run`) has none of it.

pub mod bench;
pub mod fuzz;
pub mod ktests;
pub mod sysfuzz;

use hal::boot::BootInfo;

/// The `spindle.mode=` values this module runs.
const MODES: &[&str] = &[
    "test",
    "fuzz",
    "sysfuzz",
    "bench",
    "crash",
    "boot-overflow",
    "overflow",
];

/// Whether `mode` is one of the test image's modes.
pub fn is_testing_mode(mode: &str) -> bool {
    MODES.contains(&mode)
}

/// Runs a test mode to its end and leaves QEMU with its result:
///
/// - `test`: the in-kernel tests;
/// - `bench`: the in-guest benchmarks (`spindle.bench=SUITE`);
/// - `fuzz`: the generated modules of the boot archive loaded and called;
/// - `sysfuzz`: random system calls from many processes
///   (`spindle.sysfuzz=SEED,PROCESSES,CALLS`);
/// - `crash`: a deliberate page fault on the boot thread, which must be
///   reported and end QEMU with a failure status (tests the fatal path);
/// - `overflow`: a kernel thread overflows its stack into the guard page,
///   which must arrive as a reported double fault on its IST stack;
/// - `boot-overflow`: the same on the boot stack, whose guard page hal
///   leaves unmapped.
pub fn run_mode(mode: &str, boot_info: &'static BootInfo) -> ! {
    match mode {
        "test" => super::exit_with(super::on_guarded_thread("ktests", ktests::run_all)),
        "fuzz" => super::exit_with(fuzz::run()),
        "sysfuzz" => {
            let parameters = boot_info
                .cmdline_value("spindle.sysfuzz")
                .unwrap_or("1,16,2000");
            super::exit_with(super::on_guarded_thread("sysfuzz", move || {
                sysfuzz::run(parameters)
            }))
        }
        "bench" => {
            let suite = boot_info.cmdline_value("spindle.bench").unwrap_or("all");
            super::exit_with(super::on_guarded_thread(
                "bench",
                move || match bench::run(suite) {
                    Ok(()) => true,
                    Err(error) => {
                        log::error!("benchmark suite {suite}: {error}");
                        false
                    }
                },
            ))
        }
        "crash" => {
            log::info!("crash mode: touching an unmapped page on the boot thread");
            let _ = hal::memory::store_unchecked(hal::memory::GENERAL_BASE + 0xdead_0000, 1);
            panic!("the deliberate page fault did not fault");
        }
        "boot-overflow" => {
            log::info!("boot-overflow mode: the boot thread recurses into its guard page");
            recurse_forever(0);
            panic!("the boot stack overflow was not caught");
        }
        "overflow" => {
            log::info!("overflow mode: a kernel thread recurses into its guard page");
            let handle = sched::spawn("overflow", || {
                recurse_forever(0);
            })
            .expect("cannot start the overflow thread");
            let _ = handle.join();
            panic!("the stack overflow was not caught");
        }
        other => panic!("`{other}` is not a test mode"),
    }
}

/// Recurses until the stack runs into its guard page (the `overflow` mode).
#[allow(unconditional_recursion)] // the point: it ends in a double fault
fn recurse_forever(depth: u64) -> u64 {
    let frame = core::hint::black_box([depth; 16]);
    recurse_forever(frame[0] + 1) + frame[15]
}
