//! The Spindle kernel: the composition root.
//!
//! Boot order: console and logger, descriptor tables and traps, memory (frame
//! allocator, the kernel's own page tables, heap), timer, scheduler. Then the
//! kernel command line picks what to run (`spindle.mode=`):
//!
//! - `shell` (default): the serial shell ([`shell`]);
//! - `linux`: Debian's busybox sh on the Linux personality;
//! - `exec`: one command (`/etc/spindle-exec` in the boot archive) on the
//!   Linux personality, whose exit status becomes QEMU's;
//! - with the `testing` feature only (the image `./x test` and `./x bench`
//!   build), the test modes of `testing`: the in-kernel tests, benchmarks,
//!   fuzzers and the deliberate faults of the fatal paths.
//!
//! The shell and the test modes run on a kernel thread of their own (a
//! guarded stack with room for extension code), not on the boot stack.
#![no_std]
#![no_main]
// Without the test code, what only the tests call (accessors of this
// binary's own modules, the strand-group API the tests drive) is unused:
// dead code is judged by the testing image's build, which has every caller.
#![cfg_attr(not(feature = "testing"), allow(dead_code))]

extern crate alloc;

mod appel_li;
mod async_worker;
mod console_output;
mod core_calls;
mod exceptions;
mod extensions;
mod http_server;
mod linux;
mod lockups;
mod logger;
mod memory_services;
mod network;
mod page_cache;
mod process_events;
mod service_domains;
mod shell;
mod stream_service;
mod syscalls;
mod system;
mod terminal;
#[cfg(feature = "testing")]
mod testing;
mod tracing;
mod translation;

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
    process::set_observer(&process_events::KernelProcessEvents);
    hal::memory::init(boot_info);
    let frames = hal::memory::frame_stats();
    log::info!(
        "memory: {} MiB usable, kernel page tables active",
        (frames.total as u64 * hal::frames::FRAME_SIZE) >> 20
    );
    for module in boot_info.modules() {
        log::info!(
            "boot module: {} bytes at {:#x}",
            module.len(),
            module.start()
        );
    }
    hal::timer::init();
    match hal::rtc::init() {
        Some(seconds) => log::info!("wall clock: {seconds} s since the epoch, from the CMOS clock"),
        None => log::warn!("wall clock: the CMOS clock reads no valid date; starting at the epoch"),
    }
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
    linux_process::init(page_cache::get(), &process_events::KernelProcessEvents);
    syscalls::init(core_calls::core_table);
    strands::init();
    translation::init();
    memory_services::init();
    linux_process::itimer::init();
    extensions::init(archive);
    linux::init(archive);
    file_mappings::init();
    network::init();
    extensions::autoload(boot_info.cmdline_value("spindle.ext").unwrap_or(""));

    let mode = boot_info.cmdline_value("spindle.mode").unwrap_or("shell");
    match mode {
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
        "shell" => {
            sched::spawn_with_stack("shell", extensions::EXTENSION_STACK_BYTES, shell::run)
                .expect("cannot start the shell");
            sched::exit(sched::ExitReason::Finished)
        }
        #[cfg(feature = "testing")]
        _ if testing::is_testing_mode(mode) => testing::run_mode(mode, boot_info),
        other => panic!("unknown spindle.mode `{other}` (this image has no test code: ./x test builds one with it)"),
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

#[panic_handler]
fn panic(info: &PanicInfo<'_>) -> ! {
    hal::cpu::disable_interrupts();
    hal::console::emergency_write_fmt(format_args!("\nKERNEL PANIC: {info}\n"));
    qemu::exit(qemu::ExitCode::Failure)
}
