//! The Spindle kernel: the composition root.
//!
//! Boot order: console and logger, descriptor tables and traps, memory (frame
//! allocator, the kernel's own page tables, heap), timer, scheduler. Then the
//! kernel command line picks what to run (`spindle.mode=`):
//!
//! - `shell` (default): the serial shell ([`shell`]);
//! - `test`: the in-kernel tests ([`ktests`]), then exit QEMU with the result;
//! - `bench`: the in-guest benchmarks ([`bench`]), then exit;
//! - `fuzz`: the generated modules of the boot archive loaded and called
//!   ([`fuzz`]), then exit QEMU with the result;
//! - `crash`: a deliberate page fault on the boot thread, which must be
//!   reported and end QEMU with a failure status (tests the fatal path);
//! - `overflow`: a kernel thread overflows its stack into the guard page,
//!   which must arrive as a reported double fault on its IST stack.
#![no_std]
#![no_main]

extern crate alloc;

mod bench;
mod exceptions;
mod extensions;
mod fuzz;
mod ktests;
mod logger;
mod shell;

use core::panic::PanicInfo;

use hal::{boot::BootInfo, qemu};

hal::entry_point!(kernel_main);

fn kernel_main(boot_info: &'static BootInfo) -> ! {
    hal::console::init();
    logger::init(log::LevelFilter::Info);
    log::info!("Spindle booting; command line: {:?}", boot_info.cmdline());
    hal::gdt::init();
    hal::trap::init();
    exceptions::init();
    hal::memory::init(boot_info);
    let frames = hal::memory::frame_stats();
    log::info!(
        "memory: {} MiB usable, kernel page tables active",
        frames.total as u64 * hal::frames::FRAME_SIZE >> 20
    );
    for module in boot_info.modules() {
        log::info!("boot module: {} bytes at {:#x}", module.len, module.start);
    }
    hal::timer::init();
    sched::init("main");
    hal::cpu::enable_interrupts();
    let archive = boot_info
        .modules()
        .first()
        .map_or(&[][..], hal::memory::boot_module_bytes);
    extensions::init(archive);
    extensions::autoload(boot_info.cmdline_value("spindle.ext").unwrap_or(""));

    match boot_info.cmdline_value("spindle.mode").unwrap_or("shell") {
        "test" => {
            let is_success = ktests::run_all();
            qemu::exit(if is_success {
                qemu::ExitCode::Success
            } else {
                qemu::ExitCode::Failure
            })
        }
        "fuzz" => qemu::exit(if fuzz::run() {
            qemu::ExitCode::Success
        } else {
            qemu::ExitCode::Failure
        }),
        "bench" => {
            let suite = boot_info.cmdline_value("spindle.bench").unwrap_or("all");
            match bench::run(suite) {
                Ok(()) => qemu::exit(qemu::ExitCode::Success),
                Err(error) => {
                    log::error!("benchmark suite {suite}: {error}");
                    qemu::exit(qemu::ExitCode::Failure)
                }
            }
        }
        "crash" => {
            log::info!("crash mode: touching an unmapped page on the boot thread");
            let _ = hal::memory::store_unchecked(hal::memory::GENERAL_BASE + 0xdead_0000, 1);
            panic!("the deliberate page fault did not fault");
        }
        "overflow" => {
            log::info!("overflow mode: a kernel thread recurses into its guard page");
            let handle = sched::spawn("overflow", || {
                recurse_forever(0);
            })
            .expect("cannot start the overflow thread");
            let _ = handle.join();
            panic!("the stack overflow was not caught");
        }
        "shell" => {
            sched::spawn_with_stack("shell", extensions::EXTENSION_STACK_BYTES, shell::run)
                .expect("cannot start the shell");
            sched::exit(sched::ExitReason::Finished)
        }
        other => panic!("unknown spindle.mode {other:?}"),
    }
}

/// Recurses until the stack runs into its guard page (the `overflow` mode).
#[allow(unconditional_recursion)] // the point: it ends in a double fault
fn recurse_forever(depth: u64) -> u64 {
    let frame = core::hint::black_box([depth; 16]);
    recurse_forever(frame[0] + 1) + frame[15]
}

#[panic_handler]
fn panic(info: &PanicInfo<'_>) -> ! {
    hal::cpu::disable_interrupts();
    hal::console::emergency_write_fmt(format_args!("\nKERNEL PANIC: {info}\n"));
    qemu::exit(qemu::ExitCode::Failure)
}
