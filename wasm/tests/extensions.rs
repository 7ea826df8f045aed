//! The shipped extensions (built by `./x build-extensions` into
//! `target/extensions/`) loaded by the runtime, and the SDKs checked
//! against the kernel's import table.
//!
//! `./x test` builds the extensions before the host tests. Under a plain
//! `cargo test` without them these tests fail: build them first with
//! `./x build-extensions`.

mod common;

use common::{fixture, tick_event};
use dispatch::{Value, ValueType};
use spindle_abi::{FaultKind, Status, IMPORTS};
use wasm_runtime::{Bind, LoadRequest};

/// The built extension `name`.
fn extension(name: &str) -> Vec<u8> {
    common::shipped_extension(name)
}

#[test]
fn hello_logs_on_load() {
    let bytes = extension("hello");
    let fixture = fixture();
    fixture
        .runtime
        .load(LoadRequest::new("hello", &bytes))
        .unwrap();
    assert_eq!(
        fixture.logged(),
        vec!["hello: hello from a Wasm extension".to_string()]
    );
}

#[test]
fn tick_counter_counts_ticks() {
    let bytes = extension("tick-counter");
    let fixture = fixture();
    let (event, _authority, tick) = tick_event();
    let counter = fixture
        .runtime
        .load(LoadRequest::new("tick-counter", &bytes).grant_event(tick))
        .unwrap();
    assert_eq!(event.bindings().len(), 1, "installed itself at init");
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

#[test]
fn even_ticks_guard_is_pure_and_a_bad_guard_is_refused() {
    let bytes = extension("even-ticks");
    let fixture = fixture();
    let (event, _authority, tick) = tick_event();
    let even = fixture
        .runtime
        .load(LoadRequest::new("even-ticks", &bytes).grant_event(tick))
        .unwrap();
    for ticks in 0..10 {
        event.raise(&mut (ticks,)).ok();
    }
    assert_eq!(
        even.call_typed("count", &[], ValueType::U64).unwrap(),
        Value::U64(5)
    );
    assert_eq!(
        even.call_typed("try_bad_guard", &[], ValueType::I32)
            .unwrap(),
        Value::I32(Status::NotPure.code())
    );
}

#[test]
fn runaway_handler_is_stopped_and_reported() {
    let bytes = extension("runaway");
    let fixture = fixture();
    let faults = fixture.fault_log();
    let (event, _authority, tick) = tick_event();
    let runaway = fixture
        .runtime
        .load(LoadRequest::new("runaway", &bytes).grant_event(tick))
        .unwrap();
    assert!(event.raise(&mut (1,)).is_err());
    assert_eq!(
        faults.lock().unwrap().as_slice(),
        &[(runaway.id().0, FaultKind::BudgetExhausted.code())]
    );
}

#[test]
fn faulty_handlers_are_contained() {
    let bytes = extension("faulty");
    let fixture = fixture();
    let faults = fixture.fault_log();
    let (event, _authority, tick) = tick_event();
    let faulty = fixture
        .runtime
        .load(LoadRequest::new("faulty", &bytes).grant_event(tick.clone()))
        .unwrap();
    let counter_bytes = extension("tick-counter");
    let counter = fixture
        .runtime
        .load(LoadRequest::new("tick-counter", &counter_bytes).grant_event(tick))
        .unwrap();
    for (mode, kind) in [
        (0, FaultKind::Unreachable),
        (1, FaultKind::Unreachable),
        (2, FaultKind::OutOfBounds),
        (3, FaultKind::BadHandle),
    ] {
        faulty.call("set_mode", &[Value::I32(mode)]).unwrap();
        // The other extension's handler completes, so the raise succeeds.
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

#[test]
fn c_extension_loads_logs_and_counts_guarded_ticks() {
    let bytes = extension("c-hello");
    let fixture = fixture();
    let (event, _authority, tick) = tick_event();
    let c = fixture
        .runtime
        .load(LoadRequest::new("c-hello", &bytes).grant_event(tick))
        .unwrap();
    assert_eq!(fixture.logged(), vec!["c-hello: hello from C".to_string()]);
    for ticks in 0..9 {
        event.raise(&mut (ticks,)).ok();
    }
    assert_eq!(
        c.call_typed("count", &[], ValueType::U64).unwrap(),
        Value::U64(3)
    );
}

#[test]
fn big_module_loads_and_runs() {
    let bytes = extension("big");
    assert!(bytes.len() > 40_000, "big.wasm is {} bytes", bytes.len());
    let fixture = fixture();
    let big = fixture
        .runtime
        .load(LoadRequest::new("big", &bytes))
        .unwrap();
    let first = big.call("run", &[Value::I32(3), Value::I64(1)]).unwrap();
    let second = big.call("run", &[Value::I32(4), Value::I64(1)]).unwrap();
    assert_ne!(first, second, "distinct stages");
}

/// The C header declares exactly the procedures of the import table, with
/// the same parameter counts and types.
#[test]
fn c_header_matches_the_import_table() {
    let header = std::fs::read_to_string(common::repo_root().join("sdk/c/spindle.h")).unwrap();
    let mut declared = Vec::new();
    for declaration in header.split("SPINDLE_IMPORT(\"").skip(1) {
        let name = &declaration[..declaration.find('"').unwrap()];
        if name == "name" || !declaration.contains('(') {
            continue;
        }
        let signature = &declaration[..declaration.find(';').unwrap()];
        let after_name = &signature[signature.find(')').unwrap() + 1..];
        let result = after_name.split_whitespace().next().unwrap();
        let params = &after_name[after_name.find('(').unwrap() + 1..after_name.rfind(')').unwrap()];
        let params: Vec<&str> = params
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty() && *p != "void")
            .collect();
        declared.push((
            name.to_string(),
            result.to_string(),
            params.iter().map(|p| c_type(p)).collect::<Vec<_>>(),
        ));
    }
    let mut names: Vec<&str> = declared.iter().map(|(n, _, _)| n.as_str()).collect();
    names.sort();
    let mut table: Vec<&str> = IMPORTS.iter().map(|s| s.name).collect();
    table.sort();
    assert_eq!(
        names, table,
        "spindle.h and spindle_abi::IMPORTS list different procedures"
    );
    for (name, result, params) in declared {
        let spec = IMPORTS.iter().find(|s| s.name == name).unwrap();
        let expected: Vec<spindle_abi::WasmType> = spec.params.to_vec();
        assert_eq!(params, expected, "{name}: parameters");
        let result = match result.as_str() {
            "void" => None,
            other => Some(c_type(other)),
        };
        assert_eq!(result, spec.result, "{name}: result");
    }
}

/// The Wasm type a C parameter or result lowers to on wasm32.
fn c_type(declaration: &str) -> spindle_abi::WasmType {
    if declaration.contains('*')
        || declaration.starts_with("int32_t")
        || declaration.starts_with("uint32_t")
    {
        spindle_abi::WasmType::I32
    } else if declaration.starts_with("int64_t") || declaration.starts_with("uint64_t") {
        spindle_abi::WasmType::I64
    } else {
        panic!("unexpected C type in {declaration:?}")
    }
}

/// The Rust SDK generates its bindings from the table: its source must not
/// declare kernel procedures by hand.
#[test]
fn rust_sdk_bindings_come_from_the_table() {
    let source = std::fs::read_to_string(common::repo_root().join("sdk/rust/src/lib.rs")).unwrap();
    assert!(source.contains("spindle_abi::for_each_import!(declare)"));
    assert_eq!(
        source.matches("wasm_import_module").count(),
        1,
        "one generated extern block"
    );
    // Every built Rust extension imports only procedures of the table, with
    // the table's types: loading through the type-checking linker proves it.
    for name in ["tick-counter", "even-ticks", "runaway", "faulty"] {
        let bytes = extension(name);
        let info = wasm_runtime::module::ModuleInfo::parse(&bytes).unwrap();
        assert!(!info.imports.is_empty(), "{name} imports kernel procedures");
        for import in &info.imports {
            let spec = spindle_abi::Import::find(&import.module, &import.name)
                .unwrap_or_else(|| panic!("{name} imports {}.{}", import.module, import.name))
                .spec();
            let ty = import.func_type.as_ref().unwrap();
            let params: Vec<wasm_runtime::module::WasmType> =
                spec.params.iter().map(|&t| t.into()).collect();
            assert_eq!(ty.params, params, "{name}: {}", import.name);
        }
    }
}

#[test]
fn bind_by_kernel_works_on_shipped_extensions() {
    let bytes = extension("even-ticks");
    let fixture = fixture();
    let (event, _authority, tick) = tick_event();
    // Not granted Timer.Tick: init installs nothing; the kernel binds.
    let even = fixture
        .runtime
        .load(LoadRequest::new("even-ticks", &bytes))
        .unwrap();
    assert!(event.bindings().is_empty());
    even.bind(&tick, &Bind::handler("on_even_tick").guard("is_even"))
        .unwrap();
    event.raise(&mut (2,)).unwrap();
    assert_eq!(
        even.call_typed("count", &[], ValueType::U64).unwrap(),
        Value::U64(1)
    );
}
