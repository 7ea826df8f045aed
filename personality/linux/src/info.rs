//! Calls that describe the system: `uname`, `sysinfo`.

use procfs::Source;
use vfs::Errno;

use crate::user;

/// Bytes of each `struct utsname` field.
const FIELD: usize = 65;
/// The system's name as `uname` gives it: programs test it.
pub const SYSTEM_NAME: &[u8] = b"Linux";
/// The release as `uname` gives it: programs parse it as Linux's.
pub const RELEASE: &[u8] = b"6.1.0-spindle";
/// The version as `uname` gives it, naming Spindle.
pub const VERSION: &[u8] = b"#1 SMP Spindle (the Linux personality of an extensible kernel)";

/// `uname(buf)`: the personality answers as Linux (programs test
/// `sysname` and parse `release`), naming Spindle in `version`.
pub fn uname(buffer: u64) -> Result<i64, Errno> {
    let fields: [&[u8]; 6] = [
        SYSTEM_NAME,
        b"spindle",
        RELEASE,
        VERSION,
        b"x86_64",
        b"(none)",
    ];
    let mut record = [0u8; FIELD * 6];
    for (index, field) in fields.iter().enumerate() {
        record[index * FIELD..index * FIELD + field.len()].copy_from_slice(field);
    }
    user::write(buffer, &record)?;
    Ok(0)
}

/// Bytes of x86_64 `struct sysinfo`.
const SYSINFO_BYTES: usize = 112;

/// `sysinfo(info)`: seconds since boot (rounded up, as Linux does), memory
/// in bytes (`mem_unit` 1), no swap, and the number of threads. Load
/// averages are not measured yet: 0.
pub fn sysinfo(system: &dyn Source, buffer: u64) -> Result<i64, Errno> {
    let uptime_ns = system.uptime_ns();
    let memory = system.memory();
    let threads: u64 = system
        .processes()
        .into_iter()
        .filter_map(|pid| system.process(pid))
        .map(|process| process.threads)
        .sum();
    let mut record = [0u8; SYSINFO_BYTES];
    let mut put = |offset: usize, value: u64| {
        record[offset..offset + 8].copy_from_slice(&value.to_le_bytes())
    };
    put(0, uptime_ns.div_ceil(1_000_000_000));
    // loads[3] at 8, 16, 24: 0.
    put(32, memory.total_bytes);
    put(40, memory.free_bytes);
    // sharedram, bufferram, totalswap, freeswap at 48..80: 0.
    record[80..82].copy_from_slice(&(threads.min(u64::from(u16::MAX)) as u16).to_le_bytes());
    // totalhigh, freehigh at 88, 96: 0; mem_unit at 104.
    record[104..108].copy_from_slice(&1u32.to_le_bytes());
    user::write(buffer, &record)?;
    Ok(0)
}
