//! `info`: `uname` and `sysinfo`.

use linux_abi::syscall::*;
use vfs::Errno;

use super::*;

/// Bytes of a `struct utsname` (six fields of 65).
const UTSNAME_BYTES: usize = 6 * 65;

#[test]
fn uname_answers_as_linux_or_faults() {
    let fixture = Fixture::new();
    assert_eq!(fixture.call(UNAME, &[UNMAPPED]), err(Errno::EFAULT));
    assert_eq!(fixture.call(UNAME, &[UNMAPPED - 100]), err(Errno::EFAULT));
    fake::map_read_only(at(4096), UTSNAME_BYTES);
    assert_eq!(fixture.call(UNAME, &[at(4096)]), err(Errno::EFAULT));
    assert_eq!(fixture.call(UNAME, &[at(0)]), 0);
    let record = fake::peek(at(0), UTSNAME_BYTES);
    let field = |index: usize| {
        let bytes = &record[index * 65..(index + 1) * 65];
        let end = bytes.iter().position(|&byte| byte == 0).expect("a NUL");
        bytes[..end].to_vec()
    };
    assert_eq!(field(0), b"Linux");
    assert_eq!(field(2), crate::RELEASE);
    assert_eq!(field(3), crate::VERSION);
    assert_eq!(field(4), b"x86_64");
}

#[test]
fn sysinfo_reports_the_systems_figures_or_faults() {
    let fixture = Fixture::new();
    assert_eq!(fixture.call(SYSINFO, &[UNMAPPED]), err(Errno::EFAULT));
    assert_eq!(fixture.call(SYSINFO, &[0]), err(Errno::EFAULT));
    assert_eq!(fixture.call(SYSINFO, &[at(0)]), 0);
    // Uptime rounded up to whole seconds; RAM in bytes (`mem_unit` 1).
    assert_eq!(peek_u64(at(0)), SYSTEM_UPTIME_NS.div_ceil(1_000_000_000));
    assert_eq!(peek_u64(at(32)), 64 << 20, "totalram");
    assert_eq!(peek_u64(at(40)), 48 << 20, "freeram");
}

#[test]
fn root_names_the_host_and_domain_and_uname_shows_them() {
    let fixture = Fixture::new();
    let name = put(0, b"box.example");
    assert_eq!(fixture.call(SETHOSTNAME, &[name, 3]), 0);
    assert_eq!(fixture.call(SETDOMAINNAME, &[name + 4, 7]), 0);
    assert_eq!(fixture.call(UNAME, &[at(128)]), 0);
    let field = |index: u64| fake::peek(at(128) + index * 65, 65);
    assert_eq!(&field(1)[..4], b"box\0");
    assert_eq!(&field(5)[..8], b"example\0");
    assert_eq!(fixture.call(SETHOSTNAME, &[name, 65]), err(Errno::EINVAL));
    assert_eq!(
        fixture.call(SETHOSTNAME, &[name, u64::MAX]),
        err(Errno::EINVAL),
        "-1"
    );
    assert_eq!(
        fixture.call(SETHOSTNAME, &[UNMAPPED, 4]),
        err(Errno::EFAULT)
    );
    // Without CAP_SYS_ADMIN (here: no longer root), EPERM before anything.
    assert_eq!(fixture.call(SETRESUID, &[1, 1, 1]), 0);
    assert_eq!(
        fixture.call(SETHOSTNAME, &[UNMAPPED, 99]),
        err(Errno::EPERM)
    );
}

#[test]
fn personality_keeps_any_persona_and_uname26_makes_the_release_2_6() {
    const UNAME26: u64 = 0x002_0000;
    const QUERY: u64 = 0xffff_ffff;
    let fixture = Fixture::new();
    assert_eq!(fixture.call(PERSONALITY, &[QUERY]), 0, "PER_LINUX");
    assert_eq!(fixture.call(PERSONALITY, &[UNAME26]), 0);
    assert_eq!(fixture.call(PERSONALITY, &[QUERY]), UNAME26 as i64);
    assert_eq!(fixture.call(UNAME, &[at(0)]), 0);
    let release = fake::peek(at(65 * 2), 65);
    let length = release.iter().position(|&byte| byte == 0).unwrap();
    assert_eq!(&release[..length], b"2.6.61-spindle");
    assert!(
        release[length..].iter().all(|&byte| byte == 0),
        "nothing leaks"
    );
    // Only the low 32 bits count; the old persona comes back.
    assert_eq!(
        fixture.call(PERSONALITY, &[(1 << 40) | 0x0008]),
        UNAME26 as i64
    );
    assert_eq!(fixture.call(PERSONALITY, &[0]), 0x0008);
    assert_eq!(fixture.call(UNAME, &[at(0)]), 0);
    assert_eq!(&fake::peek(at(65 * 2), 13), crate::RELEASE);
    // A forked child keeps its parent's persona.
    assert_eq!(fixture.call(PERSONALITY, &[UNAME26]), 0);
    fixture.personality.process_forked(PID, PID + 1);
    assert_eq!(
        fixture.personality.files(PID + 1).unwrap().persona(),
        UNAME26 as u32
    );
}

#[test]
fn uname26_release_follows_linuxs_override_release() {
    use crate::persona::release_for;
    assert_eq!(release_for(0x002_0000, b"6.1.0-spindle"), b"2.6.61-spindle");
    assert_eq!(release_for(0x002_0000, b"3.10.2.7-x"), b"2.6.70.7-x");
    assert_eq!(release_for(0x002_0000, b"5.4"), b"2.6.64");
    assert_eq!(release_for(0, b"6.1.0-spindle"), b"6.1.0-spindle");
}
