//! Host benchmarks of the event dispatcher, in the layout of table 1 of the
//! events paper (003 §3.1) plus the declarative-guard and installation
//! figures. Every figure is the median of [`REPETITIONS`] runs of many
//! iterations, and is also given as a ratio to a direct call measured in the
//! same run.
//!
//! Output, one line per figure (read by `./x bench dispatch`):
//! `bench dispatch.<name> <median> ns runs=<n> min=<min> max=<max> ratio=<r>x`.
//!
//! Two raise paths are measured: `raise_cached` (a raiser-private list
//! cache, what a kernel keeps per CPU on hot paths; the main figures) and
//! `raise` (any raiser, which clones the list's `Arc`: the `*_shared`
//! figures).
//!
//! Baselines in the same run: `direct_call`, `indirect_call` (one function
//! pointer called again and again), `indirect_call_in_loop` (50 different
//! functions called in turn from an array: per call) and
//! `guard_and_handler_calls` (a guard and a handler called through
//! `Arc<dyn Fn>` with no dispatcher: what one guarded handler costs at
//! least). `extra_handler` is the slope from 10 to 50 guarded handlers,
//! printed with both indirect-call baselines and its ratio to each.
//!
//! The guarded handlers are installed three ways: the same code n times
//! (the main figures; the dispatcher merges them into one run with their
//! code inlined), n codes of their own (`_distinct`: one indirect call
//! each) and unfused (`_unfused`: guard and handler called separately).

use std::{
    hint::black_box,
    sync::Arc,
    time::{Duration, Instant},
};

use dispatch::{
    BindingId, Event, Field, Guard, Handler, Install, Predicate, Principal, RaiseCache,
};

/// A guard and a handler as the dispatcher stores them.
type GuardFn = Arc<dyn Fn(&(u64,)) -> bool + Send + Sync>;
type HandlerFn = Arc<dyn Fn(&(u64,)) -> u64 + Send + Sync>;

const REPETITIONS: usize = 11;
/// Target duration of one repetition.
const REPETITION_TIME: Duration = Duration::from_millis(20);

#[inline(never)]
fn direct_a0() -> u64 {
    black_box(7)
}

#[inline(never)]
fn direct_a1(x: u64) -> u64 {
    x.wrapping_add(1)
}

#[inline(never)]
fn direct_a5(a: u64, b: u64, c: u64, d: u64, e: u64) -> u64 {
    a ^ b ^ c ^ d ^ e
}

fn intrinsic_a0(_: &()) -> u64 {
    black_box(7)
}

fn intrinsic_a1(args: &(u64,)) -> u64 {
    args.0.wrapping_add(1)
}

fn intrinsic_a5(a: &(u64, u64, u64, u64, u64)) -> u64 {
    a.0 ^ a.1 ^ a.2 ^ a.3 ^ a.4
}

/// Statistics of one figure, in nanoseconds per operation.
struct Figure {
    median: f64,
    min: f64,
    max: f64,
}

/// Times `op` (which performs `per_call` operations) and returns ns per
/// operation over [`REPETITIONS`] repetitions.
fn measure(mut op: impl FnMut()) -> Figure {
    // Calibrate the iteration count to about REPETITION_TIME.
    let mut iterations = 1u64;
    loop {
        let start = Instant::now();
        for _ in 0..iterations {
            op();
        }
        if start.elapsed() >= REPETITION_TIME / 4 || iterations >= 1 << 30 {
            break;
        }
        iterations *= 2;
    }
    iterations *= 4;
    // A plain loop, with `op` owned here: the captured references of `op`
    // can stay in registers instead of being reloaded through a pointer to
    // the closure after every `black_box` (a cost of the harness that the
    // direct-call figure, which captures nothing, never paid).
    let mut samples = Vec::with_capacity(REPETITIONS);
    for _ in 0..REPETITIONS {
        let start = Instant::now();
        for _ in 0..iterations {
            op();
        }
        samples.push(start.elapsed().as_nanos() as f64 / iterations as f64);
    }
    samples.sort_by(|a, b| a.total_cmp(b));
    Figure {
        median: samples[REPETITIONS / 2],
        min: samples[0],
        max: samples[REPETITIONS - 1],
    }
}

fn report(name: &str, figure: &Figure, baseline: f64) {
    println!(
        "bench dispatch.{name} {:.2} ns runs={REPETITIONS} min={:.2} max={:.2} ratio={:.2}x",
        figure.median,
        figure.min,
        figure.max,
        figure.median / baseline
    );
}

fn ratio(name: &str, value: f64) {
    println!("bench dispatch.{name} {value:.2} x");
}

/// How the guarded handlers of [`guarded_event`] are installed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Installed {
    /// `Install::guarded(guard, handler)`: concrete closure types, fused
    /// into one call at installation (how Rust code installs a guarded
    /// handler).
    Fused,
    /// `Install::new(Handler::new(..)).guard(Guard::new(..))`: guard and
    /// handler type-erased separately (two calls per handler).
    Unfused,
    /// `Install::guarded`, each installation with code of its own (see
    /// [`distinct_guarded`]): what n different extensions' handlers cost,
    /// one indirect call each, where `Fused` installs the same code n
    /// times (which the dispatcher runs as one run, its code inlined).
    Distinct,
}

/// The guard and handler of [`guarded_event`], with code of their own for
/// each `K`: the constants differ, so no two instances share machine code
/// (the compiler cannot fold them into one function) and the dispatcher
/// cannot merge them into a run. The guard holds exactly when `pass` does,
/// for the arguments raised here.
fn distinct_guarded<const K: u64>(pass: bool) -> Install<(u64,), u64> {
    Install::guarded(
        move |a: &(u64,)| (a.0 != u64::MAX - K) == pass,
        |a: &(u64,)| a.0.wrapping_add(K + 1),
    )
}

/// One of 50 functions with code of their own, for the baseline
/// `indirect_call_in_loop`.
#[inline(never)]
fn distinct_function<const K: u64>(x: u64) -> u64 {
    x.wrapping_add(K + 1)
}

macro_rules! distinct_functions {
    ($($k:literal)*) => {
        [$(distinct_function::<$k> as fn(u64) -> u64),*]
    };
}

/// The functions of `indirect_call_in_loop`.
const FUNCTIONS: [fn(u64) -> u64; 50] = distinct_functions!(
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26
    27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49
);

/// A constructor of one installation of [`distinct_guarded`].
type DistinctInstall = fn(bool) -> Install<(u64,), u64>;

macro_rules! distinct_installs {
    ($($k:literal)*) => {
        [$(distinct_guarded::<$k> as DistinctInstall),*]
    };
}

/// 51 installations with distinct code (for 50 false guards and 1 true).
const DISTINCT: [DistinctInstall; 51] = distinct_installs!(
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26
    27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50
);

/// An event with `handlers` handlers (intrinsic removed), each with one
/// procedural guard; `true_guards` of them true (the last ones).
fn guarded_event(handlers: usize, true_guards: usize, how: Installed) -> Event<(u64,), u64> {
    let (event, _) = Event::new("Bench.Guarded", intrinsic_a1);
    event
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .unwrap();
    for i in 0..handlers {
        let pass = i >= handlers - true_guards;
        // Compare an argument to a constant, like SPIN's table 1 guards
        // compared a global to a constant.
        let guard = move |a: &(u64,)| (a.0 != u64::MAX) == pass;
        let handler = |a: &(u64,)| a.0.wrapping_add(1);
        let install = match how {
            Installed::Fused => Install::guarded(guard, handler),
            Installed::Unfused => Install::new(Handler::new(handler)).guard(Guard::new(guard)),
            Installed::Distinct => {
                let code = DISTINCT
                    .get(i)
                    .expect("at most 51 handlers of distinct code");
                code(pass)
            }
        };
        event.install(Principal(1), install).unwrap();
    }
    event
}

/// An event with `ports` handlers, each guarded by `port == 1000 + i`.
fn port_event(ports: usize) -> Event<(u64,), u64> {
    let (event, _) = Event::new("Bench.Udp", intrinsic_a1);
    event
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .unwrap();
    for i in 0..ports as u64 {
        event
            .install(
                Principal(i),
                Install::new(Handler::new(|a: &(u64,)| a.0))
                    .guard(Guard::when(Predicate::equals(Field::Param(0), 1000 + i))),
            )
            .unwrap();
    }
    event
}

/// Raises through a warm cache. The arguments live in memory (a raise
/// takes them by reference) and are read once per raise, as the direct
/// call's `black_box(5)` is; the handlers here do not change them.
fn raise_cached_figure(event: &Event<(u64,), u64>, arg: u64) -> Figure {
    let mut cache = RaiseCache::new();
    let mut args = (arg,);
    assert!(event.raise_cached(&mut cache, &mut args).is_ok());
    measure(|| {
        black_box(event.raise_cached(&mut cache, black_box(&mut args)).ok());
    })
}

fn raise_figure(event: &Event<(u64,), u64>, arg: u64) -> Figure {
    let mut args = (arg,);
    measure(|| {
        black_box(event.raise(black_box(&mut args)).ok());
    })
}

fn main() {
    let direct = measure(|| {
        black_box(direct_a1(black_box(5)));
    });
    let baseline = direct.median;
    report("direct_call", &direct, baseline);
    let direct0 = measure(|| {
        black_box(direct_a0());
    });
    report("direct_call_a0", &direct0, baseline);
    // Arguments live in memory written long before the call (no store
    // forwarding stalls), for the direct call and the raise alike.
    let five = black_box((1u64, 2u64, 3u64, 4u64, 5u64));
    // Ratios of the intrinsic figures are to the direct call with the same
    // number of arguments.
    let direct5 = measure(|| {
        let a = black_box(&five);
        black_box(direct_a5(a.0, a.1, a.2, a.3, a.4));
    });
    report("direct_call_a5", &direct5, baseline);
    // The same function called through a pointer the optimizer cannot see
    // through: what one more handler may cost (goal: extra_handler <=
    // indirect_call).
    let pointer: fn(u64) -> u64 = black_box(direct_a1);
    let indirect = measure(|| {
        black_box(pointer(black_box(5)));
    });
    report("indirect_call", &indirect, baseline);
    // 50 different functions called in turn through an array, each result
    // replacing the last: the handler loop's shape without a dispatcher,
    // per call (the floor of extra_handler_distinct, whose handlers also
    // have code of their own).
    let functions = black_box(FUNCTIONS);
    let mut in_loop = measure(|| {
        let x = black_box(5);
        let mut last = 0;
        for function in &functions {
            last = function(x);
        }
        black_box(last);
    });
    for value in [&mut in_loop.median, &mut in_loop.min, &mut in_loop.max] {
        *value /= FUNCTIONS.len() as f64;
    }
    report("indirect_call_in_loop", &in_loop, baseline);
    // The calls a guarded handler cannot avoid, without a dispatcher: its
    // guard and its code, each an `Arc<dyn Fn>` (the floor of handlers_1
    // and of extra_handler).
    let pass = black_box(true);
    let guard: GuardFn = black_box(Arc::new(move |a: &(u64,)| (a.0 != u64::MAX) == pass));
    let code: HandlerFn = black_box(Arc::new(|a: &(u64,)| a.0.wrapping_add(1)));
    let pair = measure(|| {
        let args = (black_box(5),);
        black_box(if guard(&args) {
            Some(code(&args))
        } else {
            None
        });
    });
    report("guard_and_handler_calls", &pair, baseline);

    // Intrinsic handler only: a flag test and a call.
    let (e0, _) = Event::<(), u64>::new("Bench.A0", intrinsic_a0);
    let (e1, _) = Event::<(u64,), u64>::new("Bench.A1", intrinsic_a1);
    let (e5, _) = Event::<(u64, u64, u64, u64, u64), u64>::new("Bench.A5", intrinsic_a5);
    assert!(e0.is_intrinsic_only() && e1.is_intrinsic_only() && e5.is_intrinsic_only());
    // Through interface glue that names the intrinsic (a direct call).
    // A raise takes its arguments by reference, so they live in memory, as
    // for the 5-argument figures: one load of the argument per call, as
    // the direct call's `black_box(5)` costs one load. (Building the tuple
    // inside the loop from `black_box(5)` would copy the value through
    // memory twice per call: a cost of the harness, not of the raise.)
    let i0 = measure(|| {
        black_box(e0.raise_static(black_box(&mut ()), intrinsic_a0).ok());
    });
    let mut args1 = (5u64,);
    let i1 = measure(|| {
        black_box(e1.raise_static(black_box(&mut args1), intrinsic_a1).ok());
    });
    let mut args5 = five;
    let i5 = measure(|| {
        black_box(e5.raise_static(black_box(&mut args5), intrinsic_a5).ok());
    });
    report("intrinsic_a0", &i0, direct0.median);
    report("intrinsic_a1", &i1, baseline);
    report("intrinsic_a5", &i5, direct5.median);
    // Through `raise` (an indirect call of the stored intrinsic).
    let d0 = measure(|| {
        black_box(e0.raise(black_box(&mut ())).ok());
    });
    let d1 = measure(|| {
        black_box(e1.raise(black_box(&mut args1)).ok());
    });
    let d5 = measure(|| {
        black_box(e5.raise(black_box(&mut args5)).ok());
    });
    report("intrinsic_a0_indirect", &d0, direct0.median);
    report("intrinsic_a1_indirect", &d1, baseline);
    report("intrinsic_a5_indirect", &d5, direct5.median);

    // Table 1: n handlers, one guard each, all true, one argument. The
    // main figures install the same guard and handler code n times with
    // `Install::guarded` (fused, and merged into one run: SPIN's inlined
    // column); `_distinct` ones n different codes (one indirect call
    // each: SPIN's out-of-line column); `_unfused` ones with a separate
    // `Guard::new` and `Handler::new` (what runtime-typed or separately
    // built guards cost).
    for (how, suffix) in [
        (Installed::Fused, ""),
        (Installed::Distinct, "_distinct"),
        (Installed::Unfused, "_unfused"),
    ] {
        let mut per_handler = Vec::new();
        for n in [1usize, 5, 10, 50] {
            let event = guarded_event(n, n, how);
            let cached = raise_cached_figure(&event, 5);
            report(&format!("handlers_{n}{suffix}"), &cached, baseline);
            if how == Installed::Fused {
                let shared = raise_figure(&event, 5);
                report(&format!("handlers_{n}_shared"), &shared, baseline);
            }
            per_handler.push((n, cached.median));
        }
        let (_, one) = per_handler[0];
        let (_, ten) = per_handler[2];
        let (_, fifty) = per_handler[3];
        ratio(&format!("handlers_1{suffix}_ratio"), one / baseline);
        // Slope between 10 and 50 handlers: the cost of one more guarded
        // handler, next to one indirect call measured in this run.
        let extra = (fifty - ten) / 40.0;
        println!(
            "bench dispatch.extra_handler{suffix} {extra:.2} ns indirect_call={:.2} ratio={:.2}x \
             indirect_call_in_loop={:.2} ratio_in_loop={:.2}x",
            indirect.median,
            extra / indirect.median,
            in_loop.median,
            extra / in_loop.median
        );
    }

    // 50 guards false, 1 true.
    for (how, suffix) in [
        (Installed::Fused, ""),
        (Installed::Distinct, "_distinct"),
        (Installed::Unfused, "_unfused"),
    ] {
        let event = guarded_event(51, 1, how);
        report(
            &format!("guards_50_false_1_true{suffix}"),
            &raise_cached_figure(&event, 5),
            baseline,
        );
    }

    // Declarative port guards, one matching.
    let mut port_one = 0.0;
    for n in [1usize, 10, 50, 500] {
        let event = port_event(n);
        let matching = 1000 + (n as u64) / 2;
        let figure = raise_cached_figure(&event, matching);
        report(&format!("port_guards_{n}"), &figure, baseline);
        if n == 1 {
            port_one = figure.median;
        }
        if n == 50 {
            ratio("port_guards_50_vs_1", figure.median / port_one);
        }
    }

    // Installation: the first handler, and the 100th.
    for (name, existing) in [("install_1", 0usize), ("install_100", 99)] {
        let (event, _) = Event::new("Bench.Install", intrinsic_a1);
        for _ in 0..existing {
            event
                .install(
                    Principal(1),
                    Install::new(Handler::new(|a: &(u64,)| a.0))
                        .guard(Guard::new(|_: &(u64,)| true)),
                )
                .unwrap();
        }
        let handler = Handler::new(|a: &(u64,)| a.0);
        let guard = Guard::new(|_: &(u64,)| true);
        // Each operation installs and removes; removal costs about as much,
        // so half the pair is reported.
        let pair = measure(|| {
            let b = event
                .install(
                    Principal(1),
                    Install::new(handler.clone()).guard(guard.clone()),
                )
                .unwrap();
            event.remove(Principal(1), b).unwrap();
        });
        let install = Figure {
            median: pair.median / 2.0,
            min: pair.min / 2.0,
            max: pair.max / 2.0,
        };
        report(name, &install, baseline);
    }
}
