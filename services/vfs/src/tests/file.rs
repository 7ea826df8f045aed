use alloc::{sync::Arc, vec::Vec};

use super::{read_file, setup, write_file};
use crate::{
    decode_dirents64,
    devices::{Null, NULL_DEV},
    dirent64_length,
    flags::*,
    Errno, FileType, OpenFile, S_IFCHR, S_IFIFO, S_IFREG,
};

#[test]
fn access_modes_give_ebadf() {
    let (vfs, context) = setup();
    write_file(&vfs, &context, b"/f", b"abc");
    let reader = vfs.open(&context, b"/f", O_RDONLY, 0).unwrap();
    let writer = vfs.open(&context, b"/f", O_WRONLY, 0).unwrap();
    let mut buf = [0; 3];
    assert_eq!(reader.write(b"x"), Err(Errno::EBADF));
    assert_eq!(reader.pwrite(b"x", 0), Err(Errno::EBADF));
    assert_eq!(writer.read(&mut buf), Err(Errno::EBADF));
    assert_eq!(writer.pread(&mut buf, 0), Err(Errno::EBADF));
    assert_eq!(reader.truncate(0), Err(Errno::EINVAL));
    assert_eq!(reader.read(&mut buf), Ok(3));
    assert_eq!(writer.write(b"xy"), Ok(2));
    assert_eq!(read_file(&vfs, &context, b"/f"), b"xyc");
    assert_eq!(reader.flags() & O_ACCMODE, O_RDONLY);
    assert_eq!(
        vfs.open(&context, b"/f", O_ACCMODE, 0).err(),
        Some(Errno::EINVAL)
    );
}

#[test]
fn offsets_are_shared_by_one_description_and_not_by_two() {
    let (vfs, context) = setup();
    write_file(&vfs, &context, b"/f", b"0123456789");
    let shared = vfs.open(&context, b"/f", O_RDONLY, 0).unwrap();
    let dup = shared.clone();
    let other = vfs.open(&context, b"/f", O_RDONLY, 0).unwrap();
    let mut buf = [0; 4];
    shared.read(&mut buf).unwrap();
    dup.read(&mut buf).unwrap();
    assert_eq!(&buf, b"4567");
    other.read(&mut buf).unwrap();
    assert_eq!(&buf, b"0123");
    assert_eq!(shared.pread(&mut buf, 1), Ok(4));
    assert_eq!(&buf, b"1234");
    assert_eq!(shared.read(&mut buf), Ok(2), "pread left the offset alone");
    assert_eq!(&buf[..2], b"89");
    assert_eq!(shared.read(&mut buf), Ok(0));
    assert_eq!(shared.pread(&mut buf, -1), Err(Errno::EINVAL));
}

#[test]
fn append_writes_at_the_end_even_with_pwrite() {
    let (vfs, context) = setup();
    write_file(&vfs, &context, b"/log", b"one ");
    let appender = vfs.open(&context, b"/log", O_WRONLY | O_APPEND, 0).unwrap();
    let other = vfs.open(&context, b"/log", O_WRONLY, 0).unwrap();
    appender.write(b"two ").unwrap();
    other.pwrite(b"ONE", 0).unwrap();
    appender.pwrite(b"three", 0).unwrap();
    assert_eq!(read_file(&vfs, &context, b"/log"), b"ONE two three");
    appender.set_status_flags(O_NONBLOCK | O_RDWR);
    assert_eq!(
        appender.flags(),
        O_WRONLY | O_NONBLOCK,
        "access mode is fixed; append cleared"
    );
    // Without O_APPEND the write goes to the offset, which pwrite left
    // after "two ".
    appender.write(b"!").unwrap();
    assert_eq!(read_file(&vfs, &context, b"/log"), b"ONE two !hree");
    assert_eq!(appender.seek(0, SEEK_CUR), Ok(9));
}

#[test]
fn seek_whence_values_and_errors() {
    let (vfs, context) = setup();
    write_file(&vfs, &context, b"/f", b"0123456789");
    let file = vfs.open(&context, b"/f", O_RDWR, 0).unwrap();
    assert_eq!(file.seek(3, SEEK_SET), Ok(3));
    assert_eq!(file.seek(2, SEEK_CUR), Ok(5));
    assert_eq!(file.seek(-1, SEEK_END), Ok(9));
    assert_eq!(file.seek(5, SEEK_END), Ok(15), "past the end is allowed");
    assert_eq!(file.seek(-1, SEEK_SET), Err(Errno::EINVAL));
    assert_eq!(file.seek(-100, SEEK_CUR), Err(Errno::EINVAL));
    assert_eq!(file.seek(0, 99), Err(Errno::EINVAL));
    assert_eq!(
        file.seek(i64::MAX, SEEK_CUR),
        Err(Errno::EINVAL),
        "overflow"
    );
    assert_eq!(
        file.seek(15, SEEK_CUR),
        Ok(30),
        "the offset is unchanged by failures"
    );
    assert_eq!(file.seek(4, SEEK_DATA), Ok(4));
    assert_eq!(file.seek(4, SEEK_HOLE), Ok(10));
    assert_eq!(file.seek(10, SEEK_DATA), Err(Errno::ENXIO));
    file.seek(12, SEEK_SET).unwrap();
    file.write(b"x").unwrap();
    let mut buf = [0xff; 13];
    assert_eq!(file.pread(&mut buf, 0), Ok(13));
    assert_eq!(&buf[10..], b"\0\0x");
    let dir = vfs.open(&context, b"/", O_RDONLY | O_DIRECTORY, 0).unwrap();
    assert_eq!(dir.seek(0, SEEK_END), Err(Errno::EINVAL));
    assert_eq!(dir.seek(0, SEEK_SET), Ok(0));
}

#[test]
fn fifos_and_stream_devices_do_not_seek() {
    let (vfs, context) = setup();
    let fifo = vfs.mknod(&context, b"/fifo", S_IFIFO | 0o644, 0).unwrap();
    assert_eq!(
        vfs.open(&context, b"/fifo", O_RDONLY, 0).err(),
        Some(Errno::ENXIO)
    );
    let description = OpenFile::new(fifo, O_RDONLY, None);
    assert_eq!(description.seek(0, SEEK_SET), Err(Errno::ESPIPE));
    assert_eq!(description.pread(&mut [0; 1], 0), Err(Errno::ESPIPE));
    struct Tty;
    impl crate::Device for Tty {
        fn read(&self, _: u64, buf: &mut [u8], _: bool) -> Result<usize, Errno> {
            buf[0] = b'k';
            Ok(1)
        }
        fn write(&self, _: u64, buf: &[u8], nonblocking: bool) -> Result<usize, Errno> {
            if nonblocking {
                return Err(Errno::EAGAIN);
            }
            Ok(buf.len())
        }
        fn ioctl(&self, request: u32, _: u64) -> Result<i64, Errno> {
            if request == linux_abi::termios::TCGETS {
                Ok(0)
            } else {
                Err(Errno::EINVAL)
            }
        }
    }
    vfs.devices().register(crate::makedev(4, 1), Arc::new(Tty));
    vfs.mknod(&context, b"/tty1", S_IFCHR | 0o620, crate::makedev(4, 1))
        .unwrap();
    let tty = vfs
        .open(&context, b"/tty1", O_RDWR | O_NONBLOCK, 0)
        .unwrap();
    assert_eq!(tty.seek(0, SEEK_SET), Err(Errno::ESPIPE));
    let mut buf = [0; 4];
    assert_eq!(tty.read(&mut buf), Ok(1));
    assert_eq!(buf[0], b'k');
    assert_eq!(tty.write(b"hi"), Err(Errno::EAGAIN));
    tty.set_status_flags(0);
    assert_eq!(tty.write(b"hi"), Ok(2));
    assert_eq!(tty.ioctl(linux_abi::termios::TCGETS, 0), Ok(0));
    let file = vfs.open(&context, b"/", O_RDONLY, 0).unwrap();
    assert_eq!(
        file.ioctl(linux_abi::termios::TCGETS, 0),
        Err(Errno::ENOTTY)
    );
    vfs.mknod(
        &context,
        b"/nodriver",
        S_IFCHR | 0o600,
        crate::makedev(99, 0),
    )
    .unwrap();
    assert_eq!(
        vfs.open(&context, b"/nodriver", O_RDONLY, 0).err(),
        Some(Errno::ENXIO)
    );
}

#[test]
fn open_creation_flags() {
    let (vfs, context) = setup();
    assert_eq!(
        vfs.open(&context, b"/f", O_RDONLY, 0).err(),
        Some(Errno::ENOENT)
    );
    let made = vfs
        .open(&context, b"/f", O_RDWR | O_CREAT | O_EXCL, 0o666)
        .unwrap();
    assert_eq!(made.metadata().mode, S_IFREG | 0o644, "umask 022 applied");
    made.write(b"data").unwrap();
    assert_eq!(
        vfs.open(&context, b"/f", O_RDWR | O_CREAT | O_EXCL, 0o666)
            .err(),
        Some(Errno::EEXIST)
    );
    let again = vfs.open(&context, b"/f", O_RDWR | O_CREAT, 0o600).unwrap();
    assert_eq!(
        again.metadata().mode,
        S_IFREG | 0o644,
        "O_CREAT on an existing file keeps it"
    );
    assert_eq!(again.metadata().size, 4);
    vfs.open(&context, b"/f", O_WRONLY | O_TRUNC, 0).unwrap();
    assert_eq!(made.metadata().size, 0);
    assert_eq!(
        vfs.open(&context, b"/f", O_RDONLY | O_DIRECTORY, 0).err(),
        Some(Errno::ENOTDIR)
    );
    assert!(vfs.open(&context, b"/", O_RDONLY | O_DIRECTORY, 0).is_ok());
    assert_eq!(
        vfs.open(&context, b"/", O_WRONLY, 0).err(),
        Some(Errno::EISDIR)
    );
    assert_eq!(
        vfs.open(&context, b"/", O_RDONLY | O_CREAT, 0).err(),
        Some(Errno::EISDIR)
    );
    assert_eq!(
        vfs.open(&context, b"/new/", O_RDWR | O_CREAT, 0o644).err(),
        Some(Errno::EISDIR)
    );
    assert_eq!(
        vfs.open(&context, b"/f/", O_RDONLY, 0).err(),
        Some(Errno::ENOTDIR)
    );
    assert_eq!(
        vfs.open(&context, b"/f", O_RDWR | O_ACCMODE, 0).err(),
        Some(Errno::EINVAL)
    );
    let dir = vfs.open(&context, b"/", O_RDONLY, 0).unwrap();
    assert_eq!(dir.read(&mut [0; 4]), Err(Errno::EISDIR));
}

#[test]
fn open_nofollow_and_creating_through_a_dangling_link() {
    let (vfs, context) = setup();
    write_file(&vfs, &context, b"/target", b"t");
    vfs.symlink(&context, b"target", b"/link").unwrap();
    assert_eq!(
        vfs.open(&context, b"/link", O_RDONLY | O_NOFOLLOW, 0).err(),
        Some(Errno::ELOOP)
    );
    assert_eq!(
        vfs.open(&context, b"/link", O_RDONLY | O_CREAT | O_NOFOLLOW, 0)
            .err(),
        Some(Errno::ELOOP)
    );
    assert_eq!(
        vfs.open(&context, b"/link", O_RDONLY | O_CREAT | O_EXCL, 0)
            .err(),
        Some(Errno::EEXIST)
    );
    assert!(vfs.open(&context, b"/link", O_RDONLY, 0).is_ok());
    vfs.mkdir(&context, b"/d", 0o755).unwrap();
    vfs.symlink(&context, b"d/made", b"/dangling").unwrap();
    let made = vfs
        .open(&context, b"/dangling", O_WRONLY | O_CREAT, 0o644)
        .unwrap();
    made.write(b"through").unwrap();
    assert_eq!(read_file(&vfs, &context, b"/d/made"), b"through");
    vfs.symlink(&context, b"/selfloop", b"/selfloop").unwrap();
    assert_eq!(
        vfs.open(&context, b"/selfloop", O_WRONLY | O_CREAT, 0o644)
            .err(),
        Some(Errno::ELOOP)
    );
}

#[test]
fn getdents64_serialises_linux_dirent64_and_resumes_with_a_small_buffer() {
    let (vfs, context) = setup();
    vfs.mkdir(&context, b"/d", 0o755).unwrap();
    let mut expected: Vec<Vec<u8>> = alloc::vec![b".".to_vec(), b"..".to_vec()];
    for index in 0..20 {
        let name = alloc::format!("file-with-a-longer-name-{index:02}").into_bytes();
        let path = [b"/d/".as_slice(), &name].concat();
        write_file(&vfs, &context, &path, b"");
        expected.push(name);
    }
    vfs.mkdir(&context, b"/d/subdir", 0o755).unwrap();
    expected.push(b"subdir".to_vec());
    let dir = vfs
        .open(&context, b"/d", O_RDONLY | O_DIRECTORY, 0)
        .unwrap();
    // Room for two records of the long names at a time.
    let mut buf = [0xaa; 2 * 48 + 10];
    assert_eq!(dirent64_length(b"file-with-a-longer-name-00".len()), 48);
    let mut seen = Vec::new();
    let mut calls = 0;
    loop {
        let filled = dir.getdents64(&mut buf).unwrap();
        if filled == 0 {
            break;
        }
        calls += 1;
        let mut total = 0;
        for record in decode_dirents64(&buf[..filled]) {
            total += dirent64_length(record.name.len());
            seen.push((
                record.name.to_vec(),
                record.dirent_type,
                record.ino,
                record.next_offset,
            ));
        }
        assert_eq!(total, filled, "records are 8-byte aligned and fill exactly");
    }
    let names: Vec<Vec<u8>> = seen.iter().map(|entry| entry.0.clone()).collect();
    assert_eq!(names, expected);
    assert!(
        calls >= 11,
        "the small buffer took several calls, got {calls}"
    );
    assert_eq!(seen[0].1, 4, "DT_DIR");
    assert_eq!(seen[2].1, 8, "DT_REG");
    assert_eq!(seen.last().map(|entry| entry.1), Some(4));
    let offsets: Vec<i64> = seen.iter().map(|entry| entry.3).collect();
    assert!(
        offsets.windows(2).all(|pair| pair[0] < pair[1]),
        "d_off increases"
    );
    assert_eq!(seen[0].2, vfs.stat(&context, b"/d", true).unwrap().ino);
    // Too small for even one record.
    assert_eq!(dir.seek(0, SEEK_SET), Ok(0));
    assert_eq!(dir.getdents64(&mut [0; 23]), Err(Errno::EINVAL));
    assert_eq!(
        dir.getdents64(&mut [0; 24]).map(|filled| filled > 0),
        Ok(true)
    );
    // Seeking to a d_off resumes after that entry.
    dir.seek(seen[5].3, SEEK_SET).unwrap();
    let filled = dir.getdents64(&mut buf).unwrap();
    let first = decode_dirents64(&buf[..filled]).next().unwrap();
    assert_eq!(first.name, &expected[6][..]);
    let file = vfs.open(&context, b"/d/subdir/..", O_RDONLY, 0).unwrap();
    assert!(file.getdents64(&mut buf).is_ok());
    let regular = vfs
        .open(&context, b"/d/file-with-a-longer-name-00", O_RDONLY, 0)
        .unwrap();
    assert_eq!(regular.getdents64(&mut buf), Err(Errno::ENOTDIR));
}

#[test]
fn dirent64_record_layout() {
    let mut buf = [0xee; 32];
    let length = crate::encode_dirent64(&mut buf, 0x1122_3344_5566_7788, 5, 8, b"hello").unwrap();
    assert_eq!(length, 32, "19 + 5 + NUL = 25, aligned to 32");
    assert_eq!(&buf[0..8], &0x1122_3344_5566_7788u64.to_le_bytes());
    assert_eq!(&buf[8..16], &5i64.to_le_bytes());
    assert_eq!(&buf[16..18], &32u16.to_le_bytes());
    assert_eq!(buf[18], 8);
    assert_eq!(&buf[19..24], b"hello");
    assert!(buf[24..].iter().all(|byte| *byte == 0));
    assert_eq!(
        crate::encode_dirent64(&mut buf[..31], 1, 1, 8, b"hello"),
        None
    );
}

#[test]
fn the_null_device_through_a_node() {
    let (vfs, context) = setup();
    vfs.devices().register(NULL_DEV, Arc::new(Null));
    vfs.mknod(&context, b"/null", S_IFCHR | 0o666, NULL_DEV)
        .unwrap();
    let null = vfs.open(&context, b"/null", O_RDWR, 0).unwrap();
    assert_eq!(null.write(b"gone"), Ok(4));
    assert_eq!(null.read(&mut [0; 8]), Ok(0));
    assert_eq!(null.seek(0, SEEK_SET), Ok(0), "memory devices seek");
    assert_eq!(
        vfs.open(&context, b"/null", O_WRONLY | O_TRUNC, 0)
            .map(|_| ()),
        Ok(())
    );
}

#[test]
fn appends_from_many_descriptions_never_overlap() {
    let (vfs, context) = setup();
    write_file(&vfs, &context, b"/log", b"");
    let vfs = Arc::new(vfs);
    let threads: Vec<_> = (0..4u8)
        .map(|thread| {
            let file = vfs.open(&context, b"/log", O_WRONLY | O_APPEND, 0).unwrap();
            std::thread::spawn(move || {
                for _ in 0..500 {
                    assert_eq!(file.write(&[b'a' + thread; 8]), Ok(8));
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let contents = read_file(&vfs, &context, b"/log");
    assert_eq!(contents.len(), 4 * 500 * 8);
    for record in contents.chunks(8) {
        assert!(
            record.iter().all(|byte| *byte == record[0]),
            "a torn append"
        );
    }
}

#[test]
fn poll_finds_a_devices_wait_queue_and_none_elsewhere() {
    use core::sync::atomic::{AtomicU64, Ordering};
    /// Remembers the last thread registered (0: none now).
    struct Queue(AtomicU64);
    impl crate::WaitQueue for Queue {
        fn register(&self, thread: u64) {
            self.0.store(thread, Ordering::Relaxed);
        }
        fn unregister(&self, _thread: u64) {
            self.0.store(0, Ordering::Relaxed);
        }
        fn wake_count(&self) -> u64 {
            0
        }
    }
    /// A device that can block, so has a queue.
    struct Blocking(Queue);
    impl crate::Device for Blocking {
        fn read(&self, _: u64, _: &mut [u8], _: bool) -> Result<usize, Errno> {
            Err(Errno::EAGAIN)
        }
        fn write(&self, _: u64, buf: &[u8], _: bool) -> Result<usize, Errno> {
            Ok(buf.len())
        }
        fn wait_queue(&self) -> Option<&dyn crate::WaitQueue> {
            Some(&self.0)
        }
    }
    let (vfs, context) = setup();
    write_file(&vfs, &context, b"/f", b"abc");
    let regular = vfs.open(&context, b"/f", O_RDONLY, 0).unwrap();
    assert!(
        regular.wait_queue().is_none(),
        "a regular file is always ready"
    );
    let fifo = vfs.mknod(&context, b"/fifo", S_IFIFO | 0o644, 0).unwrap();
    let never_blocks = OpenFile::new(fifo.clone(), O_RDONLY, Some(Arc::new(Null)));
    assert!(
        never_blocks.wait_queue().is_none(),
        "a device's default is none"
    );
    let device = Arc::new(Blocking(Queue(AtomicU64::new(0))));
    let blocking = OpenFile::new(fifo, O_RDONLY, Some(device.clone()));
    let queue = blocking.wait_queue().expect("the device's queue");
    queue.register(7);
    assert_eq!(device.0 .0.load(Ordering::Relaxed), 7);
    queue.unregister(7);
    assert_eq!(device.0 .0.load(Ordering::Relaxed), 0);
}

#[test]
fn o_path_names_a_file_without_opening_it_for_io() {
    let (vfs, context) = setup();
    write_file(&vfs, &context, b"/f", b"data");
    vfs.symlink(&context, b"f", b"/link").unwrap();
    // The access mode and creation flags are ignored, a directory is
    // fine, and with O_NOFOLLOW the link itself is named.
    let file = vfs
        .open(&context, b"/f", O_PATH | O_RDWR | O_TRUNC, 0)
        .unwrap();
    assert!(file.is_path_only());
    assert_eq!(file.read(&mut [0; 4]), Err(Errno::EBADF));
    assert_eq!(file.write(b"x"), Err(Errno::EBADF));
    assert_eq!(file.metadata().size, 4, "O_TRUNC was ignored");
    assert_eq!(file.flags(), O_PATH);
    let directory = vfs.open(&context, b"/", O_PATH | O_DIRECTORY, 0).unwrap();
    assert_eq!(directory.inode().file_type(), FileType::Directory);
    let link = vfs
        .open(&context, b"/link", O_PATH | O_NOFOLLOW, 0)
        .unwrap();
    assert_eq!(link.inode().file_type(), FileType::Symlink);
    assert_eq!(
        vfs.open(&context, b"/f", O_PATH | O_DIRECTORY, 0).err(),
        Some(Errno::ENOTDIR)
    );
    assert_eq!(
        vfs.open(&context, b"/missing", O_PATH | O_CREAT, 0).err(),
        Some(Errno::ENOENT)
    );
}
