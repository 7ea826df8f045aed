//! User mode: programs in ring 3, in address spaces of their own, whose
//! system calls raise `MachineTrap.Syscall` and whose faults end only
//! themselves.
//!
//! The programs are x86-64 machine code, assembled from the text above
//! each (`as --64`, Intel syntax), loaded at `user::CODE_BASE`.

use alloc::format;

use dispatch::{Install, Order, Principal};
use linux_abi::Errno;
use sched::Fault;

use loader::FileBytes::{Copied, Lent};

use super::{ensure, KernelTest, TestResult};
use crate::syscalls;
use linux_process::threads::{self as user, UserExit};

pub const TESTS: &[KernelTest] = &[
    KernelTest {
        name: "advertised_instructions_do_not_raise_sigill",
        run: advertised_instructions_do_not_raise_sigill,
    },
    KernelTest {
        name: "execve_replaces_programs_with_their_arguments_environment_and_descriptors",
        run: execve_replaces_programs,
    },
    KernelTest {
        name: "busybox_sh_scripts_with_pipes_redirection_loops_and_functions",
        run: busybox_sh_scripts,
    },
    KernelTest {
        name: "debian_busybox_runs_unmodified_applets",
        run: debian_busybox_runs_unmodified_applets,
    },
    KernelTest {
        name: "linux_personality_file_calls_on_the_file_tree",
        run: linux_personality_file_calls,
    },
    KernelTest {
        name: "fork_keeps_parent_and_child_apart_and_wait4_reports_ends",
        run: fork_keeps_parent_and_child_apart,
    },
    KernelTest {
        name: "posix_threads_share_memory_and_exit_group_ends_them_all",
        run: posix_threads_share_memory_and_exit_group_ends_them_all,
    },
    KernelTest {
        name: "the_appel_li_extension_handles_a_programs_protection_faults_in_the_kernel",
        run: appel_li_extension_handles_protection_faults,
    },
    KernelTest {
        name: "two_programs_keep_their_avx_registers_with_xsave",
        run: two_programs_keep_their_avx_registers,
    },
    KernelTest {
        name: "a_bad_address_handler_resolves_a_fault_outside_every_region",
        run: a_bad_address_handler_resolves_a_fault_outside_every_region,
    },
    KernelTest {
        name: "random_system_calls_from_eight_processes_never_harm_the_kernel",
        run: random_system_calls_never_harm_the_kernel,
    },
    KernelTest {
        name: "demand_zero_regions_mprotect_munmap_and_brk",
        run: demand_zero_regions_mprotect_munmap_and_brk,
    },
    KernelTest {
        name: "musl_programs_ud2_divide_by_zero_and_stack_overflow_end_only_their_process",
        run: program_faults_end_only_their_process,
    },
    KernelTest {
        name: "process_cycles_1000_forks_leave_frames_heap_and_table_at_baseline",
        run: process_cycles_leave_memory_at_baseline,
    },
    KernelTest {
        name: "user_program_writes_and_exits_through_machine_trap_syscall",
        run: user_program_writes_and_exits,
    },
    KernelTest {
        name: "bad_user_pointers_give_efault",
        run: bad_user_pointers_give_efault,
    },
    KernelTest {
        name: "getpid_and_unknown_calls",
        run: getpid_and_unknown_calls,
    },
    KernelTest {
        name: "a_syscall_handler_short_circuits_one_call",
        run: a_syscall_handler_short_circuits_one_call,
    },
    KernelTest {
        name: "user_faults_end_only_their_thread",
        run: user_faults_end_only_their_thread,
    },
    KernelTest {
        name: "two_programs_keep_their_sse_registers",
        run: two_programs_keep_their_sse_registers,
    },
    KernelTest {
        name: "elf_loader_runs_a_musl_program_and_refuses_bad_files",
        run: elf_loader_runs_a_musl_program_and_refuses_bad_files,
    },
    KernelTest {
        name: "translation_fault_handlers_resolve_faults_and_the_program_resumes",
        run: translation_fault_handlers_resolve_faults,
    },
    KernelTest {
        name: "a_wasm_extension_sees_only_its_own_process_system_calls",
        run: a_wasm_extension_sees_only_its_own_process_system_calls,
    },
    KernelTest {
        name: "smep_and_smap_are_on",
        run: smep_and_smap_are_on,
    },
    KernelTest {
        name: "a_thousand_programs_leave_frames_and_heap_at_baseline",
        run: user_thread_cycles_leak_nothing,
    },
];

/// ```text
/// lea rsi, [rip + msg]
/// mov edi, 1
/// mov edx, 18
/// mov eax, 1
/// syscall
/// mov edi, eax
/// mov eax, 60
/// syscall
/// ud2
/// msg: .ascii "hello from ring 3\n"
/// ```
const HELLO: &[u8] = &[
    0x48, 0x8d, 0x35, 0x1c, 0x00, 0x00, 0x00, 0xbf, 0x01, 0x00, 0x00, 0x00, 0xba, 0x12, 0x00, 0x00,
    0x00, 0xb8, 0x01, 0x00, 0x00, 0x00, 0x0f, 0x05, 0x89, 0xc7, 0xb8, 0x3c, 0x00, 0x00, 0x00, 0x0f,
    0x05, 0x0f, 0x0b, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x20, 0x66, 0x72, 0x6f, 0x6d, 0x20, 0x72, 0x69,
    0x6e, 0x67, 0x20, 0x33, 0x0a,
];

/// ```text
/// mov edi, 1
/// mov rsi, 0xdead0000
/// mov edx, 8
/// mov eax, 1
/// syscall
/// mov rdi, rax
/// mov eax, 60
/// syscall
/// ud2
/// ```
const WRITE_UNMAPPED: &[u8] = &[
    0xbf, 0x01, 0x00, 0x00, 0x00, 0x48, 0xbe, 0x00, 0x00, 0xad, 0xde, 0x00, 0x00, 0x00, 0x00, 0xba,
    0x08, 0x00, 0x00, 0x00, 0xb8, 0x01, 0x00, 0x00, 0x00, 0x0f, 0x05, 0x48, 0x89, 0xc7, 0xb8, 0x3c,
    0x00, 0x00, 0x00, 0x0f, 0x05, 0x0f, 0x0b,
];

/// ```text
/// mov edi, 1
/// mov rsi, 0xffffffff80000000
/// mov edx, 8
/// mov eax, 1
/// syscall
/// mov rdi, rax
/// mov eax, 60
/// syscall
/// ud2
/// ```
const WRITE_KERNEL_POINTER: &[u8] = &[
    0xbf, 0x01, 0x00, 0x00, 0x00, 0x48, 0xc7, 0xc6, 0x00, 0x00, 0x00, 0x80, 0xba, 0x08, 0x00, 0x00,
    0x00, 0xb8, 0x01, 0x00, 0x00, 0x00, 0x0f, 0x05, 0x48, 0x89, 0xc7, 0xb8, 0x3c, 0x00, 0x00, 0x00,
    0x0f, 0x05, 0x0f, 0x0b,
];

/// ```text
/// mov eax, 39
/// syscall
/// mov rdi, rax
/// mov eax, 60
/// syscall
/// ud2
/// ```
const GETPID_EXIT: &[u8] = &[
    0xb8, 0x27, 0x00, 0x00, 0x00, 0x0f, 0x05, 0x48, 0x89, 0xc7, 0xb8, 0x3c, 0x00, 0x00, 0x00, 0x0f,
    0x05, 0x0f, 0x0b,
];

/// ```text
/// mov eax, 5000
/// syscall
/// mov rdi, rax
/// mov eax, 60
/// syscall
/// ud2
/// ```
const UNKNOWN_SYSCALL_EXIT: &[u8] = &[
    0xb8, 0x88, 0x13, 0x00, 0x00, 0x0f, 0x05, 0x48, 0x89, 0xc7, 0xb8, 0x3c, 0x00, 0x00, 0x00, 0x0f,
    0x05, 0x0f, 0x0b,
];

/// ```text
/// ud2
/// ```
const UD2: &[u8] = &[0x0f, 0x0b];

/// ```text
/// xor ecx, ecx
/// mov eax, 1
/// xor edx, edx
/// div ecx
/// ```
const DIVIDE_BY_ZERO: &[u8] = &[
    0x31, 0xc9, 0xb8, 0x01, 0x00, 0x00, 0x00, 0x31, 0xd2, 0xf7, 0xf1,
];

/// ```text
/// movabs rax, [0xffffffff80100000]
/// ud2
/// ```
const READ_KERNEL: &[u8] = &[
    0x48, 0xa1, 0x00, 0x00, 0x10, 0x80, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x0b,
];

/// ```text
/// movabs rax, 0xffffffff80100000
/// jmp rax
/// ```
const JUMP_TO_KERNEL: &[u8] = &[
    0x48, 0xb8, 0x00, 0x00, 0x10, 0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xe0,
];

/// ```text
/// lea rax, [rip]
/// mov byte ptr [rax], 0
/// ud2
/// ```
const WRITE_CODE: &[u8] = &[
    0x48, 0x8d, 0x05, 0x00, 0x00, 0x00, 0x00, 0xc6, 0x00, 0x00, 0x0f, 0x0b,
];

/// ```text
/// 1: push rax
/// jmp 1b
/// ```
const STACK_OVERFLOW: &[u8] = &[0x50, 0xeb, 0xfd];

/// ```text
/// mov rax, 0x1111222233334444
/// movq xmm0, rax
/// mov ebx, 2000
/// 1:
/// mov eax, 24
/// syscall
/// movq rdx, xmm0
/// mov rcx, 0x1111222233334444
/// cmp rdx, rcx
/// jne 2f
/// dec ebx
/// jnz 1b
/// xor edi, edi
/// mov eax, 60
/// syscall
/// 2:
/// mov edi, 1
/// mov eax, 60
/// syscall
/// ```
const SSE_KEEPS_A: &[u8] = &[
    0x48, 0xb8, 0x44, 0x44, 0x33, 0x33, 0x22, 0x22, 0x11, 0x11, 0x66, 0x48, 0x0f, 0x6e, 0xc0, 0xbb,
    0xd0, 0x07, 0x00, 0x00, 0xb8, 0x18, 0x00, 0x00, 0x00, 0x0f, 0x05, 0x66, 0x48, 0x0f, 0x7e, 0xc2,
    0x48, 0xb9, 0x44, 0x44, 0x33, 0x33, 0x22, 0x22, 0x11, 0x11, 0x48, 0x39, 0xca, 0x75, 0x0d, 0xff,
    0xcb, 0x75, 0xe1, 0x31, 0xff, 0xb8, 0x3c, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xbf, 0x01, 0x00, 0x00,
    0x00, 0xb8, 0x3c, 0x00, 0x00, 0x00, 0x0f, 0x05,
];

/// ```text
/// mov rax, 0x5555666677778888
/// movq xmm0, rax
/// mov ebx, 2000
/// 1:
/// mov eax, 24
/// syscall
/// movq rdx, xmm0
/// mov rcx, 0x5555666677778888
/// cmp rdx, rcx
/// jne 2f
/// dec ebx
/// jnz 1b
/// xor edi, edi
/// mov eax, 60
/// syscall
/// 2:
/// mov edi, 1
/// mov eax, 60
/// syscall
/// ```
const SSE_KEEPS_B: &[u8] = &[
    0x48, 0xb8, 0x88, 0x88, 0x77, 0x77, 0x66, 0x66, 0x55, 0x55, 0x66, 0x48, 0x0f, 0x6e, 0xc0, 0xbb,
    0xd0, 0x07, 0x00, 0x00, 0xb8, 0x18, 0x00, 0x00, 0x00, 0x0f, 0x05, 0x66, 0x48, 0x0f, 0x7e, 0xc2,
    0x48, 0xb9, 0x88, 0x88, 0x77, 0x77, 0x66, 0x66, 0x55, 0x55, 0x48, 0x39, 0xca, 0x75, 0x0d, 0xff,
    0xcb, 0x75, 0xe1, 0x31, 0xff, 0xb8, 0x3c, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xbf, 0x01, 0x00, 0x00,
    0x00, 0xb8, 0x3c, 0x00, 0x00, 0x00, 0x0f, 0x05,
];

/// ```text
/// mov rax, 0x10000000
/// mov qword ptr [rax], 42
/// mov rdi, qword ptr [rax]
/// mov eax, 60
/// syscall
/// ud2
/// ```
const TOUCH_UNMAPPED: &[u8] = &[
    0x48, 0xc7, 0xc0, 0x00, 0x00, 0x00, 0x10, 0x48, 0xc7, 0x00, 0x2a, 0x00, 0x00, 0x00, 0x48, 0x8b,
    0x38, 0xb8, 0x3c, 0x00, 0x00, 0x00, 0x0f, 0x05, 0x0f, 0x0b,
];

fn run(name: &str, code: &[u8]) -> Result<UserExit, alloc::string::String> {
    Ok(user::spawn(name, code)?.join())
}

fn expect_exit(name: &str, code: &[u8], status: i64) -> TestResult {
    match run(name, code)? {
        UserExit::Exited(got) => {
            ensure!(got == status, "{name} exited with {got}, expected {status}");
            Ok(())
        }
        other => Err(format!("{name} {other} instead of exiting with {status}")),
    }
}

fn user_program_writes_and_exits() -> TestResult {
    let before = syscalls::count();
    // It exits with what `write` returned: the 18 bytes of its message.
    expect_exit("hello", HELLO, 18)?;
    let calls = syscalls::count() - before;
    ensure!(
        calls == 2,
        "{calls} system calls raised, expected write and exit"
    );
    Ok(())
}

fn bad_user_pointers_give_efault() -> TestResult {
    expect_exit("unmapped", WRITE_UNMAPPED, Errno::EFAULT.as_negative())?;
    expect_exit(
        "kernel-pointer",
        WRITE_KERNEL_POINTER,
        Errno::EFAULT.as_negative(),
    )
}

fn getpid_and_unknown_calls() -> TestResult {
    let thread = user::spawn("getpid", GETPID_EXIT)?;
    let process = thread.process() as i64;
    match thread.join() {
        UserExit::Exited(status) => ensure!(
            status == process,
            "getpid gave {status}, the program is process {process}"
        ),
        other => return Err(format!("getpid {other}")),
    }
    expect_exit("unknown", UNKNOWN_SYSCALL_EXIT, Errno::ENOSYS.as_negative())
}

/// A handler installed on `MachineTrap.Syscall`, guarded to one number,
/// answers that call instead of the kernel (SPIN's per-application
/// system call); removed, the kernel's answer is back.
fn a_syscall_handler_short_circuits_one_call() -> TestResult {
    let event = syscalls::event().ok_or("no MachineTrap.Syscall")?;
    let binding = event
        .install(
            Principal::KERNEL,
            Install::guarded(
                |args: &syscalls::SyscallArgs| args.1 == 5000,
                |_: &syscalls::SyscallArgs| 77i64,
            )
            .order(Order::Last),
        )
        .map_err(|error| format!("install: {error:?}"))?;
    let shortcut = expect_exit("shortcut", UNKNOWN_SYSCALL_EXIT, 77);
    // Other calls are not the handler's: the guard is false for them.
    let others = expect_exit("hello-beside", HELLO, 18);
    event
        .remove(Principal::KERNEL, binding)
        .map_err(|error| format!("remove: {error:?}"))?;
    shortcut?;
    others?;
    expect_exit(
        "unknown-again",
        UNKNOWN_SYSCALL_EXIT,
        Errno::ENOSYS.as_negative(),
    )
}

fn expect_fault(name: &str, code: &[u8], vector: u64) -> TestResult {
    match run(name, code)? {
        UserExit::Faulted(Fault {
            vector: got,
            rip,
            error_code,
            ..
        }) => {
            ensure!(
                got == vector,
                "{name} ended with vector {got} at {rip:#x}, expected {vector}"
            );
            // A ring-3 fault: for a page fault the error code's U/S bit
            // says the access was the user's; otherwise RIP is user code.
            const PAGE_FAULT_USER: u64 = 1 << 2;
            let by_user = if got == 14 {
                error_code & PAGE_FAULT_USER != 0
            } else {
                rip < hal::user::USER_END
            };
            ensure!(by_user, "{name} faulted in the kernel at {rip:#x}");
            Ok(())
        }
        other => Err(format!("{name} {other} instead of faulting")),
    }
}

fn user_faults_end_only_their_thread() -> TestResult {
    const INVALID_OPCODE: u64 = 6;
    const DIVIDE_ERROR: u64 = 0;
    const PAGE_FAULT: u64 = 14;
    expect_fault("ud2", UD2, INVALID_OPCODE)?;
    expect_fault("divide", DIVIDE_BY_ZERO, DIVIDE_ERROR)?;
    expect_fault("read-kernel", READ_KERNEL, PAGE_FAULT)?;
    expect_fault("jump-to-kernel", JUMP_TO_KERNEL, PAGE_FAULT)?;
    expect_fault("write-code", WRITE_CODE, PAGE_FAULT)?;
    expect_fault("stack-overflow", STACK_OVERFLOW, PAGE_FAULT)?;
    // And the kernel goes on: another program runs normally.
    expect_exit("after-faults", HELLO, 18)
}

fn smep_and_smap_are_on() -> TestResult {
    let (smep, smap) = hal::user::protections();
    ensure!(smep, "SMEP is off");
    ensure!(smap, "SMAP is off");
    Ok(())
}

fn user_thread_cycles_leak_nothing() -> TestResult {
    // Warm up what stays (the scheduler's tables, the event's caches).
    for _ in 0..5 {
        expect_exit("warm", HELLO, 18)?;
    }
    let frames = crate::page_cache::frames_free_or_cached();
    let heap = hal::heap::stats().allocated_bytes;
    // 1,000 programs: most exit, one in ten is ended by a fault (each
    // fault prints a register dump, so fewer of those).
    for index in 0..1000 {
        if index % 10 == 0 {
            ensure!(
                matches!(run("cycle-fault", UD2)?, UserExit::Faulted(_)),
                "a ud2 program did not fault"
            );
        } else {
            ensure!(
                matches!(run("cycle", GETPID_EXIT)?, UserExit::Exited(_)),
                "a getpid program did not exit"
            );
        }
    }
    let frames_after = crate::page_cache::frames_free_or_cached();
    let heap_after = hal::heap::stats().allocated_bytes;
    ensure!(
        frames_after >= frames,
        "1,000 programs kept {} frames",
        frames - frames_after
    );
    ensure!(
        heap_after <= heap + 1024,
        "1,000 programs kept {} heap bytes",
        heap_after - heap
    );
    Ok(())
}

/// Two programs interleave (each yields 2,000 times) with different values
/// in xmm0; each checks its own after every yield. The context switch's
/// FXSAVE/FXRSTOR keeps them apart.
fn two_programs_keep_their_sse_registers() -> TestResult {
    let first = user::spawn("sse-a", SSE_KEEPS_A)?;
    let second = user::spawn("sse-b", SSE_KEEPS_B)?;
    let (a, b) = (first.join(), second.join());
    ensure!(
        a == UserExit::Exited(0) && b == UserExit::Exited(0),
        "a program saw another's xmm0: {a:?}, {b:?}"
    );
    Ok(())
}

/// The static musl program of the boot archive runs (printf and all) and
/// exits with its status; damaged copies of it are refused with a reason.
fn elf_loader_runs_a_musl_program_and_refuses_bad_files() -> TestResult {
    let extensions = crate::extensions::get().ok_or("no boot archive")?;
    let files = extensions.archive_files("bin/hello");
    let &(_, hello) = files
        .first()
        .ok_or("bin/hello is not in the boot archive")?;
    let status = user::spawn_program("hello", Lent(hello), &["hello", "from", "a", "test"])?.join();
    ensure!(
        status == UserExit::Exited(3),
        "hello ended with {status:?}, expected status 3"
    );
    // Files in the boot archive are only 4-byte aligned: so is this copy.
    let mut shifted = alloc::vec![0u8; hello.len() + 4];
    shifted[4..].copy_from_slice(hello);
    let status = user::spawn_program("hello", Copied(&shifted[4..]), &["hello"])?.join();
    ensure!(
        status == UserExit::Exited(3),
        "hello at a 4-byte-aligned address ended with {status:?}"
    );
    let mut wrong_machine = alloc::vec::Vec::from(hello);
    wrong_machine[18] = 0x28; // EM_ARM
    let mut no_segments = alloc::vec::Vec::from(hello);
    no_segments[56] = 0; // e_phnum = 0: no executable segment
    no_segments[57] = 0;
    for (what, file) in [
        ("empty", &[][..]),
        ("truncated", &hello[..40]),
        ("text", &b"#!/bin/sh\necho not an ELF file\n"[..]),
        ("wrong machine", &wrong_machine[..]),
        ("no segments", &no_segments[..]),
    ] {
        match user::spawn_program("bad", Copied(file), &["bad"]) {
            Ok(thread) => {
                let _ = thread.join();
                return Err(format!("the {what} file was started"));
            }
            Err(reason) => ensure!(!reason.is_empty(), "no reason for the {what} file"),
        }
    }
    Ok(())
}

/// The region the fault handlers below manage.
const MANAGED: core::ops::Range<u64> = 0x1000_0000..0x1010_0000;

/// Appel and Li's primitives in the kernel: a `PageNotPresent` handler,
/// guarded to its region, maps the touched page read-only; the program's
/// write then raises `ProtectionFault`, whose handler makes the page
/// writable (SPIN's "dirty" figure). The program resumes each time and
/// exits with the value it wrote and read back. Without the handlers the
/// same program is ended by the fault.
fn translation_fault_handlers_resolve_faults() -> TestResult {
    use alloc::sync::Arc;
    use core::sync::atomic::{AtomicU64, Ordering};
    use hal::address_space::UserProtection;

    let not_present = crate::translation::page_not_present().ok_or("no PageNotPresent")?;
    let protection = crate::translation::protection_fault().ok_or("no ProtectionFault")?;
    ensure!(
        matches!(
            run("unmanaged", TOUCH_UNMAPPED)?,
            UserExit::Faulted(Fault { vector: 14, .. })
        ),
        "a touch of an unmapped page was not a fault without handlers"
    );
    let (mapped, upgraded) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (map_count, upgrade_count) = (mapped.clone(), upgraded.clone());
    let in_region = |args: &crate::translation::FaultArgs| MANAGED.contains(&args.1);
    let first = not_present
        .install(
            Principal::KERNEL,
            Install::guarded(in_region, move |args: &crate::translation::FaultArgs| {
                let page = args.1 & !(hal::memory::PAGE_SIZE - 1);
                let done = hal::context::with_current_address_space(|space| {
                    space.map(page, UserProtection::Read).is_ok()
                });
                map_count.fetch_add(1, Ordering::Relaxed);
                u32::from(done == Some(true))
            }),
        )
        .map_err(|error| format!("install: {error:?}"))?;
    let second = protection
        .install(
            Principal::KERNEL,
            Install::guarded(in_region, move |args: &crate::translation::FaultArgs| {
                let page = args.1 & !(hal::memory::PAGE_SIZE - 1);
                let done = hal::context::with_current_address_space(|space| {
                    space.protect(page, UserProtection::ReadWrite).is_ok()
                });
                upgrade_count.fetch_add(1, Ordering::Relaxed);
                u32::from(done == Some(true))
            }),
        )
        .map_err(|error| format!("install: {error:?}"))?;
    let managed = run("managed", TOUCH_UNMAPPED);
    let _ = not_present.remove(Principal::KERNEL, first);
    let _ = protection.remove(Principal::KERNEL, second);
    ensure!(
        managed? == UserExit::Exited(42),
        "the program did not resume after its faults were resolved"
    );
    ensure!(
        mapped.load(Ordering::Relaxed) == 1 && upgraded.load(Ordering::Relaxed) == 1,
        "expected one PageNotPresent and one ProtectionFault, saw {} and {}",
        mapped.load(Ordering::Relaxed),
        upgraded.load(Ordering::Relaxed)
    );
    ensure!(
        matches!(
            run("unmanaged-again", TOUCH_UNMAPPED)?,
            UserExit::Faulted(_)
        ),
        "the handlers outlived their removal"
    );
    Ok(())
}

/// SPIN's per-application system call, made safe: the Wasm extension
/// syscall-counter is loaded for one process and bound to
/// `MachineTrap.Syscall`; the event's authorizer imposes a guard so it
/// counts that process's calls and not those of another process running
/// the same program at the same time. An extension loaded for no process
/// is refused.
fn a_wasm_extension_sees_only_its_own_process_system_calls() -> TestResult {
    let extensions = crate::extensions::get().ok_or("no extensions")?;
    let files = extensions.archive_files("bin/hello");
    let &(_, hello) = files
        .first()
        .ok_or("bin/hello is not in the boot archive")?;
    let (mine, other) = (user::new_process(), user::new_process());
    let counter = extensions.load_for_process("syscall-counter", mine)?;
    let first = user::spawn_program_in(mine, "hello-mine", Lent(hello), &["hello"]);
    let second = user::spawn_program_in(other, "hello-other", Lent(hello), &["hello"]);
    let ends = (
        first.map(user::UserThread::join),
        second.map(user::UserThread::join),
    );
    let count = counter.call("count", &[]);
    let last = counter.call("last", &[]);
    let _ = extensions.unload_for_process(&counter);
    ensure!(
        ends == (Ok(UserExit::Exited(3)), Ok(UserExit::Exited(3))),
        "the two programs ended with {ends:?}"
    );
    // musl's start, printf and exit: arch_prctl, set_tid_address, ioctl,
    // writev, exit_group; the other process's five are not counted.
    let count = count.map_err(|error| format!("count: {error}"))?;
    ensure!(
        count == Some(wasm_runtime::WasmValue::I64(5)),
        "the extension counted {count:?} calls, expected its own process's 5"
    );
    let last = last.map_err(|error| format!("last: {error}"))?;
    ensure!(
        last == Some(wasm_runtime::WasmValue::I64(231)),
        "the last call seen was {last:?}, expected exit_group (231)"
    );
    // Loaded for no process: the authorizer refuses its handler.
    let loose =
        extensions.load_detached("loose", extensions.module_bytes("syscall-counter")?, None)?;
    let port = extensions.syscall_port().ok_or("no syscall port")?;
    let refused = loose.bind(port, &wasm_runtime::Bind::handler("on_syscall"));
    let _ = loose.unload();
    ensure!(
        refused.is_err(),
        "an extension loaded for no process was allowed to handle system calls"
    );
    Ok(())
}

/// Runs `bin/<name>` from the boot archive with `arguments` (`argv[0]` is
/// the name) and returns how it ended.
pub(super) fn run_program(
    name: &str,
    arguments: &[&str],
) -> Result<UserExit, alloc::string::String> {
    let extensions = crate::extensions::get().ok_or("no boot archive")?;
    let path = format!("bin/{name}");
    let files = extensions.archive_files(&path);
    let &(_, file) = files
        .iter()
        .find(|(entry, _)| *entry == path)
        .ok_or_else(|| format!("{path} is not in the boot archive"))?;
    let mut argv = alloc::vec![name];
    argv.extend_from_slice(arguments);
    Ok(user::spawn_program(name, Lent(file), &argv)?.join())
}

/// `user/files.c` under the Linux personality: files made, written, read
/// back, listed, renamed, linked and removed in the in-memory tree, each
/// error path's errno, open files shared across fork, the devices, and
/// the program's own file from the boot archive. The personality must
/// close every descriptor of every process it saw (none outlives its
/// process), and the calls must have been answered by the personality's
/// handler on `MachineTrap.Syscall`, not by the kernel's table.
fn linux_personality_file_calls() -> TestResult {
    let personality = crate::linux::personality().ok_or("the Linux personality is not set up")?;
    let event = syscalls::event().ok_or("no MachineTrap.Syscall")?;
    ensure!(
        !event.bindings().contains(&dispatch::BindingId::INTRINSIC),
        "the kernel's table is still the event's intrinsic handler"
    );
    let before = personality.processes();
    let end = run_program("files", &[])?;
    ensure!(
        end == UserExit::Exited(0),
        "files {end} (its output says which check failed)"
    );
    ensure!(
        personality.processes() == before,
        "{} processes still have descriptors after they ended",
        personality.processes() - before
    );
    Ok(())
}

/// Runs `bin/<name>` with `arguments` and returns how it ended and what it
/// printed.
pub(super) fn run_and_capture(
    name: &str,
    arguments: &[&str],
) -> Result<(UserExit, alloc::string::String), alloc::string::String> {
    let (_, mark) = crate::console_output::recent_console_output(u64::MAX);
    let end = run_program(name, arguments)?;
    let (output, _) = crate::console_output::recent_console_output(mark);
    Ok((
        end,
        alloc::string::String::from_utf8_lossy(&output).into_owned(),
    ))
}

/// Debian's `busybox-static` (glibc, statically linked, unmodified) runs
/// applets on the personality: `echo`, `ls` of a directory of the file
/// tree, `cat` of a file the same busybox wrote with a shell redirection.
fn debian_busybox_runs_unmodified_applets() -> TestResult {
    let (end, output) = run_and_capture("busybox", &["echo", "hello from busybox"])?;
    ensure!(
        end == UserExit::Exited(0) && output.contains("hello from busybox\n"),
        "busybox echo {end}, printing: {output}"
    );
    let (end, output) = run_and_capture("busybox", &["ls", "/dev"])?;
    ensure!(
        end == UserExit::Exited(0) && output.contains("null") && output.contains("urandom"),
        "busybox ls /dev {end}, printing: {output}"
    );
    Ok(())
}

/// `user/execs.c`: fork, then `execve` of Debian's busybox with arguments
/// and an environment; the parent gets the new program's exit status;
/// close-on-exec descriptors close and others stay; the error paths
/// (`ENOENT`, `EACCES`, `ENOEXEC`, `EFAULT`) leave the caller running.
fn execve_replaces_programs() -> TestResult {
    let frames = crate::page_cache::frames_free_or_cached();
    let (end, output) = run_and_capture("execs", &[])?;
    ensure!(
        end == UserExit::Exited(0)
            && output.contains("from execve")
            && output.contains("execs: ok"),
        "execs {end}, printing: {output}"
    );
    ensure!(
        crate::page_cache::frames_free_or_cached() >= frames,
        "{} frames were kept after the programs ended",
        frames - crate::page_cache::frames_free_or_cached()
    );
    Ok(())
}

/// A script for busybox's `sh` (ash), written by us but run by Debian's
/// unmodified shell: functions and `$?`, loops, arithmetic, redirection
/// and appending, pipelines through external applets (`wc`, `grep`,
/// `sed`, `tr`, `awk`, `sort`, `head`: each a fork and an `execve`),
/// subshells, `||`, `rm` and `test`.
const SH_SCRIPT: &str = r#"f() { echo "f:$1"; return 3; }
f one; echo "rc=$?"
for i in 1 2 3; do printf "%s," $i; done; echo
echo hello > /tmp/s.txt; echo world >> /tmp/s.txt; cat /tmp/s.txt | wc -l
x=0; while [ $x -lt 3 ]; do x=$((x+1)); done; echo "x=$x"
ls /bin | grep -c '^busybox$'
echo abc | sed s/b/B/ | tr a-z A-Z
seq 3 | awk '{s+=$1} END {print "sum=" s}'
printf 'b
a
' | sort | head -1
false || echo or
(exit 5); echo "sub=$?"
rm /tmp/s.txt; [ -e /tmp/s.txt ] || echo gone
sleep 0.05 && echo slept
"#;

/// What [`SH_SCRIPT`] prints.
const SH_EXPECTED: &str = "f:one\nrc=3\n1,2,3,\n2\nx=3\n1\nABC\nsum=6\na\nor\nsub=5\ngone\nslept\n";

fn busybox_sh_scripts() -> TestResult {
    let (end, output) = run_and_capture("busybox", &["sh", "-c", SH_SCRIPT])?;
    ensure!(
        end == UserExit::Exited(0) && output == SH_EXPECTED,
        "sh {end}; it printed:\n{output}\ninstead of:\n{SH_EXPECTED}"
    );
    Ok(())
}

/// `user/forks.c`: copy-on-write keeps data, heap and stack apart across
/// fork; wait4 reports an exit status, a SIGSEGV and a kill (of a child
/// that never makes a system call); ECHILD, ESRCH, EFAULT. The program
/// checks each and exits 0 only if all hold.
fn fork_keeps_parent_and_child_apart() -> TestResult {
    let end = run_program("forks", &[])?;
    ensure!(
        end == UserExit::Exited(0),
        "forks {end} (its output says which check failed)"
    );
    Ok(())
}

/// `user/memory.c`: anonymous mmap pages read as zero on first touch (also
/// for a system call writing into one), mprotect and munmap take access
/// away (children die of SIGSEGV), brk grows and shrinks.
fn demand_zero_regions_mprotect_munmap_and_brk() -> TestResult {
    let resolved_before = ::process::faults_resolved();
    let end = run_program("memory", &[])?;
    ensure!(
        end == UserExit::Exited(0),
        "memory {end} (its output says which check failed)"
    );
    let resolved = ::process::faults_resolved() - resolved_before;
    // 256 pages of the 1 MiB area, and the break's, at least.
    ensure!(
        resolved >= 256,
        "only {resolved} faults were resolved by the address map"
    );
    Ok(())
}

/// `user/faults.c`: ud2, a divide by zero and a runaway recursion (past
/// the 8 MiB stack region) each end that program with the right
/// exception; the kernel runs on (the next program runs).
fn program_faults_end_only_their_process() -> TestResult {
    for (how, vector) in [("ud2", 6), ("div0", 0), ("stack", 14)] {
        match run_program("faults", &[how])? {
            UserExit::Faulted(fault) => {
                ensure!(
                    fault.vector == vector,
                    "faults {how} ended with vector {}, expected {vector}",
                    fault.vector
                );
                if how == "stack" {
                    let limit = user::STACK_TOP - user::STACK_LIMIT;
                    ensure!(
                        fault.fault_address < limit && fault.fault_address > limit - 2 * 4096 * 2,
                        "the stack overflow faulted at {:#x}, not just below the stack region at {limit:#x}",
                        fault.fault_address
                    );
                }
            }
            other => return Err(format!("faults {how} {other}")),
        }
    }
    let end = run_program("hello", &[])?;
    ensure!(end == UserExit::Exited(3), "hello after the faults {end}");
    Ok(())
}

/// `user/cpufeatures.c`: one instruction of every family CPUID offers
/// (SSE3 to SSE4.2, POPCNT, AVX and AVX's VEX form of SSE4.1) runs
/// without SIGILL, and AVX is among them on the QEMU model the tests use.
fn advertised_instructions_do_not_raise_sigill() -> TestResult {
    ensure!(
        hal::user::avx_enabled(),
        "the kernel keeps AVX off: the CPU model lacks what AVX implies"
    );
    let end = run_program("cpufeatures", &[])?;
    ensure!(
        end == UserExit::Exited(0),
        "cpufeatures {end} (its output names the instruction)"
    );
    Ok(())
}

/// 1,000 fork/exit/wait cycles (`user/forkloop.c`) leave free frames, the
/// heap and the process table where they were.
fn process_cycles_leave_memory_at_baseline() -> TestResult {
    // Warm up what stays (the scheduler's tables, the event's caches).
    let end = run_program("forkloop", &["20"])?;
    ensure!(end == UserExit::Exited(0), "the warm-up forkloop {end}");
    let frames = crate::page_cache::frames_free_or_cached();
    let heap = hal::heap::stats().allocated_bytes;
    let processes = ::process::count();
    let end = run_program("forkloop", &["1000"])?;
    ensure!(end == UserExit::Exited(0), "forkloop 1000 {end}");
    let frames_after = crate::page_cache::frames_free_or_cached();
    let heap_after = hal::heap::stats().allocated_bytes;
    let processes_after = ::process::count();
    ensure!(
        frames_after >= frames,
        "1,000 processes kept {} frames",
        frames - frames_after
    );
    ensure!(
        heap_after <= heap + 1024,
        "1,000 processes kept {} heap bytes",
        heap_after - heap
    );
    ensure!(
        processes_after == processes,
        "{processes_after} processes in the table after, {processes} before"
    );
    Ok(())
}

/// `user/threads.c`: musl's pthreads on `clone(CLONE_VM | CLONE_THREAD)`,
/// `futex` and `CLONE_CHILD_CLEARTID`: eight threads count under a mutex
/// and return values through `pthread_join`, a condition variable hands a
/// turn back and forth, thread ids and thread-local storage are each
/// thread's own. Then `exit(7)` in a thread ends the process while its
/// main thread waits in `pthread_join`; frames come back.
fn posix_threads_share_memory_and_exit_group_ends_them_all() -> TestResult {
    let end = run_program("threads", &[])?;
    ensure!(
        end == UserExit::Exited(0),
        "threads {end} (its output says which check failed)"
    );
    let frames = crate::page_cache::frames_free_or_cached();
    let end = run_program("threads", &["exit"])?;
    ensure!(
        end == UserExit::Exited(7),
        "threads exit {end}, expected status 7"
    );
    let frames_after = crate::page_cache::frames_free_or_cached();
    ensure!(
        frames_after >= frames,
        "a process ended by exit_group with a thread blocked kept {} frames",
        frames - frames_after
    );
    Ok(())
}

/// `user/appel.c`: the Appel-Li extension, configured by the program's
/// application-specific system call, resolves its protection faults on
/// `Translation.ProtectionFault` (unprotect, and one-writable-page swap)
/// with exactly one fault per page change; removed, the same store ends a
/// child with SIGSEGV; bad arguments give EINVAL.
fn appel_li_extension_handles_protection_faults() -> TestResult {
    let end = run_program("appel", &[])?;
    ensure!(
        end == UserExit::Exited(0),
        "appel {end} (its output says which check failed)"
    );
    Ok(())
}

/// `user/avx.c`, twice at once: each keeps its own 256-bit pattern in
/// ymm0 across 2,000 yields; the upper halves are AVX state, kept across
/// context switches by XSAVE (QEMU offers the CPU `+xsave,+avx`).
fn two_programs_keep_their_avx_registers() -> TestResult {
    ensure!(
        hal::user::avx_enabled(),
        "AVX state is not enabled (no XSAVE, or no AVX)"
    );
    let extensions = crate::extensions::get().ok_or("no boot archive")?;
    let files = extensions.archive_files("bin/avx");
    let &(_, avx) = files.first().ok_or("bin/avx is not in the boot archive")?;
    let first = user::spawn_program("avx-a", Lent(avx), &["avx", "1"])?;
    let second = user::spawn_program("avx-b", Lent(avx), &["avx", "2"])?;
    let (a, b) = (first.join(), second.join());
    ensure!(
        a == UserExit::Exited(0) && b == UserExit::Exited(0),
        "the AVX programs ended: {a} and {b} (1: ymm0 changed, 2: no AVX)"
    );
    Ok(())
}

/// A touch of an address in no region raises `Translation.BadAddress`
/// (from the Unix model, the fault events' default): a handler guarded on
/// the range it manages maps the page and the program goes on; without
/// it the same program is ended.
fn a_bad_address_handler_resolves_a_fault_outside_every_region() -> TestResult {
    use alloc::sync::Arc;
    use core::sync::atomic::{AtomicU64, Ordering};
    use hal::address_space::UserProtection;

    let event = crate::translation::bad_address().ok_or("no BadAddress")?;
    let raised_before = crate::translation::raised()[2];
    ensure!(
        matches!(
            run("bad-address", TOUCH_UNMAPPED)?,
            UserExit::Faulted(Fault { vector: 14, .. })
        ),
        "a touch outside every region was not a fault without a handler"
    );
    ensure!(
        crate::translation::raised()[2] > raised_before,
        "the fault outside every region did not raise BadAddress"
    );
    let handled = Arc::new(AtomicU64::new(0));
    let count = handled.clone();
    let binding = event
        .install(
            Principal::KERNEL,
            Install::guarded(
                |args: &crate::translation::FaultArgs| MANAGED.contains(&args.1),
                move |args: &crate::translation::FaultArgs| {
                    let page = args.1 & !(hal::memory::PAGE_SIZE - 1);
                    let done = hal::context::with_current_address_space(|space| {
                        space.map(page, UserProtection::ReadWrite).is_ok()
                    });
                    count.fetch_add(1, Ordering::Relaxed);
                    u32::from(done == Some(true))
                },
            ),
        )
        .map_err(|error| format!("install: {error:?}"))?;
    let resumed = run("bad-address-handled", TOUCH_UNMAPPED);
    let _ = event.remove(Principal::KERNEL, binding);
    ensure!(
        resumed? == UserExit::Exited(42),
        "the program did not resume after BadAddress was resolved"
    );
    ensure!(
        handled.load(Ordering::Relaxed) == 1,
        "BadAddress was handled {} times, expected once",
        handled.load(Ordering::Relaxed)
    );
    Ok(())
}

/// `user/sysfuzz.c` with eight seeds, 2,000 random system calls each
/// (random numbers and arguments: bad pointers, huge lengths, unaligned
/// addresses, kernel addresses): each program exits or is ended by a fault
/// or signal of its own making, the kernel answers every call and runs on, and
/// frames, heap and the process table come back.
fn random_system_calls_never_harm_the_kernel() -> TestResult {
    // Confined to a scratch tree, removed before the heap is compared.
    let result = crate::linux::in_scratch_tree(b"/tmp/sysfuzz", fuzz_in_scratch_tree)?;
    let (heap, frames) = result?;
    let frames_after = crate::page_cache::frames_free_or_cached();
    let heap_after = hal::heap::stats().allocated_bytes;
    ensure!(
        frames_after >= frames,
        "the fuzzing kept {} frames",
        frames - frames_after
    );
    ensure!(
        heap_after <= heap + 1024,
        "the fuzzing kept {} heap bytes",
        heap_after - heap
    );
    Ok(())
}

/// The fuzzing itself; returns the heap and free frames measured before
/// it (after a warm-up run).
fn fuzz_in_scratch_tree() -> Result<(usize, usize), alloc::string::String> {
    // Warm up what stays.
    let _ = run_program("sysfuzz", &["100", "200"])?;
    let frames = crate::page_cache::frames_free_or_cached();
    let heap = hal::heap::stats().allocated_bytes;
    let processes = ::process::count();
    let calls_before = syscalls::count();
    for seed in ["1", "2", "3", "4", "5", "6", "7", "8"] {
        match run_program("sysfuzz", &[seed, "2000"])? {
            // A random `rt_sigreturn`, or a handler installed at a random
            // address, ends a program by a signal of its own making.
            UserExit::Exited(0) | UserExit::Faulted(_) | UserExit::Killed(_) => {}
            other => return Err(format!("sysfuzz {seed} {other}")),
        }
    }
    let calls = syscalls::count() - calls_before;
    ensure!(calls >= 8 * 100, "only {calls} system calls were made");
    let end = run_program("hello", &[])?;
    ensure!(end == UserExit::Exited(3), "hello after the fuzzing {end}");
    ensure!(
        ::process::count() == processes,
        "the process table grew from {processes} to {}",
        ::process::count()
    );
    Ok((heap, frames))
}
