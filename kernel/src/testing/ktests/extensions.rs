//! Extensions in the running kernel: loading, events, guards, budgets,
//! fault containment, unloading without leaks, limits and bad modules.
//!
//! The modules come from the boot archive (`./x` builds them into it).

use alloc::{format, string::String};

use wasm_runtime::{FaultKind, Limits, WasmValue};

use super::{ensure, KernelTest, TestResult};
use crate::extensions::{self, Extensions};

pub const TESTS: &[KernelTest] = &[
    KernelTest {
        name: "hello_extension_logs_on_load",
        run: hello_extension_logs_on_load,
    },
    KernelTest {
        name: "tick_counter_counts_timer_ticks",
        run: tick_counter_counts_timer_ticks,
    },
    KernelTest {
        name: "an_extension_cannot_raise_timer_tick_or_reach_an_event_it_was_not_granted",
        run: extension_cannot_raise_what_it_was_not_granted,
    },
    KernelTest {
        name: "wasm_guard_filters_and_impure_guard_is_refused",
        run: wasm_guard_filters,
    },
    KernelTest {
        name: "runaway_ephemeral_handler_is_stopped",
        run: runaway_handler_is_stopped,
    },
    KernelTest {
        name: "faulting_handlers_are_contained",
        run: faulting_handlers_are_contained,
    },
    KernelTest {
        name: "c_extension_works",
        run: c_extension_works,
    },
    KernelTest {
        name: "bad_modules_are_refused_cleanly",
        run: bad_modules_are_refused_cleanly,
    },
    KernelTest {
        name: "memory_limit_is_enforced",
        run: memory_limit_is_enforced,
    },
    KernelTest {
        name: "load_unload_1000_times_leaks_nothing",
        run: load_unload_leaks_nothing,
    },
    KernelTest {
        name: "regression_modules_are_refused_or_contained",
        run: regression_modules_are_refused_or_contained,
    },
];

/// Where `./x` puts the regression modules (`wasm/fuzz/regressions/`).
const REGRESSION_PREFIX: &str = "ext/regress-";

/// Modules that once panicked or corrupted the kernel: each is loaded and
/// every export called with 8 argument sets (`wasm_fuzz::exercise`, as on
/// the host); each must end in a refusal or contained traps, and the
/// kernel must be here afterwards to say so.
fn regression_modules_are_refused_or_contained() -> TestResult {
    let extensions = runtime()?;
    let modules = extensions.archive_files(REGRESSION_PREFIX);
    ensure!(
        modules.len() >= 6,
        "expected at least 6 regression modules in the boot archive, found {}",
        modules.len()
    );
    let tick = extensions.tick().clone();
    let raise = move || {
        let _ = tick.raise(&mut (0,));
    };
    let target = wasm_fuzz::Target {
        runtime: extensions.runtime(),
        event: extensions.tick_port(),
        raise: &raise,
    };
    for (name, bytes) in modules {
        let mut total = wasm_fuzz::Outcome::default();
        for run in 0..8 {
            let mut rng = wasm_fuzz::Rng::new(run);
            let outcome = wasm_fuzz::exercise(&target, bytes, &mut rng)
                .map_err(|violation| format!("{name}: {violation}"))?;
            total.add(&outcome);
        }
        hal::console::write_fmt(format_args!(
            "\n  {name}: loaded={} calls={} contained traps={}",
            total.loaded, total.calls, total.traps
        ));
    }
    hal::console::write_str("\n  ");
    Ok(())
}

fn runtime() -> Result<&'static Extensions, String> {
    extensions::get().ok_or_else(|| String::from("extensions not initialised"))
}

fn call_u64(extensions: &Extensions, name: &str, function: &str) -> Result<u64, String> {
    match extensions.call(name, function, &[])? {
        Some(WasmValue::I64(value)) => Ok(value as u64),
        other => Err(format!("{name}.{function} returned {other:?}")),
    }
}

fn hello_extension_logs_on_load() -> TestResult {
    let extensions = runtime()?;
    extensions.load("hello")?;
    let has_logged = extensions.has_logged("[ext hello] hello from a Wasm extension");
    extensions.unload("hello")?;
    ensure!(has_logged, "hello did not log on load");
    ensure!(
        extensions.load("no-such-extension").is_err(),
        "loading a missing extension succeeded"
    );
    Ok(())
}

fn tick_counter_counts_timer_ticks() -> TestResult {
    let extensions = runtime()?;
    extensions.load("tick-counter")?;
    sched::sleep_ms(100);
    let first = call_u64(extensions, "tick-counter", "count")?;
    sched::sleep_ms(100);
    let second = call_u64(extensions, "tick-counter", "count")?;
    extensions.unload("tick-counter")?;
    ensure!(first > 0, "no tick counted in 100 ms");
    ensure!(
        second > first,
        "count did not advance: {first} then {second}"
    );
    Ok(())
}

/// Timer.Tick is granted to extensions to install handlers on; only its
/// authority (the timer interrupt) raises it. MachineTrap.Syscall is not
/// granted to a plain extension at all: it cannot even find it.
fn extension_cannot_raise_what_it_was_not_granted() -> TestResult {
    let extensions = runtime()?;
    extensions.load("tick-counter")?;
    let raised = extensions.call("tick-counter", "raise_tick", &[]);
    let found = extensions.call("tick-counter", "find_syscall_event", &[]);
    extensions.unload("tick-counter")?;
    let denied = wasm_runtime::WasmValue::I32(spindle_abi::Status::Denied.code());
    let not_found = wasm_runtime::WasmValue::I32(spindle_abi::Status::NotFound.code());
    ensure!(
        raised.as_ref().ok() == Some(&Some(denied)),
        "raising Timer.Tick from an extension was not denied"
    );
    ensure!(
        found.as_ref().ok() == Some(&Some(not_found)),
        "an extension found MachineTrap.Syscall, which it was not granted"
    );
    Ok(())
}

fn wasm_guard_filters() -> TestResult {
    let extensions = runtime()?;
    extensions.load("even-ticks")?;
    let before_raised = extensions.ticks_raised();
    sched::sleep_ms(200);
    let raised = extensions.ticks_raised() - before_raised;
    let even = call_u64(extensions, "even-ticks", "count")?;
    let refusal = extensions.call("even-ticks", "try_bad_guard", &[])?;
    extensions.unload("even-ticks")?;
    ensure!(raised >= 4, "only {raised} ticks raised in 200 ms");
    // The guard lets only even ticks through: about half, never all.
    ensure!(
        even > 0 && even <= raised / 2 + 2,
        "{even} of {raised} ticks passed the guard"
    );
    let not_pure = spindle_abi::Status::NotPure.code();
    ensure!(
        refusal == Some(WasmValue::I32(not_pure)),
        "installing a guard that stores was not refused as NotPure: {refusal:?}"
    );
    Ok(())
}

fn runaway_handler_is_stopped() -> TestResult {
    let extensions = runtime()?;
    extensions.load("runaway")?;
    let start = hal::timer::uptime_ns();
    sched::sleep_ms(100);
    let slept_ms = (hal::timer::uptime_ns() - start) / 1_000_000;
    let (faults, last) = extensions.faults_of("runaway");
    extensions.unload("runaway")?;
    ensure!(faults > 0, "the runaway handler was never stopped");
    ensure!(
        last == Some(FaultKind::BudgetExhausted),
        "last fault {last:?}, expected BudgetExhausted"
    );
    // The kernel kept scheduling: this thread woke up within a second.
    ensure!(slept_ms < 1000, "a 100 ms sleep took {slept_ms} ms");
    Ok(())
}

fn faulting_handlers_are_contained() -> TestResult {
    let extensions = runtime()?;
    extensions.load("tick-counter")?;
    extensions.load("faulty")?;
    let expected = [
        (0, FaultKind::Unreachable),
        (2, FaultKind::OutOfBounds),
        (3, FaultKind::BadHandle),
    ];
    let mut result = Ok(());
    for (mode, kind) in expected {
        extensions.call("faulty", "set_mode", &[mode])?;
        let (before, _) = extensions.faults_of("faulty");
        sched::sleep_ms(50);
        let (after, last) = extensions.faults_of("faulty");
        if after <= before || last != Some(kind) {
            result = Err(format!(
                "mode {mode}: faults {before} -> {after}, last {last:?}, expected {kind:?}"
            ));
            break;
        }
    }
    // The other extension kept running while faulty faulted.
    let counted = call_u64(extensions, "tick-counter", "count")?;
    extensions.unload("faulty")?;
    extensions.unload("tick-counter")?;
    result?;
    ensure!(counted > 0, "tick-counter stopped while faulty faulted");
    Ok(())
}

fn c_extension_works() -> TestResult {
    let extensions = runtime()?;
    extensions.load("c-hello")?;
    let has_logged = extensions.has_logged("[ext c-hello]");
    extensions.unload("c-hello")?;
    ensure!(has_logged, "the C extension did not log");
    Ok(())
}

fn bad_modules_are_refused_cleanly() -> TestResult {
    let extensions = runtime()?;
    let hello = extensions.module_bytes("hello")?;
    for (what, bytes) in [
        ("empty", &[][..]),
        ("garbage", &b"not a wasm module at all"[..]),
        ("truncated", &hello[..hello.len() / 2]),
        ("wrong version", &b"\0asm\x02\0\0\0"[..]),
    ] {
        match extensions.load_detached("bad", bytes, None) {
            Ok(_) => return Err(format!("the {what} module was accepted")),
            Err(error) => ensure!(!error.is_empty(), "no message for the {what} module"),
        }
    }
    let mut flipped = alloc::vec::Vec::from(hello);
    for index in (8..flipped.len()).step_by(97) {
        flipped[index] ^= 0x5a;
    }
    // Either refused or loaded; never a panic (reaching here proves it).
    if let Ok(extension) = extensions.load_detached("flipped", &flipped, None) {
        let _ = extension.unload();
    }
    Ok(())
}

fn memory_limit_is_enforced() -> TestResult {
    let extensions = runtime()?;
    let hello = extensions.module_bytes("hello")?;
    let limits = Limits {
        memory_pages: 1,
        ..extensions.runtime().default_limits()
    };
    match extensions.load_detached("small", hello, Some(limits)) {
        Ok(_) => Err(String::from(
            "a module needing more than 1 page loaded under a 1-page limit",
        )),
        Err(error) => {
            ensure!(
                error.contains("memory"),
                "the error does not name the limit: {error}"
            );
            Ok(())
        }
    }
}

/// The heap once what other threads hold for a moment is gone: the
/// figures with the fewest bytes allocated among ten readings 2 ms apart
/// (a thread of an earlier test ending, a tick's handler running, held a
/// few kilobytes at one reading in one run of about ten). A leak of the
/// cycles is in every reading.
fn settled_heap() -> hal::heap::HeapStats {
    let mut least = hal::heap::stats();
    for _ in 0..10 {
        sched::sleep_ms(2);
        let now = hal::heap::stats();
        if now.allocated_bytes < least.allocated_bytes {
            least = now;
        }
    }
    least
}

fn load_unload_leaks_nothing() -> TestResult {
    let extensions = runtime()?;
    let hello = extensions.module_bytes("hello")?;
    // tick-counter installs a handler on Timer.Tick from its `init`, so a
    // cycle of it also makes and removes a binding, a handle and the
    // dispatcher's records of them (hello installs nothing).
    let counter = extensions.module_bytes("tick-counter")?;
    let handlers_idle = extensions.tick().stats().handlers;
    let cycle = |index: usize| -> TestResult {
        let bytes = if index.is_multiple_of(2) {
            hello
        } else {
            counter
        };
        let extension = extensions.load_detached("cycle", bytes, None)?;
        if index % 2 == 1 {
            let handlers = extensions.tick().stats().handlers;
            ensure!(
                handlers == handlers_idle + 1,
                "tick-counter loaded but Timer.Tick has {handlers} handlers, not {}",
                handlers_idle + 1
            );
        }
        extension
            .unload()
            .map_err(|error| format!("unload: {error}"))?;
        Ok(())
    };
    // Warm up: first loads grow the heap and fill what stays at a fixed
    // size (the console's ring of recent extension lines holds 32).
    for index in 0..40 {
        cycle(index)?;
    }
    let heap_before = settled_heap();
    let frames_before = hal::memory::frame_stats().free;
    // Native code's pages and linear memories (zero on the interpreter
    // tier, whose memories are on the heap).
    let code_before = hal::native_code::mapped_bytes();
    let linear_before = hal::linear_memory::mapped_bytes();
    for index in 0..1000 {
        cycle(index)?;
    }
    let heap_after = settled_heap();
    let frames_after = hal::memory::frame_stats().free;
    let code_after = hal::native_code::mapped_bytes();
    let linear_after = hal::linear_memory::mapped_bytes();
    ensure!(
        code_after == code_before,
        "1000 cycles left {} bytes of code memory mapped",
        code_after.saturating_sub(code_before)
    );
    ensure!(
        linear_after == linear_before,
        "1000 cycles left {} bytes of linear memory mapped",
        linear_after.saturating_sub(linear_before)
    );
    ensure!(
        heap_after.allocated_bytes <= heap_before.allocated_bytes,
        "1000 load/unload cycles leaked {} heap bytes ({} allocations)",
        heap_after.allocated_bytes - heap_before.allocated_bytes,
        heap_after.allocation_count as i64 - heap_before.allocation_count as i64
    );
    ensure!(
        frames_after >= frames_before,
        "1000 cycles leaked {} frames",
        frames_before - frames_after
    );
    ensure!(
        extensions.tick().stats().handlers == handlers_idle,
        "handlers left on Timer.Tick after unload"
    );
    Ok(())
}
