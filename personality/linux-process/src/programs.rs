//! What a process runs, as `/proc` and `prctl(PR_GET_NAME)` tell it: the
//! program file, its arguments and environment, and its command name
//! (`comm`), recorded when the kernel starts a program or a process
//! `execve`s one, and kept with the process when it ends.

use alloc::format;

use ::process::{self, Program};

/// The kernel started `process` from program `name` of the boot archive
/// (`bin/NAME`, which is `/bin/NAME` of the tree) with `arguments`: its
/// command is `name`, its program file `/bin/NAME` if the tree has it (a
/// link followed: `sh` is busybox's).
pub fn program_started(process: &process::Process, name: &str, arguments: &[&[u8]]) {
    let path = format!("/bin/{name}");
    record_program(process, path.as_bytes(), arguments, &[]);
}

/// Process `process` `execve`d the file `path` with `arguments`.
pub fn program_executed(
    process: &process::Process,
    path: &[u8],
    arguments: &[&[u8]],
    environment: &[&[u8]],
) {
    record_program(process, path, arguments, environment);
}

/// Records that `process` runs the file `path` with `arguments`: what
/// `/proc` and `prctl(PR_GET_NAME)` say of it (the command is the path's
/// base name, as Linux sets `comm` at `execve`).
fn record_program(
    process: &process::Process,
    path: &[u8],
    arguments: &[&[u8]],
    environment: &[&[u8]],
) {
    let personality = crate::personality();
    let executable =
        personality.and_then(|personality| personality.executable_path(process.id(), path));
    let program = Program::new(path, arguments, environment, executable);
    if let Some(personality) = personality {
        personality.set_command_name(process.id(), &program.command);
    }
    process.set_program(program);
}

/// Process `pid` is ending and its personality state goes: its command
/// name (which `prctl` may have changed) is kept with the process, so
/// that `/proc` still names the zombie as Linux does.
pub fn process_ending(pid: u64) {
    let name = crate::personality()
        .and_then(|personality| personality.files(pid))
        .and_then(|files| files.command_name());
    if let (Some(name), Some(process)) = (name, process::get(pid)) {
        let mut program = process.program();
        program.command = name;
        process.set_program(program);
    }
}
