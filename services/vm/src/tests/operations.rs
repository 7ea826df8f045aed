//! Each operation's argument checks and error paths, with Linux's errno
//! for each [`VmError`] in the test's name (the kernel's `vm_errno`:
//! `BadRange` is `EINVAL`, `NoMemory` `ENOMEM`, `BelowMinimum` `EPERM`,
//! `NotWritable` `EACCES`).

use alloc::{sync::Arc, vec, vec::Vec};

use hal::paging::{UserProtection, PAGE_SIZE};

use super::{
    fake::{self, FakeTables},
    new_map, pages, touch, Access, Segv, FETCH, PRESENT, WRITE,
};
/// The end of what mappings may cover (Linux's `TASK_SIZE`): the user
/// half less its last page.
const USER_END: u64 = hal::paging::USER_END - PAGE_SIZE;

use crate::{
    AddressMap, AnonymousMemory, PageTables, Remap, SharedSource, VmError, MMAP_CEILING,
    MMAP_FLOOR, MMAP_MIN_ADDRESS,
};

use UserProtection::{None as NoAccess, Read, ReadExecute, ReadWrite};

/// Where the break starts in these tests.
const BREAK: u64 = 0x60_0000;
/// A fixed address with room around it.
const FIXED: u64 = 0x1000_0000_0000;

/// The regions as `(start, end, protection)`.
fn regions(map: &AddressMap<FakeTables>) -> Vec<(u64, u64, UserProtection)> {
    map.regions()
        .map(|region| (region.start, region.end, region.protection))
        .collect()
}

/// A shared source over anonymous shared memory of `pages` pages.
fn shared_memory(pages: u64) -> SharedSource<fake::FakeFrame> {
    SharedSource {
        object: Arc::new(AnonymousMemory::<FakeTables>::new(pages).unwrap()),
        first_page: 0,
        may_write: true,
    }
}

#[test]
fn mmap_places_mappings_in_the_highest_gap_below_the_ceiling() {
    let mut map = new_map(BREAK);
    let first = map.map_anonymous(0, pages(2), ReadWrite, false).unwrap();
    assert_eq!(first, MMAP_CEILING - pages(2));
    // An unaligned length takes whole pages.
    let second = map.map_anonymous(0, PAGE_SIZE + 1, Read, false).unwrap();
    assert_eq!(second, first - pages(2));
    // A hole left by munmap is used again when it is the highest fit.
    map.unmap(first, pages(2)).unwrap();
    assert_eq!(
        map.map_anonymous(0, pages(1), Read, false),
        Ok(first + PAGE_SIZE)
    );
}

#[test]
fn mmap_of_nothing_is_einval() {
    let mut map = new_map(BREAK);
    assert_eq!(map.map_anonymous(0, 0, Read, false), Err(VmError::BadRange));
    assert_eq!(
        map.map_anonymous(FIXED, 0, Read, true),
        Err(VmError::BadRange)
    );
    assert_eq!(map.regions().count(), 0);
}

#[test]
fn mmap_of_more_than_the_user_half_is_enomem() {
    let mut map = new_map(BREAK);
    // Rounding the length up to pages overflows.
    assert_eq!(
        map.map_anonymous(0, u64::MAX, Read, false),
        Err(VmError::NoMemory)
    );
    assert_eq!(
        map.map_anonymous(FIXED, u64::MAX - 5, Read, true),
        Err(VmError::NoMemory)
    );
    // No gap that large.
    assert_eq!(
        map.map_anonymous(0, MMAP_CEILING - MMAP_FLOOR + PAGE_SIZE, Read, false),
        Err(VmError::NoMemory)
    );
    assert_eq!(map.regions().count(), 0);
}

#[test]
fn a_fixed_mmap_beyond_the_user_half_is_enomem() {
    let mut map = new_map(BREAK);
    assert_eq!(
        map.map_anonymous(USER_END - PAGE_SIZE, pages(2), Read, true),
        Err(VmError::NoMemory)
    );
    assert_eq!(
        map.map_anonymous(USER_END, pages(1), Read, true),
        Err(VmError::NoMemory)
    );
    assert_eq!(
        map.map_anonymous(!(PAGE_SIZE - 1), pages(1), Read, true),
        Err(VmError::NoMemory)
    );
    // The last page of the user half is a page like any other.
    assert_eq!(
        map.map_anonymous(USER_END - pages(2), pages(2), Read, true),
        Ok(USER_END - pages(2))
    );
}

#[test]
fn a_fixed_mmap_at_an_unaligned_address_is_einval() {
    let mut map = new_map(BREAK);
    assert_eq!(
        map.map_anonymous(FIXED + 1, pages(1), Read, true),
        Err(VmError::BadRange)
    );
}

#[test]
fn a_fixed_mmap_below_the_lowest_address_allowed_is_eperm() {
    let mut map = new_map(BREAK);
    assert_eq!(
        map.map_anonymous(MMAP_MIN_ADDRESS - PAGE_SIZE, pages(1), Read, true),
        Err(VmError::BelowMinimum)
    );
    assert_eq!(
        map.map_anonymous(0, pages(1), Read, true),
        Err(VmError::BelowMinimum)
    );
    assert_eq!(
        map.map_anonymous(MMAP_MIN_ADDRESS, pages(1), Read, true),
        Ok(MMAP_MIN_ADDRESS)
    );
}

#[test]
fn a_fixed_mmap_replaces_what_was_there() {
    let mut map = new_map(BREAK);
    map.map_anonymous(FIXED, pages(4), ReadWrite, true).unwrap();
    for page in 0..4 {
        touch(&mut map, FIXED + pages(page), Access::Write(page + 1)).unwrap();
    }
    assert_eq!(
        map.map_anonymous(FIXED + pages(1), pages(2), Read, true),
        Ok(FIXED + pages(1))
    );
    assert_eq!(
        regions(&map),
        vec![
            (FIXED, FIXED + pages(1), ReadWrite),
            (FIXED + pages(1), FIXED + pages(3), Read),
            (FIXED + pages(3), FIXED + pages(4), ReadWrite),
        ]
    );
    // The new mapping is demand-zero; the old pages around it keep theirs.
    let read =
        |map: &mut AddressMap<FakeTables>, page| touch(map, FIXED + pages(page), Access::Read);
    assert_eq!(
        (0..4).map(|page| read(&mut map, page)).collect::<Vec<_>>(),
        vec![Ok(1), Ok(0), Ok(0), Ok(4)]
    );
    // The replaced pages' frames were let go.
    assert_eq!(fake::live_frames(), 4);
}

#[test]
fn munmap_checks_its_range_like_linux() {
    let mut map = new_map(BREAK);
    map.map_anonymous(FIXED, pages(2), Read, true).unwrap();
    assert_eq!(map.unmap(FIXED + 1, pages(1)), Err(VmError::BadRange));
    assert_eq!(map.unmap(FIXED, 0), Err(VmError::BadRange));
    assert_eq!(
        map.unmap(USER_END - PAGE_SIZE, pages(2)),
        Err(VmError::BadRange)
    );
    assert_eq!(map.unmap(FIXED, u64::MAX), Err(VmError::BadRange));
    assert_eq!(regions(&map), vec![(FIXED, FIXED + pages(2), Read)]);
    // Unmapping nothing is not an error.
    assert_eq!(map.unmap(FIXED + pages(8), pages(1)), Ok(()));
}

#[test]
fn munmap_of_the_middle_splits_the_region_and_frees_its_pages() {
    let mut map = new_map(BREAK);
    map.map_anonymous(FIXED, pages(3), ReadWrite, true).unwrap();
    for page in 0..3 {
        touch(&mut map, FIXED + pages(page), Access::Write(7)).unwrap();
    }
    // A length that is not a whole number of pages takes the whole page.
    map.unmap(FIXED + pages(1), 1).unwrap();
    assert_eq!(
        regions(&map),
        vec![
            (FIXED, FIXED + pages(1), ReadWrite),
            (FIXED + pages(2), FIXED + pages(3), ReadWrite),
        ]
    );
    assert_eq!(fake::live_frames(), 2);
    assert_eq!(touch(&mut map, FIXED + pages(1), Access::Read), Err(Segv));
}

#[test]
fn mprotect_of_nothing_succeeds_as_on_linux() {
    let mut map = new_map(BREAK);
    assert_eq!(map.protect(FIXED, 0, Read), Ok(()));
}

#[test]
fn mprotect_checks_its_range_like_linux() {
    let mut map = new_map(BREAK);
    map.map_anonymous(FIXED, pages(1), ReadWrite, true).unwrap();
    assert_eq!(
        map.protect(FIXED + 1, pages(1), Read),
        Err(VmError::BadRange)
    );
    // No mapping there: ENOMEM, as for any hole.
    assert_eq!(
        map.protect(USER_END - PAGE_SIZE, pages(2), Read),
        Err(VmError::NoMemory)
    );
    assert_eq!(
        map.protect(FIXED, u64::MAX - 5, Read),
        Err(VmError::NoMemory)
    );
    assert_eq!(regions(&map), vec![(FIXED, FIXED + pages(1), ReadWrite)]);
}

#[test]
fn mprotect_over_a_hole_is_enomem_and_changes_nothing() {
    let mut map = new_map(BREAK);
    map.map_anonymous(FIXED, pages(1), ReadWrite, true).unwrap();
    map.map_anonymous(FIXED + pages(2), pages(1), ReadWrite, true)
        .unwrap();
    touch(&mut map, FIXED, Access::Write(1)).unwrap();
    assert_eq!(map.protect(FIXED, pages(3), Read), Err(VmError::NoMemory));
    assert_eq!(
        map.protect(FIXED + pages(1), pages(1), Read),
        Err(VmError::NoMemory)
    );
    assert_eq!(
        regions(&map),
        vec![
            (FIXED, FIXED + pages(1), ReadWrite),
            (FIXED + pages(2), FIXED + pages(3), ReadWrite),
        ]
    );
    assert_eq!(touch(&mut map, FIXED, Access::Write(2)), Ok(2));
}

#[test]
fn mprotect_takes_effect_and_pages_protected_one_by_one_join_again() {
    let mut map = new_map(BREAK);
    map.map_anonymous(FIXED, pages(4), ReadWrite, true).unwrap();
    for page in 0..4 {
        touch(&mut map, FIXED + pages(page), Access::Write(page)).unwrap();
    }
    for page in 0..4 {
        map.protect(FIXED + pages(page), pages(1), Read).unwrap();
        assert_eq!(
            touch(&mut map, FIXED + pages(page), Access::Write(9)),
            Err(Segv)
        );
        assert_eq!(touch(&mut map, FIXED + pages(page), Access::Read), Ok(page));
    }
    assert_eq!(regions(&map), vec![(FIXED, FIXED + pages(4), Read)]);
    map.protect(FIXED + pages(1), pages(2), NoAccess).unwrap();
    assert_eq!(touch(&mut map, FIXED + pages(1), Access::Read), Err(Segv));
    map.protect(FIXED, pages(4), ReadWrite).unwrap();
    assert_eq!(regions(&map), vec![(FIXED, FIXED + pages(4), ReadWrite)]);
    // PROT_NONE kept the contents.
    assert_eq!(touch(&mut map, FIXED + pages(2), Access::Read), Ok(2));
    assert_eq!(
        touch(&mut map, FIXED + pages(2), Access::Execute),
        Err(Segv)
    );
}

#[test]
fn mprotect_cannot_make_a_read_only_file_mapping_writable() {
    let mut map = new_map(BREAK);
    let frame = fake::file_frame(5).unwrap();
    map.map_pages(
        FIXED,
        pages(1),
        Read,
        true,
        false,
        core::slice::from_ref(&frame),
    )
    .unwrap();
    FakeTables::free_frame(frame);
    assert_eq!(
        map.protect(FIXED, pages(1), ReadWrite),
        Err(VmError::NotWritable)
    );
    assert_eq!(map.protect(FIXED, pages(1), ReadExecute), Ok(()));
    assert_eq!(touch(&mut map, FIXED, Access::Execute), Ok(5));
}

#[test]
fn mremap_shrinks_and_grows_in_place() {
    let mut map = new_map(BREAK);
    map.map_anonymous(FIXED, pages(4), ReadWrite, true).unwrap();
    for page in 0..4 {
        touch(&mut map, FIXED + pages(page), Access::Write(page + 1)).unwrap();
    }
    assert_eq!(
        map.remap(FIXED, pages(4), pages(2), Remap::InPlace),
        Ok(FIXED)
    );
    assert_eq!(regions(&map), vec![(FIXED, FIXED + pages(2), ReadWrite)]);
    assert_eq!(fake::live_frames(), 2);
    assert_eq!(
        map.remap(FIXED, pages(2), pages(5), Remap::InPlace),
        Ok(FIXED)
    );
    assert_eq!(regions(&map), vec![(FIXED, FIXED + pages(5), ReadWrite)]);
    // The part that grew is demand-zero; the rest kept its pages.
    assert_eq!(touch(&mut map, FIXED + pages(1), Access::Read), Ok(2));
    assert_eq!(touch(&mut map, FIXED + pages(3), Access::Read), Ok(0));
}

#[test]
fn mremap_that_cannot_grow_in_place_is_enomem_unless_it_may_move() {
    let mut map = new_map(BREAK);
    map.map_anonymous(FIXED, pages(2), ReadWrite, true).unwrap();
    map.map_anonymous(FIXED + pages(2), pages(1), Read, true)
        .unwrap();
    touch(&mut map, FIXED, Access::Write(3)).unwrap();
    assert_eq!(
        map.remap(FIXED, pages(2), pages(3), Remap::InPlace),
        Err(VmError::NoMemory)
    );
    // Growing a part that does not end where its mapping ends: no.
    assert_eq!(
        map.remap(FIXED, pages(1), pages(2), Remap::InPlace),
        Err(VmError::NoMemory)
    );
    let moved = map
        .remap(FIXED, pages(2), pages(3), Remap::MayMove)
        .unwrap();
    assert_eq!(moved, MMAP_CEILING - pages(3));
    assert_eq!(
        regions(&map),
        vec![
            (FIXED + pages(2), FIXED + pages(3), Read),
            (moved, moved + pages(3), ReadWrite),
        ]
    );
    // The page moved with its contents, and was not copied.
    assert_eq!(touch(&mut map, moved, Access::Read), Ok(3));
    assert_eq!(touch(&mut map, FIXED, Access::Read), Err(Segv));
    assert_eq!(fake::live_frames(), 1);
}

#[test]
fn mremap_to_a_fixed_address_replaces_what_was_there() {
    let mut map = new_map(BREAK);
    let to = FIXED + pages(16);
    map.map_anonymous(FIXED, pages(2), ReadWrite, true).unwrap();
    map.map_anonymous(to, pages(4), Read, true).unwrap();
    touch(&mut map, FIXED + pages(1), Access::Write(4)).unwrap();
    touch(&mut map, to, Access::Read).unwrap();
    assert_eq!(map.remap(FIXED, pages(2), pages(1), Remap::To(to)), Ok(to));
    assert_eq!(
        regions(&map),
        vec![
            (to, to + pages(1), ReadWrite),
            (to + pages(1), to + pages(4), Read)
        ]
    );
    // Only the first page went; the second, not kept, was unmapped.
    assert_eq!(touch(&mut map, to, Access::Read), Ok(0));
    assert_eq!(fake::live_frames(), 1);
}

#[test]
fn mremap_checks_its_arguments() {
    let mut map = new_map(BREAK);
    map.map_anonymous(FIXED, pages(2), ReadWrite, true).unwrap();
    map.map_anonymous(FIXED + pages(2), pages(2), Read, true)
        .unwrap();
    let remap = |map: &mut AddressMap<FakeTables>, start, old, new, placement| {
        map.remap(start, old, new, placement)
    };
    // Unaligned, empty, or not mapped at all.
    assert_eq!(
        remap(&mut map, FIXED + 1, pages(1), pages(1), Remap::MayMove),
        Err(VmError::BadRange)
    );
    assert_eq!(
        remap(&mut map, FIXED, 0, pages(1), Remap::MayMove),
        Err(VmError::BadRange)
    );
    assert_eq!(
        remap(&mut map, FIXED, pages(1), 0, Remap::MayMove),
        Err(VmError::BadRange)
    );
    assert_eq!(
        remap(
            &mut map,
            FIXED + pages(8),
            pages(1),
            pages(2),
            Remap::MayMove
        ),
        Err(VmError::NotOneMapping)
    );
    // The old range spans two mappings, or runs past its mapping's end
    // into unmapped pages.
    assert_eq!(
        remap(&mut map, FIXED, pages(3), pages(4), Remap::MayMove),
        Err(VmError::NotOneMapping)
    );
    assert_eq!(
        remap(
            &mut map,
            FIXED + pages(2),
            pages(3),
            pages(4),
            Remap::MayMove
        ),
        Err(VmError::NotOneMapping)
    );
    // Overlapping old and new ranges.
    assert_eq!(
        remap(
            &mut map,
            FIXED,
            pages(2),
            pages(2),
            Remap::To(FIXED + pages(1))
        ),
        Err(VmError::BadRange)
    );
    assert_eq!(
        remap(&mut map, FIXED, pages(1), pages(1), Remap::To(PAGE_SIZE)),
        Err(VmError::BelowMinimum)
    );
    assert_eq!(
        regions(&map),
        vec![
            (FIXED, FIXED + pages(2), ReadWrite),
            (FIXED + pages(2), FIXED + pages(4), Read)
        ]
    );
}

#[test]
fn brk_moves_within_its_limit_and_answers_the_break() {
    let mut map = new_map(BREAK + 5);
    let start = BREAK + PAGE_SIZE;
    // Zero, below the start, or more than 1 GiB beyond it: unchanged.
    assert_eq!(map.set_break(0), start);
    assert_eq!(map.set_break(start - 1), start);
    assert_eq!(map.set_break(start + (1 << 30) + 1), start);
    assert_eq!(map.regions().count(), 0);
    assert_eq!(map.set_break(start + (1 << 30)), start + (1 << 30));
    assert_eq!(map.set_break(start + 10), start + 10);
    assert_eq!(regions(&map), vec![(start, start + pages(1), ReadWrite)]);
    touch(&mut map, start, Access::Write(1)).unwrap();
    assert_eq!(map.set_break(start + pages(3)), start + pages(3));
    assert_eq!(regions(&map), vec![(start, start + pages(3), ReadWrite)]);
    assert_eq!(
        map.labelled_regions().next().unwrap().1.unwrap().name,
        b"[heap]".to_vec()
    );
    // Shrinking unmaps; growing again gives zeros.
    assert_eq!(map.set_break(start), start);
    assert_eq!(map.regions().count(), 0);
    assert_eq!(fake::live_frames(), 0);
    assert_eq!(map.set_break(start + 1), start + 1);
    assert_eq!(touch(&mut map, start, Access::Read), Ok(0));
}

#[test]
fn brk_does_not_grow_into_another_mapping() {
    let mut map = new_map(BREAK);
    map.map_anonymous(BREAK + pages(2), pages(1), Read, true)
        .unwrap();
    assert_eq!(map.set_break(BREAK + pages(1)), BREAK + pages(1));
    assert_eq!(map.set_break(BREAK + pages(2) + 1), BREAK + pages(1));
    assert_eq!(map.set_break(BREAK + pages(2)), BREAK + pages(2));
}

#[test]
fn fork_shares_private_pages_copy_on_write() {
    let mut parent = new_map(BREAK);
    parent
        .map_anonymous(FIXED, pages(2), ReadWrite, true)
        .unwrap();
    touch(&mut parent, FIXED, Access::Write(1)).unwrap();
    let mut child = parent.fork().unwrap();
    assert_eq!(regions(&child), regions(&parent));
    // Shared, read-only in both, until one writes.
    let frame = parent.space().entry(FIXED).unwrap().frame;
    assert_eq!(child.space().entry(FIXED).unwrap().frame, frame);
    assert_eq!(parent.space().entry(FIXED).unwrap().protection, Read);
    assert_eq!(touch(&mut child, FIXED, Access::Write(2)), Ok(2));
    assert_eq!(touch(&mut parent, FIXED, Access::Read), Ok(1));
    // The parent, the frame's last owner now, writes it in place.
    assert_eq!(touch(&mut parent, FIXED, Access::Write(3)), Ok(3));
    assert_eq!(parent.space().entry(FIXED).unwrap().frame, frame);
    assert_eq!(touch(&mut child, FIXED, Access::Read), Ok(2));
    // A page neither touched is demand-zero in each, separately.
    assert_eq!(touch(&mut child, FIXED + pages(1), Access::Write(4)), Ok(4));
    assert_eq!(touch(&mut parent, FIXED + pages(1), Access::Read), Ok(0));
    drop((parent, child));
    assert_eq!(fake::live_frames(), 0);
}

#[test]
fn fork_shares_shared_memory_without_copying() {
    let mut parent = new_map(BREAK);
    let start = parent
        .map_shared(FIXED, pages(2), ReadWrite, true, shared_memory(2))
        .unwrap();
    touch(&mut parent, start, Access::Write(1)).unwrap();
    let mut child = parent.fork().unwrap();
    assert_eq!(touch(&mut child, start, Access::Write(2)), Ok(2));
    assert_eq!(touch(&mut parent, start, Access::Read), Ok(2));
    // A page the child touches first comes from the object too.
    assert_eq!(touch(&mut child, start + pages(1), Access::Write(3)), Ok(3));
    assert_eq!(touch(&mut parent, start + pages(1), Access::Read), Ok(3));
    drop(parent);
    drop(child);
    assert_eq!(fake::live_frames(), 0);
}

#[test]
fn fork_without_memory_is_enomem() {
    let mut parent = new_map(BREAK);
    parent
        .map_anonymous(FIXED, pages(1), ReadWrite, true)
        .unwrap();
    touch(&mut parent, FIXED, Access::Write(1)).unwrap();
    fake::limit_frames(Some(0));
    assert_eq!(parent.fork().err(), Some(VmError::NoMemory));
}

#[test]
fn faults_the_regions_do_not_allow_are_the_programs() {
    let mut map = new_map(BREAK);
    map.map_anonymous(FIXED, pages(1), ReadWrite, true).unwrap();
    map.map_anonymous(FIXED + pages(1), pages(1), Read, true)
        .unwrap();
    map.map_anonymous(FIXED + pages(2), pages(1), NoAccess, true)
        .unwrap();
    map.map_anonymous(FIXED + pages(3), pages(1), ReadExecute, true)
        .unwrap();
    assert!(!map.resolve_fault(FIXED - 1, 0), "outside every region");
    assert!(!map.resolve_fault(FIXED, FETCH), "executing a data page");
    assert!(
        !map.resolve_fault(FIXED + pages(1), WRITE),
        "writing a read-only page"
    );
    assert!(
        !map.resolve_fault(FIXED + pages(2), 0),
        "reading a PROT_NONE page"
    );
    assert!(!map.resolve_fault(FIXED + pages(3), WRITE), "writing code");
    assert_eq!(map.faults_resolved(), 0);
    assert!(map.resolve_fault(FIXED + pages(3) + 8, FETCH));
    assert_eq!(
        map.space().entry(FIXED + pages(3)).unwrap().protection,
        ReadExecute
    );
    // A stale translation of an allowed access resolves (it is retried).
    assert!(map.resolve_fault(FIXED + pages(3), PRESENT | FETCH));
    assert_eq!(map.faults_resolved(), 2);
}

#[test]
fn a_first_touch_without_memory_is_not_resolved() {
    let mut map = new_map(BREAK);
    map.map_anonymous(FIXED, pages(1), ReadWrite, true).unwrap();
    fake::limit_frames(Some(0));
    assert_eq!(touch(&mut map, FIXED, Access::Read), Err(Segv));
    assert!(map.space().entry(FIXED).is_none());
    fake::limit_frames(None);
    assert_eq!(touch(&mut map, FIXED, Access::Read), Ok(0));
}

#[test]
fn a_copy_on_write_fault_without_memory_is_not_resolved() {
    let mut parent = new_map(BREAK);
    parent
        .map_anonymous(FIXED, pages(1), ReadWrite, true)
        .unwrap();
    touch(&mut parent, FIXED, Access::Write(1)).unwrap();
    let mut child = parent.fork().unwrap();
    fake::limit_frames(Some(0));
    assert_eq!(touch(&mut child, FIXED, Access::Write(2)), Err(Segv));
    assert_eq!(touch(&mut parent, FIXED, Access::Read), Ok(1));
}

#[test]
fn file_pages_are_mapped_at_once_and_copied_on_write() {
    let mut map = new_map(BREAK);
    let cached: Vec<_> = (1..=2)
        .map(|contents| fake::file_frame(contents).unwrap())
        .collect();
    let start = map
        .map_pages(0, pages(3), ReadWrite, false, true, &cached)
        .unwrap();
    // Read-only while the page cache holds them too.
    assert_eq!(map.space().entry(start).unwrap().protection, Read);
    assert_eq!(touch(&mut map, start + pages(1), Access::Read), Ok(2));
    assert_eq!(touch(&mut map, start, Access::Write(9)), Ok(9));
    assert_eq!(
        fake::frame(cached[0].number()).contents,
        1,
        "the cached page was written"
    );
    // The page after the file's is demand-zero.
    assert_eq!(touch(&mut map, start + pages(2), Access::Read), Ok(0));
    for frame in cached {
        FakeTables::free_frame(frame);
    }
}

#[test]
fn a_file_mapping_checks_its_pages_fit_and_leaves_nothing_when_it_fails() {
    let mut map = new_map(BREAK);
    let cached: Vec<_> = (1..=2)
        .map(|contents| fake::file_frame(contents).unwrap())
        .collect();
    assert_eq!(
        map.map_pages(FIXED, pages(1), Read, true, true, &cached),
        Err(VmError::BadRange)
    );
    fake::limit_frames(Some(0));
    assert_eq!(
        map.map_pages(FIXED, pages(2), Read, true, true, &cached),
        Err(VmError::NoMemory)
    );
    assert_eq!(map.regions().count(), 0);
    for frame in cached {
        FakeTables::free_frame(frame);
    }
    assert_eq!(fake::live_frames(), 0);
}

#[test]
fn shared_memory_beyond_its_object_or_without_frames_faults() {
    let mut map = new_map(BREAK);
    // A mapping larger than its object (as of a file that shrank).
    let start = map
        .map_shared(FIXED, pages(2), ReadWrite, true, shared_memory(1))
        .unwrap();
    assert_eq!(touch(&mut map, start + pages(1), Access::Read), Err(Segv));
    fake::limit_frames(Some(0));
    assert_eq!(touch(&mut map, start, Access::Read), Err(Segv));
    fake::limit_frames(None);
    assert_eq!(touch(&mut map, start, Access::Write(1)), Ok(1));
    map.unmap(start, pages(2)).unwrap();
    assert_eq!(
        fake::live_frames(),
        0,
        "the object went with its last mapping"
    );
}

#[test]
fn mincore_and_madvise_need_every_page_in_a_region() {
    let mut map = new_map(BREAK);
    map.map_anonymous(FIXED, pages(3), ReadWrite, true).unwrap();
    touch(&mut map, FIXED + pages(1), Access::Write(5)).unwrap();
    let mut resident = [9u8; 3];
    map.residency(FIXED, pages(3), &mut resident).unwrap();
    assert_eq!(resident, [0, 1, 0]);
    assert_eq!(
        map.residency(FIXED, pages(4), &mut [0; 4]),
        Err(VmError::NoMemory)
    );
    assert_eq!(map.discard(FIXED, pages(4)), Err(VmError::NoMemory));
    assert_eq!(map.sync(FIXED, pages(4)), Err(VmError::NoMemory));
    assert_eq!(touch(&mut map, FIXED + pages(1), Access::Read), Ok(5));
    map.discard(FIXED, pages(3)).unwrap();
    assert_eq!(touch(&mut map, FIXED + pages(1), Access::Read), Ok(0));
}
