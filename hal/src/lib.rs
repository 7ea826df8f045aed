//! Spindle's hardware abstraction layer (SPIN's "sal"): everything that needs
//! `unsafe` because hardware or memory layout demands it, behind safe
//! interfaces for the rest of the kernel.
//!
//! - [`boot`]: the PVH entry point, long-mode trampoline, [`boot::BootInfo`].
//! - [`console`]: the COM1 serial console.
//! - [`gdt`], [`trap`]: descriptor tables, IST stacks, trap entry and dispatch.
//! - [`frames`], [`memory`], [`heap`]: physical frames, kernel page tables,
//!   the global allocator.
//! - [`timer`], [`cpu`]: TSC and local APIC timer, interrupt control.
//! - [`context`]: kernel thread stacks and the context switch.
//! - [`user`], [`address_space`]: ring 3, the `syscall` entry, user memory
//!   access, and user page tables.
//! - [`sync`]: interrupt-safe spin locks.
//! - [`watchdog`]: a steady non-maskable interrupt, which reaches the
//!   kernel even when interrupts are off; [`backtrace`]: frame-pointer
//!   walks for its reports and the profiler's.
//! - [`qemu`]: exiting QEMU with a status for the test harness.
//! - [`pci`], [`dma`], [`net`]: PCI configuration and MSI-X, memory devices
//!   reach by physical address, and the virtio network interface.
//! - [`native_code`]: W^X code memory for the native Wasm engine's
//!   generated code and the (unsafe) entry into it.
//! - [`linear_memory`]: Wasm linear memories that never move, for the same
//!   engine.
//!
//! - [`paging`]: the plain data of user paging (page size, the user half,
//!   protections, mapping errors), which policy crates use on every target.
//! - [`registers`]: the plain data of a user thread's registers and FPU
//!   state, which the Linux personality's signal frames carry.
//!
//! Everything but the frame bitmap, [`paging`] and [`registers`] only
//! builds for the bare-metal target (`target_os = "none"`); the bitmap is
//! unit-tested on the host.
#![cfg_attr(not(test), no_std)]

extern crate alloc;

pub mod frames;
pub mod linear_memory;
pub mod native_code;
pub mod paging;
pub mod registers;
pub mod rtc;
#[cfg(target_os = "none")]
mod slots;

#[cfg(target_os = "none")]
pub mod address_space;
#[cfg(target_os = "none")]
pub mod backtrace;
#[cfg(target_os = "none")]
pub mod boot;
#[cfg(target_os = "none")]
pub mod console;
#[cfg(target_os = "none")]
pub mod context;
#[cfg(target_os = "none")]
pub mod cpu;
#[cfg(target_os = "none")]
pub mod dma;
#[cfg(target_os = "none")]
pub mod gdt;
#[cfg(target_os = "none")]
pub mod heap;
#[cfg(target_os = "none")]
pub mod ioapic;
#[cfg(target_os = "none")]
mod mem;
#[cfg(target_os = "none")]
pub mod memory;
#[cfg(target_os = "none")]
pub mod net;
#[cfg(target_os = "none")]
pub mod pci;
#[cfg(target_os = "none")]
pub mod profile;
#[cfg(target_os = "none")]
pub mod qemu;
#[cfg(target_os = "none")]
pub mod sync;
#[cfg(target_os = "none")]
pub mod timer;
#[cfg(target_os = "none")]
pub mod trap;
#[cfg(target_os = "none")]
pub mod user;
#[cfg(target_os = "none")]
pub mod watchdog;
