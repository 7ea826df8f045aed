//! Checks the unsafe-code policy (docs/design/0001-boot-memory-threads.md):
//! `unsafe` is confined to `hal` and the native engine's entry into
//! generated code, enforced by lints.
//!
//! Every workspace member except `hal` and `native-entry` (the entry into
//! generated code and its callbacks, docs/design/0008-native-engine.md,
//! "Entering generated code") must inherit the workspace lints
//! (`[lints] workspace = true`, where `unsafe_code = "forbid"`); no Rust
//! source outside those two may mention `unsafe_code` in an attribute
//! other than `forbid(unsafe_code)` (an opt-out); and no member but the
//! extension runtime (`wasm`) may depend on `native-entry`, whose safe
//! functions trust their caller to enter only compiled code. Code built
//! for wasm32 (the SDK, extensions) is not a workspace member: the kernel
//! validates it instead.

use std::{fs, path::Path};

/// The crates allowed to contain `unsafe`: `hal`, and the entry into
/// generated code.
const UNSAFE_CRATES: [&str; 2] = ["hal", ENTRY_CRATE];

/// The entry into generated code and its callbacks.
const ENTRY_CRATE: &str = "wasm/native-entry";

/// Its package name, as dependents name it.
const ENTRY_PACKAGE: &str = "native-entry";

/// The one crate that may depend on it: the extension runtime.
const ENTRY_DEPENDENT: &str = "wasm";

/// Workspace member paths named by `members = [...]` in the root manifest.
fn workspace_members(root_manifest: &str) -> Vec<String> {
    let Some(start) = root_manifest.find("\nmembers") else {
        return Vec::new();
    };
    let rest = &root_manifest[start..];
    let (Some(open), Some(close)) = (rest.find('['), rest.find(']')) else {
        return Vec::new();
    };
    rest[open + 1..close]
        .split(',')
        .map(|member| member.trim().trim_matches('"').to_string())
        .filter(|member| !member.is_empty())
        .collect()
}

/// Whether `manifest` names `package` as a dependency of any kind.
fn depends_on(manifest: &str, package: &str) -> bool {
    manifest.lines().any(|line| {
        let line = line.trim_start();
        !line.starts_with('#')
            && line
                .strip_prefix(package)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
    })
}

/// Whether Rust source `text` has an attribute that lowers `unsafe_code`
/// below `forbid` (`allow`, `warn`, `expect`, or `deny`, which an inner
/// `allow` could then override).
fn opts_out(text: &str) -> bool {
    text.lines().any(|line| {
        let line = line.trim_start();
        line.starts_with('#')
            && ["allow(", "warn(", "expect(", "deny("]
                .iter()
                .any(|level| line.contains(&format!("{level}unsafe_code")))
    })
}

fn rust_files(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
}

/// Returns every violation of the policy in the workspace at `root`.
pub fn violations(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let manifest = fs::read_to_string(root.join("Cargo.toml")).unwrap_or_default();
    let members = workspace_members(&manifest);
    if members.is_empty() {
        found.push("no workspace members found in Cargo.toml".to_string());
    }
    if !manifest.contains("unsafe_code = \"forbid\"") {
        found.push("the workspace lints do not forbid unsafe_code".to_string());
    }
    for member in &members {
        let member_manifest =
            fs::read_to_string(root.join(member).join("Cargo.toml")).unwrap_or_default();
        if *member != ENTRY_CRATE
            && *member != ENTRY_DEPENDENT
            && depends_on(&member_manifest, ENTRY_PACKAGE)
        {
            found.push(format!(
                "{member}/Cargo.toml depends on {ENTRY_PACKAGE}, which only {ENTRY_DEPENDENT} may"
            ));
        }
        if UNSAFE_CRATES.contains(&member.as_str()) {
            continue;
        }
        let inherits = member_manifest
            .split("[lints]")
            .nth(1)
            .is_some_and(|rest| rest.trim_start().starts_with("workspace = true"));
        if !inherits {
            found.push(format!(
                "{member}/Cargo.toml does not inherit the workspace lints"
            ));
        }
        let mut files = Vec::new();
        rust_files(&root.join(member), &mut files);
        for file in files {
            // A nested member (`wasm/native-entry` inside `wasm`) is
            // checked as itself.
            if UNSAFE_CRATES
                .iter()
                .any(|unsafe_crate| file.starts_with(root.join(unsafe_crate)))
            {
                continue;
            }
            let text = fs::read_to_string(&file).unwrap_or_default();
            if opts_out(&text) {
                found.push(format!("{} opts out of unsafe_code", file.display()));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_parsed_from_the_root_manifest() {
        let manifest = "[workspace]\nmembers = [\"xtask\", \"hal\",\n \"services/sched\"]\n";
        assert_eq!(
            workspace_members(manifest),
            ["xtask", "hal", "services/sched"]
        );
    }

    #[test]
    fn dependencies_on_the_entry_are_found() {
        let manifest =
            "[dependencies]\n# native-entry = nothing\nnative-entry = { path = \"x\" }\n";
        assert!(depends_on(manifest, ENTRY_PACKAGE));
        assert!(!depends_on(
            "[dependencies]\nnative-entryx = \"1\"\n",
            ENTRY_PACKAGE
        ));
        assert!(!depends_on(
            "# native-entry = { path = \"x\" }\n",
            ENTRY_PACKAGE
        ));
    }

    #[test]
    fn opting_out_is_found() {
        assert!(opts_out("#![allow(unsafe_code)]\n"));
        assert!(opts_out("  #[deny(unsafe_code)]\nfn f() {}\n"));
        assert!(!opts_out("#![forbid(unsafe_code)]\n"));
        assert!(!opts_out("// allow(unsafe_code) in a comment\n"));
    }

    #[test]
    fn this_workspace_follows_the_policy() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        assert_eq!(violations(root), Vec::<String>::new());
    }
}
