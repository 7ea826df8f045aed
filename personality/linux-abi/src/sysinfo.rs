//! `struct sysinfo` (`sysinfo`) on x86_64: 112 bytes.

use crate::bytes::put;

/// x86_64 `struct sysinfo` (`linux/sysinfo.h`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sysinfo {
    /// `uptime`: seconds since boot.
    pub uptime: i64,
    /// `loads`: 1, 5 and 15 minute load averages, scaled by 65536.
    pub loads: [u64; 3],
    /// `totalram`: memory, in `mem_unit`s.
    pub totalram: u64,
    /// `freeram`: free memory.
    pub freeram: u64,
    /// `sharedram`: shared memory.
    pub sharedram: u64,
    /// `bufferram`: memory used by buffers.
    pub bufferram: u64,
    /// `totalswap`: swap space.
    pub totalswap: u64,
    /// `freeswap`: free swap space.
    pub freeswap: u64,
    /// `procs`: the number of threads.
    pub procs: u16,
    /// `totalhigh`: high memory.
    pub totalhigh: u64,
    /// `freehigh`: free high memory.
    pub freehigh: u64,
    /// `mem_unit`: the unit of the memory sizes, in bytes.
    pub mem_unit: u32,
}

impl Sysinfo {
    /// Bytes of a `struct sysinfo`.
    pub const BYTES: usize = 112;

    /// The record as user space reads it: uptime@0, loads@8, totalram@32,
    /// freeram@40, sharedram@48, bufferram@56, totalswap@64,
    /// freeswap@72, procs@80, totalhigh@88, freehigh@96, mem_unit@104.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        put(&mut bytes, 0, self.uptime.to_le_bytes());
        for (index, load) in self.loads.iter().enumerate() {
            put(&mut bytes, 8 + index * 8, load.to_le_bytes());
        }
        put(&mut bytes, 32, self.totalram.to_le_bytes());
        put(&mut bytes, 40, self.freeram.to_le_bytes());
        put(&mut bytes, 48, self.sharedram.to_le_bytes());
        put(&mut bytes, 56, self.bufferram.to_le_bytes());
        put(&mut bytes, 64, self.totalswap.to_le_bytes());
        put(&mut bytes, 72, self.freeswap.to_le_bytes());
        put(&mut bytes, 80, self.procs.to_le_bytes());
        put(&mut bytes, 88, self.totalhigh.to_le_bytes());
        put(&mut bytes, 96, self.freehigh.to_le_bytes());
        put(&mut bytes, 104, self.mem_unit.to_le_bytes());
        bytes
    }
}
