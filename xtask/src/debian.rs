//! Debian programs for the boot image, fetched as the baseline does
//! (`../shared/baseline/build.sh`): `apt-get download` the package into
//! `target/debian/downloads/` once, then unpack it with `dpkg-deb -x`
//! into `target/debian/<package>/`. No binary is committed; a package
//! that cannot be fetched is an error that says so, never a silent skip.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use crate::{repo_root, Result};

/// Where downloads and unpacked packages go, relative to the repository.
const DEBIAN_DIR: &str = "target/debian";

/// The `.deb` of `package` in `downloads`, if it was fetched before.
fn downloaded(downloads: &Path, package: &str) -> Result<Option<PathBuf>> {
    let prefix = format!("{package}_");
    let mut debs: Vec<PathBuf> = fs::read_dir(downloads)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with(&prefix) && name.ends_with(".deb"))
        })
        .collect();
    debs.sort();
    Ok(debs.pop())
}

fn apt_get_download(downloads: &Path, package: &str) -> Result<bool> {
    let status = Command::new("apt-get")
        .args(["-qq", "-o", "APT::Sandbox::User=root", "download", package])
        .current_dir(downloads)
        .status()
        .map_err(|error| format!("cannot run apt-get to fetch {package}: {error}"))?;
    Ok(status.success())
}

/// Fetches (once) and unpacks Debian's `package`; returns the directory
/// it was unpacked into (its `/` as in the package).
pub fn package(package: &str) -> Result<PathBuf> {
    let root = repo_root().join(DEBIAN_DIR);
    let downloads = root.join("downloads");
    fs::create_dir_all(&downloads)?;
    let deb = match downloaded(&downloads, package)? {
        Some(deb) => deb,
        None => {
            eprintln!("x: fetching Debian's {package} (apt-get download)");
            if !apt_get_download(&downloads, package)? {
                // The package lists may be missing on a fresh machine.
                let updated = Command::new("apt-get").args(["update", "-qq"]).status();
                if !updated.is_ok_and(|status| status.success())
                    || !apt_get_download(&downloads, package)?
                {
                    return Err(format!(
                        "could not fetch Debian's {package} with apt-get download \
                         (is the package registry reachable?)"
                    )
                    .into());
                }
            }
            downloaded(&downloads, package)?
                .ok_or_else(|| format!("apt-get download left no {package}_*.deb"))?
        }
    };
    let unpacked = root.join(package);
    let stamp = unpacked.join(".unpacked-from");
    let source = deb.display().to_string();
    if fs::read_to_string(&stamp).ok().as_deref() != Some(source.as_str()) {
        if unpacked.exists() {
            fs::remove_dir_all(&unpacked)?;
        }
        fs::create_dir_all(&unpacked)?;
        crate::toolchain::run_checked(
            Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&unpacked),
            &format!("unpacking {}", deb.display()),
        )?;
        fs::write(&stamp, &source)?;
    }
    Ok(unpacked)
}
