//! Which engine runs an extension: the interpreter (wasmi, the first tier,
//! ready at once) or native code (`engine::native`, compiled by the
//! kernel). docs/design/0008-native-engine.md says how a module gets its
//! tier and what keeps it on the interpreter.

use alloc::{boxed::Box, string::String};
use core::{fmt, sync::atomic::Ordering};

use crate::{engine::Takeover, extension::Shared};

/// An engine tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// wasmi, the interpreter.
    Interpreter,
    /// Native code compiled by the kernel.
    Native,
}

impl Tier {
    /// The tier a shell word names (`wasmi`, `interpreter`, `native`).
    pub fn parse(word: &str) -> Option<Tier> {
        match word {
            "wasmi" | "interpreter" => Some(Tier::Interpreter),
            "native" => Some(Tier::Native),
            _ => None,
        }
    }

    /// As a benchmark name's suffix and the shell print it.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Interpreter => "wasmi",
            Tier::Native => "native",
        }
    }

    pub(crate) fn code(self) -> u8 {
        match self {
            Tier::Interpreter => 1,
            Tier::Native => 2,
        }
    }

    pub(crate) fn from_code(code: u8) -> Option<Tier> {
        match code {
            1 => Some(Tier::Interpreter),
            2 => Some(Tier::Native),
            _ => None,
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Installs `takeover` in place of `shared`'s instance, with its state,
/// memory and globals, under the instance lock: an invocation runs either
/// entirely on the old instance or entirely on the new one. If the old
/// instance cannot be read (or the snapshot does not fit), it stays.
pub(crate) fn take_over(shared: &Shared, mut takeover: Box<dyn Takeover>) -> Result<(), String> {
    let mut guard = shared
        .lock_instance()
        .ok_or_else(|| String::from("the extension stayed busy"))?;
    let old = guard
        .take()
        .ok_or_else(|| String::from("the extension was unloaded"))?;
    let snapshot = match old.snapshot() {
        Some(snapshot) if takeover.accepts(&snapshot) => snapshot,
        _ => {
            *guard = Some(old);
            return Err("its state cannot be moved to native code".into());
        }
    };
    let state = old.into_state();
    *guard = Some(crate::extension::Loaded::new(
        takeover.finish(snapshot, state),
    ));
    shared.tier.store(Tier::Native.code(), Ordering::Release);
    Ok(())
}
