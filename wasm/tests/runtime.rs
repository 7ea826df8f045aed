//! Loading, linking, binding, raising, unloading and limits.

mod common;

use std::sync::Arc;

use common::{compute_event, fixture, tick_event};
use dispatch::{BindingId, Principal, Value, ValueType};
use wasm_runtime::{
    Bind, BindError, CallError, Capability, ImportAuthorizer, Importer, KernelInterface,
    LimitExceeded, Limits, LinkError, LoadError, LoadRequest, Runtime, Services,
};

const COUNTER: &str = r#"
(module
  (import "spindle" "log" (func $log (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "hello from wasm")
  (global $count (mut i64) (i64.const 0))
  (global $sum (mut i64) (i64.const 0))
  (func (export "init") (drop (call $log (i32.const 16) (i32.const 15))))
  (func (export "on_tick") (param $ticks i64)
    (global.set $count (i64.add (global.get $count) (i64.const 1)))
    (global.set $sum (i64.add (global.get $sum) (local.get $ticks))))
  (func (export "is_even") (param $ticks i64) (result i32)
    (i64.eqz (i64.and (local.get $ticks) (i64.const 1))))
  (func (export "count") (result i64) (global.get $count))
  (func (export "sum") (result i64) (global.get $sum)))
"#;

fn count(extension: &wasm_runtime::Extension) -> u64 {
    match extension.call_typed("count", &[], ValueType::U64).unwrap() {
        Value::U64(n) => n,
        other => panic!("{other:?}"),
    }
}

#[test]
fn init_runs_at_load_and_logs() {
    let fixture = fixture();
    let extension = fixture.load("hello", COUNTER);
    assert_eq!(fixture.logged(), vec!["hello: hello from wasm".to_string()]);
    assert_eq!(extension.name(), "hello");
    assert_ne!(extension.principal(), Principal::KERNEL);
}

#[test]
fn handler_runs_on_raise_and_guard_filters() {
    let fixture = fixture();
    let (event, _authority, tick) = tick_event();
    let extension = fixture.load("counter", COUNTER);
    let binding = extension
        .bind(&tick, &Bind::handler("on_tick").guard("is_even"))
        .unwrap();
    for ticks in 1..=10u64 {
        event.raise(&mut (ticks,)).ok();
    }
    // Even ticks only: 2 + 4 + 6 + 8 + 10.
    assert_eq!(count(&extension), 5);
    assert_eq!(
        extension.call_typed("sum", &[], ValueType::U64).unwrap(),
        Value::U64(30)
    );
    assert_eq!(extension.stats().handlers, 1);
    extension.unbind(&tick, binding).unwrap();
    event.raise(&mut (12,)).ok();
    assert_eq!(count(&extension), 5);
    assert!(event.bindings().is_empty());
}

#[test]
fn handler_type_is_checked_against_the_event() {
    let fixture = fixture();
    let (_event, _authority, compute) = compute_event();
    let extension = fixture.load("counter", COUNTER);
    // on_tick takes i64 and returns nothing; Test.Compute is (u32) -> u32.
    let error = extension
        .bind(&compute, &Bind::handler("on_tick"))
        .unwrap_err();
    assert!(
        matches!(error, BindError::Type { ref export, .. } if export == "on_tick"),
        "{error}"
    );
    let error = extension
        .bind(&compute, &Bind::handler("missing"))
        .unwrap_err();
    assert_eq!(error, BindError::NoSuchExport("missing".into()));
}

#[test]
fn unload_removes_handlers_revokes_handles_and_frees_memory() {
    let fixture = fixture();
    let (event, _authority, tick) = tick_event();
    let extension = fixture
        .try_load(
            LoadRequest::new("counter", &wat::parse_str(COUNTER).unwrap())
                .grant_event(tick.clone()),
        )
        .unwrap();
    extension.bind(&tick, &Bind::handler("on_tick")).unwrap();
    extension
        .bind(&tick, &Bind::handler("on_tick").guard("is_even"))
        .unwrap();
    assert_eq!(event.bindings().len(), 2);
    let handle = extension.handle("Timer.Tick").expect("granted");
    assert_eq!(handle, 0);
    let report = extension.unload().unwrap();
    assert_eq!(report.handlers_removed, 2);
    assert_eq!(report.handlers_kept, 0);
    assert_eq!(report.handles_revoked, 1);
    assert_eq!(report.memory_freed, 65536);
    assert!(event.bindings().is_empty(), "no handler left on the event");
    assert!(extension.is_unloaded());
    assert_eq!(extension.handle("Timer.Tick"), None);
    assert_eq!(extension.call("count", &[]), Err(CallError::Unloaded));
    assert_eq!(extension.stats().memory_bytes, 0);
    assert_eq!(extension.unload(), Err(wasm_runtime::UnloadError::Unloaded));
    // The event still works without the extension.
    assert!(
        event.raise(&mut (1,)).is_err(),
        "no handler and no intrinsic"
    );
}

#[test]
fn dropping_the_extension_removes_its_handlers() {
    let fixture = fixture();
    let (event, _authority, tick) = tick_event();
    let extension = fixture.load("counter", COUNTER);
    extension.bind(&tick, &Bind::handler("on_tick")).unwrap();
    assert_eq!(event.bindings().len(), 1);
    drop(extension);
    assert!(event.bindings().is_empty());
}

const SELF_INSTALLING: &str = r#"
(module
  (import "spindle" "handle_find" (func $find (param i32 i32) (result i32)))
  (import "spindle" "install" (func $install (param i32 i32 i32 i32 i32 i32 i64) (result i32)))
  (import "spindle" "remove" (func $remove (param i32) (result i32)))
  (import "spindle" "raise" (func $raise (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "Timer.Tick")
  (data (i32.const 16) "on_tick")
  (data (i32.const 32) "Test.Compute")
  (global $count (mut i32) (i32.const 0))
  (global $binding (mut i32) (i32.const -1))
  (func (export "init")
    (global.set $binding
      (call $install (call $find (i32.const 0) (i32.const 10))
                     (i32.const 16) (i32.const 7) (i32.const 0) (i32.const 0) (i32.const 0) (i64.const 0))))
  (func (export "on_tick") (param i64) (global.set $count (i32.add (global.get $count) (i32.const 1))))
  (func (export "binding") (result i32) (global.get $binding))
  (func (export "count") (result i32) (global.get $count))
  (func (export "uninstall") (result i32) (call $remove (global.get $binding)))
  ;; Raises Test.Compute(x) and returns the status; the result lands at 64.
  (func (export "compute") (param $x i32) (result i32)
    (i64.store (i32.const 56) (i64.extend_i32_u (local.get $x)))
    (call $raise (call $find (i32.const 32) (i32.const 12)) (i32.const 56) (i32.const 1) (i32.const 64)))
  (func (export "computed") (result i32) (i32.load (i32.const 64))))
"#;

#[test]
fn extension_installs_removes_and_raises_through_kernel_procedures() {
    let fixture = fixture();
    let (tick_event, _a, tick) = tick_event();
    let (compute_event, compute_authority, compute) = compute_event();
    compute_event
        .set_default(
            &compute_authority,
            Some(dispatch::Handler::new(|args: &(u32,)| args.0 * 3)),
        )
        .unwrap();
    let bytes = wat::parse_str(SELF_INSTALLING).unwrap();
    let extension = fixture
        .try_load(
            LoadRequest::new("self", &bytes)
                .grant_event(tick)
                .grant_event_to_raise(compute),
        )
        .unwrap();
    let binding = extension
        .call_typed("binding", &[], ValueType::I32)
        .unwrap();
    assert!(
        matches!(binding, Value::I32(h) if h >= 0),
        "install returned {binding:?}"
    );
    tick_event.raise(&mut (1,)).unwrap();
    tick_event.raise(&mut (2,)).unwrap();
    assert_eq!(
        extension.call_typed("count", &[], ValueType::I32).unwrap(),
        Value::I32(2)
    );
    assert_eq!(
        extension
            .call_typed("uninstall", &[], ValueType::I32)
            .unwrap(),
        Value::I32(0)
    );
    assert!(tick_event.bindings().is_empty());
    assert_eq!(extension.stats().handlers, 0);
    // Raise from Wasm: the kernel's default handler computes 3x.
    assert_eq!(
        extension
            .call_typed("compute", &[Value::I32(14)], ValueType::I32)
            .unwrap(),
        Value::I32(0)
    );
    assert_eq!(
        extension
            .call_typed("computed", &[], ValueType::I32)
            .unwrap(),
        Value::I32(42)
    );
}

#[test]
fn wasm_handler_result_reaches_the_raiser() {
    let fixture = fixture();
    let (event, _authority, compute) = compute_event();
    let extension = fixture.load(
        "square",
        r#"(module (func (export "square") (param i32) (result i32)
             (i32.mul (local.get 0) (local.get 0))))"#,
    );
    extension.bind(&compute, &Bind::handler("square")).unwrap();
    assert_eq!(event.raise(&mut (12,)).unwrap(), 144);
}

#[test]
fn imports_resolve_only_against_allowed_domains_with_matching_types() {
    let fixture = fixture();
    let load = |wat: &str| {
        fixture
            .try_load(LoadRequest::new("x", &wat::parse_str(wat).unwrap()))
            .unwrap_err()
    };
    assert_eq!(
        load(r#"(module (import "spindle" "reboot" (func)))"#),
        LoadError::Link(LinkError::Unresolved {
            import: "spindle.reboot".into()
        })
    );
    assert_eq!(
        load(r#"(module (import "other" "log" (func (param i32 i32) (result i32))))"#),
        LoadError::Link(LinkError::Unresolved {
            import: "other.log".into()
        })
    );
    assert!(matches!(
        load(r#"(module (import "spindle" "log" (func (param i32))))"#),
        LoadError::Link(LinkError::Type { .. })
    ));
    assert!(matches!(
        load(r#"(module (import "spindle" "memory" (memory 1)))"#),
        LoadError::Link(LinkError::NotAFunction { .. })
    ));

    struct NoLogging;
    impl ImportAuthorizer for NoLogging {
        fn authorize(
            &self,
            importer: &Importer<'_>,
            _module: &str,
            symbol: &str,
        ) -> Result<(), String> {
            if symbol == "log" {
                Err(format!("{} may not log", importer.name))
            } else {
                Ok(())
            }
        }
    }
    let runtime = Runtime::with_parts(
        Box::new(wasm_runtime::engine::wasmi::WasmiEngine::new(
            &Default::default(),
        )),
        Arc::new(KernelInterface::with_authorizer(Arc::new(NoLogging))),
        Services {
            console: fixture.console.clone(),
            clock: None,
            strands: None,
        },
        Limits::default(),
    );
    let bytes =
        wat::parse_str(r#"(module (import "spindle" "log" (func (param i32 i32) (result i32))))"#)
            .unwrap();
    assert_eq!(
        runtime.load(LoadRequest::new("quiet", &bytes)).unwrap_err(),
        LoadError::Link(LinkError::Denied {
            import: "spindle.log".into(),
            reason: "quiet may not log".into()
        })
    );
    let bytes = wat::parse_str(r#"(module (import "spindle" "null_call" (func)))"#).unwrap();
    assert!(runtime.load(LoadRequest::new("quiet", &bytes)).is_ok());
}

#[test]
fn invalid_modules_are_refused_with_an_offset() {
    let fixture = fixture();
    let error = fixture
        .try_load(LoadRequest::new("junk", b"\0asm\x01\0\0\0\x05"))
        .unwrap_err();
    assert!(
        matches!(error, LoadError::Invalid { offset: 8.., .. }),
        "{error}"
    );
    assert!(matches!(
        fixture
            .try_load(LoadRequest::new("empty", b""))
            .unwrap_err(),
        LoadError::Invalid { .. }
    ));
    // A type error inside a function body.
    let bytes = wat::parse_str(r#"(module (func (result i32) (i64.const 1)))"#);
    let error = fixture
        .try_load(LoadRequest::new("bad", &bytes.unwrap()))
        .unwrap_err();
    assert!(matches!(error, LoadError::Invalid { .. }), "{error}");
    // Refused features: SIMD and threads.
    let simd = wat::parse_str(r#"(module (func (drop (v128.const i64x2 0 0))))"#).unwrap();
    assert!(matches!(
        fixture
            .try_load(LoadRequest::new("simd", &simd))
            .unwrap_err(),
        LoadError::Invalid { .. }
    ));
    let shared = wat::parse_str(r#"(module (memory 1 1 shared))"#).unwrap();
    assert!(matches!(
        fixture
            .try_load(LoadRequest::new("threads", &shared))
            .unwrap_err(),
        LoadError::Invalid { .. }
    ));
}

#[test]
fn limits_are_enforced_with_clear_errors() {
    let fixture = fixture();
    let limits = Limits {
        memory_pages: 2,
        handlers: 2,
        ..Limits::default()
    };
    let big = wat::parse_str(r#"(module (memory 3))"#).unwrap();
    assert_eq!(
        fixture
            .try_load(LoadRequest::new("big", &big).limits(limits))
            .unwrap_err(),
        LoadError::Limit(LimitExceeded {
            what: "memory pages",
            limit: 2,
            requested: 3
        })
    );
    let small = Limits {
        module_bytes: 8,
        ..limits
    };
    assert!(matches!(
        fixture
            .try_load(LoadRequest::new("big", &big).limits(small))
            .unwrap_err(),
        LoadError::Limit(LimitExceeded {
            what: "module bytes",
            ..
        })
    ));
    let grower = wat::parse_str(
        r#"(module (memory 1) (func (export "grow") (param i32) (result i32) (memory.grow (local.get 0))))"#,
    )
    .unwrap();
    let extension = fixture
        .try_load(LoadRequest::new("grower", &grower).limits(limits))
        .unwrap();
    assert_eq!(
        extension
            .call_typed("grow", &[Value::I32(1)], ValueType::I32)
            .unwrap(),
        Value::I32(1)
    );
    assert_eq!(
        extension
            .call_typed("grow", &[Value::I32(1)], ValueType::I32)
            .unwrap(),
        Value::I32(-1),
        "growing past the limit fails"
    );

    let (_event, _authority, tick) = tick_event();
    let counter = fixture
        .try_load(LoadRequest::new("counter", &wat::parse_str(COUNTER).unwrap()).limits(limits))
        .unwrap();
    counter.bind(&tick, &Bind::handler("on_tick")).unwrap();
    counter.bind(&tick, &Bind::handler("on_tick")).unwrap();
    assert_eq!(
        counter.bind(&tick, &Bind::handler("on_tick")).unwrap_err(),
        BindError::Limit(LimitExceeded {
            what: "handlers",
            limit: 2,
            requested: 3
        })
    );
    let few_handles = Limits {
        handles: 1,
        ..limits
    };
    let (_compute_event, _a, compute) = compute_event();
    let error = fixture
        .try_load(
            LoadRequest::new("counter", &wat::parse_str(COUNTER).unwrap())
                .grant_event(tick)
                .grant_event(compute)
                .limits(few_handles),
        )
        .unwrap_err();
    assert!(matches!(
        error,
        LoadError::Limit(LimitExceeded {
            what: "handles",
            ..
        })
    ));
}

#[test]
fn revoked_handles_trap() {
    let fixture = fixture();
    let faults = fixture.fault_log();
    let (_event, _authority, tick) = tick_event();
    let bytes = wat::parse_str(
        r#"(module
          (import "spindle" "handle_kind" (func $kind (param i32) (result i32)))
          (func (export "kind") (param i32) (result i32) (call $kind (local.get 0))))"#,
    )
    .unwrap();
    let extension = fixture
        .try_load(LoadRequest::new("holder", &bytes).grant_event(tick))
        .unwrap();
    let handle = extension.handle("Timer.Tick").unwrap();
    assert_eq!(
        extension
            .call_typed("kind", &[Value::I32(handle)], ValueType::I32)
            .unwrap(),
        Value::I32(spindle_abi::HandleKind::Event as i32)
    );
    extension.revoke(handle).unwrap();
    let error = extension.call("kind", &[Value::I32(handle)]).unwrap_err();
    assert!(
        matches!(&error, CallError::Trap(t) if t.kind == spindle_abi::FaultKind::BadHandle),
        "{error}"
    );
    // The console says which handle and why, in words.
    assert_eq!(
        error.to_string(),
        format!("bad or revoked handle: handle {handle:#x}: invalid handle")
    );
    // A handle that was never granted traps the same way.
    assert!(matches!(
        extension.call("kind", &[Value::I32(77)]),
        Err(CallError::Trap(_))
    ));
    let kinds: Vec<u32> = faults.lock().unwrap().iter().map(|f| f.1).collect();
    assert_eq!(kinds, vec![spindle_abi::FaultKind::BadHandle.code(); 2]);
    // Granting again reuses the slot with a new generation: the old handle
    // stays dead.
    let (_e, _a, again) = tick_event();
    let fresh = extension
        .grant(
            "Timer.Tick",
            Capability::Event(again, wasm_runtime::EventRights::BIND),
        )
        .unwrap();
    assert_ne!(fresh, handle);
    assert!(extension.call("kind", &[Value::I32(handle)]).is_err());
    assert!(extension.call("kind", &[Value::I32(fresh)]).is_ok());
}

#[test]
fn grants_beyond_the_handle_limit_are_refused_until_one_is_revoked() {
    let fixture = fixture();
    let (_event, _authority, tick) = tick_event();
    let (_compute_event, _a, compute) = compute_event();
    let one_handle = Limits {
        handles: 1,
        ..fixture.runtime.default_limits()
    };
    let extension = fixture
        .try_load(
            LoadRequest::new("counter", &wat::parse_str(COUNTER).unwrap())
                .grant_event(tick)
                .limits(one_handle),
        )
        .unwrap();
    let grant = || {
        extension.grant(
            "Test.Compute",
            Capability::Event(compute.clone(), wasm_runtime::EventRights::BIND),
        )
    };
    assert_eq!(
        grant().unwrap_err(),
        BindError::Limit(LimitExceeded {
            what: "handles",
            limit: 1,
            requested: 2
        })
    );
    assert_eq!(extension.handle("Test.Compute"), None);
    extension
        .revoke(extension.handle("Timer.Tick").unwrap())
        .unwrap();
    let handle = grant().unwrap();
    assert!(handle >= 0);
    assert_eq!(extension.handle("Test.Compute"), Some(handle));
    assert_eq!(extension.stats().handles, 1);
}

#[test]
fn unknown_binding_removal_is_an_error() {
    let fixture = fixture();
    let (_event, _authority, tick) = tick_event();
    let extension = fixture.load("counter", COUNTER);
    assert!(matches!(
        extension.unbind(&tick, BindingId::INTRINSIC),
        Err(BindError::Dispatch(_))
    ));
}

#[test]
fn imports_resolve_through_the_nameserver_and_its_authorizer() {
    use domain::NameServer;
    use wasm_runtime::domains::{export_kernel_interface, DomainResolver};

    let fixture = fixture();
    let nameserver = Arc::new(NameServer::new());
    let runtime = |nameserver: &Arc<NameServer>| {
        Runtime::with_parts(
            Box::new(wasm_runtime::engine::wasmi::WasmiEngine::new(
                &Default::default(),
            )),
            Arc::new(DomainResolver::new(nameserver.clone())),
            Services {
                console: fixture.console.clone(),
                clock: None,
                strands: None,
            },
            Limits::default(),
        )
    };
    let bytes = wat::parse_str(COUNTER).unwrap();
    // Nothing exported yet: unresolved.
    assert!(matches!(
        runtime(&nameserver)
            .load(LoadRequest::new("counter", &bytes))
            .unwrap_err(),
        LoadError::Link(LinkError::Unresolved { .. })
    ));
    // Exported with an authorizer that admits only the first extension
    // (principal 1) of a runtime.
    let authorizer = |importer: Principal, _name: &str, _version: domain::Version| {
        if importer == Principal(1) {
            Ok(())
        } else {
            Err(dispatch::Denied::new("only principal 1"))
        }
    };
    export_kernel_interface(&nameserver, Some(Arc::new(authorizer))).unwrap();
    let runtime = runtime(&nameserver);
    let first = runtime.load(LoadRequest::new("counter", &bytes)).unwrap();
    assert_eq!(first.principal(), Principal(1));
    assert_eq!(
        runtime
            .load(LoadRequest::new("second", &bytes))
            .unwrap_err(),
        LoadError::Link(LinkError::Denied {
            import: "spindle.log".into(),
            reason: "only principal 1".into()
        })
    );
    // The extension's own domain: its exports and its imports.
    let domain = first.domain().expect("a domain");
    assert_eq!(domain.name(), "counter");
    let exports: Vec<String> = domain.exports().into_iter().map(|(name, _)| name).collect();
    for name in ["init", "on_tick", "is_even", "count", "sum"] {
        assert!(exports.contains(&name.to_string()), "{exports:?}");
    }
    assert_eq!(domain.unresolved(), vec!["spindle.log".to_string()]);
}
