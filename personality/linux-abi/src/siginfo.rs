//! `siginfo_t`: what a signal handler with `SA_SIGINFO`, and `waitid`,
//! learn about a signal (128 bytes).

use crate::bytes::put;

/// Bytes of a `siginfo_t`.
pub const SIGINFO_BYTES: usize = 128;

/// A `siginfo_t`: the signal, its `si_code`, and the union member that
/// the code selects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Siginfo {
    /// `si_signo`.
    pub signo: i32,
    /// `si_code`: where the signal came from (`SI_USER`, `CLD_EXITED`,
    /// `SEGV_MAPERR`, ...).
    pub code: i32,
    /// The fields after the header.
    pub fields: SiginfoFields,
}

/// The union of `siginfo_t`, at offset 16: which member is in use
/// follows from the signal and its code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SiginfoFields {
    /// Nothing more (a signal the kernel sent).
    #[default]
    None,
    /// `_kill`: the sender (`kill`, `tgkill`).
    Sender {
        /// `si_pid`.
        pid: i32,
        /// `si_uid`.
        uid: u32,
    },
    /// `_sigchld`: a child's change (`SIGCHLD`, `waitid`).
    Child {
        /// `si_pid`.
        pid: i32,
        /// `si_uid`.
        uid: u32,
        /// `si_status`: the exit status or the signal.
        status: i32,
    },
    /// `_sigfault`: the address of a fault (`SIGSEGV`, `SIGBUS`, ...).
    Fault {
        /// `si_addr`.
        address: u64,
    },
    /// `_timer`: a `timer_create` timer's expiry (`SI_TIMER`).
    Timer {
        /// `si_timerid`: the timer's id.
        id: i32,
        /// `si_overrun`: the periods it let go by past the first.
        overrun: i32,
        /// `si_value`: the timer's `sigev_value`.
        value: u64,
    },
}

impl Siginfo {
    /// The record as user space reads it: `si_signo`@0, `si_errno`@4
    /// (0), `si_code`@8, then the union at 16 (`si_pid`@16, `si_uid`@20,
    /// `si_status`@24; or `si_addr`@16; or `si_timerid`@16,
    /// `si_overrun`@20, `si_value`@24).
    pub fn to_bytes(&self) -> [u8; SIGINFO_BYTES] {
        let mut bytes = [0; SIGINFO_BYTES];
        put(&mut bytes, 0, self.signo.to_le_bytes());
        put(&mut bytes, 8, self.code.to_le_bytes());
        match self.fields {
            SiginfoFields::None => {}
            SiginfoFields::Sender { pid, uid } => {
                put(&mut bytes, 16, pid.to_le_bytes());
                put(&mut bytes, 20, uid.to_le_bytes());
            }
            SiginfoFields::Child { pid, uid, status } => {
                put(&mut bytes, 16, pid.to_le_bytes());
                put(&mut bytes, 20, uid.to_le_bytes());
                put(&mut bytes, 24, status.to_le_bytes());
            }
            SiginfoFields::Fault { address } => put(&mut bytes, 16, address.to_le_bytes()),
            SiginfoFields::Timer { id, overrun, value } => {
                put(&mut bytes, 16, id.to_le_bytes());
                put(&mut bytes, 20, overrun.to_le_bytes());
                put(&mut bytes, 24, value.to_le_bytes());
            }
        }
        bytes
    }
}
