//! `personality(persona)`: a process's execution domain. Spindle runs
//! Linux programs only, so the persona changes nothing but what
//! `uname` says with `UNAME26`, which makes old programs that parse
//! "2.6.x" releases run (Linux's `override_release`); the rest of the
//! word is kept and given back, as Linux keeps it.

use alloc::{format, vec::Vec};
use core::sync::atomic::Ordering;

use linux_abi::persona::{PER_LINUX as LINUX, QUERY_PERSONA, UNAME26};
use vfs::Errno;

use crate::LinuxProcess;

/// The persona every process starts with (`PER_LINUX`).
pub const PER_LINUX: u32 = LINUX;

impl LinuxProcess {
    /// Its persona (`personality(2)`).
    pub fn persona(&self) -> u32 {
        self.persona.load(Ordering::Relaxed)
    }
}

/// `personality(persona)`: the old persona; the new one is set unless it
/// is `0xffffffff` (a query). Linux checks nothing else: any word is
/// kept. The argument is an `unsigned int`: only its low 32 bits count.
pub fn personality(process: &LinuxProcess, persona: u64) -> Result<i64, Errno> {
    let persona = persona as u32;
    let old = if persona == QUERY_PERSONA {
        process.persona()
    } else {
        process.persona.swap(persona, Ordering::Relaxed)
    };
    Ok(i64::from(old))
}

/// The release `uname` gives a process of `persona`: `release` itself,
/// or with `UNAME26` "2.6." and 60 plus its minor number, then what
/// follows its numbers (Linux's `override_release`: "6.1.0-spindle"
/// becomes "2.6.61-spindle").
pub fn release_for(persona: u32, release: &[u8]) -> Vec<u8> {
    if persona & UNAME26 == 0 {
        return release.to_vec();
    }
    // The numbers end at the third dot or at anything else.
    let mut dots = 0;
    let numbers = release
        .iter()
        .position(|&byte| {
            if byte == b'.' {
                dots += 1;
                dots >= 3
            } else {
                !byte.is_ascii_digit()
            }
        })
        .unwrap_or(release.len());
    let minor: u32 = release
        .split(|&byte| byte == b'.')
        .nth(1)
        .and_then(|field| {
            let digits = field
                .iter()
                .take_while(|byte| byte.is_ascii_digit())
                .count();
            core::str::from_utf8(&field[..digits]).ok()?.parse().ok()
        })
        .unwrap_or(0);
    let mut text = format!("2.6.{}", minor + 60).into_bytes();
    text.extend_from_slice(&release[numbers..]);
    text
}
