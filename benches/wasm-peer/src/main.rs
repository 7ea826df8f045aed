//! Host benchmark of the native engine against its peer, wasmtime, whose
//! code generator is the same Cranelift (0.135) as ours
//! (docs/design/0008-native-engine.md, "Measures"; issue 12's goal: the
//! checksum at most 1.2x wasmtime's code).
//!
//! The modules are the guest's own: `target/extensions/bench.wasm` and
//! `big.wasm`, the bytes `./x build-extensions` builds and the kernel
//! loads. Four ways to run the bench extension's `checksum` of the
//! 1,500-byte packet (in its linear memory, read through `black_box` so no
//! compiler folds it):
//!
//! - `native`: our engine on the host, through the runtime as the kernel
//!   runs it (`wasm_runtime::bench::Fixture`, the native tier pinned: the
//!   invocation path of `ext.checksum_1500.native`);
//! - `wasmtime`: wasmtime's usual configuration on x86_64 Linux (4 GiB of
//!   reserved memory with guard pages, so no bounds check in the code; a
//!   fault is a trap);
//! - `wasmtime_checked`: wasmtime with explicit bounds checks (no signal
//!   handlers, no reservation, no guard pages): the same safety model as
//!   ours, which checks accesses in the code (once before a counted loop
//!   where it can prove the loop's range) and relies on no page fault;
//! - `rust`: the same function in Rust (`wasm_runtime::bench::checksum`),
//!   compiled into this binary.
//!
//! Every call's result is compared with the expected checksum inside the
//! timed loop. The variants' repetitions are interleaved (one of each in
//! turn), so a slow period of the shared machine hits all of them; each
//! figure is the median of [`REPETITIONS`], and each ratio the median of
//! the per-repetition ratios.
//!
//! Also: the empty handler called through each (our runtime's invocation
//! of a resolved export and its cached raise through the dispatcher, the
//! kernel's `ext.wasm_handler`, against wasmtime's typed call), and the
//! compile time of `big` (61,917 bytes) under our compiler (the kernel's
//! choice per function, which compiles `big`'s loop-free functions in one
//! pass; then Cranelift for every function as the kernel configures it,
//! optimized with the verifier on; then without the verifier, which
//! wasmtime leaves off) and under wasmtime (`Module::new`: validation,
//! translation and compilation on one thread, optimized for speed).
//!
//! Output, one line per figure (read by `./x bench wasm-peer`):
//! `bench wasm-peer.<name> <median> ns runs=<n> min=<min> max=<max>` and
//! `bench wasm-peer.<name> <ratio> x`. The ratios are ours over the
//! peer's: `checksum_1500.ratio` (over `wasmtime`: the figure),
//! `.ratio_checked` (over `wasmtime_checked`), `.ratio_rust`;
//! `handler.ratio` (our call of the resolved export over wasmtime's);
//! `compile_50k.ratio`, `.ratio_cranelift` and `.ratio_no_verifier`.
//!
//! `--dump DIR` also writes both engines' machine code for `bench.wasm`
//! (ours as raw x86_64 with the functions' offsets, wasmtime's as its ELF
//! artifact) for `objdump`.

use std::{
    hint::black_box,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use dispatch::RaiseCache;
use wasm_runtime::{
    bench::{self, Fixture},
    engine::native::{Backend, CompileLimits, Compiler, NativeEngine},
    module::ModuleInfo,
    Console, EngineConfig, LoadRequest, Runtime, Services, Tier, WasmValue,
};
use wasmtime::{Engine, Instance, Linker, Module, OptLevel, Store, TypedFunc, Val};

/// Repetitions of each figure.
const REPETITIONS: usize = 21;
/// Target duration of one repetition of one variant.
const REPETITION_TIME: Duration = Duration::from_millis(10);
/// Compilations of `big` per engine (each one a sample).
const COMPILATIONS: usize = 11;

/// Drops what the bench extension would log (it logs nothing).
struct Quiet;

impl Console for Quiet {
    fn log(&self, _: &str, _: &str) {}
}

/// One variant of a figure: its name and one operation, which returns
/// whether its result was the expected one.
struct Variant<'a> {
    name: &'static str,
    op: Box<dyn FnMut() -> bool + 'a>,
}

/// Samples of one variant, in nanoseconds per operation.
struct Samples {
    name: &'static str,
    ns: Vec<f64>,
}

impl Samples {
    fn sorted(&self) -> Vec<f64> {
        let mut sorted = self.ns.clone();
        sorted.sort_by(f64::total_cmp);
        sorted
    }

    fn median(&self) -> f64 {
        let sorted = self.sorted();
        sorted[sorted.len() / 2]
    }
}

/// Runs `op` `iterations` times; ns per operation. Panics on a wrong
/// result: a figure of code that computes something else means nothing.
fn time(name: &str, op: &mut dyn FnMut() -> bool, iterations: u64) -> f64 {
    let start = Instant::now();
    for _ in 0..iterations {
        if !op() {
            panic!("{name}: wrong result");
        }
    }
    start.elapsed().as_nanos() as f64 / iterations as f64
}

/// Measures the variants in turn, [`REPETITIONS`] times each, after
/// calibrating each one's iteration count to about [`REPETITION_TIME`].
fn measure(variants: &mut [Variant<'_>]) -> Vec<Samples> {
    let mut iterations = Vec::new();
    for variant in variants.iter_mut() {
        let mut n = 1u64;
        loop {
            let ns = time(variant.name, &mut variant.op, n);
            if ns * n as f64 >= REPETITION_TIME.as_nanos() as f64 / 4.0 || n >= 1 << 30 {
                break;
            }
            n *= 2;
        }
        iterations.push(n * 4);
    }
    let mut samples: Vec<Samples> = variants
        .iter()
        .map(|variant| Samples {
            name: variant.name,
            ns: Vec::with_capacity(REPETITIONS),
        })
        .collect();
    for _ in 0..REPETITIONS {
        for ((variant, n), samples) in variants.iter_mut().zip(&iterations).zip(&mut samples) {
            samples.ns.push(time(variant.name, &mut variant.op, *n));
        }
    }
    samples
}

fn report(figure: &str, samples: &Samples) {
    let sorted = samples.sorted();
    println!(
        "bench wasm-peer.{figure}.{} {:.1} ns runs={} min={:.1} max={:.1}",
        samples.name,
        samples.median(),
        sorted.len(),
        sorted[0],
        sorted[sorted.len() - 1],
    );
}

/// Prints the median over repetitions of `over`'s time divided by
/// `under`'s (repetition by repetition: both ran back to back).
fn report_ratio(figure: &str, name: &str, over: &Samples, under: &Samples) {
    let mut ratios: Vec<f64> = over.ns.iter().zip(&under.ns).map(|(a, b)| a / b).collect();
    ratios.sort_by(f64::total_cmp);
    println!(
        "bench wasm-peer.{figure}.{name} {:.3} x",
        ratios[ratios.len() / 2]
    );
}

/// The guest's modules: `target/extensions/NAME.wasm`.
fn extension(name: &str) -> Result<Vec<u8>, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/extensions")
        .join(format!("{name}.wasm"));
    std::fs::read(&path).map_err(|e| format!("{}: {e} (run ./x build-extensions)", path.display()))
}

/// A wasmtime engine: optimized for speed (as our compiler is), on one
/// thread; `checked` gives it explicit bounds checks instead of guard pages.
fn wasmtime_engine(checked: bool) -> Result<Engine, String> {
    let mut config = wasmtime::Config::new();
    config.cranelift_opt_level(OptLevel::Speed);
    if checked {
        config
            .signals_based_traps(false)
            .memory_reservation(0)
            .memory_guard_size(0);
    }
    Engine::new(&config).map_err(|e| format!("wasmtime: {e}"))
}

/// `bytes` instantiated under wasmtime, every import a function that
/// returns zeros (the bench extension's `checksum` and `handler` call none).
fn wasmtime_instance(engine: &Engine, bytes: &[u8]) -> Result<(Store<()>, Instance), String> {
    let module = Module::new(engine, bytes).map_err(|e| format!("wasmtime: {e}"))?;
    let mut linker = Linker::new(engine);
    for import in module.imports() {
        if let wasmtime::ExternType::Func(ty) = import.ty() {
            linker
                .func_new(import.module(), import.name(), ty, |_, _, results| {
                    for result in results.iter_mut() {
                        *result = Val::I32(0);
                    }
                    Ok(())
                })
                .map_err(|e| format!("wasmtime: {e}"))?;
        }
    }
    let mut store = Store::new(engine, ());
    let instance = linker
        .instantiate(&mut store, &module)
        .map_err(|e| format!("wasmtime: {e}"))?;
    Ok((store, instance))
}

/// One wasmtime instance of the bench extension and its two exports.
struct Peer {
    store: Store<()>,
    checksum: TypedFunc<u32, u32>,
    handler: TypedFunc<u64, ()>,
}

impl Peer {
    fn new(bytes: &[u8], checked: bool) -> Result<Peer, String> {
        let engine = wasmtime_engine(checked)?;
        let (mut store, instance) = wasmtime_instance(&engine, bytes)?;
        let checksum = instance
            .get_typed_func::<u32, u32>(&mut store, "checksum")
            .map_err(|e| format!("wasmtime: checksum: {e}"))?;
        let handler = instance
            .get_typed_func::<u64, ()>(&mut store, "handler")
            .map_err(|e| format!("wasmtime: handler: {e}"))?;
        Ok(Peer {
            store,
            checksum,
            handler,
        })
    }
}

fn main() {
    if let Err(error) = run() {
        eprintln!("bench-wasm-peer: {error}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let dump = match args.next().as_deref() {
        Some("--dump") => Some(PathBuf::from(args.next().ok_or("--dump needs a folder")?)),
        Some(other) => return Err(format!("unknown argument `{other}` (usage: [--dump DIR])")),
        None => None,
    };
    let bench_wasm = extension("bench")?;
    let big_wasm = extension("big")?;

    // Ours, as the kernel runs it.
    let runtime = Runtime::new(Services {
        console: Arc::new(Quiet),
        clock: None,
        strands: None,
    })
    .with_native_engine(Box::new(
        NativeEngine::new(&EngineConfig::default()).map_err(|e| format!("native engine: {e}"))?,
    ));
    let request = LoadRequest::new("bench", &bench_wasm).tier(Tier::Native);
    let fixture = Fixture::load(&runtime, request).map_err(|e| format!("bench.wasm: {e}"))?;
    if fixture.extension.tier() != Tier::Native {
        return Err("bench.wasm did not load on the native tier".into());
    }
    let handler = fixture
        .extension
        .resolve("handler")
        .map_err(|e| format!("bench.wasm: {e}"))?;

    let mut peer = Peer::new(&bench_wasm, false)?;
    let mut checked = Peer::new(&bench_wasm, true)?;

    if let Some(folder) = dump {
        dump_code(&folder, &bench_wasm)?;
    }

    // The checksum of the packet.
    let packet = bench::packet();
    let expected = bench::checksum(&packet);
    let len = bench::PACKET_BYTES as u32;
    let samples = measure(&mut [
        Variant {
            name: "native",
            op: Box::new(|| fixture.checksum(black_box(len)) == Ok(expected)),
        },
        Variant {
            name: "wasmtime",
            op: Box::new(|| {
                peer.checksum.call(&mut peer.store, black_box(len)).ok() == Some(expected.into())
            }),
        },
        Variant {
            name: "wasmtime_checked",
            op: Box::new(|| {
                checked
                    .checksum
                    .call(&mut checked.store, black_box(len))
                    .ok()
                    == Some(expected.into())
            }),
        },
        Variant {
            name: "rust",
            op: Box::new(|| bench::checksum(black_box(&packet[..])) == expected),
        },
    ]);
    for variant in &samples {
        report("checksum_1500", variant);
    }
    report_ratio("checksum_1500", "ratio", &samples[0], &samples[1]);
    report_ratio("checksum_1500", "ratio_checked", &samples[0], &samples[2]);
    report_ratio("checksum_1500", "ratio_rust", &samples[0], &samples[3]);

    // The empty handler.
    let mut cache = RaiseCache::new();
    let binding = fixture
        .bind_handler()
        .map_err(|e| format!("binding the handler: {e}"))?;
    let mut value = 0u64;
    let samples = measure(&mut [
        Variant {
            name: "native",
            op: Box::new(|| {
                fixture
                    .extension
                    .call_resolved(handler, &[WasmValue::I64(black_box(1))])
                    == Ok(None)
            }),
        },
        Variant {
            name: "native_raise",
            op: Box::new(|| {
                value = value.wrapping_add(1);
                fixture.raise_cached(&mut cache, value)
            }),
        },
        Variant {
            name: "wasmtime",
            op: Box::new(|| peer.handler.call(&mut peer.store, black_box(1)).is_ok()),
        },
        Variant {
            name: "wasmtime_checked",
            op: Box::new(|| {
                checked
                    .handler
                    .call(&mut checked.store, black_box(1))
                    .is_ok()
            }),
        },
    ]);
    fixture
        .unbind(binding)
        .map_err(|e| format!("unbinding the handler: {e}"))?;
    for variant in &samples {
        report("handler", variant);
    }
    report_ratio("handler", "ratio", &samples[0], &samples[2]);

    compile_figures(&big_wasm)
}

/// Compile time of `big`, one compilation a sample, the engines in turn.
fn compile_figures(big: &[u8]) -> Result<(), String> {
    let info = ModuleInfo::parse(big).map_err(|e| format!("big.wasm: {e}"))?;
    let ours = Compiler::new(CompileLimits::default()).map_err(|e| format!("{e}"))?;
    let cranelift = Compiler::new(CompileLimits {
        backend: Backend::Cranelift,
        ..CompileLimits::default()
    })
    .map_err(|e| format!("{e}"))?;
    let unverified = Compiler::new(CompileLimits {
        backend: Backend::Cranelift,
        verify: false,
        ..CompileLimits::default()
    })
    .map_err(|e| format!("{e}"))?;
    let engine = wasmtime_engine(false)?;
    let mut samples = [
        ("native", Vec::new()),
        ("native_cranelift", Vec::new()),
        ("native_no_verifier", Vec::new()),
        ("wasmtime", Vec::new()),
    ];
    let mut code_bytes = 0;
    for _ in 0..COMPILATIONS {
        for (name, ns) in samples.iter_mut() {
            let start = Instant::now();
            match *name {
                "native" => {
                    code_bytes = ours
                        .compile(big, &info)
                        .map_err(|e| format!("{e}"))?
                        .code
                        .len();
                }
                "native_cranelift" => {
                    black_box(cranelift.compile(big, &info).map_err(|e| format!("{e}"))?);
                }
                "native_no_verifier" => {
                    black_box(unverified.compile(big, &info).map_err(|e| format!("{e}"))?);
                }
                _ => {
                    black_box(Module::new(&engine, big).map_err(|e| format!("wasmtime: {e}"))?);
                }
            }
            ns.push(start.elapsed().as_nanos() as f64);
        }
    }
    let samples: Vec<Samples> = samples
        .into_iter()
        .map(|(name, ns)| Samples { name, ns })
        .collect();
    for variant in &samples {
        report("compile_50k", variant);
    }
    eprintln!(
        "bench-wasm-peer: big.wasm: {} bytes of Wasm, {code_bytes} bytes of our code",
        big.len()
    );
    report_ratio("compile_50k", "ratio", &samples[0], &samples[3]);
    report_ratio("compile_50k", "ratio_cranelift", &samples[1], &samples[3]);
    report_ratio("compile_50k", "ratio_no_verifier", &samples[2], &samples[3]);
    Ok(())
}

/// Writes our code for `bytes` (`native.bin`, raw x86_64, and
/// `native.functions`, each function's offset and length) and wasmtime's
/// (`wasmtime.cwasm`, an ELF file) into `folder`.
fn dump_code(folder: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::create_dir_all(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    let write = |name: &str, contents: &[u8]| {
        let path = folder.join(name);
        std::fs::write(&path, contents).map_err(|e| format!("{}: {e}", path.display()))
    };
    let info = ModuleInfo::parse(bytes).map_err(|e| format!("bench.wasm: {e}"))?;
    let compiled = Compiler::new(CompileLimits::default())
        .and_then(|compiler| compiler.compile(bytes, &info))
        .map_err(|e| format!("{e}"))?;
    write("native.bin", &compiled.code)?;
    let functions: String = compiled
        .functions
        .iter()
        .enumerate()
        .map(|(index, function)| {
            format!(
                "function {index} offset {:#x} len {}\n",
                function.offset, function.len
            )
        })
        .collect();
    write("native.functions", functions.as_bytes())?;
    for (name, checked) in [("wasmtime.cwasm", false), ("wasmtime_checked.cwasm", true)] {
        let artifact = wasmtime_engine(checked)?
            .precompile_module(bytes)
            .map_err(|e| format!("wasmtime: {e}"))?;
        write(name, &artifact)?;
    }
    eprintln!("bench-wasm-peer: code written to {}", folder.display());
    Ok(())
}
