//! What the fuzz and regression tests share: a runtime with a `(u64,)`
//! event granted to every module, and where failing modules are saved.
#![allow(dead_code)]

use std::{path::PathBuf, sync::Arc};

use dispatch::Event;
use wasm_fuzz::Target;
use wasm_runtime::{events::port, Console, EventPort, Runtime, Services};

/// Extensions' console output is dropped: generated modules log noise.
struct Quiet;

impl Console for Quiet {
    fn log(&self, _extension: &str, _message: &str) {}
}

fn tick_intrinsic(_: &(u64,)) {}

/// A runtime and `Timer.Tick`, as the kernel wires them.
pub struct Fixture {
    pub runtime: Runtime,
    pub tick: Arc<Event<(u64,), ()>>,
    pub port: Arc<dyn EventPort>,
}

impl Fixture {
    pub fn new() -> Self {
        let runtime = Runtime::new(Services {
            console: Arc::new(Quiet),
            clock: None,
            strands: None,
        });
        let (tick, _authority) = Event::new("Timer.Tick", tick_intrinsic as fn(&(u64,)));
        let tick = Arc::new(tick);
        let port = port(tick.clone());
        Fixture {
            runtime,
            tick,
            port,
        }
    }

    /// Runs `f` with this fixture as a fuzz target.
    pub fn with_target<R>(&self, f: impl FnOnce(&Target<'_>) -> R) -> R {
        let tick = self.tick.clone();
        let raise = move || {
            // Handlers' traps are contained and counted; a raise with the
            // intrinsic installed has a result whatever they do.
            let _ = tick.raise(&mut (3,));
        };
        f(&Target {
            runtime: &self.runtime,
            event: &self.port,
            raise: &raise,
        })
    }
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_path_buf()
}

/// Where failing and in-flight modules are saved: `target/fuzz/`.
pub fn output_directory() -> PathBuf {
    let directory = repo_root().join("target/fuzz");
    std::fs::create_dir_all(&directory).expect("creating target/fuzz");
    directory
}
