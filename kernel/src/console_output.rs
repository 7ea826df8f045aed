//! What user programs print on the console: written through, and the
//! last few KiB kept for the kernel's tests, which check programs' output
//! with [`recent_console_output`].

use alloc::vec::Vec;

/// How much of what user programs printed is kept for
/// [`recent_console_output`] (tests check programs' output with it).
const RECENT_OUTPUT_BYTES: usize = 8192;

/// The bytes user programs printed last, and how many were printed since
/// boot.
static RECENT_OUTPUT: spin::Mutex<(u64, alloc::collections::VecDeque<u8>)> =
    spin::Mutex::new((0, alloc::collections::VecDeque::new()));

/// What user programs printed since the count `since` (a value returned
/// before), as far as it is kept, and the count now.
pub fn recent_console_output(since: u64) -> (Vec<u8>, u64) {
    let recent = RECENT_OUTPUT.lock();
    let (total, kept) = (&recent.0, &recent.1);
    let wanted = (total - since.min(*total)) as usize;
    let skip = kept.len().saturating_sub(wanted);
    (kept.iter().skip(skip).copied().collect(), *total)
}

/// Writes what a user program printed to the console.
pub fn console_write(bytes: &[u8]) {
    {
        let mut recent = RECENT_OUTPUT.lock();
        recent.0 += bytes.len() as u64;
        let kept = &mut recent.1;
        // All at once the first time: the buffer never grows after, so a
        // test comparing heap readings does not see it as a leak. Room is
        // made before the new bytes go in, so it never holds more.
        if kept.capacity() < RECENT_OUTPUT_BYTES {
            kept.reserve_exact(RECENT_OUTPUT_BYTES - kept.len());
        }
        let bytes = &bytes[bytes.len().saturating_sub(RECENT_OUTPUT_BYTES)..];
        let excess = (kept.len() + bytes.len()).saturating_sub(RECENT_OUTPUT_BYTES);
        kept.drain(..excess);
        kept.extend(bytes.iter().copied());
    }
    let text: Vec<u8> = bytes
        .iter()
        .map(|&byte| if byte.is_ascii() { byte } else { b'?' })
        .collect();
    if let Ok(text) = core::str::from_utf8(&text) {
        hal::console::write_str(text);
    }
}
