//! The native-code tier in the running kernel (docs/design/0008-native-engine.md):
//! extensions compiled by the kernel itself run from W^X code memory, and
//! every extension test of `ktests::extensions` passes again with the
//! runtime pinned to the native tier (runaway and faulty handlers
//! contained, 1,000 load/unload cycles at baseline, code memory included,
//! the regression modules refused or contained).

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
    let mut failures: Vec<String> = Vec::new();
    pinned(Tier::Native, || {
        for test in extensions::TESTS {
            hal::console::write_fmt(format_args!("\n  native: {} ... ", test.name));
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
