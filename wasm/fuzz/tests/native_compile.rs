//! The native engine's compiler (`wasm_runtime::engine::native`) on the
//! host: modules the kernel's validation accepted either compile (with
//! Cranelift's IR verifier on, so an ill-formed translation fails here) or
//! are refused as not translated yet or over a limit, never with an
//! internal error and never with a panic. Covers hand-written modules, the
//! regression modules, adversarial shapes and wasm-smith modules.
//!
//! Running the generated code is `native_differential.rs`'s and
//! `native_engine.rs`'s part (docs/design/0008-native-engine.md, "Tests").

mod common;

use std::{fs, time::Instant};

use common::repo_root;
use wasm_fuzz::generate;
use wasm_runtime::{
    engine::native::{CompileError, CompileLimits, Compiler},
    module::ModuleInfo,
};

fn compile(bytes: &[u8]) -> Result<wasm_runtime::engine::native::CompiledModule, CompileError> {
    let info = ModuleInfo::parse(bytes).expect("the module validates");
    Compiler::new(CompileLimits::default())
        .expect("x86_64 compiler")
        .compile(bytes, &info)
}

/// A module using most MVP operators the native tier translates.
const COVERAGE: &str = r#"
(module
  (type $binary (func (param i32 i32) (result i32)))
  (memory (export "memory") 1 4)
  (global $counter (mut i64) (i64.const 0))
  (global $scale f64 (f64.const 1.5))
  (table 2 funcref)
  (elem (i32.const 0) $add $sub)
  (func $add (type $binary) (i32.add (local.get 0) (local.get 1)))
  (func $sub (type $binary) (i32.sub (local.get 0) (local.get 1)))
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
    (global.set $counter (local.get $total))
    (local.get $total))
  (func (export "memory_ops") (param $at i32) (result i32)
    (i32.store (local.get $at) (i32.const 0x01020304))
    (i64.store offset=8 (local.get $at) (i64.const -1))
    (i32.store8 (local.get $at) (i32.const 0xff))
    (memory.fill (i32.const 64) (i32.const 7) (i32.const 16))
    (memory.copy (i32.const 128) (i32.const 64) (i32.const 16))
    (drop (memory.grow (i32.const 1)))
    (i32.add
      (i32.add (i32.load8_s (local.get $at)) (i32.load16_u offset=2 (local.get $at)))
      (i32.add (i32.wrap_i64 (i64.load32_s offset=8 (local.get $at))) (memory.size))))
  (func (export "switch") (param i32) (result i32)
    (block $c (block $b (block $a
      (br_table $a $b $c (local.get 0)))
      (return (i32.const 10)))
      (return (i32.const 20)))
    (i32.const 30))
  (func (export "arith") (param i64 i64) (result i64)
    (i64.add
      (i64.add (i64.div_s (local.get 0) (local.get 1)) (i64.rem_s (local.get 0) (local.get 1)))
      (i64.add (i64.div_u (local.get 0) (local.get 1)) (i64.rotl (local.get 0) (local.get 1)))))
  (func (export "floats") (param f64) (result i32)
    (i32.add
      (i32.trunc_f64_s (f64.mul (local.get 0) (global.get $scale)))
      (i32.trunc_sat_f32_u (f32.demote_f64 (f64.sqrt (local.get 0))))))
  (func (export "multi") (param i32) (result i32 i32)
    (local.get 0)
    (if (param i32) (result i32 i32) (local.get 0)
      (then (i32.const 1))
      (else (i32.const 2))))
  (func (export "select") (param i32 i32 i32) (result i32)
    (select (local.get 0) (local.get 1) (local.get 2)))
  (func $fact (export "fact") (param i64) (result i64)
    (if (result i64) (i64.le_s (local.get 0) (i64.const 1))
      (then (i64.const 1))
      (else (i64.mul (local.get 0) (call $fact (i64.sub (local.get 0) (i64.const 1)))))))
  (func (export "dead") (result i32)
    (unreachable)
    (block (result i32) (i32.const 1) (br 0))
    (drop)
    (i32.const 0)))
"#;

#[test]
fn every_operator_of_the_coverage_module_compiles() {
    let bytes = wat::parse_str(COVERAGE).unwrap();
    let module = compile(&bytes).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(module.functions.len(), 12);
    for function in &module.functions {
        assert!(function.len > 0, "an empty function");
        assert_eq!(function.offset % 16, 0, "functions start 16-byte aligned");
        assert!(function.offset + function.len <= module.code.len());
    }
    // $add and $sub share one signature id, and the id is what
    // call_indirect compares.
    assert_eq!(module.signature_ids[0], 0);
}

#[test]
fn regression_modules_compile_or_are_refused_cleanly() {
    let directory = repo_root().join("wasm/fuzz/regressions");
    let mut seen = 0;
    for entry in fs::read_dir(&directory).unwrap() {
        let path = entry.unwrap().path();
        let bytes = match path.extension().and_then(|e| e.to_str()) {
            Some("wasm") => fs::read(&path).unwrap(),
            Some("wat") => wat::parse_file(&path).unwrap(),
            _ => continue,
        };
        let Ok(info) = ModuleInfo::parse(&bytes) else {
            continue;
        };
        seen += 1;
        let result = Compiler::new(CompileLimits::default())
            .unwrap()
            .compile(&bytes, &info);
        if let Err(CompileError::Internal(message)) = result {
            panic!("{}: {message}", path.display());
        }
    }
    assert!(seen >= 1, "no regression module validated");
}

#[test]
fn too_many_locals_are_refused() {
    let wat = "(module (func (local i32) (local i64) (local f64) (local i32)))";
    let bytes = wat::parse_str(wat).unwrap();
    let info = ModuleInfo::parse(&bytes).unwrap();
    let limits = CompileLimits {
        locals: 3,
        ..CompileLimits::default()
    };
    let result = Compiler::new(limits).unwrap().compile(&bytes, &info);
    assert!(matches!(result, Err(CompileError::Limit(_))), "{result:?}");
    let wat = format!("(module (func (local {})))", "i64 ".repeat(5000));
    let result = compile(&wat::parse_str(&wat).unwrap());
    assert!(matches!(result, Err(CompileError::Limit(_))), "{result:?}");
}

#[test]
fn deep_nesting_is_refused() {
    let depth = 1000;
    let wat = format!(
        "(module (func {} {}))",
        "(block ".repeat(depth),
        ")".repeat(depth)
    );
    let result = compile(&wat::parse_str(&wat).unwrap());
    assert!(matches!(result, Err(CompileError::Limit(_))), "{result:?}");
}

#[test]
fn huge_functions_are_refused_and_large_ones_compile_in_bounded_time() {
    let body = "(drop (i32.add (local.get 0) (i32.const 12345)))".repeat(20_000);
    let wat = format!("(module (func (param i32) {body}))");
    let result = compile(&wat::parse_str(&wat).unwrap());
    assert!(matches!(result, Err(CompileError::Limit(_))), "{result:?}");

    // About 60 KB of code in 60 functions (the size of the `big`
    // extension): compiled, and timed for the design record.
    let function = "(func (param i32) (result i32) (local i32) \
        (block $done (loop $next \
          (br_if $done (i32.ge_u (local.get 1) (local.get 0))) \
          (i32.store (i32.and (local.get 1) (i32.const 0xfffc)) (i32.mul (local.get 1) (local.get 1))) \
          (local.set 1 (i32.add (local.get 1) (i32.const 1))) (br $next))) \
        (i32.load (i32.const 4)))"
        .to_string();
    let functions: String = std::iter::repeat_n(
        format!(
            "(func (param i32) (result i32) {})",
            "(drop (i32.load offset=4 (local.get 0)))".repeat(120) + "(local.get 0)"
        ),
        60,
    )
    .collect::<Vec<_>>()
    .join("\n");
    let wat = format!("(module (memory 1) {function} {functions})");
    let bytes = wat::parse_str(&wat).unwrap();
    let started = Instant::now();
    let module = compile(&bytes).unwrap_or_else(|error| panic!("{error}"));
    let elapsed = started.elapsed();
    assert_eq!(module.functions.len(), 61);
    println!(
        "native compile: {} bytes of Wasm to {} bytes of x86_64 in {} us",
        bytes.len(),
        module.code.len(),
        elapsed.as_micros()
    );
}

/// Generated modules (the fuzzer's own cases): whatever validates either
/// compiles or is refused as not translated yet / over a limit.
#[test]
fn generated_modules_compile_or_are_refused_cleanly() {
    let imports = generate::available_imports();
    let compiler = Compiler::new(CompileLimits::default()).unwrap();
    let (mut compiled, mut unsupported, mut limited) = (0, 0, 0);
    let mut missing: std::collections::BTreeMap<String, u32> = Default::default();
    for case in 0..300 {
        let bytes = generate::case(0x6e61_7469_7665, case, &imports).bytes;
        let Ok(info) = ModuleInfo::parse(&bytes) else {
            continue;
        };
        match compiler.compile(&bytes, &info) {
            Ok(_) => compiled += 1,
            Err(CompileError::Unsupported(what)) => {
                unsupported += 1;
                *missing.entry(what).or_default() += 1;
            }
            Err(CompileError::Limit(_)) => limited += 1,
            Err(CompileError::Internal(message)) => {
                let path = common::output_directory().join(format!("native-case{case}.wasm"));
                fs::write(&path, &bytes).unwrap();
                panic!(
                    "case {case}: {message} (module saved as {})",
                    path.display()
                );
            }
        }
    }
    println!(
        "generated: {compiled} compiled, {unsupported} not translated yet, {limited} over a limit"
    );
    for (what, count) in &missing {
        println!("  not translated yet: {what} ({count} modules)");
    }
    assert!(compiled > 20, "only {compiled} generated modules compiled");
}

/// A function keeping thousands of values live needs a stack frame larger
/// than the limit: refused (it stays on wasmi), since a frame is written
/// before the function's stack-limit check runs.
#[test]
fn functions_with_huge_frames_are_refused() {
    let values = 1500;
    let mut body = String::new();
    // Loads, which the compiler cannot fold or move across each other's
    // bounds checks: every value stays live until the additions.
    for value in 0..values {
        body.push_str(&format!("(i64.load offset={} (i32.const 0)) ", value * 8));
    }
    for _ in 1..values {
        body.push_str("(i64.add) ");
    }
    let wat = format!("(module (memory 1) (func (export \"f\") (result i64) {body}))");
    let bytes = wat::parse_str(&wat).unwrap();
    let info = ModuleInfo::parse(&bytes).unwrap();
    match Compiler::new(CompileLimits::default())
        .unwrap()
        .compile(&bytes, &info)
    {
        Err(CompileError::Limit(why)) => assert!(why.contains("stack frame"), "{why}"),
        other => panic!(
            "expected a frame limit, got {:?}",
            other.map(|m| m.code.len())
        ),
    }
}

/// The single-pass compiler gives a frame only to a function that needs
/// one: a leaf that reads no local and spills nothing starts with its
/// fuel charge (`sub qword [rdi + 16], 1`), not `push rbp`; one that
/// reads its parameter stores it in a frame.
#[test]
fn single_pass_leaves_without_slots_have_no_frame() {
    let bytes = wat::parse_str(
        r#"(module
          (func (export "empty") (param i64))
          (func (export "yes") (param i64) (result i32) (i32.const 1))
          (func (export "sum") (param i64 i64) (result i64)
            (i64.add (i64.const 2) (i64.const 3)))
          (func (export "reads") (param i64) (result i64) (local.get 0)))"#,
    )
    .unwrap();
    let compiled = compile(&bytes).expect("compiles");
    assert_eq!(compiled.single_pass_functions, 4, "all in one pass");
    const CHARGE_FUEL: [u8; 5] = [0x48, 0x83, 0x6f, 0x10, 0x01];
    const PUSH_RBP: u8 = 0x55;
    let start = |index: usize| &compiled.code[compiled.functions[index].offset..];
    for (index, name) in ["empty", "yes", "sum"].into_iter().enumerate() {
        assert_eq!(start(index)[..5], CHARGE_FUEL, "{name}: no frame");
    }
    assert_eq!(start(3)[0], PUSH_RBP, "reads: its parameter in a frame");
}
