//! The in-kernel HTTP server's logic (SPIN's in-kernel HTTP server, with
//! a cache policy of its own): what to answer to a request, given a way to
//! read files. No sockets and no threads here (the kernel's
//! `http_server` drives it), so it runs on the host's tests as it runs in
//! the kernel.
//!
//! - [`parse_request`]: the request head, checked (method, path, version;
//!   a bounded size), with the path made safe (no `..`, no NUL, `%XX`
//!   decoded);
//! - [`Server::respond`]: `GET` and `HEAD` of files (`/` is
//!   `/index.html`), `404`, `400`, `405`, `414`, with a content type by
//!   extension and `Connection: close`;
//! - [`Cache`]: the server's own cache: files up to 256 KiB, 4 MiB in all,
//!   least recently used out first, an entry dropped when its file's
//!   version changes. Files the kernel holds in memory already (the boot
//!   archive's) are served from there, never copied into the cache.
#![cfg_attr(not(test), no_std)]

extern crate alloc;

mod cache;
mod request;

#[cfg(test)]
mod tests;

use alloc::{format, string::String, sync::Arc, vec::Vec};

pub use cache::{Cache, CacheStats};
pub use request::{parse_request, Method, Request, RequestError, MAX_HEAD_BYTES};

/// A file's bytes as the file system has them.
#[derive(Clone)]
pub enum Contents {
    /// Bytes the kernel keeps in memory for as long as it runs (the boot
    /// archive's files): served from there.
    Static(&'static [u8]),
    /// Bytes read for this request (or from the cache).
    Shared(Arc<Vec<u8>>),
}

impl Contents {
    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Contents::Static(bytes) => bytes,
            Contents::Shared(bytes) => bytes,
        }
    }
}

/// What the server reads files through.
pub trait Files {
    /// The version of the file at `path` (changes when it is written:
    /// e.g. size and modification time), `None` if there is no such
    /// regular file.
    fn version(&self, path: &str) -> Option<u64>;
    /// The file's contents.
    fn read(&self, path: &str) -> Option<Contents>;
}

/// An answer: the head, then the body (kept apart so that a file the
/// kernel holds is sent from where it is).
pub struct Response {
    /// Status line and headers, ending with the empty line.
    pub head: Vec<u8>,
    /// The body (empty for `HEAD` and errors without one).
    pub body: Contents,
    /// The status code.
    pub status: u16,
}

/// The server: a cache in front of a file source.
pub struct Server<F: Files> {
    files: F,
    cache: spin::Mutex<Cache>,
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        414 => "URI Too Long",
        _ => "Internal Server Error",
    }
}

/// The content type of a path, by its extension.
pub fn content_type(path: &str) -> &'static str {
    let extension = path.rsplit_once('.').map_or("", |(_, extension)| extension);
    match extension {
        "html" | "htm" => "text/html",
        "txt" | "c" | "h" | "rs" | "md" => "text/plain",
        "css" => "text/css",
        "js" => "text/javascript",
        "json" => "application/json",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "wasm" => "application/wasm",
        _ => "application/octet-stream",
    }
}

impl<F: Files> Server<F> {
    /// A server reading through `files`.
    pub fn new(files: F) -> Self {
        Server {
            files,
            cache: spin::Mutex::new(Cache::new()),
        }
    }

    /// The cache's counters.
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.lock().stats()
    }

    /// The answer to the request head `head`.
    pub fn respond(&self, head: &[u8]) -> Response {
        let request = match parse_request(head) {
            Ok(request) => request,
            Err(refused) => return refusal(refused),
        };
        let path = file_path(&request);
        let Some(version) = self.files.version(path) else {
            return error(404);
        };
        let body = match self.lookup(path, version) {
            Some(body) => body,
            None => return error(404),
        };
        Response {
            head: ok_head(path, body.bytes().len()),
            body: if request.method == Method::Head {
                Contents::Static(&[])
            } else {
                body
            },
            status: 200,
        }
    }

    fn lookup(&self, path: &str, version: u64) -> Option<Contents> {
        if let Some(hit) = self.cache.lock().get(path, version) {
            return Some(Contents::Shared(hit));
        }
        let contents = self.files.read(path)?;
        if let Contents::Shared(bytes) = &contents {
            self.cache.lock().put(path, version, bytes.clone());
        }
        Some(contents)
    }
}

/// The file a request names (`/` is `/index.html`).
pub fn file_path(request: &Request) -> &str {
    if request.path == "/" {
        "/index.html"
    } else {
        &request.path
    }
}

/// The head of a `200` answer carrying the `len` bytes of the file at
/// `path`.
pub fn ok_head(path: &str, len: usize) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nServer: spindle\r\nContent-Type: {}\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n",
        content_type(path),
    )
    .into_bytes()
}

/// The answer to a request refused by [`parse_request`].
pub fn refusal(refused: RequestError) -> Response {
    match refused {
        RequestError::PathTooLong => error(414),
        RequestError::NotAllowed => error(405),
        RequestError::Malformed | RequestError::BadPath => error(400),
    }
}

/// An error answer with a one-line body.
pub fn error(status: u16) -> Response {
    let text = reason(status);
    let body = format!("{status} {text}\n");
    let head = format!(
        "HTTP/1.1 {status} {text}\r\nServer: spindle\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    Response {
        head: head.into_bytes(),
        body: Contents::Shared(Arc::new(String::into_bytes(body))),
        status,
    }
}
