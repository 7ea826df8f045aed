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
//! - `info`: `uname`.
//!
//! Each process has a [`ProcessFiles`]: its descriptor table (open files
//! are capabilities in the process's `domain::HandleTable`), its current
//! directory and umask. The kernel tells the personality when a process
//! starts, forks and ends.
#![no_std]

extern crate alloc;

mod fdtable;
mod files;
mod fs;
mod info;
pub mod number;
mod user;

use alloc::{collections::BTreeMap, sync::Arc};

use dispatch::Principal;
use vfs::{Errno, Inode, OpenFile, PathContext, Vfs};

pub use fdtable::{FdTable, MAX_DESCRIPTORS};

/// What a process has of the file system: descriptors, current
/// directory, umask. Threads of a process share it.
pub struct ProcessFiles {
    /// The descriptor table.
    pub fds: FdTable,
    paths: spin::Mutex<PathContext>,
}

impl ProcessFiles {
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
}

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
    processes: spin::Mutex<BTreeMap<u64, Arc<ProcessFiles>>>,
}

impl Personality {
    /// A personality over `vfs`; new processes get `console` as standard
    /// input, output and error.
    pub fn new(vfs: Arc<Vfs>, console: Arc<OpenFile>) -> Personality {
        Personality {
            vfs,
            console,
            processes: spin::Mutex::new(BTreeMap::new()),
        }
    }

    /// The file tree.
    pub fn vfs(&self) -> &Arc<Vfs> {
        &self.vfs
    }

    /// A process started from nothing (by the kernel): descriptors 0, 1
    /// and 2 on the console, in "/", as root.
    pub fn process_started(&self, pid: u64) {
        let fds = FdTable::new(process_principal(pid));
        for fd in 0..3 {
            // A fresh table has room for three.
            let _ = fds.install_at(self.console.clone(), fd, false);
        }
        let files = ProcessFiles {
            fds,
            paths: spin::Mutex::new(self.vfs.context(0, 0)),
        };
        self.processes.lock().insert(pid, Arc::new(files));
    }

    /// `child` was forked from `parent`: it gets copies of the parent's
    /// descriptors (sharing the open files), directory and umask. Called
    /// before the child first runs.
    pub fn process_forked(&self, parent: u64, child: u64) {
        let Some(parent_files) = self.files(parent) else {
            self.process_started(child);
            return;
        };
        let files = ProcessFiles {
            fds: parent_files.fds.fork(process_principal(child)),
            paths: spin::Mutex::new(parent_files.context()),
        };
        self.processes.lock().insert(child, Arc::new(files));
    }

    /// The process ended: its descriptors are closed.
    pub fn process_ended(&self, pid: u64) {
        let files = self.processes.lock().remove(&pid);
        if let Some(files) = files {
            files.fds.clear();
        }
    }

    /// The files of process `pid`.
    pub fn files(&self, pid: u64) -> Option<Arc<ProcessFiles>> {
        self.processes.lock().get(&pid).cloned()
    }

    /// Processes with files (for tests: none may outlive its process).
    pub fn processes(&self) -> usize {
        self.processes.lock().len()
    }

    /// The system-call table: the result of call `number` with `args` made
    /// by process `pid`, or `None` if the call is not this personality's
    /// own (the kernel's core table answers it).
    pub fn handle(&self, pid: u64, number: u64, args: [u64; 6]) -> Option<i64> {
        use number::*;
        let [a0, a1, a2, a3, a4, _a5] = args;
        let files = match self.files(pid) {
            Some(files) => files,
            None => return None,
        };
        let files = &*files;
        let vfs = &*self.vfs;
        let result: Result<i64, Errno> = match number {
            READ => files::read(files, a0, a1, a2),
            WRITE => files::write(files, a0, a1, a2),
            READV => files::readv(files, a0, a1, a2),
            WRITEV => files::writev(files, a0, a1, a2),
            PREAD64 => files::pread(files, a0, a1, a2, a3),
            PWRITE64 => files::pwrite(files, a0, a1, a2, a3),
            LSEEK => files::lseek(files, a0, a1, a2),
            CLOSE => files::close(files, a0),
            DUP => files::dup(files, a0),
            DUP2 => files::dup2(files, a0, a1),
            DUP3 => files::dup3(files, a0, a1, a2),
            FCNTL => files::fcntl(files, a0, a1, a2),
            IOCTL => files::ioctl(files, a0, a1, a2),
            FSTAT => files::fstat(files, a0, a1),
            GETDENTS64 => files::getdents64(files, a0, a1, a2),
            FTRUNCATE => files::ftruncate(files, a0, a1),
            OPEN => fs::openat(vfs, files, AT_FDCWD, a0, a1, a2),
            CREAT => fs::openat(vfs, files, AT_FDCWD, a0, CREAT_FLAGS, a1),
            OPENAT => fs::openat(vfs, files, a0, a1, a2, a3),
            STAT => fs::fstatat(vfs, files, AT_FDCWD, a0, a1, 0),
            LSTAT => fs::fstatat(vfs, files, AT_FDCWD, a0, a1, AT_SYMLINK_NOFOLLOW),
            NEWFSTATAT => fs::fstatat(vfs, files, a0, a1, a2, a3),
            STATX => fs::statx(vfs, files, a0, a1, a2, a4),
            ACCESS => fs::faccessat(vfs, files, AT_FDCWD, a0, a1, 0),
            FACCESSAT => fs::faccessat(vfs, files, a0, a1, a2, 0),
            FACCESSAT2 => fs::faccessat(vfs, files, a0, a1, a2, a3),
            MKDIR => fs::mkdirat(vfs, files, AT_FDCWD, a0, a1),
            MKDIRAT => fs::mkdirat(vfs, files, a0, a1, a2),
            RMDIR => fs::unlinkat(vfs, files, AT_FDCWD, a0, AT_REMOVEDIR),
            UNLINK => fs::unlinkat(vfs, files, AT_FDCWD, a0, 0),
            UNLINKAT => fs::unlinkat(vfs, files, a0, a1, a2),
            RENAME => fs::renameat(vfs, files, AT_FDCWD, a0, AT_FDCWD, a1, 0),
            RENAMEAT => fs::renameat(vfs, files, a0, a1, a2, a3, 0),
            RENAMEAT2 => fs::renameat(vfs, files, a0, a1, a2, a3, a4),
            LINK => fs::linkat(vfs, files, AT_FDCWD, a0, AT_FDCWD, a1, 0),
            LINKAT => fs::linkat(vfs, files, a0, a1, a2, a3, a4),
            SYMLINK => fs::symlinkat(vfs, files, a0, AT_FDCWD, a1),
            SYMLINKAT => fs::symlinkat(vfs, files, a0, a1, a2),
            READLINK => fs::readlinkat(vfs, files, AT_FDCWD, a0, a1, a2),
            READLINKAT => fs::readlinkat(vfs, files, a0, a1, a2, a3),
            TRUNCATE => fs::truncate(vfs, files, a0, a1),
            CHMOD => fs::fchmodat(vfs, files, AT_FDCWD, a0, a1),
            FCHMODAT => fs::fchmodat(vfs, files, a0, a1, a2),
            FCHMOD => files::fchmod(vfs, files, a0, a1),
            GETCWD => fs::getcwd(vfs, files, a0, a1),
            CHDIR => fs::chdir(vfs, files, a0),
            FCHDIR => fs::fchdir(files, a0),
            UMASK => Ok(i64::from(files.set_umask(a0 as u32))),
            UNAME => info::uname(a0),
            _ => return None,
        };
        Some(result.unwrap_or_else(|errno| i64::from(-errno.as_i32())))
    }
}
