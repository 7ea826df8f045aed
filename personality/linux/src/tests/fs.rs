//! `fs`: the calls on paths.

use linux_abi::{fcntl::*, syscall::*};
use vfs::{flags::*, Errno};

use super::*;

const CLOSED_FD: u64 = 42;

#[test]
fn a_path_in_an_unmapped_page_is_efault() {
    let fixture = Fixture::new();
    let buffer = at(0);
    for path in [UNMAPPED, 0, KERNEL_ADDRESS, u64::MAX] {
        for (number, args) in [
            (OPEN, [path, 0, 0, 0, 0]),
            (OPENAT, [AT_FDCWD, path, 0, 0, 0]),
            (STAT, [path, buffer, 0, 0, 0]),
            (LSTAT, [path, buffer, 0, 0, 0]),
            (NEWFSTATAT, [AT_FDCWD, path, buffer, 0, 0]),
            (STATX, [AT_FDCWD, path, 0, 0, buffer]),
            (ACCESS, [path, 0, 0, 0, 0]),
            (MKDIR, [path, 0o755, 0, 0, 0]),
            (RMDIR, [path, 0, 0, 0, 0]),
            (UNLINK, [path, 0, 0, 0, 0]),
            (RENAME, [path, path, 0, 0, 0]),
            (LINK, [path, path, 0, 0, 0]),
            (SYMLINK, [path, path, 0, 0, 0]),
            (READLINK, [path, buffer, 64, 0, 0]),
            (TRUNCATE, [path, 0, 0, 0, 0]),
            (CHMOD, [path, 0o644, 0, 0, 0]),
            (CHOWN, [path, 0, 0, 0, 0]),
            (UTIMES, [path, 0, 0, 0, 0]),
            (CHDIR, [path, 0, 0, 0, 0]),
        ] {
            assert_eq!(
                fixture.call(number, &args),
                err(Errno::EFAULT),
                "{} with path {path:#x}",
                linux_abi::syscall::name(number).unwrap_or("?"),
            );
        }
    }
}

#[test]
fn a_path_running_into_an_unmapped_page_is_efault_and_one_ending_before_it_is_read() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/x", b"");
    // "/tmp/x" with no NUL in the last bytes of the mapped memory.
    let unterminated = UNMAPPED - 6;
    fake::poke(unterminated, b"/tmp/x");
    assert_eq!(fixture.call(OPEN, &[unterminated, 0]), err(Errno::EFAULT));
    // With its NUL as the very last mapped byte, the unmapped page after
    // it is never touched.
    let terminated = UNMAPPED - 7;
    fake::poke(terminated, b"/tmp/x\0");
    assert!(fixture.call(OPEN, &[terminated, 0]) >= 0);
}

#[test]
fn an_empty_path_is_enoent_unless_at_empty_path() {
    let fixture = Fixture::new();
    let empty = put_string(0, b"");
    assert_eq!(fixture.call(OPEN, &[empty, 0]), err(Errno::ENOENT));
    assert_eq!(fixture.call(STAT, &[empty, at(64)]), err(Errno::ENOENT));
    fixture.make_file(b"/tmp/data", b"12345");
    let fd = fixture.open(b"/tmp/data", O_RDONLY);
    assert_eq!(
        fixture.call(NEWFSTATAT, &[fd, empty, at(64), AT_EMPTY_PATH]),
        0
    );
    assert_eq!(peek_u64(at(64 + 48)), 5, "st_size of the descriptor's file");
}

#[test]
fn a_path_longer_than_path_max_is_enametoolong() {
    let fixture = Fixture::new();
    // "/a/a/.../a": short names, PATH_MAX bytes without the NUL.
    let long: Vec<u8> = b"/a".repeat(vfs::PATH_MAX / 2);
    let path = put_string(0, &long);
    assert_eq!(fixture.call(OPEN, &[path, 0]), err(Errno::ENAMETOOLONG));
    assert_eq!(
        fixture.call(MKDIR, &[path, 0o755]),
        err(Errno::ENAMETOOLONG)
    );
    // One byte shorter fits with its NUL: looked up, just not there.
    let path = put_string(0, &long[1..]);
    assert_eq!(fixture.call(OPEN, &[path, 0]), err(Errno::ENOENT));
}

#[test]
fn a_relative_path_needs_an_open_directory_descriptor() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"");
    let relative = put_string(0, b"data");
    let absolute = put_string(64, b"/tmp/data");
    assert_eq!(
        fixture.call(OPENAT, &[CLOSED_FD, relative, 0]),
        err(Errno::EBADF)
    );
    let file = fixture.open(b"/tmp/data", O_RDONLY);
    assert_eq!(
        fixture.call(OPENAT, &[file, relative, 0]),
        err(Errno::ENOTDIR)
    );
    // An absolute path ignores the descriptor, however bad.
    assert!(fixture.call(OPENAT, &[CLOSED_FD, absolute, 0]) >= 0);
    let directory = fixture.open(b"/tmp", O_RDONLY | O_DIRECTORY);
    assert!(fixture.call(OPENAT, &[directory, relative, 0]) >= 0);
    // `AT_FDCWD` is an int: only its low 32 bits count.
    let at_cwd = AT_FDCWD & 0xffff_ffff;
    let cwd_relative = put_string(128, b"tmp/data");
    assert!(fixture.call(OPENAT, &[at_cwd, cwd_relative, 0]) >= 0);
}

#[test]
fn open_flags_reach_the_tree() {
    let fixture = Fixture::new();
    let path = put_string(0, b"/tmp/new");
    let flags = u64::from(O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC);
    let fd = fixture.call(OPEN, &[path, flags, 0o600]);
    assert!(fd >= 0);
    assert_eq!(fixture.call(FCNTL, &[fd as u64, 1]), 1, "close-on-exec");
    assert_eq!(
        fixture.call(OPEN, &[path, flags, 0o600]),
        err(Errno::EEXIST)
    );
    assert_eq!(fixture.call(CREAT, &[path, 0o600]), 4);
}

#[test]
fn stat_calls_refuse_unknown_flags_and_a_bad_buffer() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"");
    let path = put_string(0, b"/tmp/data");
    assert_eq!(
        fixture.call(NEWFSTATAT, &[AT_FDCWD, path, at(64), 0x1]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(NEWFSTATAT, &[AT_FDCWD, path, UNMAPPED, 0]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(STATX, &[AT_FDCWD, path, 0, 0x7ff, UNMAPPED]),
        err(Errno::EFAULT)
    );
    assert_eq!(fixture.call(STATX, &[AT_FDCWD, path, 0, 0x7ff, at(64)]), 0);
    let missing = put_string(512, b"/tmp/missing");
    assert_eq!(fixture.call(STAT, &[missing, at(64)]), err(Errno::ENOENT));
}

#[test]
fn access_checks_its_mode_and_flags() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"");
    let path = put_string(0, b"/tmp/data");
    assert_eq!(fixture.call(ACCESS, &[path, 8]), err(Errno::EINVAL));
    assert_eq!(
        fixture.call(FACCESSAT2, &[AT_FDCWD, path, 0, 0x1]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(FACCESSAT2, &[AT_FDCWD, path, 4, AT_EACCESS]),
        0
    );
    assert_eq!(fixture.call(ACCESS, &[path, 0]), 0);
}

#[test]
fn unlink_rename_and_link_refuse_unknown_flags() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/a", b"a");
    fixture.make_file(b"/tmp/b", b"b");
    let a = put_string(0, b"/tmp/a");
    let b = put_string(64, b"/tmp/b");
    let c = put_string(128, b"/tmp/c");
    assert_eq!(
        fixture.call(UNLINKAT, &[AT_FDCWD, a, 0x1]),
        err(Errno::EINVAL)
    );
    // Whiteouts, unknown flags, and both of exchange and no-replace.
    for flags in [RENAME_WHITEOUT, 8, RENAME_EXCHANGE | RENAME_NOREPLACE] {
        assert_eq!(
            fixture.call(RENAMEAT2, &[AT_FDCWD, a, AT_FDCWD, b, flags]),
            err(Errno::EINVAL)
        );
    }
    assert_eq!(
        fixture.call(RENAMEAT2, &[AT_FDCWD, a, AT_FDCWD, b, 1]),
        err(Errno::EEXIST)
    );
    assert_eq!(
        fixture.call(LINKAT, &[AT_FDCWD, a, AT_FDCWD, c, 0x1]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(LINKAT, &[AT_FDCWD, a, AT_FDCWD, c, 0]), 0);
    assert_eq!(fixture.file_contents(b"/tmp/c"), b"a");
    assert_eq!(fixture.call(RENAMEAT2, &[AT_FDCWD, a, AT_FDCWD, b, 0]), 0);
    assert_eq!(fixture.file_contents(b"/tmp/b"), b"a");
    assert_eq!(fixture.call(UNLINK, &[c]), 0);
    assert_eq!(fixture.call(UNLINK, &[c]), err(Errno::ENOENT));
    assert_eq!(fixture.call(RMDIR, &[b]), err(Errno::ENOTDIR));
}

#[test]
fn rename_between_directories_resolves_the_second_path_in_its_own() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/a", b"a");
    let dir = put_string(0, b"/tmp/sub");
    assert_eq!(fixture.call(MKDIR, &[dir, 0o755]), 0);
    let tmp = fixture.open(b"/tmp", O_RDONLY | O_DIRECTORY);
    let sub = fixture.open(b"/tmp/sub", O_RDONLY | O_DIRECTORY);
    let name = put_string(64, b"a");
    assert_eq!(fixture.call(RENAMEAT, &[tmp, name, sub, name]), 0);
    assert_eq!(fixture.file_contents(b"/tmp/sub/a"), b"a");
}

#[test]
fn readlink_checks_its_size_and_cuts_the_target() {
    let fixture = Fixture::new();
    let target = put_string(0, b"/tmp/target");
    let link = put_string(64, b"/tmp/link");
    assert_eq!(fixture.call(SYMLINK, &[target, link]), 0);
    for size in [0, u64::MAX, 1 << 63] {
        assert_eq!(
            fixture.call(READLINK, &[link, at(256), size]),
            err(Errno::EINVAL)
        );
    }
    assert_eq!(
        fixture.call(READLINK, &[link, UNMAPPED, 64]),
        err(Errno::EFAULT)
    );
    assert_eq!(fixture.call(READLINK, &[link, at(256), 4]), 4);
    assert_eq!(fake::peek(at(256), 4), b"/tmp");
    assert_eq!(fixture.call(READLINK, &[link, at(256), 4096]), 11);
    assert_eq!(fake::peek(at(256), 11), b"/tmp/target");
}

#[test]
fn readlinkat_with_an_empty_path_reads_the_link_its_descriptor_names() {
    let fixture = Fixture::new();
    let target = put_string(0, b"/tmp/target");
    let link = put_string(64, b"/tmp/link");
    assert_eq!(fixture.call(SYMLINK, &[target, link]), 0);
    let empty = put_string(128, b"");
    let descriptor = fixture.open(b"/tmp/link", O_PATH | O_NOFOLLOW);
    assert_eq!(
        fixture.call(READLINKAT, &[descriptor, empty, at(256), 64]),
        11
    );
    assert_eq!(fake::peek(at(256), 11), b"/tmp/target");
    // Not a link: ENOENT, as for an empty path elsewhere.
    let directory = fixture.open(b"/tmp", O_RDONLY | O_DIRECTORY);
    assert_eq!(
        fixture.call(READLINKAT, &[directory, empty, at(256), 64]),
        err(Errno::ENOENT)
    );
    assert_eq!(
        fixture.call(READLINKAT, &[99, empty, at(256), 64]),
        err(Errno::EBADF)
    );
}

#[test]
fn truncate_refuses_a_negative_length() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"0123456789");
    let path = put_string(0, b"/tmp/data");
    assert_eq!(
        fixture.call(TRUNCATE, &[path, (-1i64) as u64]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(TRUNCATE, &[path, 3]), 0);
    assert_eq!(fixture.file_contents(b"/tmp/data"), b"012");
}

#[test]
fn chown_refuses_unknown_flags_and_keeps_minus_one() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"");
    let path = put_string(0, b"/tmp/data");
    assert_eq!(
        fixture.call(FCHOWNAT, &[AT_FDCWD, path, 1, 1, 0x1]),
        err(Errno::EINVAL)
    );
    assert_eq!(fixture.call(CHOWN, &[path, 5, 6]), 0);
    assert_eq!(fixture.call(LCHOWN, &[path, 0xffff_ffff, 9]), 0);
    assert_eq!(fixture.call(STAT, &[path, at(64)]), 0);
    assert_eq!(peek_u32(at(64 + 28)), 5, "uid kept by -1");
    assert_eq!(peek_u32(at(64 + 32)), 9);
}

#[test]
fn utimensat_checks_its_times() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"");
    let path = put_string(0, b"/tmp/data");
    let missing = put_string(64, b"/tmp/missing");
    let timespecs = |offset: u64, times: [(i64, i64); 2]| {
        let bytes: Vec<u8> = times
            .iter()
            .flat_map(|&(sec, nsec)| linux_abi::time::Timespec { sec, nsec }.to_bytes())
            .collect();
        put(offset, &bytes)
    };
    let bad = timespecs(256, [(1, 1_000_000_000), (1, 0)]);
    assert_eq!(
        fixture.call(UTIMENSAT, &[AT_FDCWD, path, bad, 0]),
        err(Errno::EINVAL)
    );
    let negative = timespecs(256, [(1, -5), (1, 0)]);
    assert_eq!(
        fixture.call(UTIMENSAT, &[AT_FDCWD, path, negative, 0]),
        err(Errno::EINVAL)
    );
    assert_eq!(
        fixture.call(UTIMENSAT, &[AT_FDCWD, path, UNMAPPED - 16, 0]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(UTIMENSAT, &[AT_FDCWD, path, 0, 0x1]),
        err(Errno::EINVAL)
    );
    // Both `UTIME_OMIT`: nothing to do, the path is not even looked up.
    const UTIME_OMIT: i64 = (1 << 30) - 2;
    let omit = timespecs(256, [(0, UTIME_OMIT), (0, UTIME_OMIT)]);
    assert_eq!(fixture.call(UTIMENSAT, &[AT_FDCWD, missing, omit, 0]), 0);
    let valid = timespecs(256, [(77, 5), (88, 6)]);
    assert_eq!(fixture.call(UTIMENSAT, &[AT_FDCWD, path, valid, 0]), 0);
    assert_eq!(fixture.call(STAT, &[path, at(512)]), 0);
    // `st_atime` at 72, `st_mtime` at 88.
    assert_eq!(peek_u64(at(512 + 72)), 77);
    assert_eq!(peek_u64(at(512 + 88)), 88);
    // A null path with a descriptor is `futimens`; with AT_FDCWD, EFAULT.
    let fd = fixture.open(b"/tmp/data", O_RDONLY);
    assert_eq!(fixture.call(UTIMENSAT, &[fd, 0, valid, 0]), 0);
    assert_eq!(
        fixture.call(UTIMENSAT, &[CLOSED_FD, 0, valid, 0]),
        err(Errno::EBADF)
    );
    assert_eq!(
        fixture.call(UTIMENSAT, &[AT_FDCWD, 0, valid, 0]),
        err(Errno::EFAULT)
    );
}

#[test]
fn utimes_checks_its_microseconds() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"");
    let path = put_string(0, b"/tmp/data");
    let timevals = |times: [(i64, i64); 2]| {
        let bytes: Vec<u8> = times
            .iter()
            .flat_map(|&(sec, usec)| linux_abi::time::Timeval { sec, usec }.to_bytes())
            .collect();
        put(256, &bytes)
    };
    let bad = timevals([(1, 1_000_000), (1, 0)]);
    assert_eq!(fixture.call(UTIMES, &[path, bad]), err(Errno::EINVAL));
    assert_eq!(
        fixture.call(UTIMES, &[path, UNMAPPED - 8]),
        err(Errno::EFAULT)
    );
    assert_eq!(
        fixture.call(UTIME, &[path, UNMAPPED - 8]),
        err(Errno::EFAULT)
    );
    let valid = timevals([(10, 999_999), (20, 0)]);
    assert_eq!(fixture.call(UTIMES, &[path, valid]), 0);
    assert_eq!(fixture.call(UTIME, &[path, 0]), 0);
}

#[test]
fn getcwd_needs_room_for_the_path_and_its_nul() {
    let fixture = Fixture::new();
    let path = put_string(0, b"/tmp");
    assert_eq!(fixture.call(CHDIR, &[path]), 0);
    assert_eq!(fixture.call(GETCWD, &[at(64), 4]), err(Errno::ERANGE));
    assert_eq!(fixture.call(GETCWD, &[at(64), 0]), err(Errno::ERANGE));
    assert_eq!(fixture.call(GETCWD, &[UNMAPPED, 4096]), err(Errno::EFAULT));
    assert_eq!(fixture.call(GETCWD, &[at(64), 5]), 5);
    assert_eq!(fake::peek(at(64), 5), b"/tmp\0");
}

#[test]
fn chdir_and_fchdir_need_a_directory() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"");
    let file_path = put_string(0, b"/tmp/data");
    assert_eq!(fixture.call(CHDIR, &[file_path]), err(Errno::ENOTDIR));
    let file = fixture.open(b"/tmp/data", O_RDONLY);
    assert_eq!(fixture.call(FCHDIR, &[file]), err(Errno::ENOTDIR));
    assert_eq!(fixture.call(FCHDIR, &[CLOSED_FD]), err(Errno::EBADF));
    let directory = fixture.open(b"/tmp", O_RDONLY | O_DIRECTORY);
    assert_eq!(fixture.call(FCHDIR, &[directory]), 0);
    let relative = put_string(64, b"data");
    assert!(fixture.call(OPEN, &[relative, 0]) >= 0);
}

#[test]
fn umask_keeps_only_permission_bits() {
    let fixture = Fixture::new();
    let previous = fixture.call(UMASK, &[0o7777]);
    assert_eq!(fixture.call(UMASK, &[0o022]), 0o777);
    assert_eq!(fixture.call(UMASK, &[previous as u64]), 0o022);
}

#[test]
fn mknod_makes_fifos_files_and_root_s_devices() {
    let fixture = Fixture::new();
    let stat = at(4096);
    assert_eq!(fixture.call_path(MKNOD, b"/tmp/fifo", &[0o10644, 0]), 0);
    assert_eq!(fixture.call_path(STAT, b"/tmp/fifo", &[stat]), 0);
    let mode = u32::from_le_bytes(fake::peek(stat + 24, 4).try_into().unwrap());
    assert_eq!(mode, 0o10644 & !0o022, "a FIFO, with the umask applied");
    assert_eq!(
        fixture.call_path(MKNOD, b"/tmp/plain", &[0o600, 0]),
        0,
        "0: a regular file"
    );
    assert_eq!(
        fixture.call_path(MKNOD, b"/tmp/plain", &[0o600, 0]),
        err(Errno::EEXIST)
    );
    assert_eq!(
        fixture.call_path(MKNOD, b"/tmp/dir", &[0o40755, 0]),
        err(Errno::EPERM)
    );
    assert_eq!(
        fixture.call_path(MKNOD, b"/tmp/odd", &[0o170755, 0]),
        err(Errno::EINVAL)
    );
    // /dev/null's number (1, 3), encoded as the kernel takes it.
    assert_eq!(
        fixture.call_path(MKNOD, b"/tmp/null", &[0o20666, (1 << 8) | 3]),
        0
    );
    assert_eq!(fixture.call_path(STAT, b"/tmp/null", &[stat]), 0);
    let rdev = u64::from_le_bytes(fake::peek(stat + 40, 8).try_into().unwrap());
    assert_eq!(
        (linux_abi::stat::major(rdev), linux_abi::stat::minor(rdev)),
        (1, 3)
    );
    assert_eq!(fixture.call(SETRESUID, &[1, 1, 1]), 0);
    assert_eq!(
        fixture.call_path(MKNOD, b"/tmp/null2", &[0o20666, 0x103]),
        err(Errno::EPERM)
    );
}

#[test]
fn a_set_group_id_directory_gives_its_group_to_what_is_made_in_it() {
    let fixture = Fixture::new();
    let stat = at(4096);
    assert_eq!(fixture.call_path(MKDIR, b"/tmp/shared", &[0o777]), 0);
    assert_eq!(fixture.call_path(CHOWN, b"/tmp/shared", &[0, 50]), 0);
    assert_eq!(fixture.call_path(CHMOD, b"/tmp/shared", &[0o2777]), 0);
    assert_eq!(
        fixture.call_path(MKNOD, b"/tmp/shared/file", &[0o10644, 0]),
        0
    );
    assert_eq!(fixture.call_path(MKDIR, b"/tmp/shared/sub", &[0o755]), 0);
    for path in [&b"/tmp/shared/file"[..], b"/tmp/shared/sub"] {
        assert_eq!(fixture.call_path(STAT, path, &[stat]), 0);
        let gid = u32::from_le_bytes(fake::peek(stat + 32, 4).try_into().unwrap());
        assert_eq!(gid, 50);
    }
    let mode = u32::from_le_bytes(fake::peek(stat + 24, 4).try_into().unwrap());
    assert_eq!(mode & 0o2000, 0o2000, "a directory keeps the bit going");
}

#[test]
fn an_o_path_descriptor_names_a_file_for_fstat_fchdir_and_at_calls_only() {
    // fcntl's commands (Linux's numbers).
    const F_GETFL: u64 = 3;
    const F_SETFL: u64 = 4;
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"12345");
    let file = fixture.open(b"/tmp/data", O_PATH);
    let directory = fixture.open(b"/tmp", O_PATH | O_DIRECTORY);
    let buffer = at(0x100);
    assert_eq!(fixture.call(READ, &[file, buffer, 4]), err(Errno::EBADF));
    assert_eq!(fixture.call(WRITE, &[file, buffer, 4]), err(Errno::EBADF));
    assert_eq!(fixture.call(LSEEK, &[file, 0, 0]), err(Errno::EBADF));
    assert_eq!(fixture.call(FCHMOD, &[file, 0o600]), err(Errno::EBADF));
    assert_eq!(fixture.call(FTRUNCATE, &[file, 0]), err(Errno::EBADF));
    assert_eq!(
        fixture.call(GETDENTS64, &[directory, buffer, 256]),
        err(Errno::EBADF)
    );
    assert_eq!(fixture.call(FSTAT, &[file, buffer]), 0);
    assert_eq!(peek_u64(buffer + 48), 5, "st_size");
    assert_eq!(fixture.call(FCNTL, &[file, F_GETFL]), i64::from(O_PATH));
    assert_eq!(
        fixture.call(FCNTL, &[file, F_SETFL, u64::from(O_NONBLOCK)]),
        err(Errno::EBADF)
    );
    assert!(fixture.call(DUP, &[file]) >= 0);
    let name = put_string(0xf000, b"data");
    assert_eq!(fixture.call(NEWFSTATAT, &[directory, name, buffer, 0]), 0);
    assert_eq!(fixture.call(FCHDIR, &[directory]), 0);
    assert!(fixture.call_path(OPEN, b"data", &[u64::from(O_RDONLY)]) >= 0);
    assert_eq!(fixture.call(CLOSE, &[file]), 0);
}

#[test]
fn rename_exchange_swaps_two_names_that_both_exist() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/a", b"a");
    let dir = put_string(0, b"/tmp/sub");
    assert_eq!(fixture.call(MKDIR, &[dir, 0o755]), 0);
    fixture.make_file(b"/tmp/sub/b", b"b");
    let tmp = fixture.open(b"/tmp", O_RDONLY | O_DIRECTORY);
    let sub = fixture.open(b"/tmp/sub", O_RDONLY | O_DIRECTORY);
    let (a, b, missing) = (
        put_string(64, b"a"),
        put_string(128, b"b"),
        put_string(192, b"missing"),
    );
    assert_eq!(
        fixture.call(RENAMEAT2, &[tmp, a, sub, missing, RENAME_EXCHANGE]),
        err(Errno::ENOENT)
    );
    assert_eq!(
        fixture.call(RENAMEAT2, &[tmp, a, sub, b, RENAME_EXCHANGE]),
        0
    );
    assert_eq!(fixture.file_contents(b"/tmp/a"), b"b");
    assert_eq!(fixture.file_contents(b"/tmp/sub/b"), b"a");
    // A directory swapped with a file: the link counts and ".." follow.
    let tmp_links = |fixture: &Fixture| {
        assert_eq!(fixture.call_path(STAT, b"/tmp", &[at(0x400)]), 0);
        peek_u64(at(0x400 + 16))
    };
    let before = tmp_links(&fixture);
    fixture.make_file(b"/c", b"c");
    let (sub_path, c_path) = (put_string(256, b"/tmp/sub"), put_string(320, b"/c"));
    assert_eq!(
        fixture.call(
            RENAMEAT2,
            &[AT_FDCWD, sub_path, AT_FDCWD, c_path, RENAME_EXCHANGE]
        ),
        0
    );
    assert_eq!(tmp_links(&fixture), before - 1);
    assert_eq!(fixture.file_contents(b"/tmp/sub"), b"c");
    assert_eq!(fixture.file_contents(b"/c/b"), b"a");
    assert_eq!(fixture.call_path(STAT, b"/c/..", &[at(0x400)]), 0);
    let root_ino = peek_u64(at(0x400 + 8));
    assert_eq!(fixture.call_path(STAT, b"/", &[at(0x400)]), 0);
    assert_eq!(peek_u64(at(0x400 + 8)), root_ino);
    // A directory cannot trade places with something inside it.
    let (c_dir, inner) = (put_string(256, b"/c"), put_string(320, b"/c/b"));
    assert_eq!(
        fixture.call(
            RENAMEAT2,
            &[AT_FDCWD, c_dir, AT_FDCWD, inner, RENAME_EXCHANGE]
        ),
        err(Errno::EINVAL)
    );
}

#[test]
fn chroot_moves_root_for_root_only_after_the_lookups_errors() {
    let fixture = Fixture::new();
    assert_eq!(fixture.call_path(MKDIR, b"/tmp/jail", &[0o711]), 0);
    assert_eq!(fixture.call_path(MKDIR, b"/tmp/jail/closed", &[0o700]), 0);
    fixture.make_file(b"/tmp/jail/inside", b"in");
    let buffer = at(0x400);
    assert_eq!(
        fixture.call_path(CHROOT, b"/tmp/missing", &[]),
        err(Errno::ENOENT)
    );
    assert_eq!(
        fixture.call_path(CHROOT, b"/tmp/jail/inside", &[]),
        err(Errno::ENOTDIR)
    );
    assert_eq!(fixture.call(CHROOT, &[UNMAPPED]), err(Errno::EFAULT));
    assert_eq!(fixture.call_path(CHROOT, b"/tmp/jail", &[]), 0);
    // "/" is the jail now, and ".." stops at it.
    assert_eq!(fixture.call_path(STAT, b"/inside", &[buffer]), 0);
    assert_eq!(fixture.call_path(STAT, b"/../inside", &[buffer]), 0);
    assert_eq!(
        fixture.call_path(STAT, b"/tmp", &[buffer]),
        err(Errno::ENOENT)
    );
    // An unprivileged process: EACCES for a directory it may not
    // search, else EPERM.
    assert_eq!(fixture.call(SETRESUID, &[1, 1, 1]), 0);
    assert_eq!(
        fixture.call_path(CHROOT, b"/closed", &[]),
        err(Errno::EACCES)
    );
    assert_eq!(fixture.call_path(CHROOT, b"/", &[]), err(Errno::EPERM));
}

#[test]
fn statx_refuses_unknown_flags_both_sync_types_and_the_reserved_mask_bit() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"1");
    let path = put_string(0, b"/tmp/data");
    let buffer = at(0x400);
    for (flags, mask) in [
        (u64::from(u32::MAX), 0),
        (0x6000, 0),
        (0, u64::from(u32::MAX)),
        (0, 0x8000_0000),
    ] {
        assert_eq!(
            fixture.call(STATX, &[AT_FDCWD, path, flags, mask, buffer]),
            err(Errno::EINVAL),
            "flags {flags:#x}, mask {mask:#x}"
        );
    }
    assert_eq!(
        fixture.call(
            STATX,
            &[AT_FDCWD, path, 0x2000 | AT_NO_AUTOMOUNT, 0xfff, buffer]
        ),
        0
    );
}
