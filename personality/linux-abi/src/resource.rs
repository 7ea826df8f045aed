//! `struct rusage` (`getrusage`, `wait4`, `waitid`): 144 bytes.

use crate::{bytes::put, time::Timeval};

/// `struct rusage`. Linux fills only some of the counters; the others
/// stay 0 as they do here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rusage {
    /// `ru_utime`: processor time in user mode.
    pub utime: Timeval,
    /// `ru_stime`: processor time in the kernel.
    pub stime: Timeval,
    /// `ru_maxrss`: the largest resident size, in kilobytes.
    pub maxrss: i64,
    /// `ru_minflt`: page faults served without I/O.
    pub minflt: i64,
    /// `ru_majflt`: page faults that needed I/O.
    pub majflt: i64,
    /// `ru_inblock`: blocks read from file systems.
    pub inblock: i64,
    /// `ru_oublock`: blocks written to file systems.
    pub oublock: i64,
    /// `ru_nvcsw`: voluntary context switches.
    pub nvcsw: i64,
    /// `ru_nivcsw`: involuntary context switches.
    pub nivcsw: i64,
}

impl Rusage {
    /// Bytes of a `struct rusage`.
    pub const BYTES: usize = 144;

    /// The record as user space reads it: utime@0, stime@16, then 14
    /// longs from 32: maxrss, ixrss, idrss, isrss, minflt@64, majflt@72,
    /// nswap, inblock@88, oublock@96, msgsnd, msgrcv, nsignals,
    /// nvcsw@128, nivcsw@136 (the unnamed ones are unused by Linux: 0).
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        put(&mut bytes, 0, self.utime.to_bytes());
        put(&mut bytes, 16, self.stime.to_bytes());
        put(&mut bytes, 32, self.maxrss.to_le_bytes());
        put(&mut bytes, 64, self.minflt.to_le_bytes());
        put(&mut bytes, 72, self.majflt.to_le_bytes());
        put(&mut bytes, 88, self.inblock.to_le_bytes());
        put(&mut bytes, 96, self.oublock.to_le_bytes());
        put(&mut bytes, 128, self.nvcsw.to_le_bytes());
        put(&mut bytes, 136, self.nivcsw.to_le_bytes());
        bytes
    }
}
