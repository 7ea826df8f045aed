//! The native-code tier in the running kernel (docs/design/0008-native-engine.md):
//! extensions compiled by the kernel itself run from W^X code memory, and
//! every extension test of `ktests::extensions` passes again with the
//! runtime pinned to the native tier (runaway and faulty handlers
//! contained, 1,000 load/unload cycles at baseline, code memory included,
//! the regression modules refused or contained), and again with the
//! interpreter pinned; an extension loaded on the default tier starts on
//! the interpreter and moves to native code while it runs.

use alloc::{format, string::String, vec::Vec};

use wasm_runtime::Tier;

use super::{ensure, extensions, KernelTest, TestResult};

pub const TESTS: &[KernelTest] = &[
    KernelTest {
        name: "shipped_extensions_run_as_native_code_from_read_execute_pages",
        run: shipped_extensions_run_natively,
    },
    KernelTest {
        name: "extension_tests_pass_with_the_native_tier_pinned",
        run: extension_tests_pass_natively,
    },
    KernelTest {
        name: "extension_tests_pass_with_the_interpreter_pinned",
        run: extension_tests_pass_on_the_interpreter,
    },
    KernelTest {
        name: "default_loads_start_on_the_interpreter_and_tier_up_while_running",
        run: default_loads_tier_up_while_running,
    },
    KernelTest {
        name: "stack_room_measures_what_is_left_of_a_threads_kernel_stack",
        run: stack_room_measures_kernel_stacks,
    },
    KernelTest {
        name: "nested_raises_stop_before_the_kernel_stack_runs_out",
        run: nested_raises_stop_before_the_stack_runs_out,
    },
    KernelTest {
        name: "handlers_bound_on_the_interpreter_answer_as_native_code_after_the_tier_up",
        run: handlers_answer_after_the_tier_up,
    },
    KernelTest {
        name: "guards_that_read_state_or_the_clock_run_without_the_instance_lock_after_the_tier_up",
        run: state_guards_run_without_the_lock,
    },
    KernelTest {
        name: "a_system_call_answered_by_native_float_code_keeps_the_programs_fpu_state",
        run: float_code_keeps_a_programs_fpu_state,
    },
    KernelTest {
        name: "compiling_any_module_stays_within_the_compile_stack_bound",
        run: compiling_stays_within_the_compile_stack_bound,
    },
];

/// How deep the extension compiler goes into a kernel stack, measured:
/// on a fresh thread with a tier-up thread's stack, every module of the
/// boot archive (the shipped extensions, the regression modules) and
/// three made to stress the compiler (blocks nested near its limit, a
/// function with its most locals, a thousand values live at once, each
/// in a loop, so Cranelift compiles them) are compiled as a tier-up
/// compiles them. The stack the compiles used below the point they
/// started from (the deepest word written, `hal::context::deepest_stack_use`)
/// must stay under `COMPILE_STACK_BYTES`, the room below which the
/// runtime does not compile; the test prints it.
fn compiling_stays_within_the_compile_stack_bound() -> TestResult {
    use alloc::sync::Arc;

    use wasm_runtime::COMPILE_STACK_BYTES;

    let extensions = crate::extensions::get().ok_or("extensions not initialised")?;
    let mut modules: Vec<(String, Vec<u8>)> = extensions
        .archive_files("ext/")
        .into_iter()
        .map(|(name, bytes)| (String::from(name), bytes.to_vec()))
        .collect();
    ensure!(
        modules.len() >= 20,
        "only {} modules in the boot archive",
        modules.len()
    );
    let stress = stress_modules();
    let stress_count = stress.len();
    modules.extend(stress);
    let measured: Arc<spin::Mutex<Option<Result<StackMeasure, String>>>> =
        Arc::new(spin::Mutex::new(None));
    let result = measured.clone();
    let thread = sched::spawn_with_stack(
        "compile-stack",
        crate::extensions::EXTENSION_STACK_BYTES,
        move || {
            *result.lock() = Some(compile_measuring_the_stack(&modules, stress_count));
        },
    )
    .map_err(|error| format!("spawning the compiling thread: {error:?}"))?;
    thread.join();
    let outcome = measured.lock().take();
    let measure = outcome.ok_or("the compiling thread ended without a measure")??;
    let deepest = measure.deepest;
    hal::console::write_fmt(format_args!(
        "\n  {} modules compiled ({} refused), the deepest {deepest} bytes of stack below the \
         compiler's entry, for {} (bound {COMPILE_STACK_BYTES})\n  ",
        measure.compiled, measure.refused, measure.deepest_module
    ));
    ensure!(
        deepest < COMPILE_STACK_BYTES,
        "compiling took {deepest} bytes of stack, more than COMPILE_STACK_BYTES \
         ({COMPILE_STACK_BYTES})"
    );
    Ok(())
}

/// How much stack compiling took.
struct StackMeasure {
    /// The most stack any compile used below the compiling function's
    /// frame, in bytes.
    deepest: u64,
    /// The module whose compile went deepest.
    deepest_module: String,
    /// How many modules compiled, and how many the compiler refused.
    compiled: usize,
    refused: usize,
}

/// Compiles each of `modules` (the last `stress_count` must compile; the
/// others may be refused) on the running thread, measuring the stack
/// after each.
fn compile_measuring_the_stack(
    modules: &[(String, Vec<u8>)],
    stress_count: usize,
) -> Result<StackMeasure, String> {
    use wasm_runtime::{
        engine::native::{CompileLimits, Compiler},
        module::ModuleInfo,
    };

    let marker = 0u8;
    let room =
        hal::context::stack_room(core::ptr::addr_of!(marker) as u64).ok_or("no stack bounds")?;
    let used_here = crate::extensions::EXTENSION_STACK_BYTES - room;
    let compiler = Compiler::new(CompileLimits::default())
        .map_err(|error| format!("the compiler: {error}"))?;
    let mut measure = StackMeasure {
        deepest: 0,
        deepest_module: String::new(),
        compiled: 0,
        refused: 0,
    };
    for (at, (name, bytes)) in modules.iter().enumerate() {
        let must_compile = at >= modules.len() - stress_count;
        let result = ModuleInfo::parse(bytes)
            .map_err(|error| format!("{error}"))
            .and_then(|info| {
                compiler
                    .compile(bytes, &info)
                    .map_err(|error| format!("{error}"))
            });
        match result {
            Ok(_) => measure.compiled += 1,
            Err(error) if must_compile => return Err(format!("{name} not compiled: {error}")),
            Err(_) => measure.refused += 1,
        }
        // The deepest use only grows: the module that made it grow last
        // went deepest.
        let deepest = hal::context::deepest_stack_use()
            .ok_or("no stack bounds")?
            .saturating_sub(used_here);
        if deepest > measure.deepest {
            measure.deepest = deepest;
            measure.deepest_module = name.clone();
        }
    }
    Ok(measure)
}

/// Modules that stress the compiler's stack, each one function `() -> ()`
/// whose body is a loop (so that Cranelift, not the single-pass
/// compiler, compiles it): blocks nested near the compile limit, the
/// most locals summed, a thousand constants live at once, then added.
fn stress_modules() -> Vec<(String, Vec<u8>)> {
    let limits = wasm_runtime::engine::native::CompileLimits::default();
    let nesting = limits.nesting - 2;
    let mut nested = Vec::new();
    for _ in 0..nesting {
        nested.extend_from_slice(&[0x02, 0x40]); // block
    }
    nested.extend(core::iter::repeat_n(0x0b, nesting)); // end
    let mut summed = Vec::new();
    for local in 0..limits.locals {
        summed.push(0x20); // local.get
        leb128(local, &mut summed);
        if local > 0 {
            summed.push(0x7c); // i64.add
        }
    }
    summed.push(0x1a); // drop
    let mut live = Vec::new();
    for _ in 0..1000 {
        live.extend_from_slice(&[0x41, 0x01]); // i32.const 1
    }
    live.extend(core::iter::repeat_n(0x6a, 999)); // i32.add
    live.push(0x1a); // drop
    alloc::vec![
        (
            format!("{nesting} nested blocks"),
            looping_function_module(0, &nested)
        ),
        (
            format!("{} locals summed", limits.locals),
            looping_function_module(limits.locals, &summed)
        ),
        (
            String::from("1000 live values"),
            looping_function_module(0, &live)
        ),
    ]
}

/// A module of one function `() -> ()` with `locals` `i64` locals whose
/// body is `loop` `body` `end`.
fn looping_function_module(locals: u32, body: &[u8]) -> Vec<u8> {
    let section = |id: u8, content: &[u8], module: &mut Vec<u8>| {
        module.push(id);
        leb128(content.len() as u32, module);
        module.extend_from_slice(content);
    };
    let mut module = b"\0asm\x01\0\0\0".to_vec();
    section(1, &[1, 0x60, 0, 0], &mut module); // type () -> ()
    section(3, &[1, 0], &mut module); // one function of it
    let mut function = Vec::new();
    if locals == 0 {
        function.push(0);
    } else {
        function.push(1);
        leb128(locals, &mut function);
        function.push(0x7e); // i64
    }
    function.extend_from_slice(&[0x03, 0x40]); // loop
    function.extend_from_slice(body);
    function.extend_from_slice(&[0x0b, 0x0b]); // end of loop, of function
    let mut code = alloc::vec![1];
    leb128(function.len() as u32, &mut code);
    code.extend(function);
    section(10, &code, &mut module);
    module
}

/// Appends `value` in unsigned LEB128.
fn leb128(mut value: u32, out: &mut Vec<u8>) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// `user/fpukept.c` with the native tier pinned: its `getuid` is
/// answered by `float-getuid`, compiled (on a kernel thread: the load is
/// made on the program's system call, whose stack is too small for the
/// compiler) and run as native code that computes in floating point on
/// the program's own system call, while the program keeps values in
/// xmm0-xmm2 and rounds upward. The program finds its registers and
/// rounding mode as it left them, and the module's arithmetic rounded to
/// nearest (the answer 1000), on every one of 200 calls.
fn float_code_keeps_a_programs_fpu_state() -> TestResult {
    use linux_process::threads::UserExit;
    pinned(Tier::Native, || {
        let (end, output) = super::user::run_and_capture("fpukept", &[])?;
        ensure!(
            end == UserExit::Exited(0) && output.contains("fpukept: ok"),
            "fpukept {end}, printing:\n{output}"
        );
        Ok(())
    })
}

/// The bench extension loaded on the default tier (wasmi), the empty
/// handler bound behind `below_limit` (a guard that reads a limit from
/// the extension's memory), the limit set by a locked call: raises below
/// it run the handler, the others not, and on wasmi each guard and
/// handler takes the instance lock. After the tier-up the guard is
/// read-only native code: the same decisions (the limit changed in
/// between by a locked call is seen at once), and no raise takes the
/// lock. Then a guard that calls a kernel procedure which only reads
/// (the clock) decides as the kernel's clock says, without the lock
/// either.
fn state_guards_run_without_the_lock() -> TestResult {
    use dispatch::RaiseCache;
    use wasm_runtime::{bench::Fixture, LoadRequest};

    const RAISES: u64 = 100;
    let extensions = crate::extensions::get().ok_or("extensions not initialised")?;
    let bytes = extensions.module_bytes("bench")?;
    let fixture = Fixture::load(extensions.runtime(), LoadRequest::new("bench", bytes))
        .map_err(|error| format!("loading bench: {error}"))?;
    let binding = fixture
        .bind_handler_and_state_guard()
        .map_err(|error| format!("binding: {error}"))?;
    let mut cache = RaiseCache::default();
    // Raises 0..RAISES with the limit `limit`: how often the instance was
    // locked meanwhile (the second `stats` call's own lock aside).
    let mut raise_all = |label: &str, limit: u64| -> Result<u64, String> {
        fixture
            .set_limit(limit)
            .map_err(|error| format!("{label}: setting the limit: {error}"))?;
        let exclusive = fixture.extension.stats().exclusive;
        for value in 0..RAISES {
            let ran = fixture.raise_cached(&mut cache, value);
            ensure!(
                ran == (value < limit),
                "{label}: raise {value} with the limit at {limit}: the handler {}",
                if ran { "ran" } else { "did not run" }
            );
        }
        Ok(fixture.extension.stats().exclusive - exclusive - 1)
    };
    // Guard on every raise, the handler on those below the limit.
    let locked = raise_all("on wasmi", 40)?;
    ensure!(
        locked == RAISES + 40,
        "on wasmi: the lock taken {locked} times for {RAISES} raises"
    );
    extensions
        .runtime()
        .tier_up(&fixture.extension)
        .map_err(|error| format!("the tier-up: {error}"))?;
    ensure!(
        fixture.extension.tier() == Tier::Native,
        "bench is on {} after the tier-up",
        fixture.extension.tier()
    );
    for limit in [60, 10] {
        let locked = raise_all("on native code", limit)?;
        ensure!(
            locked == 0,
            "on native code: the lock taken {locked} times for {RAISES} raises"
        );
    }
    fixture
        .unbind(binding)
        .map_err(|error| format!("unbinding: {error}"))?;
    // A guard that calls a kernel procedure which only reads: the clock
    // (`before_deadline`: holds while `timer_now_ns` is before the
    // extension's deadline). Native code runs it without the lock too,
    // with the kernel's clock: a deadline an hour away holds, one already
    // past (boot, 0) does not.
    let binding = fixture
        .bind_handler_and_clock_guard()
        .map_err(|error| format!("binding the clock guard: {error}"))?;
    let now = hal::timer::uptime_ns();
    for (deadline, holds) in [(now + 3_600_000_000_000, true), (0, false)] {
        fixture
            .set_deadline(deadline)
            .map_err(|error| format!("setting the deadline: {error}"))?;
        let exclusive = fixture.extension.stats().exclusive;
        for value in 0..RAISES {
            let ran = fixture.raise_cached(&mut cache, value);
            ensure!(
                ran == holds,
                "the clock guard with the deadline at {deadline} ns (now {now} ns): the \
                 handler {}",
                if ran { "ran" } else { "did not run" }
            );
        }
        let locked = fixture.extension.stats().exclusive - exclusive - 1;
        ensure!(
            locked == 0,
            "the clock guard: the lock taken {locked} times for {RAISES} raises"
        );
    }
    fixture
        .unbind(binding)
        .map_err(|error| format!("unbinding the clock guard: {error}"))?;
    fixture
        .extension
        .unload()
        .map_err(|error| format!("unloading bench: {error}"))?;
    Ok(())
}

/// The bench extension loaded on the default tier (wasmi), its guard and
/// empty handler bound there and a counting handler too, then tiered up:
/// the installations, given native code's fast path in place, answer
/// every cached raise with each invocation counted, and the counter adds
/// up what was raised, on both sides of the swap; once the counter is
/// unbound, the guarded handler alone (the self-contained guard and
/// handler as one call) answers too.
fn handlers_answer_after_the_tier_up() -> TestResult {
    use dispatch::RaiseCache;
    use wasm_runtime::{bench::Fixture, LoadRequest};

    const RAISES: u64 = 100;
    let extensions = crate::extensions::get().ok_or("extensions not initialised")?;
    let bytes = extensions.module_bytes("bench")?;
    let fixture = Fixture::load(extensions.runtime(), LoadRequest::new("bench", bytes))
        .map_err(|error| format!("loading bench: {error}"))?;
    ensure!(
        fixture.extension.tier() == Tier::Interpreter,
        "bench started on {}, not wasmi",
        fixture.extension.tier()
    );
    let bound = |result: Result<dispatch::BindingId, wasm_runtime::BindError>| {
        result.map_err(|error| format!("binding: {error}"))
    };
    let guarded = bound(fixture.bind_handler_and_guard())?;
    let counter = bound(fixture.bind_counter())?;
    let mut cache = RaiseCache::default();
    let mut raise_all = |label: &str, per_raise: u64| -> TestResult {
        let invocations = fixture.extension.stats().invocations;
        for value in 0..RAISES {
            ensure!(
                fixture.raise_cached(&mut cache, value),
                "{label}: raise {value} found no handler"
            );
        }
        let counted = fixture.extension.stats().invocations - invocations;
        ensure!(
            counted == per_raise * RAISES,
            "{label}: {counted} invocations for {RAISES} raises"
        );
        Ok(())
    };
    // Guard, handler and counter: three invocations a raise.
    raise_all("on wasmi", 3)?;
    extensions
        .runtime()
        .tier_up(&fixture.extension)
        .map_err(|error| format!("the tier-up: {error}"))?;
    ensure!(
        fixture.extension.tier() == Tier::Native,
        "bench is on {} after the tier-up",
        fixture.extension.tier()
    );
    raise_all("on native code", 3)?;
    let total = fixture
        .total()
        .map_err(|error| format!("the total: {error}"))?;
    let expected = 2 * (RAISES * (RAISES - 1) / 2);
    ensure!(
        total == expected,
        "the counter added {total}, not {expected}"
    );
    let unbind = |binding| {
        fixture
            .unbind(binding)
            .map_err(|error| format!("unbinding: {error}"))
    };
    unbind(counter)?;
    raise_all("the guarded handler alone", 2)?;
    unbind(guarded)?;
    fixture
        .extension
        .unload()
        .map_err(|error| format!("unloading bench: {error}"))?;
    Ok(())
}

/// Extensions raising into each other nest their native code on one
/// kernel stack, each entry with a stack budget of its own: eight copies
/// of `nest` (each handler goes 150 calls deep, then raises the event the
/// next copy handles) on a 64 KiB stack would run into its guard page.
/// The raise procedure is refused, as a stack overflow trap, once too
/// little stack is left (`Shared::before_reentry`): the outer raise
/// returns, some copies ran nested, one faulted with `StackOverflow`,
/// and the kernel goes on.
fn nested_raises_stop_before_the_stack_runs_out() -> TestResult {
    use alloc::sync::Arc;
    use dispatch::{BindingId, Event, Handler, Install, Principal};
    use spindle_abi::FaultKind;
    use wasm_runtime::LoadRequest;

    const COPIES: usize = 8;
    let extensions = crate::extensions::get().ok_or("extensions not initialised")?;
    let runtime = extensions.runtime();
    let bytes = extensions.module_bytes("nest")?;
    let (event, _authority) = Event::new("Test.Nest", nest_intrinsic as fn(&(u64,)) -> u64);
    let event = Arc::new(event);
    event
        .remove(Principal::KERNEL, BindingId::INTRINSIC)
        .map_err(|error| format!("removing the intrinsic handler: {error}"))?;
    let port = wasm_runtime::port(event.clone());
    let overflows = Arc::new(spin::Mutex::new(0u32));
    let counted = overflows.clone();
    let recorder = runtime
        .faulted()
        .install(
            Principal::KERNEL,
            Install::new(Handler::new(move |&(_, kind): &(u64, u32)| {
                if kind == FaultKind::StackOverflow.code() {
                    *counted.lock() += 1;
                }
            })),
        )
        .map_err(|error| format!("recording faults: {error}"))?;
    let mut copies = Vec::new();
    let loaded = (0..COPIES).try_for_each(|copy| {
        let request = LoadRequest::new("nest", bytes)
            .grant_event_to_raise(port.clone())
            .tier(Tier::Native);
        let extension = runtime
            .load(request)
            .map_err(|error| format!("copy {copy} of nest: {error}"))?;
        copies.push(extension);
        Ok::<_, String>(())
    });
    let outcome = loaded.and_then(|()| {
        let answer = Arc::new(spin::Mutex::new(None));
        let seen = answer.clone();
        let raiser = event.clone();
        let thread = sched::spawn_with_stack("nest", 64 * 1024, move || {
            *seen.lock() = Some(raiser.raise(&mut (0,)).ok());
        })
        .map_err(|_| String::from("no memory for the raising thread"))?;
        thread.join();
        let answer = *answer.lock();
        Ok::<_, String>(answer)
    });
    let _ = runtime.faulted().remove(Principal::KERNEL, recorder);
    let faults: u64 = copies.iter().map(|copy| copy.stats().faults).sum();
    for copy in copies {
        copy.unload()
            .map_err(|error| format!("unloading a copy of nest: {error}"))?;
    }
    let Some(answer) = outcome? else {
        return Err(String::from("the raising thread did not finish"));
    };
    let overflows = *overflows.lock();
    ensure!(
        overflows >= 1 && faults >= u64::from(overflows),
        "{overflows} stack overflow faults reported, {faults} counted: the nesting was not stopped"
    );
    let nested = answer.unwrap_or(0);
    ensure!(
        (1..COPIES as u64).contains(&nested),
        "copies nested below the first: {nested} (expected some, not all {COPIES})"
    );
    Ok(())
}

/// `Test.Nest`'s intrinsic handler (removed: only the copies answer).
fn nest_intrinsic(_: &(u64,)) -> u64 {
    0
}

/// `hal::context::stack_room`, which the runtime asks (through the
/// kernel's strands) before a kernel procedure that may run another
/// extension's code: on a thread's 64 KiB stack it reports what is left
/// below the caller, less as the thread goes deeper; off a thread's stack
/// it knows nothing.
fn stack_room_measures_kernel_stacks() -> TestResult {
    const STACK_BYTES: u64 = 64 * 1024;
    const DEPTH: u32 = 16;
    const FRAME_BYTES: usize = 1024;
    /// The room at the bottom of `depth` frames of at least `FRAME_BYTES`.
    #[inline(never)]
    fn room_below(depth: u32) -> Option<u64> {
        let mut frame = [0u8; FRAME_BYTES];
        core::hint::black_box(&mut frame);
        if depth == 0 {
            return hal::context::stack_room(frame.as_ptr() as u64);
        }
        let room = room_below(depth - 1);
        core::hint::black_box(&frame);
        room
    }
    let rooms = alloc::sync::Arc::new(spin::Mutex::new(None));
    let seen = rooms.clone();
    let thread = sched::spawn_with_stack("stack-room", STACK_BYTES, move || {
        let here = 0u8;
        let at_entry = hal::context::stack_room(core::ptr::addr_of!(here) as u64);
        *seen.lock() = Some((at_entry, room_below(DEPTH)));
    })
    .map_err(|_| String::from("no memory for the test thread"))?;
    thread.join();
    let Some((Some(at_entry), Some(deeper))) = *rooms.lock() else {
        return Err(String::from(
            "stack_room knew nothing of the thread's stack (or the thread never ran)",
        ));
    };
    ensure!(
        at_entry < STACK_BYTES && at_entry > STACK_BYTES - 8 * 1024,
        "room at the thread's entry {at_entry} bytes, for a {STACK_BYTES}-byte stack"
    );
    let used = at_entry - deeper;
    ensure!(
        used >= u64::from(DEPTH) * FRAME_BYTES as u64 && used < STACK_BYTES,
        "{DEPTH} frames of {FRAME_BYTES} bytes took {used} bytes of room"
    );
    ensure!(
        hal::context::stack_room(0x1000).is_none(),
        "room known for an address on no kernel stack"
    );
    Ok(())
}

/// Runs `test` with every load that names no tier pinned to `tier`, and
/// unpins afterwards whatever the outcome.
fn pinned(tier: Tier, test: impl FnOnce() -> TestResult) -> TestResult {
    let extensions = crate::extensions::get().ok_or("extensions not initialised")?;
    extensions.runtime().pin_tier(Some(tier));
    let result = test();
    extensions.runtime().pin_tier(None);
    result
}

/// The extensions the kernel tests use compile natively (none falls back
/// to the interpreter), their code pages are read-execute and not
/// writable while loaded, and unloading returns them.
fn shipped_extensions_run_natively() -> TestResult {
    let extensions = crate::extensions::get().ok_or("extensions not initialised")?;
    ensure!(
        extensions.runtime().has_native_engine(),
        "the kernel has no native-code tier"
    );
    let code_before = hal::native_code::mapped_bytes();
    let linear_before = hal::linear_memory::mapped_bytes();
    for name in [
        "hello",
        "tick-counter",
        "even-ticks",
        "runaway",
        "faulty",
        "c-hello",
        "big",
    ] {
        extensions.load_on(name, Tier::Native)?;
        let tier = extensions.tier_of(name);
        let mapped = hal::native_code::mapped_bytes();
        let linear = hal::linear_memory::mapped_bytes();
        let first_page = hal::memory::CODE_BASE;
        let writable = hal::memory::protection_of(first_page);
        extensions.unload(name)?;
        ensure!(
            tier == Some(Tier::Native),
            "{name} ran on {} instead of native code",
            tier.map_or("nothing", Tier::name)
        );
        ensure!(mapped > code_before, "{name} mapped no code memory");
        ensure!(
            linear > linear_before,
            "{name}'s linear memory is not in the linear-memory region"
        );
        ensure!(
            writable == Some(hal::memory::Protection::ReadOnly),
            "{name}'s first code page is not read-only (W^X)"
        );
    }
    let code_after = hal::native_code::mapped_bytes();
    ensure!(
        code_after == code_before,
        "unloading left {} bytes of code memory mapped",
        code_after.saturating_sub(code_before)
    );
    let linear_after = hal::linear_memory::mapped_bytes();
    ensure!(
        linear_after == linear_before,
        "unloading left {} bytes of linear memory mapped",
        linear_after.saturating_sub(linear_before)
    );
    Ok(())
}

/// Every test of `ktests::extensions` again, on the native tier.
fn extension_tests_pass_natively() -> TestResult {
    run_pinned(Tier::Native)
}

/// Every test of `ktests::extensions` with `tier` pinned; the failures,
/// each with its reason.
fn run_pinned(tier: Tier) -> TestResult {
    let mut failures: Vec<String> = Vec::new();
    pinned(tier, || {
        for test in extensions::TESTS {
            hal::console::write_fmt(format_args!("\n  {tier}: {} ... ", test.name));
            let mut result = (test.run)();
            if !hal::cpu::are_interrupts_enabled() {
                hal::cpu::enable_interrupts();
                result = result.and(Err(String::from("it returned with interrupts disabled")));
            }
            match result {
                Ok(()) => hal::console::write_str("ok"),
                Err(why) => {
                    hal::console::write_str("FAILED");
                    failures.push(format!("{}: {why}", test.name));
                }
            }
        }
        hal::console::write_str("\n  ");
        Ok(())
    })?;
    ensure!(failures.is_empty(), "{}", failures.join("; "));
    Ok(())
}

/// Loaded on the default tier, `tick-counter` starts on the interpreter,
/// is compiled on a kernel thread and swapped in while the clock thread
/// keeps raising Timer.Tick into it: its count never goes back and keeps
/// advancing on native code.
fn default_loads_tier_up_while_running() -> TestResult {
    let extensions = crate::extensions::get().ok_or("extensions not initialised")?;
    extensions.load("tick-counter")?;
    let result = (|| -> TestResult {
        let started = extensions.tier_of("tick-counter");
        let mut counts = Vec::new();
        let mut tier = started;
        // The compilation takes well under a second even under TCG.
        for _ in 0..100 {
            counts.push(count(extensions)?);
            tier = extensions.tier_of("tick-counter");
            if tier == Some(Tier::Native) {
                break;
            }
            sched::sleep_ms(50);
        }
        ensure!(
            started == Some(Tier::Interpreter),
            "a default load did not start on the interpreter"
        );
        ensure!(
            tier == Some(Tier::Native),
            "tick-counter was not moved to native code in 5 s"
        );
        let at_swap = count(extensions)?;
        sched::sleep_ms(100);
        let after = count(extensions)?;
        ensure!(
            counts.windows(2).all(|pair| pair[0] <= pair[1])
                && counts.last().is_some_and(|&last| last <= at_swap),
            "the count went back across the tier-up: {counts:?} then {at_swap}"
        );
        ensure!(
            after > at_swap,
            "no tick counted on native code: {at_swap} then {after}"
        );
        Ok(())
    })();
    extensions.unload("tick-counter")?;
    result
}

fn count(extensions: &crate::extensions::Extensions) -> Result<u64, String> {
    match extensions.call("tick-counter", "count", &[])? {
        Some(wasm_runtime::WasmValue::I64(value)) => Ok(value as u64),
        _ => Err(String::from("tick-counter.count returned no i64")),
    }
}

/// Every test of `ktests::extensions` again, on the interpreter (the run
/// of the group itself is on the default tier, which tiers up).
fn extension_tests_pass_on_the_interpreter() -> TestResult {
    run_pinned(Tier::Interpreter)
}
