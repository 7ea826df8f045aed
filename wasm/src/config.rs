//! Per-extension limits and runtime-wide settings.

/// Bytes in one WebAssembly page.
pub const WASM_PAGE_BYTES: u64 = 64 * 1024;

/// Resources one extension may use (design.md "Extensions": "linear memory,
/// handlers installed, CPU budget"). Exceeding one is a clear error: a
/// [`crate::LoadError::Limit`] at load, a [`crate::BindError::Limit`] (or
/// `Status::Limit`) at install, a `BudgetExhausted` fault when running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest module accepted, in bytes.
    pub module_bytes: usize,
    /// Linear memory, in 64 KiB pages: a module declaring more initial
    /// pages is refused; `memory.grow` beyond it returns -1.
    pub memory_pages: u32,
    /// Handlers the extension may have installed at once.
    pub handlers: usize,
    /// Handles the extension may hold at once (grants and bindings); at
    /// most `domain::MAX_HANDLES`, the most a handle can number.
    pub handles: usize,
    /// Fuel for one invocation (a handler, a guard, `init`); an ephemeral
    /// handler's budget can lower it, never raise it.
    pub fuel_per_invocation: u64,
    /// Elements a table may grow to.
    pub table_elements: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            module_bytes: 4 << 20,
            memory_pages: 64,
            handlers: 64,
            handles: 256,
            fuel_per_invocation: 10_000_000,
            table_elements: 10_000,
        }
    }
}

impl Limits {
    /// The memory limit in bytes.
    pub fn memory_bytes(&self) -> u64 {
        u64::from(self.memory_pages) * WASM_PAGE_BYTES
    }
}

/// Engine settings, the same for every extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    /// Deepest Wasm call nesting before a `StackOverflow` trap. wasmi keeps
    /// Wasm frames on its own heap stack, so this bounds memory, not the
    /// kernel stack (64 KiB per kernel thread); kept conservative anyway.
    pub max_call_depth: usize,
    /// Largest value stack of one invocation, in bytes (heap memory).
    pub max_value_stack_bytes: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            max_call_depth: 512,
            max_value_stack_bytes: 256 * 1024,
        }
    }
}
