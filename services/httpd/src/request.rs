//! The request head: `METHOD PATH HTTP/1.x`, headers, an empty line.

use alloc::{string::String, vec::Vec};

/// Longest request head accepted (Apache's default line limit is 8 KiB).
pub const MAX_HEAD_BYTES: usize = 8192;
/// Longest path accepted.
const MAX_PATH_BYTES: usize = 1024;

/// The methods served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// `GET`.
    Get,
    /// `HEAD`.
    Head,
}

/// A parsed request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Its method.
    pub method: Method,
    /// Its path, decoded and checked (starts with `/`, no `..` segment,
    /// no NUL, no query).
    pub path: String,
}

/// Why a request was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestError {
    /// Not `METHOD PATH HTTP/1.x` with headers and an empty line.
    Malformed,
    /// A method other than `GET` and `HEAD`.
    NotAllowed,
    /// A path longer than the server takes.
    PathTooLong,
    /// A path that leaves the served tree or is not one.
    BadPath,
}

/// Parses the request head in `head` (up to and including the empty
/// line; bytes after it are ignored).
pub fn parse_request(head: &[u8]) -> Result<Request, RequestError> {
    if head.len() > MAX_HEAD_BYTES {
        return Err(RequestError::Malformed);
    }
    let end = head
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .ok_or(RequestError::Malformed)?;
    let text = core::str::from_utf8(&head[..end]).map_err(|_| RequestError::Malformed)?;
    let line = text.lines().next().ok_or(RequestError::Malformed)?;
    let mut words = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(RequestError::Malformed);
    };
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err(RequestError::Malformed);
    }
    let method = match method {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "" => return Err(RequestError::Malformed),
        _ => return Err(RequestError::NotAllowed),
    };
    if target.len() > MAX_PATH_BYTES {
        return Err(RequestError::PathTooLong);
    }
    // The query is not the file's name.
    let target = target.split('?').next().unwrap_or("");
    let path = decode(target)?;
    if !path.starts_with('/') || path.contains('\0') || path.contains('\\') {
        return Err(RequestError::BadPath);
    }
    if path.split('/').any(|segment| segment == "..") {
        return Err(RequestError::BadPath);
    }
    Ok(Request { method, path })
}

/// `%XX` decoding.
fn decode(target: &str) -> Result<String, RequestError> {
    let bytes = target.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = bytes
                .get(index + 1..index + 3)
                .and_then(|pair| core::str::from_utf8(pair).ok())
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or(RequestError::BadPath)?;
            out.push(hex);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).map_err(|_| RequestError::BadPath)
}
