//! Frame allocator, heap, and kernel page tables.

use alloc::{boxed::Box, collections::BTreeSet, vec, vec::Vec};

use hal::memory::{self, MapError, Protection, GENERAL_BASE, PAGE_SIZE};

use super::{ensure, KernelTest, TestResult};

pub const TESTS: &[KernelTest] = &[
    KernelTest {
        name: "frames_are_distinct_and_returned",
        run: frames_are_distinct_and_returned,
    },
    KernelTest {
        name: "a_freed_frame_is_handed_out_again",
        run: a_freed_frame_is_handed_out_again,
    },
    KernelTest {
        name: "heap_allocates_grows_and_frees",
        run: heap_allocates_grows_and_frees,
    },
    KernelTest {
        name: "map_write_translate_unmap",
        run: map_write_translate_unmap,
    },
    KernelTest {
        name: "map_rejects_bad_requests",
        run: map_rejects_bad_requests,
    },
    KernelTest {
        name: "protect_changes_permissions",
        run: protect_changes_permissions,
    },
    KernelTest {
        name: "map_range_is_all_or_nothing",
        run: map_range_is_all_or_nothing,
    },
    KernelTest {
        name: "boot_stack_has_an_unmapped_guard_page",
        run: boot_stack_has_an_unmapped_guard_page,
    },
];

fn frames_are_distinct_and_returned() -> TestResult {
    let before = memory::frame_stats();
    ensure!(before.total > 1000, "only {} frames managed", before.total);
    let mut frames = BTreeSet::new();
    let mut held = Vec::new();
    for _ in 0..256 {
        let frame = memory::allocate_frame().ok_or("out of frames")?;
        let address = frame.address();
        ensure!(address % PAGE_SIZE == 0, "frame {address:#x} not aligned");
        ensure!(
            frames.insert(address),
            "frame {address:#x} handed out twice"
        );
        held.push(frame);
    }
    ensure!(
        memory::frame_stats().free == before.free - 256,
        "free count did not drop by 256"
    );
    for frame in held {
        memory::free_frame(frame);
    }
    ensure!(memory::frame_stats() == before, "frames not all returned");
    Ok(())
}

/// A frame given back is free again (and `free_frame` consuming the
/// `Frame` makes a double free, or freeing a frame never handed out, a
/// compile error; the bitmap's own refusal is tested on the host).
fn a_freed_frame_is_handed_out_again() -> TestResult {
    let before = memory::frame_stats().free;
    let frame = memory::allocate_frame().ok_or("out of frames")?;
    ensure!(
        memory::frame_stats().free == before - 1,
        "allocating did not take a frame"
    );
    memory::free_frame(frame);
    ensure!(
        memory::frame_stats().free == before,
        "freeing did not give the frame back"
    );
    Ok(())
}

fn heap_allocates_grows_and_frees() -> TestResult {
    // Other threads (the clock raising `Timer.Tick`) allocate too; with
    // interrupts off none runs between the two readings, so the comparison
    // sees this test's allocations only. The heap lock disables interrupts
    // itself, so no thread can be holding it while preempted.
    hal::cpu::without_interrupts(heap_round_trip)
}

fn heap_round_trip() -> TestResult {
    let before = hal::heap::stats();
    let boxed = Box::new(0x5a5a_u64);
    ensure!(*boxed == 0x5a5a, "box lost its value");
    // 8 MiB forces the heap to map more pages. `black_box`: LLVM may elide
    // an allocation whose contents it can see through, and did here.
    let mut big = core::hint::black_box(vec![0u8; 8 << 20]);
    big[0] = 1;
    big[(8 << 20) - 1] = 2;
    ensure!(
        big[0] + big[(8 << 20) - 1] == 3,
        "large allocation corrupted"
    );
    // The heap must have grown to hold the 8 MiB unless it already had
    // that much free.
    let during = hal::heap::stats();
    ensure!(
        during.mapped_bytes >= 8 << 20,
        "an 8 MiB allocation lives in a heap of {} mapped bytes",
        during.mapped_bytes
    );
    ensure!(
        before.available_bytes >= 8 << 20 || during.mapped_bytes > before.mapped_bytes,
        "the heap had {} bytes free and did not grow for 8 MiB",
        before.available_bytes
    );
    let many: Vec<Box<u32>> = (0..10_000).map(Box::new).collect();
    ensure!(
        many.iter().enumerate().all(|(i, b)| **b == i as u32),
        "small allocations corrupted"
    );
    drop((boxed, big, many));
    let after = hal::heap::stats();
    ensure!(
        after.allocated_bytes == before.allocated_bytes,
        "heap leaked: {} bytes before, {} after",
        before.allocated_bytes,
        after.allocated_bytes
    );
    Ok(())
}

fn map_write_translate_unmap() -> TestResult {
    let page = GENERAL_BASE + 0x10_0000;
    // The first mapping in this area also allocates page-table frames, which
    // stay; count frames across a second mapping only.
    memory::map(page, Protection::ReadWrite).map_err(|e| alloc::format!("{e:?}"))?;
    memory::unmap(page).map_err(|e| alloc::format!("{e:?}"))?;
    let frames_before = memory::frame_stats().free;
    let frame = memory::map(page, Protection::ReadWrite).map_err(|e| alloc::format!("{e:?}"))?;
    ensure!(
        memory::translate(page) == Some(frame),
        "translate disagrees with map"
    );
    ensure!(
        memory::translate(page + 0x123) == Some(frame + 0x123),
        "translate ignores the offset"
    );
    ensure!(
        memory::load_unchecked(page) == Ok(0),
        "fresh page not zeroed"
    );
    memory::store_unchecked(page + 8, 0xfeed_f00d).map_err(|e| alloc::format!("{e:?}"))?;
    ensure!(
        memory::load_unchecked(page + 8) == Ok(0xfeed_f00d),
        "store not visible"
    );
    memory::unmap(page).map_err(|e| alloc::format!("{e:?}"))?;
    ensure!(
        memory::translate(page).is_none(),
        "page still mapped after unmap"
    );
    ensure!(
        memory::frame_stats().free == frames_before,
        "unmap did not free the frame"
    );
    Ok(())
}

fn map_rejects_bad_requests() -> TestResult {
    let page = GENERAL_BASE + 0x20_0000;
    ensure!(
        memory::map(page + 1, Protection::ReadWrite) == Err(MapError::Unaligned(page + 1)),
        "unaligned map accepted"
    );
    ensure!(
        matches!(
            memory::map(0x1000, Protection::ReadWrite),
            Err(MapError::OutsideRegion(_))
        ),
        "map outside the general region accepted"
    );
    memory::map(page, Protection::ReadWrite).map_err(|e| alloc::format!("{e:?}"))?;
    ensure!(
        memory::map(page, Protection::ReadWrite) == Err(MapError::AlreadyMapped(page)),
        "double map accepted"
    );
    memory::unmap(page).map_err(|e| alloc::format!("{e:?}"))?;
    ensure!(
        memory::unmap(page) == Err(MapError::NotMapped(page)),
        "double unmap accepted"
    );
    ensure!(
        memory::protect(page, Protection::ReadOnly) == Err(MapError::NotMapped(page)),
        "protect of an unmapped page accepted"
    );
    Ok(())
}

fn protect_changes_permissions() -> TestResult {
    let page = GENERAL_BASE + 0x30_0000;
    memory::map(page, Protection::ReadWrite).map_err(|e| alloc::format!("{e:?}"))?;
    ensure!(
        memory::protection_of(page) == Some(Protection::ReadWrite),
        "not read-write"
    );
    memory::protect(page, Protection::ReadOnly).map_err(|e| alloc::format!("{e:?}"))?;
    ensure!(
        memory::protection_of(page) == Some(Protection::ReadOnly),
        "not read-only"
    );
    ensure!(
        memory::load_unchecked(page) == Ok(0),
        "read-only page unreadable"
    );
    memory::protect(page, Protection::ReadWrite).map_err(|e| alloc::format!("{e:?}"))?;
    memory::store_unchecked(page, 7).map_err(|e| alloc::format!("{e:?}"))?;
    ensure!(
        memory::load_unchecked(page) == Ok(7),
        "write after unprotect lost"
    );
    memory::unmap(page).map_err(|e| alloc::format!("{e:?}"))?;
    Ok(())
}

/// A range that cannot be mapped whole is not mapped at all: the pages
/// mapped before the failure are unmapped and their frames freed (the heap
/// grows this way; a partial mapping left behind made every later growth
/// fail on its first page).
fn map_range_is_all_or_nothing() -> TestResult {
    let base = GENERAL_BASE + 0x60_0000;
    let blocker = base + 2 * PAGE_SIZE;
    memory::map(blocker, Protection::ReadWrite).map_err(|e| alloc::format!("{e:?}"))?;
    let frames_before = memory::frame_stats().free;
    let result = memory::map_range(base, 4, Protection::ReadWrite);
    let frames_after = memory::frame_stats().free;
    let first_two_unmapped =
        memory::translate(base).is_none() && memory::translate(base + PAGE_SIZE).is_none();
    let blocker_kept = memory::translate(blocker).is_some();
    memory::unmap(blocker).map_err(|e| alloc::format!("{e:?}"))?;
    ensure!(
        result == Err(MapError::AlreadyMapped(blocker)),
        "mapping over a mapped page gave {result:?}"
    );
    ensure!(
        first_two_unmapped,
        "the pages before the failure stayed mapped"
    );
    ensure!(
        blocker_kept,
        "the page that was already mapped was unmapped"
    );
    ensure!(
        frames_after == frames_before,
        "{} frames were not given back",
        frames_before - frames_after
    );
    memory::map_range(base, 4, Protection::ReadWrite).map_err(|e| alloc::format!("{e:?}"))?;
    for index in 0..4 {
        memory::unmap(base + index * PAGE_SIZE).map_err(|e| alloc::format!("{e:?}"))?;
    }
    Ok(())
}

/// The page below the boot stack is not mapped (the scenario
/// `boot_stack_overflow_is_a_reported_double_fault` shows an overflow
/// landing there), while the stack itself is.
fn boot_stack_has_an_unmapped_guard_page() -> TestResult {
    let guard = memory::boot_stack_guard();
    ensure!(
        guard.is_multiple_of(PAGE_SIZE),
        "guard {guard:#x} not page aligned"
    );
    ensure!(
        memory::translate(guard).is_none(),
        "the boot stack's guard page {guard:#x} is mapped"
    );
    ensure!(
        memory::translate(guard + PAGE_SIZE).is_some(),
        "the boot stack above its guard page is not mapped"
    );
    Ok(())
}
