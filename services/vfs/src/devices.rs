//! The memory devices of Linux's `drivers/char/mem.c` and `random.c`:
//! `/dev/null`, `/dev/zero`, `/dev/full` and `/dev/urandom`, with their
//! Linux device numbers.

use alloc::{boxed::Box, sync::Arc, vec::Vec};

use spin::Mutex;

use crate::{
    device::{Device, DeviceRegistry},
    metadata::{makedev, S_IFCHR},
    vfs::{PathContext, Vfs},
    Errno,
};

/// Device number of `/dev/null` (1, 3).
pub const NULL_DEV: u64 = makedev(1, 3);
/// Device number of `/dev/zero` (1, 5).
pub const ZERO_DEV: u64 = makedev(1, 5);
/// Device number of `/dev/full` (1, 7).
pub const FULL_DEV: u64 = makedev(1, 7);
/// Device number of `/dev/random` (1, 8).
pub const RANDOM_DEV: u64 = makedev(1, 8);
/// Device number of `/dev/urandom` (1, 9).
pub const URANDOM_DEV: u64 = makedev(1, 9);

/// `/dev/null`: reads end at once, writes vanish.
pub struct Null;

impl Device for Null {
    fn read(&self, _offset: u64, _buf: &mut [u8], _nonblocking: bool) -> Result<usize, Errno> {
        Ok(0)
    }

    fn write(&self, _offset: u64, buf: &[u8], _nonblocking: bool) -> Result<usize, Errno> {
        Ok(buf.len())
    }

    fn is_seekable(&self) -> bool {
        true
    }
}

/// `/dev/zero`: reads give zeros, writes vanish.
pub struct Zero;

impl Device for Zero {
    fn read(&self, _offset: u64, buf: &mut [u8], _nonblocking: bool) -> Result<usize, Errno> {
        buf.fill(0);
        Ok(buf.len())
    }

    fn write(&self, _offset: u64, buf: &[u8], _nonblocking: bool) -> Result<usize, Errno> {
        Ok(buf.len())
    }

    fn is_seekable(&self) -> bool {
        true
    }
}

/// `/dev/full`: reads give zeros, writes fail with `ENOSPC`.
pub struct Full;

impl Device for Full {
    fn read(&self, _offset: u64, buf: &mut [u8], _nonblocking: bool) -> Result<usize, Errno> {
        buf.fill(0);
        Ok(buf.len())
    }

    fn write(&self, _offset: u64, _buf: &[u8], _nonblocking: bool) -> Result<usize, Errno> {
        Err(Errno::ENOSPC)
    }

    fn is_seekable(&self) -> bool {
        true
    }
}

/// xoshiro256** (Blackman and Vigna), a small fast generator with a
/// 256-bit state. Not cryptographic: `/dev/urandom` here serves programs
/// that want unpredictable-enough bytes (hash seeds, temporary names), and
/// the kernel can swap in a better source through [`Urandom::new`].
/// Written here because the `rand` family's no_std generators bring more
/// than these twenty lines.
#[derive(Debug, Clone)]
pub struct Xoshiro256 {
    state: [u64; 4],
}

/// SplitMix64, which spreads one seed word over xoshiro's state (the
/// seeding its authors recommend; an all-zero state would stay zero).
fn splitmix64(seed: &mut u64) -> u64 {
    *seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *seed;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Xoshiro256 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Xoshiro256 {
        let mut seed = seed;
        Xoshiro256 {
            state: core::array::from_fn(|_| splitmix64(&mut seed)),
        }
    }

    /// A generator with exactly this state (for checking against the
    /// reference implementation); an all-zero state is replaced by seed 0's.
    pub fn from_state(state: [u64; 4]) -> Xoshiro256 {
        if state == [0; 4] {
            return Xoshiro256::new(0);
        }
        Xoshiro256 { state }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.state;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Fills `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }

    /// Folds `bytes` into the state (what writing to `/dev/urandom` does:
    /// it adds to the pool, it never replaces it).
    pub fn mix(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            let mut seed = u64::from_le_bytes(word) ^ self.next_u64();
            self.state[0] ^= splitmix64(&mut seed);
        }
        if self.state == [0; 4] {
            *self = Xoshiro256::new(0);
        }
    }
}

/// The byte source behind [`Urandom`]: fills a buffer; `mix` receives what
/// user space writes to the device.
pub trait RandomSource: Send {
    /// Fills `buf` with random bytes.
    fn fill(&mut self, buf: &mut [u8]);
    /// Folds written bytes into the state; ignoring them is allowed.
    fn mix(&mut self, _bytes: &[u8]) {}
}

impl RandomSource for Xoshiro256 {
    fn fill(&mut self, buf: &mut [u8]) {
        Xoshiro256::fill(self, buf);
    }

    fn mix(&mut self, bytes: &[u8]) {
        Xoshiro256::mix(self, bytes);
    }
}

/// `/dev/urandom` (and `/dev/random`, which since Linux 5.6 behaves the
/// same once seeded): reads give bytes from a [`RandomSource`], writes
/// are mixed in.
pub struct Urandom {
    source: Mutex<Box<dyn RandomSource>>,
}

impl Urandom {
    /// A device reading from `source` (e.g. a generator the kernel seeds
    /// from RDRAND or the TSC).
    pub fn new(source: Box<dyn RandomSource>) -> Urandom {
        Urandom {
            source: Mutex::new(source),
        }
    }

    /// A device reading from [`Xoshiro256`] seeded with `seed`.
    pub fn seeded(seed: u64) -> Urandom {
        Urandom::new(Box::new(Xoshiro256::new(seed)))
    }
}

impl Device for Urandom {
    fn read(&self, _offset: u64, buf: &mut [u8], _nonblocking: bool) -> Result<usize, Errno> {
        self.source.lock().fill(buf);
        Ok(buf.len())
    }

    fn write(&self, _offset: u64, buf: &[u8], _nonblocking: bool) -> Result<usize, Errno> {
        self.source.lock().mix(buf);
        Ok(buf.len())
    }

    fn is_seekable(&self) -> bool {
        // Linux's random devices accept lseek and ignore the offset.
        true
    }
}

/// The memory devices' names in `/dev` and numbers.
const MEMORY_DEVICES: [(&[u8], u64); 5] = [
    (b"null", NULL_DEV),
    (b"zero", ZERO_DEV),
    (b"full", FULL_DEV),
    (b"random", RANDOM_DEV),
    (b"urandom", URANDOM_DEV),
];

/// Installs the memory device drivers under their Linux numbers, with
/// `urandom` serving both `/dev/random` and `/dev/urandom`.
pub fn register_memory_devices(registry: &DeviceRegistry, urandom: Urandom) {
    registry.register(NULL_DEV, Arc::new(Null));
    registry.register(ZERO_DEV, Arc::new(Zero));
    registry.register(FULL_DEV, Arc::new(Full));
    let urandom = Arc::new(urandom);
    registry.register(RANDOM_DEV, urandom.clone());
    registry.register(URANDOM_DEV, urandom);
}

/// Makes the memory devices' nodes (mode 0666) in directory `directory`
/// (e.g. `b"/dev"`, made if missing), leaving ones that exist: for an
/// initramfs that brings no `/dev`.
pub fn make_memory_device_nodes(
    vfs: &Vfs,
    context: &PathContext,
    directory: &[u8],
) -> Result<(), Errno> {
    match vfs.mkdir(context, directory, 0o755) {
        Ok(_) | Err(Errno::EEXIST) => {}
        Err(error) => return Err(error),
    }
    // The umask must not narrow the nodes' 0666.
    let context = PathContext {
        umask: 0,
        ..context.clone()
    };
    for (name, rdev) in MEMORY_DEVICES {
        let path: Vec<u8> = [directory, b"/", name].concat();
        match vfs.mknod(&context, &path, S_IFCHR | 0o666, rdev) {
            Ok(_) | Err(Errno::EEXIST) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}
