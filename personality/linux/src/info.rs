//! Calls that describe the system: `uname`.

use vfs::Errno;

use crate::user;

/// Bytes of each `struct utsname` field.
const FIELD: usize = 65;

/// `uname(buf)`: the personality answers as Linux (programs test
/// `sysname` and parse `release`), naming Spindle in `version`.
pub fn uname(buffer: u64) -> Result<i64, Errno> {
    let fields: [&[u8]; 6] = [
        b"Linux",
        b"spindle",
        b"6.1.0-spindle",
        b"#1 SMP Spindle (the Linux personality of an extensible kernel)",
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
