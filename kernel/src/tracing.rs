//! Per-application extensions of the system-call path (paper 002's Unix
//! server offered both):
//! - **tracing**: `trace PID` in the kernel shell loads the
//!   `syscall-tracer` extension for one process. It logs each call with
//!   its arguments and result from an asynchronous handler on
//!   `MachineTrap.SyscallDone`, so the traced program does not wait for
//!   it;
//! - **short-circuits**: a program installs a Wasm module of its own for
//!   one of its own system calls (the application-specific call
//!   [`SHORT_CIRCUIT_SYSCALL`]). From then on that module answers that
//!   call of that process, and the personality leaves it alone.
//!
//! Both are extensions loaded for one process, whose handlers the
//! events' authorizers confine to that process's calls. Both go when the
//! process ends.

use alloc::{collections::BTreeMap, format, string::String, vec::Vec};
use core::sync::atomic::{AtomicUsize, Ordering};

use linux_abi::Errno;
use wasm_runtime::Extension;

/// The tracer the kernel loads for `trace PID`.
pub const TRACER: &str = "syscall-tracer";

/// Spindle's own system call: `short_circuit(module_path, number)`
/// installs the Wasm module at `module_path` (a file of the tree) as the
/// caller's answer to its system call `number`. 0, or `-errno`.
pub const SHORT_CIRCUIT_SYSCALL: u64 = 0x5350_0003;

/// Highest call number a short-circuit may take (Linux's table ends near
/// 460; Spindle's own calls are above it and may not be taken over).
const HIGHEST_NUMBER: u64 = 1023;
/// How long a traced process's end waits for its tracer to write the
/// last lines.
const TRACER_DRAIN_MS: u64 = 200;

/// Tracers, by traced process.
static TRACERS: spin::Mutex<BTreeMap<u64, Extension>> = spin::Mutex::new(BTreeMap::new());
/// Short-circuits, by process and call number.
static SHORT_CIRCUITS: spin::Mutex<BTreeMap<(u64, u64), Extension>> =
    spin::Mutex::new(BTreeMap::new());
/// Short-circuits installed: while none is, the personality's guard does
/// not look (one load).
static SHORT_CIRCUIT_COUNT: AtomicUsize = AtomicUsize::new(0);

/// Starts tracing process `pid`.
pub fn trace(pid: u64) -> Result<(), String> {
    if ::process::get(pid).is_none_or(|process| process.end().is_some()) {
        return Err(format!("no process {pid}"));
    }
    trace_from_the_start(pid)
}

/// Starts tracing process `pid`, which the kernel is about to start (an
/// identifier from `user::new_process`): its first call is traced too.
pub fn trace_from_the_start(pid: u64) -> Result<(), String> {
    if TRACERS.lock().contains_key(&pid) {
        return Err(format!("process {pid} is traced already"));
    }
    let extensions = crate::extensions::get().ok_or("extensions are not available")?;
    let tracer = extensions.load_tracer(TRACER, pid)?;
    crate::syscalls::count_tracer(true);
    TRACERS.lock().insert(pid, tracer);
    Ok(())
}

/// Stops tracing process `pid`, once its tracer has written what it was
/// given.
pub fn untrace(pid: u64) -> Result<(), String> {
    let tracer = take(&TRACERS, &pid).ok_or_else(|| format!("process {pid} is not traced"))?;
    crate::syscalls::count_tracer(false);
    if let Some(worker) = crate::async_worker::worker() {
        worker.wait_until_idle(TRACER_DRAIN_MS);
    }
    let extensions = crate::extensions::get().ok_or("extensions are not available")?;
    extensions.unload_for_process(&tracer)
}

/// The traced processes.
pub fn traced() -> Vec<u64> {
    TRACERS.lock().keys().copied().collect()
}

/// Removes `key` from `map`, giving back an emptied map's root node.
fn take<K: Ord, V>(map: &spin::Mutex<BTreeMap<K, V>>, key: &K) -> Option<V> {
    let mut map = map.lock();
    let value = map.remove(key);
    if map.is_empty() {
        *map = BTreeMap::new();
    }
    value
}

/// Whether call `number` of the process `strand` runs is answered by a
/// short-circuit (the personality's guard then lets it be).
pub fn is_short_circuited(strand: u64, number: u64) -> bool {
    if SHORT_CIRCUIT_COUNT.load(Ordering::Relaxed) == 0 {
        return false;
    }
    linux_process::threads::process_of(strand)
        .is_some_and(|pid| SHORT_CIRCUITS.lock().contains_key(&(pid, number)))
}

/// `short_circuit(module_path, number)` from process `pid`: the module is
/// read from the caller's view of the tree. `EINVAL` for a number no
/// program may take over, `EEXIST` if the call has one already,
/// `ENOEXEC` if the module cannot be loaded or does not export
/// `on_syscall` with the event's signature, and the file's own errors
/// (`ENOENT`, `EACCES`, `EFAULT`, ...).
pub fn short_circuit_syscall(strand: u64, path: u64, number: u64) -> i64 {
    let (Some(pid), Some(personality)) = (
        linux_process::threads::process_of(strand),
        linux_process::personality(),
    ) else {
        return Errno::ESRCH.as_negative();
    };
    if number > HIGHEST_NUMBER {
        return Errno::EINVAL.as_negative();
    }
    if SHORT_CIRCUITS.lock().contains_key(&(pid, number)) {
        return Errno::EEXIST.as_negative();
    }
    let bytes = match linux::user::read_path(path)
        .and_then(|path| personality.read_executable(pid, &path))
    {
        Ok((bytes, _)) => bytes,
        Err(error) => return error.as_negative(),
    };
    let Some(extensions) = crate::extensions::get() else {
        return Errno::ENOEXEC.as_negative();
    };
    let name = format!("short-circuit-{pid}-{number}");
    match extensions.load_short_circuit(&name, &bytes, pid, number) {
        Ok(extension) => {
            SHORT_CIRCUITS.lock().insert((pid, number), extension);
            SHORT_CIRCUIT_COUNT.fetch_add(1, Ordering::Relaxed);
            0
        }
        Err(error) => {
            log::warn!("process {pid}: its short-circuit of call {number} was refused: {error}");
            Errno::ENOEXEC.as_negative()
        }
    }
}

/// Process `pid` ended: its tracer and short-circuits go.
pub fn process_ended(pid: u64) {
    if TRACERS.lock().contains_key(&pid) {
        let _ = untrace(pid);
    }
    if SHORT_CIRCUIT_COUNT.load(Ordering::Relaxed) == 0 {
        return;
    }
    let numbers: Vec<u64> = SHORT_CIRCUITS
        .lock()
        .keys()
        .filter(|(owner, _)| *owner == pid)
        .map(|&(_, number)| number)
        .collect();
    for number in numbers {
        if let Some(extension) = take(&SHORT_CIRCUITS, &(pid, number)) {
            SHORT_CIRCUIT_COUNT.fetch_sub(1, Ordering::Relaxed);
            if let Some(extensions) = crate::extensions::get() {
                let _ = extensions.unload_for_process(&extension);
            }
        }
    }
}
