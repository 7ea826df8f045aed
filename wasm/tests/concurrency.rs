//! One invocation per extension at a time: an invocation that finds its
//! extension running on another strand waits for it; one that re-enters
//! the extension on its own strand is refused at once.

mod common;

use std::{
    cell::Cell,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    thread,
};

use common::{compute_event, Recorder};
use dispatch::Clock;
use wasm_runtime::{Bind, LoadRequest, Runtime, Services, Strands, WasmValue};

/// Threads as strands, counting how often one waited.
#[derive(Default)]
struct Threads {
    next: AtomicU64,
    yields: AtomicU64,
    /// The stack room every strand reports (0: unknown).
    room: AtomicU64,
}

thread_local! {
    static STRAND: Cell<u64> = const { Cell::new(0) };
}

impl Strands for Threads {
    fn current(&self) -> u64 {
        STRAND.with(|strand| {
            if strand.get() == 0 {
                strand.set(self.next.fetch_add(1, Ordering::Relaxed) + 1);
            }
            strand.get()
        })
    }

    fn yield_now(&self) {
        self.yields.fetch_add(1, Ordering::Relaxed);
        thread::yield_now();
    }

    fn stack_room(&self) -> Option<u64> {
        match self.room.load(Ordering::Relaxed) {
            0 => None,
            room => Some(room),
        }
    }
}

/// A clock that reads how often a strand yielded: an extension reading it
/// in a loop waits, deterministically, until another strand has waited
/// for it.
struct YieldClock(Arc<Threads>);

impl Clock for YieldClock {
    fn now_ns(&self) -> u64 {
        self.0.yields.load(Ordering::Relaxed)
    }
}

fn runtime(threads: &Arc<Threads>, console: Arc<Recorder>) -> Runtime {
    Runtime::new(Services {
        console,
        clock: Some(Arc::new(YieldClock(threads.clone()))),
        strands: Some(threads.clone()),
    })
}

#[test]
fn an_extension_busy_on_another_strand_is_waited_for() {
    let threads = Arc::new(Threads::default());
    let console = Arc::new(Recorder::default());
    let runtime = runtime(&threads, console.clone());
    // `hold` says it is inside, then stays inside until some strand has
    // yielded waiting for the extension (the clock counts yields).
    let module = wat::parse_str(
        r#"(module
          (import "spindle" "log" (func $log (param i32 i32) (result i32)))
          (import "spindle" "timer_now_ns" (func $now (result i64)))
          (memory (export "memory") 1)
          (data (i32.const 0) "inside")
          (func (export "hold")
            (drop (call $log (i32.const 0) (i32.const 6)))
            (loop $wait (br_if $wait (i64.eqz (call $now)))))
          (func (export "get") (result i32) (i32.const 7)))"#,
    )
    .unwrap();
    let extension = runtime.load(LoadRequest::new("shared", &module)).unwrap();
    thread::scope(|scope| {
        scope.spawn(|| extension.call("hold", &[]).unwrap());
        while !console
            .lines
            .lock()
            .unwrap()
            .iter()
            .any(|line| line.contains("inside"))
        {
            thread::yield_now();
        }
        // `hold` is running on the other thread and will not return before
        // this call has waited: without waiting, it was refused as busy.
        assert_eq!(extension.call("get", &[]).unwrap(), Some(WasmValue::I32(7)));
    });
    assert!(threads.yields.load(Ordering::Relaxed) > 0);
}

#[test]
fn a_reentrant_invocation_is_refused_without_waiting() {
    let threads = Arc::new(Threads::default());
    let runtime = runtime(&threads, Arc::new(Recorder::default()));
    reentrant_invocation_is_refused_without_waiting(&runtime, &threads, None);
}

/// The same on native code, whose invocations record their strand only
/// when they call a kernel procedure that may raise (`raise` here).
#[cfg(feature = "native")]
#[test]
fn a_reentrant_invocation_of_native_code_is_refused_without_waiting() {
    use wasm_runtime::{engine::native::NativeEngine, EngineConfig};
    let threads = Arc::new(Threads::default());
    let runtime = runtime(&threads, Arc::new(Recorder::default())).with_native_engine(Box::new(
        NativeEngine::new(&EngineConfig::default()).expect("the native engine"),
    ));
    reentrant_invocation_is_refused_without_waiting(
        &runtime,
        &threads,
        Some(wasm_runtime::Tier::Native),
    );
}

fn reentrant_invocation_is_refused_without_waiting(
    runtime: &Runtime,
    threads: &Threads,
    tier: Option<wasm_runtime::Tier>,
) {
    let (event, _authority, port) = compute_event();
    // The handler raises its own event again from inside itself.
    let module = wat::parse_str(
        r#"(module
          (import "spindle" "handle_find" (func $find (param i32 i32) (result i32)))
          (import "spindle" "raise" (func $raise (param i32 i32 i32 i32) (result i32)))
          (memory (export "memory") 1)
          (data (i32.const 0) "Test.Compute")
          (func (export "handler") (param i32) (result i32)
            (i64.store (i32.const 16) (i64.extend_i32_u (local.get 0)))
            (call $raise (call $find (i32.const 0) (i32.const 12))
                         (i32.const 16) (i32.const 1) (i32.const 32))))"#,
    )
    .unwrap();
    let mut request = LoadRequest::new("reentrant", &module).grant_event_to_raise(port.clone());
    if let Some(tier) = tier {
        request = request.tier(tier);
    }
    let extension = runtime.load(request).unwrap();
    if let Some(tier) = tier {
        assert_eq!(extension.tier(), tier);
    }
    extension.bind(&port, &Bind::handler("handler")).unwrap();
    // The inner raise finds the extension busy on this very strand: its
    // handler faults, so the raise reports `Faulted` (-8) to the outer
    // handler, which returns it.
    assert_eq!(event.raise(&mut (5,)).unwrap(), (-8i32) as u32);
    assert_eq!(
        threads.yields.load(Ordering::Relaxed),
        0,
        "a re-entrant invocation waited for itself"
    );
}

/// A self-contained native handler (it reaches no memory, global, table or
/// function) runs without the instance lock: raised again from inside its
/// own extension's other handler, it answers where a locked handler finds
/// the extension busy. On wasmi both are locked, and both fault.
/// A module whose `plus` is self-contained (its argument plus 100) and
/// whose `outer` raises `Test.Compute` again with its argument plus one,
/// returning the raise's status (0: some handler answered; -8: every one
/// faulted).
fn plus_and_outer() -> Vec<u8> {
    wat::parse_str(
        r#"(module
          (import "spindle" "handle_find" (func $find (param i32 i32) (result i32)))
          (import "spindle" "raise" (func $raise (param i32 i32 i32 i32) (result i32)))
          (memory (export "memory") 1)
          (data (i32.const 0) "Test.Compute")
          (func (export "plus") (param i32) (result i32)
            (i32.add (local.get 0) (i32.const 100)))
          (func (export "outer") (param i32) (result i32)
            (i64.store (i32.const 16) (i64.extend_i32_u (i32.add (local.get 0) (i32.const 1))))
            (call $raise (call $find (i32.const 0) (i32.const 12))
                         (i32.const 16) (i32.const 1) (i32.const 32))))"#,
    )
    .unwrap()
}

#[cfg(feature = "native")]
#[test]
fn a_self_contained_native_handler_runs_while_its_extension_is_busy() {
    use wasm_runtime::{engine::native::NativeEngine, EngineConfig, Tier};
    let module = plus_and_outer();
    for tier in [Tier::Interpreter, Tier::Native] {
        let threads = Arc::new(Threads::default());
        let runtime = runtime(&threads, Arc::new(Recorder::default())).with_native_engine(
            Box::new(NativeEngine::new(&EngineConfig::default()).expect("the native engine")),
        );
        let (event, _authority, port) = compute_event();
        let request = LoadRequest::new("busy", &module)
            .grant_event_to_raise(port.clone())
            .tier(tier);
        let extension = runtime.load(request).unwrap();
        assert_eq!(extension.tier(), tier);
        extension.bind(&port, &Bind::handler("plus")).unwrap();
        extension.bind(&port, &Bind::handler("outer")).unwrap();
        // The outer raise: `plus` answers 105, then `outer` (last, so its
        // status is the result) raises 6 from inside the extension.
        let inner_status = event.raise(&mut (5,)).unwrap() as i32;
        match tier {
            // `plus` ran without the lock (106); `outer` found it busy.
            Tier::Native => assert_eq!(inner_status, 0, "native: plus answered the inner raise"),
            _ => assert_eq!(inner_status, -8, "wasmi: both found the extension busy"),
        }
        assert_eq!(
            threads.yields.load(Ordering::Relaxed),
            0,
            "{tier}: nobody waited"
        );
        // Unloaded, nothing of it runs, self-contained or not.
        extension.unload().unwrap();
        assert!(event.raise(&mut (5,)).is_err(), "{tier}: unloaded");
    }
}

/// Handlers bound while the extension ran on wasmi (as `init` binds
/// them) get native code's lockless path when it tiers up: in place, the
/// same installations, so the self-contained one then answers a raise
/// made from inside the busy extension.
#[cfg(feature = "native")]
#[test]
fn handlers_bound_before_a_tier_up_run_without_the_lock_after_it() {
    use wasm_runtime::{engine::native::NativeEngine, EngineConfig, Tier};
    let module = plus_and_outer();
    let threads = Arc::new(Threads::default());
    let runtime = runtime(&threads, Arc::new(Recorder::default())).with_native_engine(Box::new(
        NativeEngine::new(&EngineConfig::default()).expect("the native engine"),
    ));
    let (event, _authority, port) = compute_event();
    let request = LoadRequest::new("busy", &module).grant_event_to_raise(port.clone());
    let extension = runtime.load(request).unwrap();
    assert_eq!(extension.tier(), Tier::Interpreter, "it starts on wasmi");
    extension.bind(&port, &Bind::handler("plus")).unwrap();
    extension.bind(&port, &Bind::handler("outer")).unwrap();
    let bindings = event.bindings();
    assert_eq!(
        event.raise(&mut (5,)).unwrap() as i32,
        -8,
        "on wasmi both handlers found the extension busy"
    );
    runtime.tier_up(&extension).unwrap();
    assert_eq!(extension.tier(), Tier::Native);
    assert_eq!(event.bindings(), bindings, "the same installations");
    assert_eq!(
        event.raise(&mut (5,)).unwrap() as i32,
        0,
        "after the tier-up plus answers the inner raise without the lock"
    );
    assert_eq!(threads.yields.load(Ordering::Relaxed), 0, "nobody waited");
    extension.unload().unwrap();
    assert!(event.raise(&mut (5,)).is_err(), "unloaded");
}

/// A kernel procedure that may run another extension's code is refused
/// (a stack overflow trap, contained as any trap) when the strand's stack
/// has too little room left, on both tiers: extensions raising into each
/// other cannot nest down to the kernel stack's guard page.
#[test]
fn a_raise_from_wasm_is_refused_when_the_stack_is_nearly_full() {
    #[cfg(feature = "native")]
    use wasm_runtime::{engine::native::NativeEngine, EngineConfig};
    use wasm_runtime::{Tier, NESTED_RUN_STACK_BYTES};
    let module = plus_and_outer();
    let mut tiers = vec![Tier::Interpreter];
    if cfg!(feature = "native") {
        tiers.push(Tier::Native);
    }
    for tier in tiers {
        let threads = Arc::new(Threads::default());
        let runtime = runtime(&threads, Arc::new(Recorder::default()));
        #[cfg(feature = "native")]
        let runtime = runtime.with_native_engine(Box::new(
            NativeEngine::new(&EngineConfig::default()).expect("the native engine"),
        ));
        let (event, _authority, port) = compute_event();
        // Two extensions: `outer` in one raises into `plus` in the other.
        let request = LoadRequest::new("outer", &module)
            .grant_event_to_raise(port.clone())
            .tier(tier);
        let outer = runtime.load(request).unwrap();
        let inner = runtime
            .load(LoadRequest::new("inner", &module).tier(tier))
            .unwrap();
        inner.bind(&port, &Bind::handler("plus")).unwrap();
        outer.bind(&port, &Bind::handler("outer")).unwrap();
        // Room enough: `outer`'s raise reaches `plus` (status 0).
        threads
            .room
            .store(NESTED_RUN_STACK_BYTES, Ordering::Relaxed);
        assert_eq!(
            event.raise(&mut (5,)).unwrap(),
            0,
            "{tier}: the inner raise ran"
        );
        assert_eq!(outer.stats().faults, 0);
        // Too little: the raise procedure traps; `outer` faults, and the
        // raise's result is `plus`'s (the last handler that answered).
        threads
            .room
            .store(NESTED_RUN_STACK_BYTES - 1, Ordering::Relaxed);
        assert_eq!(
            event.raise(&mut (5,)).unwrap(),
            105,
            "{tier}: outer faulted, plus answered"
        );
        assert_eq!(outer.stats().faults, 1, "{tier}: the refused raise a fault");
        assert_eq!(inner.stats().faults, 0);
        outer.unload().unwrap();
        inner.unload().unwrap();
    }
}

/// A module whose `consistent` guard (read-only: it reads a global and
/// calls a function that compares two words of memory) holds while the
/// words at 0 and 8 are equal and `enable` ran; `update` (which writes)
/// stores its argument at 0, spins, then stores it at 8; `lookup` and
/// `far` (read-only) add the word at 0 or at 64 KiB (beyond the first
/// page) to their argument; `grow` adds a page and `poke` stores 7 there.
#[cfg(feature = "native")]
fn readers_and_a_writer() -> Vec<u8> {
    wat::parse_str(
        r#"(module
          (memory (export "memory") 1)
          (global $on (mut i32) (i32.const 0))
          (func (export "enable") (global.set $on (i32.const 1)))
          (func $same (result i32) (i64.eq (i64.load (i32.const 0)) (i64.load (i32.const 8))))
          (func (export "consistent") (param i32) (result i32)
            (i32.and (global.get $on) (call $same)))
          (func (export "yes") (param i32) (result i32) (i32.const 1))
          (func (export "update") (param i64)
            (local $n i32)
            (i64.store (i32.const 0) (local.get 0))
            (local.set $n (i32.const 300))
            (loop $spin
              (local.set $n (i32.sub (local.get $n) (i32.const 1)))
              (br_if $spin (local.get $n)))
            (i64.store (i32.const 8) (local.get 0)))
          (func (export "lookup") (param i32) (result i32)
            (i32.add (i32.load (i32.const 0)) (local.get 0)))
          (func (export "far") (param i32) (result i32)
            (i32.add (i32.load (i32.const 65536)) (local.get 0)))
          (func (export "grow") (result i32) (memory.grow (i32.const 1)))
          (func (export "poke") (i32.store (i32.const 65536) (i32.const 7))))"#,
    )
    .unwrap()
}

/// After an extension's handlers were bound: if no tier was pinned
/// (`pinned` is `None`), it is still on wasmi, and is moved to native code
/// (the tier-up refreshes its installations). Its tier now, and a label
/// for messages.
#[cfg(feature = "native")]
fn settle_tier(
    runtime: &Runtime,
    extension: &wasm_runtime::Extension,
    pinned: Option<wasm_runtime::Tier>,
) -> (wasm_runtime::Tier, String) {
    if pinned.is_none() {
        assert_eq!(extension.tier(), wasm_runtime::Tier::Interpreter);
        runtime.tier_up(extension).unwrap();
    }
    let tier = extension.tier();
    let label = match pinned {
        Some(tier) => format!("{tier}"),
        None => format!("{tier} after the tier-up"),
    };
    (tier, label)
}

/// Guards and handlers that only read memory and globals run as native
/// code without the instance lock (the lock's count, `exclusive`, does
/// not move while they answer), with the results the interpreter gives
/// under the lock: the memory's current size (grown by a locked call in
/// between), its bytes and globals as the last invocation left them.
/// Bound on wasmi, they get that path at the tier-up.
#[cfg(feature = "native")]
#[test]
fn read_only_guards_and_handlers_run_without_the_lock_on_native_code() {
    use dispatch::Value;
    use wasm_runtime::{engine::native::NativeEngine, EngineConfig, Extension, Tier};
    let module = readers_and_a_writer();
    let raises = 50;
    // The instance taken for exclusive use by `raises` raises of
    // `raise`, whose results it checks (the first `stats` call's own
    // lock is the one the difference always counts).
    let exclusive_during = |extension: &Extension, raise: &dyn Fn(u32)| {
        let before = extension.stats().exclusive;
        for x in 0..raises {
            raise(x);
        }
        extension.stats().exclusive - before - 1
    };
    for pinned in [Some(Tier::Interpreter), Some(Tier::Native), None] {
        let threads = Arc::new(Threads::default());
        let runtime = runtime(&threads, Arc::new(Recorder::default())).with_native_engine(
            Box::new(NativeEngine::new(&EngineConfig::default()).expect("the native engine")),
        );
        let (guarded, _authority, guarded_port) = compute_event();
        let (looked_up, _authority, lookup_port) = compute_event();
        let (far, _authority, far_port) = compute_event();
        let mut request = LoadRequest::new("readers", &module);
        if let Some(tier) = pinned {
            request = request.tier(tier);
        }
        let extension = runtime.load(request).unwrap();
        let guard = Bind::handler("yes").guard("consistent");
        extension.bind(&guarded_port, &guard).unwrap();
        extension
            .bind(&lookup_port, &Bind::handler("lookup"))
            .unwrap();
        extension.bind(&far_port, &Bind::handler("far")).unwrap();
        let (tier, label) = settle_tier(&runtime, &extension, pinned);
        // The guard reads the global: off until `enable` sets it.
        assert!(guarded.raise(&mut (1,)).is_err(), "{label}: not enabled");
        extension.call("enable", &[]).unwrap();
        extension.call("update", &[Value::I64(40)]).unwrap();
        let locked = exclusive_during(&extension, &|x| {
            assert_eq!(
                guarded.raise(&mut (x,)).unwrap(),
                1,
                "{label}: the guard held"
            );
            assert_eq!(
                looked_up.raise(&mut (x,)).unwrap(),
                40 + x,
                "{label}: lookup"
            );
        });
        // The word at 64 KiB is beyond the memory until it grows.
        assert!(far.raise(&mut (1,)).is_err(), "{label}: out of bounds");
        assert_eq!(
            extension.call("grow", &[]).unwrap(),
            Some(WasmValue::I32(1))
        );
        assert_eq!(far.raise(&mut (1,)).unwrap(), 1, "{label}: grown, zero");
        extension.call("poke", &[]).unwrap();
        let locked_far = exclusive_during(&extension, &|x| {
            assert_eq!(far.raise(&mut (x,)).unwrap(), 7 + x, "{label}: far");
        });
        match tier {
            Tier::Native => {
                assert_eq!(locked, 0, "{label}: no raise took the lock");
                assert_eq!(locked_far, 0, "{label}: nor after the memory grew");
            }
            _ => {
                // Guard, handler and lookup: each an invocation on the lock.
                assert_eq!(locked, 3 * u64::from(raises), "{label}");
                assert_eq!(locked_far, u64::from(raises), "{label}");
            }
        }
        assert_eq!(
            extension.stats().faults,
            1,
            "{label}: the one out-of-bounds read"
        );
        extension.unload().unwrap();
        assert!(looked_up.raise(&mut (1,)).is_err(), "{label}: unloaded");
    }
}

/// A read-only guard runs without the lock, beside the extension's own
/// invocations on another thread, but never decides on a half-done
/// update: an outcome computed while an invocation held the instance
/// (or took it meanwhile) is thrown away and the guard runs again under
/// the lock. `update` keeps its two words unequal for most of its run;
/// the guard that compares them must hold on every raise.
#[cfg(feature = "native")]
#[test]
fn a_read_only_guard_never_decides_on_a_half_done_update() {
    use dispatch::Value;
    use std::sync::atomic::AtomicBool;
    use wasm_runtime::{engine::native::NativeEngine, EngineConfig, Tier};
    let module = readers_and_a_writer();
    let threads = Arc::new(Threads::default());
    let runtime = runtime(&threads, Arc::new(Recorder::default())).with_native_engine(Box::new(
        NativeEngine::new(&EngineConfig::default()).expect("the native engine"),
    ));
    let (guarded, _authority, port) = compute_event();
    let extension = runtime
        .load(LoadRequest::new("readers", &module).tier(Tier::Native))
        .unwrap();
    extension
        .bind(&port, &Bind::handler("yes").guard("consistent"))
        .unwrap();
    extension.call("enable", &[]).unwrap();
    let writing = AtomicBool::new(true);
    let reading = AtomicBool::new(false);
    let updates = 3_000;
    let mut raised = 0u64;
    thread::scope(|scope| {
        scope.spawn(|| {
            // Once the raises have begun, so that the two overlap.
            while !reading.load(Ordering::Acquire) {
                thread::yield_now();
            }
            for value in 1..=updates {
                extension.call("update", &[Value::I64(value)]).unwrap();
            }
            writing.store(false, Ordering::Release);
        });
        while writing.load(Ordering::Acquire) {
            reading.store(true, Ordering::Release);
            assert_eq!(
                guarded.raise(&mut (0,)).unwrap(),
                1,
                "raise {raised}: the guard saw a half-done update"
            );
            raised += 1;
        }
    });
    assert!(raised > 0);
    assert_eq!(extension.stats().faults, 0);
}

/// A load that would compile native code on a stack with less room than
/// the compiler needs (a user thread's kernel stack, in a system call)
/// starts on the interpreter instead, keeping what a tier-up needs; the
/// tier-up, made where there is room, compiles. So does a load that asks
/// to compile later, with the native tier pinned.
#[cfg(feature = "native")]
#[test]
fn a_load_compiles_only_where_the_stack_has_room() {
    use wasm_runtime::{engine::native::NativeEngine, EngineConfig, Tier, COMPILE_STACK_BYTES};
    let module = plus_and_outer();
    let threads = Arc::new(Threads::default());
    let runtime = runtime(&threads, Arc::new(Recorder::default())).with_native_engine(Box::new(
        NativeEngine::new(&EngineConfig::default()).expect("the native engine"),
    ));
    threads
        .room
        .store(COMPILE_STACK_BYTES - 1, Ordering::Relaxed);
    let cramped = runtime
        .load(LoadRequest::new("cramped", &module).tier(Tier::Native))
        .unwrap();
    assert_eq!(
        cramped.tier(),
        Tier::Interpreter,
        "not compiled on a small stack"
    );
    threads.room.store(COMPILE_STACK_BYTES, Ordering::Relaxed);
    let roomy = runtime
        .load(LoadRequest::new("roomy", &module).tier(Tier::Native))
        .unwrap();
    assert_eq!(roomy.tier(), Tier::Native, "compiled with room enough");
    runtime.tier_up(&cramped).unwrap();
    assert_eq!(cramped.tier(), Tier::Native, "compiled by the tier-up");
    runtime.pin_tier(Some(Tier::Native));
    let later = runtime
        .load(LoadRequest::new("later", &module).compile_later())
        .unwrap();
    assert_eq!(later.tier(), Tier::Interpreter, "left for a tier-up");
    runtime.tier_up(&later).unwrap();
    assert_eq!(later.tier(), Tier::Native);
    for extension in [cramped, roomy, later] {
        extension.unload().unwrap();
    }
}

/// Guards and handlers that call kernel procedures which only read
/// (`timer_now_ns`, `null_call`, `handle_find`, `handle_kind`) run as
/// native code without the instance lock too, with the results the
/// interpreter gives under it; a procedure's trap (a bad handle) is
/// reported as the extension's fault, as under the lock.
#[cfg(feature = "native")]
#[test]
fn read_only_code_calls_the_kernel_procedures_that_only_read_without_the_lock() {
    use dispatch::Value;
    use wasm_runtime::{engine::native::NativeEngine, EngineConfig, Tier};
    let module = wat::parse_str(
        r#"(module
          (import "spindle" "timer_now_ns" (func $now (result i64)))
          (import "spindle" "null_call" (func $null))
          (import "spindle" "handle_find" (func $find (param i32 i32) (result i32)))
          (import "spindle" "handle_kind" (func $kind (param i32) (result i32)))
          (memory (export "memory") 1)
          (data (i32.const 16) "Test.Compute")
          (global $until (mut i64) (i64.const 0))
          (func (export "open_until") (param i64) (global.set $until (local.get 0)))
          (func (export "in_time") (param i32) (result i32)
            (call $null)
            (i64.lt_u (call $now) (global.get $until)))
          (func (export "yes") (param i32) (result i32) (i32.const 1))
          (func $found (result i32) (call $find (i32.const 16) (i32.const 12)))
          (func (export "kind_of_found") (param i32) (result i32)
            (i32.add (call $kind (call $found)) (local.get 0)))
          (func (export "kind_of") (param i32) (result i32) (call $kind (local.get 0)))
          (func $half (param i32) (result i32)
            (i32.trunc_f64_s (f64.div (f64.convert_i32_s (local.get 0)) (f64.const 2))))
          (func (export "half") (param i32) (result i32) (call $half (local.get 0))))"#,
    )
    .unwrap();
    let raises = 50u32;
    for pinned in [Some(Tier::Interpreter), Some(Tier::Native), None] {
        let threads = Arc::new(Threads::default());
        let runtime = runtime(&threads, Arc::new(Recorder::default())).with_native_engine(
            Box::new(NativeEngine::new(&EngineConfig::default()).expect("the native engine")),
        );
        let (timed, _authority, timed_port) = compute_event();
        let (found, _authority, found_port) = compute_event();
        let (kinds, _authority, kinds_port) = compute_event();
        let (halves, _authority, halves_port) = compute_event();
        let mut request = LoadRequest::new("readers", &module).grant_event(found_port.clone());
        if let Some(tier) = pinned {
            request = request.tier(tier);
        }
        let extension = runtime.load(request).unwrap();
        extension
            .bind(&timed_port, &Bind::handler("yes").guard("in_time"))
            .unwrap();
        extension
            .bind(&found_port, &Bind::handler("kind_of_found"))
            .unwrap();
        extension
            .bind(&kinds_port, &Bind::handler("kind_of"))
            .unwrap();
        extension
            .bind(&halves_port, &Bind::handler("half"))
            .unwrap();
        let (tier, label) = settle_tier(&runtime, &extension, pinned);
        // The clock (how often a strand yielded) reads 0: the guard holds
        // only once the deadline is after it.
        assert!(timed.raise(&mut (1,)).is_err(), "{label}: no time yet");
        extension
            .call("open_until", &[Value::I64(1_000_000)])
            .unwrap();
        let before = extension.stats().exclusive;
        for x in 0..raises {
            assert_eq!(timed.raise(&mut (x,)).unwrap(), 1, "{label}: in time");
            // The event's own grant, found by its name: an event handle.
            assert_eq!(
                found.raise(&mut (x,)).unwrap(),
                spindle_abi::HandleKind::Event as u32 + x,
                "{label}: the handle found"
            );
        }
        let locked = extension.stats().exclusive - before - 1;
        // A bad handle: the procedure traps, the extension faults.
        let error = kinds.raise(&mut (12345,)).unwrap_err().to_string();
        assert!(
            error.contains("bad or revoked handle: handle 0x3039"),
            "{label}: the procedure's own trap, not {error}"
        );
        assert_eq!(
            extension.stats().faults,
            1,
            "{label}: the bad handle's fault"
        );
        match tier {
            Tier::Native => assert_eq!(locked, 0, "{label}: no raise took the lock"),
            _ => assert_eq!(
                locked,
                3 * u64::from(raises),
                "{label}: guard, handler, lookup"
            ),
        }
        // Read-only too, computing in floating point through a call: run
        // without the lock as well, keeping the thread's float registers.
        let before = extension.stats().exclusive;
        for x in 0..10 {
            assert_eq!(halves.raise(&mut (2 * x + 1,)).unwrap(), x, "{label}: half");
        }
        let locked = extension.stats().exclusive - before - 1;
        match tier {
            Tier::Native => assert_eq!(locked, 0, "{label}: float code without the lock"),
            _ => assert_eq!(locked, 10, "{label}: float code"),
        }
        extension.call("open_until", &[Value::I64(0)]).unwrap();
        assert!(timed.raise(&mut (1,)).is_err(), "{label}: too late");
        extension.unload().unwrap();
    }
}
