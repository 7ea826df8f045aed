//! Import resolution: an extension's imports are its unresolved symbols,
//! resolved only against the domains it is allowed to import (SPIN's
//! in-kernel linker and nameserver, design.md "The mapping").
//!
//! A Wasm import `module.name` names symbol `name` of the domain exported
//! under the global name `module`. The kernel's own interface is the domain
//! [`KERNEL_MODULE`] (`"spindle"`), whose symbols are the procedures of
//! `spindle_abi::IMPORTS`. An [`ImportResolver`] decides, per import, which
//! procedure it becomes; [`KernelInterface`] is the resolver for the kernel
//! domain, consulting an optional [`ImportAuthorizer`] on every import (the
//! domain's authorizer). The resolved import's type must equal the
//! symbol's: a mismatch is a link error, never a call with wrong types.

use alloc::{format, string::String, sync::Arc, vec::Vec};

use dispatch::Principal;
use spindle_abi::{Import, KERNEL_MODULE};

use crate::{
    error::LinkError,
    module::{FuncType, ModuleInfo},
};

/// Who is importing.
#[derive(Clone, Copy, Debug)]
pub struct Importer<'a> {
    /// The extension's name.
    pub name: &'a str,
    /// Its principal.
    pub principal: Principal,
}

/// Decides whether an importer may import from a domain.
pub trait ImportAuthorizer: Send + Sync {
    /// Allows or refuses (with a reason) the import of `module.symbol`.
    fn authorize(&self, importer: &Importer<'_>, module: &str, symbol: &str) -> Result<(), String>;
}

/// Resolves one import to a kernel procedure.
pub trait ImportResolver: Send + Sync {
    /// The procedure `module.name` resolves to for `importer`.
    fn resolve(
        &self,
        importer: &Importer<'_>,
        module: &str,
        name: &str,
    ) -> Result<Import, LinkError>;
}

/// The kernel's interface domain, [`KERNEL_MODULE`].
#[derive(Clone, Default)]
pub struct KernelInterface {
    authorizer: Option<Arc<dyn ImportAuthorizer>>,
}

impl KernelInterface {
    /// Everyone may import every procedure.
    pub fn new() -> Self {
        KernelInterface::default()
    }

    /// Every import is submitted to `authorizer`.
    pub fn with_authorizer(authorizer: Arc<dyn ImportAuthorizer>) -> Self {
        KernelInterface {
            authorizer: Some(authorizer),
        }
    }
}

impl ImportResolver for KernelInterface {
    fn resolve(
        &self,
        importer: &Importer<'_>,
        module: &str,
        name: &str,
    ) -> Result<Import, LinkError> {
        let import = || format!("{module}.{name}");
        if module != KERNEL_MODULE {
            return Err(LinkError::Unresolved { import: import() });
        }
        let procedure =
            Import::find(module, name).ok_or_else(|| LinkError::Unresolved { import: import() })?;
        if let Some(authorizer) = &self.authorizer {
            authorizer
                .authorize(importer, module, name)
                .map_err(|reason| LinkError::Denied {
                    import: import(),
                    reason,
                })?;
        }
        Ok(procedure)
    }
}

/// Resolves every import of `info`, in order, and checks types.
pub fn resolve_imports(
    resolver: &dyn ImportResolver,
    importer: &Importer<'_>,
    info: &ModuleInfo,
) -> Result<Vec<Import>, LinkError> {
    let mut resolved = Vec::with_capacity(info.imports.len());
    for entry in &info.imports {
        let name = || format!("{}.{}", entry.module, entry.name);
        let Some(found) = &entry.func_type else {
            return Err(LinkError::NotAFunction { import: name() });
        };
        let procedure = resolver.resolve(importer, &entry.module, &entry.name)?;
        let spec = procedure.spec();
        let expected = FuncType {
            params: spec.params.iter().map(|&t| t.into()).collect(),
            results: spec.result.into_iter().map(Into::into).collect(),
        };
        if *found != expected {
            return Err(LinkError::Type {
                import: name(),
                expected: format!("{expected}"),
                found: format!("{found}"),
            });
        }
        resolved.push(procedure);
    }
    Ok(resolved)
}
