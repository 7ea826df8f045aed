//! The Rust SDK for Spindle extensions.
//!
//! An extension is a `cdylib` built for `wasm32-unknown-unknown`. It
//! imports kernel procedures from the module `"spindle"`; their bindings in
//! [`raw`] are generated from the one import table, `spindle_abi`'s
//! `for_each_import!`, so they cannot drift from what the kernel
//! implements. The rest of this crate wraps them in types:
//! [`log`]/[`log!`], [`Event`], [`Binding`], [`Mode`], [`now_ns`].
//!
//! Conventions the kernel follows: an export `init` (type `() -> ()`) runs
//! once after loading; handlers and guards are exported functions whose
//! parameters are the event's (by value) and whose result is the event's
//! result (a guard returns `i32`, non-zero for true) — see
//! [`export_handler!`] for the attribute boilerplate.
#![no_std]

use core::fmt;

pub use spindle_abi::{FaultKind, HandleKind, Status};

/// The kernel procedures, exactly as the import table declares them.
pub mod raw {
    macro_rules! declare {
        (
            $module:literal;
            $(
                $(#[doc = $doc:literal])*
                $variant:ident = $purity:ident fn $name:ident($($param:ident: $ty:ident),* $(,)?) $(-> $result:ident)?;
            )*
        ) => {
            #[link(wasm_import_module = $module)]
            extern "C" {
                $( $(#[doc = $doc])* pub fn $name($($param: $ty),*) $(-> $result)?; )*
            }
        };
    }
    spindle_abi::for_each_import!(declare);
}

/// Writes `message` to the kernel console.
pub fn log(message: &str) {
    // SAFETY: the kernel reads `message.len()` bytes at `message.as_ptr()`,
    // a live borrow, and checks the range against linear memory itself.
    unsafe {
        raw::log(message.as_ptr() as i32, message.len() as i32);
    }
}

/// A fixed buffer for formatted log lines (extensions need no allocator).
pub struct LineBuffer {
    bytes: [u8; 256],
    len: usize,
}

impl LineBuffer {
    /// An empty line.
    pub const fn new() -> Self {
        LineBuffer {
            bytes: [0; 256],
            len: 0,
        }
    }

    /// The text so far (cut at the buffer's end).
    pub fn as_str(&self) -> &str {
        // Only whole `&str`s are copied in, cut at a char boundary.
        core::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl Default for LineBuffer {
    fn default() -> Self {
        LineBuffer::new()
    }
}

impl fmt::Write for LineBuffer {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        let room = self.bytes.len() - self.len;
        let mut take = text.len().min(room);
        while !text.is_char_boundary(take) {
            take -= 1;
        }
        self.bytes[self.len..self.len + take].copy_from_slice(&text.as_bytes()[..take]);
        self.len += take;
        Ok(())
    }
}

/// `log!("x = {}", x)`: formats into a 256-byte line and logs it.
#[macro_export]
macro_rules! log {
    ($($arg:tt)*) => {{
        let mut line = $crate::LineBuffer::new();
        let _ = core::fmt::Write::write_fmt(&mut line, format_args!($($arg)*));
        $crate::log(line.as_str());
    }};
}

/// Does nothing in the kernel: the cost of a Wasm-to-kernel call.
pub fn null_call() {
    // SAFETY: no arguments, no effects.
    unsafe { raw::null_call() }
}

/// Nanoseconds since boot.
pub fn now_ns() -> u64 {
    // SAFETY: no arguments.
    unsafe { raw::timer_now_ns() as u64 }
}

fn status(code: i32) -> Result<i32, Status> {
    if code >= 0 {
        Ok(code)
    } else {
        Err(Status::from_code(code).unwrap_or(Status::Invalid))
    }
}

/// How an installed handler runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// To completion, within the extension's fuel limit.
    Synchronous,
    /// Aborted after `fuel` units of work.
    Ephemeral {
        /// The budget.
        fuel: u64,
    },
}

/// An event the extension was granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event(i32);

/// One of the extension's installations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding(i32);

impl Event {
    /// The event granted under `name` (usually the event's own name, e.g.
    /// `"Timer.Tick"`).
    pub fn find(name: &str) -> Option<Event> {
        // SAFETY: a live borrow, checked by the kernel.
        let handle = unsafe { raw::handle_find(name.as_ptr() as i32, name.len() as i32) };
        (handle >= 0).then_some(Event(handle))
    }

    /// The raw handle.
    pub fn handle(self) -> i32 {
        self.0
    }

    /// Installs the export `handler` (optionally guarded by the export
    /// `guard`, which the kernel verifies is side-effect free).
    pub fn install(
        self,
        handler: &str,
        guard: Option<&str>,
        mode: Mode,
    ) -> Result<Binding, Status> {
        let (guard_ptr, guard_len) = guard.map_or((0, 0), |g| (g.as_ptr() as i32, g.len() as i32));
        let (mode, fuel) = match mode {
            Mode::Synchronous => (spindle_abi::InstallMode::Synchronous, 0),
            Mode::Ephemeral { fuel } => (spindle_abi::InstallMode::Ephemeral, fuel),
        };
        // SAFETY: live borrows, checked by the kernel.
        let code = unsafe {
            raw::install(
                self.0,
                handler.as_ptr() as i32,
                handler.len() as i32,
                guard_ptr,
                guard_len,
                mode as i32,
                fuel as i64,
            )
        };
        status(code).map(Binding)
    }

    /// Raises the event with `args` (one 64-bit slot per parameter);
    /// returns the result slot (0 for events without a result).
    pub fn raise(self, args: &[u64]) -> Result<u64, Status> {
        let mut result = 0u64;
        // SAFETY: `args` and `result` are live; the kernel checks ranges.
        let code = unsafe {
            raw::raise(
                self.0,
                args.as_ptr() as i32,
                args.len() as i32,
                &mut result as *mut u64 as i32,
            )
        };
        status(code).map(|_| result)
    }
}

impl Binding {
    /// Removes the installation.
    pub fn remove(self) -> Result<(), Status> {
        // SAFETY: a plain integer argument.
        status(unsafe { raw::remove(self.0) }).map(drop)
    }

    /// The raw handle.
    pub fn handle(self) -> i32 {
        self.0
    }

    /// Guards the installation declaratively: its handler runs only when
    /// parameter `param` of the event equals `value` (a server's port,
    /// say); the dispatcher indexes such guards.
    pub fn guard_equals(self, param: u32, value: u64) -> Result<(), Status> {
        // SAFETY: plain integer arguments.
        status(unsafe { raw::guard_equals(self.0, param as i32, value as i64) }).map(drop)
    }
}

/// A packet lent to a handler of a network event (its first parameter),
/// valid for that invocation only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet(pub i32);

impl Packet {
    /// Its length, as its event's layer sees it (UDP: the data).
    pub fn len(self) -> usize {
        // SAFETY: a plain integer argument (a bad handle traps).
        unsafe { raw::packet_length(self.0) }.max(0) as usize
    }

    /// Whether it is empty.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// Copies bytes from `offset` into `buffer`; how many.
    pub fn read(self, offset: usize, buffer: &mut [u8]) -> usize {
        // SAFETY: the kernel writes at most `buffer.len()` bytes into the
        // live buffer, checking the range against linear memory itself.
        let count = unsafe {
            raw::packet_read(
                self.0,
                offset as i32,
                buffer.as_mut_ptr() as i32,
                buffer.len() as i32,
            )
        };
        count.max(0) as usize
    }

    /// Answers it at its layer (UDP: `data` back to where it came from).
    pub fn reply(self, data: &[u8]) -> Result<(), Status> {
        // SAFETY: the kernel reads `data.len()` bytes of a live borrow.
        status(unsafe { raw::packet_reply(self.0, data.as_ptr() as i32, data.len() as i32) })
            .map(drop)
    }
}

impl Packet {
    /// Answers it with `len` bytes of `file` from `offset` (a stream: sent
    /// from where the kernel keeps the file, never through this module's
    /// memory).
    pub fn reply_file(self, file: File, offset: u64, len: u64) -> Result<(), Status> {
        // SAFETY: plain integer arguments (bad handles trap).
        status(unsafe { raw::packet_reply_file(self.0, file.0, offset as i64, len as i64) })
            .map(drop)
    }
}

/// Finds a granted capability's handle by name.
fn find_handle(name: &str) -> Option<i32> {
    // SAFETY: a live borrow, checked by the kernel.
    let handle = unsafe { raw::handle_find(name.as_ptr() as i32, name.len() as i32) };
    (handle >= 0).then_some(handle)
}

/// The stream service (granted as `streams`): listening on TCP ports.
/// The data of each accepted connection raises `TCP.StreamData(stream,
/// local port, remote address, remote port)`, the stream lent as a
/// [`Packet`]: [`Packet::read`] reads what arrived, [`Packet::reply`] and
/// [`Packet::reply_file`] append to what goes back, and the handler's
/// result (non-zero) says the answer is complete: the connection is closed
/// once it is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Streams(i32);

/// A port listened on; [`Listener::close`] (or unloading) stops it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Listener(i32);

impl Streams {
    /// The stream service, if the extension was granted it.
    pub fn find() -> Option<Streams> {
        find_handle("streams").map(Streams)
    }

    /// Accepts connections on `port`.
    pub fn listen(self, port: u16) -> Result<Listener, Status> {
        // SAFETY: plain integer arguments.
        status(unsafe { raw::stream_listen(self.0, i32::from(port)) }).map(Listener)
    }
}

impl Listener {
    /// Stops listening.
    pub fn close(self) {
        // SAFETY: a plain integer argument.
        unsafe { raw::handle_drop(self.0) };
    }
}

/// A directory of the kernel's file tree the extension may read beneath
/// (granted as `files`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Directory(i32);

/// A file opened read-only; [`File::close`] gives the handle back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct File(i32);

impl Directory {
    /// The directory granted as `files`, if any.
    pub fn find() -> Option<Directory> {
        find_handle("files").map(Directory)
    }

    /// Opens the regular file at `path` beneath it (no `..`).
    pub fn open(self, path: &str) -> Result<File, Status> {
        // SAFETY: a live borrow, checked by the kernel.
        status(unsafe { raw::file_open(self.0, path.as_ptr() as i32, path.len() as i32) })
            .map(File)
    }
}

impl File {
    /// Its length in bytes.
    pub fn len(self) -> u64 {
        // SAFETY: a plain integer argument (a bad handle traps).
        unsafe { raw::file_length(self.0) }.max(0) as u64
    }

    /// Whether it is empty.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// A number that changes when the file is written.
    pub fn version(self) -> u64 {
        // SAFETY: a plain integer argument (a bad handle traps).
        unsafe { raw::file_version(self.0) as u64 }
    }

    /// Copies bytes from `offset` into `buffer`; how many (0 at the end).
    pub fn read(self, offset: u64, buffer: &mut [u8]) -> usize {
        // SAFETY: the kernel writes at most `buffer.len()` bytes into the
        // live buffer, checking the range against linear memory itself.
        let count = unsafe {
            raw::file_read(
                self.0,
                offset as i64,
                buffer.as_mut_ptr() as i32,
                buffer.len() as i32,
            )
        };
        count.max(0) as usize
    }

    /// Gives the handle back.
    pub fn close(self) {
        // SAFETY: a plain integer argument.
        unsafe { raw::handle_drop(self.0) };
    }
}

/// Exports a function under its own name with the C ABI:
/// `export_handler! { fn on_tick(ticks: u64) { ... } }`.
#[macro_export]
macro_rules! export_handler {
    ($(fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $result:ty)? $body:block)*) => {$(
        #[no_mangle]
        pub extern "C" fn $name($($arg: $ty),*) $(-> $result)? $body
    )*};
}

#[cfg(feature = "panic-handler")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}
