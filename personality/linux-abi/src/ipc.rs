//! System V IPC as system calls exchange it: the `ipc_perm` flags and
//! commands shared by every IPC kind (`linux/ipc.h`), the semaphore
//! commands, flags and limits (`linux/sem.h`), and the x86_64 layouts of
//! `struct ipc64_perm`, `struct semid64_ds`, `struct seminfo` and `struct
//! sembuf`.

use crate::bytes::{get, get_u32, put};

/// The key that always makes a new, unnamed object.
pub const IPC_PRIVATE: i32 = 0;
/// `*get` flag: make the object if the key has none.
pub const IPC_CREAT: u32 = 0o1000;
/// `*get` flag with `IPC_CREAT`: fail with `EEXIST` if the key has one.
pub const IPC_EXCL: u32 = 0o2000;
/// Operation flag: fail with `EAGAIN` rather than wait.
pub const IPC_NOWAIT: i16 = 0o4000;
/// The permission bits of an `ipc_perm` mode (`S_IRWXUGO`).
pub const IPC_PERMISSION_BITS: u32 = 0o777;

/// `*ctl` command: remove the object.
pub const IPC_RMID: u32 = 0;
/// `*ctl` command: set its owner and permissions.
pub const IPC_SET: u32 = 1;
/// `*ctl` command: read its `*id_ds`.
pub const IPC_STAT: u32 = 2;
/// `*ctl` command: the system's limits.
pub const IPC_INFO: u32 = 3;

/// `semctl`: the process that last operated on a semaphore.
pub const GETPID: u32 = 11;
/// `semctl`: a semaphore's value.
pub const GETVAL: u32 = 12;
/// `semctl`: every value of the set.
pub const GETALL: u32 = 13;
/// `semctl`: how many wait for a semaphore to grow.
pub const GETNCNT: u32 = 14;
/// `semctl`: how many wait for a semaphore to be zero.
pub const GETZCNT: u32 = 15;
/// `semctl`: sets a semaphore's value.
pub const SETVAL: u32 = 16;
/// `semctl`: sets every value of the set.
pub const SETALL: u32 = 17;
/// `semctl`: `IPC_STAT` by index in the table rather than by id.
pub const SEM_STAT: u32 = 18;
/// `semctl`: `IPC_INFO` with what is in use.
pub const SEM_INFO: u32 = 19;
/// `semctl`: `SEM_STAT` without the read permission check.
pub const SEM_STAT_ANY: u32 = 20;

/// `sembuf` flag: undo the operation when the process ends.
pub const SEM_UNDO: i16 = 0x1000;

/// Most semaphores in a set (`SEMMSL`).
pub const SEMMSL: u32 = 32_000;
/// Most semaphores in the system (`SEMMNS`).
pub const SEMMNS: u32 = SEMMNI * SEMMSL;
/// Most operations in one `semop` (`SEMOPM`).
pub const SEMOPM: u32 = 500;
/// Most semaphore sets (`SEMMNI`).
pub const SEMMNI: u32 = 32_000;
/// Largest semaphore value (`SEMVMX`).
pub const SEMVMX: i32 = 32_767;
/// Largest adjustment an undo may record (`SEMAEM`).
pub const SEMAEM: i32 = SEMVMX;
/// `seminfo.semusz` for `IPC_INFO`: the size Linux reports for an undo
/// structure (`SEMUSZ`).
pub const SEMUSZ: i32 = 20;

/// x86_64 `struct ipc64_perm` (48 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IpcPerm {
    /// `key`: the key the object was made for.
    pub key: i32,
    /// `uid`: the owner.
    pub uid: u32,
    /// `gid`: the owner's group.
    pub gid: u32,
    /// `cuid`: who made it.
    pub cuid: u32,
    /// `cgid`: the maker's group.
    pub cgid: u32,
    /// `mode`: permission bits.
    pub mode: u32,
    /// `seq`: the slot's sequence number.
    pub seq: u16,
}

impl IpcPerm {
    /// Bytes of a `struct ipc64_perm`.
    pub const BYTES: usize = 48;

    /// The record as user space reads it: key@0, uid@4, gid@8, cuid@12,
    /// cgid@16, mode@20 (a 4-byte `__kernel_mode_t` on x86_64), seq@24,
    /// the rest reserved.
    fn put(&self, bytes: &mut [u8]) {
        put(bytes, 0, self.key.to_le_bytes());
        put(bytes, 4, self.uid.to_le_bytes());
        put(bytes, 8, self.gid.to_le_bytes());
        put(bytes, 12, self.cuid.to_le_bytes());
        put(bytes, 16, self.cgid.to_le_bytes());
        put(bytes, 20, self.mode.to_le_bytes());
        put(bytes, 24, self.seq.to_le_bytes());
    }
}

/// x86_64 `struct semid64_ds` (104 bytes), glibc's `struct semid_ds`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SemidDs {
    /// `sem_perm`.
    pub perm: IpcPerm,
    /// `sem_otime`: the last `semop`, seconds since the epoch (0: none).
    pub otime: i64,
    /// `sem_ctime`: the last change by `semctl`, seconds since the epoch.
    pub ctime: i64,
    /// `sem_nsems`: semaphores in the set.
    pub nsems: u64,
}

impl SemidDs {
    /// Bytes of a `struct semid64_ds`.
    pub const BYTES: usize = 104;

    /// The record as user space reads it: sem_perm@0, sem_otime@48,
    /// sem_ctime@64, sem_nsems@80, the rest reserved.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        self.perm.put(&mut bytes);
        put(&mut bytes, 48, self.otime.to_le_bytes());
        put(&mut bytes, 64, self.ctime.to_le_bytes());
        put(&mut bytes, 80, self.nsems.to_le_bytes());
        bytes
    }

    /// What `IPC_SET` takes from the record user space wrote: the owner,
    /// its group and the mode (`sem_perm.uid`, `.gid`, `.mode`).
    pub fn ownership_from_bytes(bytes: &[u8; Self::BYTES]) -> (u32, u32, u32) {
        (get_u32(bytes, 4), get_u32(bytes, 8), get_u32(bytes, 20))
    }
}

/// `struct seminfo` (ten `int`s, 40 bytes): the limits (`IPC_INFO`), or
/// with `semusz` and `semaem` counting what is in use (`SEM_INFO`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seminfo {
    /// `semmap`, `semmni`, `semmns`, `semmnu`, `semmsl`, `semopm`,
    /// `semume`, `semusz`, `semvmx`, `semaem`, in that order.
    pub fields: [i32; 10],
}

impl Seminfo {
    /// Bytes of a `struct seminfo`.
    pub const BYTES: usize = 40;

    /// The record as user space reads it: the fields in order, 4 bytes
    /// each.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        for (index, field) in self.fields.iter().enumerate() {
            put(&mut bytes, index * 4, field.to_le_bytes());
        }
        bytes
    }
}

/// `struct sembuf`: one operation of a `semop` (6 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sembuf {
    /// `sem_num`: which semaphore of the set.
    pub number: u16,
    /// `sem_op`: added to the value (negative: wait until it can be
    /// taken; zero: wait until the value is zero).
    pub operation: i16,
    /// `sem_flg`: `IPC_NOWAIT`, `SEM_UNDO`.
    pub flags: i16,
}

impl Sembuf {
    /// Bytes of a `struct sembuf`.
    pub const BYTES: usize = 6;

    /// The record user space wrote: sem_num@0, sem_op@2, sem_flg@4.
    pub fn from_bytes(bytes: &[u8; Self::BYTES]) -> Sembuf {
        Sembuf {
            number: u16::from_le_bytes(get(bytes, 0)),
            operation: i16::from_le_bytes(get(bytes, 2)),
            flags: i16::from_le_bytes(get(bytes, 4)),
        }
    }
}
