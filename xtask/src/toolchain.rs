//! Cargo invocations: the kernel build and the host tests.
//!
//! One toolchain builds everything: Debian's Rust (`/usr/bin/cargo`, packages
//! `rustc-web`, `cargo-web`, `rust-web-src`), which ships the library source
//! that `-Zbuild-std` needs for `x86_64-unknown-none`. Every cargo started
//! here gets a cleaned environment (no inherited `RUSTFLAGS`, `RUSTC`,
//! rustup toolchain override, ...; see [`cargo`]) so the same command builds
//! the same thing whether `./x` was run from a shell, from `cargo run`, or
//! from CI. Host artifacts go to `target/`, kernel artifacts to
//! `target/kernel/`: the kernel's `RUSTFLAGS` differ, and sharing one target
//! directory would make the two builds invalidate each other.

use std::{
    env,
    ffi::OsString,
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use crate::{repo_root, Result};

/// The cargo that builds everything (Debian's Rust).
pub const CARGO: &str = "/usr/bin/cargo";

/// Directory of Debian's `ld.lld` (package lld-19, which `./x` installs
/// for `wasm-ld`): `cc -fuse-ld=lld -B<this>` links host binaries with it.
pub const LLD_DIR: &str = "/usr/lib/llvm-19/bin";

/// Target triple of the kernel.
pub const KERNEL_TARGET: &str = "x86_64-unknown-none";

/// `RUSTFLAGS` for the kernel build: the ONE place to change them.
///
/// GNU `ld` links (Debian's rustc has no `rust-lld`), the kernel is linked
/// static at its link address in the top 2 GiB (`code-model=kernel`) by
/// `kernel/linker.ld` (the path is relative to the workspace root, where
/// cargo runs rustc), and frame pointers are kept so panics and the profiler
/// can walk the stack.
pub const KERNEL_RUSTFLAGS: &str = "-C linker=ld -C linker-flavor=ld \
    -C relocation-model=static -C code-model=kernel \
    -C link-arg=-Tkernel/linker.ld -C force-frame-pointers=yes";

/// Cargo arguments that build `core`, `alloc` and `compiler_builtins` from
/// the library source for the bare-metal target (needs `RUSTC_BOOTSTRAP=1`).
pub const KERNEL_BUILD_STD_ARGS: &[&str] = &[
    "-Zbuild-std=core,alloc,compiler_builtins",
    "-Zbuild-std-features=compiler-builtins-mem",
];

/// Kernel target directory, relative to the repository root.
pub const KERNEL_TARGET_DIR: &str = "target/kernel";

/// Variables removed from every cargo's environment: they would select
/// another toolchain, add flags, or move the target directory.
const REMOVED_VARIABLES: &[&str] = &[
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "RUSTC",
    "RUSTDOC",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTC_BOOTSTRAP",
    "RUSTUP_TOOLCHAIN",
    "CARGO",
];

/// `CARGO_*` variables kept (user preferences that do not change output).
const KEPT_CARGO_PREFIXES: &[&str] = &[
    "CARGO_HOME",
    "CARGO_TERM_",
    "CARGO_NET_",
    "CARGO_HTTP_",
    "CARGO_REGISTRIES_",
    "CARGO_REGISTRY_",
];

/// Cargo profile for the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// `--release`: optimised; the default for run, test and bench because
    /// TCG runs optimised code many times faster.
    Release,
    /// The dev profile (`target/kernel/.../debug`).
    Debug,
}

impl Profile {
    /// Name of the profile's output directory.
    pub fn directory(self) -> &'static str {
        match self {
            Self::Release => "release",
            Self::Debug => "debug",
        }
    }
}

/// Which kernel image to build: the two differ only in the `testing`
/// feature, so they share every dependency's build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Image {
    /// What a user boots (`./x run`, `./x build`, `./x stress`): no test code.
    Production,
    /// With the in-kernel tests, benchmarks and fuzz drivers (feature
    /// `testing`): `./x test`, `./x bench`, `./x fuzz`.
    Testing,
}

impl Image {
    /// The file name the image is kept under beside cargo's output, so that
    /// building one does not leave the other's ELF under its name.
    pub fn file_name(self) -> &'static str {
        match self {
            Self::Production => "spindle",
            Self::Testing => "spindle-testing",
        }
    }
}

/// A `cargo` command in the repository root with a cleaned environment:
/// `/usr/bin` first on `PATH`, toolchain overrides and flags removed, and
/// `CARGO_TARGET_DIR` set to `target_dir` (relative to the root).
pub fn cargo(target_dir: &str) -> Command {
    let root = repo_root();
    let mut command = Command::new(CARGO);
    command.current_dir(&root);
    for (name, _) in env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        let is_cargo_setting = name.starts_with("CARGO_")
            && !KEPT_CARGO_PREFIXES
                .iter()
                .any(|prefix| name.starts_with(prefix));
        if is_cargo_setting || REMOVED_VARIABLES.contains(&name) {
            command.env_remove(name);
        }
    }
    command.env("PATH", debian_first_path());
    command.env("CARGO_TARGET_DIR", root.join(target_dir));
    command
}

/// `PATH` with `/usr/bin` and `/bin` in front, so `rustc`, `ld` and `cc`
/// come from Debian even when rustup's proxies are on the inherited `PATH`.
pub fn debian_first_path() -> OsString {
    let mut paths = vec![PathBuf::from("/usr/bin"), PathBuf::from("/bin")];
    if let Some(inherited) = env::var_os("PATH") {
        paths.extend(env::split_paths(&inherited));
    }
    env::join_paths(paths).unwrap_or_else(|_| OsString::from("/usr/bin:/bin"))
}

/// Environment variable naming a prebuilt kernel ELF to boot instead of
/// building one (for bisecting, or for trying the harness on another image).
pub const KERNEL_OVERRIDE_VARIABLE: &str = "SPINDLE_KERNEL";

/// Builds the kernel image and returns the path of its ELF file (or returns
/// the image named by [`KERNEL_OVERRIDE_VARIABLE`], without building).
pub fn build_kernel(profile: Profile, image: Image) -> Result<PathBuf> {
    if let Some(path) = env::var_os(KERNEL_OVERRIDE_VARIABLE) {
        let path = PathBuf::from(path);
        eprintln!(
            "x: {KERNEL_OVERRIDE_VARIABLE} is set: booting {} without building",
            path.display()
        );
        if !path.is_file() {
            return Err(format!(
                "{KERNEL_OVERRIDE_VARIABLE}: {} is not a file",
                path.display()
            )
            .into());
        }
        return Ok(path);
    }
    let mut command = cargo(KERNEL_TARGET_DIR);
    command
        .env("RUSTC_BOOTSTRAP", "1")
        .env("RUSTFLAGS", KERNEL_RUSTFLAGS)
        .args(["build", "-p", "kernel", "--target", KERNEL_TARGET])
        .args(KERNEL_BUILD_STD_ARGS);
    if profile == Profile::Release {
        command.arg("--release");
    }
    if image == Image::Testing {
        command.args(["--features", "testing"]);
    }
    eprintln!(
        "x: building the {} kernel image ({} profile)",
        match image {
            Image::Production => "production",
            Image::Testing => "testing",
        },
        profile.directory()
    );
    run_checked(&mut command, "kernel build")?;
    let built = kernel_output_directory(profile).join("kernel");
    if !built.is_file() {
        return Err(format!("kernel build succeeded but {} is missing", built.display()).into());
    }
    let elf = kernel_elf(profile, image);
    fs::copy(&built, &elf).map_err(|error| {
        format!(
            "cannot copy {} to {}: {error}",
            built.display(),
            elf.display()
        )
    })?;
    crate::image::build_boot_archive()?;
    Ok(elf)
}

/// Where cargo leaves the kernel build of `profile`.
fn kernel_output_directory(profile: Profile) -> PathBuf {
    repo_root()
        .join(KERNEL_TARGET_DIR)
        .join(KERNEL_TARGET)
        .join(profile.directory())
}

/// Where [`build_kernel`] leaves the ELF file of `image`
/// (`target/kernel/x86_64-unknown-none/<profile>/spindle[-testing]`).
pub fn kernel_elf(profile: Profile, image: Image) -> PathBuf {
    kernel_output_directory(profile).join(image.file_name())
}

/// Runs the host unit tests of every default workspace member (everything
/// but the bare-metal kernel), output passed through. Returns whether they
/// passed.
pub fn run_host_tests() -> Result<bool> {
    // The runtime's tests load the shipped extensions: build them first, so
    // a clean clone tests them instead of failing for want of inputs.
    crate::extensions::build_extensions()?;
    let mut command = cargo("target");
    // Every test binary runs even if an earlier one fails.
    command.args(["test", "--no-fail-fast"]);
    eprintln!("x: running host unit tests (cargo test --no-fail-fast)");
    Ok(command.status()?.success())
}

/// Runs `command`, failing with `what` in the message if it does not succeed.
pub fn run_checked(command: &mut Command, what: &str) -> Result<()> {
    let status = command
        .status()
        .map_err(|error| format!("{what}: cannot start {:?}: {error}", command.get_program()))?;
    if !status.success() {
        return Err(format!("{what} failed ({status})").into());
    }
    Ok(())
}

/// Path relative to the repository root when it is inside it (for messages).
pub fn display_path(path: &Path) -> String {
    let root = repo_root();
    path.strip_prefix(&root)
        .unwrap_or(path)
        .display()
        .to_string()
}
