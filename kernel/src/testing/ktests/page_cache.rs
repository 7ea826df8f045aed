//! The page cache (`services/pagecache`, `kernel/src/page_cache.rs`):
//! programs of the boot archive share their file pages between processes
//! and nothing one process writes reaches another.

use alloc::{format, string::String};

use loader::FileBytes;

use super::{ensure, user::run_and_capture, KernelTest, TestResult};
use linux_process::threads::UserExit;

pub const TESTS: &[KernelTest] = &[
    KernelTest {
        name: "programs_share_their_file_pages_through_the_page_cache",
        run: programs_share_their_file_pages,
    },
    KernelTest {
        name: "writes_to_cached_pages_stay_private_to_the_writer",
        run: writes_stay_private,
    },
];

/// Debian's busybox (2 MiB) loaded twice from the boot archive: both
/// address spaces map its entry page to one frame, the second load takes
/// a few frames where the file has hundreds of pages, a copy of the same
/// bytes that is not lent gets frames of its own, and every frame comes
/// back when the images go (the cache's own held aside).
fn programs_share_their_file_pages() -> TestResult {
    let extensions = crate::extensions::get().ok_or("no boot archive")?;
    let files = extensions.archive_files("bin/busybox");
    let &(_, busybox) = files
        .iter()
        .find(|(name, _)| *name == "bin/busybox")
        .ok_or("bin/busybox is not in the boot archive")?;
    let file_pages = busybox.len() / hal::memory::PAGE_SIZE as usize;
    let frames = crate::page_cache::frames_free_or_kept();
    let first = loader::load(crate::page_cache::get(), FileBytes::Lent(busybox), None)
        .map_err(|error| format!("{error}"))?;
    let free_before_second = hal::memory::frame_stats().free;
    let second = loader::load(crate::page_cache::get(), FileBytes::Lent(busybox), None)
        .map_err(|error| format!("{error}"))?;
    let taken = free_before_second - hal::memory::frame_stats().free;
    ensure!(
        taken < file_pages / 10,
        "the second load took {taken} frames for a file of {file_pages} pages"
    );
    let entry = first.layout.entry & !(hal::memory::PAGE_SIZE - 1);
    let (in_first, in_second) = (first.space.translate(entry), second.space.translate(entry));
    let describe =
        |frame: Option<u64>| frame.map_or(String::from("unmapped"), |at| format!("{at:#x}"));
    ensure!(
        in_first.is_some() && in_first == in_second,
        "the entry page {entry:#x} is not one frame in both (first {}, second {})",
        describe(in_first),
        describe(in_second)
    );
    let copied = loader::load(crate::page_cache::get(), FileBytes::Copied(busybox), None)
        .map_err(|error| format!("{error}"))?;
    ensure!(
        copied.space.translate(entry) != in_first,
        "bytes that are not lent were mapped from the cache"
    );
    drop((first, second, copied));
    let after = crate::page_cache::frames_free_or_kept();
    ensure!(
        after >= frames,
        "{} frames were kept after the images went",
        frames - after
    );
    Ok(())
}

/// `user/sharedpages.c`, twice: each run writes its initialized data, a
/// forked child writes it too, and a read-only page is made writable and
/// written; the second run still reads the file's bytes, so no write
/// reached the cached frames.
fn writes_stay_private() -> TestResult {
    for run in ["first", "second"] {
        let (end, output) = run_and_capture("sharedpages", &[])?;
        ensure!(
            end == UserExit::Exited(0) && output.contains("sharedpages: ok"),
            "the {run} run of sharedpages {end}, printing:\n{output}"
        );
    }
    Ok(())
}
