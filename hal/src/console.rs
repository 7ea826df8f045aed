//! The serial console on COM1 (a 16550 UART at I/O port 0x3f8), through the
//! `uart_16550` crate.
//!
//! Output is synchronous and polled. Input: [`try_read_byte`] returns a
//! received byte if one is waiting. Once [`enable_input_interrupt`] has
//! routed the UART's receive interrupt (ISA IRQ 4, through the I/O APIC),
//! it reads the UART only after that interrupt said input arrived (and
//! once every [`FALLBACK_TICKS`] all the same): a port read reaches QEMU's
//! device model under its global lock, which the network's thread holds
//! for long stretches, so a console polled every few milliseconds kept
//! the processor waiting (17% of a busy transfer's samples).

use core::{
    fmt::{self, Write},
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
};

use uart_16550::SerialPort;

use crate::sync::IrqMutex;

/// I/O port base of COM1.
const COM1_PORT: u16 = 0x3f8;

// SAFETY: COM1 is at 0x3f8 on every PC and QEMU machine, and nothing else in
// the kernel drives these ports.
static COM1: IrqMutex<SerialPort> = IrqMutex::new(unsafe { SerialPort::new(COM1_PORT) });

/// Initialises the UART (115200 8N1, FIFOs on). Call once, first thing.
pub fn init() {
    COM1.lock().init();
}

/// Writes `text` to the console.
pub fn write_str(text: &str) {
    let _ = COM1.lock().write_str(text);
}

/// Writes formatted text to the console (one lock for the whole message).
pub fn write_fmt(args: fmt::Arguments<'_>) {
    let _ = COM1.lock().write_fmt(args);
}

/// The UART's line on the I/O APIC (ISA IRQ 4: COM1).
const COM1_IRQ: u8 = 4;
/// Vector of the serial receive interrupt.
pub const SERIAL_VECTOR: u8 = 0x42;
/// Ticks between reads of the UART without an interrupt (a lost edge
/// costs at most this long).
pub const FALLBACK_TICKS: u64 = 200;

/// Whether input arrives by interrupt.
static INTERRUPT_DRIVEN: AtomicBool = AtomicBool::new(false);
/// Set by the receive interrupt, cleared when the UART is found empty.
static INPUT_ARRIVED: AtomicBool = AtomicBool::new(true);
/// The tick of the last read without an interrupt.
static LAST_FALLBACK: AtomicU64 = AtomicU64::new(0);

/// Routes the UART's receive interrupt through the I/O APIC to this
/// processor, so that input is read when it arrives rather than polled.
/// Call once, after the timer. Without an I/O APIC input stays polled.
pub fn enable_input_interrupt() -> Result<(), crate::ioapic::RouteError> {
    crate::trap::set_interrupt_handler(SERIAL_VECTOR, receive_interrupt);
    crate::ioapic::route_isa_irq(COM1_IRQ, SERIAL_VECTOR, crate::timer::local_apic_id())?;
    INPUT_ARRIVED.store(true, Ordering::Release);
    INTERRUPT_DRIVEN.store(true, Ordering::Release);
    Ok(())
}

/// What [`set_input_hook`] installed.
static INPUT_HOOK: spin::Once<fn()> = spin::Once::new();

/// Has `hook` called by the receive interrupt, in interrupt context,
/// after input arrived (once installed; later calls are ignored): the
/// kernel wakes the threads waiting for typed input.
pub fn set_input_hook(hook: fn()) {
    INPUT_HOOK.call_once(|| hook);
}

/// Whether input arrives by interrupt ([`enable_input_interrupt`]
/// succeeded): else a thread waiting for input must look for it itself.
pub fn is_input_interrupt_driven() -> bool {
    INTERRUPT_DRIVEN.load(Ordering::Acquire)
}

fn receive_interrupt(_frame: &mut crate::trap::TrapFrame) {
    crate::timer::end_of_interrupt();
    INPUT_ARRIVED.store(true, Ordering::Release);
    if let Some(hook) = INPUT_HOOK.get() {
        hook();
    }
}

/// Returns a received byte, if one is waiting.
pub fn try_read_byte() -> Option<u8> {
    if INTERRUPT_DRIVEN.load(Ordering::Acquire) && !INPUT_ARRIVED.load(Ordering::Acquire) {
        let now = crate::timer::ticks();
        let last = LAST_FALLBACK.load(Ordering::Relaxed);
        if now.wrapping_sub(last) < FALLBACK_TICKS
            || LAST_FALLBACK
                .compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
        {
            return None;
        }
    }
    // Cleared before the UART is read: a byte arriving after this read
    // raises the interrupt again and sets it back.
    INPUT_ARRIVED.store(false, Ordering::Release);
    let byte = COM1.lock().try_receive().ok();
    if byte.is_some() {
        // There may be more behind it.
        INPUT_ARRIVED.store(true, Ordering::Release);
    }
    byte
}

/// Writes to the console without taking its lock: for reports from trap or
/// panic paths that may have interrupted a holder of the lock.
pub fn emergency_write_fmt(args: fmt::Arguments<'_>) {
    // SAFETY: a second handle on the same initialised UART; at worst its
    // output interleaves with the interrupted writer's.
    let mut port = unsafe { SerialPort::new(COM1_PORT) };
    let _ = port.write_fmt(args);
}
