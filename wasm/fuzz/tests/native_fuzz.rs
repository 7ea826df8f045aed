//! Differential fuzzing, short run: wasm-smith modules (no imports, no
//! start function) run by wasmi and by the native engine give the same
//! results, the same trap kinds and the same memory. A call that runs out
//! of fuel or stack on either side ends the comparison of that module (the
//! two tiers count fuel and frames differently). `SPINDLE_NATIVE_CASES`
//! sets the number of modules (default 300).

use arbitrary::Unstructured;
use wasm_fuzz::{Rng, Stream};
use wasm_runtime::{
    engine::native::{run::NativeModule, vmctx::TrapCode, Backend, CompileLimits, Compiler},
    module::{ModuleInfo, WasmType},
};
use wasmi::{Config, Engine, Linker, Module, Store, Val};
use wasmparser::{Parser, Payload};

const FUEL: u64 = 100_000;
const DEPTH: u32 = 100;

/// A generated module; `floats` false leaves out float types and
/// operators (the single-pass compiler leaves them to Cranelift).
fn smith(rng: &mut Rng, floats: bool) -> Option<Vec<u8>> {
    let config = wasm_smith::Config {
        allow_floats: floats,
        max_imports: 0,
        min_funcs: 1,
        max_funcs: 8,
        export_everything: true,
        bulk_memory_enabled: false,
        reference_types_enabled: false,
        tail_call_enabled: false,
        simd_enabled: false,
        relaxed_simd_enabled: false,
        threads_enabled: false,
        gc_enabled: false,
        exceptions_enabled: false,
        memory64_enabled: false,
        canonicalize_nans: true,
        max_memory32_bytes: 2 << 16,
        // A memory without a maximum grows on wasmi past the kernel's
        // limit (64 pages), which native code enforces.
        memory_max_size_required: true,
        max_table_elements: 64,
        max_instructions: 300,
        max_nesting_depth: 10,
        ..wasm_smith::Config::default()
    };
    let len = 256 + rng.below(4096);
    let raw = rng.bytes(len);
    wasm_smith::Module::new(config, &mut Unstructured::new(&raw))
        .ok()
        .map(|module| module.to_bytes())
}

fn wasmi_trap(error: &wasmi::Error) -> Option<TrapCode> {
    use wasmi::TrapCode as W;
    Some(match error.as_trap_code()? {
        W::UnreachableCodeReached => TrapCode::Unreachable,
        W::MemoryOutOfBounds => TrapCode::MemoryOutOfBounds,
        W::TableOutOfBounds => TrapCode::TableOutOfBounds,
        W::IntegerDivisionByZero => TrapCode::DivisionByZero,
        W::IntegerOverflow => TrapCode::IntegerOverflow,
        W::BadConversionToInteger => TrapCode::BadConversion,
        W::StackOverflow => TrapCode::StackOverflow,
        W::IndirectCallToNull => TrapCode::IndirectCallToNull,
        W::BadSignature => TrapCode::BadSignature,
        W::OutOfFuel => TrapCode::OutOfFuel,
        _ => return None,
    })
}

fn argument(rng: &mut Rng) -> i64 {
    const EDGES: [i64; 8] = [0, 1, -1, 8, 65535, 65536, i32::MIN as i64, i64::MAX];
    if rng.one_in(2) {
        EDGES[rng.below(EDGES.len())]
    } else {
        rng.next_u64() as i64
    }
}

#[test]
fn generated_modules_behave_the_same_under_both_engines() {
    let (single_pass, total) = differential(Backend::Mixed);
    println!("the kernel's mix: {single_pass} of {total} functions compiled in one pass");
    assert!(single_pass > 0 && single_pass < total);
}

/// Every function the single-pass compiler handles, loops included, is
/// compiled by it (the modules without floats, which it leaves to
/// Cranelift).
#[test]
fn generated_modules_behave_the_same_under_single_pass_code() {
    let (single_pass, total) = differential(Backend::SinglePass);
    println!("single pass: {single_pass} of {total} functions compiled in one pass");
    // What it leaves to Cranelift is the rare forms its documentation
    // lists.
    assert!(
        single_pass * 10 > total * 9,
        "only {single_pass} of {total}"
    );
}

/// Runs the generated modules compiled with `backend`: how many of their
/// functions were compiled in one pass, of how many.
fn differential(backend: Backend) -> (usize, usize) {
    let cases: u64 = std::env::var("SPINDLE_NATIVE_CASES")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(300);
    let compiler = Compiler::new(CompileLimits {
        backend,
        ..CompileLimits::default()
    })
    .unwrap();
    let (mut single_pass, mut total) = (0, 0);
    let mut config = Config::default();
    config
        .consume_fuel(true)
        .set_max_recursion_depth(DEPTH as usize);
    let engine = Engine::new(&config);
    let (mut modules_run, mut calls_compared) = (0, 0);
    for case in 0..cases {
        let mut rng = Rng::for_case(0x6469_6666, case, Stream::Module);
        let Some(bytes) = smith(&mut rng, backend != Backend::SinglePass) else {
            continue;
        };
        let has_start = Parser::new(0)
            .parse_all(&bytes)
            .any(|p| matches!(p, Ok(Payload::StartSection { .. })));
        let Ok(info) = ModuleInfo::parse(&bytes) else {
            continue;
        };
        if has_start {
            continue;
        }
        let Ok(mut native) = NativeModule::new(&compiler, &bytes, &info, DEPTH) else {
            continue;
        };
        let compiled = compiler.compile(&bytes, &info).unwrap();
        single_pass += compiled.single_pass_functions;
        total += compiled.functions.len();
        let module = Module::new(&engine, &bytes).unwrap();
        let mut store = Store::new(&engine, ());
        let Ok(instance) = Linker::new(&engine).instantiate_and_start(&mut store, &module) else {
            continue;
        };
        modules_run += 1;
        'calls: for export in &info.exports {
            let Some(index) = export.function else {
                continue;
            };
            let ty = info.function_type(index).unwrap().clone();
            // Integers and floats (through native code's integer entry,
            // as raw bits).
            let scalar = |t: &WasmType| *t != WasmType::Other;
            if ty.params.len() > 4
                || !ty.params.iter().all(scalar)
                || ty.results.len() > 1
                || !ty.results.iter().all(scalar)
            {
                continue;
            }
            for _ in 0..4 {
                let args: Vec<i64> = ty
                    .params
                    .iter()
                    .map(|t| match t {
                        WasmType::I32 | WasmType::F32 => i64::from(argument(&mut rng) as i32),
                        _ => argument(&mut rng),
                    })
                    .collect();
                let inputs: Vec<Val> = ty
                    .params
                    .iter()
                    .zip(&args)
                    .map(|(t, &a)| match t {
                        WasmType::I64 => Val::I64(a),
                        WasmType::F32 => Val::F32(wasmi::F32::from_bits(a as u32)),
                        WasmType::F64 => Val::F64(wasmi::F64::from_bits(a as u64)),
                        _ => Val::I32(a as i32),
                    })
                    .collect();
                let func = instance.get_func(&store, &export.name).unwrap();
                let mut outputs: Vec<Val> = func
                    .ty(&store)
                    .results()
                    .iter()
                    .map(|t| Val::default(*t))
                    .collect();
                store.set_fuel(FUEL).unwrap();
                let expected = match func.call(&mut store, &inputs, &mut outputs) {
                    Ok(()) => Ok(outputs.first().map(|v| match v {
                        Val::I32(v) => i64::from(*v),
                        Val::I64(v) => *v,
                        Val::F32(v) => i64::from(v.to_bits()),
                        Val::F64(v) => v.to_bits() as i64,
                        _ => 0,
                    })),
                    Err(error) => match wasmi_trap(&error) {
                        Some(code) => Err(code),
                        None => panic!("case {case}: wasmi error {error}"),
                    },
                };
                let actual = native.call(&export.name, &args, FUEL).unwrap();
                let exhausted = |o: &Result<Option<i64>, TrapCode>| {
                    matches!(o, Err(TrapCode::OutOfFuel | TrapCode::StackOverflow))
                };
                if exhausted(&expected) || exhausted(&actual) {
                    break 'calls;
                }
                // A NaN result may differ in its sign and payload (the
                // specification allows either engine its own).
                let is_nan = |raw: &Result<Option<i64>, TrapCode>| match (raw, ty.results.first()) {
                    (Ok(Some(raw)), Some(WasmType::F32)) => f32::from_bits(*raw as u32).is_nan(),
                    (Ok(Some(raw)), Some(WasmType::F64)) => f64::from_bits(*raw as u64).is_nan(),
                    _ => false,
                };
                if !(is_nan(&actual) && is_nan(&expected)) {
                    assert_eq!(actual, expected, "case {case}: {}{args:?}", export.name);
                }
                let memories_match = match info.memory_pages {
                    Some(_) => instance
                        .exports(&store)
                        .find_map(|e| e.into_memory())
                        .is_none_or(|m| m.data(&store) == native.memory()),
                    None => true,
                };
                assert!(
                    memories_match,
                    "case {case}: memory differs after {}{args:?}",
                    export.name
                );
                calls_compared += 1;
            }
        }
    }
    println!("native differential: {modules_run} modules, {calls_compared} calls compared");
    assert!(modules_run > 10, "only {modules_run} modules ran");
    assert!(calls_compared > 20, "only {calls_compared} calls compared");
    (single_pass, total)
}
