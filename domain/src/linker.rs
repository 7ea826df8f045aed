//! Domains and the in-kernel linker: Create, CreateFromModule, Resolve,
//! Combine (000 §3.1, figure 2).

use alloc::{boxed::Box, collections::BTreeMap, string::String, sync::Arc, vec::Vec};
use core::{any::Any, fmt};

use spin::Mutex;

use crate::symbol::{Export, SymbolTable, SymbolType};

/// Why linking failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkError {
    /// Two exports with one name (in a table, or across combined domains).
    DuplicateExport(String),
    /// An import's type differs from the export of the same name. Nothing
    /// was resolved.
    TypeMismatch {
        /// The symbol.
        name: String,
        /// What the importer expects.
        expected: Box<SymbolType>,
        /// What the source exports.
        found: Box<SymbolType>,
    },
    /// The import has not been resolved (or never existed).
    Unresolved(String),
    /// The resolved value is not of the Rust type asked for.
    WrongValueType(String),
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkError::DuplicateExport(n) => write!(f, "{n} exported twice"),
            LinkError::TypeMismatch {
                name,
                expected,
                found,
            } => {
                write!(f, "{name}: imported as {expected:?}, exported as {found:?}")
            }
            LinkError::Unresolved(n) => write!(f, "{n} is unresolved"),
            LinkError::WrongValueType(n) => write!(f, "{n} has another Rust type"),
        }
    }
}

/// What a `resolve` did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolution {
    /// Imports resolved by this call.
    pub resolved: Vec<String>,
    /// Imports of the target still unresolved afterwards.
    pub unresolved: Vec<String>,
}

/// An import slot: its expected type and, once resolved, the value.
struct Slot {
    ty: SymbolType,
    value: Option<Arc<dyn Any + Send + Sync>>,
}

struct Inner {
    name: String,
    exports: BTreeMap<String, Export>,
    /// Import slots, filled by `resolve`. Locked only while linking.
    imports: Mutex<BTreeMap<String, Slot>>,
    /// For an aggregate: the combined domains (their imports are its own).
    parts: Vec<Domain>,
}

/// A protection domain, named by this capability (cheap to clone).
#[derive(Clone)]
pub struct Domain(Arc<Inner>);

impl fmt::Debug for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Domain")
            .field("name", &self.0.name)
            .field("exports", &self.0.exports.keys().collect::<Vec<_>>())
            .field("unresolved", &self.unresolved())
            .finish()
    }
}

/// Rust code that exports its own interface (`CreateFromModule`).
pub trait Module {
    /// The module's name.
    fn name(&self) -> &str;
    /// The symbols it exports.
    fn exports(&self) -> Vec<Export>;
}

impl Domain {
    /// `Create`: a domain from a module's symbol table. Its exports are the
    /// domain's exports; its imports are left unresolved.
    pub fn create(name: impl Into<String>, table: SymbolTable) -> Result<Domain, LinkError> {
        let mut exports = BTreeMap::new();
        for export in table.exports {
            if exports.contains_key(&export.name) {
                return Err(LinkError::DuplicateExport(export.name));
            }
            exports.insert(export.name.clone(), export);
        }
        let imports = table
            .imports
            .into_iter()
            .map(|i| {
                (
                    i.name,
                    Slot {
                        ty: i.ty,
                        value: None,
                    },
                )
            })
            .collect();
        Ok(Domain(Arc::new(Inner {
            name: name.into(),
            exports,
            imports: Mutex::new(imports),
            parts: Vec::new(),
        })))
    }

    /// `CreateFromModule`: a domain exporting the interface the calling
    /// module defines (it names and exports itself at run time).
    pub fn create_from_module(module: &dyn Module) -> Result<Domain, LinkError> {
        Domain::create(
            module.name(),
            SymbolTable {
                exports: module.exports(),
                imports: Vec::new(),
            },
        )
    }

    /// `Combine`: an aggregate domain exporting the symbols of both (e.g.
    /// SpinPublic). Its unresolved symbols are those of its parts.
    pub fn combine(d1: &Domain, d2: &Domain) -> Result<Domain, LinkError> {
        let mut exports = d1.0.exports.clone();
        for (name, export) in &d2.0.exports {
            match exports.get(name) {
                Some(existing)
                    if !Arc::ptr_eq(&existing.value, &export.value) || existing.ty != export.ty =>
                {
                    return Err(LinkError::DuplicateExport(name.clone()))
                }
                Some(_) => {}
                None => {
                    exports.insert(name.clone(), export.clone());
                }
            }
        }
        Ok(Domain(Arc::new(Inner {
            name: alloc::format!("{}+{}", d1.0.name, d2.0.name),
            exports,
            imports: Mutex::new(BTreeMap::new()),
            parts: alloc::vec![d1.clone(), d2.clone()],
        })))
    }

    /// `Resolve`: resolves the target's unresolved symbols against the
    /// source's exports. Only the target's undefined symbols change; no
    /// symbol is added to its exports. Type-checked: on any mismatch
    /// nothing is resolved. Cross-linking is two calls.
    pub fn resolve(source: &Domain, target: &Domain) -> Result<Resolution, LinkError> {
        let mut targets = Vec::new();
        target.leaves(&mut targets);
        // Lock every distinct leaf once (a leaf may appear in several parts).
        targets.sort_by_key(|d| Arc::as_ptr(&d.0));
        targets.dedup_by(|a, b| Arc::ptr_eq(&a.0, &b.0));
        let mut locks: Vec<_> = targets.iter().map(|d| d.0.imports.lock()).collect();
        // Check first, so that a mismatch leaves everything unchanged.
        for slots in &locks {
            for (name, slot) in slots.iter().filter(|(_, s)| s.value.is_none()) {
                if let Some(export) = source.0.exports.get(name) {
                    if export.ty != slot.ty {
                        return Err(LinkError::TypeMismatch {
                            name: name.clone(),
                            expected: Box::new(slot.ty.clone()),
                            found: Box::new(export.ty.clone()),
                        });
                    }
                }
            }
        }
        let mut resolution = Resolution::default();
        for slots in &mut locks {
            for (name, slot) in slots.iter_mut().filter(|(_, s)| s.value.is_none()) {
                match source.0.exports.get(name) {
                    Some(export) => {
                        slot.value = Some(export.value.clone());
                        resolution.resolved.push(name.clone());
                    }
                    None => resolution.unresolved.push(name.clone()),
                }
            }
        }
        resolution.resolved.sort();
        resolution.unresolved.sort();
        resolution.unresolved.dedup();
        Ok(resolution)
    }

    fn leaves(&self, out: &mut Vec<Domain>) {
        if self.0.parts.is_empty() {
            out.push(self.clone());
        } else {
            for part in &self.0.parts {
                part.leaves(out);
            }
        }
    }

    /// The domain's name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The exported symbols and their types.
    pub fn exports(&self) -> Vec<(String, SymbolType)> {
        self.0
            .exports
            .values()
            .map(|e| (e.name.clone(), e.ty.clone()))
            .collect()
    }

    /// An exported symbol.
    pub fn export(&self, name: &str) -> Option<&Export> {
        self.0.exports.get(name)
    }

    /// The exported value `name` as Rust type `T`.
    pub fn exported<T: Any + Send + Sync>(&self, name: &str) -> Result<Arc<T>, LinkError> {
        let export = self
            .0
            .exports
            .get(name)
            .ok_or_else(|| LinkError::Unresolved(name.into()))?;
        export
            .value
            .clone()
            .downcast::<T>()
            .map_err(|_| LinkError::WrongValueType(name.into()))
    }

    /// The imports not yet resolved, sorted.
    pub fn unresolved(&self) -> Vec<String> {
        let mut leaves = Vec::new();
        self.leaves(&mut leaves);
        let mut names: Vec<String> = leaves
            .iter()
            .flat_map(|d| {
                d.0.imports
                    .lock()
                    .iter()
                    .filter(|(_, s)| s.value.is_none())
                    .map(|(n, _)| n.clone())
                    .collect::<Vec<_>>()
            })
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// A resolved import as Rust type `T` (what the linked code calls).
    pub fn imported<T: Any + Send + Sync>(&self, name: &str) -> Result<Arc<T>, LinkError> {
        let mut leaves = Vec::new();
        self.leaves(&mut leaves);
        for leaf in leaves {
            if let Some(slot) = leaf.0.imports.lock().get(name) {
                let value = slot
                    .value
                    .clone()
                    .ok_or_else(|| LinkError::Unresolved(name.into()))?;
                return value
                    .downcast::<T>()
                    .map_err(|_| LinkError::WrongValueType(name.into()));
            }
        }
        Err(LinkError::Unresolved(name.into()))
    }

    /// Whether two capabilities name the same domain.
    pub fn same(&self, other: &Domain) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
