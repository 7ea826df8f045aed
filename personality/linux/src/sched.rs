//! What a thread may run on: `sched_getaffinity` and `sched_setaffinity`.
//! GNU `sort` sizes its threads by the first (through `nproc`'s logic);
//! stress-ng's affinity stressor moves itself between processors with the
//! second.

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
    if size < CPU_MASK_BYTES || !size.is_multiple_of(8) {
        return Err(Errno::EINVAL);
    }
    user::write(mask, &1u64.to_le_bytes())?;
    Ok(CPU_MASK_BYTES as i64)
}

/// `sched_setaffinity(pid, size, mask)` for a process that exists: the
/// mask (its first `size` bytes, the rest taken as zero, as Linux does)
/// must allow the one processor, CPU 0, else `EINVAL`; allowing it, the
/// thread keeps running where it runs.
pub fn sched_setaffinity(size: u64, mask: u64) -> Result<i64, Errno> {
    let mut first = [0u8; CPU_MASK_BYTES as usize];
    let taken = size.min(CPU_MASK_BYTES) as usize;
    user::read(mask, &mut first[..taken])?;
    if u64::from_le_bytes(first) & 1 == 0 {
        return Err(Errno::EINVAL);
    }
    Ok(0)
}
