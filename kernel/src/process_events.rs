//! What the kernel does with the process table's news
//! ([`process::ProcessObserver`]): the table (`services/process`) knows no
//! personality, so the composition root forwards a process's making and
//! ending to the Linux personality, the interval timers and the tracer,
//! and a child's stop or end to signal delivery (`SIGCHLD`). The same
//! type is the Linux process family's [`linux_process::KernelHooks`].

use process::{End, ProcessObserver};

/// The kernel's [`ProcessObserver`], installed at boot.
pub struct KernelProcessEvents;

impl ProcessObserver for KernelProcessEvents {
    fn created(&self, pid: u64, parent: u64) {
        crate::linux::process_created(pid, parent);
    }

    fn thread_ended(&self, strand: u64, pid: u64, tid: Option<u64>) {
        crate::linux::strand_ended(strand);
        // Its own signal state (mask, signals sent to it alone) goes with it.
        if let (Some(tid), Some(personality)) = (tid, crate::linux::personality()) {
            personality.thread_ended(pid, tid);
        }
    }

    fn process_group(&self, pid: u64) -> Option<u64> {
        crate::linux::personality().and_then(|personality| personality.process_group(pid))
    }

    fn ended(&self, pid: u64) {
        crate::linux::process_ended(pid);
        linux_process::itimer::process_ended(pid);
        crate::tracing::process_ended(pid);
    }

    fn child_ended(&self, parent: u64, child: u64, end: End) {
        linux_process::signals::child_ended(parent, child, end);
    }

    fn child_stopped(&self, parent: u64, child: u64, code: i32, signal: u8) {
        linux_process::signals::child_stopped(parent, child, code, signal);
    }

    fn interrupted(&self) -> bool {
        linux_process::signals::interrupted()
    }

    fn bad_address(&self, strand: u64, address: u64, error_code: u64) -> bool {
        crate::translation::raise_bad_address(strand, address, error_code)
    }
}

impl linux_process::KernelHooks for KernelProcessEvents {
    fn program_replaced(&self, pid: u64) {
        crate::appel_li::forget(pid);
    }
}
