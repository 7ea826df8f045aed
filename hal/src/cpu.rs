//! Small CPU primitives: interrupts on/off, halting, the time-stamp
//! counter, what the processor says it is.

use x86_64::instructions::{self, interrupts};

/// Enables maskable interrupts.
pub fn enable_interrupts() {
    interrupts::enable();
}

/// Disables maskable interrupts.
pub fn disable_interrupts() {
    interrupts::disable();
}

/// Whether maskable interrupts are enabled.
pub fn are_interrupts_enabled() -> bool {
    interrupts::are_enabled()
}

/// Runs `f` with interrupts disabled, restoring the previous state after.
pub fn without_interrupts<R>(f: impl FnOnce() -> R) -> R {
    interrupts::without_interrupts(f)
}

/// Enables interrupts and halts until the next one arrives, atomically
/// (`sti; hlt`), so a wake-up cannot slip in between.
pub fn wait_for_interrupt() {
    interrupts::enable_and_hlt();
}

/// Halts forever with interrupts disabled.
pub fn halt_forever() -> ! {
    loop {
        interrupts::disable();
        instructions::hlt();
    }
}

/// Reads the time-stamp counter.
#[inline(always)]
pub fn read_tsc() -> u64 {
    // SAFETY: rdtsc has no side effects and is available on every x86_64 CPU.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Reads the time-stamp counter after all earlier instructions have
/// completed (`lfence; rdtsc`), for the edges of a timed interval.
#[inline(always)]
pub fn read_tsc_ordered() -> u64 {
    let (low, high): (u32, u32);
    // SAFETY: lfence and rdtsc have no side effects beyond writing eax/edx,
    // which are declared as outputs.
    unsafe {
        core::arch::asm!("lfence", "rdtsc", out("eax") low, out("edx") high, options(nomem, nostack, preserves_flags));
    }
    (u64::from(high) << 32) | u64::from(low)
}

/// What CPUID says the processor is (for `/proc/cpuinfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuIdentity {
    /// The vendor string (`GenuineIntel`, `AuthenticAMD`).
    pub vendor: [u8; 12],
    /// The brand string, NUL-padded (all zeros if the CPU has none).
    pub brand: [u8; 48],
    /// Family, with the extended family added as Intel's SDM says (vol. 2A,
    /// CPUID leaf 1).
    pub family: u32,
    /// Model, with the extended model for families 6 and 15.
    pub model: u32,
    /// Stepping.
    pub stepping: u32,
}

/// The processor's identity, from CPUID leaves 0, 1 and 0x8000_0002..4.
pub fn identity() -> CpuIdentity {
    use core::arch::x86_64::__cpuid;
    let leaf0 = __cpuid(0);
    let mut vendor = [0u8; 12];
    for (index, register) in [leaf0.ebx, leaf0.edx, leaf0.ecx].iter().enumerate() {
        vendor[index * 4..index * 4 + 4].copy_from_slice(&register.to_le_bytes());
    }
    let signature = __cpuid(1).eax;
    let base_family = (signature >> 8) & 0xf;
    let base_model = (signature >> 4) & 0xf;
    let family = if base_family == 0xf {
        base_family + ((signature >> 20) & 0xff)
    } else {
        base_family
    };
    let model = if base_family == 0x6 || base_family == 0xf {
        base_model | ((signature >> 16) & 0xf) << 4
    } else {
        base_model
    };
    let mut brand = [0u8; 48];
    if __cpuid(0x8000_0000).eax >= 0x8000_0004 {
        for (index, leaf) in (0x8000_0002u32..=0x8000_0004).enumerate() {
            let result = __cpuid(leaf);
            for (word, register) in [result.eax, result.ebx, result.ecx, result.edx]
                .iter()
                .enumerate()
            {
                let at = index * 16 + word * 4;
                brand[at..at + 4].copy_from_slice(&register.to_le_bytes());
            }
        }
    }
    CpuIdentity {
        vendor,
        brand,
        family,
        model,
        stepping: signature & 0xf,
    }
}
