//! The host fuzzer: generated, mutated and random modules through the
//! runtime (`wasm_fuzz::exercise`), every case isolated.
//!
//! A case that panics (on the host a panic is caught per case), breaks the
//! runtime's contract, or returns nothing is reported with its seed and
//! number, and its module is saved as `target/fuzz/host-seed<S>-case<N>.wasm`;
//! the campaign goes on with a fresh runtime and fails at the end. A case
//! that kills the process (a wild write the engine did not check) cannot be
//! caught: the module being run is always in `target/fuzz/in-flight-*.wasm`
//! with its case number beside it, so even then it is kept.
//!
//! Environment: `SPINDLE_FUZZ_CASES` (default 10,000), `SPINDLE_FUZZ_FIRST`
//! (first case number, default 0), `SPINDLE_FUZZ_SEED`,
//! `SPINDLE_FUZZ_SECONDS` (stop early when the time is up). `./x test` runs
//! the default; `./x fuzz` runs longer campaigns, one process per core.

mod common;

use std::{
    fs,
    panic::{self, AssertUnwindSafe},
    path::PathBuf,
    sync::Mutex,
    time::{Duration, Instant},
};

use common::{output_directory, Fixture};
use wasm_fuzz::{exercise, generate, Outcome, Rng, Stream};

/// The seed `cargo test` uses unless told otherwise.
const DEFAULT_SEED: u64 = 0x5eed_5eed_1995;

fn env_number(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={text:?} is not a number")))
}

/// The message and place of the last panic, kept by the panic hook.
static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

/// The module running now, kept on disk in case it kills the process.
struct InFlight {
    module: PathBuf,
    case_number: PathBuf,
}

impl InFlight {
    fn new(seed: u64, first: u64) -> Self {
        let directory = output_directory();
        let stem = format!("in-flight-seed{seed}-first{first}");
        InFlight {
            module: directory.join(format!("{stem}.wasm")),
            case_number: directory.join(format!("{stem}.case")),
        }
    }

    fn record(&self, case: u64, bytes: &[u8]) {
        fs::write(&self.case_number, format!("{case}\n")).expect("writing the in-flight case");
        fs::write(&self.module, bytes).expect("writing the in-flight module");
    }

    fn clear(&self) {
        let _ = fs::remove_file(&self.module);
        let _ = fs::remove_file(&self.case_number);
    }
}

#[test]
fn every_case_is_refused_or_contained() {
    let seed = env_number("SPINDLE_FUZZ_SEED").unwrap_or(DEFAULT_SEED);
    let first = env_number("SPINDLE_FUZZ_FIRST").unwrap_or(0);
    let cases = env_number("SPINDLE_FUZZ_CASES").unwrap_or(10_000);
    let deadline = env_number("SPINDLE_FUZZ_SECONDS").map(Duration::from_secs);
    panic::set_hook(Box::new(|info| {
        eprintln!("{info}");
        *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = info.to_string();
    }));
    let imports = generate::available_imports();
    let in_flight = InFlight::new(seed, first);
    let started = Instant::now();
    let mut fixture = Fixture::new();
    let (mut total, mut refused, mut ran) = (Outcome::default(), 0u64, 0u64);
    let mut failures = Vec::new();
    for case in first..first.saturating_add(cases) {
        if deadline.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        ran += 1;
        let module = generate::case(seed, case, &imports);
        in_flight.record(case, &module.bytes);
        let mut rng = Rng::for_case(seed, case, Stream::Run);
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            fixture.with_target(|target| exercise(target, &module.bytes, &mut rng))
        }));
        let failure = match result {
            Ok(Ok(outcome)) => {
                refused += u64::from(!outcome.loaded);
                total.add(&outcome);
                continue;
            }
            Ok(Err(violation)) => violation.to_string(),
            Err(_) => {
                // Locks the panic unwound through may be poisoned or held:
                // the next case gets a new runtime.
                fixture = Fixture::new();
                format!(
                    "panic: {}",
                    LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner())
                )
            }
        };
        let saved = output_directory().join(format!("host-seed{seed}-case{case}.wasm"));
        fs::write(&saved, &module.bytes).expect("saving the failing module");
        println!(
            "fuzz: FAILED seed {seed} case {case} ({} module, {} bytes): {failure}\n  saved as {}; replay: ./x fuzz --host-only --seed {seed} --first {case} --cases 1",
            module.origin.describe(),
            module.bytes.len(),
            saved.display()
        );
        failures.push(case);
    }
    in_flight.clear();
    let _ = panic::take_hook();
    println!(
        "fuzz host: {ran} cases from case {first} (seed {seed}) in {:.1} s: {} refused, {} loaded, {} handlers and guards bound, {} pure exports, {} calls, {} trapped and contained, {} failed",
        started.elapsed().as_secs_f64(),
        refused,
        ran - refused,
        total.bindings,
        total.pure,
        total.calls,
        total.traps,
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} failing cases of seed {seed}: {failures:?}",
        failures.len()
    );
    if ran >= 1_000 {
        // A campaign that never loads, refuses, calls or traps tests nothing.
        assert!(
            refused > 0 && ran > refused && total.calls > 0 && total.traps > 0,
            "the cases did not reach every outcome: {refused} refused of {ran}, {} calls, {} traps",
            total.calls,
            total.traps
        );
    }
}
