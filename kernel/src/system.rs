//! What the kernel tells `/proc` and the Linux personality's `sysinfo`,
//! `times` and `getrusage`: [`KernelFacts`], the kernel's
//! `procfs::Source`. Only the composition root sees both halves of a
//! process, so the answers are put together here:
//! - from the process table (`::process`): parent, state, program,
//!   memory, processor time;
//! - from the personality: process group and session, supplementary
//!   groups, the command name (which `prctl` changes), descriptors and
//!   the current directory (as paths of the file tree);
//! - from hal and the scheduler: frames, uptime, idle time, the CPU.
//!
//! [`mount_proc`] mounts `/proc` on the file tree.

use alloc::{sync::Arc, vec::Vec};

use hal::{address_space::UserProtection, memory::PAGE_SIZE as PAGE_BYTES};
use procfs::{
    Access, Counters, Cpu, Descriptor, KernelSettings, Mapping, MemoryInfo, Mount, ProcessInfo,
    ProcessState, Source, ThreadInfo,
};
use vfs::Vfs;

use ::process;

/// Device number of `/proc` (an anonymous device, as Linux gives it).
const PROC_DEV: u64 = vfs::makedev(0, 21);
/// Nanoseconds in a scheduler tick.
const NS_PER_TICK: u64 = 1_000_000_000 / hal::timer::TICK_HZ;
/// Bytes of a frame.
const FRAME_BYTES: u64 = hal::memory::PAGE_SIZE;

/// The kernel as a [`Source`].
pub struct KernelFacts;

/// The kernel's facts, for the personality and `/proc`.
pub fn facts() -> Arc<dyn Source> {
    Arc::new(KernelFacts)
}

/// Mounts `/proc` (made if missing) on `vfs`; logs what went wrong.
pub fn mount_proc(vfs: &Vfs) {
    let root = vfs.context(0, 0);
    let _ = vfs.mkdir(&root, b"/proc", 0o555);
    let mounted = vfs
        .directory(&root, b"/proc")
        .and_then(|directory| vfs.mount(directory, procfs::ProcFs::new(PROC_DEV, facts())));
    if let Err(error) = mounted {
        log::error!("linux: mounting /proc: {error}");
    }
}

fn access_of(flags: u32) -> Access {
    match flags & vfs::flags::O_ACCMODE {
        vfs::flags::O_WRONLY => Access::Write,
        vfs::flags::O_RDWR => Access::ReadWrite,
        _ => Access::Read,
    }
}

impl Source for KernelFacts {
    fn caller(&self) -> Option<u64> {
        linux_process::threads::process_of(sched::current().0)
    }

    fn caller_thread_cpu_ns(&self) -> u64 {
        sched::thread_usage(sched::current()).map_or(0, |(_, ticks)| ticks * NS_PER_TICK)
    }

    fn processes(&self) -> Vec<u64> {
        process::ids()
    }

    fn process(&self, pid: u64) -> Option<ProcessInfo> {
        let process = process::get(pid)?;
        let program = process.program();
        let usage = process.usage();
        let memory = process.with_memory(|memory| {
            let virtual_bytes: u64 = memory
                .regions()
                .map(|region| region.end - region.start)
                .sum();
            (
                virtual_bytes,
                memory.space().pages(),
                memory.faults_resolved(),
            )
        });
        let state = match memory {
            None => ProcessState::Zombie,
            Some(_) if process.is_running() => ProcessState::Running,
            Some(_) => ProcessState::Sleeping,
        };
        let (virtual_bytes, resident_pages, minor_faults) =
            memory.unwrap_or((0, 0, usage.final_minor_faults));
        let linux = linux_process::personality().and_then(|personality| personality.files(pid));
        // A zombie's personality state is gone: its group is the one the
        // process table kept, its session unknown (its own id).
        let credentials = linux
            .as_ref()
            .map(|files| files.credentials())
            .unwrap_or_default();
        let (process_group, session, umask, command_name) = match &linux {
            Some(files) => (
                files.process_group(),
                files.session(),
                Some(files.context().umask),
                files.command_name(),
            ),
            None => (process.group().unwrap_or(pid), pid, None, None),
        };
        Some(ProcessInfo {
            pid,
            parent: process.parent(),
            process_group,
            session,
            state,
            command: command_name.unwrap_or(program.command),
            arguments: program.arguments,
            environment: program.environment,
            executable: program.executable,
            uid: credentials.users.real,
            gid: credentials.groups.real,
            groups: credentials.supplementary.to_vec(),
            umask,
            threads: process.threads() as u64,
            virtual_bytes,
            resident_pages,
            minor_faults,
            children_minor_faults: usage.children_minor_faults,
            children_max_resident_pages: usage.children_max_resident_pages,
            cpu_ns: process.cpu_ticks() * NS_PER_TICK,
            children_cpu_ns: usage.children_ticks * NS_PER_TICK,
            start_ns: process.started_ns(),
            context_switches: process.context_switches(),
        })
    }

    fn current_directory(&self, pid: u64) -> Option<Vec<u8>> {
        let personality = linux_process::personality()?;
        let context = personality.files(pid)?.context();
        personality.vfs().path_of(&context, &context.cwd).ok()
    }

    fn threads(&self, pid: u64) -> Vec<ThreadInfo> {
        process::threads_of_process(pid)
            .into_iter()
            .filter_map(|(tid, strand)| {
                let (state, ticks) = sched::thread_usage(sched::ThreadId(strand))?;
                let state = match state {
                    sched::ThreadState::Running | sched::ThreadState::Ready => {
                        ProcessState::Running
                    }
                    _ => ProcessState::Sleeping,
                };
                Some(ThreadInfo {
                    tid,
                    state,
                    cpu_ns: ticks * NS_PER_TICK,
                })
            })
            .collect()
    }

    fn kernel_settings(&self) -> KernelSettings {
        let (host_name, domain_name) = linux_process::personality()
            .map(|personality| personality.host_and_domain_names())
            .unwrap_or_default();
        KernelSettings {
            os_type: linux::SYSTEM_NAME.to_vec(),
            os_release: linux::RELEASE.to_vec(),
            version: linux::VERSION.to_vec(),
            host_name,
            domain_name,
            // Ids are never reused, but none reaches Linux's limit in a
            // run: it is one no process has.
            pid_max: linux_abi::PID_MAX_LIMIT,
        }
    }

    fn mappings(&self, pid: u64) -> Option<Vec<Mapping>> {
        let process = process::get(pid)?;
        let mappings = process
            .with_memory(|memory| {
                memory
                    .labelled_regions()
                    .map(|(region, label)| Mapping {
                        start: region.start,
                        end: region.end,
                        read: region.protection != UserProtection::None,
                        write: region.protection.is_writable(),
                        execute: region.protection.is_executable(),
                        shared: region.shared.is_some(),
                        offset: if label.is_some_and(|label| label.ino != 0) {
                            region.file_page * PAGE_BYTES
                        } else {
                            0
                        },
                        dev: label.map_or(0, |label| label.dev),
                        ino: label.map_or(0, |label| label.ino),
                        name: label.map_or_else(Vec::new, |label| label.name.clone()),
                    })
                    .collect()
            })
            // A zombie has no memory left.
            .unwrap_or_default();
        Some(mappings)
    }

    fn descriptors(&self, pid: u64) -> Option<Vec<Descriptor>> {
        let files = linux_process::personality()?.files(pid)?;
        let descriptors = files
            .fds
            .descriptors()
            .into_iter()
            .filter_map(|fd| {
                let file = files.fds.get_raw(i64::from(fd)).ok()?;
                Some(Descriptor {
                    fd: fd as u32,
                    access: access_of(file.flags()),
                })
            })
            .collect();
        Some(descriptors)
    }

    fn descriptor_path(&self, pid: u64, fd: u32) -> Option<Vec<u8>> {
        let personality = linux_process::personality()?;
        let files = personality.files(pid)?;
        let file = files.fds.get_raw(i64::from(fd)).ok()?;
        Some(personality.vfs().open_file_path(&files.context(), &file))
    }

    fn memory(&self) -> MemoryInfo {
        let frames = hal::memory::frame_stats();
        let free_bytes = frames.free as u64 * FRAME_BYTES;
        MemoryInfo {
            total_bytes: frames.total as u64 * FRAME_BYTES,
            free_bytes,
            // Nothing is cached that could be given back: what is free is
            // what is available.
            available_bytes: free_bytes,
        }
    }

    fn uptime_ns(&self) -> u64 {
        hal::timer::uptime_ns()
    }

    fn idle_ns(&self) -> u64 {
        sched::idle_ticks() * NS_PER_TICK
    }

    fn counters(&self) -> Counters {
        Counters {
            context_switches: sched::context_switches(),
            processes_made: process::created(),
            last_pid: process::last_id(),
        }
    }

    fn mounts(&self) -> Vec<Mount> {
        let Some(personality) = linux_process::personality() else {
            return Vec::new();
        };
        let vfs = personality.vfs();
        let root = vfs.context(0, 0);
        vfs.mounts()
            .into_iter()
            .filter_map(|mount| {
                let path = match &mount.mountpoint {
                    None => b"/".to_vec(),
                    Some(mountpoint) => vfs.path_of(&root, mountpoint).ok()?,
                };
                let fs_type = mount.fs.type_name().as_bytes().to_vec();
                Some(Mount {
                    // Virtual file systems have no device: Linux shows
                    // the type's name.
                    device: fs_type.clone(),
                    path,
                    fs_type,
                    is_read_only: mount.fs.is_read_only(),
                })
            })
            .collect()
    }

    fn cpus(&self) -> Vec<Cpu> {
        let identity = hal::cpu::identity();
        let brand_length = identity
            .brand
            .iter()
            .position(|&byte| byte == 0)
            .unwrap_or(48);
        alloc::vec![Cpu {
            vendor: identity.vendor.to_vec(),
            family: identity.family,
            model: identity.model,
            stepping: identity.stepping,
            model_name: identity.brand[..brand_length].trim_ascii().to_vec(),
            khz: hal::timer::tsc_hz() / 1000,
        }]
    }

    fn version(&self) -> Vec<u8> {
        let mut line = b"Linux version ".to_vec();
        line.extend_from_slice(linux::RELEASE);
        line.extend_from_slice(b" (spindle) ");
        line.extend_from_slice(linux::VERSION);
        line
    }

    fn lockups(&self) -> Vec<u8> {
        crate::lockups::reports()
    }
}
