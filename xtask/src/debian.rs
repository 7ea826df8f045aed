//! Debian programs for the boot image, fetched as the baseline does
//! (`../shared/baseline/build.sh`): `apt-get download` the package into
//! `target/debian/downloads/` once, then unpack it with `dpkg-deb -x`
//! into `target/debian/<package>/`. No binary is committed; a package
//! that cannot be fetched is an error that says so, never a silent skip.
//!
//! [`IMAGE_FILES`] lists what of those packages goes into the boot image
//! and where; [`image_files`] collects them.

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

/// What the boot image takes from Debian: (package, path in the package,
/// path in the image). The shared libraries keep their Debian paths, so
/// Debian's own `ld.so` finds them where it looks without a cache
/// (`/lib/x86_64-linux-gnu`, `/usr/lib/x86_64-linux-gnu`); a symbolic
/// link brings what it points to. Debian's dynamically linked programs go
/// under `/opt/debian/bin`, clear of busybox's applet links in `/bin` and
/// `/usr/bin`.
pub const IMAGE_FILES: &[(&str, &str, &str)] = &[
    ("busybox-static", "bin/busybox", "bin/busybox"),
    ("bash-static", "bin/bash-static", "bin/bash"),
    // The dynamic loader, at the path programs name (`PT_INTERP`), and C
    // library.
    (
        "libc6",
        "lib64/ld-linux-x86-64.so.2",
        "lib64/ld-linux-x86-64.so.2",
    ),
    (
        "libc6",
        "lib/x86_64-linux-gnu/libc.so.6",
        "lib/x86_64-linux-gnu/libc.so.6",
    ),
    // What coreutils' `ls` needs besides libc (`readelf -d`).
    (
        "libselinux1",
        "lib/x86_64-linux-gnu/libselinux.so.1",
        "lib/x86_64-linux-gnu/libselinux.so.1",
    ),
    (
        "libpcre2-8-0",
        "usr/lib/x86_64-linux-gnu/libpcre2-8.so.0",
        "usr/lib/x86_64-linux-gnu/libpcre2-8.so.0",
    ),
    ("coreutils", "bin/ls", "opt/debian/bin/ls"),
    ("coreutils", "usr/bin/sort", "opt/debian/bin/sort"),
    ("coreutils", "usr/bin/env", "opt/debian/bin/env"),
    ("dash", "bin/dash", "opt/debian/bin/dash"),
];

/// A file of the image taken from a package.
pub enum ImageFile {
    /// A regular file: its path in the image and its bytes.
    Regular(String, Vec<u8>),
    /// A symbolic link: its path in the image and its target, as in the
    /// package.
    Link(String, String),
}

/// The files of [`IMAGE_FILES`], fetching the packages as needed. A link
/// comes with what it points to (inside the same package), once.
pub fn image_files() -> Result<Vec<ImageFile>> {
    let mut files = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for &(name, inside, guest) in IMAGE_FILES {
        let root = package(name)?;
        collect(
            &root,
            name,
            Path::new(inside),
            Path::new(guest),
            &mut seen,
            &mut files,
        )?;
    }
    Ok(files)
}

/// Adds `inside` (a path in the package unpacked at `root`) to `files` as
/// `guest`, following a symbolic link to its target in the package.
fn collect(
    root: &Path,
    package: &str,
    inside: &Path,
    guest: &Path,
    seen: &mut std::collections::BTreeSet<PathBuf>,
    files: &mut Vec<ImageFile>,
) -> Result<()> {
    if !seen.insert(guest.to_path_buf()) {
        return Ok(());
    }
    // A chain of links longer than this is a loop.
    if seen.len() > 1000 {
        return Err(format!("{package}: too many links from {}", inside.display()).into());
    }
    let host = root.join(inside);
    let guest_name = guest.to_string_lossy().into_owned();
    let metadata = fs::symlink_metadata(&host)
        .map_err(|error| format!("{package} has no {}: {error}", inside.display()))?;
    if metadata.file_type().is_symlink() {
        let target = fs::read_link(&host)?;
        files.push(ImageFile::Link(
            guest_name,
            target.to_string_lossy().into_owned(),
        ));
        // Absolute targets are paths in the package and in the image
        // alike; relative ones are beside the link in both.
        let (inside, guest) = match target.strip_prefix("/") {
            Ok(absolute) => (absolute.to_path_buf(), absolute.to_path_buf()),
            Err(_) => (
                inside.parent().unwrap_or(Path::new("")).join(&target),
                guest.parent().unwrap_or(Path::new("")).join(&target),
            ),
        };
        return collect(root, package, &inside, &guest, seen, files);
    }
    let bytes = fs::read(&host).map_err(|error| format!("{}: {error}", host.display()))?;
    files.push(ImageFile::Regular(guest_name, bytes));
    Ok(())
}
