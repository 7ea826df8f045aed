//! [`Source`]: what the kernel tells `/proc`, and the records it answers
//! with.

use alloc::vec::Vec;

/// What a process is doing, as the state letter of `stat` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessState {
    /// On a processor or ready for one (`R`).
    Running,
    /// Waiting: for a child, a pipe, the terminal, a timer (`S`).
    Sleeping,
    /// Ended, not yet waited for by its parent (`Z`).
    Zombie,
}

impl ProcessState {
    /// The letter of `/proc/PID/stat`.
    pub fn letter(self) -> char {
        match self {
            ProcessState::Running => 'R',
            ProcessState::Sleeping => 'S',
            ProcessState::Zombie => 'Z',
        }
    }

    /// The `State:` line's words in `/proc/PID/status`.
    pub fn description(self) -> &'static str {
        match self {
            ProcessState::Running => "R (running)",
            ProcessState::Sleeping => "S (sleeping)",
            ProcessState::Zombie => "Z (zombie)",
        }
    }
}

/// One process, as `/proc/PID/*` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Its id.
    pub pid: u64,
    /// Its parent's id (0: the kernel).
    pub parent: u64,
    /// Its process group.
    pub process_group: u64,
    /// Its session.
    pub session: u64,
    /// What it is doing.
    pub state: ProcessState,
    /// Its command name (`comm`): at most 15 bytes.
    pub command: Vec<u8>,
    /// Its arguments, each followed by a NUL (`cmdline`); empty for a
    /// zombie, as on Linux.
    pub arguments: Vec<u8>,
    /// The environment its program started with, each `NAME=value`
    /// followed by a NUL (`environ`).
    pub environment: Vec<u8>,
    /// The absolute path of its program file, if it has one.
    pub executable: Option<Vec<u8>>,
    /// Its user id (real, effective, saved and file system alike).
    pub uid: u32,
    /// Its group id.
    pub gid: u32,
    /// Its supplementary groups.
    pub groups: Vec<u32>,
    /// Its umask, if it has a file-system view.
    pub umask: Option<u32>,
    /// Threads running its program.
    pub threads: u64,
    /// Bytes of address space in its regions (`VmSize`).
    pub virtual_bytes: u64,
    /// Pages of memory mapped for it now (`VmRSS`).
    pub resident_pages: u64,
    /// Page faults resolved without I/O (demand-zero pages, private
    /// copies).
    pub minor_faults: u64,
    /// Minor faults of its children that ended and were waited for.
    pub children_minor_faults: u64,
    /// The most pages any of those children had mapped when it ended.
    pub children_max_resident_pages: u64,
    /// Processor time its threads have had, in nanoseconds.
    pub cpu_ns: u64,
    /// Processor time of its children that ended and were waited for, in
    /// nanoseconds.
    pub children_cpu_ns: u64,
    /// When it started, in nanoseconds since boot.
    pub start_ns: u64,
    /// Times its threads left the processor blocked (voluntary) and
    /// still runnable (involuntary): `voluntary_ctxt_switches` and
    /// `nonvoluntary_ctxt_switches`.
    pub context_switches: (u64, u64),
}

/// One thread of a process, as `/proc/PID/task/TID/` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadInfo {
    /// Its thread id (the process id for the first thread, as on Linux).
    pub tid: u64,
    /// What it is doing.
    pub state: ProcessState,
    /// Processor time it has had, in nanoseconds.
    pub cpu_ns: u64,
}

/// What `/proc/sys/kernel/` shows: the names `uname` gives and the
/// highest process id.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KernelSettings {
    /// `ostype`: the system's name (`Linux`).
    pub os_type: Vec<u8>,
    /// `osrelease`: the release `uname` gives.
    pub os_release: Vec<u8>,
    /// `version`: the version `uname` gives.
    pub version: Vec<u8>,
    /// `hostname`: the host name `sethostname` set.
    pub host_name: Vec<u8>,
    /// `domainname`: the NIS domain name `setdomainname` set.
    pub domain_name: Vec<u8>,
    /// `pid_max`: one past the highest process or thread id handed out
    /// (LTP takes it as an id no process has).
    pub pid_max: u64,
}

/// How a descriptor was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// `O_RDONLY`.
    Read,
    /// `O_WRONLY`.
    Write,
    /// `O_RDWR`.
    ReadWrite,
}

/// One open descriptor of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptor {
    /// Its number.
    pub fd: u32,
    /// Its access mode (the permission bits of its `fd/N` link say it, as
    /// on Linux).
    pub access: Access,
}

/// One mapping of a process's address space, as `/proc/PID/maps` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// Its first address.
    pub start: u64,
    /// One past its last address.
    pub end: u64,
    /// Whether it may be read.
    pub read: bool,
    /// Whether it may be written.
    pub write: bool,
    /// Whether it may be executed.
    pub execute: bool,
    /// Shared (`MAP_SHARED`) rather than private.
    pub shared: bool,
    /// The offset in its file.
    pub offset: u64,
    /// Its file's device number (0 for memory).
    pub dev: u64,
    /// Its file's inode number (0 for memory).
    pub ino: u64,
    /// Its file's path, or the kind of memory (`[stack]`, `[heap]`); empty
    /// for anonymous memory.
    pub name: Vec<u8>,
}

/// Memory, as `meminfo` and `sysinfo` report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryInfo {
    /// Usable RAM under management.
    pub total_bytes: u64,
    /// RAM not in use.
    pub free_bytes: u64,
    /// RAM a program could have without swapping (free plus what could be
    /// reclaimed at once).
    pub available_bytes: u64,
}

/// One mounted file system, as `/proc/mounts` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The device, or a name for a virtual file system.
    pub device: Vec<u8>,
    /// Where it is mounted.
    pub path: Vec<u8>,
    /// Its type (`ramfs`, `proc`).
    pub fs_type: Vec<u8>,
    /// Whether writes are refused.
    pub is_read_only: bool,
}

/// One processor, as `cpuinfo` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cpu {
    /// CPUID's vendor string (`GenuineIntel`, `AuthenticAMD`).
    pub vendor: Vec<u8>,
    /// CPUID's family, model and stepping.
    pub family: u32,
    /// See `family`.
    pub model: u32,
    /// See `family`.
    pub stepping: u32,
    /// CPUID's brand string.
    pub model_name: Vec<u8>,
    /// The clock rate in kHz (the time-stamp counter's).
    pub khz: u64,
}

/// Counts since boot, for `/proc/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    /// Context switches.
    pub context_switches: u64,
    /// Processes made (forks and programs the kernel started).
    pub processes_made: u64,
    /// The highest process id handed out.
    pub last_pid: u64,
}

/// What the kernel tells `/proc` (and the personality's `sysinfo`,
/// `times`, `getrusage`). Calls come from the thread reading the file or
/// making the call, so [`Source::caller`] is that thread's process.
pub trait Source: Send + Sync {
    /// The process of the calling thread (what `/proc/self` names), if the
    /// caller is a process.
    fn caller(&self) -> Option<u64>;
    /// Processor time the calling thread has had, in nanoseconds
    /// (`RUSAGE_THREAD`).
    fn caller_thread_cpu_ns(&self) -> u64;
    /// Every process not yet waited for, lowest id first.
    fn processes(&self) -> Vec<u64>;
    /// Process `pid`, if there is one.
    fn process(&self, pid: u64) -> Option<ProcessInfo>;
    /// The absolute path of process `pid`'s current directory.
    fn current_directory(&self, pid: u64) -> Option<Vec<u8>>;
    /// Process `pid`'s threads, lowest id first (none if it has ended).
    fn threads(&self, pid: u64) -> Vec<ThreadInfo>;
    /// What `/proc/sys/kernel/` shows now.
    fn kernel_settings(&self) -> KernelSettings;
    /// Process `pid`'s mappings, lowest first.
    fn mappings(&self, pid: u64) -> Option<Vec<Mapping>>;
    /// Process `pid`'s open descriptors, lowest first.
    fn descriptors(&self, pid: u64) -> Option<Vec<Descriptor>>;
    /// What descriptor `fd` of process `pid` names, as Linux's
    /// `/proc/PID/fd/N` says it (a path, `pipe:[INODE]`, ...).
    fn descriptor_path(&self, pid: u64, fd: u32) -> Option<Vec<u8>>;
    /// Memory now.
    fn memory(&self) -> MemoryInfo;
    /// Time since boot, in nanoseconds.
    fn uptime_ns(&self) -> u64;
    /// Time the processors have been idle since boot, in nanoseconds
    /// (summed over processors, as `/proc/uptime`'s second figure).
    fn idle_ns(&self) -> u64;
    /// Counts since boot.
    fn counters(&self) -> Counters;
    /// The mounted file systems, in the order they were mounted.
    fn mounts(&self) -> Vec<Mount>;
    /// The processors.
    fn cpus(&self) -> Vec<Cpu>;
    /// The line of `/proc/version` (without its newline).
    fn version(&self) -> Vec<u8>;
    /// The lockup watchdog's reports since boot, oldest first
    /// (`/proc/lockups`; empty while the kernel has never been stuck).
    fn lockups(&self) -> Vec<u8>;
}
