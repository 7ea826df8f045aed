//! In-guest benchmarks (`spindle.mode=bench`, suite chosen by
//! `spindle.bench=boot|ext|all`):
//!
//! - `boot`: the cost of a direct and an indirect function call, the unit
//!   every later ratio is taken against;
//! - `ext`: raising an event with its intrinsic only, with a native guarded
//!   handler, with a Wasm handler, with a Wasm handler and Wasm guard
//!   (always true, or reading a limit from the extension's memory), with
//!   a Wasm handler that adds to a total in its memory; a
//!   Wasm-to-kernel call of an empty procedure (SPIN's "protected in-kernel
//!   call"); the RFC 1071 checksum of 1,500 bytes in Wasm and in Rust; the
//!   Wasm figures once on the default tier and once pinned to each tier
//!   (`.wasmi`, `.native`); compiling a ~60 KB module to native code; load +
//!   validate + link + instantiate of it.
//!
//! Each figure is the median of [`REPETITIONS`] timed runs of many
//! iterations, timed with the calibrated TSC, and printed as
//! `bench <suite>.<name> <median> ns runs=.. min=.. max=..`, with
//! `ratio=<x>` to the direct call where that is the point of the figure.

use alloc::{format, string::String, vec::Vec};
use core::hint::black_box;

use dispatch::{BindingId, Event, Install, Principal, RaiseCache};
use wasm_runtime::{
    bench::{self as fixtures, Fixture},
    engine::native::{Backend, CompileLimits, Compiler},
    module::ModuleInfo,
    BindError, LoadRequest, Tier,
};

const ITERATIONS: u64 = 200_000;
const REPETITIONS: usize = 11;

#[inline(never)]
fn empty_procedure(value: u64) -> u64 {
    black_box(value)
}

/// Times `iterations` runs of `body`, `REPETITIONS` times; sorted ns per
/// iteration. `body` checks its own result and says whether it was right:
/// a figure whose operation failed (and so timed its error path) is an
/// error naming `name`, never a number.
fn measure_n(
    name: &str,
    iterations: u64,
    mut body: impl FnMut(u64) -> bool,
) -> Result<Vec<f64>, String> {
    let mut wrong = 0u64;
    let mut runs: Vec<f64> = (0..REPETITIONS)
        .map(|_| {
            let start = hal::cpu::read_tsc_ordered();
            for i in 0..iterations {
                // A branch on a value the body computed anyway: it keeps
                // the result live and costs a compare.
                if !body(i) {
                    wrong += 1;
                }
            }
            let cycles = hal::cpu::read_tsc_ordered() - start;
            hal::timer::cycles_to_ns(cycles * 1000) as f64 / 1000.0 / iterations as f64
        })
        .collect();
    if wrong > 0 {
        return Err(format!(
            "{name}: {wrong} of {} iterations gave a wrong result or an error",
            iterations * REPETITIONS as u64
        ));
    }
    runs.sort_by(f64::total_cmp);
    Ok(runs)
}

fn measure(name: &str, body: impl FnMut(u64) -> bool) -> Result<Vec<f64>, String> {
    measure_n(name, ITERATIONS, body)
}

fn median(sorted_runs: &[f64]) -> f64 {
    sorted_runs[sorted_runs.len() / 2]
}

/// Prints one figure in the benchmark line format, with `extra` key=value
/// pairs appended.
pub fn report(name: &str, sorted_runs: &[f64], extra: &str) {
    hal::console::write_fmt(format_args!(
        "bench {name} {:.2} ns runs={} min={:.2} max={:.2}{extra}\n",
        median(sorted_runs),
        sorted_runs.len(),
        sorted_runs[0],
        sorted_runs[sorted_runs.len() - 1]
    ));
}

/// Prints a figure with its ratio to `baseline_ns`.
fn report_ratio(name: &str, sorted_runs: &[f64], baseline_ns: f64) {
    report(
        name,
        sorted_runs,
        &format!(" ratio={:.1}x", median(sorted_runs) / baseline_ns),
    );
}

fn direct_call(name: &str) -> Result<Vec<f64>, String> {
    measure(name, |i| empty_procedure(i) == i)
}

/// Runs the benchmark suite named `suite` (`boot`, `ext`, `core` or `all`;
/// `all` is `boot` and `ext`, as `core` needs programs `./x bench core`
/// adds to the archive).
pub fn run(suite: &str) -> Result<(), String> {
    match suite {
        "boot" => boot(),
        "ext" => ext(),
        "core" => core_programs(),
        "all" => {
            boot()?;
            ext()
        }
        other => Err(format!("unknown benchmark suite {other:?}")),
    }
}

/// `core`: the Linux baseline's benchmark programs that `./x bench core`
/// put in the boot archive as `bench/<name>`, each run as a user program;
/// they time themselves (clock_gettime) and print their own
/// `bench <name> <ns> ns iters=<n>` lines, which xtask relays as
/// `core.<name>` beside Linux's figures.
fn core_programs() -> Result<(), String> {
    kernel_threads()?;
    let extensions = crate::extensions::get().ok_or("extensions not initialised")?;
    let programs = extensions.archive_files("bench/");
    if programs.is_empty() {
        return Err(String::from("no bench/ programs in the boot archive"));
    }
    for (path, file) in programs {
        let name = path.trim_start_matches("bench/");
        match linux_process::threads::spawn_program(name, loader::FileBytes::Lent(file), &[name])?
            .join()
        {
            linux_process::threads::UserExit::Exited(0) => {}
            other => return Err(format!("{name} {other}")),
        }
    }
    Ok(())
}

/// SPIN table 3 for kernel threads: `fork_join_kernel` (create a thread,
/// which returns at once, and join it) and `ping_pong_kernel` (one round
/// trip between two threads through a mutex and condition variables).
/// Each iteration checks what it got back.
fn kernel_threads() -> Result<(), String> {
    const FORK_JOIN_ITERATIONS: u64 = 2_000;
    let runs = measure_n("fork_join_kernel", FORK_JOIN_ITERATIONS, |i| {
        let value = alloc::sync::Arc::new(core::sync::atomic::AtomicU64::new(0));
        let seen = value.clone();
        match sched::spawn("fork-join", move || {
            seen.store(i + 1, core::sync::atomic::Ordering::Relaxed)
        }) {
            Ok(handle) => {
                handle.join() == sched::ExitReason::Finished
                    && value.load(core::sync::atomic::Ordering::Relaxed) == i + 1
            }
            Err(_) => false,
        }
    })?;
    report("fork_join_kernel", &runs, "");

    const PING_PONG_ITERATIONS: u64 = 5_000;
    /// The ball: whose turn it is, and how many round trips so far.
    struct Table {
        mutex: sched::sync::Mutex<(bool, u64)>,
        turned: sched::sync::Condvar,
    }
    let table = alloc::sync::Arc::new(Table {
        mutex: sched::sync::Mutex::new((false, 0)),
        turned: sched::sync::Condvar::new(),
    });
    let partner = {
        let table = table.clone();
        sched::spawn("pong", move || loop {
            let mut state = table.mutex.lock();
            while !state.0 {
                state = table.turned.wait(state);
            }
            if state.1 == u64::MAX {
                return;
            }
            // Return the ball, counting the round trip.
            state.0 = false;
            state.1 += 1;
            drop(state);
            table.turned.notify_all();
        })
        .map_err(|_| String::from("ping_pong_kernel: no memory for the partner"))?
    };
    let mut expected = 0u64;
    let runs = measure_n("ping_pong_kernel", PING_PONG_ITERATIONS, |_| {
        let mut state = table.mutex.lock();
        state.0 = true;
        drop(state);
        table.turned.notify_all();
        let mut state = table.mutex.lock();
        while state.0 {
            state = table.turned.wait(state);
        }
        expected += 1;
        state.1 == expected
    });
    {
        let mut state = table.mutex.lock();
        state.0 = true;
        state.1 = u64::MAX;
    }
    table.turned.notify_all();
    partner.join();
    report("ping_pong_kernel", &runs?, "");
    Ok(())
}

fn boot() -> Result<(), String> {
    let direct = direct_call("boot.direct_call")?;
    report("boot.direct_call", &direct, "");
    let procedure: fn(u64) -> u64 = black_box(empty_procedure);
    let indirect = measure("boot.indirect_call", |i| black_box(procedure)(i) == i)?;
    report_ratio("boot.indirect_call", &indirect, median(&direct));
    Ok(())
}

#[inline(never)]
fn bench_intrinsic(args: &(u64,)) -> u64 {
    black_box(args.0)
}

fn ext() -> Result<(), String> {
    let extensions = crate::extensions::get().ok_or("extensions not initialised")?;
    let direct = direct_call("ext.direct_call")?;
    let baseline = median(&direct);
    report("ext.direct_call", &direct, "");

    // An event with only its intrinsic handler: a flag test and a call.
    let (plain, _plain_authority) =
        Event::new("Bench.Plain", bench_intrinsic as fn(&(u64,)) -> u64);
    let intrinsic = measure("ext.intrinsic", |i| {
        plain.raise_static(&mut (i,), bench_intrinsic).ok() == Some(i)
    })?;
    report_ratio("ext.intrinsic", &intrinsic, baseline);

    // One native handler behind one native guard, fused at install (the
    // kernel's cached raise).
    let (guarded, _guarded_authority) =
        Event::new("Bench.Guarded", bench_intrinsic as fn(&(u64,)) -> u64);
    guarded
        .install(
            Principal::KERNEL,
            Install::guarded(
                |args: &(u64,)| args.0 != u64::MAX,
                |args: &(u64,)| black_box(args.0),
            ),
        )
        .map_err(|error| format!("{error:?}"))?;
    // Without its intrinsic, so the guarded handler is the only one (as in
    // the host benchmark's `handlers_1`).
    guarded
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .map_err(|error| format!("{error:?}"))?;
    let mut cache = RaiseCache::default();
    let native_guarded = measure("ext.native_guarded", |i| {
        guarded.raise_cached(&mut cache, &mut (i,)).ok() == Some(i)
    })?;
    report_ratio("ext.native_guarded", &native_guarded, baseline);

    // The Wasm figures on the default tier (no suffix), then pinned to
    // each tier (`.wasmi`, `.native`).
    let bench_wasm = extensions.module_bytes("bench")?;
    for tier in [None, Some(Tier::Interpreter), Some(Tier::Native)] {
        wasm_figures(extensions, bench_wasm, tier, baseline)?;
    }

    // The checksum in Rust compiled into the kernel: the native baseline.
    let packet = fixtures::packet();
    let expected = fixtures::checksum(&packet);
    let rust_checksum = measure("ext.checksum_1500.rust", |_| {
        fixtures::checksum(black_box(&packet[..])) == expected
    })?;
    report_ratio("ext.checksum_1500.rust", &rust_checksum, baseline);

    // Compile time alone of the ~60 KB module, in the guest.
    let big = extensions.module_bytes("big")?;
    let info = ModuleInfo::parse(big).map_err(|error| format!("{error}"))?;
    // The kernel's choice per function (the single-pass compiler for
    // functions without loops, Cranelift optimized and verified for the
    // rest), then Cranelift for every function: as the kernel configures
    // it, without optimization, and without its IR verifier.
    for (suffix, backend, optimize, verify) in [
        ("", Backend::Mixed, true, true),
        (".cranelift", Backend::Cranelift, true, true),
        (".opt_none", Backend::Cranelift, false, true),
        (".no_verifier", Backend::Cranelift, true, false),
    ] {
        let compiler = Compiler::new(CompileLimits {
            optimize,
            verify,
            backend,
            ..CompileLimits::default()
        })
        .map_err(|error| format!("{error}"))?;
        let name = format!("ext.compile_50k{suffix}");
        let (mut code_bytes, mut single_pass) = (0, 0);
        let compile = measure_n(&name, 1, |_| match compiler.compile(big, &info) {
            Ok(compiled) => {
                code_bytes = compiled.code.len();
                single_pass = compiled.single_pass_functions;
                true
            }
            Err(_) => false,
        })?;
        report(
            &name,
            &compile,
            &format!(
                " bytes={} code_bytes={code_bytes} single_pass_functions={single_pass}",
                big.len()
            ),
        );
    }

    // Load + validate + link + instantiate (+ unload) of the ~60 KB module.
    let big = extensions.module_bytes("big")?;
    let load = measure_n("ext.load_50k", 1, |_| {
        fixtures::load(extensions.runtime(), big).is_ok()
    })?;
    report("ext.load_50k", &load, &format!(" bytes={}", big.len()));
    Ok(())
}

/// Raising `Bench.Event` to an empty Wasm handler, with a Wasm guard, a
/// Wasm-to-kernel call, and the checksum of the 1,500-byte packet, with
/// the bench extension on `tier` (the default tier when `None`); the
/// figures are named `ext.<figure>` or `ext.<figure>.<tier>`.
fn wasm_figures(
    extensions: &crate::extensions::Extensions,
    bench_wasm: &[u8],
    tier: Option<Tier>,
    baseline: f64,
) -> Result<(), String> {
    let suffix = tier.map_or(String::new(), |tier| format!(".{tier}"));
    let name = |figure: &str| format!("ext.{figure}{suffix}");
    // A fresh bench extension on `tier`, with its handler (and guard)
    // bound by `bind`. On the default tier, as the kernel runs an
    // extension: loaded on wasmi, its handlers bound (as `init` binds
    // them), then tiered up (the kernel does it on a thread of its own
    // once the extension is loaded, `extensions::tier_up_in_background`;
    // here at once), so the figures are those a loaded extension settles
    // at.
    let fixture_bound = |bind: fn(&Fixture) -> Result<BindingId, BindError>| {
        let mut request = LoadRequest::new("bench", bench_wasm);
        if let Some(tier) = tier {
            request = request.tier(tier);
        }
        let fixture =
            Fixture::load(extensions.runtime(), request).map_err(|error| format!("{error}"))?;
        let binding =
            bind(&fixture).map_err(|error| format!("binding the bench handler: {error}"))?;
        let expected = match tier {
            Some(tier) => tier,
            None => {
                extensions
                    .runtime()
                    .tier_up(&fixture.extension)
                    .map_err(|error| format!("the bench extension's tier-up: {error}"))?;
                Tier::Native
            }
        };
        let ran = fixture.extension.tier();
        if ran != expected {
            return Err(format!("the bench extension ran on {ran}, not {expected}"));
        }
        Ok::<_, String>((fixture, binding))
    };
    const WASM_ITERATIONS: u64 = 5_000;
    let (fixture, binding) = fixture_bound(Fixture::bind_handler)?;
    // The handler returns nothing: `raise` says whether it ran without
    // a fault. Raised as the kernel's hot paths raise: through the
    // raiser's own cache of the handler list (no lock or reference count
    // per raise).
    let mut cache = RaiseCache::default();
    let wasm_handler = measure_n(&name("wasm_handler"), WASM_ITERATIONS, |i| {
        fixture.raise_cached(&mut cache, i)
    })?;
    fixture
        .unbind(binding)
        .map_err(|error| format!("unbinding the bench handler: {error}"))?;
    report_ratio(&name("wasm_handler"), &wasm_handler, baseline);

    let (fixture, binding) = fixture_bound(Fixture::bind_handler_and_guard)?;
    let mut cache = RaiseCache::default();
    let wasm_guarded = measure_n(&name("wasm_guarded"), WASM_ITERATIONS, |i| {
        fixture.raise_cached(&mut cache, i)
    })?;
    fixture
        .unbind(binding)
        .map_err(|error| format!("unbinding the bench handler: {error}"))?;
    report_ratio(&name("wasm_guarded"), &wasm_guarded, baseline);

    // The empty handler behind a guard that reads the extension's state
    // (a limit in its linear memory), as real filters do: read-only, so
    // native code runs it without the lock. Each raise is checked against
    // the limit (set above every value raised).
    let (fixture, binding) = fixture_bound(Fixture::bind_handler_and_state_guard)?;
    fixture
        .set_limit(WASM_ITERATIONS)
        .map_err(|error| format!("setting the bench limit: {error}"))?;
    let mut cache = RaiseCache::default();
    let wasm_state_guarded = measure_n(&name("wasm_state_guarded"), WASM_ITERATIONS, |i| {
        fixture.raise_cached(&mut cache, i) == (i < WASM_ITERATIONS)
    })?;
    fixture
        .unbind(binding)
        .map_err(|error| format!("unbinding the bench handler: {error}"))?;
    report_ratio(&name("wasm_state_guarded"), &wasm_state_guarded, baseline);

    // The empty handler behind a guard that asks the kernel the time
    // (`timer_now_ns`) and compares it with a deadline in its memory, as
    // time-window filters do: a kernel procedure that changes nothing,
    // so native code runs the guard without the lock too. The deadline
    // is the end of time: every raise is checked to have run the handler.
    let (fixture, binding) = fixture_bound(Fixture::bind_handler_and_clock_guard)?;
    fixture
        .set_deadline(u64::MAX)
        .map_err(|error| format!("setting the bench deadline: {error}"))?;
    let mut cache = RaiseCache::default();
    let wasm_clock_guarded = measure_n(&name("wasm_clock_guarded"), WASM_ITERATIONS, |i| {
        fixture.raise_cached(&mut cache, i)
    })?;
    fixture
        .unbind(binding)
        .map_err(|error| format!("unbinding the bench handler: {error}"))?;
    report_ratio(&name("wasm_clock_guarded"), &wasm_clock_guarded, baseline);

    // A handler that touches its state (adds the value to a total in its
    // linear memory), as real ones do: the locked path. Each raise is
    // checked; the total once after, against the values raised.
    let (fixture, binding) = fixture_bound(Fixture::bind_counter)?;
    let mut cache = RaiseCache::default();
    let before = fixture
        .total()
        .map_err(|error| format!("the bench total: {error}"))?;
    let wasm_counter = measure_n(&name("wasm_counter"), WASM_ITERATIONS, |i| {
        fixture.raise_cached(&mut cache, i)
    })?;
    // Each repetition raised 0, 1, ... WASM_ITERATIONS - 1.
    let raised = REPETITIONS as u64 * (WASM_ITERATIONS * (WASM_ITERATIONS - 1) / 2);
    let total = fixture
        .total()
        .map_err(|error| format!("the bench total: {error}"))?;
    if total.wrapping_sub(before) != raised {
        return Err(format!(
            "the counting handler added up {} where {raised} was raised",
            total.wrapping_sub(before)
        ));
    }
    fixture
        .unbind(binding)
        .map_err(|error| format!("unbinding the bench handler: {error}"))?;
    report_ratio(&name("wasm_counter"), &wasm_counter, baseline);

    // Wasm -> kernel: one invocation making many empty kernel calls.
    const NULL_CALLS: u32 = 10_000;
    let wasm_to_kernel = measure_n(&name("wasm_to_kernel"), 1, |_| {
        fixture.null_calls(NULL_CALLS).is_ok()
    })?;
    let per_call: Vec<f64> = wasm_to_kernel
        .iter()
        .map(|ns| ns / f64::from(NULL_CALLS))
        .collect();
    report_ratio(&name("wasm_to_kernel"), &per_call, baseline);

    // The checksum of the packet (a kernel-to-Wasm call included).
    const CHECKSUM_ITERATIONS: u64 = 2_000;
    let expected = fixtures::checksum(&fixtures::packet());
    let checksum = measure_n(&name("checksum_1500"), CHECKSUM_ITERATIONS, |_| {
        fixture.checksum(fixtures::PACKET_BYTES as u32) == Ok(expected)
    })?;
    report_ratio(&name("checksum_1500"), &checksum, baseline);
    Ok(())
}
