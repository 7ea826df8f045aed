//! Per-application extensions of the system-call path: the tracer (a Wasm
//! extension on `MachineTrap.SyscallDone`, asynchronous, for one process)
//! and short-circuits (a program's own Wasm answer to one of its calls).

use super::{ensure, user::run_and_capture, KernelTest, TestResult};
use linux_process::threads::{self as user, UserExit};

pub const TESTS: &[KernelTest] = &[
    KernelTest {
        name: "the_tracer_logs_one_processs_calls_with_arguments_and_results",
        run: tracer_logs_one_process,
    },
    KernelTest {
        name: "a_program_short_circuits_its_own_getuid_with_a_wasm_module",
        run: short_circuit,
    },
];

/// Traces a busybox `cat` of a missing file while an untraced `hello`
/// runs beside it: the tracer logs the traced process's `openat` with its
/// `ENOENT` and its `write` of the message, none of `hello`'s `writev`
/// calls, and is unloaded when the traced process ends.
fn tracer_logs_one_process() -> TestResult {
    let extensions = crate::extensions::get().ok_or("no extensions")?;
    let archive = |name: &str| {
        let path = alloc::format!("bin/{name}");
        extensions
            .archive_files(&path)
            .first()
            .map(|&(_, bytes)| bytes)
            .ok_or(alloc::format!("{path} is not in the boot archive"))
    };
    let (busybox, hello) = (archive("busybox")?, archive("hello")?);
    let (traced, other) = (user::new_process(), user::new_process());
    ensure!(
        crate::tracing::trace(traced).is_err(),
        "a process that does not run yet was traced by `trace`"
    );
    crate::tracing::trace_from_the_start(traced)?;
    ensure!(
        crate::tracing::traced() == [traced],
        "trace did not record process {traced}"
    );
    let first = user::spawn_program_in(
        traced,
        "cat",
        loader::FileBytes::Lent(busybox),
        &["cat", "/no/such/file"],
    );
    let second = user::spawn_program_in(other, "hello", loader::FileBytes::Lent(hello), &["hello"]);
    let ends = (
        first.map(user::UserThread::join),
        second.map(user::UserThread::join),
    );
    ensure!(
        ends == (Ok(UserExit::Exited(1)), Ok(UserExit::Exited(3))),
        "cat and hello did not end as expected (1 and 3)"
    );
    ensure!(
        crate::tracing::traced().is_empty(),
        "the tracer outlived the process it traced"
    );
    for expected in ["openat(-100, ", ") = -2 ENOENT", "write(2, "] {
        ensure!(
            extensions.has_logged(expected),
            "the tracer logged no line with `{expected}`"
        );
    }
    ensure!(
        !extensions.has_logged("writev("),
        "the tracer logged a call of the process it does not trace"
    );
    Ok(())
}

/// `user/shortcircuit.c`: the program's own module answers its `getuid`
/// (1000), nothing else changes, and each refusal has its errno. The
/// module goes with the process.
fn short_circuit() -> TestResult {
    let (end, output) = run_and_capture("shortcircuit", &[])?;
    ensure!(
        end == UserExit::Exited(0) && output.contains("shortcircuit: ok"),
        "shortcircuit {end}, printing:\n{output}"
    );
    ensure!(
        !crate::tracing::is_short_circuited(sched::current().0, 102),
        "a short-circuit outlived its process"
    );
    let (end, output) = run_and_capture("busybox", &["id", "-u"])?;
    ensure!(
        end == UserExit::Exited(0) && output.contains("0\n"),
        "another program's getuid is not root's after the short-circuit: {output}"
    );
    Ok(())
}
