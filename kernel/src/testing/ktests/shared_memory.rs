//! Shared memory (`MAP_SHARED`): anonymous memory shared with children,
//! files' shared pages (`services/file-mappings`).

use super::{ensure, user::run_and_capture, KernelTest, TestResult};
use linux_process::threads::UserExit;

pub const TESTS: &[KernelTest] = &[KernelTest {
    name: "shared_mappings_are_shared_with_children_and_reach_their_files",
    run: shared_mappings,
}];

/// `user/sharedmem.c` (anonymous shared memory through fork, mprotect
/// and mremap; `/dev/zero`; a file's shared mappings, `msync`, write-back
/// at the last unmapping and at exit, `EACCES` for read-only files), run
/// twice: the second run's frames all come back.
fn shared_mappings() -> TestResult {
    let (end, output) = run_and_capture("sharedmem", &[])?;
    ensure!(
        end == UserExit::Exited(0) && output.contains("sharedmem: ok"),
        "sharedmem {end}, printing:\n{output}"
    );
    let frames = crate::page_cache::frames_free_or_cached();
    let (end, output) = run_and_capture("sharedmem", &[])?;
    ensure!(
        end == UserExit::Exited(0) && output.contains("sharedmem: ok"),
        "sharedmem's second run {end}, printing:\n{output}"
    );
    let after = crate::page_cache::frames_free_or_cached();
    ensure!(
        after >= frames,
        "shared memory kept {} frames",
        frames - after
    );
    Ok(())
}
