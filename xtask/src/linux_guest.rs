//! Booting the Linux baseline (`../shared/baseline/build.sh`'s kernel and
//! initramfs) as a guest that runs one shell script, on the same QEMU
//! machine and CPU model as Spindle, so that `./x stress` and `./x ltp
//! --linux` compare like for like.

use std::{
    fs,
    path::{Path, PathBuf},
    time::Duration,
};

use crate::{
    image::{self, ArchiveFile},
    qemu::{Accel, BootConfig, Guest},
    Result,
};

/// The baseline's kernel command line; on q35 under TCG Linux needs
/// `no_timer_check` (../shared/baseline/README.md).
const COMMAND_LINE: &str = "console=ttyS0 quiet panic=1 no_timer_check";

/// Boots the baseline in `baseline` (its output folder) with `files`
/// added to its initramfs and an `/init` that mounts the usual file
/// systems, brings up loopback, runs `script` and powers off. The
/// combined initramfs is written in `work` (a folder of the caller's,
/// one per concurrent boot). QEMU is killed after `deadline`.
pub fn boot(
    baseline: &Path,
    accel: Accel,
    mut files: Vec<ArchiveFile>,
    script: &str,
    work: &Path,
    deadline: Duration,
) -> Result<Guest> {
    let init = format!(
        "#!/bin/sh\n\
         mount -t proc proc /proc\n\
         mount -t sysfs sysfs /sys\n\
         mount -t devtmpfs devtmpfs /dev\n\
         mount -t tmpfs tmpfs /tmp\n\
         ip link set lo up\n\
         echo\n\
         {script}\
         poweroff -f\n"
    );
    files.push(("init".to_string(), init.into_bytes()));
    fs::create_dir_all(work)?;
    let added = image::write_files_archive(files, &work.join("added.cpio"))?;
    let mut initramfs = fs::read(baseline.join("initramfs.cpio.gz"))?;
    // Linux reads an uncompressed archive only at a 4-byte boundary.
    initramfs.resize(initramfs.len().next_multiple_of(4), 0);
    initramfs.extend(fs::read(added)?);
    let initrd: PathBuf = work.join("initramfs.cpio.gz");
    fs::write(&initrd, initramfs)?;
    let kernel = baseline.join("vmlinux");
    let mut config = BootConfig::new(&kernel, "exec", accel);
    config.append = COMMAND_LINE.to_string();
    config.initrd = Some(initrd);
    Guest::boot(&config, deadline)
}
