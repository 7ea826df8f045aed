//! Writes the modules of fuzz cases to a folder, for the kernel's fuzz mode
//! (`./x` packs them into the boot archive; wasm-smith cannot run in the
//! kernel).
//!
//! usage: fuzz-cases --seed S --first F --count N --out DIR
//!
//! Writes `DIR/<case>.wasm` for cases F..F+N of seed S, and `DIR/seed`.

use std::{fs, path::PathBuf, process::ExitCode};

use wasm_fuzz::generate;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("fuzz-cases: {message}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let (mut seed, mut first, mut count, mut out) = (None, 0u64, None, None);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("{flag} needs a number, not {value:?}"))
        };
        match flag.as_str() {
            "--seed" => seed = Some(number()?),
            "--first" => first = number()?,
            "--count" => count = Some(number()?),
            "--out" => out = Some(PathBuf::from(&value)),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    let (seed, count, out) = match (seed, count, out) {
        (Some(seed), Some(count), Some(out)) => (seed, count, out),
        _ => return Err("usage: fuzz-cases --seed S --first F --count N --out DIR".into()),
    };
    fs::create_dir_all(&out).map_err(|error| format!("{}: {error}", out.display()))?;
    fs::write(out.join("seed"), format!("{seed}\n")).map_err(|error| error.to_string())?;
    let imports = generate::available_imports();
    for case in first..first + count {
        let module = generate::case(seed, case, &imports);
        let path = out.join(format!("{case}.wasm"));
        fs::write(&path, &module.bytes).map_err(|error| format!("{}: {error}", path.display()))?;
    }
    Ok(())
}
