use super::{setup, write_file};
use crate::{Stat, S_IFREG};

#[test]
fn stat_of_a_file_reports_its_metadata() {
    let (vfs, context) = setup();
    write_file(&vfs, &context, b"/f", &[7; 5000]);
    let metadata = vfs.stat(&context, b"/f", true).unwrap();
    let stat = Stat::from(&metadata);
    assert_eq!(stat.st_dev, 1);
    assert_eq!(stat.st_mode, S_IFREG | 0o644);
    assert_eq!(stat.st_size, 5000);
    assert_eq!(stat.st_blksize, 4096);
    assert_eq!(stat.st_blocks, 16);
    assert_eq!(stat.st_nlink, 1);
    assert_eq!(stat.st_ino, metadata.ino);
    assert_eq!(stat.st_mtime, metadata.mtime.into());
    assert_eq!(stat.st_mtime.nsec, 500);
}
