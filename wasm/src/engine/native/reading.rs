//! The kernel procedures read-only code calls, without the instance lock
//! (docs/design/0008-native-engine.md, "Read-only code without the
//! lock"): what they reach of the extension, held apart from its
//! instance, and the call the reading trampolines of `entry.rs` make.
//! Safe Rust.
//!
//! Read-only code (`purity::is_read_only`) runs beside the instance's
//! other invocations, on a context of its own, and its function table's
//! imports are the reading trampolines rather than the instance's: they
//! reach a [`ReadingProcedures`] instead of the instance (which a locked
//! invocation may be using), and run only the procedures that change
//! nothing and read only what the extension shares outside its instance
//! (`host::reads_only`: the handle table, with its own lock; the
//! services; linear memory, copied through a view). What they read may
//! change meanwhile; the run's outcome is then thrown away
//! (`extension::Shared::invoke_read_only`), so they never need to see a
//! consistent state, only never an unsafe one.

use alloc::{
    sync::{Arc, Weak},
    vec::Vec,
};

use hal::linear_memory::MemoryView;
use spindle_abi::{FaultKind, Import};

use crate::{
    engine::Trap,
    extension::Shared,
    handles::Handles,
    host::{self, ReadingReach},
    runtime::Services,
};

/// What the kernel procedures that read-only code calls reach of its
/// extension, held for as long as the code can run.
pub(super) struct ReadingProcedures {
    handles: Arc<Handles>,
    services: Arc<Services>,
    memory: MemoryView,
    /// Whether the module exports its memory (procedures read only an
    /// exported one, as under the lock).
    memory_exported: bool,
    /// The extension, for the stack check before a procedure that may run
    /// another extension's code.
    extension: Weak<Shared>,
}

impl ReadingProcedures {
    /// What the procedures reach of an extension whose handle table is
    /// `handles`, services `services`, memory `memory` (exported or not)
    /// and whose runtime side is `extension`.
    pub(super) fn new(
        handles: Arc<Handles>,
        services: Arc<Services>,
        memory: MemoryView,
        memory_exported: bool,
        extension: Weak<Shared>,
    ) -> ReadingProcedures {
        ReadingProcedures {
            handles,
            services,
            memory,
            memory_exported,
            extension,
        }
    }

    /// The extension's linear memory, which the code itself reads.
    pub(super) fn memory(&self) -> &MemoryView {
        &self.memory
    }

    /// Runs kernel procedure `procedure` with `arguments` (each widened
    /// to 64 bits): its raw result, as `Native::host_call` gives it, or
    /// its trap. A procedure that is not one read-only code may call
    /// (`host::reads_only`) is refused with a trap.
    #[inline(always)]
    pub(super) fn call(&self, procedure: Import, arguments: &[u64]) -> Result<u64, Trap> {
        if host::may_reenter(procedure) {
            // No holder to record (no lock is held), but the stack bound
            // holds for nested runs all the same.
            if let Some(extension) = self.extension.upgrade() {
                extension.refuse_short_stack()?;
            }
        }
        host::call_reading(self, procedure, arguments).map(super::instance::raw_result)
    }
}

impl ReadingReach for ReadingProcedures {
    fn handles(&self) -> &Handles {
        &self.handles
    }

    fn services(&self) -> &Services {
        &self.services
    }

    fn read_memory(&self, offset: u32, len: u32) -> Result<Vec<u8>, Trap> {
        let bytes = self
            .memory_exported
            .then(|| self.memory.copy_out(offset as usize, len as usize))
            .flatten();
        bytes.ok_or_else(|| {
            Trap::new(
                FaultKind::BadPointer,
                if self.memory_exported {
                    alloc::format!("{offset:#x}+{len} outside {} bytes", self.memory.len())
                } else {
                    "the extension exports no memory".into()
                },
            )
        })
    }
}
