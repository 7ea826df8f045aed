//! The boot archive: a cpio "newc" archive (the `initrd` crate, shared with
//! the kernel), which QEMU hands to the kernel with `-initrd`. It holds
//! every built extension as `ext/<name>.wasm`, every regression module of
//! `wasm/fuzz/regressions/` as `ext/regress-<name>.wasm` (so the kernel
//! tests and the shell can load them), and every user program of `user/`
//! (C, built with `musl-gcc -static`) as `bin/<name>`, and the programs
//! and libraries taken from Debian's packages (fetched by `debian.rs`,
//! listed in `debian::IMAGE_FILES`): `busybox-static` as `bin/busybox`
//! with its applet links, `bash-static` as `bin/bash`, glibc's `ld.so`
//! and `libc.so.6` at their Debian paths, and dynamically linked
//! coreutils and `dash` under `opt/debian/bin/`. The fuzz archive adds
//! generated modules as `fuzz/<case>.wasm` and the seed as `fuzz/seed`.

use std::{
    fs,
    path::{Path, PathBuf},
};

use crate::{extensions, repo_root, Result};

/// Where the boot archive is written, relative to the repository root.
pub const BOOT_ARCHIVE: &str = "target/initrd.cpio";

/// Modules that once broke the kernel, relative to the repository root.
pub const REGRESSIONS_DIRECTORY: &str = "wasm/fuzz/regressions";
/// The image's `/etc`: users, groups, host names and glibc's name
/// services, as a Debian system has them.
pub const ETC_DIRECTORY: &str = "user/etc";

/// A file of an archive: its path inside and its bytes.
pub type ArchiveFile = (String, Vec<u8>);
/// A symbolic link of an archive: its path inside and its target.
type ArchiveLink = (String, String);

/// Where the user programs are built, relative to the repository root.
pub const USER_OUTPUT_DIR: &str = "target/user";

/// Builds every C program of `user/` with `musl-gcc -static`; returns the
/// executables.
pub fn build_user_programs() -> Result<Vec<PathBuf>> {
    let root = repo_root();
    let output = root.join(USER_OUTPUT_DIR);
    fs::create_dir_all(&output)?;
    let mut sources: Vec<PathBuf> = fs::read_dir(root.join("user"))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|extension| extension == "c"))
        .collect();
    sources.sort();
    let mut built = Vec::new();
    for source in sources {
        let name = source
            .file_stem()
            .and_then(|stem| stem.to_str())
            .ok_or_else(|| format!("odd file name {}", source.display()))?
            .to_string();
        let destination = output.join(&name);
        let mut command = std::process::Command::new("musl-gcc");
        command
            .args(["-static", "-O2", "-Wall", "-Wextra", "-Werror", "-o"])
            .arg(&destination)
            .arg(&source)
            .args(extra_flags(&fs::read_to_string(&source)?));
        crate::toolchain::run_checked(
            &mut command,
            &format!("building user/{name}.c with musl-gcc"),
        )?;
        built.push(destination);
    }
    Ok(built)
}

/// The extra compiler words a user program's source asks for on a line
/// `musl-gcc: WORDS` in its first comment (`wxmemory.c` asks for an
/// executable stack).
fn extra_flags(source: &str) -> Vec<String> {
    source
        .lines()
        .take_while(|line| !line.contains("*/") || line.contains("musl-gcc:"))
        .find_map(|line| line.split_once("musl-gcc:"))
        .map(|(_, words)| {
            words
                .trim()
                .trim_end_matches("*/")
                .split_whitespace()
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The extensions and user programs (built now), the regression
/// modules, and Debian's files with their links.
fn boot_files() -> Result<(Vec<ArchiveFile>, Vec<ArchiveLink>)> {
    let mut files = Vec::new();
    let mut links = Vec::new();
    for program in build_user_programs()? {
        files.push((format!("bin/{}", file_name(&program)?), fs::read(&program)?));
    }
    // Programs written by others that the Linux personality runs
    // unchanged, and the libraries they load.
    for file in crate::debian::image_files()? {
        match file {
            crate::debian::ImageFile::Regular(path, bytes) => files.push((path, bytes)),
            crate::debian::ImageFile::Link(path, target) => links.push((path, target)),
        }
    }
    // The files glibc and busybox read to name users, groups and hosts.
    for entry in fs::read_dir(repo_root().join(ETC_DIRECTORY))? {
        let path = entry?.path();
        files.push((format!("etc/{}", file_name(&path)?), fs::read(&path)?));
    }
    for wasm in extensions::build_extensions()? {
        files.push((format!("ext/{}", file_name(&wasm)?), fs::read(&wasm)?));
    }
    for entry in fs::read_dir(repo_root().join(REGRESSIONS_DIRECTORY))? {
        let path = entry?.path();
        if path
            .extension()
            .is_some_and(|extension| extension == "wasm")
        {
            files.push((
                format!("ext/regress-{}", file_name(&path)?),
                fs::read(&path)?,
            ));
        }
    }
    Ok((files, links))
}

fn file_name(path: &Path) -> Result<String> {
    Ok(path
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or_else(|| format!("odd file name {}", path.display()))?
        .to_string())
}

/// The applets of the busybox in the archive, as `(path, target)`
/// symbolic links (`bin/ls` -> `/bin/busybox`): busybox's own list
/// (`--list-full`), asked of the host copy, which is the same x86-64
/// program the guest runs.
fn busybox_links() -> Result<Vec<(String, String)>> {
    let busybox = crate::debian::package("busybox-static")?.join("bin/busybox");
    let output = std::process::Command::new(&busybox)
        .arg("--list-full")
        .output()
        .map_err(|error| format!("cannot run {} --list-full: {error}", busybox.display()))?;
    if !output.status.success() {
        return Err(format!("{} --list-full failed", busybox.display()).into());
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::trim)
        .filter(|path| !path.is_empty() && *path != "bin/busybox")
        .map(|path| (path.to_string(), "/bin/busybox".to_string()))
        .collect())
}

/// Mode of a regular file in the archive: programs (ELF files and `#!`
/// scripts) are executable, everything else is 0644.
fn file_mode(bytes: &[u8]) -> u32 {
    if bytes.starts_with(b"\x7fELF") || bytes.starts_with(b"#!") {
        0o100_755
    } else {
        0o100_644
    }
}

/// Writes `files`, sorted by name, and `links` as an archive at `path`,
/// with busybox's applet links when busybox is among the files.
fn write_archive(
    path: &Path,
    mut files: Vec<ArchiveFile>,
    mut links: Vec<ArchiveLink>,
) -> Result<()> {
    files.sort();
    if files.iter().any(|(name, _)| name == "bin/busybox") {
        links.extend(busybox_links()?);
    }
    let mut entries: Vec<initrd::Entry<'_>> = files
        .iter()
        .map(|(name, bytes)| initrd::Entry {
            mode: file_mode(bytes),
            ..initrd::Entry::file(name, bytes)
        })
        .collect();
    entries.extend(links.iter().map(|(name, target)| initrd::Entry {
        mode: 0o120_777,
        is_regular_file: false,
        ..initrd::Entry::file(name, target.as_bytes())
    }));
    for (index, entry) in entries.iter_mut().enumerate() {
        entry.ino = index as u32 + 1;
    }
    let archive = initrd::write_entries(entries);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    fs::write(path, archive)?;
    Ok(())
}

/// Builds the extensions and writes the boot archive; returns its path.
pub fn build_boot_archive() -> Result<PathBuf> {
    let (files, links) = boot_files()?;
    let count = files.len();
    let path = repo_root().join(BOOT_ARCHIVE);
    write_archive(&path, files, links)?;
    eprintln!("x: boot archive {} ({count} modules)", path.display());
    Ok(path)
}

/// Writes at `destination` a boot archive holding, besides the usual files,
/// the fuzz cases of `cases` (a folder of `<case>.wasm` files and `seed`,
/// as the `fuzz-cases` program writes it) under `fuzz/`; returns its path.
pub fn build_fuzz_archive(cases: &Path, destination: &Path) -> Result<PathBuf> {
    let mut extra = Vec::new();
    for entry in fs::read_dir(cases)? {
        let path = entry?.path();
        extra.push((format!("fuzz/{}", file_name(&path)?), fs::read(&path)?));
    }
    // Case numbers sort as text in the archive; the kernel reads each
    // case's number from its name, so the order does not matter.
    build_archive_with(extra, destination)
}

/// Writes at `destination` a boot archive holding the usual files and
/// `extra` (paths inside the archive, contents); returns its path.
pub fn build_archive_with(extra: Vec<ArchiveFile>, destination: &Path) -> Result<PathBuf> {
    let (mut files, links) = boot_files()?;
    files.extend(extra);
    write_archive(destination, files, links)?;
    Ok(destination.to_path_buf())
}

/// The usual files of the boot archive, gathered once for writing many
/// archives that add to them (`./x ltp` writes one per batch; gathering
/// builds the user programs and the extensions, which takes seconds).
pub struct BaseArchive {
    files: Vec<ArchiveFile>,
    links: Vec<ArchiveLink>,
}

impl BaseArchive {
    /// Builds the extensions and user programs and gathers every file.
    pub fn gather() -> Result<Self> {
        let (files, links) = boot_files()?;
        Ok(Self { files, links })
    }

    /// Writes at `destination` an archive of the usual files plus `extra`
    /// files and `extra_links` (path inside, target); returns its path.
    pub fn write_with(
        &self,
        extra: Vec<ArchiveFile>,
        extra_links: Vec<ArchiveLink>,
        destination: &Path,
    ) -> Result<PathBuf> {
        let mut files = self.files.clone();
        files.extend(extra);
        let mut links = self.links.clone();
        links.extend(extra_links);
        write_archive(destination, files, links)?;
        Ok(destination.to_path_buf())
    }
}

/// Writes `files` alone as a cpio archive at `destination` (for another
/// kernel's initramfs: `./x bench linux` adds a program to the Linux
/// baseline's, `./x stress` stress-ng), with an entry for each folder
/// they are in: Linux's unpacker makes no folder that the archive does
/// not name.
pub fn write_files_archive(mut files: Vec<ArchiveFile>, destination: &Path) -> Result<PathBuf> {
    files.sort();
    let folders: std::collections::BTreeSet<String> = files
        .iter()
        .flat_map(|(name, _)| {
            name.match_indices('/')
                .map(|(at, _)| name[..at].to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    let mut entries: Vec<initrd::Entry<'_>> = folders
        .iter()
        .map(|name| initrd::Entry {
            mode: 0o040_755,
            is_regular_file: false,
            ..initrd::Entry::file(name, &[])
        })
        .collect();
    entries.extend(files.iter().map(|(name, bytes)| initrd::Entry {
        mode: file_mode(bytes),
        ..initrd::Entry::file(name, bytes)
    }));
    for (index, entry) in entries.iter_mut().enumerate() {
        entry.ino = index as u32 + 1;
    }
    fs::write(destination, initrd::write_entries(entries))?;
    Ok(destination.to_path_buf())
}

/// The boot archive, if one has been built.
pub fn boot_archive() -> Option<PathBuf> {
    let path = repo_root().join(BOOT_ARCHIVE);
    path.is_file().then_some(path)
}

/// The files of `HOST:GUEST` (`./x run --add`): a host file, or every file
/// under a host folder, at the guest path (leading `/` dropped: archive
/// paths are relative to the root).
pub fn host_files(addition: &str) -> Result<Vec<ArchiveFile>> {
    let (host, guest) = addition
        .split_once(':')
        .ok_or_else(|| format!("--add {addition}: expected HOST_PATH:GUEST_PATH"))?;
    let guest = guest.trim_start_matches('/').trim_end_matches('/');
    if guest.is_empty() {
        return Err(format!("--add {addition}: the guest path is empty").into());
    }
    let host = Path::new(host);
    let mut files = Vec::new();
    collect(host, guest, &mut files).map_err(|error| format!("--add {addition}: {error}"))?;
    Ok(files)
}

fn collect(host: &Path, guest: &str, files: &mut Vec<ArchiveFile>) -> Result<()> {
    let metadata = fs::metadata(host).map_err(|error| format!("{}: {error}", host.display()))?;
    if metadata.is_dir() {
        let mut entries: Vec<PathBuf> = fs::read_dir(host)?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .collect();
        entries.sort();
        for entry in entries {
            let name = file_name(&entry)?;
            collect(&entry, &format!("{guest}/{name}"), files)?;
        }
    } else {
        files.push((guest.to_string(), fs::read(host)?));
    }
    Ok(())
}
