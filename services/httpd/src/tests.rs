//! The server on the host, with files in a map.

extern crate std;

use alloc::{collections::BTreeMap, string::String, sync::Arc, vec, vec::Vec};
use std::sync::Mutex;

use crate::{parse_request, Cache, Contents, Files, Method, RequestError, Server};

#[derive(Default)]
struct MapFiles {
    files: Mutex<BTreeMap<String, (u64, Vec<u8>)>>,
    reads: Mutex<usize>,
}

impl Files for &MapFiles {
    fn version(&self, path: &str) -> Option<u64> {
        self.files
            .lock()
            .unwrap()
            .get(path)
            .map(|(version, _)| *version)
    }
    fn read(&self, path: &str) -> Option<Contents> {
        *self.reads.lock().unwrap() += 1;
        let files = self.files.lock().unwrap();
        files
            .get(path)
            .map(|(_, bytes)| Contents::Shared(Arc::new(bytes.clone())))
    }
}

fn get(server: &Server<&MapFiles>, path: &str) -> (u16, String, Vec<u8>) {
    let request = std::format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
    let response = server.respond(request.as_bytes());
    (
        response.status,
        String::from_utf8(response.head).unwrap(),
        response.body.bytes().to_vec(),
    )
}

#[test]
fn requests_are_parsed_and_unsafe_paths_refused() {
    let request = parse_request(b"GET /a%20b.txt?x=1 HTTP/1.0\r\n\r\n").unwrap();
    assert_eq!(request.method, Method::Get);
    assert_eq!(request.path, "/a b.txt");
    assert_eq!(
        parse_request(b"HEAD / HTTP/1.1\r\nHost: h\r\n\r\n")
            .unwrap()
            .method,
        Method::Head
    );
    for (head, error) in [
        (&b"GET / HTTP/1.1\r\n"[..], RequestError::Malformed),
        (
            b"GET /../etc/passwd HTTP/1.1\r\n\r\n",
            RequestError::BadPath,
        ),
        (b"GET /%2e%2e/x HTTP/1.1\r\n\r\n", RequestError::BadPath),
        (b"GET /a%00 HTTP/1.1\r\n\r\n", RequestError::BadPath),
        (b"GET /%zz HTTP/1.1\r\n\r\n", RequestError::BadPath),
        (b"GET relative HTTP/1.1\r\n\r\n", RequestError::BadPath),
        (b"POST / HTTP/1.1\r\n\r\n", RequestError::NotAllowed),
        (b"GET / HTTP/2\r\n\r\n", RequestError::Malformed),
        (b"GET  / HTTP/1.1\r\n\r\n", RequestError::Malformed),
        (b"\xff\xfe / HTTP/1.1\r\n\r\n", RequestError::Malformed),
    ] {
        assert_eq!(
            parse_request(head),
            Err(error),
            "{:?}",
            String::from_utf8_lossy(head)
        );
    }
    let long = std::format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(2000));
    assert_eq!(
        parse_request(long.as_bytes()),
        Err(RequestError::PathTooLong)
    );
    let huge = vec![b'a'; 10_000];
    assert_eq!(parse_request(&huge), Err(RequestError::Malformed));
}

#[test]
fn files_are_served_with_their_length_and_type_and_cached_until_they_change() {
    let files = MapFiles::default();
    files
        .files
        .lock()
        .unwrap()
        .insert("/index.html".into(), (1, b"<p>hi</p>\n".to_vec()));
    let server = Server::new(&files);
    let (status, head, body) = get(&server, "/");
    assert_eq!(status, 200);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"));
    assert!(head.contains("Content-Length: 10\r\n"));
    assert!(head.contains("Content-Type: text/html\r\n"));
    assert_eq!(body, b"<p>hi</p>\n");
    let _ = get(&server, "/index.html");
    assert_eq!(
        *files.reads.lock().unwrap(),
        1,
        "the second came from the cache"
    );
    assert_eq!(server.cache_stats().hits, 1);
    files
        .files
        .lock()
        .unwrap()
        .insert("/index.html".into(), (2, b"changed\n".to_vec()));
    let (_, _, body) = get(&server, "/index.html");
    assert_eq!(body, b"changed\n", "a new version is read again");
    let (status, _, body) = get(&server, "/missing");
    assert_eq!((status, body), (404, b"404 Not Found\n".to_vec()));
    let head = server.respond(b"HEAD /index.html HTTP/1.1\r\n\r\n");
    assert_eq!(head.status, 200);
    assert!(head.body.bytes().is_empty());
    assert_eq!(server.respond(b"DELETE / HTTP/1.1\r\n\r\n").status, 405);
    assert_eq!(server.respond(b"nonsense").status, 400);
}

#[test]
fn the_cache_keeps_to_its_budget_and_evicts_the_least_recently_used() {
    let mut cache = Cache::new();
    let big = Arc::new(vec![0u8; 200 * 1024]);
    for index in 0..30u64 {
        cache.put(&std::format!("/{index}"), 1, big.clone());
        let _ = cache.get("/0", 1);
    }
    let stats = cache.stats();
    assert!(stats.bytes <= crate::cache::BUDGET_BYTES);
    assert!(cache.get("/0", 1).is_some(), "the one used all along stays");
    assert!(cache.get("/1", 1).is_none(), "an early one went");
    cache.put("/huge", 1, Arc::new(vec![0u8; 300 * 1024]));
    assert!(cache.get("/huge", 1).is_none(), "over the entry limit");
}
