//! A process's credentials, as Linux keeps them (`struct cred`): real,
//! effective, saved and file-system user and group ids, supplementary
//! groups, and the capability sets; and the rules by which the `set*id`
//! calls and `capset` may change them (`kernel/sys.c`,
//! `security/commoncap.c`).
//!
//! Plain data with no lock and no user memory, so that every rule is
//! host-tested; `identity.rs` reads the arguments and applies these.

use alloc::{sync::Arc, vec::Vec};

use linux_abi::prctl::{SECURE_ALL_BITS, SECURE_ALL_LOCKS};
use vfs::Errno;

/// The capabilities Linux 6.1 defines (`CAP_LAST_CAP` is 40), all of
/// which root starts with.
pub const ALL_CAPABILITIES: u64 = (1 << 41) - 1;
/// `CAP_CHOWN`: change a file's owner and group at will.
pub const CAP_CHOWN: u32 = 0;
/// `CAP_DAC_OVERRIDE`: pass read, write and execute checks.
pub const CAP_DAC_OVERRIDE: u32 = 1;
/// `CAP_DAC_READ_SEARCH`: pass read and search checks.
pub const CAP_DAC_READ_SEARCH: u32 = 2;
/// `CAP_FOWNER`: act as the owner of any file.
pub const CAP_FOWNER: u32 = 3;
/// `CAP_FSETID`: keep set-id bits when changing a file.
pub const CAP_FSETID: u32 = 4;
/// `CAP_KILL`: send signals to any process.
pub const CAP_KILL: u32 = 5;
/// `CAP_SETGID`: take any group id, set supplementary groups.
pub const CAP_SETGID: u32 = 6;
/// `CAP_SETUID`: take any user id.
pub const CAP_SETUID: u32 = 7;
/// `CAP_SETPCAP`: add any capability to the inheritable set.
pub const CAP_SETPCAP: u32 = 8;
/// `CAP_LINUX_IMMUTABLE`: set immutable and append-only flags.
pub const CAP_LINUX_IMMUTABLE: u32 = 9;
/// `CAP_SYS_PTRACE`: trace any process (and take its descriptors).
pub const CAP_SYS_PTRACE: u32 = 19;
/// `CAP_SYS_CHROOT`: `chroot`.
pub const CAP_SYS_CHROOT: u32 = 18;
/// `CAP_SYS_NICE`: raise priorities, set real-time policies.
pub const CAP_SYS_NICE: u32 = 23;
/// `CAP_IPC_OWNER`: System V IPC objects' modes do not apply.
pub const CAP_IPC_OWNER: u32 = 15;
/// `CAP_SYS_ADMIN`: the catch-all (host and domain names among it).
pub const CAP_SYS_ADMIN: u32 = 21;
/// `CAP_SYS_TIME`: set the wall clock.
pub const CAP_SYS_TIME: u32 = 25;
/// `CAP_MKNOD`: make device nodes.
pub const CAP_MKNOD: u32 = 27;
/// `CAP_MAC_OVERRIDE`.
pub const CAP_MAC_OVERRIDE: u32 = 32;

/// The capabilities that follow the file-system user id: dropped from
/// the effective set when it leaves 0 and raised (from the permitted
/// set) when it returns (`CAP_FS_MASK`).
pub const FILE_SYSTEM_CAPABILITIES: u64 = bit(CAP_CHOWN)
    | bit(CAP_DAC_OVERRIDE)
    | bit(CAP_DAC_READ_SEARCH)
    | bit(CAP_FOWNER)
    | bit(CAP_FSETID)
    | bit(CAP_LINUX_IMMUTABLE)
    | bit(CAP_MAC_OVERRIDE);

/// `SECBIT_NO_SETUID_FIXUP`: user id changes leave the capabilities be.
pub const SECBIT_NO_SETUID_FIXUP: u32 = 1 << 2;
/// `SECBIT_KEEP_CAPS`: leaving root keeps the permitted set (cleared by
/// `execve`).
pub const SECBIT_KEEP_CAPS: u32 = 1 << 4;
/// `SECBIT_KEEP_CAPS_LOCKED`: `SECBIT_KEEP_CAPS` may not change.
pub const SECBIT_KEEP_CAPS_LOCKED: u32 = 1 << 5;

/// Whether `capability` is one Linux defines (`cap_valid`).
fn is_capability(capability: u64) -> bool {
    capability < 64 && ALL_CAPABILITIES & (1 << capability) != 0
}

const fn bit(capability: u32) -> u64 {
    1 << capability
}

/// Most supplementary groups a process may have (`NGROUPS_MAX`).
pub const MAX_GROUPS: usize = 65536;

/// The id that means "leave it as it is" in `setreuid` and friends
/// (`(uid_t)-1`), also never a valid id.
pub const UNCHANGED: u32 = u32::MAX;

/// Real, effective, saved and file-system ids of one kind (users or
/// groups).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ids {
    /// Who the process is (`getuid`), whom signals check against.
    pub real: u32,
    /// Whom most checks are made for (`geteuid`).
    pub effective: u32,
    /// What an unprivileged process may switch back to.
    pub saved: u32,
    /// Whom file-system checks are made for (follows `effective` unless
    /// `setfsuid` sets it apart).
    pub file_system: u32,
}

impl Ids {
    /// All four the same.
    pub const fn all(id: u32) -> Ids {
        Ids {
            real: id,
            effective: id,
            saved: id,
            file_system: id,
        }
    }

    /// Whether `id` is one the process already has as real, effective or
    /// saved id: what an unprivileged `setresuid` may pick.
    fn holds(&self, id: u32) -> bool {
        id == self.real || id == self.effective || id == self.saved
    }

    /// `setuid(id)` / `setgid(id)`: all four for a privileged caller;
    /// otherwise only effective (and file-system), and only to the real
    /// or saved id.
    fn set(&mut self, id: u32, privileged: bool) -> Result<(), Errno> {
        if id == UNCHANGED {
            return Err(Errno::EINVAL);
        }
        if privileged {
            *self = Ids::all(id);
        } else if id == self.real || id == self.saved {
            self.effective = id;
            self.file_system = id;
        } else {
            return Err(Errno::EPERM);
        }
        Ok(())
    }

    /// `setreuid(real, effective)`: an unprivileged caller may set the
    /// real id to its real or effective id, and the effective id to any
    /// of its three. The saved id follows the new effective id when the
    /// real id is set, or the effective id is set to something but the
    /// old real id.
    fn set_real_effective(
        &mut self,
        real: u32,
        effective: u32,
        privileged: bool,
    ) -> Result<(), Errno> {
        let old = *self;
        let mut new = *self;
        if real != UNCHANGED {
            if !privileged && real != old.real && real != old.effective {
                return Err(Errno::EPERM);
            }
            new.real = real;
        }
        if effective != UNCHANGED {
            if !privileged && !old.holds(effective) {
                return Err(Errno::EPERM);
            }
            new.effective = effective;
        }
        if real != UNCHANGED || (effective != UNCHANGED && effective != old.real) {
            new.saved = new.effective;
        }
        new.file_system = new.effective;
        *self = new;
        Ok(())
    }

    /// `setresuid(real, effective, saved)`: an unprivileged caller may
    /// pick each among its current three.
    fn set_real_effective_saved(
        &mut self,
        real: u32,
        effective: u32,
        saved: u32,
        privileged: bool,
    ) -> Result<(), Errno> {
        let old = *self;
        if !privileged
            && [real, effective, saved]
                .iter()
                .any(|&id| id != UNCHANGED && !old.holds(id))
        {
            return Err(Errno::EPERM);
        }
        if real != UNCHANGED {
            self.real = real;
        }
        if effective != UNCHANGED {
            self.effective = effective;
        }
        if saved != UNCHANGED {
            self.saved = saved;
        }
        self.file_system = self.effective;
        Ok(())
    }

    /// `setfsuid(id)`: the old file-system id, whether or not it changed
    /// (Linux reports no error): a privileged caller may pick any valid
    /// id, others one of their four.
    fn set_file_system(&mut self, id: u32, privileged: bool) -> u32 {
        let old = self.file_system;
        if id != UNCHANGED && (privileged || self.holds(id) || id == self.file_system) {
            self.file_system = id;
        }
        old
    }
}

/// The capability sets (`capget`'s three words, 64 bits each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// What the process may use now.
    pub effective: u64,
    /// What it may take into its effective set.
    pub permitted: u64,
    /// What an `execve` may keep.
    pub inheritable: u64,
}

/// The mode bits that make a program run as its owner or group.
const S_ISUID: u32 = 0o4000;
const S_ISGID: u32 = 0o2000;
const S_IXGRP: u32 = 0o010;

/// What `execve` looks at of a program file: its mode (the set-id bits)
/// and owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgramFile {
    /// The file's mode bits.
    pub mode: u32,
    /// Its owner.
    pub uid: u32,
    /// Its group.
    pub gid: u32,
}

/// Who a process is and what it may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    /// User ids.
    pub users: Ids,
    /// Group ids.
    pub groups: Ids,
    /// Supplementary groups, sorted (Linux's `groups_sort`).
    pub supplementary: Arc<[u32]>,
    /// Capability sets.
    pub capabilities: Capabilities,
    /// The capability bounding set: what `capset` may add to the
    /// inheritable set at most; `PR_CAPBSET_DROP` shrinks it, and nothing
    /// grows it again.
    pub bounding: u64,
    /// The security bits (`SECBIT_*`, `PR_SET_SECUREBITS`): of those
    /// Linux defines, `SECBIT_KEEP_CAPS` and `SECBIT_NO_SETUID_FIXUP`
    /// change what a user id change does to the capabilities.
    pub securebits: u32,
}

impl Default for Credentials {
    /// Root with every capability, as the first process starts.
    fn default() -> Self {
        Credentials::root()
    }
}

impl Credentials {
    /// Root with every capability.
    pub fn root() -> Credentials {
        Credentials {
            users: Ids::all(0),
            groups: Ids::all(0),
            supplementary: Arc::from(Vec::new()),
            capabilities: Capabilities {
                effective: ALL_CAPABILITIES,
                permitted: ALL_CAPABILITIES,
                inheritable: 0,
            },
            bounding: ALL_CAPABILITIES,
            securebits: 0,
        }
    }

    /// What `execve` makes of the credentials (Linux's
    /// `cap_bprm_creds_from_file`; there are no file capabilities or
    /// ambient sets here). A set-user-id program (`S_ISUID`) runs with its
    /// owner as effective user, a set-group-id one (`S_ISGID` with group
    /// execute permission; without it the bit means mandatory locking)
    /// with its group; the saved and file-system ids then follow the
    /// effective ones. A process whose real or effective user is root
    /// gets every capability permitted, and effective too when the
    /// effective user is root; any other process loses them all. `file`
    /// is `None` for a script, whose set-id bits Linux ignores.
    pub fn exec(&mut self, file: Option<ProgramFile>) {
        if let Some(file) = file {
            if file.mode & S_ISUID != 0 {
                self.users.effective = file.uid;
            }
            if file.mode & S_ISGID != 0 && file.mode & S_IXGRP != 0 {
                self.groups.effective = file.gid;
            }
        }
        for ids in [&mut self.users, &mut self.groups] {
            ids.saved = ids.effective;
            ids.file_system = ids.effective;
        }
        let caps = &mut self.capabilities;
        if self.users.real == 0 || self.users.effective == 0 {
            caps.permitted = ALL_CAPABILITIES;
            caps.effective = if self.users.effective == 0 {
                ALL_CAPABILITIES
            } else {
                0
            };
        } else {
            caps.permitted = 0;
            caps.effective = 0;
        }
        // Keeping capabilities across a `setuid` lasts until the next
        // program.
        self.securebits &= !SECBIT_KEEP_CAPS;
    }

    /// Whether a process of these credentials may trace (or take the
    /// descriptors of) another process of `target`'s
    /// (`__ptrace_may_access` with real credentials): its real user and
    /// group must be all three of the target's, or it must have
    /// `CAP_SYS_PTRACE`. A process may always trace itself; the caller
    /// checks that.
    pub fn may_trace(&self, target: &Credentials) -> bool {
        let same = |ids: &Ids, id: u32| ids.real == id && ids.effective == id && ids.saved == id;
        (same(&target.users, self.users.real) && same(&target.groups, self.groups.real))
            || self.capable(CAP_SYS_PTRACE)
    }

    /// Whether security bit `bit` (`SECBIT_*`) is set.
    pub fn is_secure(&self, bit: u32) -> bool {
        self.securebits & bit != 0
    }

    /// `PR_SET_SECUREBITS`: `EPERM` without `CAP_SETPCAP`, for a locked
    /// bit that would change or lose its lock, and for bits Linux does
    /// not define (`cap_task_prctl`, which answers all four alike).
    pub fn set_securebits(&mut self, bits: u64) -> Result<(), Errno> {
        let old = u64::from(self.securebits);
        let locked_bits = (old & SECURE_ALL_LOCKS) >> 1;
        if locked_bits & (old ^ bits) != 0
            || old & SECURE_ALL_LOCKS & !bits != 0
            || bits & !(SECURE_ALL_LOCKS | SECURE_ALL_BITS) != 0
            || !self.capable(CAP_SETPCAP)
        {
            return Err(Errno::EPERM);
        }
        self.securebits = bits as u32;
        Ok(())
    }

    /// `PR_SET_KEEPCAPS`: `SECBIT_KEEP_CAPS` on (1) or off (0); `EINVAL`
    /// for other values, `EPERM` once the bit is locked.
    pub fn set_keep_capabilities(&mut self, keep: u64) -> Result<(), Errno> {
        if keep > 1 {
            return Err(Errno::EINVAL);
        }
        if self.is_secure(SECBIT_KEEP_CAPS_LOCKED) {
            return Err(Errno::EPERM);
        }
        if keep == 1 {
            self.securebits |= SECBIT_KEEP_CAPS;
        } else {
            self.securebits &= !SECBIT_KEEP_CAPS;
        }
        Ok(())
    }

    /// `PR_CAPBSET_DROP`: `EPERM` without `CAP_SETPCAP`, then `EINVAL`
    /// for a capability Linux does not define (`cap_prctl_drop`'s order).
    pub fn drop_bounding(&mut self, capability: u64) -> Result<(), Errno> {
        if !self.capable(CAP_SETPCAP) {
            return Err(Errno::EPERM);
        }
        if !is_capability(capability) {
            return Err(Errno::EINVAL);
        }
        self.bounding &= !(1 << capability);
        Ok(())
    }

    /// `PR_CAPBSET_READ`: whether `capability` is in the bounding set
    /// (`EINVAL` for one Linux does not define).
    pub fn in_bounding(&self, capability: u64) -> Result<bool, Errno> {
        if !is_capability(capability) {
            return Err(Errno::EINVAL);
        }
        Ok(self.bounding & (1 << capability) != 0)
    }

    /// Whether `capability` is in the effective set (Linux's `capable`).
    pub fn capable(&self, capability: u32) -> bool {
        self.capabilities.effective & bit(capability) != 0
    }

    /// Whether the process is in group `gid`: its file-system group or
    /// one of its supplementary groups (`in_group_p`).
    pub fn in_group(&self, gid: u32) -> bool {
        gid == self.groups.file_system || self.supplementary.binary_search(&gid).is_ok()
    }

    /// `setuid(uid)`.
    pub fn set_user(&mut self, uid: u32) -> Result<(), Errno> {
        let old = self.users;
        let privileged = self.capable(CAP_SETUID);
        self.users.set(uid, privileged)?;
        self.after_user_change(old);
        Ok(())
    }

    /// `setreuid(real, effective)`.
    pub fn set_real_effective_user(&mut self, real: u32, effective: u32) -> Result<(), Errno> {
        let old = self.users;
        let privileged = self.capable(CAP_SETUID);
        self.users.set_real_effective(real, effective, privileged)?;
        self.after_user_change(old);
        Ok(())
    }

    /// `setresuid(real, effective, saved)`.
    pub fn set_all_users(&mut self, real: u32, effective: u32, saved: u32) -> Result<(), Errno> {
        let old = self.users;
        let privileged = self.capable(CAP_SETUID);
        self.users
            .set_real_effective_saved(real, effective, saved, privileged)?;
        self.after_user_change(old);
        Ok(())
    }

    /// `setfsuid(uid)`: the old file-system user id.
    pub fn set_file_system_user(&mut self, uid: u32) -> u32 {
        let old = self.users;
        let privileged = self.capable(CAP_SETUID);
        let previous = self.users.set_file_system(uid, privileged);
        self.after_file_system_user_change(old);
        previous
    }

    /// `setgid(gid)`.
    pub fn set_group(&mut self, gid: u32) -> Result<(), Errno> {
        let privileged = self.capable(CAP_SETGID);
        self.groups.set(gid, privileged)
    }

    /// `setregid(real, effective)`.
    pub fn set_real_effective_group(&mut self, real: u32, effective: u32) -> Result<(), Errno> {
        let privileged = self.capable(CAP_SETGID);
        self.groups.set_real_effective(real, effective, privileged)
    }

    /// `setresgid(real, effective, saved)`.
    pub fn set_all_groups(&mut self, real: u32, effective: u32, saved: u32) -> Result<(), Errno> {
        let privileged = self.capable(CAP_SETGID);
        self.groups
            .set_real_effective_saved(real, effective, saved, privileged)
    }

    /// `setfsgid(gid)`: the old file-system group id.
    pub fn set_file_system_group(&mut self, gid: u32) -> u32 {
        let privileged = self.capable(CAP_SETGID);
        self.groups.set_file_system(gid, privileged)
    }

    /// `setgroups`: needs `CAP_SETGID`; the list is kept sorted.
    pub fn set_supplementary(&mut self, mut groups: Vec<u32>) -> Result<(), Errno> {
        if groups.len() > MAX_GROUPS {
            return Err(Errno::EINVAL);
        }
        if !self.capable(CAP_SETGID) {
            return Err(Errno::EPERM);
        }
        groups.sort_unstable();
        self.supplementary = Arc::from(groups);
        Ok(())
    }

    /// `capset` of the calling process: the new permitted set may only
    /// shrink, the effective set must lie within it, and the inheritable
    /// set may grow only within the old inheritable and permitted sets
    /// (or anywhere with `CAP_SETPCAP`) and never beyond the bounding
    /// set. Bits beyond the last capability are
    /// dropped, as Linux drops them.
    pub fn set_capabilities(&mut self, new: Capabilities) -> Result<(), Errno> {
        let old = self.capabilities;
        let valid = ALL_CAPABILITIES;
        let new = Capabilities {
            effective: new.effective & valid,
            permitted: new.permitted & valid,
            inheritable: new.inheritable & valid,
        };
        if new.permitted & !old.permitted != 0 || new.effective & !new.permitted != 0 {
            return Err(Errno::EPERM);
        }
        let may_inherit = if self.capable(CAP_SETPCAP) {
            valid
        } else {
            old.inheritable | old.permitted
        };
        if new.inheritable & !may_inherit != 0
            || new.inheritable & !(old.inheritable | self.bounding) != 0
        {
            return Err(Errno::EPERM);
        }
        self.capabilities = new;
        Ok(())
    }

    /// The capability changes a `setuid`, `setreuid` or `setresuid`
    /// brings (`cap_emulate_setxuid`; none with `SECBIT_NO_SETUID_FIXUP`):
    /// leaving root in all of real, effective and saved drops every
    /// capability (the permitted set stays with `SECBIT_KEEP_CAPS`);
    /// leaving effective root drops the effective set, returning to it
    /// raises it.
    fn after_user_change(&mut self, old: Ids) {
        if self.is_secure(SECBIT_NO_SETUID_FIXUP) {
            return;
        }
        let keep = self.is_secure(SECBIT_KEEP_CAPS);
        let new = self.users;
        let caps = &mut self.capabilities;
        let had_root = old.real == 0 || old.effective == 0 || old.saved == 0;
        let has_root = new.real == 0 || new.effective == 0 || new.saved == 0;
        if had_root && !has_root && !keep {
            caps.permitted = 0;
            caps.effective = 0;
        }
        if old.effective == 0 && new.effective != 0 {
            caps.effective = 0;
        }
        if old.effective != 0 && new.effective == 0 {
            caps.effective = caps.permitted;
        }
    }

    /// The capability changes a `setfsuid` brings (`cap_task_fix_setuid`
    /// for `LSM_SETID_FS`): the file-system capabilities leave the
    /// effective set with file-system root and come back with it.
    fn after_file_system_user_change(&mut self, old: Ids) {
        if self.is_secure(SECBIT_NO_SETUID_FIXUP) {
            return;
        }
        let new = self.users;
        let caps = &mut self.capabilities;
        if old.file_system == 0 && new.file_system != 0 {
            caps.effective &= !FILE_SYSTEM_CAPABILITIES;
        }
        if old.file_system != 0 && new.file_system == 0 {
            caps.effective |= caps.permitted & FILE_SYSTEM_CAPABILITIES;
        }
    }
}
