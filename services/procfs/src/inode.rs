//! [`ProcFs`] and its inodes. An inode is a small value naming a node of
//! the tree (the root, `PID/stat`, `PID/fd/3`, ...); nothing is stored:
//! a lookup asks the [`Source`] whether the process or descriptor is
//! there, and a read writes the file out from what the source says now.
//!
//! Inode numbers are fixed by the node, so that a listing and a lookup
//! agree (`getcwd` and `/proc/PID/cwd` find directories by number): the
//! root is 1, `self` 2, the system files 3 on, and each process's nodes
//! are `PID << 16` plus the node's index (descriptor `N` is
//! `PID << 16 | (32 + N)`).
//!
//! A process that ends between a lookup and a read makes the read fail
//! with `ESRCH`, as on Linux.

use alloc::{format, sync::Arc, vec::Vec};
use core::any::Any;

use vfs::{
    DirEntry, Errno, FileSystem, FileType, Inode, Metadata, NewNode, SetAttributes, Timespec,
};

use crate::{
    format::{self, KernelSetting},
    source::{Access, ProcessInfo, Source, ThreadInfo},
};

/// The files of the root, in listing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SystemFile {
    CpuInfo,
    LoadAverage,
    Lockups,
    MemInfo,
    Mounts,
    Stat,
    Uptime,
    Version,
}

const SYSTEM_FILES: [(&[u8], SystemFile); 8] = [
    (b"cpuinfo", SystemFile::CpuInfo),
    (b"loadavg", SystemFile::LoadAverage),
    (b"lockups", SystemFile::Lockups),
    (b"meminfo", SystemFile::MemInfo),
    (b"mounts", SystemFile::Mounts),
    (b"stat", SystemFile::Stat),
    (b"uptime", SystemFile::Uptime),
    (b"version", SystemFile::Version),
];

/// The files of `sys/kernel/`, in listing order.
const KERNEL_SETTINGS: [(&[u8], KernelSetting); 6] = [
    (b"domainname", KernelSetting::DomainName),
    (b"hostname", KernelSetting::HostName),
    (b"osrelease", KernelSetting::OsRelease),
    (b"ostype", KernelSetting::OsType),
    (b"pid_max", KernelSetting::PidMax),
    (b"version", KernelSetting::Version),
];

/// The nodes of a process's directory, in listing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProcessNode {
    CommandLine,
    Command,
    CurrentDirectory,
    Environment,
    Executable,
    Descriptors,
    Maps,
    Mounts,
    Stat,
    StatM,
    Status,
    Tasks,
}

const PROCESS_NODES: [(&[u8], ProcessNode); 12] = [
    (b"cmdline", ProcessNode::CommandLine),
    (b"comm", ProcessNode::Command),
    (b"cwd", ProcessNode::CurrentDirectory),
    (b"environ", ProcessNode::Environment),
    (b"exe", ProcessNode::Executable),
    (b"fd", ProcessNode::Descriptors),
    (b"maps", ProcessNode::Maps),
    (b"mounts", ProcessNode::Mounts),
    (b"stat", ProcessNode::Stat),
    (b"statm", ProcessNode::StatM),
    (b"status", ProcessNode::Status),
    (b"task", ProcessNode::Tasks),
];

/// The files of a thread's directory (`PID/task/TID/`), in listing
/// order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ThreadNode {
    Command,
    Stat,
    Status,
}

const THREAD_NODES: [(&[u8], ThreadNode); 3] = [
    (b"comm", ThreadNode::Command),
    (b"stat", ThreadNode::Stat),
    (b"status", ThreadNode::Status),
];

/// Which node of the tree an inode is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    Root,
    SelfLink,
    System(SystemFile),
    /// `sys/`.
    Sys,
    /// `sys/kernel/`.
    SysKernel,
    Setting(KernelSetting),
    Process(u64),
    OfProcess(u64, ProcessNode),
    Descriptor(u64, u32),
    /// `PID/task/TID/`.
    Thread(u64, u64),
    OfThread(u64, u64, ThreadNode),
}

/// The inode number of the first system file.
const FIRST_SYSTEM_INO: u64 = 3;
/// The inode number of `sys/` (`sys/kernel/` is the next, then its
/// files), clear of the system files.
const SYS_INO: u64 = 64;
/// Thread nodes are numbered `THREAD_NODES_BIT | tid << PID_SHIFT |
/// index`, clear of the processes' numbers.
const THREAD_NODES_BIT: u64 = 1 << 62;
/// Process nodes are numbered `pid << PID_SHIFT | index`.
const PID_SHIFT: u32 = 16;
/// Index of a process's directory among its nodes.
const PROCESS_DIRECTORY_INDEX: u64 = 1;
/// Index of a process's first node of [`PROCESS_NODES`].
const FIRST_PROCESS_NODE_INDEX: u64 = 2;
/// Index of descriptor 0's link.
const FIRST_DESCRIPTOR_INDEX: u64 = 32;
/// Listing positions of the root from which entries are processes:
/// `PID_POSITIONS + pid` (so a listing resumed after a process ended
/// neither skips nor repeats one).
const PID_POSITIONS: u64 = 1 << 20;
/// `st_size` of descriptor links (Linux's).
const DESCRIPTOR_LINK_SIZE: u64 = 64;

impl Node {
    fn ino(self) -> u64 {
        let of_process = |pid: u64, index: u64| pid << PID_SHIFT | index;
        match self {
            Node::Root => 1,
            Node::SelfLink => 2,
            Node::System(file) => {
                let index = SYSTEM_FILES
                    .iter()
                    .position(|(_, f)| *f == file)
                    .unwrap_or(0);
                FIRST_SYSTEM_INO + index as u64
            }
            Node::Process(pid) => of_process(pid, PROCESS_DIRECTORY_INDEX),
            Node::OfProcess(pid, node) => {
                let index = PROCESS_NODES
                    .iter()
                    .position(|(_, n)| *n == node)
                    .unwrap_or(0);
                of_process(pid, FIRST_PROCESS_NODE_INDEX + index as u64)
            }
            Node::Descriptor(pid, fd) => of_process(pid, FIRST_DESCRIPTOR_INDEX + u64::from(fd)),
            Node::Sys => SYS_INO,
            Node::SysKernel => SYS_INO + 1,
            Node::Setting(setting) => {
                let index = KERNEL_SETTINGS
                    .iter()
                    .position(|(_, s)| *s == setting)
                    .unwrap_or(0);
                SYS_INO + 2 + index as u64
            }
            Node::Thread(_, tid) => THREAD_NODES_BIT | of_process(tid, PROCESS_DIRECTORY_INDEX),
            Node::OfThread(_, tid, node) => {
                let index = THREAD_NODES
                    .iter()
                    .position(|(_, n)| *n == node)
                    .unwrap_or(0);
                THREAD_NODES_BIT | of_process(tid, FIRST_PROCESS_NODE_INDEX + index as u64)
            }
        }
    }

    fn file_type(self) -> FileType {
        match self {
            Node::Root
            | Node::Sys
            | Node::SysKernel
            | Node::Process(_)
            | Node::Thread(..)
            | Node::OfProcess(_, ProcessNode::Descriptors | ProcessNode::Tasks) => {
                FileType::Directory
            }
            Node::SelfLink
            | Node::Descriptor(..)
            | Node::OfProcess(_, ProcessNode::CurrentDirectory | ProcessNode::Executable) => {
                FileType::Symlink
            }
            _ => FileType::Regular,
        }
    }

    /// The process the node belongs to.
    fn pid(self) -> Option<u64> {
        match self {
            Node::Process(pid)
            | Node::OfProcess(pid, _)
            | Node::Descriptor(pid, _)
            | Node::Thread(pid, _)
            | Node::OfThread(pid, ..) => Some(pid),
            _ => None,
        }
    }
}

struct Shared {
    dev: u64,
    source: Arc<dyn Source>,
}

/// The `/proc` file system over a [`Source`].
pub struct ProcFs {
    shared: Arc<Shared>,
}

impl ProcFs {
    /// `/proc` answering from `source`, with device number `dev`.
    pub fn new(dev: u64, source: Arc<dyn Source>) -> Arc<ProcFs> {
        Arc::new(ProcFs {
            shared: Arc::new(Shared { dev, source }),
        })
    }
}

impl FileSystem for ProcFs {
    fn root(&self) -> Arc<dyn Inode> {
        ProcInode::made(&self.shared, Node::Root)
    }

    fn dev(&self) -> u64 {
        self.shared.dev
    }

    fn type_name(&self) -> &'static str {
        "proc"
    }
}

/// One node of a [`ProcFs`].
struct ProcInode {
    shared: Arc<Shared>,
    node: Node,
}

impl ProcInode {
    fn made(shared: &Arc<Shared>, node: Node) -> Arc<dyn Inode> {
        Arc::new(ProcInode {
            shared: shared.clone(),
            node,
        })
    }

    fn source(&self) -> &dyn Source {
        &*self.shared.source
    }

    fn child(&self, node: Node) -> Arc<dyn Inode> {
        ProcInode::made(&self.shared, node)
    }

    /// What the source says of each of its processes.
    fn every_process(&self) -> Vec<crate::source::ProcessInfo> {
        let source = self.source();
        source
            .processes()
            .into_iter()
            .filter_map(|pid| source.process(pid))
            .collect()
    }

    /// Thread `tid` of process `pid`, if it is running.
    fn thread(&self, pid: u64, tid: u64) -> Option<ThreadInfo> {
        self.source()
            .threads(pid)
            .into_iter()
            .find(|thread| thread.tid == tid)
    }

    /// Process `pid` and its thread `tid`: `ESRCH` if either has ended.
    fn process_and_thread(&self, pid: u64, tid: u64) -> Result<(ProcessInfo, ThreadInfo), Errno> {
        let process = self.source().process(pid).ok_or(Errno::ESRCH)?;
        let thread = self.thread(pid, tid).ok_or(Errno::ESRCH)?;
        Ok((process, thread))
    }

    /// Whether process `pid` exists.
    fn process_exists(&self, pid: u64) -> bool {
        self.source().process(pid).is_some()
    }

    /// The access mode of descriptor `fd` of `pid`, if it is open.
    fn descriptor_access(&self, pid: u64, fd: u32) -> Option<Access> {
        self.source()
            .descriptors(pid)?
            .into_iter()
            .find(|descriptor| descriptor.fd == fd)
            .map(|descriptor| descriptor.access)
    }

    /// The node's permission bits (Linux's).
    fn permissions(&self) -> u32 {
        match self.node {
            Node::Root
            | Node::Sys
            | Node::SysKernel
            | Node::Process(_)
            | Node::Thread(..)
            | Node::OfProcess(_, ProcessNode::Tasks) => 0o555,
            Node::OfProcess(_, ProcessNode::Descriptors) => 0o500,
            Node::Descriptor(pid, fd) => match self.descriptor_access(pid, fd) {
                Some(Access::Read) => 0o500,
                Some(Access::Write) => 0o300,
                _ => 0o700,
            },
            Node::SelfLink
            | Node::OfProcess(_, ProcessNode::CurrentDirectory | ProcessNode::Executable) => 0o777,
            // Linux's: the environment is its owner's to read.
            Node::OfProcess(_, ProcessNode::Environment) => 0o400,
            _ => 0o444,
        }
    }

    /// The contents of a file node, written out now.
    fn contents(&self) -> Result<Vec<u8>, Errno> {
        let source = self.source();
        let process = |pid: u64| source.process(pid).ok_or(Errno::ESRCH);
        Ok(match self.node {
            Node::System(SystemFile::CpuInfo) => format::cpuinfo(&source.cpus()),
            Node::System(SystemFile::MemInfo) => format::meminfo(&source.memory()),
            Node::System(SystemFile::Lockups) => source.lockups(),
            Node::System(SystemFile::Mounts) => format::mounts(&source.mounts()),
            Node::System(SystemFile::Uptime) => {
                format::uptime(source.uptime_ns(), source.idle_ns())
            }
            Node::System(SystemFile::Stat) => {
                let processes = self.every_process();
                format::system_stat(
                    source.uptime_ns(),
                    source.idle_ns(),
                    &source.counters(),
                    &processes,
                )
            }
            Node::System(SystemFile::LoadAverage) => {
                format::loadavg(&source.counters(), &self.every_process())
            }
            Node::System(SystemFile::Version) => {
                let mut line = source.version();
                line.push(b'\n');
                line
            }
            Node::OfProcess(pid, ProcessNode::CommandLine) => format::command_line(&process(pid)?),
            Node::OfProcess(pid, ProcessNode::Command) => {
                let mut command = process(pid)?.command;
                command.push(b'\n');
                command
            }
            Node::OfProcess(pid, ProcessNode::Environment) => {
                let process = process(pid)?;
                if process.state == crate::source::ProcessState::Zombie {
                    Vec::new()
                } else {
                    process.environment
                }
            }
            Node::OfProcess(pid, ProcessNode::Maps) => {
                format::maps(&source.mappings(pid).ok_or(Errno::ESRCH)?)
            }
            Node::OfProcess(pid, ProcessNode::Mounts) => {
                process(pid)?;
                format::mounts(&source.mounts())
            }
            Node::Setting(setting) => format::kernel_setting(&source.kernel_settings(), setting),
            Node::OfThread(pid, tid, node) => {
                let (process, thread) = self.process_and_thread(pid, tid)?;
                match node {
                    ThreadNode::Command => {
                        let mut command = process.command;
                        command.push(b'\n');
                        command
                    }
                    ThreadNode::Stat => format::thread_stat(&process, &thread),
                    ThreadNode::Status => format::thread_status(&process, &thread),
                }
            }
            Node::OfProcess(pid, ProcessNode::Stat) => format::process_stat(&process(pid)?),
            Node::OfProcess(pid, ProcessNode::StatM) => format::process_statm(&process(pid)?),
            Node::OfProcess(pid, ProcessNode::Status) => format::process_status(&process(pid)?),
            _ => return Err(self.data_error()),
        })
    }

    /// Lists `entries` (name, node) from position `offset` ("." is 0 and
    /// ".." 1, entry `i` is `i + 2`).
    fn list(
        &self,
        parent_ino: u64,
        entries: &[(&[u8], Node)],
        offset: u64,
        sink: &mut dyn FnMut(DirEntry<'_>, u64) -> bool,
    ) -> bool {
        let dots: [(&[u8], u64); 2] = [(b".", self.node.ino()), (b"..", parent_ino)];
        for (position, (name, ino)) in dots.iter().enumerate() {
            if offset <= position as u64 {
                let entry = DirEntry {
                    ino: *ino,
                    file_type: FileType::Directory,
                    name,
                };
                if !sink(entry, position as u64 + 1) {
                    return false;
                }
            }
        }
        let skip = usize::try_from(offset.saturating_sub(2)).unwrap_or(usize::MAX);
        for (index, (name, node)) in entries.iter().enumerate().skip(skip) {
            let entry = DirEntry {
                ino: node.ino(),
                file_type: node.file_type(),
                name,
            };
            if !sink(entry, index as u64 + 3) {
                return false;
            }
        }
        true
    }
}

/// A process id or descriptor number as a directory entry names it:
/// decimal, without sign or leading zeros.
fn parse_number(name: &[u8]) -> Option<u64> {
    if name.is_empty() || name.len() > 19 || (name[0] == b'0' && name.len() > 1) {
        return None;
    }
    name.iter().try_fold(0u64, |value, &byte| {
        byte.is_ascii_digit()
            .then(|| value * 10 + u64::from(byte - b'0'))
    })
}

impl Inode for ProcInode {
    fn dev(&self) -> u64 {
        self.shared.dev
    }

    fn ino(&self) -> u64 {
        self.node.ino()
    }

    fn file_type(&self) -> FileType {
        self.node.file_type()
    }

    fn metadata(&self) -> Metadata {
        let source = self.source();
        let process = self.node.pid().and_then(|pid| source.process(pid));
        let (uid, gid) = process
            .as_ref()
            .map_or((0, 0), |process| (process.uid, process.gid));
        // Process nodes date from the process's start; the rest from now
        // (Linux: when the inode was made, which is on first look).
        let ns = process
            .as_ref()
            .map_or_else(|| source.uptime_ns(), |process| process.start_ns);
        let time = Timespec {
            sec: (ns / 1_000_000_000) as i64,
            nsec: (ns % 1_000_000_000) as u32,
        };
        let file_type = self.file_type();
        let size = match self.node {
            Node::Descriptor(..) => DESCRIPTOR_LINK_SIZE,
            _ => 0,
        };
        Metadata {
            dev: self.shared.dev,
            ino: self.ino(),
            mode: file_type.mode_bits() | self.permissions(),
            nlink: if file_type == FileType::Directory {
                2
            } else {
                1
            },
            uid,
            gid,
            rdev: 0,
            size,
            blksize: 1024,
            blocks: 0,
            atime: time,
            mtime: time,
            ctime: time,
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn lookup(&self, name: &[u8]) -> Result<Arc<dyn Inode>, Errno> {
        match (self.node, name) {
            (_, b".") if self.file_type() == FileType::Directory => Ok(self.child(self.node)),
            (Node::Root | Node::Process(_) | Node::Sys, b"..") => Ok(self.child(Node::Root)),
            (Node::SysKernel, b"..") => Ok(self.child(Node::Sys)),
            (Node::OfProcess(pid, ProcessNode::Descriptors | ProcessNode::Tasks), b"..") => {
                Ok(self.child(Node::Process(pid)))
            }
            (Node::Thread(pid, _), b"..") => {
                Ok(self.child(Node::OfProcess(pid, ProcessNode::Tasks)))
            }
            (Node::Root, b"self") => Ok(self.child(Node::SelfLink)),
            (Node::Root, b"sys") => Ok(self.child(Node::Sys)),
            (Node::Sys, b"kernel") => Ok(self.child(Node::SysKernel)),
            (Node::SysKernel, _) => {
                let (_, setting) = KERNEL_SETTINGS
                    .iter()
                    .find(|(entry, _)| *entry == name)
                    .ok_or(Errno::ENOENT)?;
                Ok(self.child(Node::Setting(*setting)))
            }
            (Node::Sys, _) => Err(Errno::ENOENT),
            (Node::OfProcess(pid, ProcessNode::Tasks), _) => {
                let tid = parse_number(name).ok_or(Errno::ENOENT)?;
                self.thread(pid, tid).ok_or(Errno::ENOENT)?;
                Ok(self.child(Node::Thread(pid, tid)))
            }
            (Node::Thread(pid, tid), _) => {
                let (_, node) = THREAD_NODES
                    .iter()
                    .find(|(entry, _)| *entry == name)
                    .ok_or(Errno::ENOENT)?;
                self.thread(pid, tid).ok_or(Errno::ENOENT)?;
                Ok(self.child(Node::OfThread(pid, tid, *node)))
            }
            (Node::Root, _) => {
                if let Some((_, file)) = SYSTEM_FILES.iter().find(|(entry, _)| *entry == name) {
                    return Ok(self.child(Node::System(*file)));
                }
                let pid = parse_number(name).ok_or(Errno::ENOENT)?;
                if !self.process_exists(pid) {
                    return Err(Errno::ENOENT);
                }
                Ok(self.child(Node::Process(pid)))
            }
            (Node::Process(pid), _) => {
                let (_, node) = PROCESS_NODES
                    .iter()
                    .find(|(entry, _)| *entry == name)
                    .ok_or(Errno::ENOENT)?;
                if !self.process_exists(pid) {
                    return Err(Errno::ENOENT);
                }
                Ok(self.child(Node::OfProcess(pid, *node)))
            }
            (Node::OfProcess(pid, ProcessNode::Descriptors), _) => {
                let fd = parse_number(name)
                    .and_then(|fd| u32::try_from(fd).ok())
                    .ok_or(Errno::ENOENT)?;
                if self.descriptor_access(pid, fd).is_none() {
                    return Err(Errno::ENOENT);
                }
                Ok(self.child(Node::Descriptor(pid, fd)))
            }
            _ => Err(Errno::ENOTDIR),
        }
    }

    /// Nothing can be made here. Linux's `/proc` directories answer a
    /// lookup of a name they do not have with `ENOENT`, so that is what
    /// making one says; `EEXIST` for a name they have.
    fn create(&self, name: &[u8], _node: NewNode<'_>) -> Result<Arc<dyn Inode>, Errno> {
        match self.lookup(name) {
            Ok(_) => Err(Errno::EEXIST),
            Err(error) => Err(error),
        }
    }

    fn link(&self, _name: &[u8], _target: &Arc<dyn Inode>) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }

    fn unlink(&self, _name: &[u8]) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }

    fn rmdir(&self, _name: &[u8]) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }

    fn rename(&self, _old: &[u8], _parent: &Arc<dyn Inode>, _new: &[u8]) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }

    fn readdir(
        &self,
        offset: u64,
        sink: &mut dyn FnMut(DirEntry<'_>, u64) -> bool,
    ) -> Result<(), Errno> {
        match self.node {
            Node::Root => {
                if offset < PID_POSITIONS {
                    let mut entries: Vec<(&[u8], Node)> =
                        alloc::vec![(&b"self"[..], Node::SelfLink), (&b"sys"[..], Node::Sys)];
                    entries.extend(
                        SYSTEM_FILES
                            .iter()
                            .map(|(name, file)| (*name, Node::System(*file))),
                    );
                    if !self.list(Node::Root.ino(), &entries, offset, sink) {
                        return Ok(());
                    }
                }
                let first_pid = offset.saturating_sub(PID_POSITIONS);
                for pid in self.source().processes() {
                    if pid < first_pid {
                        continue;
                    }
                    let name = format!("{pid}");
                    let entry = DirEntry {
                        ino: Node::Process(pid).ino(),
                        file_type: FileType::Directory,
                        name: name.as_bytes(),
                    };
                    if !sink(entry, PID_POSITIONS + pid + 1) {
                        break;
                    }
                }
                Ok(())
            }
            Node::Process(pid) => {
                if !self.process_exists(pid) {
                    return Err(Errno::ENOENT);
                }
                let entries: Vec<(&[u8], Node)> = PROCESS_NODES
                    .iter()
                    .map(|(name, node)| (*name, Node::OfProcess(pid, *node)))
                    .collect();
                self.list(Node::Root.ino(), &entries, offset, sink);
                Ok(())
            }
            Node::Sys => {
                self.list(
                    Node::Root.ino(),
                    &[(b"kernel", Node::SysKernel)],
                    offset,
                    sink,
                );
                Ok(())
            }
            Node::SysKernel => {
                let entries: Vec<(&[u8], Node)> = KERNEL_SETTINGS
                    .iter()
                    .map(|(name, setting)| (*name, Node::Setting(*setting)))
                    .collect();
                self.list(Node::Sys.ino(), &entries, offset, sink);
                Ok(())
            }
            Node::Thread(pid, tid) => {
                self.thread(pid, tid).ok_or(Errno::ENOENT)?;
                let entries: Vec<(&[u8], Node)> = THREAD_NODES
                    .iter()
                    .map(|(name, node)| (*name, Node::OfThread(pid, tid, *node)))
                    .collect();
                self.list(
                    Node::OfProcess(pid, ProcessNode::Tasks).ino(),
                    &entries,
                    offset,
                    sink,
                );
                Ok(())
            }
            Node::OfProcess(pid, ProcessNode::Tasks) => {
                if !self.process_exists(pid) {
                    return Err(Errno::ENOENT);
                }
                if !self.list(Node::Process(pid).ino(), &[], offset.min(2), sink) {
                    return Ok(());
                }
                // Positions are thread ids (past the two dots), so a
                // listing resumes after the last thread it gave.
                for thread in self.source().threads(pid) {
                    let position = thread.tid + 2;
                    if position < offset {
                        continue;
                    }
                    let name = format!("{}", thread.tid);
                    let entry = DirEntry {
                        ino: Node::Thread(pid, thread.tid).ino(),
                        file_type: FileType::Directory,
                        name: name.as_bytes(),
                    };
                    if !sink(entry, position + 1) {
                        break;
                    }
                }
                Ok(())
            }
            Node::OfProcess(pid, ProcessNode::Descriptors) => {
                let descriptors = self.source().descriptors(pid).ok_or(Errno::ENOENT)?;
                let names: Vec<(alloc::string::String, u32)> = descriptors
                    .iter()
                    .map(|descriptor| (format!("{}", descriptor.fd), descriptor.fd))
                    .collect();
                // Positions are descriptor numbers (plus the two dots), so
                // a listing resumes after the last descriptor it gave.
                let parent_ino = Node::Process(pid).ino();
                let dots: Vec<(&[u8], Node)> = Vec::new();
                if !self.list(parent_ino, &dots, offset.min(2), sink) {
                    return Ok(());
                }
                for (name, fd) in &names {
                    let position = u64::from(*fd) + 2;
                    if position < offset {
                        continue;
                    }
                    let entry = DirEntry {
                        ino: Node::Descriptor(pid, *fd).ino(),
                        file_type: FileType::Symlink,
                        name: name.as_bytes(),
                    };
                    if !sink(entry, position + 1) {
                        break;
                    }
                }
                Ok(())
            }
            _ => Err(Errno::ENOTDIR),
        }
    }

    fn readlink(&self) -> Result<Vec<u8>, Errno> {
        let source = self.source();
        match self.node {
            Node::SelfLink => source
                .caller()
                .map(|pid| format!("{pid}").into_bytes())
                .ok_or(Errno::ENOENT),
            Node::OfProcess(pid, ProcessNode::Executable) => source
                .process(pid)
                .ok_or(Errno::ENOENT)?
                .executable
                .ok_or(Errno::ENOENT),
            Node::OfProcess(pid, ProcessNode::CurrentDirectory) => {
                source.current_directory(pid).ok_or(Errno::ENOENT)
            }
            Node::Descriptor(pid, fd) => source.descriptor_path(pid, fd).ok_or(Errno::ENOENT),
            _ => Err(Errno::EINVAL),
        }
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let contents = self.contents()?;
        let Some(available) = usize::try_from(offset)
            .ok()
            .and_then(|start| contents.get(start..))
        else {
            return Ok(0);
        };
        let count = available.len().min(buf.len());
        buf[..count].copy_from_slice(&available[..count]);
        Ok(count)
    }

    /// `/proc`'s files are written by the kernel only.
    fn write_at(&self, _offset: u64, _buf: &[u8]) -> Result<usize, Errno> {
        Err(match self.file_type() {
            FileType::Directory => Errno::EISDIR,
            _ => Errno::EACCES,
        })
    }

    fn truncate(&self, _size: u64) -> Result<(), Errno> {
        self.write_at(0, &[]).map(|_| ())
    }

    /// Modes, owners and times of `/proc` are the kernel's: `EPERM`.
    fn set_attributes(&self, _changes: &SetAttributes) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }
}
