//! Building the extensions.
//!
//! `./x build-extensions` builds the Rust SDK and every extension under
//! `extensions/` for `wasm32-unknown-unknown`, and puts one `.wasm` per
//! extension in `target/extensions/` (named after its folder):
//! - Rust extensions (a folder with `Cargo.toml`) are members of the
//!   `extensions/` workspace, built in one cargo run with Debian's cargo,
//!   `-Zbuild-std=core,alloc,panic_abort` and `wasm-ld` from lld-19 (Debian's
//!   rustc has no `rust-lld`);
//! - C extensions (a folder with `.c` files and no `Cargo.toml`) are built
//!   with clang-19 against `sdk/c/spindle.h`.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use crate::{
    repo_root,
    toolchain::{self, cargo, run_checked},
    Result,
};

/// The Wasm target of extensions.
pub const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// Where the built `.wasm` files go, relative to the repository root.
pub const EXTENSIONS_OUTPUT_DIR: &str = "target/extensions";

/// Cargo's target directory for the extension build.
const EXTENSIONS_TARGET_DIR: &str = "target/extensions-build";

/// The Wasm linker (Debian package lld-19).
pub const WASM_LD: &str = "/usr/lib/llvm-19/bin/wasm-ld";

/// The C compiler for C extensions (Debian package clang-19).
pub const CLANG: &str = "/usr/lib/llvm-19/bin/clang";

/// Builds every extension; returns the paths of the `.wasm` files.
pub fn build_extensions() -> Result<Vec<PathBuf>> {
    let root = repo_root();
    let output = root.join(EXTENSIONS_OUTPUT_DIR);
    fs::create_dir_all(&output)?;
    let mut built = Vec::new();

    eprintln!("x: building the Rust extensions ({WASM_TARGET})");
    let mut command = cargo(EXTENSIONS_TARGET_DIR);
    command
        .env("RUSTC_BOOTSTRAP", "1")
        .env("RUSTFLAGS", format!("-C linker={WASM_LD}"))
        .args([
            "build",
            "--release",
            "--manifest-path",
            "extensions/Cargo.toml",
        ])
        .args([
            "--target",
            WASM_TARGET,
            "-Zbuild-std=core,alloc,panic_abort",
        ]);
    run_checked(&mut command, "extension build")?;
    let cargo_output = root
        .join(EXTENSIONS_TARGET_DIR)
        .join(WASM_TARGET)
        .join("release");
    for folder in extension_folders(&root)? {
        let name = folder_name(&folder);
        let destination = output.join(format!("{name}.wasm"));
        if folder.join("Cargo.toml").is_file() {
            // Cargo names a cdylib after its crate, with '-' as '_'.
            let artifact = cargo_output.join(format!("{}.wasm", name.replace('-', "_")));
            fs::copy(&artifact, &destination)
                .map_err(|error| format!("{}: {error}", artifact.display()))?;
        } else {
            build_c_extension(&root, &folder, &destination)?;
        }
        built.push(destination);
    }
    for path in &built {
        let size = fs::metadata(path)?.len();
        eprintln!("x:   {} ({size} bytes)", toolchain::display_path(path));
    }
    Ok(built)
}

/// Every folder of `extensions/` holding an extension.
fn extension_folders(root: &Path) -> Result<Vec<PathBuf>> {
    let mut folders = Vec::new();
    for entry in fs::read_dir(root.join("extensions"))? {
        let path = entry?.path();
        if path.is_dir() && (path.join("Cargo.toml").is_file() || !c_sources(&path)?.is_empty()) {
            folders.push(path);
        }
    }
    folders.sort();
    Ok(folders)
}

fn folder_name(folder: &Path) -> String {
    folder
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn c_sources(folder: &Path) -> Result<Vec<PathBuf>> {
    let mut sources = Vec::new();
    for entry in fs::read_dir(folder)? {
        let path = entry?.path();
        if path.extension().is_some_and(|extension| extension == "c") {
            sources.push(path);
        }
    }
    sources.sort();
    Ok(sources)
}

fn build_c_extension(root: &Path, folder: &Path, destination: &Path) -> Result<()> {
    eprintln!("x: building the C extension {}", folder_name(folder));
    let mut command = Command::new(CLANG);
    command
        .current_dir(root)
        .args([
            &format!("--target={WASM_TARGET}"),
            "-O2",
            "-nostdlib",
            "-Wall",
            "-Werror",
        ])
        .arg("-I")
        .arg(root.join("sdk/c"))
        .args(["-Wl,--no-entry", "-Wl,--strip-debug"])
        .arg("-o")
        .arg(destination)
        .args(c_sources(folder)?);
    run_checked(&mut command, "C extension build")
}
