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
//! - `sysfuzz`: random system calls from many processes ([`sysfuzz`],
//!   `spindle.sysfuzz=SEED,PROCESSES,CALLS`), then exit QEMU with the
//!   result;
//! - `crash`: a deliberate page fault on the boot thread, which must be
//!   reported and end QEMU with a failure status (tests the fatal path);
//! - `overflow`: a kernel thread overflows its stack into the guard page,
//!   which must arrive as a reported double fault on its IST stack;
//! - `boot-overflow`: the same on the boot stack, whose guard page hal
//!   leaves unmapped.
//!
//! `test` and `bench` run on a kernel thread of their own (a guarded stack
//! with room for extension code), not on the boot stack.
#![no_std]
#![no_main]

extern crate alloc;

mod appel_li;
mod async_worker;
mod bench;
mod elf;
mod exceptions;
mod extensions;
mod file_memory;
mod fuzz;
mod http_server;
mod itimer;
mod ktests;
mod linux;
mod lockups;
mod logger;
mod memory_services;
mod network;
mod page_cache;
mod process;
mod service_domains;
mod shell;
mod signals;
mod strands;
mod stream_service;
mod syscalls;
mod sysfuzz;
mod system;
mod terminal;
mod tracing;
mod translation;
mod user;

use core::panic::PanicInfo;

use hal::{boot::BootInfo, qemu};

hal::entry_point!(kernel_main);

fn kernel_main(boot_info: &'static BootInfo) -> ! {
    hal::console::init();
    // `spindle.quiet` (`./x run --exec`): only errors, so what the program
    // prints is all the output.
    let quiet = boot_info
        .cmdline()
        .split_ascii_whitespace()
        .any(|word| word == "spindle.quiet");
    logger::init(if quiet {
        log::LevelFilter::Error
    } else {
        log::LevelFilter::Info
    });
    log::info!("Spindle booting; command line: {}", boot_info.cmdline());
    hal::gdt::init();
    hal::trap::init();
    hal::user::init();
    exceptions::init();
    hal::memory::init(boot_info);
    let frames = hal::memory::frame_stats();
    log::info!(
        "memory: {} MiB usable, kernel page tables active",
        frames.total as u64 * hal::frames::FRAME_SIZE >> 20
    );
    for module in boot_info.modules() {
        log::info!(
            "boot module: {} bytes at {:#x}",
            module.len(),
            module.start()
        );
    }
    hal::timer::init();
    if let Err(error) = hal::console::enable_input_interrupt() {
        log::warn!("console: input stays polled: {error}");
    }
    sched::init("main");
    hal::cpu::enable_interrupts();
    lockups::init();
    let archive = boot_info
        .modules()
        .first()
        .map_or(&[][..], hal::memory::boot_module_bytes);
    async_worker::init();
    syscalls::init();
    strands::init();
    translation::init();
    memory_services::init();
    itimer::init();
    extensions::init(archive);
    linux::init(archive);
    file_memory::init();
    network::init();
    extensions::autoload(boot_info.cmdline_value("spindle.ext").unwrap_or(""));

    match boot_info.cmdline_value("spindle.mode").unwrap_or("shell") {
        "test" => exit_with(on_guarded_thread("ktests", ktests::run_all)),
        "fuzz" => exit_with(fuzz::run()),
        "linux" => exit_with(on_guarded_thread(
            "init",
            || match linux::run_interactive_shell() {
                Ok(()) => true,
                Err(error) => {
                    log::error!("the Linux shell: {error}");
                    false
                }
            },
        )),
        "exec" => {
            let status = alloc::sync::Arc::new(core::sync::atomic::AtomicU8::new(127));
            let slot = status.clone();
            let ran = on_guarded_thread("exec", move || match linux::run_boot_command() {
                Ok(code) => {
                    slot.store(code, core::sync::atomic::Ordering::SeqCst);
                    true
                }
                Err(error) => {
                    log::error!("--exec: {error}");
                    false
                }
            });
            if !ran {
                exit_with(false);
            }
            qemu::exit_with_status(status.load(core::sync::atomic::Ordering::SeqCst))
        }
        "sysfuzz" => {
            let parameters = boot_info
                .cmdline_value("spindle.sysfuzz")
                .unwrap_or("1,16,2000");
            exit_with(on_guarded_thread("sysfuzz", move || {
                sysfuzz::run(parameters)
            }))
        }
        "bench" => {
            let suite = boot_info.cmdline_value("spindle.bench").unwrap_or("all");
            exit_with(on_guarded_thread("bench", move || {
                match bench::run(suite) {
                    Ok(()) => true,
                    Err(error) => {
                        log::error!("benchmark suite {suite}: {error}");
                        false
                    }
                }
            }))
        }
        "crash" => {
            log::info!("crash mode: touching an unmapped page on the boot thread");
            let _ = hal::memory::store_unchecked(hal::memory::GENERAL_BASE + 0xdead_0000, 1);
            panic!("the deliberate page fault did not fault");
        }
        "boot-overflow" => {
            log::info!("boot-overflow mode: the boot thread recurses into its guard page");
            recurse_forever(0);
            panic!("the boot stack overflow was not caught");
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
        other => panic!("unknown spindle.mode `{other}`"),
    }
}

/// Runs `work` on a kernel thread of its own, whose stack has a guard page
/// and room for extension code (the boot stack is small), and returns its
/// answer; a thread stopped by a CPU exception answers false.
fn on_guarded_thread(name: &str, work: impl FnOnce() -> bool + Send + 'static) -> bool {
    let answer = alloc::sync::Arc::new(core::sync::atomic::AtomicBool::new(false));
    let slot = answer.clone();
    let thread = sched::spawn_with_stack(name, extensions::EXTENSION_STACK_BYTES, move || {
        slot.store(work(), core::sync::atomic::Ordering::SeqCst);
    })
    .expect("cannot start a kernel thread");
    matches!(thread.join(), sched::ExitReason::Finished)
        && answer.load(core::sync::atomic::Ordering::SeqCst)
}

/// Ends QEMU with success or failure.
fn exit_with(is_success: bool) -> ! {
    qemu::exit(if is_success {
        qemu::ExitCode::Success
    } else {
        qemu::ExitCode::Failure
    })
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
