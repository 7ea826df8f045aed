//! An IPC object's owner and mode, and who may do what with it (Linux's
//! `ipcperms` and `ipcctl_obtain_check`).

use linux_abi::{ipc::IPC_PERMISSION_BITS, Errno};

/// Who makes a call: the credentials an IPC permission check uses.
#[derive(Clone, Copy, Debug)]
pub struct Caller<'a> {
    /// Its process id (what `GETPID` later reports).
    pub pid: u32,
    /// Its effective user id.
    pub uid: u32,
    /// Its effective group id.
    pub gid: u32,
    /// Its supplementary groups.
    pub groups: &'a [u32],
    /// Whether it has `CAP_IPC_OWNER` (bypasses the mode).
    pub may_bypass_modes: bool,
    /// Whether it has `CAP_SYS_ADMIN` (may change or remove any object).
    pub may_administer: bool,
}

impl Caller<'_> {
    fn in_group(&self, gid: u32) -> bool {
        self.gid == gid || self.groups.contains(&gid)
    }
}

/// An object's `ipc_perm`: its key, owner, maker and mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Permissions {
    /// The key it was made for (`IPC_PRIVATE`: none).
    pub key: i32,
    /// The owner.
    pub uid: u32,
    /// The owner's group.
    pub gid: u32,
    /// Who made it.
    pub creator_uid: u32,
    /// The maker's group.
    pub creator_gid: u32,
    /// Permission bits (`rwxrwxrwx`; only `r` and `w` mean anything).
    pub mode: u32,
}

impl Permissions {
    /// The permissions of an object `caller` makes for `key` with the
    /// permission bits of `flags`.
    pub fn new(key: i32, flags: u32, caller: &Caller<'_>) -> Permissions {
        Permissions {
            key,
            uid: caller.uid,
            gid: caller.gid,
            creator_uid: caller.uid,
            creator_gid: caller.gid,
            mode: flags & IPC_PERMISSION_BITS,
        }
    }

    /// Linux's `ipcperms`: `EACCES` unless the class of `caller` (owner or
    /// maker, their group, others) has every bit `wanted` asks
    /// (`rwxrwxrwx` bits, any class) or it may bypass modes.
    pub fn check(&self, caller: &Caller<'_>, wanted: u32) -> Result<(), Errno> {
        let requested = (wanted >> 6 | wanted >> 3 | wanted) & 0o7;
        let granted = if caller.uid == self.uid || caller.uid == self.creator_uid {
            self.mode >> 6
        } else if caller.in_group(self.gid) || caller.in_group(self.creator_gid) {
            self.mode >> 3
        } else {
            self.mode
        } & 0o7;
        if requested & !granted != 0 && !caller.may_bypass_modes {
            return Err(Errno::EACCES);
        }
        Ok(())
    }

    /// Whether `caller` may change or remove the object (`IPC_SET`,
    /// `IPC_RMID`): its owner, its maker, or an administrator; `EPERM`
    /// otherwise.
    pub fn check_control(&self, caller: &Caller<'_>) -> Result<(), Errno> {
        if caller.uid == self.uid || caller.uid == self.creator_uid || caller.may_administer {
            Ok(())
        } else {
            Err(Errno::EPERM)
        }
    }
}

/// The `rwx` bits asking to read, for any class (`S_IRUGO`).
pub const READ: u32 = 0o444;
/// The `rwx` bits asking to write (alter), for any class (`S_IWUGO`).
pub const WRITE: u32 = 0o222;
