//! The native engine against wasmi on the host: the same module, the same
//! calls, the same results, the same trap kinds and the same memory
//! afterwards. Covers arithmetic at its edges, division traps, control
//! flow, calls and `call_indirect` (good, wrong signature, null, outside
//! the table), memory inside and outside bounds, globals, fuel
//! exhaustion and call depth.

use wasm_runtime::{
    engine::native::{run::NativeModule, vmctx::TrapCode, Backend, CompileLimits, Compiler},
    module::ModuleInfo,
};
use wasmi::{Config, Engine, Linker, Module, Store, Val};

const MODULE: &str = r#"
(module
  (type $binary (func (param i32 i32) (result i32)))
  (type $unary (func (param i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "\01\02\03\04\05\06\07\08")
  (global $counter (mut i64) (i64.const 5))
  (table 4 funcref)
  (elem (i32.const 0) $add $sub $negate)
  (func $add (type $binary) (i32.add (local.get 0) (local.get 1)))
  (func $sub (type $binary) (i32.sub (local.get 0) (local.get 1)))
  (func $negate (type $unary) (i32.sub (i32.const 0) (local.get 0)))
  (func (export "dispatch") (param i32 i32 i32) (result i32)
    (call_indirect (type $binary) (local.get 1) (local.get 2) (local.get 0)))
  (func (export "sum") (param $n i32) (result i64)
    (local $i i32) (local $total i64)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $total (i64.add (local.get $total) (i64.extend_i32_u (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (global.set $counter (i64.add (global.get $counter) (local.get $total)))
    (global.get $counter))
  (func (export "spin") (param i32) (result i32)
    (loop $forever (br $forever))
    (i32.const 0))
  (func $deep (export "deep") (param i32) (result i32)
    (if (result i32) (i32.eqz (local.get 0))
      (then (i32.const 0))
      (else (i32.add (i32.const 1) (call $deep (i32.sub (local.get 0) (i32.const 1)))))))
  (func (export "div_s") (param i32 i32) (result i32) (i32.div_s (local.get 0) (local.get 1)))
  (func (export "div_u") (param i32 i32) (result i32) (i32.div_u (local.get 0) (local.get 1)))
  (func (export "rem_s") (param i32 i32) (result i32) (i32.rem_s (local.get 0) (local.get 1)))
  (func (export "rem_u") (param i32 i32) (result i32) (i32.rem_u (local.get 0) (local.get 1)))
  (func (export "div_s64") (param i64 i64) (result i64) (i64.div_s (local.get 0) (local.get 1)))
  (func (export "rem_s64") (param i64 i64) (result i64) (i64.rem_s (local.get 0) (local.get 1)))
  (func (export "bits") (param i32 i32) (result i32)
    (i32.xor
      (i32.xor (i32.rotl (local.get 0) (local.get 1)) (i32.shr_s (local.get 0) (local.get 1)))
      (i32.add (i32.clz (local.get 0)) (i32.add (i32.ctz (local.get 1)) (i32.popcnt (local.get 0))))))
  (func (export "bits64") (param i64 i64) (result i64)
    (i64.add
      (i64.rotr (local.get 0) (local.get 1))
      (i64.add (i64.extend8_s (local.get 1)) (i64.extend_i32_s (i32.wrap_i64 (local.get 0))))))
  (func (export "compare") (param i32 i32) (result i32)
    (i32.add
      (i32.add (i32.lt_s (local.get 0) (local.get 1)) (i32.shl (i32.lt_u (local.get 0) (local.get 1)) (i32.const 1)))
      (select (i32.const 100) (i32.const 200) (i32.ge_s (local.get 0) (local.get 1)))))
  (func (export "switch") (param i32) (result i32)
    (block $c (block $b (block $a
      (br_table $a $b $c (local.get 0)))
      (return (i32.const 10)))
      (return (i32.const 20)))
    (i32.const 30))
  (func (export "store_load") (param $at i32) (param $value i32) (result i32)
    (i32.store offset=2 (local.get $at) (local.get $value))
    (i64.store8 (i32.const 100) (i64.extend_i32_u (local.get $value)))
    (i32.add (i32.load16_s offset=2 (local.get $at)) (i32.load8_u (i32.const 17))))
  (func (export "load64") (param $at i32) (result i64) (i64.load (local.get $at)))
  (func (export "multi") (param i32) (result i32)
    (local.get 0)
    (if (param i32) (result i32) (i32.gt_u (local.get 0) (i32.const 5))
      (then (i32.const 1) (i32.add))
      (else (i32.const 2) (i32.mul))))
  (func (export "trap") (param i32) (result i32)
    (if (local.get 0) (then (unreachable)))
    (i32.const 7)))
"#;

const EDGES: [i64; 9] = [0, 1, -1, 2, 7, 255, 65535, i32::MIN as i64, i32::MAX as i64];
const EDGES64: [i64; 6] = [0, 1, -1, 63, i64::MIN, i64::MAX];
const FUEL: u64 = 1_000_000;
const DEPTH: u32 = 200;

type Outcome = Result<Option<i64>, TrapCode>;

fn wasmi_trap(error: &wasmi::Error) -> TrapCode {
    use wasmi::TrapCode as W;
    match error.as_trap_code() {
        Some(W::UnreachableCodeReached) => TrapCode::Unreachable,
        Some(W::MemoryOutOfBounds) => TrapCode::MemoryOutOfBounds,
        Some(W::TableOutOfBounds) => TrapCode::TableOutOfBounds,
        Some(W::IntegerDivisionByZero) => TrapCode::DivisionByZero,
        Some(W::IntegerOverflow) => TrapCode::IntegerOverflow,
        Some(W::BadConversionToInteger) => TrapCode::BadConversion,
        Some(W::StackOverflow) => TrapCode::StackOverflow,
        Some(W::IndirectCallToNull) => TrapCode::IndirectCallToNull,
        Some(W::BadSignature) => TrapCode::BadSignature,
        Some(W::OutOfFuel) => TrapCode::OutOfFuel,
        other => panic!("unexpected wasmi error {other:?}: {error}"),
    }
}

/// `wat` compiled natively (the kernel's choice of compiler per function)
/// and instantiated on wasmi (with fuel and the same call depth).
fn on_both_engines(wat: &str) -> (NativeModule, Store<()>, wasmi::Instance) {
    on_both_engines_with(wat, Backend::Mixed)
}

/// [`on_both_engines`], each function compiled by `backend`'s choice.
fn on_both_engines_with(wat: &str, backend: Backend) -> (NativeModule, Store<()>, wasmi::Instance) {
    let bytes = wat::parse_str(wat).unwrap();
    let info = ModuleInfo::parse(&bytes).unwrap();
    let compiler = Compiler::new(CompileLimits {
        backend,
        ..CompileLimits::default()
    })
    .unwrap();
    let native = NativeModule::new(&compiler, &bytes, &info, DEPTH).unwrap();
    let mut config = Config::default();
    config
        .consume_fuel(true)
        .set_max_recursion_depth(DEPTH as usize);
    let engine = Engine::new(&config);
    let module = Module::new(&engine, &bytes).unwrap();
    let mut store = Store::new(&engine, ());
    let instance = Linker::new(&engine)
        .instantiate_and_start(&mut store, &module)
        .unwrap();
    (native, store, instance)
}

#[test]
fn native_code_gives_wasmis_results_traps_and_memory() {
    for backend in [Backend::Mixed, Backend::Cranelift, Backend::SinglePass] {
        same_results_traps_and_memory(backend);
    }
}

fn same_results_traps_and_memory(backend: Backend) {
    let (mut native, mut store, instance) = on_both_engines_with(MODULE, backend);
    // All but `multi` (an `if` with a parameter) are compiled in one pass
    // when the backend allows it; loops only when it is not the kernel's
    // mix.
    let bytes = wat::parse_str(MODULE).unwrap();
    let compiled = Compiler::new(CompileLimits {
        backend,
        ..CompileLimits::default()
    })
    .unwrap()
    .compile(&bytes, &ModuleInfo::parse(&bytes).unwrap())
    .unwrap();
    let expected_single_pass = match backend {
        Backend::Cranelift => 0,
        Backend::Mixed => compiled.functions.len() - 3,
        Backend::SinglePass => compiled.functions.len() - 1,
    };
    assert_eq!(
        compiled.single_pass_functions, expected_single_pass,
        "{backend:?}"
    );

    let mut calls: Vec<(&str, Vec<i64>)> = Vec::new();
    for &a in &EDGES {
        for &b in &EDGES {
            for name in ["div_s", "div_u", "rem_s", "rem_u", "bits", "compare"] {
                calls.push((name, vec![a, b]));
            }
        }
        calls.push(("switch", vec![a]));
        calls.push(("multi", vec![a]));
        calls.push(("trap", vec![a]));
        calls.push(("sum", vec![a & 0xfff]));
        for at in [0, 14, 65530, 65532, 65534, 70000] {
            calls.push(("store_load", vec![at, a]));
        }
        for element in [0, 1, 2, 3, 4, -1] {
            calls.push(("dispatch", vec![element, a, 3]));
        }
    }
    for &a in &EDGES64 {
        for &b in &EDGES64 {
            calls.extend([
                ("div_s64", vec![a, b]),
                ("rem_s64", vec![a, b]),
                ("bits64", vec![a, b]),
            ]);
        }
    }
    for at in [0, 16, 65528, 65529, 65536] {
        calls.push(("load64", vec![at]));
    }
    calls.push(("spin", vec![0]));
    calls.extend([
        ("deep", vec![10]),
        ("deep", vec![150]),
        ("deep", vec![5000]),
    ]);

    let mut traps = 0;
    for (name, args) in &calls {
        let func = instance.get_func(&store, name).unwrap();
        let ty = func.ty(&store);
        let inputs: Vec<Val> = ty
            .params()
            .iter()
            .zip(args)
            .map(|(t, &a)| match t {
                wasmi::ValType::I64 => Val::I64(a),
                _ => Val::I32(a as i32),
            })
            .collect();
        let mut outputs = vec![Val::I32(0); ty.results().len()];
        store.set_fuel(FUEL).unwrap();
        let expected: Outcome = match func.call(&mut store, &inputs, &mut outputs) {
            Ok(()) => Ok(outputs.first().map(|v| match v {
                Val::I32(v) => i64::from(*v),
                Val::I64(v) => *v,
                other => panic!("unexpected result {other:?}"),
            })),
            Err(error) => Err(wasmi_trap(&error)),
        };
        let actual = native.call(name, args, FUEL).unwrap();
        assert_eq!(actual, expected, "{backend:?}: {name}{args:?}");
        traps += usize::from(expected.is_err());
    }
    let memory = instance.get_memory(&store, "memory").unwrap();
    assert!(
        memory.data(&store) == native.memory(),
        "linear memory differs"
    );
    // The calls reach every kind of trap the module can raise.
    assert!(traps > 50, "only {traps} traps");
    let min = i64::from(i32::MIN);
    for (name, args, expected) in [
        ("switch", vec![1], Ok(Some(20))),
        ("switch", vec![9], Ok(Some(30))),
        ("dispatch", vec![1, 10, 3], Ok(Some(7))),
        ("dispatch", vec![2, 10, 3], Err(TrapCode::BadSignature)),
        (
            "dispatch",
            vec![3, 10, 3],
            Err(TrapCode::IndirectCallToNull),
        ),
        ("dispatch", vec![4, 10, 3], Err(TrapCode::TableOutOfBounds)),
        ("div_s", vec![min, -1], Err(TrapCode::IntegerOverflow)),
        ("rem_s", vec![min, -1], Ok(Some(0))),
        ("div_u", vec![1, 0], Err(TrapCode::DivisionByZero)),
        ("load64", vec![65529], Err(TrapCode::MemoryOutOfBounds)),
        ("spin", vec![0], Err(TrapCode::OutOfFuel)),
        ("deep", vec![150], Ok(Some(150))),
        ("deep", vec![5000], Err(TrapCode::StackOverflow)),
        ("trap", vec![1], Err(TrapCode::Unreachable)),
    ] {
        assert_eq!(
            native.call(name, &args, FUEL).unwrap(),
            expected,
            "{name}{args:?}"
        );
    }
}

/// Loops of the counted shape (`engine/native/counted.rs`): their fuel is
/// charged once before the first iteration.
const COUNTED: &str = r#"
(module
  (memory (export "memory") 1)
  (data (i32.const 0) "\01\02\03\04\05\06\07\08\09\0a\0b\0c")
  ;; The checksum's shape: a counter from -count up to zero by 2.
  (func (export "sum_up") (param $at i32) (param $count i32) (result i32)
    (local $c i32) (local $total i32)
    (local.set $c (i32.sub (i32.const 0) (local.get $count)))
    (loop $next
      (local.set $total (i32.add (local.get $total) (i32.load16_u (local.get $at))))
      (local.set $at (i32.add (local.get $at) (i32.const 2)))
      (br_if $next (local.tee $c (i32.add (local.get $c) (i32.const 2)))))
    (local.get $total))
  ;; Down by one, storing as it goes, with an exit path after the back edge.
  (func (export "fill_down") (param $at i32) (param $count i32) (result i32)
    (local $c i32)
    (local.set $c (local.get $count))
    (block $done
      (loop $next
        (i32.store8 (i32.add (local.get $at) (local.get $c)) (local.get $c))
        (br_if $next (local.tee $c (i32.add (local.get $c) (i32.const -1))))
        (br $done)))
    (local.get $c))
  ;; Not counted: the body can leave before the back edge.
  (func (export "find") (param $at i32) (param $count i32) (result i32)
    (local $c i32)
    (local.set $c (i32.sub (i32.const 0) (local.get $count)))
    (block $found
      (loop $next
        (br_if $found (i32.eq (i32.load8_u (local.get $at)) (i32.const 9)))
        (local.set $at (i32.add (local.get $at) (i32.const 1)))
        (br_if $next (local.tee $c (i32.add (local.get $c) (i32.const 1))))))
    (local.get $at)))
"#;

#[test]
fn counted_loops_keep_results_traps_and_memory_and_charge_the_same_fuel() {
    let (mut native, mut store, instance) = on_both_engines(COUNTED);
    // Even counts (the counter reaches zero) inside and across the end of
    // memory, both directions, and a loop that is not counted.
    let mut calls: Vec<(&str, [i64; 2])> = Vec::new();
    for at in [0, 1, 100, 65_000, 65_530, 65_534, 65_535] {
        for count in [2, 4, 10, 1_000, 40_000] {
            calls.push(("sum_up", [at, count]));
            calls.push(("find", [at, count]));
        }
        for count in [1, 2, 7, 600, 70_000] {
            calls.push(("fill_down", [at, count]));
        }
    }
    for (name, args) in &calls {
        let func = instance.get_func(&store, name).unwrap();
        let inputs = [Val::I32(args[0] as i32), Val::I32(args[1] as i32)];
        let mut outputs = [Val::I32(0)];
        store.set_fuel(100 * FUEL).unwrap();
        let expected: Outcome = match func.call(&mut store, &inputs, &mut outputs) {
            Ok(()) => Ok(Some(i64::from(outputs[0].i32().unwrap()))),
            Err(error) => Err(wasmi_trap(&error)),
        };
        assert_eq!(
            native.call(name, args, FUEL).unwrap(),
            expected,
            "{name}{args:?}"
        );
    }
    let memory = instance.get_memory(&store, "memory").unwrap();
    assert!(
        memory.data(&store) == native.memory(),
        "linear memory differs"
    );

    // The charge is exact: one unit on entry and one per iteration, as
    // per-header charges would take.
    let words: i64 = native.memory()[..200]
        .chunks_exact(2)
        .map(|pair| i64::from(u16::from_le_bytes([pair[0], pair[1]])))
        .sum();
    assert_eq!(
        native.call("sum_up", &[0, 200], 101).unwrap(),
        Ok(Some(words))
    );
    assert_eq!(
        native.call("sum_up", &[0, 200], 100).unwrap(),
        Err(TrapCode::OutOfFuel)
    );
    assert_eq!(native.call("fill_down", &[0, 50], 51).unwrap(), Ok(Some(0)));
    assert_eq!(
        native.call("fill_down", &[0, 50], 50).unwrap(),
        Err(TrapCode::OutOfFuel)
    );
    // A counter that never reaches zero (odd, stepped by 2) is a runaway
    // loop: out of fuel before its first iteration, whatever the fuel.
    assert_eq!(
        native.call("sum_up", &[0, 3], u64::MAX).unwrap(),
        Err(TrapCode::OutOfFuel)
    );
    // Zero is a whole turn of the counter, 2^31 iterations: out of fuel.
    assert_eq!(
        native.call("sum_up", &[0, 0], FUEL).unwrap(),
        Err(TrapCode::OutOfFuel)
    );
}

/// Counted loops whose accesses through stepped pointers are checked once
/// before the loop (`engine/native/counted.rs`, `HoistedLoop`), and one
/// whose pointer is written in the body (checked at every access).
const HOISTED: &str = r#"
(module
  (memory (export "memory") 1)
  (data (i32.const 0) "\01\02\03\04\05\06\07\08\09\0a\0b\0c")
  ;; Loads and stores through two pointers, before and after their steps.
  (func (export "copy_sum") (param $src i32) (param $dst i32) (param $count i32) (result i32)
    (local $c i32) (local $t i32) (local $total i32)
    (local.set $c (i32.sub (i32.const 0) (local.get $count)))
    (loop $next
      (local.set $t (i32.load8_u offset=1 (local.get $src)))
      (local.set $src (i32.add (local.get $src) (i32.const 1)))
      (i32.store16 offset=3 (local.get $dst) (local.get $t))
      (local.set $dst (i32.add (local.get $dst) (i32.const 2)))
      (i32.store8 (local.get $dst) (local.get $c))
      (local.set $total (i32.add (local.get $total) (i32.load offset=2 (local.get $src))))
      (br_if $next (local.tee $c (i32.add (local.get $c) (i32.const 1)))))
    (local.get $total))
  ;; The checksum's loop as rustc emits it: big-endian 16-bit words (the
  ;; byte swap translated as a rotate), the pointer hoisted; `$t` holds
  ;; the last word loaded.
  (func (export "be_sum") (param $at i32) (param $count i32) (param i32) (result i32)
    (local $c i32) (local $t i32) (local $total i32)
    (local.set $c (i32.sub (i32.const 0) (local.get $count)))
    (loop $next
      (local.get $total)
      (local.get $at)
      (i32.load16_u)
      (local.tee $t)
      (i32.const 8) (i32.shl) (local.get $t) (i32.const 8) (i32.shr_u) (i32.or)
      (i32.const 65535) (i32.and)
      (i32.add)
      (local.set $total)
      (local.set $at (i32.add (local.get $at) (i32.const 2)))
      (br_if $next (local.tee $c (i32.add (local.get $c) (i32.const 2)))))
    (i32.xor (local.get $total) (i32.shl (local.get $t) (i32.const 20))))
  ;; The pointer is also written in the body: not hoisted.
  (func (export "wrap_around") (param $at i32) (param $limit i32) (param $count i32) (result i32)
    (local $c i32) (local $total i32)
    (local.set $c (local.get $count))
    (loop $next
      (local.set $total (i32.add (local.get $total) (i32.load16_u (local.get $at))))
      (i32.store8 (local.get $at) (local.get $c))
      (local.set $at (i32.add (local.get $at) (i32.const 2)))
      (if (i32.ge_u (local.get $at) (local.get $limit)) (then (local.set $at (i32.const 0))))
      (br_if $next (local.tee $c (i32.add (local.get $c) (i32.const -1)))))
    (local.get $total)))
"#;

/// Hoisted loops give wasmi's results, traps and memory: when the range
/// check fails the checked copy runs and traps at the same access, with
/// the same stores made before it.
#[test]
fn hoisted_loops_fall_back_to_checked_accesses_and_trap_where_wasmi_does() {
    let (mut native, mut store, instance) = on_both_engines(HOISTED);
    let mut calls: Vec<(&str, [i64; 3])> = Vec::new();
    let pointers = [0, 1, 100, 65_000, 65_520, 65_530, 65_535, 65_536, -16, -1];
    for src in pointers {
        for dst in pointers {
            for count in [1, 2, 7, 3_000, 40_000] {
                calls.push(("copy_sum", [src, dst, count]));
            }
        }
        for count in [2, 8, 3_000, 40_000] {
            calls.push(("be_sum", [src, count, 0]));
        }
        for limit in [0, 64, 65_534, 65_536, 70_000] {
            for count in [1, 5, 100, 40_000] {
                calls.push(("wrap_around", [src, limit, count]));
            }
        }
    }
    let memory = instance.get_memory(&store, "memory").unwrap();
    for (name, args) in &calls {
        let func = instance.get_func(&store, name).unwrap();
        let inputs = args.map(|arg| Val::I32(arg as i32));
        let mut outputs = [Val::I32(0)];
        store.set_fuel(100 * FUEL).unwrap();
        let expected: Outcome = match func.call(&mut store, &inputs, &mut outputs) {
            Ok(()) => Ok(Some(i64::from(outputs[0].i32().unwrap()))),
            Err(error) => Err(wasmi_trap(&error)),
        };
        assert_eq!(
            native.call(name, args, FUEL).unwrap(),
            expected,
            "{name}{args:?}"
        );
        assert!(
            memory.data(&store) == native.memory(),
            "linear memory differs after {name}{args:?}"
        );
    }
    // The byte swap: the big-endian words of the data.
    let words: i64 = native.memory()[..12]
        .chunks_exact(2)
        .map(|pair| i64::from(u16::from_be_bytes([pair[0], pair[1]])))
        .sum();
    let last = i64::from(u16::from_le_bytes([
        native.memory()[10],
        native.memory()[11],
    ]));
    assert_eq!(
        native.call("be_sum", &[0, 12, 0], FUEL).unwrap(),
        Ok(Some(i64::from(
            (words as i32) ^ (last as i32).wrapping_shl(20)
        )))
    );
    // Both a completed hoisted loop and one that traps were compared.
    assert!(native
        .call("copy_sum", &[0, 100, 3_000], FUEL)
        .unwrap()
        .is_ok());
    assert_eq!(
        native.call("copy_sum", &[0, 65_520, 3_000], FUEL).unwrap(),
        Err(TrapCode::MemoryOutOfBounds)
    );
}

/// A leaf (`$leaf`: no call of any kind) and a recursion ending in it.
const LEAVES: &str = r#"
(module
  (memory (export "memory") 1)
  (func $leaf (export "leaf") (param i32) (result i32)
    (i32.load (local.get 0)))
  (func $down (export "down") (param i32) (result i32)
    (if (result i32) (i32.eqz (local.get 0))
      (then (call $leaf (i32.const 0)))
      (else (call $down (i32.sub (local.get 0) (i32.const 1)))))))
"#;

/// Leaves have no depth or stack check (they add one frame and call
/// nothing), but are charged their fuel and check their accesses; the
/// recursion above a leaf is still bounded.
#[test]
fn leaves_skip_the_depth_and_stack_checks_but_not_fuel_or_bounds() {
    let (mut native, _, _) = on_both_engines(LEAVES);
    assert_eq!(native.call("leaf", &[0], 1).unwrap(), Ok(Some(0)));
    assert_eq!(
        native.call("leaf", &[0], 0).unwrap(),
        Err(TrapCode::OutOfFuel)
    );
    assert_eq!(
        native.call("leaf", &[65_534], FUEL).unwrap(),
        Err(TrapCode::MemoryOutOfBounds)
    );
    // `down(n)` runs `n + 1` checked frames, the deepest at depth `n`,
    // then the leaf one deeper, unchecked.
    let deepest = i64::from(DEPTH) - 1;
    assert_eq!(native.call("down", &[deepest], FUEL).unwrap(), Ok(Some(0)));
    assert_eq!(
        native.call("down", &[deepest + 1], FUEL).unwrap(),
        Err(TrapCode::StackOverflow)
    );
    assert_eq!(
        native.call("down", &[1_000_000], FUEL).unwrap(),
        Err(TrapCode::StackOverflow)
    );
}
