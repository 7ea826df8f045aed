use crate::{
    stat::{major, makedev, minor, Stat, Statx, STATX_BASIC_STATS},
    time::Timespec,
};

fn sample() -> Stat {
    Stat {
        st_dev: 0x0101_0101_0101_0101,
        st_ino: 0x0202_0202_0202_0202,
        st_nlink: 0x0303_0303_0303_0303,
        st_mode: 0x0404_0404,
        st_uid: 0x0505_0505,
        st_gid: 0x0606_0606,
        st_rdev: 0x0707_0707_0707_0707,
        st_size: 0x0808_0808_0808_0808,
        st_blksize: 0x0909_0909_0909_0909,
        st_blocks: 0x0a0a_0a0a_0a0a_0a0a,
        st_atime: Timespec {
            sec: 0x0b0b_0b0b_0b0b_0b0b,
            nsec: 0x0c0c_0c0c,
        },
        st_mtime: Timespec {
            sec: 0x0d0d_0d0d_0d0d_0d0d,
            nsec: 0x0e0e_0e0e,
        },
        st_ctime: Timespec {
            sec: 0x0f0f_0f0f_0f0f_0f0f,
            nsec: 0x1010_1010,
        },
    }
}

fn u64_at(buf: &[u8], offset: usize) -> u64 {
    u64::from_le_bytes(buf[offset..offset + 8].try_into().unwrap())
}

fn u32_at(buf: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes(buf[offset..offset + 4].try_into().unwrap())
}

#[test]
fn stat_has_the_x86_64_layout() {
    let bytes = sample().to_bytes();
    assert_eq!(bytes.len(), 144);
    assert_eq!(u64_at(&bytes, 0), 0x0101_0101_0101_0101, "st_dev");
    assert_eq!(u64_at(&bytes, 8), 0x0202_0202_0202_0202, "st_ino");
    assert_eq!(u64_at(&bytes, 16), 0x0303_0303_0303_0303, "st_nlink");
    assert_eq!(u32_at(&bytes, 24), 0x0404_0404, "st_mode");
    assert_eq!(u32_at(&bytes, 28), 0x0505_0505, "st_uid");
    assert_eq!(u32_at(&bytes, 32), 0x0606_0606, "st_gid");
    assert_eq!(u32_at(&bytes, 36), 0, "__pad0");
    assert_eq!(u64_at(&bytes, 40), 0x0707_0707_0707_0707, "st_rdev");
    assert_eq!(u64_at(&bytes, 48), 0x0808_0808_0808_0808, "st_size");
    assert_eq!(u64_at(&bytes, 56), 0x0909_0909_0909_0909, "st_blksize");
    assert_eq!(u64_at(&bytes, 64), 0x0a0a_0a0a_0a0a_0a0a, "st_blocks");
    assert_eq!(u64_at(&bytes, 72), 0x0b0b_0b0b_0b0b_0b0b, "st_atime");
    assert_eq!(u64_at(&bytes, 80), 0x0c0c_0c0c, "st_atime_nsec");
    assert_eq!(u64_at(&bytes, 88), 0x0d0d_0d0d_0d0d_0d0d, "st_mtime");
    assert_eq!(u64_at(&bytes, 96), 0x0e0e_0e0e, "st_mtime_nsec");
    assert_eq!(u64_at(&bytes, 104), 0x0f0f_0f0f_0f0f_0f0f, "st_ctime");
    assert_eq!(u64_at(&bytes, 112), 0x1010_1010, "st_ctime_nsec");
    assert!(bytes[120..].iter().all(|byte| *byte == 0), "__unused");
}

#[test]
fn statx_has_the_linux_layout() {
    let stat = Stat {
        st_dev: makedev(8, 1),
        st_rdev: makedev(300, 70_000),
        ..sample()
    };
    let bytes = Statx::from(&stat).to_bytes();
    assert_eq!(bytes.len(), 256);
    assert_eq!(u32_at(&bytes, 0), STATX_BASIC_STATS, "stx_mask");
    assert_eq!(u32_at(&bytes, 4), 0x0909_0909, "stx_blksize");
    assert_eq!(u32_at(&bytes, 16), 0x0303_0303, "stx_nlink");
    assert_eq!(u32_at(&bytes, 20), 0x0505_0505, "stx_uid");
    assert_eq!(u32_at(&bytes, 24), 0x0606_0606, "stx_gid");
    assert_eq!(
        u16::from_le_bytes([bytes[28], bytes[29]]),
        0x0404,
        "stx_mode"
    );
    assert_eq!(u64_at(&bytes, 32), 0x0202_0202_0202_0202, "stx_ino");
    assert_eq!(u64_at(&bytes, 40), 0x0808_0808_0808_0808, "stx_size");
    assert_eq!(u64_at(&bytes, 48), 0x0a0a_0a0a_0a0a_0a0a, "stx_blocks");
    assert_eq!(
        u64_at(&bytes, 64),
        0x0b0b_0b0b_0b0b_0b0b,
        "stx_atime.tv_sec"
    );
    assert_eq!(u32_at(&bytes, 72), 0x0c0c_0c0c, "stx_atime.tv_nsec");
    assert_eq!(u64_at(&bytes, 80), 0, "no birth time");
    assert_eq!(u64_at(&bytes, 96), 0x0f0f_0f0f_0f0f_0f0f, "stx_ctime");
    assert_eq!(u64_at(&bytes, 112), 0x0d0d_0d0d_0d0d_0d0d, "stx_mtime");
    assert_eq!(u32_at(&bytes, 128), 300, "stx_rdev_major");
    assert_eq!(u32_at(&bytes, 132), 70_000, "stx_rdev_minor");
    assert_eq!(u32_at(&bytes, 136), 8, "stx_dev_major");
    assert_eq!(u32_at(&bytes, 140), 1, "stx_dev_minor");
}

#[test]
fn device_numbers_encode_like_glibc() {
    assert_eq!(makedev(1, 3), 0x103);
    assert_eq!(makedev(8, 1), 0x801);
    assert_eq!(makedev(0x123, 0x45678), 0x0000_0000_4561_2378);
    for (major_number, minor_number) in [
        (0, 0),
        (1, 3),
        (4095, 255),
        (4096, 256),
        (u32::MAX, u32::MAX),
    ] {
        let dev = makedev(major_number, minor_number);
        assert_eq!((major(dev), minor(dev)), (major_number, minor_number));
    }
}
