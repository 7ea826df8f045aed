//! The native engine behind the runtime (docs/design/0008-native-engine.md):
//! the shipped extensions pinned to the native tier run natively (kernel
//! procedures through the host-call trampoline, memory procedures, faults
//! and budgets contained) and give the interpreter's results; code memory
//! goes back to where it was after load/unload cycles.
//!
//! The shipped extensions come from `target/extensions/` (`./x test`
//! builds them first; under a plain `cargo test`, `./x build-extensions`).

use std::{
    path::PathBuf,
    sync::{Arc, Mutex},
};

use dispatch::{Event, Principal, Value, ValueType};
use spindle_abi::FaultKind;
use wasm_runtime::{
    engine::native::NativeEngine, events::port, Bind, Console, EngineConfig, Extension,
    LoadRequest, Runtime, Services, Tier, WasmValue,
};

#[derive(Default)]
struct Recorder {
    lines: Mutex<Vec<String>>,
}

impl Console for Recorder {
    fn log(&self, extension: &str, message: &str) {
        self.lines
            .lock()
            .unwrap()
            .push(format!("{extension}: {message}"));
    }
}

fn tick_intrinsic(_: &(u64,)) {}

/// Code memory is counted for the whole process: the test that checks
/// load/unload cycles give it back runs alone (it takes this for
/// writing), the others beside each other (for reading).
static CODE_MEMORY: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// A runtime with both tiers, loads pinned to `tier`.
fn runtime(tier: Tier) -> (Runtime, Arc<Recorder>) {
    let console = Arc::new(Recorder::default());
    let runtime = Runtime::new(Services {
        console: console.clone(),
        clock: None,
        strands: None,
    })
    .with_native_engine(Box::new(
        NativeEngine::new(&EngineConfig::default()).unwrap(),
    ));
    runtime.pin_tier(Some(tier));
    (runtime, console)
}

fn extension(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/extensions")
        .join(format!("{name}.wasm"));
    std::fs::read(&path).unwrap_or_else(|error| {
        panic!(
            "{}: {error} (build the extensions with ./x build-extensions; ./x test does)",
            path.display()
        )
    })
}

fn load(runtime: &Runtime, request: LoadRequest<'_>, tier: Tier) -> Extension {
    let extension = runtime.load(request).unwrap();
    assert_eq!(
        extension.tier(),
        tier,
        "{} ran on the wrong tier",
        extension.name()
    );
    extension
}

/// The tick event and the port an extension's handlers are bound through.
type TickEvent = (Arc<Event<(u64,), ()>>, Arc<dyn wasm_runtime::EventPort>);

fn tick() -> TickEvent {
    let (event, _authority) = Event::new("Timer.Tick", tick_intrinsic as fn(&(u64,)));
    let event = Arc::new(event);
    event
        .remove(Principal::KERNEL, dispatch::BindingId::INTRINSIC)
        .unwrap();
    let port = port(event.clone());
    (event, port)
}

/// `hello` logs through `spindle.log` (the host-call trampoline reading
/// linear memory) on both tiers.
#[test]
fn hello_logs_on_both_tiers() {
    let _code_memory = CODE_MEMORY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for tier in [Tier::Interpreter, Tier::Native] {
        let (runtime, console) = runtime(tier);
        let bytes = extension("hello");
        load(&runtime, LoadRequest::new("hello", &bytes), tier);
        assert_eq!(
            console.lines.lock().unwrap().as_slice(),
            &["hello: hello from a Wasm extension".to_string()]
        );
    }
}

/// `tick-counter` installs its handler from `init` (kernel procedures with
/// handles) and counts raises natively.
#[test]
fn tick_counter_counts_natively() {
    let _code_memory = CODE_MEMORY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let (runtime, _) = runtime(Tier::Native);
    let (event, port) = tick();
    let bytes = extension("tick-counter");
    let counter = load(
        &runtime,
        LoadRequest::new("tick-counter", &bytes).grant_event(port),
        Tier::Native,
    );
    assert_eq!(event.bindings().len(), 1);
    for ticks in 0..25 {
        event.raise(&mut (ticks,)).unwrap();
    }
    assert_eq!(
        counter.call_typed("count", &[], ValueType::U64).unwrap(),
        Value::U64(25)
    );
    counter.unload().unwrap();
    assert!(event.bindings().is_empty());
}

fn fault_log(runtime: &Runtime) -> Arc<Mutex<Vec<(u64, u32)>>> {
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = log.clone();
    runtime
        .faulted()
        .install(
            Principal::KERNEL,
            dispatch::Install::new(dispatch::Handler::new(move |args: &(u64, u32)| {
                sink.lock().unwrap().push(*args);
            })),
        )
        .unwrap();
    log
}

/// `runaway` loops forever in its handler: the fuel check at loop headers
/// stops it with the interpreter's fault kind.
#[test]
fn runaway_is_stopped_natively() {
    let _code_memory = CODE_MEMORY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let (runtime, _) = runtime(Tier::Native);
    let faults = fault_log(&runtime);
    let (event, port) = tick();
    let bytes = extension("runaway");
    let runaway = load(
        &runtime,
        LoadRequest::new("runaway", &bytes).grant_event(port),
        Tier::Native,
    );
    assert!(event.raise(&mut (1,)).is_err());
    assert_eq!(
        faults.lock().unwrap().as_slice(),
        &[(runaway.id().0, FaultKind::BudgetExhausted.code())]
    );
}

/// `faulty`'s modes trap in generated code (unreachable, out-of-bounds
/// store) and in a kernel procedure (bad handle): each is contained with
/// the interpreter's fault kind, and another extension's handler still
/// runs.
#[test]
fn faulty_handlers_are_contained_natively() {
    let _code_memory = CODE_MEMORY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let (runtime, _) = runtime(Tier::Native);
    let faults = fault_log(&runtime);
    let (event, port) = tick();
    let bytes = extension("faulty");
    let faulty = load(
        &runtime,
        LoadRequest::new("faulty", &bytes).grant_event(port.clone()),
        Tier::Native,
    );
    let counter_bytes = extension("tick-counter");
    let counter = load(
        &runtime,
        LoadRequest::new("tick-counter", &counter_bytes).grant_event(port),
        Tier::Native,
    );
    for (mode, kind) in [
        (0, FaultKind::Unreachable),
        (1, FaultKind::Unreachable),
        (2, FaultKind::OutOfBounds),
        (3, FaultKind::BadHandle),
    ] {
        faulty.call("set_mode", &[Value::I32(mode)]).unwrap();
        let _ = event.raise(&mut (7,));
        assert_eq!(
            faults.lock().unwrap().last(),
            Some(&(faulty.id().0, kind.code())),
            "mode {mode}"
        );
    }
    assert_eq!(
        counter.call_typed("count", &[], ValueType::U64).unwrap(),
        Value::U64(4)
    );
}

/// Two native handlers on one event (a list of several typed entries,
/// raised through a raise cache as the kernel's hot paths do): the
/// faulty one's traps are contained, counted by the dispatcher and
/// reported, the counter still runs; after the counter is unloaded and
/// the faulty extension's last handle dropped, the cached raise finds
/// neither, and runs none of their code.
#[test]
fn cached_raises_into_several_native_handlers_contain_faults_and_follow_unload() {
    let _code_memory = CODE_MEMORY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let (runtime, _) = runtime(Tier::Native);
    let faults = fault_log(&runtime);
    let (event, port) = tick();
    let bytes = extension("faulty");
    let faulty = load(
        &runtime,
        LoadRequest::new("faulty", &bytes).grant_event(port.clone()),
        Tier::Native,
    );
    let counter_bytes = extension("tick-counter");
    let counter = load(
        &runtime,
        LoadRequest::new("tick-counter", &counter_bytes).grant_event(port),
        Tier::Native,
    );
    assert_eq!(event.bindings().len(), 2);
    faulty.call("set_mode", &[Value::I32(0)]).unwrap();
    let mut cache = dispatch::RaiseCache::new();
    for ticks in 0..3 {
        // The faulty handler traps; the counter, after it, answers.
        assert_eq!(event.raise_cached(&mut cache, &mut (ticks,)), Ok(()));
    }
    assert_eq!(event.stats().faults, 3, "each trap counted");
    assert_eq!(
        faults.lock().unwrap().as_slice(),
        &[(faulty.id().0, FaultKind::Unreachable.code()); 3]
    );
    assert_eq!(
        counter.call_typed("count", &[], ValueType::U64).unwrap(),
        Value::U64(3)
    );
    counter.unload().unwrap();
    assert!(
        event.raise_cached(&mut cache, &mut (3,)).is_err(),
        "the faulty handler alone: its fault is the raise's"
    );
    assert_eq!(event.stats().faults, 4);
    // The last handle: its instance ends and its handler leaves the event,
    // though typed handlers hold the extension strongly.
    drop(faulty);
    assert!(event.bindings().is_empty());
    assert!(event.raise_cached(&mut cache, &mut (4,)).is_err());
    assert_eq!(event.stats().faults, 4, "no handler ran");
    assert_eq!(faults.lock().unwrap().len(), 4);
}

/// The 62 KB `big` module compiles and gives the interpreter's results.
#[test]
fn big_gives_the_interpreters_results() {
    let _code_memory = CODE_MEMORY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let bytes = extension("big");
    let mut results = Vec::new();
    for tier in [Tier::Interpreter, Tier::Native] {
        let (runtime, _) = runtime(tier);
        let big = load(&runtime, LoadRequest::new("big", &bytes), tier);
        let outcomes: Vec<_> = (0..8)
            .map(|stage| big.call("run", &[Value::I32(stage), Value::I64(1)]))
            .collect();
        results.push(outcomes);
    }
    assert_eq!(results[0], results[1]);
}

/// Load/unload cycles under the native tier give code memory back.
#[test]
fn load_unload_cycles_return_code_memory() {
    let _code_memory = CODE_MEMORY
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let (runtime, _) = runtime(Tier::Native);
    let (_event, port) = tick();
    let bytes = extension("tick-counter");
    let cycle = || {
        let counter = load(
            &runtime,
            LoadRequest::new("tick-counter", &bytes).grant_event(port.clone()),
            Tier::Native,
        );
        assert!(hal::native_code::mapped_bytes() > 0);
        counter.unload().unwrap();
    };
    cycle();
    let baseline = hal::native_code::mapped_bytes();
    for _ in 0..100 {
        cycle();
    }
    assert_eq!(hal::native_code::mapped_bytes(), baseline);
}

/// A module the native tier does not compile yet (a `table.get`) runs on
/// the interpreter even when pinned to native.
#[test]
fn unsupported_modules_stay_on_the_interpreter() {
    let _code_memory = CODE_MEMORY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let (runtime, _) = runtime(Tier::Native);
    let wat = r#"(module
        (table 1 funcref)
        (func (export "f") (result i32)
          (ref.is_null (table.get (i32.const 0)))))"#;
    let bytes = wat::parse_str(wat).unwrap();
    let module = load(
        &runtime,
        LoadRequest::new("tables", &bytes),
        Tier::Interpreter,
    );
    assert_eq!(module.call("f", &[]).unwrap(), Some(WasmValue::I32(1)));
}

/// Exports that take and return floats run as native code (through
/// their integer entries) and answer as the interpreter does; a call
/// with a value of the wrong type is refused on both tiers.
#[test]
fn exports_with_floats_run_natively_with_the_interpreters_results() {
    let _code_memory = CODE_MEMORY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let wat = r#"(module
        (func (export "scale") (param f64 f32 i32) (result f64)
          (f64.add
            (f64.mul (local.get 0) (f64.promote_f32 (local.get 1)))
            (f64.convert_i32_s (local.get 2))))
        (func (export "halve") (param f32) (result f32) (f32.div (local.get 0) (f32.const 2)))
        (func (export "bits") (param f64) (result i64) (i64.reinterpret_f64 (local.get 0)))
        (func (export "quiet") (param f32) (result i32)
          (i32.reinterpret_f32 (f32.floor (local.get 0)))))"#;
    let bytes = wat::parse_str(wat).unwrap();
    for tier in [Tier::Interpreter, Tier::Native] {
        let (runtime, _) = runtime(tier);
        let module = load(&runtime, LoadRequest::new("floats", &bytes), tier);
        let call = |name: &str, args: &[Value]| {
            module
                .call(name, args)
                .unwrap_or_else(|error| panic!("{tier}: {name}: {error}"))
        };
        assert_eq!(
            call(
                "scale",
                &[Value::F64(1.5), Value::F32(2.25), Value::I32(-3)]
            ),
            Some(WasmValue::F64((1.5f64 * 2.25 - 3.0).to_bits())),
            "{tier}"
        );
        assert_eq!(
            call("halve", &[Value::F32(-7.0)]),
            Some(WasmValue::F32((-3.5f32).to_bits())),
            "{tier}"
        );
        assert_eq!(
            call("bits", &[Value::F64(-0.0)]),
            Some(WasmValue::I64((-0.0f64).to_bits() as i64)),
            "{tier}"
        );
        assert_eq!(
            call("quiet", &[Value::F32(2.75)]),
            Some(WasmValue::I32(2.0f32.to_bits() as i32)),
            "{tier}"
        );
        assert!(
            module.call("halve", &[Value::I32(1)]).is_err(),
            "{tier}: an i32 where an f32 goes"
        );
    }
}

/// Guards on both tiers: a self-contained one (which native code runs
/// without the instance lock, on a context of its own), one that traps
/// (false, reported as the interpreter reports it) and one that reads
/// memory (through the instance, as a handler) select the same ticks.
#[test]
fn guards_select_the_same_ticks_on_both_tiers() {
    let _code_memory = CODE_MEMORY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let wat = r#"(module
        (memory (export "memory") 1)
        (data (i32.const 0) "\01")
        (global $count (mut i64) (i64.const 0))
        (func (export "on_tick") (param i64)
          (global.set $count (i64.add (global.get $count) (i64.const 1))))
        (func (export "count") (result i64) (global.get $count))
        (func (export "even") (param i64) (result i32)
          (i64.eqz (i64.rem_u (local.get 0) (i64.const 2))))
        (func (export "trap") (param i64) (result i32) unreachable)
        (func (export "reads_memory") (param i64) (result i32)
          (i32.and
            (i32.load8_u (i32.const 0))
            (i64.eqz (i64.rem_u (local.get 0) (i64.const 3))))))"#;
    let bytes = wat::parse_str(wat).unwrap();
    for tier in [Tier::Interpreter, Tier::Native] {
        let (runtime, _) = runtime(tier);
        let faults = fault_log(&runtime);
        let (event, port) = tick();
        let guards = load(&runtime, LoadRequest::new("guards", &bytes), tier);
        let count = || guards.call_typed("count", &[], ValueType::I64).unwrap();
        let even = guards
            .bind(&port, &Bind::handler("on_tick").guard("even"))
            .unwrap();
        for ticks in 0..10 {
            // An odd tick has no handler: the raise's error is expected.
            let ran = event.raise(&mut (ticks,)).is_ok();
            assert_eq!(ran, ticks % 2 == 0, "{tier}: tick {ticks}");
        }
        assert_eq!(count(), Value::I64(5), "{tier}: even ticks");
        guards.unbind(&port, even).unwrap();
        let trapping = guards
            .bind(&port, &Bind::handler("on_tick").guard("trap"))
            .unwrap();
        for ticks in 0..3 {
            assert!(event.raise(&mut (ticks,)).is_err(), "{tier}: nothing ran");
        }
        assert_eq!(count(), Value::I64(5), "{tier}: a trapping guard is false");
        let unreachable = FaultKind::Unreachable.code();
        assert_eq!(
            faults.lock().unwrap().as_slice(),
            &[(guards.id().0, unreachable); 3],
            "{tier}: each trap reported"
        );
        guards.unbind(&port, trapping).unwrap();
        guards
            .bind(&port, &Bind::handler("on_tick").guard("reads_memory"))
            .unwrap();
        for ticks in 0..9 {
            let ran = event.raise(&mut (ticks,)).is_ok();
            assert_eq!(ran, ticks % 3 == 0, "{tier}: tick {ticks}");
        }
        assert_eq!(count(), Value::I64(8), "{tier}: every third tick");
        guards.unload().unwrap();
        assert!(event.bindings().is_empty());
    }
}

/// A runtime with both tiers and nothing pinned: loads start on wasmi and
/// may tier up.
fn default_runtime() -> Runtime {
    Runtime::new(Services {
        console: Arc::new(Recorder::default()),
        clock: None,
        strands: None,
    })
    .with_native_engine(Box::new(
        NativeEngine::new(&EngineConfig::default()).unwrap(),
    ))
}

/// `tick-counter` starts on wasmi, counts, moves to native code with its
/// memory, handle table and installed handler, and goes on counting from
/// where it was; unloading then removes the handler.
#[test]
fn tier_up_carries_memory_handles_and_handlers_over() {
    let _code_memory = CODE_MEMORY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let runtime = default_runtime();
    let (event, port) = tick();
    let bytes = extension("tick-counter");
    let counter = load(
        &runtime,
        LoadRequest::new("tick-counter", &bytes).grant_event(port),
        Tier::Interpreter,
    );
    for ticks in 0..10 {
        event.raise(&mut (ticks,)).unwrap();
    }
    runtime.tier_up(&counter).unwrap();
    assert_eq!(counter.tier(), Tier::Native);
    for ticks in 10..25 {
        event.raise(&mut (ticks,)).unwrap();
    }
    assert_eq!(
        counter.call_typed("count", &[], ValueType::U64).unwrap(),
        Value::U64(25)
    );
    assert!(runtime.tier_up(&counter).is_err(), "a second tier-up");
    counter.unload().unwrap();
    assert!(event.bindings().is_empty());
}

/// A module whose state is in a mutable global that it does not export
/// (and in memory) keeps both across the tier-up.
#[test]
fn tier_up_carries_unexported_globals_over() {
    let _code_memory = CODE_MEMORY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let runtime = default_runtime();
    let wat = r#"(module
        (memory (export "memory") 1)
        (global $calls (mut i64) (i64.const 0))
        (func (export "bump") (result i64)
          (global.set $calls (i64.add (global.get $calls) (i64.const 1)))
          (i64.store (i32.const 64)
            (i64.add (i64.load (i32.const 64)) (global.get $calls)))
          (i64.load (i32.const 64))))"#;
    let bytes = wat::parse_str(wat).unwrap();
    let module = load(
        &runtime,
        LoadRequest::new("globals", &bytes),
        Tier::Interpreter,
    );
    let bump = || match module.call("bump", &[]).unwrap() {
        Some(WasmValue::I64(value)) => value,
        other => panic!("bump returned {other:?}"),
    };
    // 1, 3, 6: the running sum of the call count.
    assert_eq!([bump(), bump(), bump()], [1, 3, 6]);
    runtime.tier_up(&module).unwrap();
    assert_eq!(module.tier(), Tier::Native);
    assert_eq!([bump(), bump()], [10, 15]);
}

/// `big` gives the same results when it tiers up halfway through as when
/// it stays on wasmi.
#[test]
fn tier_up_halfway_gives_the_interpreters_results() {
    let _code_memory = CODE_MEMORY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let bytes = extension("big");
    let stages = |tier_up_at: Option<i32>| {
        let runtime = default_runtime();
        let big = load(&runtime, LoadRequest::new("big", &bytes), Tier::Interpreter);
        (0..8)
            .map(|stage| {
                if Some(stage) == tier_up_at {
                    runtime.tier_up(&big).unwrap();
                }
                big.call("run", &[Value::I32(stage), Value::I64(1)])
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(stages(None), stages(Some(4)));
}

/// Compile time of `big` under each compiler setting (host, for the
/// design record: `cargo test -p wasm-fuzz --test native_engine
/// compile_settings -- --ignored --nocapture`).
#[test]
#[ignore]
fn compile_settings() {
    let _code_memory = CODE_MEMORY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    use wasm_runtime::{
        engine::native::{CompileLimits, Compiler},
        module::ModuleInfo,
    };
    let bytes = extension("big");
    let info = ModuleInfo::parse(&bytes).unwrap();
    for (name, optimize, single_pass_registers, verify) in [
        ("speed", true, false, true),
        ("speed, no verifier", true, false, false),
        ("none", false, false, true),
        ("none, single-pass registers", false, true, true),
        (
            "none, single-pass registers, no verifier",
            false,
            true,
            false,
        ),
    ] {
        let compiler = Compiler::new(CompileLimits {
            optimize,
            single_pass_registers,
            verify,
            ..CompileLimits::default()
        })
        .unwrap();
        let mut times = Vec::new();
        let mut code = 0;
        for _ in 0..5 {
            let start = std::time::Instant::now();
            code = compiler.compile(&bytes, &info).unwrap().code.len();
            times.push(start.elapsed().as_secs_f64() * 1000.0);
        }
        times.sort_by(f64::total_cmp);
        println!("{name}: median {:.1} ms, {code} bytes of code", times[2]);
    }
}

/// A module exporting a kernel procedure it imports (no code of its own
/// for that export) stays on the interpreter, where calling the export
/// calls the procedure.
#[test]
fn re_exported_kernel_procedures_stay_on_the_interpreter() {
    let _code_memory = CODE_MEMORY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let (runtime, console) = runtime(Tier::Native);
    let wat = r#"(module
        (import "spindle" "log" (func $log (param i32 i32) (result i32)))
        (memory (export "memory") 1)
        (data (i32.const 0) "again")
        (export "log_again" (func $log)))"#;
    let bytes = wat::parse_str(wat).unwrap();
    let module = load(
        &runtime,
        LoadRequest::new("again", &bytes),
        Tier::Interpreter,
    );
    module
        .call("log_again", &[Value::I32(0), Value::I32(5)])
        .unwrap();
    assert_eq!(
        console.lines.lock().unwrap().as_slice(),
        &["again: again".to_string()]
    );
}

/// Self-contained handlers (run without the instance lock on native
/// code) are held to their budget, their traps are counted and reported
/// with the interpreter's kinds, and they answer as on wasmi.
#[test]
fn self_contained_handlers_are_bounded_and_contained_on_both_tiers() {
    let wat = r#"(module
        (func (export "spin") (param i64) (loop $again (br $again)))
        (func (export "trap") (param i64) unreachable)
        (func (export "check") (param i64)
          (if (i64.eq (local.get 0) (i64.const 13)) (then unreachable))))"#;
    let bytes = wat::parse_str(wat).unwrap();
    for tier in [Tier::Interpreter, Tier::Native] {
        let (runtime, _) = runtime(tier);
        let faults = fault_log(&runtime);
        let (event, port) = tick();
        let handlers = load(&runtime, LoadRequest::new("alone", &bytes), tier);
        let check = handlers.bind(&port, &Bind::handler("check")).unwrap();
        assert!(event.raise(&mut (4,)).is_ok(), "{tier}: it answers");
        assert!(
            event.raise(&mut (13,)).is_err(),
            "{tier}: its trap is a fault"
        );
        let unreachable = FaultKind::Unreachable.code();
        assert_eq!(
            faults.lock().unwrap().as_slice(),
            &[(handlers.id().0, unreachable)],
            "{tier}: the trap reported"
        );
        handlers.unbind(&port, check).unwrap();
        let spin = handlers
            .bind(&port, &Bind::handler("spin").ephemeral(1_000))
            .unwrap();
        let terminated = event.stats().terminated;
        assert!(event.raise(&mut (1,)).is_err(), "{tier}: stopped");
        assert_eq!(
            event.stats().terminated,
            terminated + 1,
            "{tier}: by its budget"
        );
        handlers.unbind(&port, spin).unwrap();
        handlers.bind(&port, &Bind::handler("trap")).unwrap();
        assert!(event.raise(&mut (1,)).is_err());
        assert_eq!(handlers.stats().faults, 3, "{tier}: every trap counted");
        handlers.unload().unwrap();
        assert!(event.bindings().is_empty());
    }
}

/// A self-contained guard and handler (native code runs them as one, on
/// one private context): the guard selects, a guard's trap is reported
/// and runs nothing, the handler's trap is the raiser's fault, the
/// guard's fuel is its own (not the handler's budget), invocations are
/// counted as two calls; the same on both tiers.
#[test]
fn self_contained_guards_and_handlers_run_as_one_on_both_tiers() {
    let _code_memory = CODE_MEMORY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let wat = r#"(module
        (func (export "even") (param i64) (result i32)
          (i64.eqz (i64.and (local.get 0) (i64.const 1))))
        (func (export "traps_on_7") (param i64) (result i32)
          (if (i64.eq (local.get 0) (i64.const 7)) (then unreachable))
          (i32.const 1))
        (func (export "slow") (param i64) (result i32) (local i64)
          (loop $again
            (local.set 1 (i64.add (local.get 1) (i64.const 1)))
            (br_if $again (i64.lt_u (local.get 1) (i64.const 5000))))
          (i32.const 1))
        (func (export "check") (param i64)
          (if (i64.eq (local.get 0) (i64.const 4)) (then unreachable)))
        (func (export "spin") (param i64) (loop $again (br $again))))"#;
    let bytes = wat::parse_str(wat).unwrap();
    let unreachable = FaultKind::Unreachable.code();
    for tier in [Tier::Interpreter, Tier::Native] {
        let (runtime, _) = runtime(tier);
        let faults = fault_log(&runtime);
        let (event, port) = tick();
        let pair = load(&runtime, LoadRequest::new("pair", &bytes), tier);
        let even = pair
            .bind(&port, &Bind::handler("check").guard("even"))
            .unwrap();
        let invocations = pair.stats().invocations;
        for ticks in 0..10 {
            let ran = event.raise(&mut (ticks,)).is_ok();
            assert_eq!(ran, ticks % 2 == 0 && ticks != 4, "{tier}: tick {ticks}");
        }
        assert_eq!(
            pair.stats().invocations,
            invocations + 15,
            "{tier}: ten guard calls, five handler calls"
        );
        assert_eq!(
            faults.lock().unwrap().as_slice(),
            &[(pair.id().0, unreachable)],
            "{tier}: the handler's trap on tick 4 reported"
        );
        pair.unbind(&port, even).unwrap();
        let trapping = pair
            .bind(&port, &Bind::handler("check").guard("traps_on_7"))
            .unwrap();
        assert!(event.raise(&mut (7,)).is_err(), "{tier}: nothing ran");
        assert!(
            event.raise(&mut (4,)).is_err(),
            "{tier}: the handler trapped"
        );
        assert!(event.raise(&mut (5,)).is_ok(), "{tier}: the handler ran");
        assert_eq!(
            faults.lock().unwrap().as_slice(),
            &[(pair.id().0, unreachable); 3],
            "{tier}: the guard's trap and the handler's reported"
        );
        pair.unbind(&port, trapping).unwrap();
        // The guard needs more fuel than the handler's budget: it runs on
        // its own, and the handler is then stopped by the budget.
        let spin = pair
            .bind(&port, &Bind::handler("spin").guard("slow").ephemeral(1_000))
            .unwrap();
        let terminated = event.stats().terminated;
        assert!(event.raise(&mut (1,)).is_err(), "{tier}: stopped");
        assert_eq!(
            event.stats().terminated,
            terminated + 1,
            "{tier}: the handler by its budget, after its guard held"
        );
        assert_eq!(
            faults.lock().unwrap().len(),
            4,
            "{tier}: the budget's stop reported, not the guard"
        );
        pair.unbind(&port, spin).unwrap();
        assert_eq!(pair.stats().faults, 4, "{tier}: every trap counted");
        pair.unload().unwrap();
        assert!(event.bindings().is_empty());
    }
}
