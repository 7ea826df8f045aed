//! Which `AF_UNIX` socket a name stands for: the registry `bind` fills
//! and `connect` and `sendto` look in. Two namespaces, as in Linux:
//!
//! - paths: `bind` makes a socket node (`S_IFSOCK`) in the file tree,
//!   and the registry maps that node (its device and inode numbers) to
//!   the socket, so a path reaches the socket only while its node is
//!   there (an `unlink` cuts the name off; a new socket node made at the
//!   same path is another node);
//! - abstract names (a leading NUL): no node, the registry alone;
//!   `bind` of an unnamed address picks a free one (`autobind`: five hex
//!   digits, as Linux's `unix_autobind`).
//!
//! Entries hold the socket weakly: a socket that is gone is gone from
//! the registry even before it removes its entries itself (at its close). The registry is
//! generic over what it names, so it is host-tested on its own.

use alloc::{collections::BTreeMap, format, sync::Arc, sync::Weak, vec::Vec};

use vfs::Errno;

/// A bound socket node: its file system's device number and its inode
/// number.
pub type NodeKey = (u64, u64);

/// How many automatic names there are (`0x00000` to `0xfffff`).
const AUTOBIND_NAMES: u32 = 1 << 20;

/// The names of one personality's `AF_UNIX` sockets.
pub struct Registry<T> {
    names: spin::Mutex<Names<T>>,
}

/// The registry's maps, under its lock.
struct Names<T> {
    nodes: BTreeMap<NodeKey, Weak<T>>,
    abstract_names: BTreeMap<Vec<u8>, Weak<T>>,
    /// Where the search for a free automatic name starts next.
    next_automatic: u32,
}

impl<T> Default for Registry<T> {
    fn default() -> Self {
        Registry {
            names: spin::Mutex::new(Names {
                nodes: BTreeMap::new(),
                abstract_names: BTreeMap::new(),
                next_automatic: 0,
            }),
        }
    }
}

impl<T> Registry<T> {
    /// Names `socket` by the socket node `node` (just made by `bind`, so
    /// any entry for it is a closed socket's).
    pub fn bind_node(&self, node: NodeKey, socket: &Arc<T>) {
        self.names.lock().nodes.insert(node, Arc::downgrade(socket));
    }

    /// Names `socket` by abstract name `name`: `EADDRINUSE` if a live
    /// socket has it.
    pub fn bind_abstract(&self, name: &[u8], socket: &Arc<T>) -> Result<(), Errno> {
        let mut names = self.names.lock();
        if is_live(names.abstract_names.get(name)) {
            return Err(Errno::EADDRINUSE);
        }
        names
            .abstract_names
            .insert(name.to_vec(), Arc::downgrade(socket));
        Ok(())
    }

    /// Names `socket` by a free automatic abstract name, and returns the
    /// name; `ENOSPC` when all are taken (as Linux's `unix_autobind`).
    pub fn bind_automatic(&self, socket: &Arc<T>) -> Result<Vec<u8>, Errno> {
        let mut names = self.names.lock();
        for _ in 0..AUTOBIND_NAMES {
            let number = names.next_automatic;
            names.next_automatic = (number + 1) % AUTOBIND_NAMES;
            let name = format!("{number:05x}").into_bytes();
            if !is_live(names.abstract_names.get(&name)) {
                names
                    .abstract_names
                    .insert(name.clone(), Arc::downgrade(socket));
                return Ok(name);
            }
        }
        Err(Errno::ENOSPC)
    }

    /// The live socket bound to node `node`.
    pub fn find_node(&self, node: NodeKey) -> Option<Arc<T>> {
        self.names.lock().nodes.get(&node).and_then(Weak::upgrade)
    }

    /// The live socket bound to abstract name `name`.
    pub fn find_abstract(&self, name: &[u8]) -> Option<Arc<T>> {
        self.names
            .lock()
            .abstract_names
            .get(name)
            .and_then(Weak::upgrade)
    }

    /// Forgets node `node` if it names `socket` (which closed) or a
    /// socket already gone.
    pub fn release_node(&self, node: NodeKey, socket: &T) {
        let mut names = self.names.lock();
        if names
            .nodes
            .get(&node)
            .is_some_and(|entry| names_or_dead(entry, socket))
        {
            names.nodes.remove(&node);
        }
    }

    /// Forgets abstract name `name` if it names `socket` (which closed)
    /// or a socket already gone.
    pub fn release_abstract(&self, name: &[u8], socket: &T) {
        let mut names = self.names.lock();
        let entry = names.abstract_names.get(name);
        if entry.is_some_and(|entry| names_or_dead(entry, socket)) {
            names.abstract_names.remove(name);
        }
    }

    /// How many names are held (live or not yet released).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        let names = self.names.lock();
        names.nodes.len() + names.abstract_names.len()
    }

    /// Whether no name is held.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Whether `entry` names `socket`, or a socket that is gone.
fn names_or_dead<T>(entry: &Weak<T>, socket: &T) -> bool {
    core::ptr::eq(entry.as_ptr(), socket) || entry.strong_count() == 0
}

/// Whether `entry` names a socket that is still open.
fn is_live<T>(entry: Option<&Weak<T>>) -> bool {
    entry.is_some_and(|weak| weak.strong_count() > 0)
}
