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
