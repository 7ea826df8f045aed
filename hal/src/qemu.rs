//! Leaving QEMU with an exit status, through the `isa-debug-exit` device
//! (`-device isa-debug-exit,iobase=0xf4,iosize=0x04`). QEMU exits with status
//! `(value << 1) | 1`, so [`ExitCode::Success`] gives 33 and
//! [`ExitCode::Failure`] 35.

use x86_64::instructions::port::Port;

/// I/O port of QEMU's isa-debug-exit device.
const DEBUG_EXIT_PORT: u16 = 0xf4;

/// What the kernel tells QEMU (and so the test harness) on exit.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Clean halt or all tests passed: QEMU exits with 33.
    Success = 0x10,
    /// A test failed or the kernel panicked: QEMU exits with 35.
    Failure = 0x11,
}

/// Value written for a program's exit status `s` ([`exit_with_status`]):
/// `STATUS_BASE + s`, so QEMU exits with `(STATUS_BASE + s) * 2 + 1`
/// (129 for status 0), apart from [`ExitCode`]'s 33 and 35.
pub const STATUS_BASE: u32 = 0x40;
/// The largest status passed exactly; larger ones are passed as this.
pub const MAX_STATUS: u8 = 63;

/// Exits QEMU carrying a program's exit status (`./x run --exec`); halts
/// forever if the device is absent.
pub fn exit_with_status(status: u8) -> ! {
    let mut port = Port::<u32>::new(DEBUG_EXIT_PORT);
    // SAFETY: as in `exit`: the debug-exit port only makes QEMU exit.
    unsafe { port.write(STATUS_BASE + u32::from(status.min(MAX_STATUS))) };
    crate::cpu::halt_forever()
}

/// Exits QEMU with `code`; halts forever if the device is absent.
pub fn exit(code: ExitCode) -> ! {
    let mut port = Port::<u32>::new(DEBUG_EXIT_PORT);
    // SAFETY: writing to the debug-exit port only makes QEMU exit; on a
    // machine without the device the write is ignored.
    unsafe { port.write(code as u32) };
    crate::cpu::halt_forever()
}
