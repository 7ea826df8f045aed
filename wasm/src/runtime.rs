//! The runtime: loads extensions (validate, link, grant, instantiate,
//! initialize) and owns the `Extension.Faulted` event.
//!
//! Load, in order (design.md "Extensions"):
//! 1. size limit; complete validation by the kernel ([`ModuleInfo::parse`]);
//! 2. the declared memory against the memory limit;
//! 3. imports resolved through the [`ImportResolver`] (authorizers
//!    consulted) and type-checked;
//! 4. the handle table filled with the granted capabilities;
//! 5. instantiation by the [`Engine`] (the start function runs under the
//!    fuel limit); then the `init` export, if any. A trap in either fails
//!    the load and leaves nothing installed.

use alloc::{boxed::Box, string::String, sync::Arc, vec::Vec};
use core::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use dispatch::{Authority, Clock, Event, Principal};
use spindle_abi::INIT_EXPORT;

use crate::{
    config::{EngineConfig, Limits},
    engine::snapshot,
    engine::{wasmi::WasmiEngine, Engine},
    error::{LimitExceeded, LoadError},
    events::{port, EventPort},
    extension::{CallError, Extension, ExtensionId, Shared, TierUpSource},
    handles::{Capability, EventRights, Handles},
    link::{resolve_imports, ImportResolver, Importer, KernelInterface},
    module::ModuleInfo,
    state::ExtensionState,
    tier::Tier,
};

/// Arguments of `Extension.Faulted`: the extension's id and the
/// `spindle_abi::FaultKind` code.
pub type FaultedArgs = (u64, u32);

/// Name of the event raised when extension code traps.
pub const FAULTED_EVENT: &str = "Extension.Faulted";

/// Where extensions' console output goes.
pub trait Console: Send + Sync {
    /// Writes one message from extension `extension`.
    fn log(&self, extension: &str, message: &str);
}

/// The kernel's strands (threads), as the runtime needs them: an
/// extension runs one invocation at a time, and an invocation that finds
/// it running on *another* strand waits for it, while one that finds it
/// running on its *own* strand (a handler re-entering its extension
/// through a raise) is refused with [`CallError::Busy`].
pub trait Strands: Send + Sync {
    /// The running strand's identifier (never 0).
    fn current(&self) -> u64;
    /// Lets other strands run, among them the one in the extension.
    fn yield_now(&self);
    /// Bytes of the running strand's stack left below the caller, if
    /// known: a kernel procedure that may run another extension's code
    /// is refused when too little is left
    /// ([`crate::extension::NESTED_RUN_STACK_BYTES`]), and a load does
    /// not compile with less than [`COMPILE_STACK_BYTES`].
    fn stack_room(&self) -> Option<u64> {
        None
    }
}

/// The stack a load needs left below it to compile native code there:
/// Cranelift's passes go deep (a user thread's 64 KiB kernel stack was
/// overrun once: a double fault); the kernel's threads that load
/// extensions have 256 KiB. With less, a load that would compile starts
/// on the interpreter instead, as [`LoadRequest::compile_later`] asks,
/// and a later [`Runtime::tier_up`] (on a thread with room) compiles.
pub const COMPILE_STACK_BYTES: u64 = 128 * 1024;

/// Kernel services the imported procedures use.
#[derive(Clone)]
pub struct Services {
    /// The console (`spindle.log`).
    pub console: Arc<dyn Console>,
    /// The clock (`spindle.timer_now_ns`); without one it reads 0.
    pub clock: Option<Arc<dyn Clock>>,
    /// The strands, to wait for an extension busy on another strand;
    /// without them every busy extension is refused at once (hosts and
    /// tests without threads).
    pub strands: Option<Arc<dyn Strands>>,
}

/// What to load.
pub struct LoadRequest<'a> {
    /// Name for messages and the shell.
    pub name: &'a str,
    /// The module.
    pub bytes: &'a [u8],
    /// Capabilities granted, each under a name the extension looks up with
    /// `handle_find` (handles are numbered in this order, from 0).
    pub grants: Vec<(String, Capability)>,
    /// Limits; the runtime's defaults if `None`.
    pub limits: Option<Limits>,
    /// The tier to run on; the runtime's pinned tier (or the interpreter)
    /// if `None`.
    pub tier: Option<Tier>,
    /// Whether native code is left for a later [`Runtime::tier_up`] even
    /// when the native tier is pinned ([`LoadRequest::compile_later`]).
    pub compile_later: bool,
}

impl<'a> LoadRequest<'a> {
    /// A request without grants, with the default limits.
    pub fn new(name: &'a str, bytes: &'a [u8]) -> Self {
        LoadRequest {
            name,
            bytes,
            grants: Vec::new(),
            limits: None,
            tier: None,
            compile_later: false,
        }
    }

    /// Loads on the interpreter, keeping what a tier-up needs, even when
    /// the runtime has the native tier pinned: the caller compiles later,
    /// with [`Runtime::tier_up`], elsewhere. For loads made on a stack too
    /// small for the compiler (a user thread's kernel stack, in a system
    /// call); a tier named with [`LoadRequest::tier`] still wins.
    pub fn compile_later(mut self) -> Self {
        self.compile_later = true;
        self
    }

    /// Pins the extension to `tier`. A module the native tier does not
    /// handle yet runs on the interpreter anyway ([`Extension::tier`] says
    /// which ran).
    pub fn tier(mut self, tier: Tier) -> Self {
        self.tier = Some(tier);
        self
    }

    /// Grants an event under its own name: the extension may install
    /// handlers on it (as its authorizer allows), not raise it.
    pub fn grant_event(mut self, event: Arc<dyn EventPort>) -> Self {
        self.grants.push((
            event.name().into(),
            Capability::Event(event, EventRights::BIND),
        ));
        self
    }

    /// Grants an event under its own name with the right to raise it too:
    /// the event's authority delegating its raising.
    pub fn grant_event_to_raise(mut self, event: Arc<dyn EventPort>) -> Self {
        self.grants.push((
            event.name().into(),
            Capability::Event(event, EventRights::BIND_AND_RAISE),
        ));
        self
    }

    /// Sets the limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = Some(limits);
        self
    }
}

/// The extension runtime.
pub struct Runtime {
    engine: Box<dyn Engine>,
    /// The native-code tier, if the kernel built one.
    native: Option<Box<dyn Engine>>,
    /// The tier loads use when their request names none (`Tier::code`; 0:
    /// the interpreter).
    pinned: AtomicU8,
    resolver: Arc<dyn ImportResolver>,
    services: Arc<Services>,
    limits: Limits,
    faulted: Arc<Event<FaultedArgs, ()>>,
    faulted_authority: Authority,
    next_id: AtomicU64,
}

fn faulted_intrinsic(_: &FaultedArgs) {}

impl Runtime {
    /// A runtime with the wasmi engine, the kernel interface open to every
    /// extension, and default limits.
    pub fn new(services: Services) -> Self {
        Runtime::with_parts(
            Box::new(WasmiEngine::new(&EngineConfig::default())),
            Arc::new(KernelInterface::new()),
            services,
            Limits::default(),
        )
    }

    /// A runtime from its parts.
    pub fn with_parts(
        engine: Box<dyn Engine>,
        resolver: Arc<dyn ImportResolver>,
        services: Services,
        limits: Limits,
    ) -> Self {
        let (faulted, faulted_authority) =
            Event::new(FAULTED_EVENT, faulted_intrinsic as fn(&FaultedArgs));
        Runtime {
            engine,
            native: None,
            pinned: AtomicU8::new(0),
            resolver,
            services: Arc::new(services),
            limits,
            faulted: Arc::new(faulted),
            faulted_authority,
            // Principal 0 is the kernel.
            next_id: AtomicU64::new(1),
        }
    }

    /// The `Extension.Faulted(extension id, fault kind)` event: install a
    /// policy on it (for example, unload an extension that keeps
    /// faulting).
    pub fn faulted(&self) -> &Arc<Event<FaultedArgs, ()>> {
        &self.faulted
    }

    /// The authority over `Extension.Faulted` (set its authorizer).
    pub fn faulted_authority(&self) -> &Authority {
        &self.faulted_authority
    }

    /// `Extension.Faulted` as a port, to grant to a policy extension.
    pub fn faulted_port(&self) -> Arc<dyn EventPort> {
        port(self.faulted.clone())
    }

    /// Adds the native-code tier.
    pub fn with_native_engine(mut self, engine: Box<dyn Engine>) -> Self {
        self.native = Some(engine);
        self
    }

    /// Whether a native-code tier is present.
    pub fn has_native_engine(&self) -> bool {
        self.native.is_some()
    }

    /// Pins every later load that names no tier to `tier` (`None`: the
    /// interpreter): the tests and benchmarks run the same extensions on
    /// each tier this way.
    pub fn pin_tier(&self, tier: Option<Tier>) {
        self.pinned
            .store(tier.map_or(0, Tier::code), Ordering::Release);
    }

    /// The tier pinned by [`Runtime::pin_tier`].
    pub fn pinned_tier(&self) -> Option<Tier> {
        Tier::from_code(self.pinned.load(Ordering::Acquire))
    }

    /// Moves `extension`, loaded on the default tier, to native code:
    /// compiles its module here (on the caller's thread: the kernel runs
    /// this on a thread of its own), then, under the extension's lock so
    /// that no invocation sees a half-installed instance, copies the
    /// interpreter's memory and globals into the native instance and
    /// installs it. The extension keeps its id, handles, installations and
    /// export references. `Err` says why it stays on the interpreter.
    pub fn tier_up(&self, extension: &Extension) -> Result<(), LoadError> {
        let native = self
            .native
            .as_ref()
            .ok_or_else(|| LoadError::Engine("no native tier".into()))?;
        let shared = &extension.shared;
        let source = shared
            .tier_up
            .lock()
            .take()
            .ok_or_else(|| LoadError::Engine("not loaded for a tier-up".into()))?;
        let takeover = native.prepare_takeover(
            &source.bytes,
            &source.module,
            &source.imports,
            &shared.limits,
        )?;
        crate::tier::take_over(shared, takeover).map_err(LoadError::Engine)?;
        // Handlers bound on the interpreter (at `init`, usually) get the
        // new tier's lockless path where it has one.
        shared.refresh_installations();
        Ok(())
    }

    /// The default limits.
    pub fn default_limits(&self) -> Limits {
        self.limits
    }

    /// Loads, links and instantiates an extension, then runs its `init`.
    pub fn load(&self, request: LoadRequest<'_>) -> Result<Extension, LoadError> {
        let limits = request.limits.unwrap_or(self.limits);
        if request.bytes.len() > limits.module_bytes {
            return Err(LimitExceeded {
                what: "module bytes",
                limit: limits.module_bytes as u64,
                requested: request.bytes.len() as u64,
            }
            .into());
        }
        let info = ModuleInfo::parse(request.bytes)?;
        if let Some((initial, _)) = info.memory_pages {
            if initial > u64::from(limits.memory_pages) {
                return Err(LimitExceeded {
                    what: "memory pages",
                    limit: u64::from(limits.memory_pages),
                    requested: initial,
                }
                .into());
            }
        }
        let id = ExtensionId(self.next_id.fetch_add(1, Ordering::Relaxed));
        let principal = Principal(id.0);
        let importer = Importer {
            name: request.name,
            principal,
        };
        let imports = resolve_imports(&*self.resolver, &importer, &info)?;
        let domain = crate::domains::extension_domain(request.name, &info).ok();
        let shared = Arc::new(Shared::new(
            id,
            request.name.into(),
            limits,
            self.faulted.clone(),
            domain,
            self.services.strands.clone(),
            self.services.clock.clone(),
        ));
        let module = Arc::new(info);
        let pure_imports: Vec<bool> = imports.iter().map(|import| import.spec().is_pure).collect();
        // A fresh state for each engine tried: a refused native attempt
        // consumed the first.
        let make_state = || -> Result<ExtensionState, LoadError> {
            let handles = Handles::new(principal, limits.handles);
            for (name, capability) in &request.grants {
                handles.insert(name.clone(), capability.clone())?;
            }
            Ok(ExtensionState {
                name: request.name.into(),
                principal,
                handles: Arc::new(handles),
                installed: Vec::new(),
                services: self.services.clone(),
                limits,
                pure_imports: pure_imports.clone(),
                module: module.clone(),
                extension: Arc::downgrade(&shared),
            })
        };
        let pinned = self.pinned_tier().filter(|_| !request.compile_later);
        let mut tier = request.tier.or(pinned);
        let room = self
            .services
            .strands
            .as_ref()
            .and_then(|strands| strands.stack_room());
        if tier == Some(Tier::Native) && room.is_some_and(|room| room < COMPILE_STACK_BYTES) {
            // Not here: on the interpreter, ready for a tier-up elsewhere.
            tier = None;
        }
        let mut native_instance = None;
        if let (Some(Tier::Native), Some(native)) = (tier, &self.native) {
            match native.instantiate(
                request.bytes,
                &module,
                &imports,
                make_state()?,
                &limits,
                limits.fuel_per_invocation,
            ) {
                Ok(instance) => native_instance = Some(instance),
                // Not compiled or set up natively: the interpreter runs it.
                Err(LoadError::Engine(_)) => {}
                Err(error) => return Err(error),
            }
        }
        let instance = match native_instance {
            Some(instance) => {
                shared.tier.store(Tier::Native.code(), Ordering::Release);
                instance
            }
            None => {
                // On the default tier with a native tier present, wasmi
                // gets the module with its mutable globals exported, so a
                // tier-up can read them; the source is kept for it.
                let rewritten = match (tier, &self.native) {
                    (None, Some(_)) => snapshot::export_mutable_globals(
                        request.bytes,
                        &snapshot::mutable_globals(request.bytes),
                    ),
                    _ => None,
                };
                let instance = self.engine.instantiate(
                    rewritten.as_deref().unwrap_or(request.bytes),
                    &module,
                    &imports,
                    make_state()?,
                    &limits,
                    limits.fuel_per_invocation,
                )?;
                if rewritten.is_some() {
                    *shared.tier_up.lock() = Some(TierUpSource {
                        bytes: Arc::from(request.bytes),
                        module: module.clone(),
                        imports: imports.clone(),
                    });
                }
                instance
            }
        };
        *shared.instance.lock() = Some(crate::extension::Loaded::new(instance));
        let extension = Extension {
            shared: Arc::new(crate::extension::Owner(shared)),
        };
        if module.exported_function(INIT_EXPORT).is_some() {
            match extension.call(INIT_EXPORT, &[]) {
                Ok(_) => {}
                Err(error) => {
                    let _ = extension.unload();
                    return Err(LoadError::InitFaulted(alloc::format!("{error}")));
                }
            }
        }
        Ok(extension)
    }
}

impl From<CallError> for LoadError {
    fn from(error: CallError) -> Self {
        LoadError::InitFaulted(alloc::format!("{error}"))
    }
}
