//! The serial console on COM1 (a 16550 UART at I/O port 0x3f8), through the
//! `uart_16550` crate.
//!
//! Output is synchronous and polled. Input is polled too: [`try_read_byte`]
//! returns a received byte if one is waiting.

use core::fmt::{self, Write};

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

/// Returns a received byte, if one is waiting.
pub fn try_read_byte() -> Option<u8> {
    COM1.lock().try_receive().ok()
}

/// Writes to the console without taking its lock: for reports from trap or
/// panic paths that may have interrupted a holder of the lock.
pub fn emergency_write_fmt(args: fmt::Arguments<'_>) {
    // SAFETY: a second handle on the same initialised UART; at worst its
    // output interleaves with the interrupted writer's.
    let mut port = unsafe { SerialPort::new(COM1_PORT) };
    let _ = port.write_fmt(args);
}
