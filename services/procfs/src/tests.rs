//! Host tests: a `/proc` over a made-up source, mounted in a VFS, read
//! through the VFS as programs read it.

use alloc::{string::String, sync::Arc, vec, vec::Vec};
use std::sync::Mutex;

use vfs::{flags::*, Clock, Errno, FileSystem, PathContext, RamFs, Timespec, Vfs};

use crate::{
    Access, Counters, Cpu, Descriptor, KernelSettings, Mapping, MemoryInfo, Mount, ProcFs,
    ProcessInfo, ProcessState, Source, ThreadInfo,
};

/// A source with processes that a test can change.
struct FakeSource {
    processes: Mutex<Vec<ProcessInfo>>,
    caller: Option<u64>,
}

fn process(pid: u64, parent: u64, command: &str, arguments: &[&str]) -> ProcessInfo {
    let mut joined = Vec::new();
    for argument in arguments {
        joined.extend_from_slice(argument.as_bytes());
        joined.push(0);
    }
    ProcessInfo {
        pid,
        parent,
        process_group: parent.max(pid),
        session: 1,
        state: ProcessState::Sleeping,
        command: command.as_bytes().to_vec(),
        arguments: joined,
        environment: b"HOME=/\0TERM=vt100\0".to_vec(),
        executable: Some(b"/bin/busybox".to_vec()),
        uid: 0,
        gid: 0,
        groups: vec![0, 10],
        umask: Some(0o022),
        threads: 1,
        virtual_bytes: 8 << 20,
        resident_pages: 100,
        minor_faults: 42,
        children_minor_faults: 7,
        children_max_resident_pages: 3,
        cpu_ns: 1_230_000_000,
        children_cpu_ns: 50_000_000,
        start_ns: 2_500_000_000,
        context_switches: (12, 3),
    }
}

impl FakeSource {
    fn new() -> FakeSource {
        let mut zombie = process(9, 1, "gone", &["gone"]);
        zombie.state = ProcessState::Zombie;
        FakeSource {
            processes: Mutex::new(vec![
                process(1, 0, "sh", &["-sh"]),
                process(5, 1, "ps", &["ps", "-o", "pid"]),
                zombie,
            ]),
            caller: Some(5),
        }
    }
}

impl Source for FakeSource {
    fn caller(&self) -> Option<u64> {
        self.caller
    }
    fn caller_thread_cpu_ns(&self) -> u64 {
        0
    }
    fn processes(&self) -> Vec<u64> {
        self.processes
            .lock()
            .unwrap()
            .iter()
            .map(|p| p.pid)
            .collect()
    }
    fn process(&self, pid: u64) -> Option<ProcessInfo> {
        self.processes
            .lock()
            .unwrap()
            .iter()
            .find(|p| p.pid == pid)
            .cloned()
    }
    fn current_directory(&self, pid: u64) -> Option<Vec<u8>> {
        self.process(pid).map(|_| b"/tmp".to_vec())
    }
    /// Process 5 has a second thread, 7, which sleeps; others have one.
    fn threads(&self, pid: u64) -> Vec<ThreadInfo> {
        let Some(process) = self.process(pid) else {
            return Vec::new();
        };
        if process.state == ProcessState::Zombie {
            return Vec::new();
        }
        let mut threads = vec![ThreadInfo {
            tid: pid,
            state: ProcessState::Running,
            cpu_ns: 1_000_000_000,
        }];
        if pid == 5 {
            threads.push(ThreadInfo {
                tid: 7,
                state: ProcessState::Sleeping,
                cpu_ns: 230_000_000,
            });
        }
        threads
    }
    fn kernel_settings(&self) -> KernelSettings {
        KernelSettings {
            os_type: b"Linux".to_vec(),
            os_release: b"6.1.0-test".to_vec(),
            version: b"#1 test".to_vec(),
            host_name: b"host".to_vec(),
            domain_name: b"(none)".to_vec(),
            pid_max: 4_194_304,
        }
    }
    fn mappings(&self, pid: u64) -> Option<Vec<Mapping>> {
        let process = self.process(pid)?;
        if process.state == ProcessState::Zombie {
            return Some(Vec::new());
        }
        Some(vec![
            Mapping {
                start: 0x40_0000,
                end: 0x45_2000,
                read: true,
                write: false,
                execute: true,
                shared: false,
                offset: 0x1000,
                dev: vfs::makedev(0, 1),
                ino: 12,
                name: b"/bin/busybox".to_vec(),
            },
            Mapping {
                start: 0x7f00_0000_0000,
                end: 0x7f00_0000_2000,
                read: true,
                write: true,
                execute: false,
                shared: true,
                offset: 0,
                dev: 0,
                ino: 0,
                name: Vec::new(),
            },
            Mapping {
                start: 0x7fff_fff0_0000,
                end: 0x7fff_ffff_f000,
                read: true,
                write: true,
                execute: false,
                shared: false,
                offset: 0,
                dev: 0,
                ino: 0,
                name: b"[stack]".to_vec(),
            },
        ])
    }
    fn descriptors(&self, pid: u64) -> Option<Vec<Descriptor>> {
        let process = self.process(pid)?;
        if process.state == ProcessState::Zombie {
            return None;
        }
        Some(vec![
            Descriptor {
                fd: 0,
                access: Access::ReadWrite,
            },
            Descriptor {
                fd: 1,
                access: Access::Write,
            },
            Descriptor {
                fd: 10,
                access: Access::Read,
            },
        ])
    }
    fn descriptor_path(&self, pid: u64, fd: u32) -> Option<Vec<u8>> {
        self.descriptors(pid)?
            .iter()
            .find(|descriptor| descriptor.fd == fd)
            .map(|descriptor| alloc::format!("/dev/fd{}", descriptor.fd).into_bytes())
    }
    fn memory(&self) -> MemoryInfo {
        MemoryInfo {
            total_bytes: 128 << 20,
            free_bytes: 100 << 20,
            available_bytes: 100 << 20,
        }
    }
    fn uptime_ns(&self) -> u64 {
        12_345_000_000
    }
    fn idle_ns(&self) -> u64 {
        10_009_000_000
    }
    fn counters(&self) -> Counters {
        Counters {
            context_switches: 1234,
            processes_made: 20,
            last_pid: 9,
        }
    }
    fn mounts(&self) -> Vec<Mount> {
        vec![
            Mount {
                device: b"rootfs".to_vec(),
                path: b"/".to_vec(),
                fs_type: b"ramfs".to_vec(),
                is_read_only: false,
            },
            Mount {
                device: b"proc".to_vec(),
                path: b"/my proc".to_vec(),
                fs_type: b"proc".to_vec(),
                is_read_only: true,
            },
        ]
    }
    fn cpus(&self) -> Vec<Cpu> {
        vec![Cpu {
            vendor: b"GenuineIntel".to_vec(),
            family: 6,
            model: 85,
            stepping: 4,
            model_name: b"Test CPU".to_vec(),
            khz: 2_400_500,
        }]
    }
    fn version(&self) -> Vec<u8> {
        b"Linux version 6.1.0-spindle".to_vec()
    }
    fn lockups(&self) -> Vec<u8> {
        b"watchdog: soft lockup: thread 9 (spinner)\n".to_vec()
    }
}

fn clock() -> Clock {
    Arc::new(|| Timespec::from_secs(1))
}

/// A tree with `/proc` over `source`.
fn setup(source: Arc<FakeSource>) -> (Vfs, PathContext) {
    let vfs = Vfs::new(RamFs::new(1, clock()));
    let context = vfs.context(0, 0);
    let mountpoint = vfs.mkdir(&context, b"/proc", 0o555).unwrap();
    vfs.mount(mountpoint, ProcFs::new(2, source)).unwrap();
    (vfs, context)
}

fn read(vfs: &Vfs, context: &PathContext, path: &str) -> Result<String, Errno> {
    let file = vfs.open(context, path.as_bytes(), O_RDONLY, 0)?;
    let mut contents = Vec::new();
    let mut buf = [0u8; 13];
    loop {
        let count = file.read(&mut buf)?;
        if count == 0 {
            return Ok(String::from_utf8(contents).unwrap());
        }
        contents.extend_from_slice(&buf[..count]);
    }
}

fn names(vfs: &Vfs, context: &PathContext, path: &str) -> Vec<String> {
    let directory = vfs.resolve(context, path.as_bytes(), true).unwrap();
    let mut names = Vec::new();
    directory
        .readdir(0, &mut |entry, _| {
            names.push(String::from_utf8(entry.name.to_vec()).unwrap());
            true
        })
        .unwrap();
    names
}

#[test]
fn the_root_lists_self_the_system_files_and_each_process() {
    let (vfs, context) = setup(Arc::new(FakeSource::new()));
    assert_eq!(
        names(&vfs, &context, "/proc"),
        [
            ".", "..", "self", "sys", "cpuinfo", "loadavg", "lockups", "meminfo", "mounts", "stat",
            "uptime", "version", "1", "5", "9"
        ]
    );
    assert_eq!(
        names(&vfs, &context, "/proc/5"),
        [
            ".", "..", "cmdline", "comm", "cwd", "environ", "exe", "fd", "maps", "mounts", "stat",
            "statm", "status", "task"
        ]
    );
    assert_eq!(
        names(&vfs, &context, "/proc/self/fd"),
        [".", "..", "0", "1", "10"]
    );
}

#[test]
fn a_listing_resumes_where_it_stopped() {
    let (vfs, context) = setup(Arc::new(FakeSource::new()));
    let root = vfs.resolve(&context, b"/proc", true).unwrap();
    let mut seen = Vec::new();
    let mut offset = 0;
    // One entry per call, as a tiny getdents64 buffer would take them.
    loop {
        let mut got = None;
        root.readdir(offset, &mut |entry, next| {
            got = Some((String::from_utf8(entry.name.to_vec()).unwrap(), next));
            false
        })
        .unwrap();
        let Some((name, next)) = got else { break };
        seen.push(name);
        offset = next;
    }
    assert_eq!(seen, names(&vfs, &context, "/proc"));
}

#[test]
fn self_names_the_caller_and_links_resolve() {
    let (vfs, context) = setup(Arc::new(FakeSource::new()));
    assert_eq!(vfs.readlink(&context, b"/proc/self").unwrap(), b"5");
    assert_eq!(
        vfs.readlink(&context, b"/proc/self/exe").unwrap(),
        b"/bin/busybox"
    );
    assert_eq!(vfs.readlink(&context, b"/proc/1/cwd").unwrap(), b"/tmp");
    assert_eq!(
        vfs.readlink(&context, b"/proc/self/fd/10").unwrap(),
        b"/dev/fd10"
    );
    assert_eq!(read(&vfs, &context, "/proc/self/comm").unwrap(), "ps\n");
    assert_eq!(
        read(&vfs, &context, "/proc/self/cmdline").unwrap(),
        "ps\0-o\0pid\0"
    );
    let source = Arc::new(FakeSource {
        caller: None,
        ..FakeSource::new()
    });
    let (vfs, context) = setup(source);
    assert_eq!(vfs.readlink(&context, b"/proc/self"), Err(Errno::ENOENT));
}

#[test]
fn stat_has_linuxs_52_fields() {
    let (vfs, context) = setup(Arc::new(FakeSource::new()));
    let stat = read(&vfs, &context, "/proc/5/stat").unwrap();
    assert!(stat.ends_with('\n'));
    let fields: Vec<&str> = stat.split_whitespace().collect();
    assert_eq!(fields.len(), 52, "{stat}");
    assert_eq!(&fields[..8], ["5", "(ps)", "S", "1", "5", "1", "0", "-1"]);
    // minflt, utime (1.23 s at 100 Hz), cutime, threads, starttime,
    // vsize, rss, exit_signal.
    assert_eq!((fields[9], fields[10]), ("42", "7"));
    assert_eq!(fields[13], "123");
    assert_eq!(fields[15], "5");
    assert_eq!(fields[19], "1");
    assert_eq!(fields[21], "250");
    assert_eq!(fields[22], (8 << 20).to_string());
    assert_eq!(fields[23], "100");
    assert_eq!(fields[37], "17");
    // A zombie: state Z, no memory, no arguments.
    let zombie = read(&vfs, &context, "/proc/9/stat").unwrap();
    let fields: Vec<&str> = zombie.split_whitespace().collect();
    assert_eq!((fields[2], fields[22], fields[23]), ("Z", "0", "0"));
    assert_eq!(read(&vfs, &context, "/proc/9/cmdline").unwrap(), "");
}

#[test]
fn status_and_statm_say_ids_state_and_memory() {
    let (vfs, context) = setup(Arc::new(FakeSource::new()));
    let status = read(&vfs, &context, "/proc/1/status").unwrap();
    for line in [
        "Name:\tsh\n",
        "Umask:\t0022\n",
        "State:\tS (sleeping)\n",
        "Pid:\t1\n",
        "PPid:\t0\n",
        "Uid:\t0\t0\t0\t0\n",
        "Gid:\t0\t0\t0\t0\n",
        "Groups:\t0 10 \n",
        "VmSize:\t    8192 kB\n",
        "VmRSS:\t     400 kB\n",
        "Threads:\t1\n",
        "voluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n",
    ] {
        assert!(status.contains(line), "no {line:?} in:\n{status}");
    }
    assert!(status.starts_with("Name:"));
    assert_eq!(
        read(&vfs, &context, "/proc/1/statm").unwrap(),
        "2048 100 0 0 0 0 0\n"
    );
    assert!(!read(&vfs, &context, "/proc/9/status")
        .unwrap()
        .contains("VmRSS"));
}

#[test]
fn system_files_have_linuxs_layouts() {
    let (vfs, context) = setup(Arc::new(FakeSource::new()));
    let meminfo = read(&vfs, &context, "/proc/meminfo").unwrap();
    assert!(meminfo.starts_with(
        "MemTotal:         131072 kB\nMemFree:          102400 kB\nMemAvailable:     102400 kB\n"
    ));
    assert!(meminfo.contains("SwapTotal:             0 kB\n"));
    assert_eq!(
        read(&vfs, &context, "/proc/uptime").unwrap(),
        "12.34 10.00\n"
    );
    assert_eq!(
        read(&vfs, &context, "/proc/lockups").unwrap(),
        "watchdog: soft lockup: thread 9 (spinner)\n"
    );
    // 2.33 s busy, 10.00 s idle; one process of three running.
    assert_eq!(
        read(&vfs, &context, "/proc/stat").unwrap(),
        "cpu  233 0 0 1000 0 0 0 0 0 0\ncpu0 233 0 0 1000 0 0 0 0 0 0\nintr 0\nctxt 1234\nbtime 0\n\
         processes 20\nprocs_running 0\nprocs_blocked 0\n"
    );
    assert_eq!(
        read(&vfs, &context, "/proc/loadavg").unwrap(),
        "0.00 0.00 0.00 0/3 9\n"
    );
    assert_eq!(
        read(&vfs, &context, "/proc/mounts").unwrap(),
        "rootfs / ramfs rw 0 0\nproc /my\\040proc proc ro 0 0\n"
    );
    assert_eq!(
        read(&vfs, &context, "/proc/version").unwrap(),
        "Linux version 6.1.0-spindle\n"
    );
    let cpuinfo = read(&vfs, &context, "/proc/cpuinfo").unwrap();
    assert!(cpuinfo.starts_with("processor\t: 0\nvendor_id\t: GenuineIntel\n"));
    assert!(cpuinfo.contains("model name\t: Test CPU\n"));
    assert!(cpuinfo.contains("cpu MHz\t\t: 2400.500\n"));
    assert!(cpuinfo.ends_with("\n\n"));
}

#[test]
fn modes_owners_and_numbers_are_linuxs() {
    let (vfs, context) = setup(Arc::new(FakeSource::new()));
    let stat = |path: &str, follow| vfs.stat(&context, path.as_bytes(), follow).unwrap();
    assert_eq!(stat("/proc", true).mode, vfs::S_IFDIR | 0o555);
    assert_eq!(stat("/proc/self", false).mode, vfs::S_IFLNK | 0o777);
    assert_eq!(stat("/proc/5/fd", true).mode, vfs::S_IFDIR | 0o500);
    assert_eq!(stat("/proc/5/fd/0", false).mode, vfs::S_IFLNK | 0o700);
    assert_eq!(stat("/proc/5/fd/1", false).mode, vfs::S_IFLNK | 0o300);
    assert_eq!(stat("/proc/5/fd/10", false).mode, vfs::S_IFLNK | 0o500);
    assert_eq!(stat("/proc/5/fd/10", false).size, 64);
    assert_eq!(stat("/proc/5/stat", true).mode, vfs::S_IFREG | 0o444);
    // Through "self" it is the same inode as by number.
    assert_eq!(
        stat("/proc/self/stat", true).ino,
        stat("/proc/5/stat", true).ino
    );
    // A directory's path is found back by inode numbers, across the mount.
    let fd = vfs.resolve(&context, b"/proc/self/fd", true).unwrap();
    assert_eq!(vfs.path_of(&context, &fd).unwrap(), b"/proc/5/fd");
}

#[test]
fn missing_processes_and_descriptors_are_enoent_and_a_vanished_one_esrch() {
    let source = Arc::new(FakeSource::new());
    let (vfs, context) = setup(source.clone());
    for path in [
        "/proc/7",
        "/proc/7/stat",
        "/proc/5/fd/3",
        "/proc/05",
        "/proc/5/nothing",
        "/proc/x",
    ] {
        assert_eq!(
            vfs.resolve(&context, path.as_bytes(), true).err(),
            Some(Errno::ENOENT),
            "{path}"
        );
    }
    let file = vfs.open(&context, b"/proc/1/stat", O_RDONLY, 0).unwrap();
    source
        .processes
        .lock()
        .unwrap()
        .retain(|process| process.pid != 1);
    assert_eq!(file.read(&mut [0u8; 64]), Err(Errno::ESRCH));
    assert_eq!(
        vfs.resolve(&context, b"/proc/1", true).err(),
        Some(Errno::ENOENT)
    );
}

#[test]
fn nothing_can_be_written_made_or_removed() {
    let (vfs, context) = setup(Arc::new(FakeSource::new()));
    let meminfo = vfs.open(&context, b"/proc/meminfo", O_WRONLY, 0).unwrap();
    assert_eq!(meminfo.write(b"x"), Err(Errno::EACCES));
    assert_eq!(
        vfs.open(&context, b"/proc/new", O_CREAT | O_WRONLY, 0o644)
            .err(),
        Some(Errno::ENOENT)
    );
    assert_eq!(
        vfs.mkdir(&context, b"/proc/d", 0o755).err(),
        Some(Errno::ENOENT)
    );
    assert_eq!(
        vfs.mkdir(&context, b"/proc/self", 0o755).err(),
        Some(Errno::EEXIST)
    );
    assert_eq!(
        vfs.symlink(&context, b"x", b"/proc/5/x").err(),
        Some(Errno::ENOENT)
    );
    assert_eq!(vfs.unlink(&context, b"/proc/meminfo"), Err(Errno::EPERM));
    let root = vfs.resolve(&context, b"/proc/meminfo", true).unwrap();
    let chmod = vfs::SetAttributes {
        mode: Some(0o600),
        ..Default::default()
    };
    assert_eq!(
        vfs.set_attributes(&context, &root, &chmod),
        Err(Errno::EPERM)
    );
    assert_eq!(
        ProcFs::new(3, Arc::new(FakeSource::new())).type_name(),
        "proc"
    );
}

#[test]
fn maps_lists_each_mapping_in_linux_columns() {
    let (vfs, context) = setup(Arc::new(FakeSource::new()));
    let text = read(&vfs, &context, "/proc/self/maps").unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(
        lines[0],
        "00400000-00452000 r-xp 00001000 00:01 12                                 /bin/busybox"
    );
    assert_eq!(
        lines[0].find("/bin/busybox"),
        Some(73),
        "names start at column 73"
    );
    assert_eq!(lines[1], "7f0000000000-7f0000002000 rw-s 00000000 00:00 0 ");
    assert!(lines[2].starts_with("7ffffff00000-7ffffffff000 rw-p 00000000 00:00 0 "));
    assert!(lines[2].ends_with(" [stack]"));
    assert_eq!(
        read(&vfs, &context, "/proc/9/maps").unwrap(),
        "",
        "a zombie has no memory"
    );
}

#[test]
fn environ_is_the_starting_environment_for_its_owner() {
    let (vfs, context) = setup(Arc::new(FakeSource::new()));
    assert_eq!(
        read(&vfs, &context, "/proc/self/environ").unwrap(),
        "HOME=/\0TERM=vt100\0"
    );
    assert_eq!(
        read(&vfs, &context, "/proc/9/environ").unwrap(),
        "",
        "a zombie's is empty"
    );
    let stat = vfs.stat(&context, b"/proc/self/environ", true).unwrap();
    assert_eq!(stat.mode & 0o777, 0o400);
}

#[test]
fn sys_kernel_shows_the_names_and_pid_max() {
    let (vfs, context) = setup(Arc::new(FakeSource::new()));
    assert_eq!(
        names(&vfs, &context, "/proc/sys/kernel"),
        [
            ".",
            "..",
            "domainname",
            "hostname",
            "osrelease",
            "ostype",
            "pid_max",
            "version"
        ]
    );
    assert_eq!(names(&vfs, &context, "/proc/sys"), [".", "..", "kernel"]);
    let setting = |name: &str| read(&vfs, &context, &alloc::format!("/proc/sys/kernel/{name}"));
    assert_eq!(setting("pid_max").unwrap(), "4194304\n");
    assert_eq!(setting("hostname").unwrap(), "host\n");
    assert_eq!(setting("domainname").unwrap(), "(none)\n");
    assert_eq!(setting("ostype").unwrap(), "Linux\n");
    assert_eq!(setting("osrelease").unwrap(), "6.1.0-test\n");
    assert_eq!(setting("version").unwrap(), "#1 test\n");
    assert_eq!(setting("nothing"), Err(Errno::ENOENT));
    let file = vfs
        .open(&context, b"/proc/sys/kernel/hostname", O_RDONLY, 0)
        .unwrap();
    assert_eq!(file.inode().write_at(0, b"x"), Err(Errno::EACCES));
}

#[test]
fn task_lists_each_thread_with_its_own_stat_and_status() {
    let (vfs, context) = setup(Arc::new(FakeSource::new()));
    assert_eq!(names(&vfs, &context, "/proc/5/task"), [".", "..", "5", "7"]);
    assert_eq!(
        names(&vfs, &context, "/proc/self/task/7"),
        [".", "..", "comm", "stat", "status"]
    );
    let stat = read(&vfs, &context, "/proc/5/task/7/stat").unwrap();
    assert!(stat.starts_with("7 (ps) S 1 "), "{stat}");
    let status = read(&vfs, &context, "/proc/5/task/7/status").unwrap();
    assert!(
        status.contains("State:\tS (sleeping)\nTgid:\t5\n"),
        "{status}"
    );
    assert!(status.contains("\nPid:\t7\n"), "{status}");
    assert_eq!(read(&vfs, &context, "/proc/5/task/7/comm").unwrap(), "ps\n");
    assert_eq!(
        read(&vfs, &context, "/proc/5/task/8/stat"),
        Err(Errno::ENOENT)
    );
    // A thread of another process is not this one's.
    assert_eq!(
        read(&vfs, &context, "/proc/1/task/7/stat"),
        Err(Errno::ENOENT)
    );
    let parent = vfs.resolve(&context, b"/proc/5/task/7/..", true).unwrap();
    let tasks = vfs.resolve(&context, b"/proc/5/task", true).unwrap();
    assert_eq!(parent.ino(), tasks.ino());
}

#[test]
fn a_process_mounts_are_the_system_mounts() {
    let (vfs, context) = setup(Arc::new(FakeSource::new()));
    assert_eq!(
        read(&vfs, &context, "/proc/self/mounts"),
        read(&vfs, &context, "/proc/mounts")
    );
}
