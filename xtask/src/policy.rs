//! Checks the unsafe-code policy (docs/design/0001-boot-memory-threads.md:
//! `hal` holds all of the unsafe code): `unsafe` is confined to `hal`,
//! enforced by lints.
//!
//! Every workspace member except `hal` must inherit the workspace lints
//! (`[lints] workspace = true`, where `unsafe_code = "forbid"`), and no Rust
//! source outside `hal` may mention `unsafe_code` in an attribute (which is
//! how a crate would opt out). One exception: the native engine's entry
//! into generated code (`wasm/src/engine/native/entry.rs`), whose crate
//! restates the lints with `unsafe_code = "deny"` so that file alone can
//! allow it. Code built for wasm32 (the SDK, extensions) is
//! not a workspace member: the kernel validates it instead.

use std::{fs, path::Path};

/// The one crate allowed to contain `unsafe`.
const UNSAFE_CRATE: &str = "hal";

/// The one crate outside `hal` with an `unsafe` module, which restates the
/// workspace lints with `unsafe_code = "deny"` so that module can allow it.
const ENTRY_CRATE: &str = "wasm";

/// That module: the native engine's entry into generated code and its
/// callbacks (docs/design/0008-native-engine.md, "Entering generated code").
const ENTRY_MODULE: &str = "wasm/src/engine/native/entry.rs";

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
    for member in members.iter().filter(|member| *member != UNSAFE_CRATE) {
        let member_manifest =
            fs::read_to_string(root.join(member).join("Cargo.toml")).unwrap_or_default();
        let inherits = member_manifest
            .split("[lints]")
            .nth(1)
            .is_some_and(|rest| rest.trim_start().starts_with("workspace = true"));
        let denies = *member == ENTRY_CRATE
            && member_manifest
                .split("[lints.rust]")
                .nth(1)
                .is_some_and(|rest| rest.trim_start().starts_with("unsafe_code = \"deny\""));
        if !inherits && !denies {
            found.push(format!(
                "{member}/Cargo.toml does not inherit the workspace lints"
            ));
        }
        let mut files = Vec::new();
        rust_files(&root.join(member), &mut files);
        for file in files {
            if file == root.join(ENTRY_MODULE) {
                continue;
            }
            let text = fs::read_to_string(&file).unwrap_or_default();
            let opts_out = text.lines().any(|line| {
                let line = line.trim_start();
                line.starts_with('#')
                    && ["allow(", "warn(", "expect("]
                        .iter()
                        .any(|level| line.contains(&format!("{level}unsafe_code")))
            });
            if opts_out {
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
    fn this_workspace_follows_the_policy() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        assert_eq!(violations(root), Vec::<String>::new());
    }
}
