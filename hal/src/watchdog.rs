//! The hardware watchdog: a non-maskable interrupt (NMI) at a steady
//! rate, which reaches the kernel even when the processor runs with
//! interrupts off, the state in which a stuck kernel is silent (Linux's
//! NMI watchdog, `kernel/watchdog_hld.c`, does the same with a performance
//! counter, which QEMU's emulated processor lacks).
//!
//! The source is channel 0 of the legacy PIT, counting down at
//! 1.193182 MHz in rate-generator mode, whose line (ISA IRQ 0, I/O APIC
//! input 2 on QEMU's `pc` and `q35`, as ACPI's interrupt source override
//! says) is routed with NMI delivery. The PIT keeps counting while the
//! processor has interrupts disabled, so the NMI arrives whatever the
//! kernel is doing. Channel 2, which `timer` calibrates the TSC against,
//! is separate.
//!
//! The kernel decides what a lockup is ([`start`]'s hook); this module
//! only delivers the NMI, on the NMI's own stack (see `gdt`).

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use x86_64::instructions::port::Port;

use crate::{ioapic::RouteError, trap::TrapFrame};

/// NMIs per second.
pub const NMI_HZ: u64 = 20;

const PIT_FREQUENCY_HZ: u64 = 1_193_182;
/// I/O APIC input of ISA IRQ 0 (the PIT) on QEMU's machines.
const PIT_IOAPIC_INPUT: u8 = 2;
/// PIT command: channel 0 (bits 7-6: 00), low then high byte (5-4: 11),
/// mode 2, the rate generator (3-1: 010), binary (0: 0).
const PIT_CHANNEL0_RATE_GENERATOR: u8 = 0b0011_0100;

/// The kernel's NMI hook (a `fn(&TrapFrame)` address, 0 = none).
static HOOK: AtomicUsize = AtomicUsize::new(0);
/// NMIs taken since [`start`].
static NMIS: AtomicU64 = AtomicU64::new(0);

/// What the kernel runs on every watchdog NMI: it gets the interrupted
/// code's registers (read-only). It runs with every interrupt blocked,
/// possibly in the middle of any kernel code, so it must not take a lock
/// it could be interrupting (only `try_lock`), allocate, or switch
/// threads.
pub type NmiHook = fn(&TrapFrame);

/// Starts the watchdog: `hook` runs on each of [`NMI_HZ`] NMIs a second.
/// Fails, with nothing started, on a machine without an I/O APIC.
pub fn start(hook: NmiHook) -> Result<(), RouteError> {
    HOOK.store(hook as usize, Ordering::Release);
    let divisor = (PIT_FREQUENCY_HZ / NMI_HZ) as u16;
    let mut command = Port::<u8>::new(0x43);
    let mut channel0 = Port::<u8>::new(0x40);
    // SAFETY: programs the PIT's channel 0, which nothing else in the
    // kernel uses (the tick is the local APIC's, calibration uses channel
    // 2): the command byte, then the divisor's low and high bytes.
    unsafe {
        command.write(PIT_CHANNEL0_RATE_GENERATOR);
        channel0.write(divisor as u8);
        channel0.write((divisor >> 8) as u8);
    }
    crate::ioapic::route_input_as_nmi(PIT_IOAPIC_INPUT, crate::timer::local_apic_id())
}

/// NMIs taken since [`start`] (0 if it never ran).
pub fn nmis() -> u64 {
    NMIS.load(Ordering::Relaxed)
}

/// The NMI's handler, from trap dispatch. Returns whether the watchdog
/// took it (an NMI before [`start`] is the caller's to report).
pub(crate) fn on_nmi(frame: &TrapFrame) -> bool {
    let hook = HOOK.load(Ordering::Acquire);
    if hook == 0 {
        return false;
    }
    NMIS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: non-zero values are only stored from an `NmiHook` in `start`.
    let hook: NmiHook = unsafe { core::mem::transmute::<usize, NmiHook>(hook) };
    crate::sync::invisibly_to_interrupted_locks(|| hook(frame));
    true
}
