//! Signal state: `rt_sigaction`, `rt_sigprocmask`, `sigaltstack`.
//!
//! The dispositions and the mask are kept with Linux's semantics (a
//! handler set is read back, `SIGKILL` and `SIGSTOP` cannot be caught or
//! blocked, `SIG_IGN` and `SIG_DFL` are remembered), and `execve` resets
//! caught signals to their default as Linux does. Delivering a signal to
//! a handler (the frame with `siginfo` and `ucontext`) is not done yet: a
//! signal still ends the process, whatever its disposition says.

use vfs::Errno;

use crate::{user, LinuxProcess};

/// Signals 1..=64.
pub const SIGNALS: usize = 64;
const SIGKILL: u64 = 9;
const SIGSTOP: u64 = 19;
/// `struct sigaction` as the kernel sees it (handler, flags, restorer,
/// mask): 32 bytes.
const SIGACTION_BYTES: usize = 32;
const SIG_BLOCK: u64 = 0;
const SIG_UNBLOCK: u64 = 1;
const SIG_SETMASK: u64 = 2;
/// `SIG_DFL` and `SIG_IGN` handler values.
const SIG_DFL: u64 = 0;
const SIG_IGN: u64 = 1;

/// A process's signal dispositions and mask.
#[derive(Clone)]
pub struct SignalState {
    actions: [[u8; SIGACTION_BYTES]; SIGNALS],
    mask: u64,
    alternate_stack: [u8; 24],
}

impl Default for SignalState {
    fn default() -> Self {
        SignalState {
            actions: [[0; SIGACTION_BYTES]; SIGNALS],
            mask: 0,
            alternate_stack: [0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        }
    }
}

impl SignalState {
    /// After `execve`: caught signals go back to their default (ignored
    /// ones stay ignored), the mask is kept, the alternate stack is gone.
    pub fn reset_for_exec(&mut self) {
        for action in &mut self.actions {
            let handler = u64::from_le_bytes(action[..8].try_into().unwrap_or([0; 8]));
            if handler != SIG_DFL && handler != SIG_IGN {
                *action = [0; SIGACTION_BYTES];
            }
        }
        self.alternate_stack = SignalState::default().alternate_stack;
    }

    /// Whether `signal`'s disposition is "ignore".
    pub fn is_ignored(&self, signal: u64) -> bool {
        let Some(action) = signal.checked_sub(1).and_then(|i| self.actions.get(i as usize)) else {
            return false;
        };
        u64::from_le_bytes(action[..8].try_into().unwrap_or([0; 8])) == SIG_IGN
    }
}

/// `rt_sigaction(signal, act, oldact, sigsetsize)`.
pub fn rt_sigaction(process: &LinuxProcess, signal: u64, act: u64, old: u64, size: u64) -> Result<i64, Errno> {
    if size != 8 || signal == 0 || signal > SIGNALS as u64 {
        return Err(Errno::EINVAL);
    }
    let index = (signal - 1) as usize;
    let mut new = [0u8; SIGACTION_BYTES];
    if act != 0 {
        user::read(act, &mut new)?;
        if signal == SIGKILL || signal == SIGSTOP {
            return Err(Errno::EINVAL);
        }
    }
    let previous = {
        let mut state = process.signals.lock();
        let previous = state.actions[index];
        if act != 0 {
            state.actions[index] = new;
        }
        previous
    };
    if old != 0 {
        user::write(old, &previous)?;
    }
    Ok(0)
}

/// `rt_sigprocmask(how, set, oldset, sigsetsize)`: `SIGKILL` and `SIGSTOP`
/// are never blocked.
pub fn rt_sigprocmask(process: &LinuxProcess, how: u64, set: u64, old: u64, size: u64) -> Result<i64, Errno> {
    if size != 8 {
        return Err(Errno::EINVAL);
    }
    let change = if set != 0 { Some(user::read_u64(set)?) } else { None };
    let previous = {
        let mut state = process.signals.lock();
        let previous = state.mask;
        if let Some(change) = change {
            let unblockable = (1 << (SIGKILL - 1)) | (1 << (SIGSTOP - 1));
            state.mask = match how {
                SIG_BLOCK => previous | change,
                SIG_UNBLOCK => previous & !change,
                SIG_SETMASK => change,
                _ => return Err(Errno::EINVAL),
            } & !unblockable;
        }
        previous
    };
    if old != 0 {
        user::write(old, &previous.to_le_bytes())?;
    }
    Ok(0)
}

/// `sigaltstack(ss, old_ss)`: recorded (`struct stack_t`, 24 bytes).
pub fn sigaltstack(process: &LinuxProcess, new: u64, old: u64) -> Result<i64, Errno> {
    let mut stack = [0u8; 24];
    if new != 0 {
        user::read(new, &mut stack)?;
    }
    let previous = {
        let mut state = process.signals.lock();
        let previous = state.alternate_stack;
        if new != 0 {
            state.alternate_stack = stack;
        }
        previous
    };
    if old != 0 {
        user::write(old, &previous)?;
    }
    Ok(0)
}
