//! Time: the TSC as the clock, the local APIC timer as the periodic tick.
//!
//! Calibration: the TSC is measured against channel 2 of the legacy PIT
//! (1.193182 MHz, gated through port 0x61 so it does not need its IRQ), and
//! the local APIC timer is measured against the calibrated TSC. The legacy
//! 8259 PICs are remapped out of the exception range and masked: all
//! interrupts come through the local APIC.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use x86_64::{instructions::port::Port, registers::model_specific::Msr};

use crate::{
    cpu::read_tsc,
    memory::phys_to_virt,
    trap::{self, TrapFrame},
};

/// Timer interrupts per second.
pub const TICK_HZ: u64 = 1000;
/// Vector of the local APIC timer interrupt.
pub const TIMER_VECTOR: u8 = 0x40;
/// Vector of the local APIC spurious interrupt.
pub const SPURIOUS_VECTOR: u8 = 0xff;

const PIT_FREQUENCY_HZ: u64 = 1_193_182;
const IA32_APIC_BASE_MSR: u32 = 0x1b;

// Local APIC register offsets (Intel SDM vol. 3, table 11-1).
const APIC_ID: u64 = 0x20;
const APIC_EOI: u64 = 0xb0;
const APIC_SPURIOUS: u64 = 0xf0;
const APIC_LVT_TIMER: u64 = 0x320;
const APIC_TIMER_INITIAL: u64 = 0x380;
const APIC_TIMER_CURRENT: u64 = 0x390;
const APIC_TIMER_DIVIDE: u64 = 0x3e0;
const APIC_TIMER_PERIODIC: u32 = 1 << 17;
const APIC_LVT_MASKED: u32 = 1 << 16;
const APIC_SOFTWARE_ENABLE: u32 = 1 << 8;
/// Divide configuration value for "divide by 16".
const APIC_DIVIDE_BY_16: u32 = 0b0011;

static TSC_HZ: AtomicU64 = AtomicU64::new(0);
/// Nanoseconds per TSC cycle as a 32.32 fixed-point number, so that
/// converting is a multiplication and a shift rather than a 128-bit
/// division (which the network thread's accounting did per frame).
static NS_PER_CYCLE_FIXED: AtomicU64 = AtomicU64::new(0);
static TSC_AT_BOOT: AtomicU64 = AtomicU64::new(0);
static TICKS: AtomicU64 = AtomicU64::new(0);
static APIC_BASE: AtomicU64 = AtomicU64::new(0);
/// The kernel's tick hook (a `fn()` address, 0 = none).
static TICK_HOOK: AtomicUsize = AtomicUsize::new(0);

fn apic_read(register: u64) -> u32 {
    let address = APIC_BASE.load(Ordering::Relaxed) + register;
    // SAFETY: APIC_BASE is the window address of the local APIC page, mapped
    // uncached; the register offsets are architectural.
    unsafe { core::ptr::read_volatile(address as *const u32) }
}

fn apic_write(register: u64, value: u32) {
    let address = APIC_BASE.load(Ordering::Relaxed) + register;
    // SAFETY: as in `apic_read`.
    unsafe { core::ptr::write_volatile(address as *mut u32, value) }
}

/// Remaps the 8259 PICs to vectors 0x20-0x2f and masks every line.
fn disable_legacy_pic() {
    let mut master_command = Port::<u8>::new(0x20);
    let mut master_data = Port::<u8>::new(0x21);
    let mut slave_command = Port::<u8>::new(0xa0);
    let mut slave_data = Port::<u8>::new(0xa1);
    // SAFETY: the standard ICW1-ICW4 initialisation sequence of the PC's
    // 8259 pair, followed by masking all lines; nothing else uses the PICs.
    unsafe {
        master_command.write(0x11);
        slave_command.write(0x11);
        master_data.write(0x20);
        slave_data.write(0x28);
        master_data.write(4);
        slave_data.write(2);
        master_data.write(1);
        slave_data.write(1);
        master_data.write(0xff);
        slave_data.write(0xff);
    }
}

/// Measures TSC cycles over `pit_ticks` ticks of PIT channel 2.
fn tsc_cycles_over_pit(pit_ticks: u16) -> u64 {
    let mut gate = Port::<u8>::new(0x61);
    let mut command = Port::<u8>::new(0x43);
    let mut channel2 = Port::<u8>::new(0x42);
    // SAFETY: programs PIT channel 2 (the speaker timer, otherwise unused) in
    // mode 0 with the speaker output off, and polls its OUT bit in port 0x61.
    unsafe {
        let value = (gate.read() & !0x02) | 0x01;
        gate.write(value & !0x01);
        command.write(0b1011_0000); // channel 2, lobyte/hibyte, mode 0, binary
        channel2.write(pit_ticks as u8);
        channel2.write((pit_ticks >> 8) as u8);
        gate.write(value); // rising gate edge starts the count
        let start = read_tsc();
        while gate.read() & 0x20 == 0 {
            core::hint::spin_loop();
        }
        read_tsc() - start
    }
}

fn calibrate_tsc() -> u64 {
    const WINDOW_MS: u64 = 10;
    let pit_ticks = (PIT_FREQUENCY_HZ * WINDOW_MS / 1000) as u16;
    let mut samples = [0u64; 5];
    for sample in samples.iter_mut() {
        *sample = tsc_cycles_over_pit(pit_ticks) * 1000 / WINDOW_MS;
    }
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn timer_interrupt(frame: &mut TrapFrame) {
    TICKS.fetch_add(1, Ordering::Relaxed);
    crate::profile::record(frame);
    end_of_interrupt();
    let hook = TICK_HOOK.load(Ordering::Acquire);
    if hook != 0 {
        // SAFETY: non-zero values are only stored from a `fn()` in
        // `set_tick_hook`.
        let hook: fn() = unsafe { core::mem::transmute::<usize, fn()>(hook) };
        hook();
    }
}

fn spurious_interrupt(_frame: &mut TrapFrame) {}

/// Acknowledges the interrupt being handled at the local APIC, so that it
/// can deliver the next one (every device interrupt handler calls it).
pub fn end_of_interrupt() {
    apic_write(APIC_EOI, 0);
}

/// The local APIC's id (the destination of device interrupts aimed at
/// this processor).
pub(crate) fn local_apic_id() -> u8 {
    (apic_read(APIC_ID) >> 24) as u8
}

/// Calibrates the TSC and starts the periodic local APIC timer at
/// [`TICK_HZ`]. Interrupts stay disabled until the caller enables them.
pub fn init() {
    TSC_AT_BOOT.store(read_tsc(), Ordering::Relaxed);
    disable_legacy_pic();
    let tsc_hz = calibrate_tsc();
    TSC_HZ.store(tsc_hz, Ordering::Relaxed);
    NS_PER_CYCLE_FIXED.store(ns_per_cycle_fixed(tsc_hz), Ordering::Relaxed);

    // SAFETY: IA32_APIC_BASE exists on every x86_64 CPU; reading it has no
    // side effects.
    let apic_physical = unsafe { Msr::new(IA32_APIC_BASE_MSR).read() } & 0xffff_f000;
    APIC_BASE.store(phys_to_virt(apic_physical), Ordering::Relaxed);
    trap::set_interrupt_handler(TIMER_VECTOR, timer_interrupt);
    trap::set_interrupt_handler(SPURIOUS_VECTOR, spurious_interrupt);
    apic_write(
        APIC_SPURIOUS,
        APIC_SOFTWARE_ENABLE | u32::from(SPURIOUS_VECTOR),
    );

    // Count APIC timer ticks over 10 ms of TSC time.
    apic_write(APIC_TIMER_DIVIDE, APIC_DIVIDE_BY_16);
    apic_write(APIC_LVT_TIMER, APIC_LVT_MASKED | u32::from(TIMER_VECTOR));
    apic_write(APIC_TIMER_INITIAL, u32::MAX);
    let start = read_tsc();
    while read_tsc() - start < tsc_hz / 100 {
        core::hint::spin_loop();
    }
    let apic_ticks_per_10ms = u64::from(u32::MAX - apic_read(APIC_TIMER_CURRENT));
    let initial = (apic_ticks_per_10ms * 100 / TICK_HZ).max(1);
    apic_write(APIC_TIMER_INITIAL, 0);
    apic_write(
        APIC_LVT_TIMER,
        APIC_TIMER_PERIODIC | u32::from(TIMER_VECTOR),
    );
    apic_write(APIC_TIMER_INITIAL, initial.min(u64::from(u32::MAX)) as u32);
    log::info!(
        "timer: TSC {} MHz, APIC timer {} counts per tick at {} Hz",
        tsc_hz / 1_000_000,
        initial,
        TICK_HZ
    );
}

/// Registers the function called (with interrupts disabled) on every tick.
pub fn set_tick_hook(hook: fn()) {
    TICK_HOOK.store(hook as usize, Ordering::Release);
}

/// Timer ticks since [`init`].
pub fn ticks() -> u64 {
    TICKS.load(Ordering::Relaxed)
}

/// Calibrated TSC frequency in Hz (0 before [`init`]).
pub fn tsc_hz() -> u64 {
    TSC_HZ.load(Ordering::Relaxed)
}

/// 2^32 nanoseconds per cycle of a `hz` clock (at least 1 Hz).
fn ns_per_cycle_fixed(hz: u64) -> u64 {
    ((1_000_000_000u128 << 32) / u128::from(hz.max(1))) as u64
}

/// Converts TSC cycles to nanoseconds (within a part in 10^9 for clocks
/// above 4 Hz; 0 before calibration).
pub fn cycles_to_ns(cycles: u64) -> u64 {
    let fixed = NS_PER_CYCLE_FIXED.load(Ordering::Relaxed);
    ((u128::from(cycles) * u128::from(fixed)) >> 32) as u64
}

/// Nanoseconds since [`init`], from the TSC (0 before calibration).
///
/// The scheduler reads it on every switch: no test for calibration, as
/// the multiplier is 0 until then, and so is the product.
#[inline]
pub fn uptime_ns() -> u64 {
    cycles_to_ns(read_tsc().wrapping_sub(TSC_AT_BOOT.load(Ordering::Relaxed)))
}
