//! Linking through the `domain` crate: the kernel interface as a domain in
//! the nameserver, an extension's own domain, and an [`ImportResolver`]
//! that resolves imports only against domains the nameserver lets the
//! extension import (the exporter's authorizer is consulted on every
//! import).
//!
//! A Wasm import `module.name` asks the nameserver for the domain exported
//! as `module` (version [`INTERFACE_VERSION`] or a compatible newer one),
//! then for its symbol `name`, whose value must be a kernel procedure
//! (`spindle_abi::Import`). Symbols of other kinds (another extension's
//! functions) are not linkable yet.

use alloc::{format, string::ToString, sync::Arc, vec::Vec};

use dispatch::{Principal, Signature, ValueType};
use domain::{Domain, Export, NameError, NameServer, SymbolTable, SymbolType, Version};
use spindle_abi::{Import, WasmType, IMPORTS, KERNEL_MODULE};

use crate::{
    error::LinkError,
    link::{ImportResolver, Importer},
    module::{self, ModuleInfo},
};

/// Version under which the kernel interface is exported.
pub const INTERFACE_VERSION: Version = Version::new(1, 0);

fn value_type(ty: module::WasmType) -> ValueType {
    match ty {
        module::WasmType::I32 => ValueType::I32,
        module::WasmType::I64 => ValueType::I64,
        module::WasmType::F32 => ValueType::F32,
        module::WasmType::F64 => ValueType::F64,
        // Never exported by the kernel; keeps the mapping total.
        module::WasmType::Other => ValueType::opaque::<()>(),
    }
}

fn signature(ty: &module::FuncType) -> Signature {
    let params: Vec<ValueType> = ty.params.iter().map(|&t| value_type(t)).collect();
    Signature::new(&params, ty.results.first().map(|&t| value_type(t)))
}

fn abi_signature(import: Import) -> Signature {
    let spec = import.spec();
    let ty = module::FuncType {
        params: spec.params.iter().map(|&t: &WasmType| t.into()).collect(),
        results: spec.result.into_iter().map(Into::into).collect(),
    };
    signature(&ty)
}

/// The kernel interface as a domain: one procedure symbol per entry of the
/// import table, whose value is the `spindle_abi::Import`.
pub fn kernel_interface_domain() -> Domain {
    let mut table = SymbolTable::new();
    for spec in IMPORTS {
        table = table.export(Export::new(
            spec.name,
            SymbolType::Procedure(abi_signature(spec.import)),
            spec.import,
        ));
    }
    // The table has unique names (checked by spindle_abi's tests).
    Domain::create(KERNEL_MODULE, table).expect("the import table has unique names")
}

/// Exports the kernel interface in `nameserver` as `"spindle"`, with an
/// optional authorizer consulted on every import.
pub fn export_kernel_interface(
    nameserver: &NameServer,
    authorizer: Option<Arc<dyn domain::ImportAuthorizer>>,
) -> Result<(), NameError> {
    nameserver.export(
        KERNEL_MODULE,
        INTERFACE_VERSION,
        kernel_interface_domain(),
        Principal::KERNEL,
        authorizer,
    )
}

/// An extension's domain (`Create`): its exported functions, with their
/// types, and its imports as unresolved symbols (`module.name`).
pub fn extension_domain(name: &str, info: &ModuleInfo) -> Result<Domain, domain::LinkError> {
    let mut table = SymbolTable::new();
    for export in &info.exports {
        let Some(index) = export.function else {
            continue;
        };
        let Some(ty) = info.function_type(index) else {
            continue;
        };
        table = table.export(Export::new(
            export.name.clone(),
            SymbolType::Procedure(signature(ty)),
            index,
        ));
    }
    // Wasm may import one symbol twice; the domain lists it once.
    let mut seen = alloc::collections::BTreeSet::new();
    for import in &info.imports {
        let qualified = format!("{}.{}", import.module, import.name);
        if let (Some(ty), true) = (&import.func_type, seen.insert(qualified.clone())) {
            table = table.import(domain::Import::new(
                qualified,
                SymbolType::Procedure(signature(ty)),
            ));
        }
    }
    Domain::create(name.to_string(), table)
}

/// Resolves imports through a nameserver.
pub struct DomainResolver {
    nameserver: Arc<NameServer>,
}

impl DomainResolver {
    /// A resolver over `nameserver`.
    pub fn new(nameserver: Arc<NameServer>) -> Self {
        DomainResolver { nameserver }
    }
}

impl ImportResolver for DomainResolver {
    fn resolve(
        &self,
        importer: &Importer<'_>,
        module: &str,
        name: &str,
    ) -> Result<Import, LinkError> {
        let import = || format!("{module}.{name}");
        let domain = self
            .nameserver
            .import(module, INTERFACE_VERSION, importer.principal)
            .map_err(|error| match error {
                NameError::Denied { denied, .. } => LinkError::Denied {
                    import: import(),
                    reason: denied.reason,
                },
                _ => LinkError::Unresolved { import: import() },
            })?;
        let export = domain
            .export(name)
            .ok_or_else(|| LinkError::Unresolved { import: import() })?;
        export
            .value
            .downcast_ref::<Import>()
            .copied()
            .ok_or_else(|| LinkError::Unresolved { import: import() })
    }
}
