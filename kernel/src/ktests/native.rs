//! The native-code tier in the running kernel (docs/design/0008-native-engine.md):
//! extensions compiled by the kernel itself run from W^X code memory, and
//! every extension test of `ktests::extensions` passes again with the
//! runtime pinned to the native tier (runaway and faulty handlers
//! contained, 1,000 load/unload cycles at baseline, code memory included,
//! the regression modules refused or contained), and again with the
//! interpreter pinned; an extension loaded on the default tier starts on
//! the interpreter and moves to native code while it runs.

use alloc::{format, string::String, vec::Vec};

use wasm_runtime::Tier;

use super::{ensure, extensions, KernelTest, TestResult};

pub const TESTS: &[KernelTest] = &[
    KernelTest {
        name: "shipped_extensions_run_as_native_code_from_read_execute_pages",
        run: shipped_extensions_run_natively,
    },
    KernelTest {
        name: "extension_tests_pass_with_the_native_tier_pinned",
        run: extension_tests_pass_natively,
    },
    KernelTest {
        name: "extension_tests_pass_with_the_interpreter_pinned",
        run: extension_tests_pass_on_the_interpreter,
    },
    KernelTest {
        name: "default_loads_start_on_the_interpreter_and_tier_up_while_running",
        run: default_loads_tier_up_while_running,
    },
];

/// Runs `test` with every load that names no tier pinned to `tier`, and
/// unpins afterwards whatever the outcome.
fn pinned(tier: Tier, test: impl FnOnce() -> TestResult) -> TestResult {
    let extensions = crate::extensions::get().ok_or("extensions not initialised")?;
    extensions.runtime().pin_tier(Some(tier));
    let result = test();
    extensions.runtime().pin_tier(None);
    result
}

/// The extensions the kernel tests use compile natively (none falls back
/// to the interpreter), their code pages are read-execute and not
/// writable while loaded, and unloading returns them.
fn shipped_extensions_run_natively() -> TestResult {
    let extensions = crate::extensions::get().ok_or("extensions not initialised")?;
    ensure!(
        extensions.runtime().has_native_engine(),
        "the kernel has no native-code tier"
    );
    let code_before = hal::native_code::mapped_bytes();
    for name in [
        "hello",
        "tick-counter",
        "even-ticks",
        "runaway",
        "faulty",
        "c-hello",
        "big",
    ] {
        extensions.load_on(name, Tier::Native)?;
        let tier = extensions.tier_of(name);
        let mapped = hal::native_code::mapped_bytes();
        let first_page = hal::memory::CODE_BASE;
        let writable = hal::memory::protection_of(first_page);
        extensions.unload(name)?;
        ensure!(
            tier == Some(Tier::Native),
            "{name} ran on {} instead of native code",
            tier.map_or("nothing", Tier::name)
        );
        ensure!(mapped > code_before, "{name} mapped no code memory");
        ensure!(
            writable == Some(hal::memory::Protection::ReadOnly),
            "{name}'s first code page is not read-only (W^X)"
        );
    }
    let code_after = hal::native_code::mapped_bytes();
    ensure!(
        code_after == code_before,
        "unloading left {} bytes of code memory mapped",
        code_after.saturating_sub(code_before)
    );
    Ok(())
}

/// Every test of `ktests::extensions` again, on the native tier.
fn extension_tests_pass_natively() -> TestResult {
    run_pinned(Tier::Native)
}

/// Every test of `ktests::extensions` with `tier` pinned; the failures,
/// each with its reason.
fn run_pinned(tier: Tier) -> TestResult {
    let mut failures: Vec<String> = Vec::new();
    pinned(tier, || {
        for test in extensions::TESTS {
            hal::console::write_fmt(format_args!("\n  {tier}: {} ... ", test.name));
            match (test.run)() {
                Ok(()) => hal::console::write_str("ok"),
                Err(why) => {
                    hal::console::write_str("FAILED");
                    failures.push(format!("{}: {why}", test.name));
                }
            }
        }
        hal::console::write_str("\n  ");
        Ok(())
    })?;
    ensure!(failures.is_empty(), "{}", failures.join("; "));
    Ok(())
}

/// Loaded on the default tier, `tick-counter` starts on the interpreter,
/// is compiled on a kernel thread and swapped in while the clock thread
/// keeps raising Timer.Tick into it: its count never goes back and keeps
/// advancing on native code.
fn default_loads_tier_up_while_running() -> TestResult {
    let extensions = crate::extensions::get().ok_or("extensions not initialised")?;
    extensions.load("tick-counter")?;
    let result = (|| -> TestResult {
        let started = extensions.tier_of("tick-counter");
        let mut counts = Vec::new();
        let mut tier = started;
        // The compilation takes well under a second even under TCG.
        for _ in 0..100 {
            counts.push(count(extensions)?);
            tier = extensions.tier_of("tick-counter");
            if tier == Some(Tier::Native) {
                break;
            }
            sched::sleep_ms(50);
        }
        ensure!(
            started == Some(Tier::Interpreter),
            "a default load did not start on the interpreter"
        );
        ensure!(
            tier == Some(Tier::Native),
            "tick-counter was not moved to native code in 5 s"
        );
        let at_swap = count(extensions)?;
        sched::sleep_ms(100);
        let after = count(extensions)?;
        ensure!(
            counts.windows(2).all(|pair| pair[0] <= pair[1])
                && counts.last().is_some_and(|&last| last <= at_swap),
            "the count went back across the tier-up: {counts:?} then {at_swap}"
        );
        ensure!(
            after > at_swap,
            "no tick counted on native code: {at_swap} then {after}"
        );
        Ok(())
    })();
    extensions.unload("tick-counter")?;
    result
}

fn count(extensions: &crate::extensions::Extensions) -> Result<u64, String> {
    match extensions.call("tick-counter", "count", &[])? {
        Some(wasm_runtime::WasmValue::I64(value)) => Ok(value as u64),
        _ => Err(String::from("tick-counter.count returned no i64")),
    }
}

/// Every test of `ktests::extensions` again, on the interpreter (the run
/// of the group itself is on the default tier, which tiers up).
fn extension_tests_pass_on_the_interpreter() -> TestResult {
    run_pinned(Tier::Interpreter)
}
