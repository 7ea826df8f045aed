use crate::ipc::*;

#[test]
fn semid_ds_has_the_x86_64_layout() {
    let record = SemidDs {
        perm: IpcPerm {
            key: 0x1234,
            uid: 1,
            gid: 2,
            cuid: 3,
            cgid: 4,
            mode: 0o600,
            seq: 7,
        },
        otime: 100,
        ctime: 200,
        nsems: 5,
    }
    .to_bytes();
    assert_eq!(record.len(), 104);
    assert_eq!(&record[0..4], &0x1234i32.to_le_bytes());
    assert_eq!(&record[12..16], &3u32.to_le_bytes(), "cuid");
    assert_eq!(&record[20..24], &0o600u32.to_le_bytes(), "mode");
    assert_eq!(&record[24..26], &7u16.to_le_bytes(), "seq");
    assert_eq!(&record[48..56], &100i64.to_le_bytes(), "sem_otime");
    assert_eq!(&record[64..72], &200i64.to_le_bytes(), "sem_ctime");
    assert_eq!(&record[80..88], &5u64.to_le_bytes(), "sem_nsems");
    assert_eq!(SemidDs::ownership_from_bytes(&record), (1, 2, 0o600));
}

#[test]
fn sembuf_is_three_shorts() {
    let bytes = [2, 0, 0xff, 0xff, 0x00, 0x18];
    assert_eq!(
        Sembuf::from_bytes(&bytes),
        Sembuf {
            number: 2,
            operation: -1,
            flags: SEM_UNDO | IPC_NOWAIT,
        }
    );
}

#[test]
fn sem_commands_and_flags_are_linux_values() {
    assert_eq!((IPC_CREAT, IPC_EXCL, IPC_NOWAIT), (0o1000, 0o2000, 0o4000));
    assert_eq!((GETPID, SETALL, SEM_STAT_ANY), (11, 17, 20));
    assert_eq!(Seminfo::default().to_bytes().len(), 40);
}
