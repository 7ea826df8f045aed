//! The loader under bad input: generated modules (wasm-smith, importing the
//! kernel procedures so that many link and run), mutations of valid
//! modules, and arbitrary bytes. Every case must end in success or a clear
//! error, never a panic: loads, binds (as handler and as guard: the purity
//! check), and calls of every export with zero arguments under a small
//! fuel limit (so host procedures see random pointers and handles).
//!
//! `cargo test` runs 10,000 cases (`SPINDLE_FUZZ_CASES` changes the count,
//! `SPINDLE_FUZZ_SECONDS` bounds the time, `SPINDLE_FUZZ_SEED` the seed);
//! `./x fuzz` runs a longer campaign through the same test.

mod common;

use std::{
    fmt::Write as _,
    time::{Duration, Instant},
};

use arbitrary::Unstructured;
use common::{fixture, tick_event};
use wasm_runtime::{Bind, Limits, LoadRequest};

/// A small deterministic generator (xorshift64*), so a failing case can be
/// replayed from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// A module that imports every kernel procedure: wasm-smith picks its
/// generated modules' imports from it.
fn available_imports() -> Vec<u8> {
    let mut wat = String::from("(module\n");
    for spec in spindle_abi::IMPORTS {
        let ty = |t: &spindle_abi::WasmType| match t {
            spindle_abi::WasmType::I32 => "i32",
            spindle_abi::WasmType::I64 => "i64",
        };
        let params: Vec<&str> = spec.params.iter().map(ty).collect();
        let result = spec
            .result
            .as_ref()
            .map(|t| format!("(result {})", ty(t)))
            .unwrap_or_default();
        writeln!(
            wat,
            "  (import \"{}\" \"{}\" (func (param {}) {result}))",
            spec.module,
            spec.name,
            params.join(" ")
        )
        .unwrap();
    }
    wat.push(')');
    wat::parse_str(&wat).unwrap()
}

fn smith_config(imports: &[u8], rng: &mut Rng) -> wasm_smith::Config {
    wasm_smith::Config {
        available_imports: (rng.below(4) != 0).then(|| imports.to_vec()),
        // The features the kernel accepts, and a few it refuses (SIMD,
        // threads, memory64, GC, exceptions) in some cases, to exercise
        // refusal.
        simd_enabled: rng.below(8) == 0,
        relaxed_simd_enabled: false,
        threads_enabled: rng.below(8) == 0,
        memory64_enabled: rng.below(8) == 0,
        gc_enabled: false,
        exceptions_enabled: rng.below(8) == 0,
        export_everything: true,
        max_memory32_bytes: 8 << 16,
        max_funcs: 20,
        max_instructions: 200,
        max_imports: 12,
        max_exports: 30,
        ..wasm_smith::Config::default()
    }
}

fn mutate(rng: &mut Rng, mut bytes: Vec<u8>) -> Vec<u8> {
    for _ in 0..=rng.below(4) {
        if bytes.is_empty() {
            break;
        }
        let at = rng.below(bytes.len());
        match rng.below(4) {
            0 => bytes[at] ^= 1 << rng.below(8),
            1 => bytes[at] = rng.next() as u8,
            2 => {
                bytes.remove(at);
            }
            _ => bytes.insert(at, rng.next() as u8),
        }
    }
    bytes
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

#[test]
fn loader_never_panics_on_generated_mutated_or_random_modules() {
    let cases = env_number("SPINDLE_FUZZ_CASES").unwrap_or(10_000);
    let deadline = env_number("SPINDLE_FUZZ_SECONDS").map(Duration::from_secs);
    let seed = env_number("SPINDLE_FUZZ_SEED").unwrap_or(0x5eed_5eed_1995);
    let mut rng = Rng(seed | 1);
    let imports = available_imports();
    let fixture = fixture();
    let (_event, _authority, tick) = tick_event();
    let limits = Limits {
        fuel_per_invocation: 2_000,
        memory_pages: 8,
        ..Limits::default()
    };
    let started = Instant::now();
    let (mut loaded, mut refused, mut bound, mut pure, mut calls) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut valid_pool: Vec<Vec<u8>> =
        vec![wat::parse_str("(module (func (export \"f\")))").unwrap()];
    let mut case = 0;
    while case < cases && deadline.is_none_or(|d| started.elapsed() < d) {
        case += 1;
        let bytes = match rng.below(3) {
            0 => {
                let len = 256 + rng.below(2048);
                let raw = rng.bytes(len);
                let config = smith_config(&imports, &mut rng);
                match wasm_smith::Module::new(config, &mut Unstructured::new(&raw)) {
                    Ok(module) => module.to_bytes(),
                    Err(_) => continue,
                }
            }
            1 => {
                let base = valid_pool[rng.below(valid_pool.len())].clone();
                mutate(&mut rng, base)
            }
            _ => {
                let mut bytes = b"\0asm\x01\0\0\0".to_vec();
                let len = rng.below(64);
                bytes.extend(rng.bytes(len));
                bytes
            }
        };
        let request = LoadRequest::new("fuzz", &bytes)
            .grant_event(tick.clone())
            .limits(limits);
        let extension = match fixture.runtime.load(request) {
            Ok(extension) => extension,
            Err(error) => {
                assert!(!format!("{error}").is_empty());
                refused += 1;
                continue;
            }
        };
        loaded += 1;
        if valid_pool.len() < 64 {
            valid_pool.push(bytes.clone());
        }
        let info = wasm_runtime::module::ModuleInfo::parse(&bytes).expect("loaded, so valid");
        for export in info.exports.iter().filter(|e| e.function.is_some()).take(8) {
            if extension
                .bind(&tick, &Bind::handler(&export.name).guard(&export.name))
                .is_ok()
            {
                bound += 1;
            }
            // The purity check on every export, whatever its type.
            let index = export.function.unwrap();
            if wasm_runtime::purity::check_pure(&info, index, &|_| rng_bit(index)).is_ok() {
                pure += 1;
            }
            let ty = info.function_type(export.function.unwrap()).unwrap();
            let args: Vec<dispatch::Value> = ty
                .params
                .iter()
                .map(|t| match t {
                    wasm_runtime::module::WasmType::I64 => dispatch::Value::I64(rng.next() as i64),
                    wasm_runtime::module::WasmType::F32 => dispatch::Value::F32(0.5),
                    wasm_runtime::module::WasmType::F64 => dispatch::Value::F64(0.25),
                    _ => dispatch::Value::I32(rng.next() as i32),
                })
                .collect();
            if ty
                .params
                .iter()
                .all(|t| *t != wasm_runtime::module::WasmType::Other)
            {
                let _ = extension.call(&export.name, &args);
                calls += 1;
            }
        }
        let _ = _event_raise(&_event);
        extension.unload().expect("not busy");
    }
    eprintln!(
        "fuzz: {case} cases in {:.1} s (seed {seed:#x}): {loaded} loaded, {refused} refused, {bound} guard+handler bindings, {pure} pure exports, {calls} calls",
        started.elapsed().as_secs_f64()
    );
    assert!(deadline.is_some() || case >= cases);
    assert!(
        loaded > 0 && refused > 0,
        "both outcomes must occur: {loaded} loaded, {refused} refused"
    );
}

/// Whether imports count as pure, varied per function.
fn rng_bit(index: u32) -> bool {
    index.is_multiple_of(2)
}

fn _event_raise(event: &dispatch::Event<(u64,), ()>) -> Result<(), dispatch::RaiseError> {
    event.raise(&mut (3,))
}
