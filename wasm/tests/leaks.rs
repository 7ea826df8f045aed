//! Load/unload cycles leave the heap where it started (the issue: "Unload
//! removes the extension's handlers, revokes its capabilities and frees
//! its memory: 1,000 load/unload cycles leave kernel memory where it
//! started"; the kernel's `load_unload_1000_times_leaks_nothing` test).
//!
//! The runtime is set up as the kernel sets it up (kernel interface
//! exported in a nameserver, imports resolved through it, `Timer.Tick`
//! with accounting on and granted at load); each cycle is the kernel
//! test's `runtime.load(..grant_event(tick))` + `extension.unload()`, plus
//! one tick so the installed Wasm handler runs.
//!
//! Live heap is counted by `stats_alloc`'s instrumented system allocator:
//! the workspace forbids `unsafe` in every target, tests included, and an
//! allocator wrapper cannot be written without it. Allocation counters are
//! global, so the tests of this binary take turns ([`SERIAL`]) and each
//! measurement is the smallest of a few rounds: allocations the test
//! harness makes on its own thread (reporting another test) can only add
//! to a round, a leak adds to every round.
//!
//! The shipped modules (`target/extensions/`, built by `./x
//! build-extensions`) are measured when present; text-format stand-ins
//! doing the same (log in `init`; install a handler on the granted
//! `Timer.Tick` in `init`) are measured always.

mod common;

use std::{
    alloc::System,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
};

use dispatch::{BindingId, Event, Handler, Install, Principal};
use domain::NameServer;
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use wasm_runtime::{
    domains::{export_kernel_interface, DomainResolver},
    engine::wasmi::WasmiEngine,
    events::port,
    Bind, CallError, Console, EngineConfig, EventPort, LoadRequest, Runtime, Services,
};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// One measurement at a time: the counters are process-wide.
static SERIAL: Mutex<()> = Mutex::new(());

/// Cycles run before measuring (lazily built caches, first-use growth).
const WARM_UP: usize = 10;
/// Cycles per measured round.
const CYCLES: usize = 200;
/// Rounds; the smallest growth counts.
const ROUNDS: usize = 3;
/// Growth over `CYCLES` cycles still taken for noise (the harness's own
/// bookkeeping on another thread). Nothing measured so far needs it (0
/// bytes in 0 allocations); the leaks it must catch were at least one
/// allocation and ~140 bytes per cycle, 200 allocations a round.
const SLACK_BYTES: i64 = 1024;
const SLACK_ALLOCATIONS: i64 = 8;

/// `hello`: logs in `init`, installs nothing.
const HELLO: &str = r#"
(module
  (import "spindle" "log" (func $log (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "hello from a Wasm extension")
  (func (export "init") (drop (call $log (i32.const 16) (i32.const 27)))))
"#;

/// `tick-counter`: installs `on_tick` on the granted `Timer.Tick` in
/// `init`, through `spindle.install`, and counts ticks.
const TICK_COUNTER: &str = r#"
(module
  (import "spindle" "handle_find" (func $find (param i32 i32) (result i32)))
  (import "spindle" "install" (func $install (param i32 i32 i32 i32 i32 i32 i64) (result i32)))
  (import "spindle" "log" (func $log (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "Timer.Tick")
  (data (i32.const 16) "on_tick")
  (data (i32.const 32) "tick-counter: installed on Timer.Tick")
  (global $count (mut i64) (i64.const 0))
  (func (export "init")
    (if (i32.ge_s
          (call $install (call $find (i32.const 0) (i32.const 10))
                         (i32.const 16) (i32.const 7) (i32.const 0) (i32.const 0)
                         (i32.const 0) (i64.const 0))
          (i32.const 0))
      (then (drop (call $log (i32.const 32) (i32.const 37))))
      (else unreachable)))
  (func (export "on_tick") (param i64)
    (global.set $count (i64.add (global.get $count) (i64.const 1))))
  (func (export "count") (result i64) (global.get $count)))
"#;

/// `even-ticks`, plus a trapping export: installs `on_tick` guarded by the
/// pure `is_even` in `init`.
const EVEN_TICKS: &str = r#"
(module
  (import "spindle" "handle_find" (func $find (param i32 i32) (result i32)))
  (import "spindle" "install" (func $install (param i32 i32 i32 i32 i32 i32 i64) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "Timer.Tick")
  (data (i32.const 16) "on_even_tick")
  (data (i32.const 32) "is_even")
  (global $count (mut i64) (i64.const 0))
  (func (export "init")
    (if (i32.lt_s
          (call $install (call $find (i32.const 0) (i32.const 10))
                         (i32.const 16) (i32.const 12) (i32.const 32) (i32.const 7)
                         (i32.const 0) (i64.const 0))
          (i32.const 0))
      (then unreachable)))
  (func (export "is_even") (param i64) (result i32)
    (i64.eqz (i64.and (local.get 0) (i64.const 1))))
  (func (export "on_even_tick") (param i64)
    (global.set $count (i64.add (global.get $count) (i64.const 1))))
  (func (export "fail") unreachable))
"#;

/// Console output is dropped: a console that kept it would grow.
struct Discard;

impl Console for Discard {
    fn log(&self, _extension: &str, _message: &str) {}
}

fn tick_intrinsic(_: &(u64,)) {}

/// The kernel's setup: nameserver, resolver, `Timer.Tick` with accounting.
struct Kernel {
    runtime: Runtime,
    /// Raises of `Extension.Faulted` seen by the kernel's policy handler.
    faults: Arc<AtomicU64>,
    tick: Arc<Event<(u64,), ()>>,
    tick_port: Arc<dyn EventPort>,
    _nameserver: Arc<NameServer>,
}

fn kernel() -> Kernel {
    let nameserver = Arc::new(NameServer::new());
    export_kernel_interface(&nameserver, None).unwrap();
    let runtime = Runtime::with_parts(
        Box::new(WasmiEngine::new(&EngineConfig::default())),
        Arc::new(DomainResolver::new(nameserver.clone())),
        Services {
            console: Arc::new(Discard),
            clock: None,
            strands: None,
        },
        wasm_runtime::Limits::default(),
    );
    let (tick, _authority) = Event::new("Timer.Tick", tick_intrinsic as fn(&(u64,)));
    let tick = Arc::new(tick);
    tick.enable_accounting(None);
    runtime.faulted().enable_accounting(None);
    let tick_port = port(tick.clone());
    let faults = Arc::new(AtomicU64::new(0));
    let seen = faults.clone();
    runtime
        .faulted()
        .install(
            Principal::KERNEL,
            Install::new(Handler::new(move |_: &(u64, u32)| {
                seen.fetch_add(1, Ordering::Relaxed);
            })),
        )
        .unwrap();
    Kernel {
        runtime,
        faults,
        tick,
        tick_port,
        _nameserver: nameserver,
    }
}

/// What one cycle does between load and unload.
#[derive(Clone, Copy)]
enum Scenario {
    /// Load, one tick, unload (the kernel test's cycle). `installs`: the
    /// extension installs one handler from `init`.
    Plain { installs: bool },
    /// The extension installs `handler` guarded by `is_even` from `init`;
    /// the kernel binds `handler` again, ephemeral and guarded; two ticks;
    /// `fault` (if any) is called and traps (`Extension.Faulted` raised);
    /// then every other cycle unloads and the others just drop the
    /// extension.
    Exercised {
        handler: &'static str,
        fault: Option<&'static str>,
    },
}

impl Kernel {
    /// One cycle: load with `Timer.Tick` granted, the scenario, unload.
    fn cycle(&self, name: &str, bytes: &[u8], scenario: Scenario, index: usize) {
        let extension = self
            .runtime
            .load(LoadRequest::new(name, bytes).grant_event(self.tick_port.clone()))
            .unwrap_or_else(|error| panic!("load {name}: {error}"));
        let drop_only = match scenario {
            Scenario::Plain { installs } => {
                let expected = 1 + usize::from(installs);
                assert_eq!(self.tick.bindings().len(), expected, "{name} installed");
                self.tick.raise(&mut (1,)).unwrap();
                false
            }
            Scenario::Exercised { handler, fault } => {
                assert_eq!(self.tick.bindings().len(), 2, "{name} installed");
                extension
                    .bind(
                        &self.tick_port,
                        &Bind::handler(handler).guard("is_even").ephemeral(100_000),
                    )
                    .unwrap();
                assert_eq!(self.tick.bindings().len(), 3);
                self.tick.raise(&mut (1,)).unwrap();
                self.tick.raise(&mut (2,)).unwrap();
                if let Some(fault) = fault {
                    let faults = self.faults.load(Ordering::Relaxed);
                    assert!(matches!(
                        extension.call(fault, &[]),
                        Err(CallError::Trap(_))
                    ));
                    assert_eq!(self.faults.load(Ordering::Relaxed), faults + 1);
                }
                index % 2 == 1
            }
        };
        if drop_only {
            drop(extension);
        } else {
            let installed = self.tick.bindings().len() - 1;
            let report = extension.unload().unwrap();
            assert_eq!(report.handlers_removed, installed);
            assert_eq!(report.handlers_kept, 0);
            assert!(extension.is_unloaded());
        }
        assert_eq!(self.tick.bindings(), vec![BindingId::INTRINSIC]);
    }
}

/// Live bytes and live allocations.
fn live() -> (i64, i64) {
    let stats = GLOBAL.stats();
    (
        stats.bytes_allocated as i64 - stats.bytes_deallocated as i64,
        stats.allocations as i64 - stats.deallocations as i64,
    )
}

/// What `CYCLES` cycles left behind (the smallest of `ROUNDS` rounds).
#[derive(Clone, Copy, Debug)]
struct Leak {
    bytes: i64,
    allocations: i64,
}

impl Leak {
    fn per_cycle(&self) -> (f64, f64) {
        (
            self.bytes as f64 / CYCLES as f64,
            self.allocations as f64 / CYCLES as f64,
        )
    }
}

fn measure(label: &str, name: &str, bytes: &[u8], scenario: Scenario) -> Leak {
    let kernel = kernel();
    for index in 0..WARM_UP {
        kernel.cycle(name, bytes, scenario, index);
    }
    let mut least: Option<Leak> = None;
    for _ in 0..ROUNDS {
        let (bytes_before, allocations_before) = live();
        for index in 0..CYCLES {
            kernel.cycle(name, bytes, scenario, index);
        }
        let (bytes_after, allocations_after) = live();
        let round = Leak {
            bytes: bytes_after - bytes_before,
            allocations: allocations_after - allocations_before,
        };
        least = Some(match least {
            Some(least) if least.bytes <= round.bytes => least,
            _ => round,
        });
    }
    let leak = least.unwrap();
    let (bytes_per_cycle, allocations_per_cycle) = leak.per_cycle();
    eprintln!(
        "{label}: {CYCLES} load/unload cycles left {} bytes in {} allocations \
         ({bytes_per_cycle:.1} bytes, {allocations_per_cycle:.2} allocations per cycle)",
        leak.bytes, leak.allocations
    );
    leak
}

fn assert_no_leak(name: &str, leak: Leak) {
    assert!(
        leak.bytes <= SLACK_BYTES && leak.allocations <= SLACK_ALLOCATIONS,
        "{name}: {CYCLES} load/unload cycles leaked {} bytes in {} allocations",
        leak.bytes,
        leak.allocations
    );
}

/// The shipped extension `name`.
fn shipped(name: &str) -> Vec<u8> {
    common::shipped_extension(name)
}

fn check(name: &str, wat: &str, stand_in_scenario: Scenario, scenario: Scenario) {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let stand_in = wat::parse_str(wat).unwrap();
    let label = format!("{name} (text-format stand-in)");
    let mut leaks = vec![(
        label.clone(),
        measure(&label, name, &stand_in, stand_in_scenario),
    )];
    let bytes = shipped(name);
    let label = format!("{name} (target/extensions/{name}.wasm)");
    leaks.push((label.clone(), measure(&label, name, &bytes, scenario)));
    for (name, leak) in leaks {
        assert_no_leak(&name, leak);
    }
}

/// An extension that installs nothing: its compiled code, instance,
/// linear memory, handle table and domain all go at unload.
#[test]
fn hello_load_unload_cycles_leak_nothing() {
    let plain = Scenario::Plain { installs: false };
    check("hello", HELLO, plain, plain);
}

/// An extension that installs a handler on a granted event from `init`:
/// the binding, its handle and the dispatcher's records of it go too.
#[test]
fn tick_counter_load_unload_cycles_leak_nothing() {
    let plain = Scenario::Plain { installs: true };
    check("tick-counter", TICK_COUNTER, plain, plain);
}

/// Guards (a Wasm guard installed from `init`, another bound by the
/// kernel), an ephemeral binding, a trap reported on `Extension.Faulted`,
/// and extensions dropped without `unload`.
#[test]
fn guarded_faulting_and_dropped_extensions_leak_nothing() {
    let handler = "on_even_tick";
    check(
        "even-ticks",
        EVEN_TICKS,
        Scenario::Exercised {
            handler,
            fault: Some("fail"),
        },
        Scenario::Exercised {
            handler,
            fault: None,
        },
    );
}

/// Sanity check of the measurement: a deliberate leak of one allocation
/// a cycle is seen.
#[test]
fn a_deliberate_leak_is_measured() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut kept = Vec::with_capacity(CYCLES);
    let (bytes_before, allocations_before) = live();
    for _ in 0..CYCLES {
        kept.push(vec![0u8; 4096]);
    }
    let (bytes_after, allocations_after) = live();
    let leak = Leak {
        bytes: bytes_after - bytes_before,
        allocations: allocations_after - allocations_before,
    };
    assert!(leak.bytes > SLACK_BYTES && leak.allocations > SLACK_ALLOCATIONS);
    assert!(leak.bytes >= (CYCLES * 4096) as i64 / 2, "{leak:?}");
    drop(kept);
}
