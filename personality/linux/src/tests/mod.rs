//! Host tests of the personality, one module per system-call family:
//! each call's argument checks and error paths (bad descriptors, bad
//! flags, sizes and counts that overflow, `EFAULT` from a pointer into a
//! page the fake user memory faults on), and successful calls showing the
//! checks let valid arguments through.
//!
//! Calls go through [`Personality::handle`], the real table, on the fake
//! machine (`machine::fake`: user memory, clock and blocking per test
//! thread) and a tree on `vfs::RamFs` with `/dev/null`, `/dev/zero` and
//! `/tmp`.

use alloc::{sync::Arc, vec::Vec};

use linux_abi::syscall::OPENAT;
use vfs::{flags, Errno, PathContext, RamFs, Timespec, Vfs};

use crate::{machine::fake, LinuxProcess, Personality};

mod close_range;
mod credentials;
mod epoll;
mod eventfd;
mod fdtable;
mod fifo;
mod files;
mod fs;
mod identity;
mod info;
mod locks;
mod mapping;
mod pidfd;
mod pipe;
mod poll;
mod prctl;
mod resource;
mod sched;
mod scheduling;
mod semaphore;
mod signal;
mod signal_frame;
mod signalfd;
mod socket;
mod splice;
mod statfs;
mod table;
mod timer_args;
mod timerfd;
mod unix_names;
mod unix_pair;
mod unix_socket;
mod user;
mod xattr;

/// The process the tests' calls come from.
const PID: u64 = 7;
/// The first byte of the user memory a test starts with.
const MAPPED: u64 = 0x10_0000;
/// How much is mapped from [`MAPPED`] (sixteen pages).
const MAPPED_BYTES: usize = 16 * 4096;
/// The page right after the mapped ones: never mapped, so a pointer into
/// it (or a range running into it) faults.
const UNMAPPED: u64 = MAPPED + MAPPED_BYTES as u64;
/// An address in the kernel half, which no user copy may reach.
const KERNEL_ADDRESS: u64 = 0xffff_8000_0000_0000;
/// Uptime the fake system reports to `sysinfo` and `times`, in ns.
const SYSTEM_UPTIME_NS: u64 = 5_500_000_000;
/// The calling process's processor time, as the fake system reports it.
const PROCESS_CPU_NS: u64 = 1_230_000_000;

/// `-errno`, as a call returns it.
fn err(errno: Errno) -> i64 {
    errno.as_negative()
}

/// What the kernel tells the personality of processes, memory and time:
/// one process, [`PID`], with made-up figures.
struct FakeSystem;

impl procfs::Source for FakeSystem {
    fn caller(&self) -> Option<u64> {
        Some(PID)
    }
    fn caller_thread_cpu_ns(&self) -> u64 {
        PROCESS_CPU_NS / 2
    }
    fn processes(&self) -> Vec<u64> {
        alloc::vec![PID]
    }
    fn process(&self, pid: u64) -> Option<procfs::ProcessInfo> {
        (pid == PID).then(|| procfs::ProcessInfo {
            pid,
            parent: 1,
            process_group: pid,
            session: pid,
            state: procfs::ProcessState::Running,
            command: b"test".to_vec(),
            arguments: b"test\0".to_vec(),
            environment: Vec::new(),
            executable: None,
            uid: 0,
            gid: 0,
            groups: Vec::new(),
            umask: Some(0o022),
            threads: 3,
            virtual_bytes: 1 << 20,
            resident_pages: 25,
            minor_faults: 4,
            children_minor_faults: 2,
            children_max_resident_pages: 9,
            cpu_ns: PROCESS_CPU_NS,
            children_cpu_ns: 40_000_000,
            start_ns: 0,
            context_switches: (1, 1),
        })
    }
    fn current_directory(&self, _pid: u64) -> Option<Vec<u8>> {
        Some(b"/".to_vec())
    }
    fn threads(&self, _pid: u64) -> Vec<procfs::ThreadInfo> {
        Vec::new()
    }
    fn kernel_settings(&self) -> procfs::KernelSettings {
        procfs::KernelSettings::default()
    }
    fn mappings(&self, _pid: u64) -> Option<Vec<procfs::Mapping>> {
        Some(Vec::new())
    }
    fn descriptors(&self, _pid: u64) -> Option<Vec<procfs::Descriptor>> {
        Some(Vec::new())
    }
    fn descriptor_path(&self, _pid: u64, _fd: u32) -> Option<Vec<u8>> {
        None
    }
    fn memory(&self) -> procfs::MemoryInfo {
        procfs::MemoryInfo {
            total_bytes: 64 << 20,
            free_bytes: 48 << 20,
            available_bytes: 48 << 20,
        }
    }
    fn uptime_ns(&self) -> u64 {
        SYSTEM_UPTIME_NS
    }
    fn idle_ns(&self) -> u64 {
        0
    }
    fn counters(&self) -> procfs::Counters {
        procfs::Counters::default()
    }
    fn mounts(&self) -> Vec<procfs::Mount> {
        Vec::new()
    }
    fn cpus(&self) -> Vec<procfs::Cpu> {
        Vec::new()
    }
    fn version(&self) -> Vec<u8> {
        b"Linux".to_vec()
    }
    fn lockups(&self) -> Vec<u8> {
        Vec::new()
    }
}

/// A personality with one process ([`PID`], its descriptors 0 to 2 on
/// `/dev/null`) over a fresh tree, and a fresh fake machine with
/// [`MAPPED_BYTES`] of user memory at [`MAPPED`].
struct Fixture {
    personality: Personality,
}

impl Fixture {
    fn new() -> Fixture {
        fake::reset();
        crate::set_interrupted_check(fake::is_interrupted);
        fake::map(MAPPED, MAPPED_BYTES);
        let clock: vfs::Clock = Arc::new(|| Timespec {
            sec: 1_000,
            nsec: 0,
        });
        let vfs = Arc::new(Vfs::new(RamFs::new(1, clock.clone())));
        vfs::devices::register_memory_devices(vfs.devices(), vfs::devices::Urandom::seeded(0x5eed));
        let root = vfs.context(0, 0);
        vfs::devices::make_memory_device_nodes(&vfs, &root, b"/dev").expect("/dev");
        vfs.mkdir(&root, b"/tmp", 0o777).expect("/tmp");
        let console = vfs
            .open(&root, b"/dev/null", flags::O_RDWR, 0)
            .expect("/dev/null");
        let personality = Personality::new(vfs, console, clock, Arc::new(FakeSystem));
        personality.process_started(PID);
        Fixture { personality }
    }

    /// System call `number` with `args` (the rest zero) from [`PID`].
    fn call(&self, number: u64, args: &[u64]) -> i64 {
        let mut all = [0u64; 6];
        all[..args.len()].copy_from_slice(args);
        self.personality
            .handle(PID, number, all)
            .expect("a call of the personality's own")
    }

    /// System call `number` with the path `path` (placed in user memory)
    /// as its first argument, then `rest`.
    fn call_path(&self, number: u64, path: &[u8], rest: &[u64]) -> i64 {
        let mut args = alloc::vec![put_string(0xf000, path)];
        args.extend_from_slice(rest);
        self.call(number, &args)
    }

    /// The calling process's state.
    fn process(&self) -> Arc<LinuxProcess> {
        self.personality.files(PID).expect("the test process")
    }

    /// The tree's root context.
    fn root(&self) -> PathContext {
        self.personality.vfs().context(0, 0)
    }

    /// Makes file `path` with `contents`.
    fn make_file(&self, path: &[u8], contents: &[u8]) {
        let file = self
            .personality
            .vfs()
            .open(
                &self.root(),
                path,
                flags::O_WRONLY | flags::O_CREAT | flags::O_TRUNC,
                0o644,
            )
            .expect("a new file");
        assert_eq!(file.write(contents), Ok(contents.len()));
    }

    /// The whole of file `path`.
    fn file_contents(&self, path: &[u8]) -> Vec<u8> {
        crate::read_whole_file(self.personality.vfs(), &self.root(), path).expect("a file")
    }

    /// Opens `path` with `open_flags` through `openat`: its descriptor.
    fn open(&self, path: &[u8], open_flags: u32) -> u64 {
        let name = put_string(0xf000, path);
        let fd = self.call(
            OPENAT,
            &[
                linux_abi::fcntl::AT_FDCWD,
                name,
                u64::from(open_flags),
                0o644,
            ],
        );
        assert!(fd >= 0, "open failed: {fd}");
        fd as u64
    }
}

/// The user address `offset` bytes into the mapped memory.
fn at(offset: u64) -> u64 {
    assert!(offset < MAPPED_BYTES as u64);
    MAPPED + offset
}

/// Writes `bytes` at `offset` into the mapped memory: their address.
fn put(offset: u64, bytes: &[u8]) -> u64 {
    fake::poke(at(offset), bytes);
    at(offset)
}

/// Writes `text` with a NUL at `offset` into the mapped memory: its
/// address.
fn put_string(offset: u64, text: &[u8]) -> u64 {
    let mut bytes = text.to_vec();
    bytes.push(0);
    put(offset, &bytes)
}

/// The little-endian `u64` at user address `address`.
fn peek_u64(address: u64) -> u64 {
    u64::from_le_bytes(fake::peek(address, 8).try_into().expect("8 bytes"))
}

/// The little-endian `u32` at user address `address`.
fn peek_u32(address: u64) -> u32 {
    u32::from_le_bytes(fake::peek(address, 4).try_into().expect("4 bytes"))
}

/// Writes `struct iovec`s `(base, len)` at `offset`: their address.
fn put_iovecs(offset: u64, vectors: &[(u64, u64)]) -> u64 {
    let bytes: Vec<u8> = vectors
        .iter()
        .flat_map(|&(base, len)| {
            linux_abi::uio::Iovec { base, len }
                .to_bytes()
                .into_iter()
                .collect::<Vec<u8>>()
        })
        .collect();
    put(offset, &bytes)
}
