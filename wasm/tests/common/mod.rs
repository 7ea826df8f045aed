//! Shared fixtures of the runtime's host tests: a recording console, a
//! runtime, and a few events.
#![allow(dead_code)]

use std::{
    path::PathBuf,
    sync::{Arc, Mutex},
};

use dispatch::{Authority, Event, Principal};
use wasm_runtime::{events::port, Console, EventPort, Extension, LoadRequest, Runtime, Services};

/// Console that keeps what extensions log.
#[derive(Default)]
pub struct Recorder {
    pub lines: Mutex<Vec<String>>,
}

impl Console for Recorder {
    fn log(&self, extension: &str, message: &str) {
        self.lines
            .lock()
            .unwrap()
            .push(format!("{extension}: {message}"));
    }
}

pub struct Fixture {
    pub runtime: Runtime,
    pub console: Arc<Recorder>,
}

pub fn fixture() -> Fixture {
    let console = Arc::new(Recorder::default());
    let runtime = Runtime::new(Services {
        console: console.clone(),
        clock: None,
        strands: None,
    });
    Fixture { runtime, console }
}

impl Fixture {
    pub fn load(&self, name: &str, wat: &str) -> Extension {
        self.try_load(LoadRequest::new(name, &wat::parse_str(wat).unwrap()))
            .unwrap_or_else(|e| panic!("load {name}: {e}"))
    }

    pub fn try_load(&self, request: LoadRequest<'_>) -> Result<Extension, wasm_runtime::LoadError> {
        self.runtime.load(request)
    }

    pub fn logged(&self) -> Vec<String> {
        self.console.lines.lock().unwrap().clone()
    }

    /// Records every `Extension.Faulted` raise as (extension id, kind code).
    pub fn fault_log(&self) -> Arc<Mutex<Vec<(u64, u32)>>> {
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        self.runtime
            .faulted()
            .install(
                Principal::KERNEL,
                dispatch::Install::new(dispatch::Handler::new(move |args: &(u64, u32)| {
                    sink.lock().unwrap().push(*args);
                })),
            )
            .unwrap();
        log
    }
}

/// An event, its authority, and its port for extensions.
pub type EventFixture<A, R> = (Arc<Event<A, R>>, Authority, Arc<dyn EventPort>);

fn tick_intrinsic(_: &(u64,)) {}

/// `Timer.Tick(ticks: u64)`, no result.
pub fn tick_event() -> EventFixture<(u64,), ()> {
    let (event, authority) = Event::new("Timer.Tick", tick_intrinsic as fn(&(u64,)));
    let event = Arc::new(event);
    // Extensions' handlers are the only ones of interest: remove the
    // intrinsic so a raise reports whether a Wasm handler ran.
    event
        .remove(Principal::KERNEL, dispatch::BindingId::INTRINSIC)
        .unwrap();
    let port = port(event.clone());
    (event, authority, port)
}

/// `Test.Compute(x: u32) -> u32` with no intrinsic handler.
pub fn compute_event() -> EventFixture<(u32,), u32> {
    let (event, authority) = Event::<(u32,), u32>::builder("Test.Compute").build();
    let event = Arc::new(event);
    let port = port(event.clone());
    (event, authority, port)
}

/// The repository root (the parent of the `wasm` crate).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The built extension `name` from `target/extensions/`. A test whose
/// input is missing fails: `./x test` builds the extensions before the host
/// tests; under a plain `cargo test`, run `./x build-extensions` first.
pub fn shipped_extension(name: &str) -> Vec<u8> {
    let path = repo_root()
        .join("target/extensions")
        .join(format!("{name}.wasm"));
    std::fs::read(&path).unwrap_or_else(|error| {
        panic!(
            "{}: {error} (build the extensions with ./x build-extensions; ./x test does)",
            path.display()
        )
    })
}
