//! Small CPU primitives: interrupts on/off, halting, the time-stamp counter.

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
