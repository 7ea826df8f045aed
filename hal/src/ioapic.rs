//! The I/O APIC: routes the PC's legacy device lines (the ISA IRQs) to
//! vectors of the local APIC. Spindle uses it for the serial console's
//! receive interrupt; PCI devices use MSI-X instead (`pci.rs`).
//!
//! The I/O APIC of a PC is at 0xfec00000 (QEMU's `pc` and `q35` both put
//! it there, and ACPI's MADT names that address on them); it is mapped
//! uncached with the local APIC (`memory.rs`). Its version register is
//! checked before anything is routed, so a machine without one there
//! keeps its interrupts off (the console then polls, as before).

use core::sync::atomic::{AtomicBool, Ordering};

use crate::memory::device_memory;

/// Physical address of the I/O APIC's registers.
const IOAPIC_PHYSICAL: u64 = 0xfec0_0000;
/// Register select (index) and data window, as offsets.
const IOREGSEL: u64 = 0x00;
const IOWIN: u64 = 0x10;
/// Register indices.
const IOAPICVER: u32 = 0x01;
const REDIRECTION_TABLE: u32 = 0x10;
/// A redirection entry's mask bit (low word).
const MASKED: u32 = 1 << 16;

/// Serialises the index-then-data register pair.
static LOCK: crate::sync::IrqMutex<()> = crate::sync::IrqMutex::new(());
/// Whether an I/O APIC answered at the address.
static PRESENT: AtomicBool = AtomicBool::new(false);

/// Why a line was not routed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteError {
    /// No I/O APIC answers at the PC's address.
    NoIoApic,
    /// The I/O APIC has no input for that line.
    NoSuchLine,
}

fn base() -> Option<u64> {
    device_memory(IOAPIC_PHYSICAL, 0x20)
}

fn read(base: u64, register: u32) -> u32 {
    // SAFETY: `base` is the window address of the I/O APIC's register page
    // (device memory, mapped uncached, checked by `device_memory`); IOREGSEL
    // and IOWIN are 32-bit registers at offsets 0 and 0x10 of it. The
    // caller holds `LOCK`, so the index is not changed in between.
    unsafe {
        core::ptr::write_volatile((base + IOREGSEL) as *mut u32, register);
        core::ptr::read_volatile((base + IOWIN) as *const u32)
    }
}

fn write(base: u64, register: u32, value: u32) {
    // SAFETY: as in `read`.
    unsafe {
        core::ptr::write_volatile((base + IOREGSEL) as *mut u32, register);
        core::ptr::write_volatile((base + IOWIN) as *mut u32, value);
    }
}

/// Routes ISA line `irq` (identity-mapped to the I/O APIC input of that
/// number, as on QEMU's machines for every line but the timer's) to
/// `vector` on the local APIC `apic_id`: edge-triggered, active high, as
/// ISA lines are. Every other input stays masked.
pub(crate) fn route_isa_irq(irq: u8, vector: u8, apic_id: u8) -> Result<(), RouteError> {
    // Fixed delivery, physical destination, active high, edge, unmasked.
    route(irq, u32::from(vector), apic_id)
}

/// Delivery mode "NMI" in a redirection entry's low word.
const DELIVERY_NMI: u32 = 0b100 << 8;

/// Routes I/O APIC input `input` to the local APIC `apic_id` as a
/// non-maskable interrupt (edge-triggered, active high): the watchdog's
/// line, which must reach the processor even with interrupts off.
pub(crate) fn route_input_as_nmi(input: u8, apic_id: u8) -> Result<(), RouteError> {
    // The vector is ignored for NMI delivery; 2 is the NMI's own.
    route(input, DELIVERY_NMI | 2, apic_id)
}

/// Writes redirection entry `input` (low word `low`, destination
/// `apic_id`), after checking the I/O APIC is there; the first route
/// masks every other input.
fn route(input: u8, low: u32, apic_id: u8) -> Result<(), RouteError> {
    let base = base().ok_or(RouteError::NoIoApic)?;
    let _guard = LOCK.lock();
    let version = read(base, IOAPICVER);
    // No device there reads as all ones; a real one has version 0x1x or
    // 0x20 and at least 16 inputs.
    let inputs = ((version >> 16) & 0xff) + 1;
    if version == u32::MAX || !(0x10..=0x2f).contains(&(version & 0xff)) || inputs < 16 {
        return Err(RouteError::NoIoApic);
    }
    if u32::from(input) >= inputs {
        return Err(RouteError::NoSuchLine);
    }
    if !PRESENT.swap(true, Ordering::AcqRel) {
        for other in 0..inputs {
            write(base, REDIRECTION_TABLE + 2 * other, MASKED);
        }
    }
    let entry = REDIRECTION_TABLE + 2 * u32::from(input);
    write(base, entry + 1, u32::from(apic_id) << 24);
    write(base, entry, low);
    Ok(())
}

impl core::fmt::Display for RouteError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            RouteError::NoIoApic => "no I/O APIC at 0xfec00000",
            RouteError::NoSuchLine => "the I/O APIC has no input for the line",
        })
    }
}
