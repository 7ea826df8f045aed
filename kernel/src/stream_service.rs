//! What extensions get of the kernel's files and connections: the stream
//! service (`services/streams`: TCP connections on the socket stack as
//! `TCP.StreamData` events, each listener served by a kernel thread) and
//! read-only directories of the file tree, granted by name at load.
//!
//! A directory grant is a chroot: paths open beneath it, `..` and
//! symbolic links stop at it, and files are read with the permissions of
//! nobody (uid 65534), so a grant of `/` does not give away what only
//! root may read.

use alloc::{
    format,
    string::{String, ToString},
    sync::Arc,
    vec::Vec,
};
use vfs::{FileType, Inode, PathContext, Vfs, MAY_READ};
use wasm_runtime::{DirectoryAccess, FileAccess, ListenError, Listening, OpenError, StreamService};

/// The user extensions read files as.
const NOBODY: u32 = 65534;

/// The kernel's stream service, once the socket stack is up.
static SERVICE: spin::Once<Arc<Streams>> = spin::Once::new();

/// The stream service as extensions are granted it.
pub struct Streams {
    service: streams::Service,
    /// The ports listened on, for `spindle net`.
    listening: spin::Mutex<Vec<Arc<Served>>>,
}

/// A port served by a thread.
struct Served {
    owner: String,
    listener: streams::Listener,
}

/// What an extension holds for a port: dropping it (the handle dropped,
/// or the extension unloaded) stops the thread.
struct Ticket(Arc<Served>);

impl Listening for Ticket {
    fn port(&self) -> u16 {
        self.0.listener.port()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        // The port is free once the extension's unload (or its drop of
        // the handle) returns; the thread sees the listener closed.
        self.0.listener.close();
    }
}

/// The stream service over the personality's socket stack (`None`
/// without one).
pub fn service() -> Option<Arc<Streams>> {
    if let Some(service) = SERVICE.get() {
        return Some(service.clone());
    }
    let personality = linux_process::personality()?;
    Some(
        SERVICE
            .call_once(|| {
                Arc::new(Streams {
                    service: streams::Service::new(
                        personality.sockets().clone(),
                        hal::timer::uptime_ns,
                    ),
                    listening: spin::Mutex::new(Vec::new()),
                })
            })
            .clone(),
    )
}

impl Streams {
    /// `TCP.StreamData`, to grant to extensions.
    pub fn event_port(&self) -> Arc<dyn wasm_runtime::EventPort> {
        wasm_runtime::port(self.service.event().clone())
    }

    /// A line per port served, for the shell.
    pub fn report(&self) -> Vec<String> {
        self.listening
            .lock()
            .iter()
            .map(|served| {
                let counters = served.listener.counters();
                format!(
                    "TCP port {} served by {}: {} connections, {} raises, {} answered, {} dropped, {} open",
                    served.listener.port(),
                    served.owner,
                    counters.accepted,
                    counters.raised,
                    counters.answered,
                    counters.dropped,
                    served.listener.open_connections()
                )
            })
            .collect()
    }
}

impl StreamService for Streams {
    fn listen(&self, port: u16, owner: &str) -> Result<Arc<dyn Listening>, ListenError> {
        if port == 0 {
            return Err(ListenError::BadPort);
        }
        let listener = self.service.listen(port).map_err(|error| match error {
            sockets::SocketError::AddressInUse => ListenError::PortTaken,
            _ => ListenError::Unavailable,
        })?;
        let served = Arc::new(Served {
            owner: owner.to_string(),
            listener,
        });
        let thread = served.clone();
        let service = SERVICE.get().cloned();
        sched::spawn(&format!("stream:{port}"), move || {
            serve(&thread);
            // Out of the report once stopped; the listener closes with
            // the last reference.
            if let Some(service) = service {
                service
                    .listening
                    .lock()
                    .retain(|served| !Arc::ptr_eq(served, &thread));
            }
        })
        .map_err(|_| ListenError::Unavailable)?;
        self.listening.lock().push(served.clone());
        Ok(Arc::new(Ticket(served)))
    }
}

/// The thread of a port: steps the listener until its ticket is dropped
/// (the listener closed), waiting for the network when nothing moved.
fn serve(served: &Served) {
    let mut round = 0;
    while !served.listener.is_closed() {
        if served.listener.step() {
            round = 0;
        } else {
            let _ = linux::wait_for_the_network(&mut round);
        }
    }
}

/// A directory of the file tree as an extension reads it.
pub struct TreeDirectory {
    vfs: Arc<Vfs>,
    context: PathContext,
    path: String,
}

impl TreeDirectory {
    /// The directory at `path` (absolute), if it is one.
    pub fn open(path: &str) -> Result<TreeDirectory, String> {
        let personality = linux_process::personality().ok_or("no file tree")?;
        let vfs = personality.vfs().clone();
        let root = vfs
            .resolve(&vfs.context(0, 0), path.as_bytes(), true)
            .map_err(|error| format!("{path}: {error}"))?;
        if root.file_type() != FileType::Directory {
            return Err(format!("{path} is not a directory"));
        }
        let context = PathContext {
            root: root.clone(),
            cwd: root,
            uid: NOBODY,
            gid: NOBODY,
            groups: Arc::from(Vec::new()),
            umask: 0o022,
        };
        Ok(TreeDirectory {
            vfs,
            context,
            path: path.to_string(),
        })
    }
}

impl DirectoryAccess for TreeDirectory {
    fn open(&self, path: &str) -> Result<Arc<dyn FileAccess>, OpenError> {
        let relative = path.trim_start_matches('/');
        if relative.is_empty()
            || relative.contains('\0')
            || relative.split('/').any(|segment| segment == "..")
        {
            return Err(OpenError::BadPath);
        }
        let inode = self
            .vfs
            .resolve(&self.context, relative.as_bytes(), true)
            .map_err(|_| OpenError::NotFound)?;
        let metadata = inode.metadata();
        if inode.file_type() != FileType::Regular
            || !Vfs::permitted(&self.context, &metadata, MAY_READ)
        {
            return Err(OpenError::NotFound);
        }
        Ok(Arc::new(TreeFile { inode }))
    }

    fn describe(&self) -> String {
        self.path.clone()
    }
}

/// A regular file of the tree, read-only.
struct TreeFile {
    inode: Arc<dyn Inode>,
}

impl FileAccess for TreeFile {
    fn len(&self) -> u64 {
        self.inode.metadata().size
    }

    fn version(&self) -> u64 {
        file_version(&self.inode.metadata())
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> usize {
        read_fully(self.inode.as_ref(), offset, out)
    }

    fn resident(&self) -> Option<&'static [u8]> {
        self.inode.borrowed_contents()
    }
}

/// A number that changes when a file is written: its size and
/// modification time (a write changes one or the other). What the HTTP
/// servers' caches key on.
pub fn file_version(metadata: &vfs::Metadata) -> u64 {
    metadata.size
        ^ (metadata.mtime.sec as u64).rotate_left(24)
        ^ u64::from(metadata.mtime.nsec).rotate_left(48)
}

/// Reads `inode` from `offset` until `out` is full or the file ends (or
/// fails); how many bytes.
pub fn read_fully(inode: &dyn Inode, offset: u64, out: &mut [u8]) -> usize {
    let mut done = 0;
    while done < out.len() {
        match inode.read_at(offset + done as u64, &mut out[done..]) {
            Ok(0) | Err(_) => break,
            Ok(count) => done += count,
        }
    }
    done
}
