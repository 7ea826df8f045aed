//! What a thread may run on: `sched_getaffinity`. GNU `sort` sizes its
//! threads by it (through `nproc`'s logic).

use vfs::Errno;

use crate::user;

/// Bytes of the CPU mask the kernel keeps: one `unsigned long` (Linux
/// answers with `BITS_TO_LONGS(nr_cpu_ids)` of them).
const CPU_MASK_BYTES: u64 = 8;

/// `sched_getaffinity(pid, size, mask)` for a process that exists: one
/// CPU (bit 0). Returns the bytes written, as the raw call does; `EINVAL`
/// for a buffer smaller than the kernel's mask or not a whole number of
/// words.
pub fn sched_getaffinity(size: u64, mask: u64) -> Result<i64, Errno> {
    if size < CPU_MASK_BYTES || size % 8 != 0 {
        return Err(Errno::EINVAL);
    }
    user::write(mask, &1u64.to_le_bytes())?;
    Ok(CPU_MASK_BYTES as i64)
}
