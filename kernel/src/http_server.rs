//! The in-kernel HTTP server (SPIN's in-kernel web server): a kernel
//! thread serving files of the file tree (`services/httpd` decides what to
//! answer, with its own cache) over the sockets of the kernel's stack, on
//! the network interface and on loopback alike. Files of the boot archive
//! are sent from where the kernel keeps them, without a copy into the
//! server.
//!
//! `spindle http start [PORT] [ROOT]` starts it (port 80, root `/www`),
//! `spindle http stop` stops it, `spindle http` reports.

use alloc::{format, string::String, sync::Arc, vec::Vec};
use core::{
    net::{Ipv4Addr, SocketAddrV4},
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
};

use httpd::{Contents, Files, Server};
use sockets::{Kind, Shutdown, Socket, SocketError};
use vfs::{FileType, Vfs};

/// Pending connections the listener keeps.
const BACKLOG: usize = 16;
/// Largest file served (a bigger one is `404`, not a kernel allocation of
/// any size a client asks for).
const MAX_FILE_BYTES: u64 = 64 << 20;
/// How long a connection may take to send its request, in waits of about
/// a millisecond.
const REQUEST_WAITS: u32 = 5000;

/// Files under a root of the kernel's file tree.
struct TreeFiles {
    vfs: Arc<Vfs>,
    root: String,
}

impl TreeFiles {
    fn inode(&self, path: &str) -> Option<Arc<dyn vfs::Inode>> {
        let full = format!("{}{}", self.root.trim_end_matches('/'), path);
        let context = self.vfs.context(0, 0);
        let inode = self.vfs.resolve(&context, full.as_bytes(), true).ok()?;
        (inode.file_type() == FileType::Regular).then_some(inode)
    }
}

impl Files for TreeFiles {
    fn version(&self, path: &str) -> Option<u64> {
        let metadata = self.inode(path)?.metadata();
        if metadata.size > MAX_FILE_BYTES {
            return None;
        }
        Some(crate::stream_service::file_version(&metadata))
    }

    fn read(&self, path: &str) -> Option<Contents> {
        let inode = self.inode(path)?;
        if let Some(bytes) = inode.borrowed_contents() {
            return Some(Contents::Static(bytes));
        }
        let size = inode.metadata().size.min(MAX_FILE_BYTES) as usize;
        let mut bytes = alloc::vec![0; size];
        let done = crate::stream_service::read_fully(inode.as_ref(), 0, &mut bytes);
        bytes.truncate(done);
        Some(Contents::Shared(Arc::new(bytes)))
    }
}

/// The running server.
struct Running {
    port: u16,
    root: String,
    stop: AtomicBool,
    requests: AtomicU64,
    server: Server<TreeFiles>,
}

static RUNNING: spin::Mutex<Option<Arc<Running>>> = spin::Mutex::new(None);

/// Starts serving `root` on `port` (all addresses).
pub fn start(port: u16, root: &str) -> Result<(), String> {
    let mut running = RUNNING.lock();
    if let Some(server) = running.as_ref() {
        return Err(format!(
            "the server runs already (port {}, {})",
            server.port, server.root
        ));
    }
    let personality = linux_process::personality().ok_or("no socket stack")?;
    let listener = Socket::new(personality.sockets().clone(), Kind::Stream);
    listener
        .bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port))
        .and_then(|()| listener.listen(BACKLOG))
        .map_err(|error| format!("cannot listen on port {port}: {error}"))?;
    let server = Arc::new(Running {
        port,
        root: root.into(),
        stop: AtomicBool::new(false),
        requests: AtomicU64::new(0),
        server: Server::new(TreeFiles {
            vfs: personality.vfs().clone(),
            root: root.into(),
        }),
    });
    let serving = server.clone();
    sched::spawn("httpd", move || serve(listener, &serving))
        .map_err(|_| String::from("no memory for the server's thread"))?;
    *running = Some(server);
    Ok(())
}

/// Stops the server; how many requests it answered.
pub fn stop() -> Result<u64, String> {
    let server = RUNNING.lock().take().ok_or("the server is not running")?;
    server.stop.store(true, Ordering::Release);
    Ok(server.requests.load(Ordering::Relaxed))
}

/// One line about the server, for the shell.
pub fn report() -> String {
    match RUNNING.lock().as_ref() {
        Some(server) => {
            let cache = server.server.cache_stats();
            format!(
                "serving {} on port {}: {} requests, cache {} hits, {} misses, {} bytes",
                server.root,
                server.port,
                server.requests.load(Ordering::Relaxed),
                cache.hits,
                cache.misses,
                cache.bytes
            )
        }
        None => String::from("the HTTP server is not running"),
    }
}

/// The thread: accepts connections one after the other until stopped.
fn serve(listener: Socket, running: &Running) {
    let mut round = 0;
    while !running.stop.load(Ordering::Acquire) {
        match listener.accept() {
            Ok((connection, _)) => {
                round = 0;
                if answer(&connection, &running.server).is_ok() {
                    running.requests.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(SocketError::WouldBlock) => {
                let _ = linux::wait_for_the_network(&mut round);
            }
            Err(error) => {
                log::warn!("httpd: accept: {error}");
                return;
            }
        }
    }
}

/// Reads one request on `connection` and answers it.
fn answer(connection: &Socket, server: &Server<TreeFiles>) -> Result<(), SocketError> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 2048];
    let mut round = 0;
    let mut waits = 0;
    while !head.windows(4).any(|window| window == b"\r\n\r\n") {
        if head.len() > httpd::MAX_HEAD_BYTES {
            break;
        }
        match connection.receive(&mut buffer, false) {
            Ok((0, _, _)) => break,
            Ok((count, _, _)) => head.extend_from_slice(&buffer[..count]),
            Err(SocketError::WouldBlock) if waits < REQUEST_WAITS => {
                waits += 1;
                let _ = linux::wait_for_the_network(&mut round);
            }
            Err(error) => return Err(error),
        }
    }
    let response = server.respond(&head);
    send_all(connection, &response.head)?;
    send_all(connection, response.body.bytes())?;
    connection.shutdown(Shutdown::Write)
}

fn send_all(connection: &Socket, mut data: &[u8]) -> Result<(), SocketError> {
    let mut round = 0;
    while !data.is_empty() {
        match connection.send(data, None) {
            Ok(count) => {
                data = &data[count..];
                round = 0;
            }
            Err(SocketError::WouldBlock) => {
                let _ = linux::wait_for_the_network(&mut round);
            }
            Err(error) => return Err(error),
        }
    }
    Ok(())
}
