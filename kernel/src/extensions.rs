//! Extensions in the running kernel: the Wasm runtime, the kernel events
//! extensions bind to, the set of loaded extensions, and what the shell's
//! `ext`, `events` and `domains` commands show.
//!
//! Wiring (the kernel is the composition root):
//! - The nameserver exports the kernel interface (`spindle`, the import
//!   table of `spindle_abi`); every extension's imports are resolved through
//!   it, so its authorizer is consulted on each import.
//! - `Timer.Tick(ticks)` is raised every [`TICK_EVENT_PERIOD_MS`] by the
//!   `clock` thread (thread context, so a Wasm handler never runs inside the
//!   timer interrupt); each extension is granted it at load.
//! - `Extension.Faulted(id, kind)` is raised by the runtime when extension
//!   code traps or exhausts its budget; the kernel's policy handler counts
//!   faults per extension and reports them on the console.
//! - Module bytes come from the boot archive (`ext/<name>.wasm`).

use alloc::{
    boxed::Box,
    collections::{BTreeMap, VecDeque},
    format,
    string::{String, ToString},
    sync::Arc,
    vec::Vec,
};
use dispatch::{Clock, Event, EventStats, Handler, Install, Principal, Value, ValueType};
use domain::{NameServer, SymbolType};
use sched::sync::Mutex;
use wasm_runtime::{
    domains::{export_kernel_interface, DomainResolver},
    engine::{native::NativeEngine, wasmi::WasmiEngine},
    port, Capability, Console, EngineConfig, EventPort, Extension, FaultKind, Limits, LoadRequest,
    Runtime, Services, Tier,
};

/// Period of `Timer.Tick`, in milliseconds.
pub const TICK_EVENT_PERIOD_MS: u64 = 10;
/// Stack of threads that run extension code (the interpreter's frames).
pub const EXTENSION_STACK_BYTES: u64 = 256 * 1024;
/// Version under which a loaded extension's domain is registered.
const EXTENSION_DOMAIN_VERSION: domain::Version = domain::Version::new(1, 0);
/// Where extension modules live in the boot archive.
const ARCHIVE_DIRECTORY: &str = "ext/";

/// An event the `events` command lists.
struct ListedEvent {
    name: &'static str,
    stats: Box<dyn Fn() -> EventStats + Send + Sync>,
}

/// The kernel's extension state.
pub struct Extensions {
    runtime: Runtime,
    nameserver: Arc<NameServer>,
    tick: Arc<Event<(u64,), ()>>,
    tick_port: Arc<dyn EventPort>,
    /// `MachineTrap.Syscall` as extensions are granted it (only those
    /// loaded for a process, see [`Extensions::load_for_process`]).
    syscall_port: Option<Arc<dyn EventPort>>,
    events: Vec<ListedEvent>,
    /// Loaded extensions by name. Lock order: this before the runtime's locks.
    loaded: Mutex<BTreeMap<String, Extension>>,
    /// Per extension id: its name and the faults reported through
    /// `Extension.Faulted`. A spin lock, not `loaded`: the policy handler
    /// runs inside a raise that may hold an extension's instance lock.
    faults: Arc<spin::Mutex<BTreeMap<u64, FaultRecord>>>,
    console: Arc<ExtensionConsole>,
    archive: &'static [u8],
}

/// How many recent extension console lines are kept (for tests).
const RECENT_LINES: usize = 32;

/// Extension console output: one line per message, prefixed with the
/// extension's name; the last [`RECENT_LINES`] are kept.
struct ExtensionConsole {
    recent: spin::Mutex<VecDeque<String>>,
}

impl Console for ExtensionConsole {
    fn log(&self, extension: &str, message: &str) {
        let line = format!("[ext {extension}] {message}");
        hal::console::write_fmt(format_args!("{line}\n"));
        let mut recent = self.recent.lock();
        if recent.len() == RECENT_LINES {
            recent.pop_front();
        }
        recent.push_back(line);
    }
}

/// What the fault policy knows of one extension.
#[derive(Default, Clone)]
struct FaultRecord {
    name: String,
    count: u64,
    last: Option<FaultKind>,
}

/// Report the first fault of an extension, then every this many.
const FAULT_REPORT_INTERVAL: u64 = 100;

/// Dispatcher accounting and `spindle.timer_now_ns` read the TSC.
struct TscClock;

impl Clock for TscClock {
    fn now_ns(&self) -> u64 {
        hal::timer::uptime_ns()
    }
}

/// The scheduler's threads as the runtime's strands: an extension busy on
/// another thread (a `Timer.Tick` handler on the clock thread while the
/// shell calls it) is waited for, not refused.
struct SchedStrands;

impl wasm_runtime::Strands for SchedStrands {
    fn current(&self) -> u64 {
        // Thread ids start at 0 (the boot thread); strands are never 0.
        sched::current().0 + 1
    }

    fn yield_now(&self) {
        sched::yield_now();
    }

    fn stack_room(&self) -> Option<u64> {
        let here = 0u8;
        hal::context::stack_room(core::ptr::addr_of!(here) as u64)
    }
}

fn tick_intrinsic(_ticks: &(u64,)) {}

/// `value` as a `ty`, if it is an integer type that can hold it.
fn integer_value(ty: ValueType, value: u64) -> Result<Value, String> {
    let out_of_range = || format!("{value} does not fit {ty}");
    Ok(match ty {
        ValueType::I32 => Value::I32(i32::try_from(value).map_err(|_| out_of_range())?),
        ValueType::U32 => Value::U32(u32::try_from(value).map_err(|_| out_of_range())?),
        ValueType::I64 => Value::I64(i64::try_from(value).map_err(|_| out_of_range())?),
        ValueType::U64 => Value::U64(value),
        other => return Err(format!("cannot pass an integer as {other}")),
    })
}

static EXTENSIONS: spin::Once<Extensions> = spin::Once::new();

/// The extension state, once [`init`] has run.
pub fn get() -> Option<&'static Extensions> {
    EXTENSIONS.get()
}

/// Compiles `extension` to native code on a kernel thread of its own and
/// swaps it in (`Runtime::tier_up`); until then, and if that fails, it
/// runs on the interpreter. The thread, to wait for; `None` if none could
/// be started.
fn tier_up_in_background(name: &str, extension: Extension) -> Option<sched::JoinHandle> {
    let name = name.to_string();
    let spawned = sched::spawn_with_stack("tier-up", EXTENSION_STACK_BYTES, move || {
        let Some(extensions) = get() else {
            return;
        };
        match extensions.runtime().tier_up(&extension) {
            Ok(()) => log::info!("{name} runs as native code"),
            // Unloaded meanwhile, or not compiled yet: it stays where it is.
            Err(error) => log::debug!("{name} stays on the interpreter: {error}"),
        }
    });
    if spawned.is_err() {
        log::warn!("no memory for a tier-up thread: the extension stays on the interpreter");
    }
    spawned.ok()
}

/// Sets up the runtime and kernel events, and starts the `clock` thread.
pub fn init(archive: &'static [u8]) -> &'static Extensions {
    let extensions = EXTENSIONS.call_once(|| {
        let nameserver = Arc::new(NameServer::new());
        export_kernel_interface(&nameserver, None).expect("exporting the kernel interface");
        let clock: Arc<dyn Clock> = Arc::new(TscClock);
        let console = Arc::new(ExtensionConsole {
            recent: spin::Mutex::new(VecDeque::new()),
        });
        let runtime = Runtime::with_parts(
            Box::new(WasmiEngine::new(&EngineConfig::default())),
            Arc::new(DomainResolver::new(nameserver.clone())),
            Services {
                console: console.clone(),
                clock: Some(clock.clone()),
                strands: Some(Arc::new(SchedStrands)),
            },
            Limits::default(),
        );
        // The native-code tier: loads stay on the interpreter unless a
        // load, the shell or a test pins them to it.
        let runtime = match NativeEngine::new(&EngineConfig::default()) {
            Ok(native) => runtime.with_native_engine(Box::new(native)),
            Err(error) => {
                log::warn!("no native-code tier: {error}");
                runtime
            }
        };
        let (tick, _tick_authority) = Event::new("Timer.Tick", tick_intrinsic as fn(&(u64,)));
        let tick = Arc::new(tick);
        tick.enable_accounting(Some(clock.clone()));
        runtime.faulted().enable_accounting(Some(clock));
        // The kernel's services export themselves (`CreateFromModule`).
        crate::service_domains::export_all(
            &nameserver,
            [
                (
                    "Timer",
                    alloc::vec![crate::service_domains::event_export(&tick)],
                ),
                (
                    "Extension",
                    alloc::vec![crate::service_domains::event_export(runtime.faulted())],
                ),
            ],
        );

        // The kernel's fault policy: count, and report the first fault of
        // each extension and every FAULT_REPORT_INTERVAL-th after it. (A
        // stricter policy, e.g. unloading the culprit, installs here too.)
        let faults: Arc<spin::Mutex<BTreeMap<u64, FaultRecord>>> =
            Arc::new(spin::Mutex::new(BTreeMap::new()));
        let policy_faults = faults.clone();
        runtime
            .faulted()
            .install(
                Principal::KERNEL,
                Install::new(Handler::new(move |&(extension, kind): &(u64, u32)| {
                    // Only the loaded set's extensions have a record: it is
                    // made at load and dropped at unload. Extensions that
                    // tests and the fuzzer load and unload through the
                    // runtime directly are counted by the runtime itself
                    // (`Extension::stats`); a record made here for them
                    // would outlive them.
                    let mut faults = policy_faults.lock();
                    let Some(record) = faults.get_mut(&extension) else {
                        return;
                    };
                    record.count += 1;
                    record.last = FaultKind::from_code(kind);
                    if record.count % FAULT_REPORT_INTERVAL == 1 {
                        let kind = record.last.map_or("unknown fault", FaultKind::describe);
                        hal::console::write_fmt(format_args!(
                            "Extension.Faulted: {} (id {extension}): {kind}, fault #{}\n",
                            record.name, record.count
                        ));
                    }
                })),
            )
            .expect("installing the fault policy");

        let events = {
            let (tick, faulted) = (tick.clone(), runtime.faulted().clone());
            let mut events = alloc::vec![
                ListedEvent {
                    name: "Timer.Tick",
                    stats: Box::new(move || tick.stats()),
                },
                ListedEvent {
                    name: wasm_runtime::FAULTED_EVENT,
                    stats: Box::new(move || faulted.stats()),
                },
            ];
            for (name, event, which) in [
                (
                    "Translation.PageNotPresent",
                    crate::translation::page_not_present(),
                    0,
                ),
                (
                    "Translation.ProtectionFault",
                    crate::translation::protection_fault(),
                    1,
                ),
                (
                    "Translation.BadAddress",
                    crate::translation::bad_address(),
                    2,
                ),
            ] {
                if let Some(event) = event {
                    // Not accounted by the dispatcher (that would take the
                    // events off their fast plan); the raise count comes
                    // from the fault path's own counters.
                    let event = event.clone();
                    events.push(ListedEvent {
                        name,
                        stats: Box::new(move || {
                            let mut stats = event.stats();
                            stats.raised = crate::translation::raised()[which];
                            stats
                        }),
                    });
                }
            }
            if let Some(strands) = strands::events() {
                let (unblock, block, checkpoint, resume) = (
                    strands.unblock.clone(),
                    strands.block.clone(),
                    strands.checkpoint.clone(),
                    strands.resume.clone(),
                );
                for event in [&unblock, &block, &resume] {
                    event.enable_accounting(None);
                }
                checkpoint.enable_accounting(None);
                events.push(ListedEvent {
                    name: "Strand.Unblock",
                    stats: Box::new(move || unblock.stats()),
                });
                events.push(ListedEvent {
                    name: "Strand.Block",
                    stats: Box::new(move || block.stats()),
                });
                events.push(ListedEvent {
                    name: "Strand.Checkpoint",
                    stats: Box::new(move || checkpoint.stats()),
                });
                events.push(ListedEvent {
                    name: "Strand.Resume",
                    stats: Box::new(move || resume.stats()),
                });
            }
            if let Some(syscall) = crate::syscalls::event() {
                // Not timed: the dispatcher's accounting reads the clock
                // twice per raise, which under TCG cost more than the rest
                // of a null system call (about 350 against 240 ns); the
                // raise count comes from the entry's own counter.
                let syscall = syscall.clone();
                events.push(ListedEvent {
                    name: "MachineTrap.Syscall",
                    stats: Box::new(move || {
                        let mut stats = syscall.stats();
                        stats.raised = crate::syscalls::count();
                        stats
                    }),
                });
            }
            events
        };
        Extensions {
            tick_port: port(tick.clone()),
            syscall_port: crate::syscalls::event().map(|event| port(event.clone())),
            runtime,
            nameserver,
            tick,
            events,
            loaded: Mutex::new(BTreeMap::new()),
            faults,
            console,
            archive,
        }
    });
    sched::spawn_with_stack("clock", EXTENSION_STACK_BYTES, clock_thread)
        .expect("starting the clock thread");
    extensions
}

/// Raises `Timer.Tick` every [`TICK_EVENT_PERIOD_MS`].
fn clock_thread() {
    let Some(extensions) = get() else {
        return;
    };
    let mut count = 0u64;
    loop {
        sched::sleep_ms(TICK_EVENT_PERIOD_MS);
        count += 1;
        // Faults are contained and reported through Extension.Faulted; a
        // raise with no handler but the intrinsic cannot fail.
        let _ = extensions.tick.raise(&mut (count,));
    }
}

impl Extensions {
    /// Files of the boot archive whose names start with `prefix`, in
    /// archive order, with their names.
    pub fn archive_files(&self, prefix: &str) -> Vec<(&'static str, &'static [u8])> {
        initrd::entries(self.archive)
            .filter_map(Result::ok)
            .filter(|entry| entry.name.starts_with(prefix))
            .map(|entry| (entry.name, entry.data))
            .collect()
    }

    /// Names of the modules in the boot archive.
    pub fn available(&self) -> Vec<String> {
        initrd::entries(self.archive)
            .filter_map(Result::ok)
            .filter_map(|entry| {
                entry
                    .name
                    .strip_prefix(ARCHIVE_DIRECTORY)?
                    .strip_suffix(".wasm")
                    .map(String::from)
            })
            .collect()
    }

    /// The module bytes of extension `name` from the boot archive.
    pub fn module_bytes(&self, name: &str) -> Result<&'static [u8], String> {
        let wanted = format!("{ARCHIVE_DIRECTORY}{name}.wasm");
        for entry in initrd::entries(self.archive) {
            let entry = entry.map_err(|error| format!("boot archive: {error}"))?;
            if entry.name == wanted {
                return Ok(entry.data);
            }
        }
        Err(format!("no extension named `{name}` in the boot archive"))
    }

    /// Loads extension `name` from the boot archive (granting it
    /// `Timer.Tick`) and runs its `init`.
    pub fn load(&self, name: &str) -> Result<(), String> {
        let bytes = self.module_bytes(name)?;
        self.load_bytes(name, bytes)
    }

    /// Loads extension `name` from the boot archive on `tier`.
    pub fn load_on(&self, name: &str, tier: Tier) -> Result<(), String> {
        let bytes = self.module_bytes(name)?;
        self.load_request(name, LoadRequest::new(name, bytes).tier(tier))
    }

    /// Loads extension `name` from the boot archive (on `tier`, if given)
    /// granting it the directory `files` of the file tree, read-only,
    /// under the name `files`.
    pub fn load_with_files(
        &self,
        name: &str,
        tier: Option<Tier>,
        files: &str,
    ) -> Result<(), String> {
        let bytes = self.module_bytes(name)?;
        let directory = crate::stream_service::TreeDirectory::open(files)?;
        let mut request = LoadRequest::new(name, bytes);
        if let Some(tier) = tier {
            request = request.tier(tier);
        }
        request.grants.push((
            String::from("files"),
            Capability::Directory(Arc::new(directory)),
        ));
        self.load_request(name, request)
    }

    /// The tier extension `name` runs on, if it is loaded.
    pub fn tier_of(&self, name: &str) -> Option<Tier> {
        self.loaded.lock().get(name).map(Extension::tier)
    }

    /// Loads an extension from `bytes` under `name`.
    pub fn load_bytes(&self, name: &str, bytes: &[u8]) -> Result<(), String> {
        self.load_request(name, LoadRequest::new(name, bytes))
    }

    /// Loads `request` (granted Timer.Tick) as extension `name`.
    fn load_request(&self, name: &str, request: LoadRequest<'_>) -> Result<(), String> {
        let mut loaded = self.loaded.lock();
        if loaded.contains_key(name) {
            return Err(format!("{name} is already loaded"));
        }
        // On the default tier (nothing pinned) it starts on the
        // interpreter and moves to native code once compiled.
        let tiers_up = request.tier.is_none()
            && self.runtime.pinned_tier().is_none()
            && self.runtime.has_native_engine();
        let mut request = request.grant_event(self.tick_port.clone());
        // The protocol graph's events, when there is a network interface:
        // any extension may serve a port (SPIN's in-kernel protocols).
        for port in crate::network::event_ports() {
            request = request.grant_event(port);
        }
        // The stream service: any extension may serve a TCP port too, as
        // a protocol over the connections' data (`TCP.StreamData`).
        if let Some(streams) = crate::stream_service::service() {
            request = request.grant_event(streams.event_port());
            request
                .grants
                .push((String::from("streams"), Capability::Streams(streams)));
        }
        let extension = self
            .runtime
            .load(request)
            .map_err(|error| format!("{error}"))?;
        // Its domain goes into the nameserver under its name, exported by
        // the extension itself (so only it, or its unload, withdraws it).
        if let Some(domain) = extension.domain() {
            if let Err(error) = self.nameserver.export(
                name,
                EXTENSION_DOMAIN_VERSION,
                domain.clone(),
                extension.principal(),
                None,
            ) {
                let _ = extension.unload();
                return Err(format!(
                    "cannot register {name} with the nameserver: {error}"
                ));
            }
        }
        // Recorded before any handler of it can fault, so reports say whose.
        self.faults.lock().insert(
            extension.id().0,
            FaultRecord {
                name: name.to_string(),
                ..FaultRecord::default()
            },
        );
        if tiers_up {
            tier_up_in_background(name, extension.clone());
        }
        loaded.insert(name.to_string(), extension);
        Ok(())
    }

    /// Unloads extension `name`: removes its handlers, revokes its handles,
    /// frees its memory.
    ///
    /// The extension stays in the loaded set until its unload succeeded: an
    /// unload refused because it is busy leaves it loaded and nameable.
    pub fn unload(&self, name: &str) -> Result<String, String> {
        let mut loaded = self.loaded.lock();
        let extension = loaded
            .get(name)
            .ok_or_else(|| format!("{name} is not loaded"))?;
        let report = extension
            .unload()
            .map_err(|error| format!("cannot unload {name}: {error}"))?;
        let id = extension.id().0;
        if extension.domain().is_some() {
            let _ = self
                .nameserver
                .withdraw(name, EXTENSION_DOMAIN_VERSION, extension.principal());
        }
        loaded.remove(name);
        self.faults.lock().remove(&id);
        Ok(format!(
            "unloaded {name}: {} handlers removed, {} handles revoked, {} bytes of memory freed",
            report.handlers_removed, report.handles_revoked, report.memory_freed
        ))
    }

    /// Calls exported function `export` of loaded extension `name` with
    /// integer arguments, typed from the export's signature in the
    /// extension's domain.
    pub fn call(
        &self,
        name: &str,
        export: &str,
        args: &[u64],
    ) -> Result<Option<wasm_runtime::WasmValue>, String> {
        let loaded = self.loaded.lock();
        let extension = loaded
            .get(name)
            .ok_or_else(|| format!("{name} is not loaded"))?;
        let signature = extension
            .domain()
            .and_then(|domain| {
                domain
                    .exports()
                    .into_iter()
                    .find_map(|(symbol, ty)| match ty {
                        SymbolType::Procedure(signature) if symbol == export => Some(signature),
                        _ => None,
                    })
            })
            .ok_or_else(|| format!("{name} exports no function `{export}`"))?;
        if signature.params.len() != args.len() {
            return Err(format!(
                "{export} takes {} arguments, {} given",
                signature.params.len(),
                args.len()
            ));
        }
        let values = signature
            .params
            .iter()
            .zip(args)
            .map(|(param, &arg)| integer_value(param.ty, arg))
            .collect::<Result<Vec<_>, _>>()?;
        extension
            .call(export, &values)
            .map_err(|error| format!("{export} failed: {error}"))
    }

    /// One line per loaded extension.
    pub fn list(&self) -> Vec<String> {
        let faults = self.faults.lock().clone();
        self.loaded
            .lock()
            .iter()
            .map(|(name, extension)| {
                let stats = extension.stats();
                format!(
                    "{name:<14} id={} tier={} handlers={} handles={} memory={}B invocations={} faults={}",
                    extension.id().0,
                    extension.tier(),
                    stats.handlers,
                    stats.handles,
                    stats.memory_bytes,
                    stats.invocations,
                    faults
                        .get(&extension.id().0)
                        .map_or(0, |record| record.count),
                )
            })
            .collect()
    }

    /// One line per kernel event: handlers, guards and counters (the
    /// events paper's table 3).
    pub fn events(&self) -> Vec<String> {
        self.events
            .iter()
            .map(|event| {
                let stats = (event.stats)();
                format!(
                    "{:<27} raised={} time={}us handlers={} guards={} faults={} terminated={}",
                    event.name,
                    stats.raised,
                    stats.time_ns / 1000,
                    stats.handlers,
                    stats.guards,
                    stats.faults,
                    stats.terminated
                )
            })
            .collect()
    }

    /// One line per domain: the nameserver's exports, then each loaded
    /// extension's domain with its exports and unresolved imports.
    pub fn domains(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .nameserver
            .list()
            .into_iter()
            .map(|(name, version)| {
                let exports = self
                    .nameserver
                    .import(&name, version, Principal::KERNEL)
                    .map(|domain| {
                        let names: Vec<String> =
                            domain.exports().into_iter().map(|(name, _)| name).collect();
                        names.join(", ")
                    })
                    .unwrap_or_default();
                format!("{name} (exported, version {version}): {exports}")
            })
            .collect();
        for (name, extension) in self.loaded.lock().iter() {
            if let Some(domain) = extension.domain() {
                let exports: Vec<String> =
                    domain.exports().into_iter().map(|(name, _)| name).collect();
                lines.push(format!(
                    "{name}: exports [{}], unresolved [{}]",
                    exports.join(", "),
                    domain.unresolved().join(", ")
                ));
            }
        }
        lines
    }

    /// The nameserver (kernel services and the kernel interface are
    /// exported in it).
    pub fn nameserver(&self) -> &Arc<NameServer> {
        &self.nameserver
    }

    /// Faults reported for extension `name` so far, and the last one's kind.
    pub fn faults_of(&self, name: &str) -> (u64, Option<FaultKind>) {
        let id = self
            .loaded
            .lock()
            .get(name)
            .map(|extension| extension.id().0);
        let faults = self.faults.lock();
        id.and_then(|id| faults.get(&id))
            .map_or((0, None), |record| (record.count, record.last))
    }

    /// Whether an extension logged a line containing `text` recently.
    pub fn has_logged(&self, text: &str) -> bool {
        self.console
            .recent
            .lock()
            .iter()
            .any(|line| line.contains(text))
    }

    /// The runtime (for tests and benchmarks).
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Loads `bytes` under `name` with `limits`, outside the loaded set
    /// (for tests that must see the error or own the extension).
    pub fn load_detached(
        &self,
        name: &str,
        bytes: &[u8],
        limits: Option<Limits>,
    ) -> Result<Extension, String> {
        let mut request = LoadRequest::new(name, bytes).grant_event(self.tick_port.clone());
        if let Some(limits) = limits {
            request = request.limits(limits);
        }
        self.runtime
            .load(request)
            .map_err(|error| format!("{error}"))
    }

    /// Loads extension `name` for user process `process` and binds its
    /// `on_syscall` export to `MachineTrap.Syscall`. The event's authorizer
    /// lets it see that process's system calls alone (see
    /// `syscalls::authorize`). Undo with [`Extensions::unload_for_process`].
    pub fn load_for_process(&self, name: &str, process: u64) -> Result<Extension, String> {
        let port = self
            .syscall_port
            .clone()
            .ok_or("MachineTrap.Syscall is not set up")?;
        let bytes = self.module_bytes(name)?;
        let request = LoadRequest::new(name, bytes).grant_event(port.clone());
        let extension = self
            .runtime
            .load(request)
            .map_err(|error| format!("{error}"))?;
        crate::syscalls::set_owner(extension.principal(), process);
        if let Err(error) = extension.bind(&port, &wasm_runtime::Bind::handler("on_syscall")) {
            let _ = self.unload_for_process(&extension);
            return Err(format!(
                "{name}: cannot handle the process's system calls: {error}"
            ));
        }
        Ok(extension)
    }

    /// Loads extension `name` as the tracer of process `process`: binds
    /// its `on_syscall_done(result, number, a0..a5)` export, asynchronous,
    /// to `MachineTrap.SyscallDone`, whose authorizer lets it see that
    /// process's calls alone. The calls do not wait for it: it runs on the
    /// kernel's worker thread. Undo with [`Extensions::unload_for_process`].
    pub fn load_tracer(&self, name: &str, process: u64) -> Result<Extension, String> {
        let done = crate::syscalls::done_event().ok_or("MachineTrap.SyscallDone is not set up")?;
        let done = port(done.clone());
        let bytes = self.module_bytes(name)?;
        let request = LoadRequest::new(name, bytes).grant_event(done.clone());
        let extension = self
            .runtime
            .load(request)
            .map_err(|error| format!("{error}"))?;
        crate::syscalls::set_owner(extension.principal(), process);
        let bind = wasm_runtime::Bind {
            handler: "on_syscall_done",
            guard: None,
            mode: dispatch::Mode::Asynchronous,
        };
        if let Err(error) = extension.bind(&done, &bind) {
            let _ = self.unload_for_process(&extension);
            return Err(format!(
                "{name}: cannot trace the process's system calls: {error}"
            ));
        }
        Ok(extension)
    }

    /// Loads the Wasm module `bytes` (under `name`) as process `process`'s
    /// short-circuit of system call `number`: its `on_syscall` export
    /// answers that call of that process, in place of the personality
    /// (SPIN's per-application short-circuit). Undo with
    /// [`Extensions::unload_for_process`].
    pub fn load_short_circuit(
        &self,
        name: &str,
        bytes: &[u8],
        process: u64,
        number: u64,
    ) -> Result<Extension, String> {
        let port = self
            .syscall_port
            .clone()
            .ok_or("MachineTrap.Syscall is not set up")?;
        // Loaded on the process's own system call, on its kernel stack
        // (64 KiB), which the compiler's passes can overflow: the module
        // starts on the interpreter and is compiled on a kernel thread of
        // its own, as other loads are. With the native tier pinned the
        // call waits for it, so the program's next call runs native code.
        let request = LoadRequest::new(name, bytes)
            .grant_event(port.clone())
            .compile_later();
        let extension = self
            .runtime
            .load(request)
            .map_err(|error| format!("{error}"))?;
        crate::syscalls::set_short_circuit_owner(extension.principal(), process, number);
        if let Err(error) = extension.bind(&port, &wasm_runtime::Bind::handler("on_syscall")) {
            let _ = self.unload_for_process(&extension);
            return Err(format!(
                "{name}: cannot answer the process's system call {number}: {error}"
            ));
        }
        let pinned = self.runtime.pinned_tier();
        if pinned != Some(Tier::Interpreter) && self.runtime.has_native_engine() {
            let tier_up = tier_up_in_background(name, extension.clone());
            if let (Some(Tier::Native), Some(thread)) = (pinned, tier_up) {
                let _ = thread.join();
            }
        }
        Ok(extension)
    }

    /// Unloads an extension loaded with [`Extensions::load_for_process`].
    pub fn unload_for_process(&self, extension: &Extension) -> Result<(), String> {
        let result = extension
            .unload()
            .map(drop)
            .map_err(|error| format!("{error}"));
        // After the unload: its handler's removal is asked as the extension.
        crate::syscalls::forget_owner(extension.principal());
        result
    }

    /// Loads extension `name` as the scheduler of strand group `group`:
    /// binds its `on_unblock`, `on_block`, `on_checkpoint` and `on_resume`
    /// exports to the `Strand` events, whose authorizers let it see that
    /// group's strands alone (see `strands`). Undo with
    /// [`Extensions::unload_scheduler`].
    pub fn load_scheduler(&self, name: &str, group: u64) -> Result<Extension, String> {
        let events = strands::events().ok_or("the strand events are not set up")?;
        let ports = [
            (port(events.unblock.clone()), "on_unblock"),
            (port(events.block.clone()), "on_block"),
            (port(events.checkpoint.clone()), "on_checkpoint"),
            (port(events.resume.clone()), "on_resume"),
        ];
        let bytes = self.module_bytes(name)?;
        let mut request = LoadRequest::new(name, bytes);
        for (port, _) in &ports {
            request = request.grant_event(port.clone());
        }
        let extension = self
            .runtime
            .load(request)
            .map_err(|error| format!("{error}"))?;
        strands::set_owner(extension.principal(), group);
        for (port, export) in &ports {
            if let Err(error) = extension.bind(port, &wasm_runtime::Bind::handler(export)) {
                let _ = self.unload_scheduler(&extension);
                return Err(format!(
                    "{name}: cannot bind {export} to {}: {error}",
                    port.name()
                ));
            }
        }
        Ok(extension)
    }

    /// Unloads an extension loaded with [`Extensions::load_scheduler`].
    pub fn unload_scheduler(&self, extension: &Extension) -> Result<(), String> {
        let result = extension
            .unload()
            .map(drop)
            .map_err(|error| format!("{error}"));
        strands::forget_owner(extension.principal());
        result
    }

    /// `MachineTrap.Syscall` as an extension sees it.
    pub fn syscall_port(&self) -> Option<&Arc<dyn EventPort>> {
        self.syscall_port.as_ref()
    }

    /// The `Timer.Tick` event.
    pub fn tick(&self) -> &Arc<Event<(u64,), ()>> {
        &self.tick
    }

    /// `Timer.Tick` as extensions are granted it.
    pub fn tick_port(&self) -> &Arc<dyn EventPort> {
        &self.tick_port
    }

    /// Ticks raised so far (0 until accounting has seen one).
    pub fn ticks_raised(&self) -> u64 {
        self.tick.stats().raised
    }
}

/// Loads the extensions named in `names` (comma separated), reporting each
/// (the `spindle.ext=` command-line option).
pub fn autoload(names: &str) {
    let Some(extensions) = get() else {
        return;
    };
    for name in names.split(',').filter(|name| !name.is_empty()) {
        match extensions.load(name) {
            Ok(()) => log::info!("extension {name} loaded"),
            Err(error) => log::warn!("extension {name}: {error}"),
        }
    }
}
