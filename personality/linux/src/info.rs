//! Calls that describe the system: `uname`, `sysinfo`, and the names a
//! system administrator sets (`sethostname`, `setdomainname`).

use linux_abi::sysinfo::Sysinfo;
use procfs::Source;
use vfs::Errno;

use alloc::vec::Vec;

use crate::{credentials::CAP_SYS_ADMIN, user, LinuxProcess};

/// Bytes of each `struct utsname` field.
const FIELD: usize = 65;
/// The system's name as `uname` gives it: programs test it.
pub const SYSTEM_NAME: &[u8] = b"Linux";
/// The release as `uname` gives it: programs parse it as Linux's.
pub const RELEASE: &[u8] = b"6.1.0-spindle";
/// The version as `uname` gives it, naming Spindle.
pub const VERSION: &[u8] = b"#1 SMP Spindle (the Linux personality of an extensible kernel)";

/// Longest host or domain name (`__NEW_UTS_LEN`): the field less its
/// NUL.
pub const MAX_NAME: usize = FIELD - 1;

/// The names of the system that root may change (Linux's UTS namespace):
/// the host name and the NIS domain name.
pub struct SystemNames {
    names: spin::Mutex<(Vec<u8>, Vec<u8>)>,
}

impl Default for SystemNames {
    /// Host `spindle`, no domain (`(none)`, as Linux prints it).
    fn default() -> Self {
        SystemNames {
            names: spin::Mutex::new((b"spindle".to_vec(), b"(none)".to_vec())),
        }
    }
}

impl SystemNames {
    /// The host name and the domain name now.
    pub fn host_and_domain(&self) -> (Vec<u8>, Vec<u8>) {
        self.names.lock().clone()
    }
}

/// Which name `sethostname` or `setdomainname` sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Name {
    /// The host name (`uname`'s `nodename`).
    Host,
    /// The domain name (`uname`'s `domainname`).
    Domain,
}

/// `sethostname(name, len)` or `setdomainname`: `EPERM` without
/// `CAP_SYS_ADMIN`, `EINVAL` for a length below 0 or above 64 (an
/// `int`), `EFAULT` for a bad name.
pub fn set_name(
    names: &SystemNames,
    process: &LinuxProcess,
    which: Name,
    name: u64,
    length: u64,
) -> Result<i64, Errno> {
    if !process.credentials().capable(CAP_SYS_ADMIN) {
        return Err(Errno::EPERM);
    }
    let length = usize::try_from(length as i32).map_err(|_| Errno::EINVAL)?;
    if length > MAX_NAME {
        return Err(Errno::EINVAL);
    }
    let mut bytes = alloc::vec![0u8; length];
    user::read(name, &mut bytes)?;
    let mut names = names.names.lock();
    match which {
        Name::Host => names.0 = bytes,
        Name::Domain => names.1 = bytes,
    }
    Ok(0)
}

/// `uname(buf)`: the personality answers as Linux (programs test
/// `sysname` and parse `release`), naming Spindle in `version`; the host
/// and domain names are the system's. A process whose persona has
/// `UNAME26` is told a 2.6 release ([`crate::persona::release_for`]).
pub fn uname(names: &SystemNames, persona: u32, buffer: u64) -> Result<i64, Errno> {
    let (host, domain) = names.host_and_domain();
    let release = crate::persona::release_for(persona, RELEASE);
    let fields: [&[u8]; 6] = [SYSTEM_NAME, &host, &release, VERSION, b"x86_64", &domain];
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
