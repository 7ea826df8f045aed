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
use dispatch::Value;
use wasm_runtime::{Bind, LoadRequest, Runtime, Services, Strands, WasmValue};

/// Threads as strands, counting how often one waited.
#[derive(Default)]
struct Threads {
    next: AtomicU64,
    yields: AtomicU64,
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
}

fn runtime(threads: &Arc<Threads>) -> Runtime {
    Runtime::new(Services {
        console: Arc::new(Recorder::default()),
        clock: None,
        strands: Some(threads.clone()),
    })
}

#[test]
fn an_extension_busy_on_another_strand_is_waited_for() {
    let threads = Arc::new(Threads::default());
    let runtime = runtime(&threads);
    let module = wat::parse_str(
        r#"(module
          (func (export "spin") (param i32)
            (loop $again
              (local.set 0 (i32.sub (local.get 0) (i32.const 1)))
              (br_if $again (local.get 0))))
          (func (export "get") (result i32) (i32.const 7)))"#,
    )
    .unwrap();
    let extension = runtime.load(LoadRequest::new("shared", &module)).unwrap();
    thread::scope(|scope| {
        scope.spawn(|| {
            for _ in 0..100 {
                extension.call("spin", &[Value::I32(100_000)]).unwrap();
            }
        });
        scope.spawn(|| {
            for _ in 0..2_000 {
                // Without waiting, a call landing while `spin` runs on the
                // other thread was refused as busy.
                assert_eq!(
                    extension.call("get", &[]).unwrap(),
                    Some(WasmValue::I32(7))
                );
            }
        });
    });
    assert!(
        threads.yields.load(Ordering::Relaxed) > 0,
        "the calls never overlapped, so this test proved nothing"
    );
}

#[test]
fn a_reentrant_invocation_is_refused_without_waiting() {
    let threads = Arc::new(Threads::default());
    let runtime = runtime(&threads);
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
    let extension = runtime
        .load(LoadRequest::new("reentrant", &module).grant_event(port.clone()))
        .unwrap();
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
