//! `fdtable`: descriptor numbers, their limit, and `fork`.

use alloc::collections::BTreeMap;

use linux_abi::syscall::*;
use proptest::prelude::*;
use vfs::{flags::*, Errno};

use super::*;
use crate::{process_principal, FdTable, MAX_DESCRIPTORS};

/// An open file of `/dev/null`, to fill tables with.
fn null_file(fixture: &Fixture) -> Arc<vfs::OpenFile> {
    fixture
        .personality
        .vfs()
        .open(&fixture.root(), b"/dev/null", O_RDWR, 0)
        .expect("/dev/null")
}

#[test]
fn a_process_holds_at_most_max_descriptors() {
    let fixture = Fixture::new();
    for expected in 3..MAX_DESCRIPTORS {
        assert_eq!(fixture.call(DUP, &[0]), i64::from(expected));
    }
    assert_eq!(fixture.call(DUP, &[0]), err(Errno::EMFILE));
    let name = put_string(0, b"/dev/null");
    assert_eq!(fixture.call(OPEN, &[name, 0]), err(Errno::EMFILE));
    assert_eq!(fixture.call(PIPE, &[at(64)]), err(Errno::EMFILE));
    // One closed, one fits again: the lowest free number.
    assert_eq!(fixture.call(CLOSE, &[500]), 0);
    assert_eq!(fixture.call(DUP, &[0]), 500);
}

#[test]
fn numbers_outside_the_table_are_ebadf() {
    let fixture = Fixture::new();
    let table = FdTable::new(process_principal(99));
    let file = null_file(&fixture);
    assert_eq!(table.get(-1).err(), Some(Errno::EBADF));
    assert_eq!(
        table.get(i64::from(MAX_DESCRIPTORS)).err(),
        Some(Errno::EBADF)
    );
    assert_eq!(table.get(i64::MAX).err(), Some(Errno::EBADF));
    assert_eq!(
        table.install_at(file.clone(), i64::from(MAX_DESCRIPTORS), false),
        Err(Errno::EBADF)
    );
    assert_eq!(table.install_at(file.clone(), -3, false), Err(Errno::EBADF));
    assert_eq!(table.close(0).err(), Some(Errno::EBADF));
    assert_eq!(table.close_on_exec(0), Err(Errno::EBADF));
    assert_eq!(table.set_close_on_exec(0, true), Err(Errno::EBADF));
    // The int is the low 32 bits: 1 << 32 is descriptor 0.
    assert_eq!(table.install(file, 0, true), Ok(0));
    assert_eq!(table.close_on_exec(1 << 32), Ok(true));
}

#[test]
fn a_fork_shares_the_open_files_and_keeps_close_on_exec() {
    let fixture = Fixture::new();
    let table = FdTable::new(process_principal(99));
    let file = null_file(&fixture);
    assert_eq!(table.install(file.clone(), 0, false), Ok(0));
    assert_eq!(table.install_at(file.clone(), 7, true), Ok(7));
    let child = table.fork(process_principal(100));
    assert_eq!(child.descriptors(), [0, 7]);
    assert_eq!(child.close_on_exec(7), Ok(true));
    assert!(Arc::ptr_eq(&child.get(7).expect("open"), &file));
    // Closing in the child leaves the parent's.
    assert!(child.close(0).is_ok());
    assert_eq!(table.descriptors(), [0, 7]);
    table.clear();
    assert!(table.descriptors().is_empty());
    assert_eq!(child.descriptors(), [7]);
}

/// One operation on a table, for the model test.
#[derive(Clone, Debug)]
enum Operation {
    Install { lowest: i32 },
    InstallAt { fd: i64 },
    Close { fd: i64 },
}

fn operation() -> impl Strategy<Value = Operation> {
    prop_oneof![
        (-2i32..40).prop_map(|lowest| Operation::Install { lowest }),
        (-2i64..40).prop_map(|fd| Operation::InstallAt { fd }),
        (-2i64..40).prop_map(|fd| Operation::Close { fd }),
    ]
}

proptest! {
    /// The table agrees with a plain map of numbers: a new descriptor
    /// is the lowest free one at or above the floor, `dup2`'s target is
    /// taken as given, and a number not open is `EBADF`.
    #[test]
    fn the_table_behaves_as_a_map_of_lowest_free_numbers(
        operations in proptest::collection::vec(operation(), 1..80),
    ) {
        let fixture = Fixture::new();
        let file = null_file(&fixture);
        let table = FdTable::new(process_principal(99));
        let mut model: BTreeMap<i64, ()> = BTreeMap::new();
        for operation in operations {
            match operation {
                Operation::Install { lowest } => {
                    let expected = (i64::from(lowest.max(0))..)
                        .find(|fd| !model.contains_key(fd))
                        .expect("a free number");
                    prop_assert_eq!(table.install(file.clone(), lowest, false), Ok(expected as i32));
                    model.insert(expected, ());
                }
                Operation::InstallAt { fd } => {
                    if fd < 0 {
                        prop_assert_eq!(table.install_at(file.clone(), fd, false), Err(Errno::EBADF));
                    } else {
                        prop_assert_eq!(table.install_at(file.clone(), fd, false), Ok(fd as i32));
                        model.insert(fd, ());
                    }
                }
                Operation::Close { fd } => {
                    let expected = if model.remove(&fd).is_some() { Ok(()) } else { Err(Errno::EBADF) };
                    prop_assert_eq!(table.close(fd).map(drop), expected);
                }
            }
            let open: Vec<i32> = model.keys().map(|&fd| fd as i32).collect();
            prop_assert_eq!(table.descriptors(), open);
        }
    }
}
