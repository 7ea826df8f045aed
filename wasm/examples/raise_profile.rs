//! Host profile of the native raise path: raises `Bench.Event` into the
//! bench extension's empty handler (or the handler behind its guard) on
//! the native tier, for callgrind. Needs `./x build-extensions` first.
//!
//! `cargo build --release -p wasm-runtime --features native --example
//! raise_profile`, then `valgrind --tool=callgrind
//! target/release/examples/raise_profile [handler|guarded|state_guarded|clock_guarded|counter|checksum_calls] N`: the
//! difference between two runs' totals over the difference of their `N`
//! is the cost of one raise (docs/design/0008-native-engine.md,
//! "Crossings").

use std::sync::Arc;

use dispatch::RaiseCache;
use wasm_runtime::{
    bench, engine::native::NativeEngine, Console, EngineConfig, LoadRequest, Runtime, Services,
    Tier,
};

struct Quiet;

impl Console for Quiet {
    fn log(&self, _: &str, _: &str) {}
}

fn main() {
    let mut args = std::env::args().skip(1);
    let figure = args.next().unwrap_or_else(|| "handler".into());
    let raises: u64 = args.next().and_then(|n| n.parse().ok()).unwrap_or(100_000);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/extensions");
    let bench_wasm = std::fs::read(root.join("bench.wasm"))
        .unwrap_or_else(|e| panic!("bench.wasm: {e} (run ./x build-extensions)"));
    let runtime = Runtime::new(Services {
        console: Arc::new(Quiet),
        clock: None,
        strands: None,
    })
    .with_native_engine(Box::new(
        NativeEngine::new(&EngineConfig::default()).expect("the native engine"),
    ));
    let request = LoadRequest::new("bench", &bench_wasm).tier(Tier::Native);
    let fixture = bench::Fixture::load(&runtime, request).expect("the bench extension loads");
    assert_eq!(fixture.extension.tier(), Tier::Native);
    match figure.as_str() {
        "guarded" => fixture.bind_handler_and_guard(),
        "state_guarded" => {
            fixture.set_limit(u64::MAX).expect("the limit is set");
            fixture.bind_handler_and_state_guard()
        }
        "clock_guarded" => {
            // No clock here: `timer_now_ns` reads 0, before the deadline.
            fixture.set_deadline(u64::MAX).expect("the deadline is set");
            fixture.bind_handler_and_clock_guard()
        }
        "counter" => fixture.bind_counter(),
        _ => fixture.bind_handler(),
    }
    .expect("the handler binds");
    // Not a raise: N calls of the exported checksum through
    // `Extension::call_resolved`, the generic (locked) call path.
    if figure == "checksum_calls" {
        for _ in 0..raises {
            assert!(fixture.checksum(1500).is_ok());
        }
        return;
    }
    let mut cache = RaiseCache::new();
    for value in 0..raises {
        assert!(fixture.raise_cached(&mut cache, value));
    }
}
