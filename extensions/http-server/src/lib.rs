//! SPIN's in-kernel HTTP server, as a Wasm extension: it listens on TCP
//! port 8080 through the stream service it is granted (`streams`) and
//! installs `on_stream` on `TCP.StreamData`, guarded declaratively on that
//! port; it serves `GET` and `HEAD` of the regular files beneath the
//! directory it is granted (`files`, `spindle ext load http-server
//! files=/www`), `/` being `/index.html`.
//!
//! Request parsing and the answers' heads are the kernel server's
//! (`services/httpd`); the cache policy is the extension's own: files up
//! to 16 KiB are kept in its linear memory (512 KiB in all, least recently
//! used out first, an entry trusted while its file's version holds), and
//! larger ones are sent by the kernel straight from the file
//! (`packet_reply_file`), never copied through this module.
#![no_std]

extern crate alloc;

use alloc::sync::Arc;

use httpd::{Cache, Method};
use spindle_sdk::{Directory, Event, Mode, Packet, Streams};

#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

/// The port served.
const PORT: u16 = 8080;
/// `TCP.StreamData(stream, local port, remote address, remote port)`: the
/// parameter holding the local port.
const LOCAL_PORT: u32 = 1;
/// What `on_stream` returns (the stream service's `Next`).
const MORE_DATA: i32 = 0;
/// See [`MORE_DATA`].
const CLOSE: i32 = 1;
/// Largest file kept in the cache, and the cache's budget.
const CACHED_FILE_BYTES: usize = 16 << 10;
/// See [`CACHED_FILE_BYTES`].
const CACHE_BYTES: usize = 512 << 10;

struct Server {
    files: Directory,
    cache: Cache,
    requests: u64,
    not_found: u64,
}

static SERVER: spin::Mutex<Option<Server>> = spin::Mutex::new(None);

#[no_mangle]
pub extern "C" fn init() {
    let Some(files) = Directory::find() else {
        spindle_sdk::log("http-server: no directory granted (load with files=DIRECTORY)");
        return;
    };
    let (Some(streams), Some(event)) = (Streams::find(), Event::find("TCP.StreamData")) else {
        spindle_sdk::log("http-server: no stream service (no socket stack)");
        return;
    };
    if let Err(status) = streams.listen(PORT) {
        spindle_sdk::log!(
            "http-server: cannot listen on port {} (status {})",
            PORT,
            status.code()
        );
        return;
    }
    let installed = event
        .install("on_stream", None, Mode::Synchronous)
        .and_then(|binding| binding.guard_equals(LOCAL_PORT, u64::from(PORT)));
    if let Err(status) = installed {
        spindle_sdk::log!(
            "http-server: cannot handle TCP.StreamData (status {})",
            status.code()
        );
        return;
    }
    *SERVER.lock() = Some(Server {
        files,
        cache: Cache::with_limits(CACHED_FILE_BYTES, CACHE_BYTES),
        requests: 0,
        not_found: 0,
    });
    spindle_sdk::log!("http-server: serving HTTP on TCP port {}", PORT);
}

/// The handler: a request head complete (or too long) is answered and the
/// connection closed; an incomplete one waits for more data.
#[no_mangle]
pub extern "C" fn on_stream(stream: i32, _local_port: i32, _address: i32, _port: i32) -> i32 {
    let stream = Packet(stream);
    let mut head = alloc::vec![0; stream.len().min(httpd::MAX_HEAD_BYTES + 1)];
    let len = stream.read(0, &mut head);
    head.truncate(len);
    let complete = head.windows(4).any(|window| window == b"\r\n\r\n");
    if !complete && head.len() <= httpd::MAX_HEAD_BYTES {
        return MORE_DATA;
    }
    let mut server = lock_server();
    let Some(server) = server.as_mut() else {
        return CLOSE;
    };
    server.requests += 1;
    answer(server, stream, &head);
    CLOSE
}

fn answer(server: &mut Server, stream: Packet, head: &[u8]) {
    let request = match httpd::parse_request(head) {
        Ok(request) => request,
        Err(refused) => return send(stream, &httpd::refusal(refused)),
    };
    let path = httpd::file_path(&request);
    let Ok(file) = server.files.open(path) else {
        server.not_found += 1;
        return send(stream, &httpd::error(404));
    };
    let (len, version) = (file.len() as usize, file.version());
    let _ = stream.reply(&httpd::ok_head(path, len));
    if request.method == Method::Get {
        if let Some(bytes) = server.cache.get(path, version) {
            let _ = stream.reply(&bytes);
        } else if server.cache.takes(len) {
            let mut bytes = alloc::vec![0; len];
            let read = file.read(0, &mut bytes);
            bytes.truncate(read);
            let _ = stream.reply(&bytes);
            server.cache.put(path, version, Arc::new(bytes));
        } else {
            let _ = stream.reply_file(file, 0, len as u64);
        }
    }
    file.close();
}

/// The server's state. Invocations of one instance never overlap, so the
/// lock is free unless an earlier invocation trapped while holding it
/// (its memory stays as the trap left it): then it is taken back and the
/// cache, perhaps half updated, started afresh.
fn lock_server() -> spin::MutexGuard<'static, Option<Server>> {
    if let Some(guard) = SERVER.try_lock() {
        return guard;
    }
    // SAFETY: nobody holds the lock: the invocation that took it ended
    // in a trap, and no other runs beside this one.
    unsafe { SERVER.force_unlock() };
    let mut guard = SERVER.lock();
    if let Some(server) = guard.as_mut() {
        server.cache = Cache::with_limits(CACHED_FILE_BYTES, CACHE_BYTES);
    }
    guard
}

fn send(stream: Packet, response: &httpd::Response) {
    let _ = stream.reply(&response.head);
    let _ = stream.reply(response.body.bytes());
}

/// Requests answered so far.
#[no_mangle]
pub extern "C" fn requests() -> u64 {
    lock_server().as_ref().map_or(0, |server| server.requests)
}

/// Requests answered from the cache.
#[no_mangle]
pub extern "C" fn cache_hits() -> u64 {
    lock_server()
        .as_ref()
        .map_or(0, |server| server.cache.stats().hits)
}

/// Requests for files that are not there (or not readable).
#[no_mangle]
pub extern "C" fn not_found() -> u64 {
    lock_server().as_ref().map_or(0, |server| server.not_found)
}
