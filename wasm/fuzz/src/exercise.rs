//! One module driven through everything an extension can do, with the
//! runtime's contract checked at each step.

use alloc::{format, string::String, sync::Arc};

use wasm_runtime::{
    module::ModuleInfo, purity, Bind, CallError, EventPort, Limits, LoadRequest, Runtime,
};

use crate::{rng::Rng, values};

/// Exports exercised per module (a generated module may export hundreds).
const EXPORTS_PER_MODULE: usize = 8;

/// Calls per export, each with other arguments.
const CALLS_PER_EXPORT: usize = 2;

/// Where modules are loaded: a runtime, the event they are granted and
/// bind to, and a way to raise it (so bound handlers and guards run).
pub struct Target<'a> {
    /// The runtime that loads the modules.
    pub runtime: &'a Runtime,
    /// The event granted to each module (a `(u64,)` event such as
    /// `Timer.Tick`).
    pub event: &'a Arc<dyn EventPort>,
    /// Raises that event once.
    pub raise: &'a dyn Fn(),
}

/// What happened to one module.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Whether it loaded (else it was refused with a message).
    pub loaded: bool,
    /// Exports installed as a handler, or as the guard of one.
    pub bindings: u32,
    /// Exports the guard purity check accepted.
    pub pure: u32,
    /// Calls made.
    pub calls: u32,
    /// Calls that ended in a contained trap.
    pub traps: u32,
}

impl Outcome {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &Outcome) {
        self.loaded |= other.loaded;
        self.bindings += other.bindings;
        self.pure += other.pure;
        self.calls += other.calls;
        self.traps += other.traps;
    }
}

/// A broken promise of the runtime: what was done and what came back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation(pub String);

impl core::fmt::Display for Violation {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The limits of one run: small fuel mostly (many cases per second), a
/// large budget in one case of four (deeper execution), 8 pages of memory.
pub fn limits(rng: &mut Rng) -> Limits {
    Limits {
        fuel_per_invocation: if rng.one_in(4) { 200_000 } else { 2_000 },
        memory_pages: 8,
        ..Limits::default()
    }
}

/// Loads `bytes` into `target` and exercises it; `rng` is the case's
/// [`crate::Stream::Run`] generator (limits, then arguments).
///
/// The contract checked: a refused module has a message; a loaded module is
/// valid; each call of an export with the right arguments returns, or traps
/// and is counted as a fault of the extension; unload succeeds and frees
/// what the module held.
pub fn exercise(target: &Target<'_>, bytes: &[u8], rng: &mut Rng) -> Result<Outcome, Violation> {
    let limits = limits(rng);
    let request = LoadRequest::new("fuzz", bytes)
        .grant_event(target.event.clone())
        .limits(limits);
    let extension = match target.runtime.load(request) {
        Ok(extension) => extension,
        Err(error) => {
            let message = format!("{error}");
            if message.is_empty() {
                return Err(Violation("a refusal gave no reason".into()));
            }
            return Ok(Outcome::default());
        }
    };
    let mut outcome = Outcome {
        loaded: true,
        ..Outcome::default()
    };
    let info = ModuleInfo::parse(bytes).map_err(|error| {
        Violation(format!(
            "loaded, but the kernel's validation refuses it: {error}"
        ))
    })?;
    let memory_bytes = u64::from(limits.memory_pages) << 16;
    let exports = info
        .exports
        .iter()
        .filter_map(|export| Some((export.name.as_str(), export.function?)))
        .take(EXPORTS_PER_MODULE);
    // The first export that binds as a handler is the one the others are
    // tried as guards of (a guard has the event's parameters and an i32
    // result, so one export is rarely both).
    let mut handler: Option<&str> = None;
    for (name, index) in exports {
        if extension.bind(target.event, &Bind::handler(name)).is_ok() {
            outcome.bindings += 1;
            handler.get_or_insert(name);
        }
        if let Some(handler) = handler.filter(|&handler| handler != name) {
            if extension
                .bind(target.event, &Bind::handler(handler).guard(name))
                .is_ok()
            {
                outcome.bindings += 1;
            }
        }
        // Imports count as pure for even function indices only, so both
        // answers of the import check are exercised.
        if purity::check_pure(&info, index, &|import| import % 2 == 0).is_ok() {
            outcome.pure += 1;
        }
        let Some(ty) = info.function_type(index) else {
            return Err(Violation(format!("export {name:?} has no type")));
        };
        for _ in 0..CALLS_PER_EXPORT {
            let Some(args) = values::arguments(rng, &ty.params, memory_bytes) else {
                break;
            };
            outcome.calls += 1;
            match extension.call(name, &args) {
                Ok(_) => {}
                Err(CallError::Trap(_)) => outcome.traps += 1,
                Err(other) => {
                    return Err(Violation(format!(
                        "call of export {name:?} with {} arguments: {other}",
                        args.len()
                    )))
                }
            }
        }
    }
    (target.raise)();
    let stats = extension.stats();
    if stats.faults < u64::from(outcome.traps) {
        return Err(Violation(format!(
            "{} calls trapped but the extension counts {} faults",
            outcome.traps, stats.faults
        )));
    }
    let report = extension
        .unload()
        .map_err(|error| Violation(format!("unload failed: {error}")))?;
    if report.handlers_kept != 0 || report.memory_freed != stats.memory_bytes {
        return Err(Violation(format!(
            "unload kept {} handlers and freed {} of {} bytes of memory",
            report.handlers_kept, report.memory_freed, stats.memory_bytes
        )));
    }
    if !extension.is_unloaded() {
        return Err(Violation("still loaded after unload".into()));
    }
    Ok(outcome)
}
