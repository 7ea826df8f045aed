//! The `stat` and `statx` records (their layouts are `linux_abi::stat`'s),
//! built from an inode's [`Metadata`].

pub use linux_abi::stat::{Stat, Statx, STATX_BASIC_STATS, STATX_BYTES, STAT_BYTES};

use crate::metadata::{Metadata, Timespec};

impl From<Timespec> for linux_abi::time::Timespec {
    fn from(time: Timespec) -> Self {
        linux_abi::time::Timespec {
            sec: time.sec,
            nsec: i64::from(time.nsec),
        }
    }
}

impl From<&Metadata> for Stat {
    fn from(metadata: &Metadata) -> Stat {
        // Sizes above i64::MAX cannot occur (files are limited to it).
        let signed = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
        Stat {
            st_dev: metadata.dev,
            st_ino: metadata.ino,
            st_nlink: metadata.nlink,
            st_mode: metadata.mode,
            st_uid: metadata.uid,
            st_gid: metadata.gid,
            st_rdev: metadata.rdev,
            st_size: signed(metadata.size),
            st_blksize: signed(metadata.blksize),
            st_blocks: signed(metadata.blocks),
            st_atime: metadata.atime.into(),
            st_mtime: metadata.mtime.into(),
            st_ctime: metadata.ctime.into(),
        }
    }
}
