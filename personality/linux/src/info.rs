//! Calls that describe the system: `uname`, `sysinfo`.

use linux_abi::sysinfo::Sysinfo;
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
    let record = Sysinfo {
        uptime: uptime_ns.div_ceil(1_000_000_000) as i64,
        totalram: memory.total_bytes,
        freeram: memory.free_bytes,
        procs: threads.min(u64::from(u16::MAX)) as u16,
        mem_unit: 1,
        ..Sysinfo::default()
    };
    user::write(buffer, &record.to_bytes())?;
    Ok(0)
}
