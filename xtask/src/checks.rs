//! The checks people rely on besides the tests (`./x check`, and the first
//! step of `./x test`): formatting, clippy on every crate for both targets,
//! and the documentation, each with warnings as errors; whether
//! `docs/architecture.md`'s crate diagram matches the manifests; and the
//! kernel crate's shape (`kernel_shape`: small, no import cycle).
//!
//! Clippy runs three times: over the host crates (the default members, with
//! their tests), and over the kernel's whole dependency graph for
//! `x86_64-unknown-none`, once with the `testing` feature and once without
//! (code only the test image uses must not leave dead code in the production
//! image). The bare-metal runs share `target/kernel/` and the kernel's
//! `RUSTFLAGS` with the kernel build, so they reuse its standard library.

use std::process::Command;

use crate::toolchain::{
    self, CARGO, KERNEL_BUILD_STD_ARGS, KERNEL_RUSTFLAGS, KERNEL_TARGET, KERNEL_TARGET_DIR,
};
use crate::{architecture, Result};

/// One check: its name as printed, and the command that runs it.
struct Check {
    name: &'static str,
    command: Command,
}

/// Every check, in the order they run (cheapest first).
fn checks() -> Result<Vec<Check>> {
    let mut checks = Vec::new();

    let mut format = toolchain::cargo("target");
    format.args(["fmt", "--all", "--check"]);
    checks.push(Check {
        name: "cargo fmt --check",
        command: format,
    });

    let mut host_clippy = toolchain::cargo("target");
    host_clippy.args([
        "clippy",
        "--keep-going",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]);
    checks.push(Check {
        name: "clippy (host crates, with tests)",
        command: host_clippy,
    });

    for (name, features) in [
        ("clippy (kernel image, x86_64-unknown-none)", None),
        (
            "clippy (testing kernel image, x86_64-unknown-none)",
            Some("testing"),
        ),
    ] {
        let mut kernel_clippy = kernel_cargo("clippy");
        kernel_clippy.args(["--keep-going", "-p", "kernel", "--release"]);
        if let Some(features) = features {
            kernel_clippy.args(["--features", features]);
        }
        kernel_clippy.args(["--", "-D", "warnings"]);
        checks.push(Check {
            name,
            command: kernel_clippy,
        });
    }

    // The host run documents the default members (what builds on the
    // host) but `hal`, whose hardware modules exist only on the kernel's
    // target; the bare-metal run documents the other members and `hal`.
    let metadata = architecture::workspace_metadata()?;
    let host_crates = architecture::member_names(&metadata, true)?;
    let kernel_crates: Vec<String> = architecture::member_names(&metadata, false)?
        .into_iter()
        .filter(|name| {
            name == "hal"
                || BOTH_TARGETS.contains(&name.as_str())
                || !host_crates.contains(name) && !HOST_ONLY.contains(&name.as_str())
        })
        .collect();

    let mut host_doc = toolchain::cargo("target");
    host_doc
        .env("RUSTDOCFLAGS", RUSTDOC_FLAGS)
        .args([
            "doc",
            "--keep-going",
            "--no-deps",
            "--document-private-items",
        ])
        .args(
            host_crates
                .iter()
                .filter(|name| *name != "hal")
                .flat_map(|name| ["-p", name.as_str()]),
        );
    checks.push(Check {
        name: "cargo doc (host crates)",
        command: host_doc,
    });

    let mut kernel_doc = kernel_cargo("doc");
    kernel_doc
        .env("RUSTDOCFLAGS", RUSTDOC_FLAGS)
        .args([
            "--keep-going",
            "--no-deps",
            "--document-private-items",
            "--release",
            "--features",
            "kernel/testing",
        ])
        .args(kernel_crates.iter().flat_map(|name| ["-p", name.as_str()]));
    checks.push(Check {
        name: "cargo doc (kernel-only crates)",
        command: kernel_doc,
    });
    Ok(checks)
}

/// Members that are neither host default members nor part of the kernel:
/// the wasm-peer benchmark, which builds wasmtime (`./x bench wasm-peer`).
const HOST_ONLY: &[&str] = &["bench-wasm-peer"];

/// Crates with code for the kernel's target only besides what builds on
/// the host, documented on both: `vm`, whose implementation of its
/// page-table trait for `hal` builds only there, and the Linux
/// personality, whose machine on `hal` and `sched` builds only there.
const BOTH_TARGETS: &[&str] = &["vm", "linux-personality"];

/// `RUSTDOCFLAGS` of both documentation runs: warnings are errors, except
/// links from public items to private ones, which resolve because private
/// items are documented too (`--document-private-items`: a kernel's readers
/// need its internals).
const RUSTDOC_FLAGS: &str = "-D warnings -A rustdoc::private_intra_doc_links";

/// `cargo SUBCOMMAND` for the kernel's target, with the kernel build's flags.
fn kernel_cargo(subcommand: &str) -> Command {
    let mut command = toolchain::cargo(KERNEL_TARGET_DIR);
    command
        .env("RUSTC_BOOTSTRAP", "1")
        .env("RUSTFLAGS", KERNEL_RUSTFLAGS)
        .args([subcommand, "--target", KERNEL_TARGET])
        .args(KERNEL_BUILD_STD_ARGS);
    command
}

/// Runs every check, printing `check: NAME ... ok|FAILED` for each; returns
/// whether all passed. A check that fails does not stop the others.
pub fn run_all() -> Result<bool> {
    let is_current = crate::architecture::is_current()?;
    println!(
        "check: docs/architecture.md matches cargo metadata ... {}",
        if is_current {
            "ok"
        } else {
            "FAILED (run ./x architecture)"
        }
    );
    let mut is_success = is_current;
    let shape = crate::kernel_shape::measure(&crate::repo_root())?;
    let small = shape.lines <= crate::kernel_shape::MAX_KERNEL_LINES;
    println!(
        "check: kernel/src holds at most {} non-blank lines outside its tests ... {}",
        crate::kernel_shape::MAX_KERNEL_LINES,
        if small {
            format!("ok ({})", shape.lines)
        } else {
            format!("FAILED ({} lines)", shape.lines)
        }
    );
    let acyclic = shape.cycles.is_empty();
    let cycles: Vec<String> = shape.cycles.iter().map(|cycle| cycle.join(", ")).collect();
    println!(
        "check: kernel/src's modules import each other in no cycle ... {}",
        if acyclic {
            String::from("ok")
        } else {
            format!("FAILED (a cycle among: {})", cycles.join("; "))
        }
    );
    is_success &= small && acyclic;
    for mut check in checks()? {
        eprintln!("x: check: {}", check.name);
        let passed = check
            .command
            .status()
            .map_err(|error| format!("cannot start {CARGO}: {error}"))?
            .success();
        println!(
            "check: {} ... {}",
            check.name,
            if passed { "ok" } else { "FAILED" }
        );
        is_success &= passed;
    }
    Ok(is_success)
}
