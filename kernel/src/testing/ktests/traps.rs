//! Exceptions: reported, and survived when they happen in an ordinary thread.

use hal::memory::{self, Protection, GENERAL_BASE};
use sched::{ExitReason, Fault};

use super::{ensure, KernelTest, TestResult};

pub const TESTS: &[KernelTest] = &[
    KernelTest {
        name: "breakpoint_is_reported_and_resumes",
        run: breakpoint_is_reported_and_resumes,
    },
    KernelTest {
        name: "page_fault_on_unmapped_page_stops_thread",
        run: page_fault_on_unmapped_page_stops_thread,
    },
    KernelTest {
        name: "write_to_read_only_page_faults",
        run: write_to_read_only_page_faults,
    },
];

/// Page-fault error code bits (Intel SDM vol. 3, 4.7).
const PAGE_FAULT_PRESENT: u64 = 1 << 0;
const PAGE_FAULT_WRITE: u64 = 1 << 1;

fn breakpoint_is_reported_and_resumes() -> TestResult {
    let before = crate::exceptions::breakpoints_handled();
    hal::trap::breakpoint();
    // Reaching this line proves execution resumed after `int3`; the count
    // proves the handler saw it (an `int3` that did nothing would pass the
    // first check alone).
    let after = crate::exceptions::breakpoints_handled();
    ensure!(
        after == before + 1,
        "the exception handler saw {} breakpoints, expected 1",
        after - before
    );
    Ok(())
}

fn run_faulting_thread(address: u64) -> Result<ExitReason, String> {
    let handle = sched::spawn("faulter", move || {
        let _ = memory::store_unchecked(address, 0xbad);
    })
    .map_err(|error| alloc::format!("{error:?}"))?;
    Ok(handle.join())
}

use alloc::string::String;

fn page_fault_on_unmapped_page_stops_thread() -> TestResult {
    let address = GENERAL_BASE + 0x4000_0000;
    ensure!(
        memory::translate(address).is_none(),
        "test page unexpectedly mapped"
    );
    let reason = run_faulting_thread(address)?;
    match reason {
        ExitReason::Faulted(Fault {
            vector: 14,
            fault_address,
            error_code,
            ..
        }) => {
            ensure!(
                fault_address == address,
                "CR2 {fault_address:#x}, expected {address:#x}"
            );
            ensure!(
                error_code & PAGE_FAULT_PRESENT == 0,
                "fault claims the page was present"
            );
            ensure!(
                error_code & PAGE_FAULT_WRITE != 0,
                "fault not reported as a write"
            );
            Ok(())
        }
        other => Err(alloc::format!(
            "thread ended with {other:?}, expected a page fault"
        )),
    }
}

fn write_to_read_only_page_faults() -> TestResult {
    let page = GENERAL_BASE + 0x50_0000;
    memory::map(page, Protection::ReadOnly).map_err(|e| alloc::format!("{e:?}"))?;
    let reason = run_faulting_thread(page + 16)?;
    memory::unmap(page).map_err(|e| alloc::format!("{e:?}"))?;
    match reason {
        ExitReason::Faulted(Fault {
            vector: 14,
            fault_address,
            error_code,
            ..
        }) => {
            ensure!(fault_address == page + 16, "CR2 {fault_address:#x}");
            ensure!(
                error_code & (PAGE_FAULT_PRESENT | PAGE_FAULT_WRITE)
                    == PAGE_FAULT_PRESENT | PAGE_FAULT_WRITE,
                "error code {error_code:#x} is not a protection violation on write"
            );
            Ok(())
        }
        other => Err(alloc::format!(
            "thread ended with {other:?}, expected a page fault"
        )),
    }
}
