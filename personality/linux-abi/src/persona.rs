//! `personality(2)`'s execution domains and flags
//! (`include/uapi/linux/personality.h`).

/// The Linux execution domain: what every process starts with.
pub const PER_LINUX: u32 = 0;
/// Flag: `uname` reports a 2.6 release.
pub const UNAME26: u32 = 0x002_0000;
/// The argument that asks for the persona without changing it.
pub const QUERY_PERSONA: u32 = 0xffff_ffff;
