//! A module of about 50 KB of generated code: 512 distinct mixing
//! functions (one const-generic instance each) reached through a table.
//! The load+validate+link+instantiate benchmark loads it.
#![no_std]

// Linked for its panic handler.
use spindle_sdk as _;

/// One round of a 64-bit mixer, with per-instance constants.
macro_rules! rounds {
    ($x:ident, $k:expr, $($n:literal)*) => {$(
        $x = ($x ^ ($x >> (($k + $n) % 31 + 1))).wrapping_mul(0x9e37_79b9_7f4a_7c15 ^ ($k * 0x100 + $n));
        $x = $x.rotate_left((($k * 7 + $n) % 63) as u32);
    )*};
}

#[inline(never)]
fn stage<const K: u64>(mut x: u64) -> u64 {
    rounds!(x, K, 1 2 3);
    x
}

macro_rules! eight {
    ($base:expr) => {
        [
            stage::<{ $base }>,
            stage::<{ $base + 1 }>,
            stage::<{ $base + 2 }>,
            stage::<{ $base + 3 }>,
            stage::<{ $base + 4 }>,
            stage::<{ $base + 5 }>,
            stage::<{ $base + 6 }>,
            stage::<{ $base + 7 }>,
        ]
    };
}

macro_rules! sixty_four {
    ($base:expr) => {
        [
            eight!($base),
            eight!($base + 8),
            eight!($base + 16),
            eight!($base + 24),
            eight!($base + 32),
            eight!($base + 40),
            eight!($base + 48),
            eight!($base + 56),
        ]
    };
}

type Stage = fn(u64) -> u64;

static STAGES: [[[Stage; 8]; 8]; 8] = [
    sixty_four!(0),
    sixty_four!(64),
    sixty_four!(128),
    sixty_four!(192),
    sixty_four!(256),
    sixty_four!(320),
    sixty_four!(384),
    sixty_four!(448),
];

/// Runs stage `selector % 512` on `x`.
#[no_mangle]
pub extern "C" fn run(selector: u32, x: u64) -> u64 {
    let s = selector as usize % 512;
    STAGES[s / 64][(s / 8) % 8][s % 8](x)
}
