//! Spindle's Linux personality: the Linux x86_64 system-call ABI, so that
//! programs built for Linux run unchanged (the role of SPIN's Unix server,
//! paper 002).
//!
//! The kernel installs [`Personality::handle`] as a handler on
//! `MachineTrap.Syscall`, guarded by the calling process's personality;
//! it answers the calls whose family lives here and leaves the rest
//! (processes, threads, memory, futexes, time: the kernel's core services)
//! to the kernel's own table by answering `None`. The table is
//! [`Personality::handle`]: one line per system call; each family has its
//! file:
//! - `files`: calls on descriptors (`read`, `write`, `lseek`, `dup`,
//!   `fcntl`, `fstat`, `getdents64`, ...);
//! - `fs`: calls on paths (`openat`, `stat`, `mkdir`, `rename`,
//!   `getcwd`, `chdir`, ...);
//! - `info`: `uname`, `sysinfo`; `persona`: `personality`;
//! - `poll`: `poll`, `ppoll`, `select`, `pselect6`;
//! - `identity`: ids, groups, sessions; `resource`: limits and usage
//!   (`times`, `getrusage`), `getrandom`; `prctl`: `prctl`;
//! - `pidfd`: process descriptors (`pidfd_open`, `pidfd_getfd`);
//!   `close_range`; `unshare`;
//! - `mapping`: what `mmap` of a descriptor maps (the kernel's core maps
//!   it);
//! - `statfs`, `xattr`, `sched`: what dynamically linked programs and
//!   bash ask of file systems, extended attributes and CPUs;
//! - `locks`: file locks, `fcntl`'s record locks and `flock`;
//! - `epoll`: `epoll_create`, `epoll_ctl`, `epoll_wait` and the
//!   `pwait`s, on `interest_list` (the `epoll_ctl` rules and which
//!   entries a wait reports);
//! - `splice`: `splice`, `tee`, `vmsplice` and `copy_file_range`, data
//!   moved between descriptors by the kernel;
//! - `pipe`: `pipe`, `pipe2`; `fifo`: named pipes, opened through the
//!   VFS (`vfs::FifoOpener`) onto the same queue;
//! - `eventfd`, `timerfd`, `signalfd`: event counters, timers and
//!   signals as files (`anonymous`: the nameless files they are);
//! - `socket`: `AF_INET` sockets (UDP and TCP over loopback) as open
//!   files, on the `sockets` service (`services/sockets`); other families
//!   are `EAFNOSUPPORT`, but for `AF_UNIX`;
//! - `unix_socket`: `AF_UNIX` sockets and their states (named, listening,
//!   connected), with `unix_address` (`struct sockaddr_un`),
//!   `unix_names` (the registry of bound names), `unix_connection` (a
//!   connected pair's data path), `unix_datagram` (a datagram socket's
//!   queue), `unix_pair` (`socketpair`), and the calls on them:
//!   `unix_calls` (`bind`, `listen`, `connect`, `accept`, ...),
//!   `unix_messages` (`send*`, `recv*`, `SCM_RIGHTS`), `unix_options`
//!   (`getsockopt`, `setsockopt`);
//! - `semaphore`: System V semaphores (`semget`, `semop`, `semtimedop`,
//!   `semctl`) on the sets of `services/sysv-ipc`.
//!
//! Each process has a [`LinuxProcess`]: its descriptor table (open files
//! are capabilities in the process's `domain::HandleTable`), its current
//! directory and umask. The kernel tells the personality when a process
//! starts, forks and ends.
#![no_std]

extern crate alloc;
#[cfg(not(target_os = "none"))]
extern crate std;

mod anonymous;
mod close_range;
pub mod credentials;
mod epoll;
mod eventfd;
mod fdtable;
mod fifo;
mod files;
mod fs;
pub mod identity;
mod info;
mod interest_list;
mod locks;
pub mod machine;
mod mapping;
mod persona;
pub mod pidfd;
mod pipe;
mod poll;
mod prctl;
pub mod process_args;
mod resource;
mod sched;
pub mod scheduling;
mod semaphore;
pub mod signal;
pub mod signal_frame;
mod signalfd;
mod socket;
mod splice;
mod statfs;
pub mod timer_args;
mod timerfd;
mod unix_address;
mod unix_calls;
mod unix_connection;
mod unix_datagram;
mod unix_messages;
mod unix_names;
mod unix_options;
mod unix_pair;
mod unix_socket;
mod unshare;
pub mod user;
mod wait;
mod xattr;

#[cfg(test)]
mod tests;

use alloc::{collections::BTreeMap, sync::Arc};
use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use credentials::Credentials;
use dispatch::Principal;
use vfs::{Errno, Inode, OpenFile, PathContext, Vfs};

pub use fdtable::{FdTable, MAX_DESCRIPTORS};
pub use info::{RELEASE, SYSTEM_NAME, VERSION};
pub use mapping::MapSource;
pub use pipe::set_interrupted_check;
pub use signal::{
    current_thread, set_current_thread, signals_may_be_pending, Disposition, SignalInfo,
    SignalState, Source,
};
pub use signalfd::set_current_process;
pub use socket::{wait_for_the_network, wake_network_waiters};
pub use wait::FileWaitQueue;

/// What the personality keeps of a process: descriptors, current
/// directory and umask, signal state, process group and session. Threads
/// of a process share it.
pub struct LinuxProcess {
    /// Its process id: whose record locks its calls take and release.
    pid: u64,
    /// The descriptor table. Close descriptors through
    /// [`LinuxProcess::close`], which also releases the process's record
    /// locks on the file.
    pub fds: FdTable,
    /// Every file's locks (the personality's registry).
    locks: Arc<locks::Registry>,
    paths: spin::Mutex<PathContext>,
    /// Signal dispositions, mask and pending signals.
    pub signals: spin::Mutex<SignalState>,
    /// Process group and session.
    groups: spin::Mutex<(u64, u64)>,
    /// `set_robust_list`'s head.
    robust_list: spin::Mutex<u64>,
    /// Its command name (Linux's `comm`, NUL-padded): its program file's
    /// base name, set by the kernel when it starts or `execve`s a program,
    /// changed by `prctl(PR_SET_NAME)` (busybox names itself after the
    /// applet it runs), inherited by `fork`.
    name: spin::Mutex<[u8; 16]>,
    /// Who it is and what it may do: ids, supplementary groups,
    /// capabilities. The file-system view (`paths`) carries a copy of the
    /// ids permission checks use, kept in step by
    /// [`LinuxProcess::change_credentials`].
    credentials: spin::Mutex<Credentials>,
    /// The buffer its `read`s and `write`s move data through.
    transfer: files::TransferBuffer,
    /// Its execution domain (`personality(2)`), inherited by `fork` and
    /// kept across `execve`.
    persona: core::sync::atomic::AtomicU32,
    /// The signal it gets when its parent ends (`PR_SET_PDEATHSIG`; 0:
    /// none): not inherited by `fork`, cleared when its effective or
    /// file-system ids change.
    parent_death_signal: AtomicU8,
    /// `PR_SET_NO_NEW_PRIVS`: set once for good, inherited by `fork`,
    /// kept across `execve`.
    no_new_privileges: AtomicBool,
    /// `PR_SET_THP_DISABLE`, inherited by `fork`, kept across `execve`
    /// (there are no transparent huge pages to disable: the flag is
    /// only reported back).
    huge_pages_disabled: AtomicBool,
    /// Its end's notice, which its process descriptors hold.
    exit: Arc<pidfd::ExitNotice>,
}

impl LinuxProcess {
    /// Closes descriptor `fd` (`EBADF` if it is not open); the process's
    /// record locks on its file go with it.
    pub fn close(&self, fd: i64) -> Result<(), Errno> {
        let file = self.fds.close(fd)?;
        self.locks.descriptor_closed(self.pid, &file);
        Ok(())
    }

    /// Installs `file` at exactly `fd` (`dup2`), closing what was there
    /// as [`LinuxProcess::close`] does.
    fn install_at(&self, file: Arc<OpenFile>, fd: i64, close_on_exec: bool) -> Result<i32, Errno> {
        let (fd, replaced) = self.fds.replace_at(file, fd, close_on_exec)?;
        if let Some(replaced) = replaced {
            self.locks.descriptor_closed(self.pid, &replaced);
        }
        Ok(fd)
    }

    /// The process's view of the tree (root, current directory, umask).
    pub fn context(&self) -> PathContext {
        self.paths.lock().clone()
    }

    fn set_cwd(&self, cwd: Arc<dyn Inode>) {
        self.paths.lock().cwd = cwd;
    }

    fn set_umask(&self, umask: u32) -> u32 {
        core::mem::replace(&mut self.paths.lock().umask, umask & 0o777)
    }

    /// Its process group.
    pub fn process_group(&self) -> u64 {
        self.groups.lock().0
    }

    /// Its session.
    pub fn session(&self) -> u64 {
        self.groups.lock().1
    }

    /// Its credentials (a copy).
    pub fn credentials(&self) -> Credentials {
        self.credentials.lock().clone()
    }

    /// Changes its credentials by `change`, which may refuse (then
    /// nothing changes), and gives path lookups the new file-system ids
    /// and groups.
    pub fn change_credentials(
        &self,
        change: impl FnOnce(&mut Credentials) -> Result<(), Errno>,
    ) -> Result<(), Errno> {
        let mut credentials = self.credentials.lock();
        let mut new = credentials.clone();
        change(&mut new)?;
        // Linux's `commit_creds`: a process that changes whom it acts as
        // loses its parent-death signal.
        let acting = |credentials: &Credentials| {
            (
                credentials.users.effective,
                credentials.users.file_system,
                credentials.groups.effective,
                credentials.groups.file_system,
            )
        };
        if acting(&new) != acting(&credentials) {
            self.parent_death_signal.store(0, Ordering::Relaxed);
        }
        let mut paths = self.paths.lock();
        paths.uid = new.users.file_system;
        paths.gid = new.groups.file_system;
        paths.groups = new.supplementary.clone();
        *credentials = new;
        Ok(())
    }

    /// `execve` of `file` (`None` for a script): set-id programs, saved
    /// ids and capabilities as [`credentials::Credentials::exec`] says.
    fn program_replaced(&self, file: Option<credentials::ProgramFile>) {
        let _ = self.change_credentials(|credentials| {
            credentials.exec(file);
            Ok(())
        });
    }

    /// Its command name (Linux's `comm`), if it has one.
    pub fn command_name(&self) -> Option<alloc::vec::Vec<u8>> {
        let name = *self.name.lock();
        let length = name
            .iter()
            .position(|&byte| byte == 0)
            .unwrap_or(name.len());
        (length > 0).then(|| name[..length].to_vec())
    }
}

/// The whole of regular file `path` (resolved in `context`): `EACCES` for
/// anything but a regular file.
pub fn read_whole_file(
    vfs: &Vfs,
    context: &PathContext,
    path: &[u8],
) -> Result<alloc::vec::Vec<u8>, Errno> {
    let file = vfs.open(context, path, vfs::flags::O_RDONLY, 0)?;
    if file.metadata().file_type() != vfs::FileType::Regular {
        return Err(Errno::EACCES);
    }
    let size = usize::try_from(file.metadata().size).map_err(|_| Errno::ENOMEM)?;
    let mut bytes = alloc::vec![0u8; size];
    let mut done = 0;
    while done < size {
        let count = file.read(&mut bytes[done..])?;
        if count == 0 {
            break;
        }
        done += count;
    }
    bytes.truncate(done);
    Ok(bytes)
}

/// The whole of regular file `path` (resolved in `context`), lent rather
/// than copied when the file system lends it (a boot-archive file not
/// written to: `Inode::borrowed_contents`), so that the loader can share
/// its pages through the page cache. `EACCES` for anything but a regular
/// file. Also what `execve` needs of the file's mode and owner.
pub fn read_program_file(
    vfs: &Vfs,
    context: &PathContext,
    path: &[u8],
) -> Result<(alloc::borrow::Cow<'static, [u8]>, credentials::ProgramFile), Errno> {
    let file = vfs.open(context, path, vfs::flags::O_RDONLY, 0)?;
    let metadata = file.metadata();
    if metadata.file_type() != vfs::FileType::Regular {
        return Err(Errno::EACCES);
    }
    let owner = credentials::ProgramFile {
        mode: metadata.mode,
        uid: metadata.uid,
        gid: metadata.gid,
    };
    if let Some(bytes) = file.inode().borrowed_contents() {
        return Ok((alloc::borrow::Cow::Borrowed(bytes), owner));
    }
    read_whole_file(vfs, context, path).map(|bytes| (alloc::borrow::Cow::Owned(bytes), owner))
}

/// A file as `/proc` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileIdentity {
    /// Its absolute path.
    pub path: alloc::vec::Vec<u8>,
    /// Its file system's device number.
    pub dev: u64,
    /// Its inode number.
    pub ino: u64,
}

/// Device number of the hidden file system pipes live on.
const PIPEFS_DEVICE: u64 = vfs::makedev(0, 12);

/// The principal a process's capability table belongs to (processes and
/// extensions share one numbering of principals; processes take the top
/// half).
pub fn process_principal(pid: u64) -> Principal {
    Principal((1 << 63) | pid)
}

/// The personality: the file tree and every process's files.
pub struct Personality {
    vfs: Arc<Vfs>,
    /// The open file every new process gets as 0, 1 and 2.
    console: Arc<OpenFile>,
    processes: spin::Mutex<BTreeMap<u64, Arc<LinuxProcess>>>,
    /// A directory of the personality's hidden file system, where pipes'
    /// FIFO inodes are made.
    pipes: Arc<dyn Inode>,
    /// The network stack `AF_INET` sockets live on (the loopback
    /// interface).
    sockets: Arc<sockets::Stack>,
    /// Which `AF_UNIX` socket each bound name stands for.
    unix_names: Arc<unix_socket::UnixNames>,
    /// `/dev/urandom`'s generator, for `getrandom`.
    urandom: Arc<dyn vfs::Device>,
    /// The root and current directory new processes start in (`None`:
    /// the tree's root).
    start_directory: spin::Mutex<Option<Arc<dyn Inode>>>,
    /// What the kernel says of processes, memory and time (`sysinfo`,
    /// `times`, `getrusage`; the same source `/proc` reads).
    system: Arc<dyn procfs::Source>,
    /// The host and domain names (`uname`, `sethostname`).
    names: info::SystemNames,
    /// Every file's locks.
    locks: Arc<locks::Registry>,
    /// The System V semaphore sets.
    semaphores: semaphore::Semaphores,
}

impl Personality {
    /// A personality over `vfs`; new processes get `/dev/console` (or
    /// `console` if the tree has none) as standard input, output and
    /// error; `system` tells it what the kernel knows of processes,
    /// memory and time.
    pub fn new(
        vfs: Arc<Vfs>,
        console: Arc<OpenFile>,
        clock: vfs::Clock,
        system: Arc<dyn procfs::Source>,
    ) -> Personality {
        let semaphores = semaphore::Semaphores::new(clock.clone());
        // FIFOs in the tree open onto the personality's pipes.
        vfs.set_fifo_opener(Arc::new(fifo::NamedPipes::default()));
        let pipefs: Arc<dyn vfs::FileSystem> = vfs::RamFs::new(PIPEFS_DEVICE, clock);
        let urandom = vfs
            .devices()
            .get(vfs::devices::URANDOM_DEV)
            .unwrap_or_else(|_| Arc::new(vfs::devices::Urandom::seeded(0x5eed)));
        Personality {
            vfs,
            console,
            pipes: pipefs.root(),
            sockets: {
                let clock = system.clone();
                // Socket waiters block until the stack changes.
                sockets::set_change_hook(socket::wake_network_waiters);
                Arc::new(sockets::Stack::new(move || clock.uptime_ns() / 1_000_000))
            },
            unix_names: Arc::default(),
            urandom,
            processes: spin::Mutex::new(BTreeMap::new()),
            start_directory: spin::Mutex::new(None),
            system,
            names: info::SystemNames::default(),
            locks: Arc::default(),
            semaphores,
        }
    }

    /// The stack `AF_INET` sockets live on (the kernel attaches the
    /// network interface to it).
    pub fn sockets(&self) -> &Arc<sockets::Stack> {
        &self.sockets
    }

    /// The host name and the domain name (`sethostname`,
    /// `setdomainname`), for `/proc/sys/kernel/`.
    pub fn host_and_domain_names(&self) -> (alloc::vec::Vec<u8>, alloc::vec::Vec<u8>) {
        self.names.host_and_domain()
    }

    /// The file tree.
    pub fn vfs(&self) -> &Arc<Vfs> {
        &self.vfs
    }

    /// A process started from nothing (by the kernel): descriptors 0, 1
    /// and 2 on the console, in "/", as root.
    pub fn process_started(&self, pid: u64) {
        let fds = FdTable::new(process_principal(pid));
        // An open file of its own (as a login opens the terminal), so its
        // status flags (`O_NONBLOCK`) are not another process's.
        let console = self
            .vfs
            .open(
                &self.vfs.context(0, 0),
                b"/dev/console",
                vfs::flags::O_RDWR,
                0,
            )
            .unwrap_or_else(|_| self.console.clone());
        for fd in 0..3 {
            // A fresh table has room for three.
            let _ = fds.install_at(console.clone(), fd, false);
        }
        let mut paths = self.vfs.context(0, 0);
        if let Some(directory) = self.start_directory.lock().clone() {
            // As if chrooted there: "/" and ".." stop at it.
            paths.root = directory.clone();
            paths.cwd = directory;
        }
        let files = LinuxProcess {
            pid,
            fds,
            locks: self.locks.clone(),
            paths: spin::Mutex::new(paths),
            signals: spin::Mutex::new(SignalState::default()),
            groups: spin::Mutex::new((pid, pid)),
            robust_list: spin::Mutex::new(0),
            name: spin::Mutex::new([0; 16]),
            credentials: spin::Mutex::new(Credentials::root()),
            transfer: files::TransferBuffer::default(),
            persona: core::sync::atomic::AtomicU32::new(persona::PER_LINUX),
            parent_death_signal: AtomicU8::new(0),
            no_new_privileges: AtomicBool::new(false),
            huge_pages_disabled: AtomicBool::new(false),
            exit: Arc::default(),
        };
        self.processes.lock().insert(pid, Arc::new(files));
    }

    /// Makes processes started from now on see `directory` as their root
    /// (as after `chroot`), or the tree's root again with `None`: the
    /// kernel confines programs it runs for tests (the system-call
    /// fuzzer) to a scratch tree it can remove afterwards.
    pub fn set_start_directory(&self, directory: Option<Arc<dyn Inode>>) {
        *self.start_directory.lock() = directory;
    }

    /// `child` was forked from `parent`: it gets copies of the parent's
    /// descriptors (sharing the open files), directory and umask. Called
    /// before the child first runs.
    pub fn process_forked(&self, parent: u64, child: u64) {
        let Some(parent_files) = self.files(parent) else {
            self.process_started(child);
            return;
        };
        // The child shares the parent's open files (and so their
        // description locks) but owns none of its record locks.
        let files = LinuxProcess {
            pid: child,
            fds: parent_files.fds.fork(process_principal(child)),
            locks: self.locks.clone(),
            paths: spin::Mutex::new(parent_files.context()),
            signals: spin::Mutex::new(
                parent_files
                    .signals
                    .lock()
                    .for_child(signal::current_thread()),
            ),
            groups: spin::Mutex::new(*parent_files.groups.lock()),
            robust_list: spin::Mutex::new(0),
            name: spin::Mutex::new(*parent_files.name.lock()),
            credentials: spin::Mutex::new(parent_files.credentials()),
            transfer: files::TransferBuffer::default(),
            persona: core::sync::atomic::AtomicU32::new(parent_files.persona()),
            parent_death_signal: AtomicU8::new(0),
            no_new_privileges: AtomicBool::new(
                parent_files.no_new_privileges.load(Ordering::Relaxed),
            ),
            huge_pages_disabled: AtomicBool::new(
                parent_files.huge_pages_disabled.load(Ordering::Relaxed),
            ),
            exit: Arc::default(),
        };
        self.processes.lock().insert(child, Arc::new(files));
    }

    /// The program file `path` names for process `pid` (`execve`): its
    /// bytes, lent where the file system lends them
    /// ([`read_program_file`]), and its mode and owner. `EACCES` for
    /// anything but a regular file.
    pub fn read_executable(
        &self,
        pid: u64,
        path: &[u8],
    ) -> Result<(alloc::borrow::Cow<'static, [u8]>, credentials::ProgramFile), Errno> {
        let files = self.files(pid).ok_or(Errno::ESRCH)?;
        read_program_file(&self.vfs, &files.context(), path)
    }

    /// The absolute path of the file `path` names for process `pid` (as
    /// its `/proc/PID/exe` says it: links followed), if it is there.
    pub fn executable_path(&self, pid: u64, path: &[u8]) -> Option<alloc::vec::Vec<u8>> {
        self.file_identity(Some(pid), path)
            .map(|identity| identity.path)
    }

    /// The file `path` names for process `pid` (`None`: the kernel, at
    /// the root): its absolute path, links followed, and its device and
    /// inode numbers (what `/proc/PID/maps` shows of a mapping).
    pub fn file_identity(&self, pid: Option<u64>, path: &[u8]) -> Option<FileIdentity> {
        let context = match pid {
            Some(pid) => self.files(pid)?.context(),
            None => self.vfs.context(0, 0),
        };
        let file = self
            .vfs
            .open(&context, path, vfs::flags::O_RDONLY, 0)
            .ok()?;
        let metadata = file.metadata();
        Some(FileIdentity {
            path: self.vfs.open_file_path(&context, &file),
            dev: metadata.dev,
            ino: metadata.ino,
        })
    }

    /// The file open as descriptor `fd` of process `pid`, as
    /// [`Self::file_identity`] tells it.
    pub fn descriptor_identity(&self, pid: u64, fd: u64) -> Option<FileIdentity> {
        let files = self.files(pid)?;
        let file = files.fds.get_raw(fd as i64).ok()?;
        let metadata = file.metadata();
        Some(FileIdentity {
            path: self.vfs.open_file_path(&files.context(), &file),
            dev: metadata.dev,
            ino: metadata.ino,
        })
    }

    /// Process `pid` is now called `name` (cut to 15 bytes): the kernel
    /// started or `execve`d a program of that base name.
    pub fn set_command_name(&self, pid: u64, name: &[u8]) {
        if let Some(files) = self.files(pid) {
            let mut stored = [0u8; 16];
            let length = name.len().min(15);
            stored[..length].copy_from_slice(&name[..length]);
            *files.name.lock() = stored;
        }
    }

    /// Process `pid` replaced its program (`execve`) with program file
    /// `program` (`None` when it ran a script's interpreter): descriptors
    /// marked close-on-exec are closed, and the credentials change as an
    /// `execve` of that file changes them (set-id bits, saved ids,
    /// capabilities).
    pub fn process_executed(&self, pid: u64, program: Option<credentials::ProgramFile>) {
        if let Some(files) = self.files(pid) {
            files.signals.lock().reset_for_exec();
            files.program_replaced(program);
            for fd in files.fds.descriptors() {
                if files.fds.close_on_exec(i64::from(fd)) == Ok(true) {
                    let _ = files.close(i64::from(fd));
                }
            }
        }
    }

    /// Thread `creator` of process `pid` made thread `thread` (`clone`
    /// with `CLONE_THREAD`): the new thread's signal state starts from
    /// its creator's.
    pub fn thread_started(&self, pid: u64, creator: u64, thread: u64) {
        if let Some(files) = self.files(pid) {
            files.signals.lock().thread_started(creator, thread);
        }
    }

    /// Thread `thread` of process `pid` ended: its own signal state goes.
    pub fn thread_ended(&self, pid: u64, thread: u64) {
        if let Some(files) = self.files(pid) {
            files.signals.lock().thread_ended(thread);
        }
    }

    /// The process ended: its descriptors are closed and its record
    /// locks released.
    pub fn process_ended(&self, pid: u64) {
        let files = self.processes.lock().remove(&pid);
        if let Some(files) = files {
            files.fds.clear();
            files.exit.announce();
        }
        self.locks.process_ended(pid);
        self.semaphores.process_ended(pid);
    }

    /// The process that descriptor `fd` of process `pid` names
    /// (`waitid(P_PIDFD, ...)`, `pidfd_send_signal`): `EBADF` if it is
    /// not a process descriptor.
    pub fn process_descriptor(&self, pid: u64, fd: u64) -> Result<pidfd::DescribedProcess, Errno> {
        let files = self.files(pid).ok_or(Errno::ESRCH)?;
        pidfd::descriptor_of(&files, fd)
    }

    /// The signal process `pid` asked to get when its parent ends
    /// (`PR_SET_PDEATHSIG`), if any.
    pub fn parent_death_signal(&self, pid: u64) -> Option<u8> {
        let signal = self.files(pid)?.parent_death_signal.load(Ordering::Relaxed);
        (signal != 0).then_some(signal)
    }

    /// The files of process `pid`.
    pub fn files(&self, pid: u64) -> Option<Arc<LinuxProcess>> {
        self.processes.lock().get(&pid).cloned()
    }

    /// The processes of the personality, by id.
    pub fn pids(&self) -> alloc::vec::Vec<u64> {
        self.processes.lock().keys().copied().collect()
    }

    /// The process group of process `pid`.
    pub fn process_group(&self, pid: u64) -> Option<u64> {
        self.files(pid).map(|files| files.groups.lock().0)
    }

    /// The processes of process group `group`.
    pub fn group_members(&self, group: u64) -> alloc::vec::Vec<u64> {
        self.processes
            .lock()
            .iter()
            .filter(|(_, files)| files.groups.lock().0 == group)
            .map(|(&pid, _)| pid)
            .collect()
    }

    /// Processes with files (for tests: none may outlive its process).
    pub fn processes(&self) -> usize {
        self.processes.lock().len()
    }

    /// Answers call `number` with `args` made by process `pid`, or `None`
    /// if the call is not this personality's own (the kernel's core table
    /// answers it) or the process is not one of its own.
    pub fn handle(&self, pid: u64, number: u64, args: [u64; 6]) -> Option<i64> {
        let call = table(number)?;
        let files = self.files(pid)?;
        let context = Call {
            vfs: &self.vfs,
            files: &files,
            personality: self,
            pid,
        };
        Some(call(&context, args).unwrap_or_else(|errno| errno.as_negative()))
    }
}

/// What a call gets: the file tree and the calling process's files.
struct Call<'a> {
    vfs: &'a Vfs,
    files: &'a LinuxProcess,
    personality: &'a Personality,
    pid: u64,
}

impl Call<'_> {
    /// What the `AF_UNIX` socket calls need of the personality.
    fn local(&self) -> unix_calls::LocalSockets<'_> {
        unix_calls::LocalSockets {
            vfs: self.vfs,
            directory: &self.personality.pipes,
            names: &self.personality.unix_names,
        }
    }

    /// The state of process `pid` as a call names it (0: the caller).
    fn process(&self, pid: u64) -> Result<Arc<LinuxProcess>, Errno> {
        let pid = if pid == 0 { self.pid } else { pid };
        self.personality.files(pid).ok_or(Errno::ESRCH)
    }
}

/// `creat(path, mode)` is `open(path, O_CREAT|O_WRONLY|O_TRUNC, mode)`.
const CREAT_FLAGS: u64 = (vfs::flags::O_CREAT | vfs::flags::O_WRONLY | vfs::flags::O_TRUNC) as u64;

/// A call of the personality's own families.
type Implementation = fn(&Call<'_>, [u64; 6]) -> Result<i64, Errno>;

/// Whether call `number` is the personality's own (a table lookup only:
/// cheap enough for the dispatch path of every system call).
pub fn owns(number: u64) -> bool {
    table(number).is_some()
}

/// The system-call table: one line per call of the personality's own
/// families; `None` for the calls left to the kernel's core.
fn table(number: u64) -> Option<Implementation> {
    use identity::IdChange;
    use linux_abi::{fcntl::*, syscall::*};
    Some(match number {
        READ => |c, [fd, buf, count, ..]| files::read(c.files, fd, buf, count),
        WRITE => |c, [fd, buf, count, ..]| files::write(c.files, fd, buf, count),
        READV => |c, [fd, iov, count, ..]| files::readv(c.files, fd, iov, count),
        WRITEV => |c, [fd, iov, count, ..]| files::writev(c.files, fd, iov, count),
        PREAD64 => |c, [fd, buf, count, at, ..]| files::pread(c.files, fd, buf, count, at),
        PWRITE64 => |c, [fd, buf, count, at, ..]| files::pwrite(c.files, fd, buf, count, at),
        PREADV => |c, [fd, iov, count, low, high, _]| {
            files::preadv(c.files, fd, iov, count, [low, high], None)
        },
        PWRITEV => |c, [fd, iov, count, low, high, _]| {
            files::pwritev(c.files, fd, iov, count, [low, high], None)
        },
        PREADV2 => |c, [fd, iov, count, low, high, flags]| {
            files::preadv(c.files, fd, iov, count, [low, high], Some(flags))
        },
        PWRITEV2 => |c, [fd, iov, count, low, high, flags]| {
            files::pwritev(c.files, fd, iov, count, [low, high], Some(flags))
        },
        SPLICE => |c, [fd_in, offset_in, fd_out, offset_out, length, flags]| {
            splice::splice(c.files, fd_in, offset_in, fd_out, offset_out, length, flags)
        },
        TEE => |c, [fd_in, fd_out, length, flags, ..]| {
            splice::tee(c.files, fd_in, fd_out, length, flags)
        },
        VMSPLICE => |c, [fd, vectors, count, flags, ..]| {
            splice::vmsplice(c.files, fd, vectors, count, flags)
        },
        COPY_FILE_RANGE => |c, [fd_in, offset_in, fd_out, offset_out, length, flags]| {
            splice::copy_file_range(c.files, fd_in, offset_in, fd_out, offset_out, length, flags)
        },
        LSEEK => |c, [fd, to, whence, ..]| files::lseek(c.files, fd, to, whence),
        CLOSE => |c, [fd, ..]| files::close(c.files, fd),
        DUP => |c, [fd, ..]| files::dup(c.files, fd),
        DUP2 => |c, [old, new, ..]| files::dup2(c.files, old, new),
        DUP3 => |c, [old, new, flags, ..]| files::dup3(c.files, old, new, flags),
        FCNTL => |c, [fd, command, argument, ..]| files::fcntl(c.files, fd, command, argument),
        FLOCK => |c, [fd, operation, ..]| locks::flock(c.files, fd, operation),
        IOCTL => |c, [fd, request, argument, ..]| files::ioctl(c.files, fd, request, argument),
        FSTAT => |c, [fd, buf, ..]| files::fstat(c.files, fd, buf),
        GETDENTS64 => |c, [fd, buf, count, ..]| files::getdents64(c.files, fd, buf, count),
        FTRUNCATE => |c, [fd, length, ..]| files::ftruncate(c.files, fd, length),
        SENDFILE => {
            |c, [out, input, offset, count, ..]| files::sendfile(c.files, out, input, offset, count)
        }
        FALLOCATE => {
            |c, [fd, mode, offset, length, ..]| files::fallocate(c.files, fd, mode, offset, length)
        }
        FCHMOD => |c, [fd, mode, ..]| files::fchmod(c.vfs, c.files, fd, mode),
        FCHOWN => |c, [fd, uid, gid, ..]| files::fchown(c.vfs, c.files, fd, uid, gid),
        OPEN => {
            |c, [path, flags, mode, ..]| fs::openat(c.vfs, c.files, AT_FDCWD, path, flags, mode)
        }
        CREAT => {
            |c, [path, mode, ..]| fs::openat(c.vfs, c.files, AT_FDCWD, path, CREAT_FLAGS, mode)
        }
        OPENAT => {
            |c, [dir, path, flags, mode, ..]| fs::openat(c.vfs, c.files, dir, path, flags, mode)
        }
        STAT => |c, [path, buf, ..]| fs::fstatat(c.vfs, c.files, AT_FDCWD, path, buf, 0),
        LSTAT => |c, [path, buf, ..]| {
            fs::fstatat(c.vfs, c.files, AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW)
        },
        NEWFSTATAT => {
            |c, [dir, path, buf, flags, ..]| fs::fstatat(c.vfs, c.files, dir, path, buf, flags)
        }
        STATX => |c, [dir, path, flags, mask, buf, _]| {
            fs::statx(c.vfs, c.files, dir, path, flags, mask, buf)
        },
        ACCESS => |c, [path, mode, ..]| fs::faccessat(c.vfs, c.files, AT_FDCWD, path, mode, 0),
        FACCESSAT => |c, [dir, path, mode, ..]| fs::faccessat(c.vfs, c.files, dir, path, mode, 0),
        FACCESSAT2 => {
            |c, [dir, path, mode, flags, ..]| fs::faccessat(c.vfs, c.files, dir, path, mode, flags)
        }
        MKDIR => |c, [path, mode, ..]| fs::mkdirat(c.vfs, c.files, AT_FDCWD, path, mode),
        MKDIRAT => |c, [dir, path, mode, ..]| fs::mkdirat(c.vfs, c.files, dir, path, mode),
        MKNOD => |c, [path, mode, dev, ..]| fs::mknodat(c.vfs, c.files, AT_FDCWD, path, mode, dev),
        MKNODAT => {
            |c, [dir, path, mode, dev, ..]| fs::mknodat(c.vfs, c.files, dir, path, mode, dev)
        }
        RMDIR => |c, [path, ..]| fs::unlinkat(c.vfs, c.files, AT_FDCWD, path, AT_REMOVEDIR),
        UNLINK => |c, [path, ..]| fs::unlinkat(c.vfs, c.files, AT_FDCWD, path, 0),
        UNLINKAT => |c, [dir, path, flags, ..]| fs::unlinkat(c.vfs, c.files, dir, path, flags),
        RENAME => |c, [old, new, ..]| fs::renameat(c.vfs, c.files, AT_FDCWD, old, AT_FDCWD, new, 0),
        RENAMEAT => |c, [od, old, nd, new, ..]| fs::renameat(c.vfs, c.files, od, old, nd, new, 0),
        RENAMEAT2 => {
            |c, [od, old, nd, new, flags, _]| fs::renameat(c.vfs, c.files, od, old, nd, new, flags)
        }
        LINK => |c, [old, new, ..]| fs::linkat(c.vfs, c.files, AT_FDCWD, old, AT_FDCWD, new, 0),
        LINKAT => {
            |c, [od, old, nd, new, flags, _]| fs::linkat(c.vfs, c.files, od, old, nd, new, flags)
        }
        SYMLINK => |c, [target, path, ..]| fs::symlinkat(c.vfs, c.files, target, AT_FDCWD, path),
        SYMLINKAT => |c, [target, dir, path, ..]| fs::symlinkat(c.vfs, c.files, target, dir, path),
        READLINK => {
            |c, [path, buf, size, ..]| fs::readlinkat(c.vfs, c.files, AT_FDCWD, path, buf, size)
        }
        READLINKAT => {
            |c, [dir, path, buf, size, ..]| fs::readlinkat(c.vfs, c.files, dir, path, buf, size)
        }
        TRUNCATE => |c, [path, length, ..]| fs::truncate(c.vfs, c.files, path, length),
        CHMOD => |c, [path, mode, ..]| fs::fchmodat(c.vfs, c.files, AT_FDCWD, path, mode),
        FCHMODAT => |c, [dir, path, mode, ..]| fs::fchmodat(c.vfs, c.files, dir, path, mode),
        CHOWN => {
            |c, [path, uid, gid, ..]| fs::fchownat(c.vfs, c.files, AT_FDCWD, path, uid, gid, 0)
        }
        LCHOWN => |c, [path, uid, gid, ..]| {
            fs::fchownat(
                c.vfs,
                c.files,
                AT_FDCWD,
                path,
                uid,
                gid,
                AT_SYMLINK_NOFOLLOW,
            )
        },
        FCHOWNAT => |c, [dir, path, uid, gid, flags, _]| {
            fs::fchownat(c.vfs, c.files, dir, path, uid, gid, flags)
        },
        UTIMENSAT => |c, [dir, path, times, flags, ..]| {
            fs::utimensat(c.vfs, c.files, dir, path, times, flags)
        },
        FUTIMESAT => |c, [dir, path, times, ..]| fs::futimesat(c.vfs, c.files, dir, path, times),
        UTIMES => |c, [path, times, ..]| fs::futimesat(c.vfs, c.files, AT_FDCWD, path, times),
        UTIME => |c, [path, times, ..]| fs::utime(c.vfs, c.files, path, times),
        GETCWD => |c, [buf, size, ..]| fs::getcwd(c.vfs, c.files, buf, size),
        CHDIR => |c, [path, ..]| fs::chdir(c.vfs, c.files, path),
        FCHDIR => |c, [fd, ..]| fs::fchdir(c.files, fd),
        CHROOT => |c, [path, ..]| fs::chroot(c.vfs, c.files, path),
        UMASK => |c, [mask, ..]| Ok(i64::from(c.files.set_umask(mask as u32))),
        UNAME => |c, [buf, ..]| info::uname(&c.personality.names, c.files.persona(), buf),
        PERSONALITY => |c, [persona, ..]| persona::personality(c.files, persona),
        SETHOSTNAME => |c, [name, length, ..]| {
            info::set_name(
                &c.personality.names,
                c.files,
                info::Name::Host,
                name,
                length,
            )
        },
        SETDOMAINNAME => |c, [name, length, ..]| {
            info::set_name(
                &c.personality.names,
                c.files,
                info::Name::Domain,
                name,
                length,
            )
        },
        SYSINFO => |c, [buf, ..]| info::sysinfo(&*c.personality.system, buf),
        POLL => |c, [fds, count, timeout, ..]| {
            poll::poll(c.files, fds, count, poll::timeout_argument(timeout))
        },
        PPOLL => |c, [fds, count, timeout, mask, size, _]| {
            poll::ppoll(c.files, fds, count, timeout, mask, size)
        },
        SELECT => |c, [count, read, write, except, timeout, _]| {
            poll::select(c.files, count, [read, write, except], timeout)
        },
        PSELECT6 => |c, [count, read, write, except, timeout, mask]| {
            poll::pselect6(c.files, count, [read, write, except], timeout, mask)
        },
        EPOLL_CREATE => |c, [size, ..]| epoll::epoll_create(&c.personality.pipes, c.files, size),
        EPOLL_CREATE1 => {
            |c, [flags, ..]| epoll::epoll_create1(&c.personality.pipes, c.files, flags)
        }
        EPOLL_CTL => |c, [epfd, op, fd, event, ..]| epoll::epoll_ctl(c.files, epfd, op, fd, event),
        EPOLL_WAIT => |c, [epfd, events, max, timeout, ..]| {
            epoll::epoll_wait(c.files, epfd, events, max, timeout)
        },
        EPOLL_PWAIT => |c, [epfd, events, max, timeout, mask, size]| {
            epoll::epoll_pwait(c.files, epfd, events, max, timeout, (mask, size))
        },
        EPOLL_PWAIT2 => |c, [epfd, events, max, timeout, mask, size]| {
            epoll::epoll_pwait2(c.files, epfd, events, max, timeout, (mask, size))
        },
        EVENTFD => |c, [initial, ..]| eventfd::eventfd(&c.personality.pipes, c.files, initial),
        EVENTFD2 => |c, [initial, flags, ..]| {
            eventfd::eventfd2(&c.personality.pipes, c.files, initial, flags)
        },
        TIMERFD_CREATE => |c, [clock, flags, ..]| {
            timerfd::timerfd_create(&c.personality.pipes, c.files, clock, flags)
        },
        TIMERFD_SETTIME => {
            |c, [fd, flags, new, old, ..]| timerfd::timerfd_settime(c.files, fd, flags, new, old)
        }
        TIMERFD_GETTIME => |c, [fd, current, ..]| timerfd::timerfd_gettime(c.files, fd, current),
        SIGNALFD => |c, [fd, mask, size, ..]| {
            signalfd::signalfd(&c.personality.pipes, &c.process(0)?, fd, mask, size)
        },
        SIGNALFD4 => |c, [fd, mask, size, flags, ..]| {
            signalfd::signalfd4(&c.personality.pipes, &c.process(0)?, fd, mask, size, flags)
        },
        PIPE => |c, [fds, ..]| pipe::pipe2(&c.personality.pipes, c.files, fds, 0),
        PIPE2 => |c, [fds, flags, ..]| pipe::pipe2(&c.personality.pipes, c.files, fds, flags),
        RT_SIGACTION => {
            |c, [signal, act, old, size, ..]| signal::rt_sigaction(c.files, signal, act, old, size)
        }
        RT_SIGPROCMASK => {
            |c, [how, set, old, size, ..]| signal::rt_sigprocmask(c.files, how, set, old, size)
        }
        SIGALTSTACK => |c, [new, old, ..]| signal::sigaltstack(c.files, new, old),
        RT_SIGPENDING => |c, [set, size, ..]| signal::rt_sigpending(c.files, set, size),
        RT_SIGSUSPEND => |c, [mask, size, ..]| signal::rt_sigsuspend(c.files, mask, size),
        RT_SIGTIMEDWAIT => |c, [set, info, timeout, size, ..]| {
            signal::rt_sigtimedwait(c.files, set, info, timeout, size)
        },
        PAUSE => |c, _| signal::pause(c.files),
        GETUID => |c, _| identity::get_id(c.files, identity::Which::RealUser),
        GETEUID => |c, _| identity::get_id(c.files, identity::Which::EffectiveUser),
        GETGID => |c, _| identity::get_id(c.files, identity::Which::RealGroup),
        GETEGID => |c, _| identity::get_id(c.files, identity::Which::EffectiveGroup),
        SETUID => |c, [id, ..]| identity::set_ids(c.files, IdChange::User(id)),
        SETGID => |c, [id, ..]| identity::set_ids(c.files, IdChange::Group(id)),
        SETREUID => |c, [r, e, ..]| identity::set_ids(c.files, IdChange::RealEffectiveUser(r, e)),
        SETREGID => |c, [r, e, ..]| identity::set_ids(c.files, IdChange::RealEffectiveGroup(r, e)),
        SETRESUID => |c, [r, e, s, ..]| identity::set_ids(c.files, IdChange::AllUsers(r, e, s)),
        SETRESGID => |c, [r, e, s, ..]| identity::set_ids(c.files, IdChange::AllGroups(r, e, s)),
        SETFSUID => |c, [id, ..]| identity::set_file_system_id(c.files, id, false),
        SETFSGID => |c, [id, ..]| identity::set_file_system_id(c.files, id, true),
        GETRESUID => |c, [r, e, s, ..]| identity::getres_ids(c.files, [r, e, s], false),
        GETRESGID => |c, [r, e, s, ..]| identity::getres_ids(c.files, [r, e, s], true),
        CAPGET => |c, [header, data, ..]| identity::capget(header, data, |pid| c.process(pid).ok()),
        CAPSET => |c, [header, data, ..]| identity::capset(c.files, c.pid, header, data),
        GETGROUPS => |c, [size, list, ..]| identity::getgroups(c.files, size, list),
        SETGROUPS => |c, [size, list, ..]| identity::setgroups(c.files, size, list),
        GETPGRP => |c, _| Ok(c.files.process_group() as i64),
        GETPGID => |c, [pid, ..]| Ok(c.process(pid)?.process_group() as i64),
        GETSID => |c, [pid, ..]| Ok(c.process(pid)?.session() as i64),
        SETPGID => |c, [pid, pgid, ..]| {
            let target = if pid == 0 { c.pid } else { pid };
            identity::setpgid(&*c.process(pid)?, target, pgid)
        },
        SETSID => |c, _| identity::setsid(c.files, c.pid),
        PRLIMIT64 => |c, [pid, resource, new, old, ..]| {
            c.process(pid)?;
            resource::prlimit64(resource, new, old)
        },
        GETRLIMIT => |_, [resource, old, ..]| resource::prlimit64(resource, 0, old),
        SETRLIMIT => |_, [resource, new, ..]| resource::prlimit64(resource, new, 0),
        TIMES => |c, [buf, ..]| resource::times(&*c.personality.system, c.pid, buf),
        GETRUSAGE => {
            |c, [who, usage, ..]| resource::getrusage(&*c.personality.system, c.pid, who, usage)
        }
        GETRANDOM => |c, [buf, count, flags, ..]| {
            resource::getrandom(&*c.personality.urandom, buf, count, flags)
        },
        SET_ROBUST_LIST => |c, [head, length, ..]| resource::set_robust_list(c.files, head, length),
        PRCTL => |c, [option, argument, a3, a4, a5, _]| {
            prctl::prctl(c.files, option, argument, [a3, a4, a5])
        },
        PIDFD_OPEN => |c, [pid, flags, ..]| pidfd::pidfd_open(c.personality, c.files, pid, flags),
        PIDFD_GETFD => {
            |c, [pidfd, fd, flags, ..]| pidfd::pidfd_getfd(c.personality, c.files, pidfd, fd, flags)
        }
        CLOSE_RANGE => {
            |c, [first, last, flags, ..]| close_range::close_range(c.files, first, last, flags)
        }
        UNSHARE => |c, [flags, ..]| {
            let threads = c.personality.system.process(c.pid).map_or(1, |p| p.threads);
            unshare::unshare(c.files, threads, flags)
        },
        STATFS => |c, [path, buf, ..]| statfs::statfs(c.vfs, c.files, path, buf),
        FSTATFS => |c, [fd, buf, ..]| statfs::fstatfs(c.files, fd, buf),
        GETXATTR => |c, [path, name, value, size, ..]| {
            xattr::get(c.vfs, c.files, xattr::Target::Path(path), name, value, size)
        },
        LGETXATTR => |c, [path, name, value, size, ..]| {
            xattr::get(c.vfs, c.files, xattr::Target::Link(path), name, value, size)
        },
        FGETXATTR => |c, [fd, name, value, size, ..]| {
            xattr::get(
                c.vfs,
                c.files,
                xattr::Target::Descriptor(fd),
                name,
                value,
                size,
            )
        },
        LISTXATTR => |c, [path, list, size, ..]| {
            xattr::list(c.vfs, c.files, xattr::Target::Path(path), list, size)
        },
        LLISTXATTR => |c, [path, list, size, ..]| {
            xattr::list(c.vfs, c.files, xattr::Target::Link(path), list, size)
        },
        FLISTXATTR => |c, [fd, list, size, ..]| {
            xattr::list(c.vfs, c.files, xattr::Target::Descriptor(fd), list, size)
        },
        SETXATTR => |c, [path, name, value, size, flags, _]| {
            let rest = [name, value, size, flags];
            xattr::set(c.vfs, c.files, xattr::Target::Path(path), rest)
        },
        LSETXATTR => |c, [path, name, value, size, flags, _]| {
            let rest = [name, value, size, flags];
            xattr::set(c.vfs, c.files, xattr::Target::Link(path), rest)
        },
        FSETXATTR => |c, [fd, name, value, size, flags, _]| {
            let rest = [name, value, size, flags];
            xattr::set(c.vfs, c.files, xattr::Target::Descriptor(fd), rest)
        },
        REMOVEXATTR => {
            |c, [path, name, ..]| xattr::remove(c.vfs, c.files, xattr::Target::Path(path), name)
        }
        LREMOVEXATTR => {
            |c, [path, name, ..]| xattr::remove(c.vfs, c.files, xattr::Target::Link(path), name)
        }
        FREMOVEXATTR => {
            |c, [fd, name, ..]| xattr::remove(c.vfs, c.files, xattr::Target::Descriptor(fd), name)
        }
        FADVISE64 => |c, [fd, _offset, _len, advice, ..]| files::fadvise64(c.files, fd, advice),
        SOCKET => |c, [domain, kind, protocol, ..]| {
            let personality = c.personality;
            socket::socket(
                &personality.sockets,
                &c.local(),
                c.files,
                domain,
                kind,
                protocol,
            )
        },
        SOCKETPAIR => |c, [domain, kind, protocol, fds, ..]| {
            let personality = c.personality;
            let (directory, names) = (&personality.pipes, &personality.unix_names);
            unix_pair::socketpair(directory, names, c.files, domain, kind, protocol, fds)
        },
        BIND => {
            |c, [fd, address, length, ..]| socket::bind(&c.local(), c.files, fd, address, length)
        }
        CONNECT => {
            |c, [fd, address, length, ..]| socket::connect(&c.local(), c.files, fd, address, length)
        }
        LISTEN => |c, [fd, backlog, ..]| socket::listen(c.files, fd, backlog),
        ACCEPT => |c, [fd, address, length, ..]| {
            socket::accept4(&c.local(), c.files, fd, address, length, 0)
        },
        ACCEPT4 => |c, [fd, address, length, flags, ..]| {
            socket::accept4(&c.local(), c.files, fd, address, length, flags)
        },
        SENDTO => |c, [fd, buf, len, flags, address, length]| {
            socket::sendto(&c.local(), c.files, fd, buf, len, flags, address, length)
        },
        RECVFROM => |c, [fd, buf, len, flags, address, length]| {
            socket::recvfrom(c.files, fd, buf, len, flags, address, length)
        },
        SENDMSG => {
            |c, [fd, message, flags, ..]| socket::sendmsg(&c.local(), c.files, fd, message, flags)
        }
        RECVMSG => |c, [fd, message, flags, ..]| socket::recvmsg(c.files, fd, message, flags),
        SENDMMSG => |c, [fd, vector, count, flags, ..]| {
            socket::sendmmsg(&c.local(), c.files, fd, vector, count, flags)
        },
        RECVMMSG => |c, [fd, vector, count, flags, timeout, ..]| {
            socket::recvmmsg(c.files, fd, vector, count, flags, timeout)
        },
        SHUTDOWN => |c, [fd, how, ..]| socket::shutdown(c.files, fd, how),
        GETSOCKNAME => {
            |c, [fd, address, length, ..]| socket::getsockname(c.files, fd, address, length)
        }
        GETPEERNAME => {
            |c, [fd, address, length, ..]| socket::getpeername(c.files, fd, address, length)
        }
        SETSOCKOPT => |c, [fd, level, name, value, length, ..]| {
            socket::setsockopt(c.files, fd, level, name, value, length)
        },
        GETSOCKOPT => |c, [fd, level, name, value, length, ..]| {
            socket::getsockopt(c.files, fd, level, name, value, length)
        },
        SCHED_GETAFFINITY => |c, [pid, size, mask, ..]| {
            c.process(pid)?;
            sched::sched_getaffinity(size, mask)
        },
        SCHED_SETAFFINITY => |c, [pid, size, mask, ..]| {
            c.process(pid)?;
            sched::sched_setaffinity(size, mask)
        },
        SEMGET => |c, [key, count, flags, ..]| {
            semaphore::semget(&c.personality.semaphores, c.files, c.pid, key, count, flags)
        },
        SEMOP => |c, [id, operations, count, ..]| {
            let semaphores = &c.personality.semaphores;
            semaphore::semtimedop(semaphores, c.files, c.pid, id, operations, count, 0)
        },
        SEMTIMEDOP => |c, [id, operations, count, timeout, ..]| {
            let semaphores = &c.personality.semaphores;
            semaphore::semtimedop(semaphores, c.files, c.pid, id, operations, count, timeout)
        },
        SEMCTL => |c, [id, number, command, argument, ..]| {
            let semaphores = &c.personality.semaphores;
            semaphore::semctl(semaphores, c.files, c.pid, id, number, command, argument)
        },
        FSYNC | FDATASYNC => |c, [fd, ..]| files::fsync(c.files, fd),
        SYNCFS => |c, [fd, ..]| files::syncfs(c.files, fd),
        SYNC => |_, _| Ok(0),
        _ => return None,
    })
}
