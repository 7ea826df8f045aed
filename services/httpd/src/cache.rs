//! The server's own cache policy (SPIN's HTTP server chose its caching
//! instead of the file system's): small files only, a total budget, least
//! recently used out first, and an entry trusted only while its file's
//! version is unchanged.

use alloc::{collections::BTreeMap, string::String, sync::Arc, vec::Vec};

/// Largest file the kernel's server caches.
pub const MAX_ENTRY_BYTES: usize = 256 * 1024;
/// Bytes the kernel's server caches at most.
pub const BUDGET_BYTES: usize = 4 << 20;

struct Entry {
    version: u64,
    bytes: Arc<Vec<u8>>,
    last_used: u64,
}

/// Counters of the cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Requests answered from the cache.
    pub hits: u64,
    /// Requests that read the file.
    pub misses: u64,
    /// Entries dropped for room or because their file changed.
    pub evictions: u64,
    /// Bytes held.
    pub bytes: usize,
}

/// The cache.
pub struct Cache {
    max_entry_bytes: usize,
    budget_bytes: usize,
    entries: BTreeMap<String, Entry>,
    clock: u64,
    stats: CacheStats,
}

impl Default for Cache {
    fn default() -> Self {
        Cache::new()
    }
}

impl Cache {
    /// An empty cache with the kernel server's limits
    /// ([`MAX_ENTRY_BYTES`], [`BUDGET_BYTES`]).
    pub fn new() -> Self {
        Cache::with_limits(MAX_ENTRY_BYTES, BUDGET_BYTES)
    }

    /// An empty cache keeping files up to `max_entry_bytes`, at most
    /// `budget_bytes` in all (a server in an extension's linear memory
    /// has less room than the kernel's).
    pub fn with_limits(max_entry_bytes: usize, budget_bytes: usize) -> Self {
        Cache {
            max_entry_bytes,
            budget_bytes,
            entries: BTreeMap::new(),
            clock: 0,
            stats: CacheStats::default(),
        }
    }

    /// The counters.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    /// The cached bytes of `path` at `version`; a stale entry is dropped.
    pub fn get(&mut self, path: &str, version: u64) -> Option<Arc<Vec<u8>>> {
        self.clock += 1;
        let clock = self.clock;
        match self.entries.get_mut(path) {
            Some(entry) if entry.version == version => {
                entry.last_used = clock;
                self.stats.hits += 1;
                Some(entry.bytes.clone())
            }
            Some(_) => {
                self.remove(path);
                self.stats.misses += 1;
                None
            }
            None => {
                self.stats.misses += 1;
                None
            }
        }
    }

    /// Whether a file of `len` bytes would be kept.
    pub fn takes(&self, len: usize) -> bool {
        len <= self.max_entry_bytes
    }

    /// Keeps `bytes` as `path` at `version`, if the policy takes it.
    pub fn put(&mut self, path: &str, version: u64, bytes: Arc<Vec<u8>>) {
        if bytes.len() > self.max_entry_bytes {
            return;
        }
        self.remove(path);
        while self.stats.bytes + bytes.len() > self.budget_bytes {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, entry)| entry.last_used)
                .map(|(path, _)| path.clone())
            else {
                break;
            };
            self.remove(&oldest);
        }
        self.clock += 1;
        self.stats.bytes += bytes.len();
        self.entries.insert(
            path.into(),
            Entry {
                version,
                bytes,
                last_used: self.clock,
            },
        );
    }

    fn remove(&mut self, path: &str) {
        if let Some(entry) = self.entries.remove(path) {
            self.stats.bytes -= entry.bytes.len();
            self.stats.evictions += 1;
        }
    }
}
