//! `signalfd4`'s flags and `struct signalfd_siginfo`, what a read of a
//! signal descriptor returns (signalfd(2), `include/uapi/linux/signalfd.h`).

use crate::{
    bytes::put,
    siginfo::{Siginfo, SiginfoFields},
};

/// Close on `execve` (`O_CLOEXEC`).
pub const SFD_CLOEXEC: u64 = 0o2000000;
/// Reads answer `EAGAIN` instead of waiting (`O_NONBLOCK`).
pub const SFD_NONBLOCK: u64 = 0o4000;

/// `struct signalfd_siginfo`: one taken signal as a read returns it
/// (128 bytes, zero past the fields used).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SignalfdSiginfo {
    /// The signal as a `siginfo_t` would tell it.
    pub info: Siginfo,
}

impl SignalfdSiginfo {
    /// Bytes of a `struct signalfd_siginfo`.
    pub const BYTES: usize = 128;

    /// The record as user space reads it: `ssi_signo`@0, `ssi_errno`@4,
    /// `ssi_code`@8, `ssi_pid`@12, `ssi_uid`@16, `ssi_tid`@24,
    /// `ssi_overrun`@32, `ssi_status`@40, `ssi_int`@44, `ssi_ptr`@48,
    /// `ssi_addr`@72.
    pub fn to_bytes(self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        put(&mut bytes, 0, self.info.signo.to_le_bytes());
        put(&mut bytes, 8, self.info.code.to_le_bytes());
        match self.info.fields {
            SiginfoFields::None => {}
            SiginfoFields::Sender { pid, uid } => {
                put(&mut bytes, 12, pid.to_le_bytes());
                put(&mut bytes, 16, uid.to_le_bytes());
            }
            SiginfoFields::Child { pid, uid, status } => {
                put(&mut bytes, 12, pid.to_le_bytes());
                put(&mut bytes, 16, uid.to_le_bytes());
                put(&mut bytes, 40, status.to_le_bytes());
            }
            SiginfoFields::Fault { address } => put(&mut bytes, 72, address.to_le_bytes()),
            SiginfoFields::Timer { id, overrun, value } => {
                put(&mut bytes, 24, id.to_le_bytes());
                put(&mut bytes, 32, overrun.to_le_bytes());
                // `sigev_value` as both its members: `ssi_int`, `ssi_ptr`.
                put(&mut bytes, 44, (value as u32).to_le_bytes());
                put(&mut bytes, 48, value.to_le_bytes());
            }
        }
        bytes
    }
}
