//! The kernel shell on the serial console.
//!
//! Reads a line (echoing what is typed; Enter is `\r` or `\n`, backspace
//! edits), runs the command, prints the prompt [`PROMPT`] again. Input is
//! polled: when no byte is waiting the shell sleeps for a millisecond, so an
//! idle shell costs almost nothing.

use alloc::{string::String, sync::Arc, vec::Vec};

use hal::console;
use wasm_runtime::Tier;

/// The prompt; the test harness waits for exactly this string.
pub const PROMPT: &str = "spindle> ";

/// One shell command.
struct Command {
    name: &'static str,
    help: &'static str,
    run: fn(&str),
}

const COMMANDS: &[Command] = &[
    Command {
        name: "help",
        help: "list commands",
        run: help,
    },
    Command {
        name: "mem",
        help: "physical frames and heap in use and free",
        run: mem,
    },
    Command {
        name: "threads",
        help: "list kernel threads",
        run: threads,
    },
    Command {
        name: "uptime",
        help: "time since boot",
        run: uptime,
    },
    Command {
        name: "ext",
        help: "extensions: ext list | available | load NAME [wasmi|native] [files=DIRECTORY] | unload NAME | call NAME FUNCTION [ARG...]",
        run: ext,
    },
    Command {
        name: "run",
        help: "run a program of the boot archive in user mode: run PROGRAM [ARG...] (`run` alone lists them)",
        run: run_program,
    },
    Command {
        name: "events",
        help: "kernel events: handlers, guards, counters",
        run: events,
    },
    Command {
        name: "domains",
        help: "the nameserver's domains and each extension's",
        run: domains,
    },
    Command {
        name: "profile",
        help: "sampling profiler: profile start | profile stop (call chains by ticks; addr2line -f -e the kernel ELF names the addresses)",
        run: profile,
    },
    Command {
        name: "http",
        help: "the in-kernel HTTP server: http (report) | http start [PORT] [ROOT] | http stop",
        run: http,
    },
    Command {
        name: "net",
        help: "the network interface: net (address and counters) | net forward [udp|tcp] PORT ADDRESS:PORT | net unforward [udp|tcp] PORT",
        run: net,
    },
    Command {
        name: "trace",
        help: "log a process's system calls: trace PID | trace off PID | trace (lists the traced)",
        run: trace,
    },
    Command {
        name: "halt",
        help: "stop the machine (QEMU exits)",
        run: halt,
    },
];

/// Runs the shell forever (until `halt`).
pub fn run() {
    console::write_str("\nSpindle shell. Type 'help' for commands.\n");
    loop {
        console::write_str(PROMPT);
        let line = read_line();
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        execute(line);
    }
}

/// Runs one command line; whether the command exists (an unknown one is
/// reported on the console). The Linux personality's `spindle` program
/// reaches the kernel shell through this (system call
/// [`SHELL_SYSCALL`]).
pub fn execute(line: &str) -> bool {
    let line = line.trim();
    let (name, arguments) = line.split_once(' ').unwrap_or((line, ""));
    match COMMANDS.iter().find(|command| command.name == name) {
        Some(command) => {
            (command.run)(arguments.trim());
            true
        }
        None => {
            console::write_fmt(format_args!(
                "unknown command: {name} (type 'help' for a list)\n"
            ));
            false
        }
    }
}

/// Spindle's application-specific system call that runs a kernel shell
/// command line for a user program: `syscall(SHELL_SYSCALL, line, length)`
/// returns 0, or `-ENOENT` for an unknown command (`-EFAULT`, `-EINVAL`
/// for a bad line). `/bin/spindle` (user/spindle.c) makes it.
pub const SHELL_SYSCALL: u64 = 0x5350_0002;

/// Most bytes of a command line given to [`SHELL_SYSCALL`].
const MAX_SYSCALL_LINE: u64 = 1024;

/// [`SHELL_SYSCALL`]'s implementation.
pub fn shell_syscall(line: u64, length: u64) -> i64 {
    use linux_abi::Errno;
    if length > MAX_SYSCALL_LINE {
        return Errno::EINVAL.as_negative();
    }
    let mut bytes = alloc::vec![0u8; length as usize];
    if hal::user::copy_from_user(&mut bytes, line).is_err() {
        return Errno::EFAULT.as_negative();
    }
    let Ok(text) = String::from_utf8(bytes) else {
        return Errno::EINVAL.as_negative();
    };
    // On a kernel thread of its own, with the stack the console's shell
    // has: the calling process's kernel stack (64 KiB) is too small for
    // some commands (compiling an extension to native code at
    // `ext load NAME native` needs more), and a command must not overflow it.
    let found = Arc::new(core::sync::atomic::AtomicBool::new(false));
    let report = found.clone();
    let spawned = sched::spawn_with_stack(
        "spindle",
        crate::extensions::EXTENSION_STACK_BYTES,
        move || {
            report.store(execute(&text), core::sync::atomic::Ordering::Release);
        },
    );
    match spawned {
        Ok(thread) => {
            thread.join();
        }
        Err(_) => return Errno::ENOMEM.as_negative(),
    }
    if found.load(core::sync::atomic::Ordering::Acquire) {
        0
    } else {
        -2 // ENOENT: no such command
    }
}

const BACKSPACE: u8 = 0x08;
const DELETE: u8 = 0x7f;
const MAX_LINE: usize = 256;

fn read_line() -> String {
    let mut line = String::new();
    loop {
        let Some(byte) = console::try_read_byte() else {
            sched::sleep_ms(1);
            continue;
        };
        match byte {
            b'\r' | b'\n' => {
                console::write_str("\n");
                return line;
            }
            BACKSPACE | DELETE => {
                if line.pop().is_some() {
                    console::write_str("\x08 \x08");
                }
            }
            0x20..=0x7e if line.len() < MAX_LINE => {
                line.push(byte as char);
                let echo = [byte];
                console::write_str(core::str::from_utf8(&echo).unwrap_or(""));
            }
            _ => {}
        }
    }
}

fn help(_: &str) {
    for command in COMMANDS {
        console::write_fmt(format_args!("  {:<8} {}\n", command.name, command.help));
    }
}

fn mem(_: &str) {
    let frames = hal::memory::frame_stats();
    let heap = hal::heap::stats();
    console::write_fmt(format_args!(
        "frames: {} used, {} free, {} total (4 KiB each)\nheap: {} bytes used, {} bytes free, {} bytes mapped, {} allocations\n",
        frames.total - frames.free,
        frames.free,
        frames.total,
        heap.allocated_bytes,
        heap.available_bytes,
        heap.mapped_bytes,
        heap.allocation_count,
    ));
}

fn threads(_: &str) {
    console::write_str("  id  state     cpu_ms  name\n");
    for thread in sched::threads() {
        let state = match thread.state {
            sched::ThreadState::Ready => "ready",
            sched::ThreadState::Running => "running",
            sched::ThreadState::Blocked => "blocked",
            sched::ThreadState::Sleeping => "sleeping",
        };
        console::write_fmt(format_args!(
            "  {:>2}  {:<8} {:>7}  {}\n",
            thread.id,
            state,
            thread.cpu_ticks * 1000 / hal::timer::TICK_HZ,
            thread.name
        ));
    }
}

fn uptime(_: &str) {
    let ms = hal::timer::uptime_ns() / 1_000_000;
    console::write_fmt(format_args!(
        "up {} ms ({}.{:03} s), {} ticks\n",
        ms,
        ms / 1000,
        ms % 1000,
        hal::timer::ticks()
    ));
}

fn print_lines(lines: impl IntoIterator<Item = String>) {
    for line in lines {
        console::write_fmt(format_args!("  {line}\n"));
    }
}

/// `run PROGRAM [ARG...]`: starts `bin/PROGRAM` from the boot archive as
/// a user program, waits for it, and says how it ended.
fn run_program(arguments: &str) {
    let Some(extensions) = crate::extensions::get() else {
        console::write_str("error: no boot archive\n");
        return;
    };
    let words: Vec<&str> = arguments.split_whitespace().collect();
    let Some(&name) = words.first() else {
        let programs: Vec<String> = extensions
            .archive_files("bin/")
            .into_iter()
            .map(|(path, _)| String::from(path.trim_start_matches("bin/")))
            .collect();
        console::write_fmt(format_args!("programs: {}\n", programs.join(" ")));
        return;
    };
    let path = alloc::format!("bin/{name}");
    let Some(&(_, file)) = extensions
        .archive_files(&path)
        .iter()
        .find(|(entry, _)| *entry == path)
    else {
        console::write_fmt(format_args!(
            "error: no program {name} in the boot archive (`run` lists them)\n"
        ));
        return;
    };
    match linux_process::threads::spawn_program(name, loader::FileBytes::Lent(file), &words) {
        Ok(thread) => {
            let end = thread.join();
            console::write_fmt(format_args!("{name} {end}\n"));
        }
        Err(error) => console::write_fmt(format_args!("error: cannot run {name}: {error}\n")),
    }
}

fn trace(arguments: &str) {
    let words: Vec<&str> = arguments.split_ascii_whitespace().collect();
    let result = match words[..] {
        [] => {
            let traced = crate::tracing::traced();
            if traced.is_empty() {
                Ok(String::from("no process is traced"))
            } else {
                let list: Vec<String> = traced.iter().map(|pid| alloc::format!("{pid}")).collect();
                Ok(alloc::format!("traced: {}", list.join(" ")))
            }
        }
        [pid] => match pid.parse::<u64>() {
            Ok(pid) => crate::tracing::trace(pid).map(|()| alloc::format!("tracing process {pid}")),
            Err(_) => Err(alloc::format!("`{pid}` is not a process id")),
        },
        ["off", pid] => match pid.parse::<u64>() {
            Ok(pid) => crate::tracing::untrace(pid)
                .map(|()| alloc::format!("process {pid} no longer traced")),
            Err(_) => Err(alloc::format!("`{pid}` is not a process id")),
        },
        _ => Err(String::from("usage: trace PID | trace off PID | trace")),
    };
    match result {
        Ok(message) => console::write_fmt(format_args!("{message}\n")),
        Err(error) => console::write_fmt(format_args!("error: {error}\n")),
    }
}

fn ext(arguments: &str) {
    let Some(extensions) = crate::extensions::get() else {
        console::write_str("extensions are not available\n");
        return;
    };
    let mut words = arguments.split_ascii_whitespace();
    let result = match (words.next(), words.next()) {
        (Some("list") | None, None) => {
            print_lines(extensions.list());
            Ok(String::new())
        }
        (Some("available"), None) => {
            print_lines(extensions.available());
            Ok(String::new())
        }
        (Some("load"), Some(name)) => load_options(words)
            .and_then(|(tier, files)| match (tier, files) {
                (None, None) => extensions.load(name),
                (Some(tier), None) => extensions.load_on(name, tier),
                (tier, Some(files)) => extensions.load_with_files(name, tier, files),
            })
            .map(|()| match extensions.tier_of(name) {
                Some(tier) => alloc::format!("loaded {name} ({tier})"),
                None => alloc::format!("loaded {name}"),
            }),
        (Some("unload"), Some(name)) => extensions.unload(name),
        (Some("call"), Some(name)) => match words.next() {
            Some(function) => {
                let parsed: Result<Vec<u64>, _> = words.map(str::parse::<u64>).collect();
                match parsed {
                    Ok(values) => {
                        extensions
                            .call(name, function, &values)
                            .map(|value| match value {
                                Some(value) => alloc::format!("{function} returned {value}"),
                                None => alloc::format!("{function} returned nothing"),
                            })
                    }
                    Err(_) => Err(String::from("arguments must be unsigned integers")),
                }
            }
            None => Err(String::from("usage: ext call NAME FUNCTION [ARG...]")),
        },
        _ => Err(String::from(
            "usage: ext list | load NAME [wasmi|native] [files=DIRECTORY] | unload NAME | call NAME FUNCTION [ARG...] | available",
        )),
    };
    match result {
        Ok(message) if message.is_empty() => {}
        Ok(message) => console::write_fmt(format_args!("{message}\n")),
        Err(error) => console::write_fmt(format_args!("error: {error}\n")),
    }
}

/// The words after `ext load NAME`: a tier, and a directory to grant
/// read-only as `files=DIRECTORY`, in any order.
fn load_options<'a>(
    words: impl Iterator<Item = &'a str>,
) -> Result<(Option<Tier>, Option<&'a str>), String> {
    let (mut tier, mut files) = (None, None);
    for word in words {
        if let Some(directory) = word.strip_prefix("files=") {
            if !directory.starts_with('/') {
                return Err(alloc::format!("files={directory}: give an absolute path"));
            }
            files = Some(directory);
        } else {
            tier = Some(
                Tier::parse(word)
                    .ok_or_else(|| alloc::format!("no tier {word}: wasmi or native"))?,
            );
        }
    }
    Ok((tier, files))
}

fn events(_: &str) {
    match crate::extensions::get() {
        Some(extensions) => print_lines(extensions.events()),
        None => console::write_str("extensions are not available\n"),
    }
}

fn domains(_: &str) {
    match crate::extensions::get() {
        Some(extensions) => print_lines(extensions.domains()),
        None => console::write_str("extensions are not available\n"),
    }
}

/// How the `net` command is written.
const NET_USAGE: &str =
    "usage: net | net forward [udp|tcp] PORT ADDRESS:PORT | net unforward [udp|tcp] PORT\n";

fn net(arguments: &str) {
    let words: alloc::vec::Vec<&str> = arguments.split_whitespace().collect();
    match words.as_slice() {
        [] => {}
        ["forward", rest @ ..] | ["unforward", rest @ ..] => {
            let (protocol, rest) = match rest {
                ["tcp", rest @ ..] => (net::forwarder::Protocol::Tcp, rest),
                ["udp", rest @ ..] => (net::forwarder::Protocol::Udp, rest),
                rest => (net::forwarder::Protocol::Udp, rest),
            };
            let name = protocol.name();
            match (words[0], rest) {
                ("forward", [port, target]) => match port.parse::<u16>() {
                    Ok(port) => match crate::network::forward(protocol, port, target) {
                        Ok(()) => console::write_fmt(format_args!(
                            "forwarding {name} port {port} to {target}\n"
                        )),
                        Err(error) => console::write_fmt(format_args!("error: {error}\n")),
                    },
                    Err(_) => console::write_fmt(format_args!("error: `{port}` is not a port\n")),
                },
                ("unforward", [port]) => match port.parse::<u16>() {
                    Ok(port) => match crate::network::unforward(protocol, port) {
                        Ok(relayed) => console::write_fmt(format_args!(
                            "stopped forwarding {name} port {port} ({relayed} packets relayed)\n"
                        )),
                        Err(error) => console::write_fmt(format_args!("error: {error}\n")),
                    },
                    Err(_) => console::write_fmt(format_args!("error: `{port}` is not a port\n")),
                },
                _ => console::write_str(NET_USAGE),
            }
            return;
        }
        _ => {
            console::write_str(NET_USAGE);
            return;
        }
    }
    let (Some(network), Some(lines)) = (crate::network::network(), crate::network::report()) else {
        console::write_str("no network interface\n");
        return;
    };
    let config = network.config();
    let mac = config.mac;
    console::write_fmt(format_args!(
        "eth0: {}/{} via {}, mac {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}, {} neighbours\n",
        config.address,
        config.prefix,
        config.gateway,
        mac[0],
        mac[1],
        mac[2],
        mac[3],
        mac[4],
        mac[5],
        network.neighbors()
    ));
    for (name, value) in lines {
        if value != 0 {
            console::write_fmt(format_args!("  {name}: {value}\n"));
        }
    }
    if let Some(streams) = crate::stream_service::service() {
        for line in streams.report() {
            console::write_fmt(format_args!("  {line}\n"));
        }
    }
}

fn profile(arguments: &str) {
    match arguments {
        "start" => {
            hal::profile::start();
            console::write_str("profiling: a sample per timer tick\n");
        }
        "stop" => {
            let samples = hal::profile::stop();
            let user = samples
                .iter()
                .filter(|sample| sample[0] == hal::profile::USER_MODE)
                .count();
            // Identical chains (instruction and callers) counted once.
            let mut counts = alloc::collections::BTreeMap::<hal::profile::Sample, u64>::new();
            for sample in samples
                .iter()
                .filter(|sample| sample[0] != hal::profile::USER_MODE)
            {
                *counts.entry(*sample).or_default() += 1;
            }
            let mut ranked: Vec<(hal::profile::Sample, u64)> = counts.into_iter().collect();
            ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            console::write_fmt(format_args!(
                "{} samples: {} in user mode, {} in the kernel in {} call chains \
                 (count, then the instruction and its callers)\n",
                samples.len(),
                user,
                samples.len() - user,
                ranked.len()
            ));
            for (chain, count) in ranked {
                console::write_fmt(format_args!("  {count}"));
                for address in chain.iter().take_while(|&&address| address != 0) {
                    console::write_fmt(format_args!(" {address:#x}"));
                }
                console::write_str("\n");
            }
        }
        _ => console::write_str("usage: profile start | profile stop\n"),
    }
}

fn http(arguments: &str) {
    let words: alloc::vec::Vec<&str> = arguments.split_whitespace().collect();
    match words.as_slice() {
        [] => console::write_fmt(format_args!("{}\n", crate::http_server::report())),
        ["start", rest @ ..] if rest.len() <= 2 => {
            let port = match rest.first().map(|port| port.parse::<u16>()) {
                None => 80,
                Some(Ok(port)) => port,
                Some(Err(_)) => {
                    console::write_str("error: the port is not a number\n");
                    return;
                }
            };
            let root = rest.get(1).copied().unwrap_or("/www");
            match crate::http_server::start(port, root) {
                Ok(()) => {
                    console::write_fmt(format_args!("serving {root} over HTTP on port {port}\n"))
                }
                Err(error) => console::write_fmt(format_args!("error: {error}\n")),
            }
        }
        ["stop"] => match crate::http_server::stop() {
            Ok(requests) => console::write_fmt(format_args!(
                "the HTTP server stopped after {requests} requests\n"
            )),
            Err(error) => console::write_fmt(format_args!("error: {error}\n")),
        },
        _ => console::write_str("usage: http | http start [PORT] [ROOT] | http stop\n"),
    }
}

fn halt(_: &str) {
    console::write_str("halting\n");
    hal::qemu::exit(hal::qemu::ExitCode::Success);
}
