//! The boot archive: every built extension as `ext/<name>.wasm` in a cpio
//! "newc" archive (the `initrd` crate, shared with the kernel), which QEMU
//! hands to the kernel with `-initrd`.

use std::{fs, path::PathBuf};

use crate::{extensions, repo_root, Result};

/// Where the boot archive is written, relative to the repository root.
pub const BOOT_ARCHIVE: &str = "target/initrd.cpio";

/// Builds the extensions and writes the boot archive; returns its path.
pub fn build_boot_archive() -> Result<PathBuf> {
    let mut files = Vec::new();
    for wasm in extensions::build_extensions()? {
        let name = wasm
            .file_name()
            .and_then(|name| name.to_str())
            .ok_or_else(|| format!("odd extension file name {}", wasm.display()))?
            .to_string();
        files.push((format!("ext/{name}"), fs::read(&wasm)?));
    }
    files.sort();
    let archive = initrd::write_archive(
        files
            .iter()
            .map(|(name, bytes)| (name.as_str(), bytes.as_slice())),
    );
    let path = repo_root().join(BOOT_ARCHIVE);
    fs::write(&path, archive)?;
    eprintln!(
        "x: boot archive {} ({} extensions)",
        path.display(),
        files.len()
    );
    Ok(path)
}

/// The boot archive, if one has been built.
pub fn boot_archive() -> Option<PathBuf> {
    let path = repo_root().join(BOOT_ARCHIVE);
    path.is_file().then_some(path)
}
