//! Moving a running extension from one tier to another
//! (docs/design/0008-native-engine.md, "Tiers"): a [`Snapshot`] of what
//! the code changes (linear memory, mutable globals, the exports the
//! runtime resolved, in [`super::ExportRef`] order), taken from the old
//! instance under its lock, and a [`Takeover`] the new engine prepared
//! beforehand, off the lock, that only has to copy it in.
//!
//! wasmi shows only exported globals, so a module that may tier up is
//! given to wasmi with each mutable global exported as well
//! ([`export_mutable_globals`]), under a name starting with
//! [`GLOBAL_EXPORT_PREFIX`]; nothing else changes in the module.

use alloc::{format, string::String, vec::Vec};

use wasmparser::{Parser, Payload};

use crate::state::ExtensionState;

/// What an extension's code has changed since instantiation.
pub struct Snapshot {
    /// Linear memory, whole.
    pub memory: Vec<u8>,
    /// Each mutable global's index and value (as 64 bits).
    pub globals: Vec<(u32, u64)>,
    /// The exports the runtime resolved, by export reference.
    pub exports: Vec<String>,
}

/// A new tier's instance, ready but for the state it takes over.
pub trait Takeover: Send {
    /// Whether `snapshot` fits this module (memory within its limit,
    /// globals that exist and are mutable), with room made for it when
    /// it does (the memory grown to its size).
    fn accepts(&mut self, snapshot: &Snapshot) -> bool;
    /// The instance, with `snapshot` copied in and owning `state`. Cannot
    /// fail once [`Takeover::accepts`] said yes.
    fn finish(
        self: alloc::boxed::Box<Self>,
        snapshot: Snapshot,
        state: ExtensionState,
    ) -> alloc::boxed::Box<dyn super::Instance>;
}

/// The prefix of the names under which [`export_mutable_globals`] exports
/// globals (a name no toolchain emits; a module that uses it anyway is not
/// rewritten and cannot tier up).
pub const GLOBAL_EXPORT_PREFIX: &str = "spindle:global:";

/// The export section's id.
const EXPORT_SECTION: u8 = 7;
/// Sections that come after the export section (start, element, code,
/// data, data count).
const AFTER_EXPORTS: [u8; 5] = [8, 9, 10, 11, 12];
/// An export's kind: a global.
const GLOBAL_KIND: u8 = 3;

fn leb(mut value: u32, out: &mut Vec<u8>) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn read_leb(bytes: &[u8], at: &mut usize) -> Option<u32> {
    let mut value: u32 = 0;
    for shift in (0..35).step_by(7) {
        let byte = *bytes.get(*at)?;
        *at += 1;
        value |= u32::from(byte & 0x7f).checked_shl(shift)?;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// The indices of the module's mutable globals (extensions import no
/// globals, so these are the global section's positions).
pub fn mutable_globals(bytes: &[u8]) -> Vec<u32> {
    let mut found = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        let Ok(Payload::GlobalSection(reader)) = payload else {
            continue;
        };
        for (index, global) in reader.into_iter().enumerate() {
            if global.is_ok_and(|global| global.ty.mutable) {
                found.push(index as u32);
            }
        }
    }
    found
}

/// `bytes` (a module the kernel validated) with `globals` exported as
/// `GLOBAL_EXPORT_PREFIX` and their index; `None` if the module cannot be
/// read that way or already uses the prefix.
pub fn export_mutable_globals(bytes: &[u8], globals: &[u32]) -> Option<Vec<u8>> {
    if bytes.len() < 8
        || bytes
            .windows(GLOBAL_EXPORT_PREFIX.len())
            .any(|w| w == GLOBAL_EXPORT_PREFIX.as_bytes())
    {
        return None;
    }
    let mut extra = Vec::new();
    for &index in globals {
        let name = format!("{GLOBAL_EXPORT_PREFIX}{index}");
        leb(name.len() as u32, &mut extra);
        extra.extend_from_slice(name.as_bytes());
        extra.push(GLOBAL_KIND);
        leb(index, &mut extra);
    }
    let section = |count: u32, entries: &[u8], out: &mut Vec<u8>| {
        let mut content = Vec::new();
        leb(count, &mut content);
        content.extend_from_slice(entries);
        content.extend_from_slice(&extra);
        out.push(EXPORT_SECTION);
        leb(content.len() as u32, out);
        out.extend_from_slice(&content);
    };
    let added = globals.len() as u32;
    let mut out = Vec::with_capacity(bytes.len() + extra.len() + 8);
    out.extend_from_slice(&bytes[..8]);
    let mut at = 8;
    let mut done = false;
    while at < bytes.len() {
        let start = at;
        let id = bytes[at];
        at += 1;
        let size = read_leb(bytes, &mut at)? as usize;
        let end = at.checked_add(size).filter(|&end| end <= bytes.len())?;
        if !done && id == EXPORT_SECTION {
            let mut entries_at = at;
            let count = read_leb(bytes, &mut entries_at)?;
            section(count.checked_add(added)?, &bytes[entries_at..end], &mut out);
            done = true;
        } else {
            if !done && AFTER_EXPORTS.contains(&id) {
                section(added, &[], &mut out);
                done = true;
            }
            out.extend_from_slice(&bytes[start..end]);
        }
        at = end;
    }
    if !done {
        section(added, &[], &mut out);
    }
    Some(out)
}
