//! The kernel's one page cache (`services/pagecache`): the pages of
//! boot-archive files that programs map, shared by every process that
//! runs them (the ELF loader, `services/loader`).

use pagecache::PageCache;

/// The share of RAM the cache may hold (an eighth: the boot archive, all
/// of it cached, is a few MiB).
const RAM_SHARE_DIVISOR: usize = 8;

static CACHE: spin::Once<PageCache> = spin::Once::new();

/// The page cache, made on first use with room for an eighth of RAM.
pub fn get() -> &'static PageCache {
    CACHE.call_once(|| PageCache::new(hal::memory::frame_stats().total / RAM_SHARE_DIVISOR))
}

/// Frames free, kept by the kernel for good once used
/// (`hal::memory::frames_free_or_kept`), or held by the page cache: this
/// count falling across some work means the work kept frames it should
/// have given back.
pub fn frames_free_or_kept() -> u64 {
    hal::memory::frames_free_or_kept() + get().frames_held() as u64
}

/// Frames free or held by the page cache: the count a test compares
/// across running programs (the cache filling as they run is not a leak).
pub fn frames_free_or_cached() -> usize {
    hal::memory::frame_stats().free + get().frames_held()
}
