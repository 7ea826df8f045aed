//! Typed symbols: what a module exports and what it still needs.

use alloc::{string::String, sync::Arc, vec::Vec};
use core::{any::Any, fmt};

use dispatch::{Signature, ValueType};

/// The type of a symbol, compared exactly when linking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SymbolType {
    /// A procedure (every procedure is also an event, 003 §2.1).
    Procedure(Signature),
    /// An event declared as such (its value is the dispatcher's `Event`).
    Event(Signature),
    /// A variable or constant.
    Data(ValueType),
    /// A Rust type exported by name (an interface's opaque `T`).
    Type(&'static str),
}

/// An exported symbol: name, type and the value importers get.
#[derive(Clone)]
pub struct Export {
    /// Qualified name, e.g. `"Console.Write"`.
    pub name: String,
    /// Its type.
    pub ty: SymbolType,
    /// The implementation: a function pointer, an `Arc<Event<..>>`, a value.
    pub value: Arc<dyn Any + Send + Sync>,
}

impl Export {
    /// An export of `value` under `name` with type `ty`.
    pub fn new<T: Any + Send + Sync>(name: impl Into<String>, ty: SymbolType, value: T) -> Self {
        Export {
            name: name.into(),
            ty,
            value: Arc::new(value),
        }
    }

    /// An export of an already shared value.
    pub fn shared(
        name: impl Into<String>,
        ty: SymbolType,
        value: Arc<dyn Any + Send + Sync>,
    ) -> Self {
        Export {
            name: name.into(),
            ty,
            value,
        }
    }
}

impl fmt::Debug for Export {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Export")
            .field("name", &self.name)
            .field("ty", &self.ty)
            .finish()
    }
}

/// A symbol a module uses but does not define.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Import {
    /// Qualified name.
    pub name: String,
    /// The type the module expects.
    pub ty: SymbolType,
}

impl Import {
    /// An import of `name` with type `ty`.
    pub fn new(name: impl Into<String>, ty: SymbolType) -> Self {
        Import {
            name: name.into(),
            ty,
        }
    }
}

/// A module's symbol table, the input of `Domain::create` (SPIN read it from
/// a COFF object file; the extension runtime builds it from a Wasm module's
/// exports and imports).
#[derive(Clone, Debug, Default)]
pub struct SymbolTable {
    /// Defined and exported symbols.
    pub exports: Vec<Export>,
    /// Unresolved symbols.
    pub imports: Vec<Import>,
}

impl SymbolTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an export.
    pub fn export(mut self, export: Export) -> Self {
        self.exports.push(export);
        self
    }

    /// Adds an import.
    pub fn import(mut self, import: Import) -> Self {
        self.imports.push(import);
        self
    }
}
