//! The records of `rt_sigaction` and `sigaltstack`: the kernel's `struct
//! sigaction` and `stack_t`.

use crate::{
    bytes::{get_u32, get_u64, put},
    signal::SS_DISABLE,
};

/// The kernel's `struct sigaction` (`rt_sigaction`'s layout, not libc's):
/// 32 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SigAction {
    /// `sa_handler`: the handler's address, or `SIG_DFL`/`SIG_IGN`.
    pub handler: u64,
    /// `sa_flags` (`SA_*`).
    pub flags: u64,
    /// `sa_restorer`: the trampoline the handler returns to.
    pub restorer: u64,
    /// `sa_mask`: signals blocked while the handler runs.
    pub mask: u64,
}

impl SigAction {
    /// Bytes of the kernel's `struct sigaction`.
    pub const BYTES: usize = 32;

    /// The record as user space reads it: handler@0, flags@8,
    /// restorer@16, mask@24.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        put(&mut bytes, 0, self.handler.to_le_bytes());
        put(&mut bytes, 8, self.flags.to_le_bytes());
        put(&mut bytes, 16, self.restorer.to_le_bytes());
        put(&mut bytes, 24, self.mask.to_le_bytes());
        bytes
    }

    /// The record user space wrote.
    pub fn from_bytes(bytes: &[u8; Self::BYTES]) -> SigAction {
        SigAction {
            handler: get_u64(bytes, 0),
            flags: get_u64(bytes, 8),
            restorer: get_u64(bytes, 16),
            mask: get_u64(bytes, 24),
        }
    }
}

/// `stack_t`: an alternate signal stack (`sigaltstack`, `uc_stack`): 24
/// bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignalStack {
    /// `ss_sp`: the lowest address.
    pub base: u64,
    /// `ss_flags` (`SS_ONSTACK`, `SS_DISABLE`).
    pub flags: u32,
    /// `ss_size`: bytes.
    pub size: u64,
}

impl SignalStack {
    /// Bytes of a `stack_t`.
    pub const BYTES: usize = 24;

    /// No alternate stack: what a thread starts with.
    pub const DISABLED: SignalStack = SignalStack {
        base: 0,
        flags: SS_DISABLE,
        size: 0,
    };

    /// The record as user space reads it: `ss_sp`@0, `ss_flags`@8,
    /// `ss_size`@16.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        put(&mut bytes, 0, self.base.to_le_bytes());
        put(&mut bytes, 8, self.flags.to_le_bytes());
        put(&mut bytes, 16, self.size.to_le_bytes());
        bytes
    }

    /// The record user space wrote.
    pub fn from_bytes(bytes: &[u8; Self::BYTES]) -> SignalStack {
        SignalStack {
            base: get_u64(bytes, 0),
            flags: get_u32(bytes, 8),
            size: get_u64(bytes, 16),
        }
    }
}
