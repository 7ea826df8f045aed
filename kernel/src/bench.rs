//! In-guest benchmarks for `./x bench boot`: the cost of a direct and an
//! indirect function call, the unit every later ratio is taken against.
//!
//! Each figure is the median of [`REPETITIONS`] timed runs of
//! [`ITERATIONS`] calls, timed with the calibrated TSC, and printed as
//! `bench <suite>.<name> <median> ns runs=.. min=.. max=..`.

use alloc::vec::Vec;
use core::hint::black_box;

const ITERATIONS: u64 = 200_000;
const REPETITIONS: usize = 11;

#[inline(never)]
fn empty_procedure(value: u64) -> u64 {
    black_box(value)
}

/// Times `ITERATIONS` runs of `body`, `REPETITIONS` times; ns per iteration.
fn measure(mut body: impl FnMut(u64)) -> Vec<f64> {
    let mut runs: Vec<f64> = (0..REPETITIONS)
        .map(|_| {
            let start = hal::cpu::read_tsc_ordered();
            for i in 0..ITERATIONS {
                body(i);
            }
            let cycles = hal::cpu::read_tsc_ordered() - start;
            hal::timer::cycles_to_ns(cycles * 1000) as f64 / 1000.0 / ITERATIONS as f64
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs
}

/// Prints one figure in the benchmark line format.
pub fn report(name: &str, sorted_runs: &[f64]) {
    let median = sorted_runs[sorted_runs.len() / 2];
    hal::console::write_fmt(format_args!(
        "bench {name} {median:.2} ns runs={} min={:.2} max={:.2}\n",
        sorted_runs.len(),
        sorted_runs[0],
        sorted_runs[sorted_runs.len() - 1]
    ));
}

/// Runs the boot-suite benchmarks.
pub fn run_all() {
    let direct = measure(|i| {
        black_box(empty_procedure(i));
    });
    report("boot.direct_call", &direct);
    let procedure: fn(u64) -> u64 = black_box(empty_procedure);
    let indirect = measure(|i| {
        black_box(black_box(procedure)(i));
    });
    report("boot.indirect_call", &indirect);
}
