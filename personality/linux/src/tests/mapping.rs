//! `mapping`: what `mmap` of a descriptor maps, and its refusals.

use vfs::{flags::*, Errno};

use super::*;
use crate::MapSource;

/// What `mmap(fd)` of process [`PID`] would map, or why not.
fn source(fixture: &Fixture, fd: u64, shared: bool, writable: bool) -> Result<&'static str, Errno> {
    fixture
        .personality
        .mapping_source(PID, fd, shared, writable)
        .map(|source| match source {
            MapSource::Zeros => "zeros",
            MapSource::File { writable: true, .. } => "writable file",
            MapSource::File {
                writable: false, ..
            } => "read-only file",
        })
}

#[test]
fn a_descriptor_that_is_not_open_or_a_process_that_is_not_is_refused() {
    let fixture = Fixture::new();
    assert_eq!(source(&fixture, 42, false, false), Err(Errno::EBADF));
    assert_eq!(
        source(&fixture, 0xffff_ffff, false, false),
        Err(Errno::EBADF)
    );
    assert!(matches!(
        fixture.personality.mapping_source(999, 0, false, false),
        Err(Errno::ESRCH)
    ));
}

#[test]
fn access_must_match_the_descriptors_mode() {
    let fixture = Fixture::new();
    fixture.make_file(b"/tmp/data", b"bytes");
    let write_only = fixture.open(b"/tmp/data", O_WRONLY);
    assert_eq!(
        source(&fixture, write_only, false, false),
        Err(Errno::EACCES)
    );
    let read_only = fixture.open(b"/tmp/data", O_RDONLY);
    assert_eq!(source(&fixture, read_only, true, true), Err(Errno::EACCES));
    // A private writable mapping of a read-only file is a copy: fine.
    assert_eq!(
        source(&fixture, read_only, false, true),
        Ok("read-only file")
    );
    assert_eq!(
        source(&fixture, read_only, true, false),
        Ok("read-only file")
    );
    let read_write = fixture.open(b"/tmp/data", O_RDWR);
    assert_eq!(
        source(&fixture, read_write, true, true),
        Ok("writable file")
    );
}

#[test]
fn only_regular_files_and_dev_zero_map() {
    let fixture = Fixture::new();
    let zero = fixture.open(b"/dev/zero", O_RDWR);
    assert_eq!(source(&fixture, zero, true, true), Ok("zeros"));
    let null = fixture.open(b"/dev/null", O_RDWR);
    assert_eq!(source(&fixture, null, false, false), Err(Errno::ENODEV));
    let directory = fixture.open(b"/tmp", O_RDONLY | O_DIRECTORY);
    assert_eq!(
        source(&fixture, directory, false, false),
        Err(Errno::ENODEV)
    );
    assert_eq!(fixture.call(linux_abi::syscall::PIPE, &[at(0)]), 0);
    let read_end = u64::from(peek_u32(at(0)));
    assert_eq!(source(&fixture, read_end, false, false), Err(Errno::ENODEV));
}
