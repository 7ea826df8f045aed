//! Guards verified pure, budgets, and fault containment.

mod common;

use common::{compute_event, fixture, tick_event};
use dispatch::{RaiseFailure, Value, ValueType};
use spindle_abi::FaultKind;
use wasm_runtime::{Bind, BindError, CallError};

/// Loads a module with one guard `g` (body `$body`, parameter i64, result
/// i32) and helper functions, then tries to install it on Timer.Tick.
fn install_guard(prelude: &str, body: &str) -> Result<(), BindError> {
    let fixture = fixture();
    let (_event, _authority, tick) = tick_event();
    let wat = format!(
        r#"(module
          (import "spindle" "log" (func $log (param i32 i32) (result i32)))
          (import "spindle" "handle_find" (func $find (param i32 i32) (result i32)))
          (memory 1)
          (table 1 funcref)
          (global $g (mut i32) (i32.const 0))
          (type $t (func (result i32)))
          {prelude}
          (func (export "h") (param i64))
          (func (export "g") (param i64) (result i32) {body}))"#
    );
    let extension = fixture.load("guarded", &wat);
    extension
        .bind(&tick, &Bind::handler("h").guard("g"))
        .map(drop)
}

fn refused_for(prelude: &str, body: &str) -> wasm_runtime::purity::Impurity {
    match install_guard(prelude, body) {
        Err(BindError::NotPure { export, impurity }) => {
            assert_eq!(export, "g");
            impurity
        }
        other => panic!("expected NotPure, got {other:?}"),
    }
}

#[test]
fn pure_guards_are_accepted() {
    install_guard("", "(i32.wrap_i64 (local.get 0))").unwrap();
    // Loads, locals, global reads, pure imports, pure helpers.
    install_guard(
        r#"(func $helper (param i32) (result i32) (local i32) (local.set 1 (i32.load (local.get 0))) (local.get 1))"#,
        "(i32.add (call $helper (i32.const 0)) (i32.add (global.get $g) (call $find (i32.const 0) (i32.const 0))))",
    )
    .unwrap();
    // Recursion is not a side effect.
    install_guard(
        r#"(func $r (param i32) (result i32) (if (result i32) (local.get 0) (then (call $r (i32.sub (local.get 0) (i32.const 1)))) (else (i32.const 1))))"#,
        "(call $r (i32.const 3))",
    )
    .unwrap();
}

#[test]
fn guards_with_side_effects_are_refused_with_the_reason() {
    for (body, instruction) in [
        (
            "(i32.store (i32.const 0) (i32.const 1)) (i32.const 1)",
            "i32.store",
        ),
        (
            "(i64.store8 (i32.const 0) (i64.const 1)) (i32.const 1)",
            "i64.store8",
        ),
        ("(global.set $g (i32.const 1)) (i32.const 1)", "global.set"),
        (
            "(drop (memory.grow (i32.const 1))) (i32.const 1)",
            "memory.grow",
        ),
        (
            "(memory.fill (i32.const 0) (i32.const 0) (i32.const 1)) (i32.const 1)",
            "memory.fill",
        ),
        (
            "(memory.copy (i32.const 0) (i32.const 1) (i32.const 1)) (i32.const 1)",
            "memory.copy",
        ),
        (
            "(table.set (i32.const 0) (ref.null func)) (i32.const 1)",
            "table.set",
        ),
        (
            "(drop (table.grow (ref.null func) (i32.const 1))) (i32.const 1)",
            "table.grow",
        ),
        ("(call_indirect (type $t) (i32.const 0))", "call_indirect"),
    ] {
        let impurity = refused_for("", body);
        assert_eq!(impurity.instruction, instruction, "{body}");
        assert_eq!(
            impurity.function, 3,
            "the guard is function 3 (after 2 imports and h)"
        );
        assert!(impurity.offset > 0);
        let message = format!("{impurity}");
        assert!(
            message.contains(instruction) && message.contains("offset"),
            "{message}"
        );
    }
}

#[test]
fn impure_imports_and_impure_callees_are_refused() {
    let impurity = refused_for("", "(call $log (i32.const 0) (i32.const 0))");
    assert!(
        impurity.instruction.contains("spindle.log"),
        "{}",
        impurity.instruction
    );
    // Reached through two helpers: the chain is reported.
    let impurity = refused_for(
        r#"(func $inner (global.set $g (i32.const 2)))
           (func $outer (call $inner))"#,
        "(call $outer) (i32.const 1)",
    );
    assert_eq!(impurity.instruction, "global.set");
    assert_eq!(impurity.function, 2, "$inner is function 2");
    assert_eq!(impurity.via, vec![5, 3, 2], "guard -> $outer -> $inner");
}

const FAULTY: &str = r#"
(module
  (memory 1)
  (func $recurse (param i32) (result i32) (i32.add (call $recurse (local.get 0)) (i32.const 1)))
  (func (export "unreachable") (param i32) (result i32) unreachable)
  (func (export "out_of_bounds") (param i32) (result i32) (i32.load (i32.const 70000)))
  (func (export "divide") (param i32) (result i32) (i32.div_u (i32.const 1) (i32.sub (local.get 0) (local.get 0))))
  (func (export "recurse") (param i32) (result i32) (call $recurse (local.get 0)))
  (func (export "spin") (param i32) (result i32) (loop $l (br $l)) (i32.const 0))
  (func (export "double") (param i32) (result i32) (i32.mul (local.get 0) (i32.const 2))))
"#;

#[test]
fn traps_abort_the_invocation_raise_faulted_and_leave_others_running() {
    let fixture = fixture();
    let faults = fixture.fault_log();
    let (event, authority, compute) = compute_event();
    let culprit = fixture.load("faulty", FAULTY);
    let bystander = fixture.load("bystander", FAULTY);
    for (export, kind) in [
        ("unreachable", FaultKind::Unreachable),
        ("out_of_bounds", FaultKind::OutOfBounds),
        ("divide", FaultKind::DivisionByZero),
        ("recurse", FaultKind::StackOverflow),
    ] {
        let binding = culprit.bind(&compute, &Bind::handler(export)).unwrap();
        let error = event.raise(&mut (5,)).unwrap_err();
        match error.failure() {
            RaiseFailure::Faulted { .. } => {}
            other => panic!("{export}: {other:?}"),
        }
        assert_eq!(
            faults.lock().unwrap().last(),
            Some(&(culprit.id().0, kind.code())),
            "{export}"
        );
        // The bystander's handler still runs, and the culprit's other
        // exports still work: only that invocation was aborted.
        let other = bystander.bind(&compute, &Bind::handler("double")).unwrap();
        assert_eq!(event.raise(&mut (5,)).unwrap(), 10, "{export}");
        assert_eq!(
            culprit
                .call_typed("double", &[Value::I32(4)], ValueType::I32)
                .unwrap(),
            Value::I32(8)
        );
        bystander.unbind(&compute, other).unwrap();
        culprit.unbind(&compute, binding).unwrap();
    }
    // Two faults per kind: the culprit stays bound while the bystander runs.
    assert_eq!(culprit.stats().faults, 8);
    assert_eq!(bystander.stats().faults, 0);
    // With a default handler the raiser gets the default instead.
    event
        .set_default(&authority, Some(dispatch::Handler::new(|_: &(u32,)| 7)))
        .unwrap();
    culprit
        .bind(&compute, &Bind::handler("unreachable"))
        .unwrap();
    assert_eq!(event.raise(&mut (5,)).unwrap(), 7);
}

#[test]
fn a_fault_policy_can_unload_the_culprit() {
    let fixture = fixture();
    let (event, authority, compute) = compute_event();
    event
        .set_default(&authority, Some(dispatch::Handler::new(|_: &(u32,)| 0)))
        .unwrap();
    let culprit = fixture.load("faulty", FAULTY);
    culprit.bind(&compute, &Bind::handler("divide")).unwrap();
    let target = culprit.clone();
    fixture
        .runtime
        .faulted()
        .install(
            dispatch::Principal::KERNEL,
            dispatch::Install::new(dispatch::Handler::new(move |args: &(u64, u32)| {
                if args.0 == target.id().0 {
                    target.unload().unwrap();
                }
            })),
        )
        .unwrap();
    assert_eq!(event.raise(&mut (1,)).unwrap(), 0);
    assert!(culprit.is_unloaded());
    assert_eq!(event.bindings(), vec![], "the policy removed the handler");
}

#[test]
fn runaway_ephemeral_handler_is_stopped_by_its_budget() {
    let fixture = fixture();
    let faults = fixture.fault_log();
    let (event, authority, compute) = compute_event();
    let runaway = fixture.load("runaway", FAULTY);
    runaway
        .bind(&compute, &Bind::handler("spin").ephemeral(50_000))
        .unwrap();
    let error = event.raise(&mut (1,)).unwrap_err();
    assert!(
        matches!(
            error.failure(),
            RaiseFailure::Faulted {
                fault: dispatch::Fault::BudgetExhausted,
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(
        faults.lock().unwrap().as_slice(),
        &[(runaway.id().0, FaultKind::BudgetExhausted.code())]
    );
    assert_eq!(event.stats().terminated, 1);
    // The raiser gets the event's default once there is one.
    event
        .set_default(
            &authority,
            Some(dispatch::Handler::new(|args: &(u32,)| args.0 + 100)),
        )
        .unwrap();
    assert_eq!(event.raise(&mut (1,)).unwrap(), 101);
    // The same extension keeps working.
    assert_eq!(
        runaway
            .call_typed("double", &[Value::I32(21)], ValueType::I32)
            .unwrap(),
        Value::I32(42)
    );
}

#[test]
fn synchronous_handlers_are_bounded_by_the_extension_fuel_limit() {
    let fixture = fixture();
    let limits = wasm_runtime::Limits {
        fuel_per_invocation: 100_000,
        ..Default::default()
    };
    let bytes = wat::parse_str(FAULTY).unwrap();
    let extension = fixture
        .try_load(wasm_runtime::LoadRequest::new("spinner", &bytes).limits(limits))
        .unwrap();
    match extension.call("spin", &[Value::I32(0)]) {
        Err(CallError::Trap(trap)) => assert_eq!(trap.kind, FaultKind::BudgetExhausted),
        other => panic!("{other:?}"),
    }
}

#[test]
fn deep_recursion_traps_before_a_64_kib_kernel_stack_overflows() {
    // Kernel threads have 64 KiB stacks: run the invocation on such a
    // thread. wasmi keeps Wasm frames on its heap stack, so the recursion
    // ends in a StackOverflow trap, not a native overflow (which would
    // abort this test process).
    let handle = std::thread::Builder::new()
        .stack_size(64 * 1024)
        .spawn(|| {
            let fixture = fixture();
            let extension = fixture.load("deep", FAULTY);
            extension.call("recurse", &[Value::I32(0)])
        })
        .unwrap();
    match handle.join().unwrap() {
        Err(CallError::Trap(trap)) => assert_eq!(trap.kind, FaultKind::StackOverflow, "{trap}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn guard_traps_count_as_false() {
    let fixture = fixture();
    let (event, _authority, tick) = tick_event();
    let extension = fixture.load(
        "guard",
        r#"(module
            (global $n (mut i32) (i32.const 0))
            (func (export "h") (param i64) (global.set $n (i32.add (global.get $n) (i32.const 1))))
            (func (export "g") (param i64) (result i32) (i32.div_u (i32.const 1) (i32.wrap_i64 (local.get 0))))
            (func (export "n") (result i32) (global.get $n)))"#,
    );
    extension
        .bind(&tick, &Bind::handler("h").guard("g"))
        .unwrap();
    assert!(
        event.raise(&mut (0,)).is_err(),
        "guard trapped: no handler ran"
    );
    event.raise(&mut (1,)).unwrap();
    assert_eq!(
        extension.call_typed("n", &[], ValueType::I32).unwrap(),
        Value::I32(1)
    );
    assert_eq!(extension.stats().faults, 1);
}

#[test]
fn reentrant_raise_into_the_same_extension_is_refused_not_deadlocked() {
    let fixture = fixture();
    let (event, _authority, compute) = compute_event();
    let bytes = wat::parse_str(
        r#"(module
          (import "spindle" "raise" (func $raise (param i32 i32 i32 i32) (result i32)))
          (memory (export "memory") 1)
          (func (export "handler") (param i32) (result i32) (i32.const 5))
          (func (export "raise_self") (result i32)
            (call $raise (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8))))"#,
    )
    .unwrap();
    let extension = fixture
        .try_load(
            wasm_runtime::LoadRequest::new("loop", &bytes).grant_event_to_raise(compute.clone()),
        )
        .unwrap();
    extension.bind(&compute, &Bind::handler("handler")).unwrap();
    assert_eq!(event.raise(&mut (1,)).unwrap(), 5);
    // From inside the extension, its own handler is busy: the raise fails
    // with a status instead of deadlocking.
    assert_eq!(
        extension
            .call_typed("raise_self", &[], ValueType::I32)
            .unwrap(),
        Value::I32(spindle_abi::Status::Faulted.code())
    );
}

/// A grant to install handlers is not a grant to raise: only the event's
/// authority may delegate raising (`grant_event_to_raise`).
#[test]
fn an_extension_cannot_raise_an_event_it_was_granted_only_to_bind() {
    let fixture = fixture();
    let (event, _authority, compute) = compute_event();
    let bytes = wat::parse_str(
        r#"(module
          (import "spindle" "raise" (func $raise (param i32 i32 i32 i32) (result i32)))
          (memory (export "memory") 1)
          (func (export "handler") (param i32) (result i32) (i32.const 5))
          (func (export "raise_it") (result i32)
            (call $raise (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8))))"#,
    )
    .unwrap();
    let extension = fixture
        .try_load(wasm_runtime::LoadRequest::new("binder", &bytes).grant_event(compute.clone()))
        .unwrap();
    extension.bind(&compute, &Bind::handler("handler")).unwrap();
    event.enable_accounting(None);
    assert_eq!(
        extension
            .call_typed("raise_it", &[], ValueType::I32)
            .unwrap(),
        Value::I32(spindle_abi::Status::Denied.code())
    );
    assert_eq!(
        event.stats().raised,
        0,
        "the refused raise reached the event"
    );
    // The kernel still raises it, and the extension's handler runs.
    assert_eq!(event.raise(&mut (1,)).unwrap(), 5);
}
