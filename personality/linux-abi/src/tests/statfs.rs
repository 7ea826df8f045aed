use crate::{
    statfs::{Statfs, ST_VALID, TMPFS_MAGIC},
    sysinfo::Sysinfo,
};

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

#[test]
fn statfs_has_the_x86_64_layout() {
    let bytes = Statfs {
        fs_type: TMPFS_MAGIC,
        bsize: 4096,
        ffree: 5,
        fsid: 0x801,
        namelen: 255,
        frsize: 4096,
        flags: ST_VALID,
        ..Statfs::default()
    }
    .to_bytes();
    assert_eq!(bytes.len(), 120);
    assert_eq!(u64_at(&bytes, 0), 0x0102_1994, "f_type");
    assert_eq!(u64_at(&bytes, 48), 5, "f_ffree");
    assert_eq!(u64_at(&bytes, 56), 0x801, "f_fsid");
    assert_eq!(u64_at(&bytes, 64), 255, "f_namelen");
    assert_eq!(u64_at(&bytes, 80), 0x20, "f_flags");
    assert!(bytes[88..].iter().all(|byte| *byte == 0), "f_spare");
}

#[test]
fn sysinfo_has_the_x86_64_layout() {
    let bytes = Sysinfo {
        uptime: 7,
        loads: [1, 2, 3],
        totalram: 1 << 30,
        procs: 12,
        mem_unit: 1,
        ..Sysinfo::default()
    }
    .to_bytes();
    assert_eq!(bytes.len(), 112);
    assert_eq!(u64_at(&bytes, 0), 7, "uptime");
    assert_eq!(u64_at(&bytes, 24), 3, "loads[2]");
    assert_eq!(u64_at(&bytes, 32), 1 << 30, "totalram");
    assert_eq!(u16::from_le_bytes([bytes[80], bytes[81]]), 12, "procs");
    assert_eq!(
        u32::from_le_bytes(bytes[104..108].try_into().unwrap()),
        1,
        "mem_unit"
    );
}
