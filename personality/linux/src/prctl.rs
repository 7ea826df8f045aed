//! `prctl(option, arg2, arg3, arg4, arg5)` (prctl(2)): the options
//! programs and their libraries use, each with Linux's argument checks
//! (`kernel/sys.c`, `security/commoncap.c`).
//!
//! What is kept where: the command name, the parent-death signal and the
//! no-new-privileges and huge-page flags on the process
//! ([`LinuxProcess`]); the security bits and the bounding set with the
//! credentials (`credentials.rs`, whose rules they are). Options of
//! facilities Spindle is built without (seccomp, speculation control,
//! ambient capabilities) are `EINVAL`, as on a Linux built without them.

use core::sync::atomic::Ordering;

use linux_abi::{prctl::*, signal::MAX_SIGNAL};
use vfs::Errno;

use crate::{user, LinuxProcess};

/// Bytes of a command name, with its NUL (`TASK_COMM_LEN`).
const NAME_BYTES: usize = 16;

/// `prctl(option, arg2, arg3, arg4, arg5)` for the calling process;
/// `more` holds `arg3`, `arg4` and `arg5`.
pub fn prctl(
    process: &LinuxProcess,
    option: u64,
    argument: u64,
    more: [u64; 3],
) -> Result<i64, Errno> {
    let rest_zero = more == [0; 3];
    match option {
        PR_SET_PDEATHSIG => {
            // Linux's `valid_signal`: 0 (none) up to the last signal.
            let signal = u8::try_from(argument)
                .ok()
                .filter(|&signal| signal <= MAX_SIGNAL)
                .ok_or(Errno::EINVAL)?;
            process.parent_death_signal.store(signal, Ordering::Relaxed);
            Ok(0)
        }
        PR_GET_PDEATHSIG => {
            let signal = i32::from(process.parent_death_signal.load(Ordering::Relaxed));
            user::write(argument, &signal.to_le_bytes())?;
            Ok(0)
        }
        PR_SET_NAME => {
            let name = user::read_c_string(argument, 4096)?;
            let mut stored = [0u8; NAME_BYTES];
            let length = name.len().min(NAME_BYTES - 1);
            stored[..length].copy_from_slice(&name[..length]);
            *process.name.lock() = stored;
            Ok(0)
        }
        PR_GET_NAME => {
            let name = *process.name.lock();
            user::write(argument, &name)?;
            Ok(0)
        }
        // Every process may be dumped: there are no set-id programs.
        PR_GET_DUMPABLE => Ok(1),
        PR_SET_DUMPABLE if argument <= 1 => Ok(0),
        PR_GET_TIMING => Ok(PR_TIMING_STATISTICAL as i64),
        PR_SET_TIMING if argument == PR_TIMING_STATISTICAL => Ok(0),
        PR_GET_KEEPCAPS => {
            let keep = process
                .credentials()
                .is_secure(crate::credentials::SECBIT_KEEP_CAPS);
            Ok(i64::from(keep))
        }
        PR_SET_KEEPCAPS => process
            .change_credentials(|credentials| credentials.set_keep_capabilities(argument))
            .map(|()| 0),
        PR_GET_SECUREBITS => Ok(i64::from(process.credentials().securebits)),
        PR_SET_SECUREBITS => process
            .change_credentials(|credentials| credentials.set_securebits(argument))
            .map(|()| 0),
        PR_CAPBSET_READ => process.credentials().in_bounding(argument).map(i64::from),
        PR_CAPBSET_DROP => process
            .change_credentials(|credentials| credentials.drop_bounding(argument))
            .map(|()| 0),
        PR_SET_NO_NEW_PRIVS if argument == 1 && rest_zero => {
            process.no_new_privileges.store(true, Ordering::Relaxed);
            Ok(0)
        }
        PR_GET_NO_NEW_PRIVS if argument == 0 && rest_zero => {
            Ok(i64::from(process.no_new_privileges.load(Ordering::Relaxed)))
        }
        PR_SET_THP_DISABLE if rest_zero => {
            process
                .huge_pages_disabled
                .store(argument != 0, Ordering::Relaxed);
            Ok(0)
        }
        PR_GET_THP_DISABLE if argument == 0 && rest_zero => Ok(i64::from(
            process.huge_pages_disabled.load(Ordering::Relaxed),
        )),
        _ => Err(Errno::EINVAL),
    }
}
