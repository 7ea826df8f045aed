//! Host benchmark of the extension runtime (the in-QEMU suite uses the same
//! fixtures, `wasm_runtime::bench`). Needs `./x build-extensions` first.
//!
//! `cargo run --release -p wasm-runtime --example bench`
//!
//! Prints `bench ext.<name> <median ns> ns` lines (median of 11 runs).

use std::{sync::Arc, time::Instant};

use wasm_runtime::{bench, Console, Runtime, Services};

struct Quiet;

impl Console for Quiet {
    fn log(&self, _: &str, _: &str) {}
}

fn median_ns(iterations: u32, mut body: impl FnMut()) -> f64 {
    let mut runs: Vec<f64> = (0..11)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iterations {
                body();
            }
            start.elapsed().as_nanos() as f64 / f64::from(iterations)
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[runs.len() / 2]
}

fn main() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/extensions");
    let read = |name: &str| {
        std::fs::read(root.join(name))
            .unwrap_or_else(|e| panic!("{name}: {e} (run ./x build-extensions)"))
    };
    let (bench_wasm, big_wasm) = (read("bench.wasm"), read("big.wasm"));
    let runtime = Runtime::new(Services {
        console: Arc::new(Quiet),
        clock: None,
        strands: None,
    });
    let fixture = bench::Fixture::new(&runtime, &bench_wasm).unwrap();
    let report = |name: &str, ns: f64| println!("bench ext.{name} {ns:.1} ns");

    report(
        "kernel_to_wasm_call",
        median_ns(100_000, || fixture.call_handler().unwrap()),
    );
    let binding = fixture.bind_handler().unwrap();
    report(
        "raise_wasm_handler",
        median_ns(100_000, || assert!(fixture.raise(1))),
    );
    fixture.unbind(binding).unwrap();
    fixture.bind_handler_and_guard().unwrap();
    report(
        "raise_wasm_handler_and_guard",
        median_ns(100_000, || assert!(fixture.raise(1))),
    );
    const CALLS: u32 = 10_000;
    report(
        "wasm_to_kernel_null_call",
        median_ns(20, || fixture.null_calls(CALLS).unwrap()) / f64::from(CALLS),
    );
    report(
        &format!("load_validate_link_instantiate_{}kb", big_wasm.len() / 1024),
        median_ns(20, || bench::load(&runtime, &big_wasm).unwrap()),
    );
}
