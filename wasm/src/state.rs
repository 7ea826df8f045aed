//! What the kernel keeps for each extension inside its engine instance:
//! identity, handle table, installations, services and limits. Kernel
//! procedures reach it through [`crate::engine::HostContext`].

use alloc::{
    string::String,
    sync::{Arc, Weak},
    vec::Vec,
};

use dispatch::{BindingId, Principal};

use crate::{
    config::Limits, events::EventPort, extension::Shared, handles::Handles, module::ModuleInfo,
    runtime::Services,
};

/// One installation made by (or for) an extension; removed at unload.
pub(crate) struct Installed {
    pub(crate) event: Arc<dyn EventPort>,
    pub(crate) binding: BindingId,
    /// The handler and guard it was made from, to give it the faster code
    /// of a later tier ([`crate::extension::Shared::refresh_installations`]).
    pub(crate) handler: crate::events::WasmHandler,
    pub(crate) guard: Option<crate::events::WasmGuard>,
}

/// The kernel-side state of one extension.
pub struct ExtensionState {
    pub(crate) name: String,
    pub(crate) principal: Principal,
    /// Shared with read-only code, which reads it without the instance
    /// (`host::ReadingReach`; the table has its own lock).
    pub(crate) handles: Arc<Handles>,
    pub(crate) installed: Vec<Installed>,
    pub(crate) services: Arc<Services>,
    pub(crate) limits: Limits,
    pub(crate) module: Arc<ModuleInfo>,
    /// Whether each imported function resolved to a pure procedure.
    pub(crate) pure_imports: Vec<bool>,
    pub(crate) extension: Weak<Shared>,
}

impl ExtensionState {
    /// Before a kernel procedure that may run an extension's code (the
    /// caller runs under the instance lock; see `host::may_reenter`):
    /// records the running strand as the instance's holder, and refuses
    /// the call when too little stack is left for it
    /// (`Shared::before_reentry`).
    pub(crate) fn before_reentry(&self) -> Result<(), crate::engine::Trap> {
        match self.extension.upgrade() {
            Some(extension) => extension.before_reentry(),
            None => Ok(()),
        }
    }

    /// Removes every installation (the installer's right; the kernel's if
    /// an authorizer refuses the installer). Returns how many could not be
    /// removed.
    pub(crate) fn remove_installations(&mut self) -> usize {
        let mut failed = 0;
        for installed in self.installed.drain(..) {
            let removed = installed
                .event
                .remove(self.principal, installed.binding)
                .or_else(|_| installed.event.remove(Principal::KERNEL, installed.binding));
            if removed.is_err() {
                failed += 1;
            }
        }
        failed
    }
}

impl Drop for ExtensionState {
    /// Whatever path drops an extension, its handlers leave the events.
    fn drop(&mut self) {
        self.remove_installations();
        self.handles.clear();
    }
}
