//! Modules that once broke the kernel (`regressions/`): each is loaded and
//! every export called with many argument sets, under small and large
//! budgets. Each must end in a clear refusal or contained traps reported
//! through `Extension.Faulted`, never a panic or a wild write.

mod common;

use std::{
    fs,
    path::PathBuf,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
};

use common::{repo_root, Fixture};
use dispatch::{Handler, Install, Principal};
use wasm_fuzz::{exercise, Outcome, Rng};

/// Argument sets (and limits) each module is run with.
const RUNS_PER_MODULE: u64 = 16;

/// Every module in `wasm/fuzz/regressions/`: binary `.wasm` files and
/// `.wat` texts.
fn regression_modules() -> Vec<(PathBuf, Vec<u8>)> {
    let directory = repo_root().join("wasm/fuzz/regressions");
    let mut modules = Vec::new();
    for entry in fs::read_dir(&directory).expect("reading wasm/fuzz/regressions") {
        let path = entry.unwrap().path();
        let bytes = match path.extension().and_then(|e| e.to_str()) {
            Some("wasm") => fs::read(&path).unwrap(),
            Some("wat") => wat::parse_file(&path).unwrap(),
            _ => continue,
        };
        modules.push((path, bytes));
    }
    modules.sort();
    modules
}

#[test]
fn regression_modules_are_refused_or_contained() {
    let modules = regression_modules();
    // The two modules of the first report, their shrunk forms, and the
    // two the new fuzzer found in wasmi 2.0.0.
    assert!(
        modules.len() >= 6,
        "expected at least 6 regression modules, found {}",
        modules.len()
    );
    for (path, bytes) in &modules {
        let fixture = Fixture::new();
        let faulted = Arc::new(AtomicU64::new(0));
        let counter = faulted.clone();
        fixture
            .runtime
            .faulted()
            .install(
                Principal::KERNEL,
                Install::new(Handler::new(move |_: &(u64, u32)| {
                    counter.fetch_add(1, Ordering::Relaxed);
                })),
            )
            .unwrap();
        let mut total = Outcome::default();
        for run in 0..RUNS_PER_MODULE {
            let mut rng = Rng::new(run);
            let outcome = fixture
                .with_target(|target| exercise(target, bytes, &mut rng))
                .unwrap_or_else(|violation| panic!("{}: {violation}", path.display()));
            total.add(&outcome);
        }
        let raised = faulted.load(Ordering::Relaxed);
        println!(
            "{}: loaded={} calls={} traps={} Extension.Faulted raised {raised} times",
            path.file_name().unwrap().to_string_lossy(),
            total.loaded,
            total.calls,
            total.traps
        );
        let exports_functions = wasm_runtime::module::ModuleInfo::parse(bytes)
            .is_ok_and(|info| info.exports.iter().any(|export| export.function.is_some()));
        if total.loaded && exports_functions {
            assert!(
                total.calls > 0,
                "{}: loaded but no export was called",
                path.display()
            );
        }
        assert!(
            raised >= u64::from(total.traps),
            "{}: {} traps but Extension.Faulted raised {raised} times",
            path.display(),
            total.traps
        );
    }
}
