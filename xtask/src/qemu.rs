//! QEMU: the one flag list, an interactive boot, and a harness-owned guest.
//!
//! [`qemu_args`] is the only place QEMU's command line is made. Two ways to
//! boot use it:
//! - [`run_interactive`] (`./x run`): QEMU inherits the terminal; QEMU puts it
//!   in raw mode itself.
//! - [`Guest`] (`./x test`, `./x bench`): the harness owns the serial line
//!   through QEMU's stdin and stdout pipes (`-serial stdio`), so it works with
//!   no terminal and no standard input (CI). Every guest has a wall-clock
//!   deadline, and QEMU is killed on every exit path: when the `Guest` is
//!   dropped, by a panic hook (the workspace builds with `panic = "abort"`,
//!   which skips destructors), and by the kernel's parent-death signal if
//!   xtask itself is killed (see [`qemu_command`]).
//!
//! The kernel ends QEMU through `isa-debug-exit` (see [`crate::parse`] for
//! the exit codes).

use std::{
    env,
    io::{Read, Write},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, Command, ExitStatus, Stdio},
    sync::{Arc, Condvar, Mutex, MutexGuard, Once},
    thread::{self, JoinHandle},
    time::{Duration, Instant},
};

use crate::{parse::GuestExit, Result};

/// The QEMU binary (Debian's `qemu-system-x86`).
pub const QEMU: &str = "qemu-system-x86_64";

/// I/O port of QEMU's `isa-debug-exit` device (the kernel writes its exit
/// value there).
pub const DEBUG_EXIT_PORT: u16 = 0xf4;

/// Default wall-clock deadline of one QEMU run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Environment variable overriding [`DEFAULT_TIMEOUT`], in seconds.
pub const TIMEOUT_VARIABLE: &str = "SPINDLE_QEMU_TIMEOUT";
/// Environment variable naming a pcap file to record the network
/// interface's frames into (QEMU's `filter-dump`), for any QEMU run.
pub const NET_DUMP_VARIABLE: &str = "SPINDLE_NET_DUMP";

/// How often a waiting harness checks whether QEMU has exited.
const EXIT_POLL_INTERVAL: Duration = Duration::from_millis(5);

/// How long to wait for QEMU's output pipes to drain after it exited.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// How QEMU executes the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    /// TCG, QEMU's binary translator: the default (see design.md, "Toolchain
    /// facts": this machine's KVM is nested and slower than TCG).
    Tcg,
    /// KVM, for machines with real hardware virtualization.
    Kvm,
}

impl Accel {
    /// Parses `tcg` or `kvm`.
    pub fn parse(text: &str) -> Result<Self> {
        match text {
            "tcg" => Ok(Self::Tcg),
            "kvm" => Ok(Self::Kvm),
            other => Err(format!("unknown accelerator `{other}` (expected tcg or kvm)").into()),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Tcg => "tcg",
            Self::Kvm => "kvm",
        }
    }
}

/// Everything that varies between QEMU runs.
#[derive(Clone, Debug)]
pub struct BootConfig {
    /// The kernel ELF, booted with `-kernel` (PVH entry note).
    pub kernel: PathBuf,
    /// The kernel command line, e.g. `spindle.mode=shell`.
    pub append: String,
    /// Accelerator.
    pub accel: Accel,
    /// The boot archive given to QEMU with `-initrd` (extensions), if any.
    pub initrd: Option<PathBuf>,
    /// Adds `-icount shift=0`: guest time advances 1 ns per instruction,
    /// exact and repeatable but blind to cache and TLB costs (TCG only).
    pub is_icount: bool,
    /// Ports of the host's 127.0.0.1 forwarded to the guest's network
    /// interface, as QEMU's `hostfwd` values (`udp:127.0.0.1:7007-:7`).
    pub forwards: Vec<String>,
    /// The NIC on a raw link instead: QEMU's port and the harness's, on
    /// 127.0.0.1 (`-netdev socket,udp=...`).
    pub raw_link: Option<(u16, u16)>,
    /// The NIC behind a PCI-to-PCI bridge (on bus 1) instead of on bus 0.
    pub nic_behind_bridge: bool,
}

impl BootConfig {
    /// A TCG boot of `kernel` with the command line `spindle.mode=<mode>`.
    pub fn new(kernel: &Path, mode: &str, accel: Accel) -> Self {
        Self {
            kernel: kernel.to_path_buf(),
            initrd: crate::image::boot_archive(),
            append: format!("spindle.mode={mode}"),
            accel,
            is_icount: false,
            forwards: Vec::new(),
            raw_link: None,
            nic_behind_bridge: false,
        }
    }
}

/// QEMU's command line: the ONE place its flags are listed.
///
/// A q35 PC with 512 MiB and one CPU, no display, no reboot (a triple fault
/// ends QEMU instead of looping), the first serial port on QEMU's stdio, no
/// monitor (so stdin is all serial), and `isa-debug-exit` for exit codes.
pub fn qemu_args(config: &BootConfig) -> Vec<String> {
    let mut args: Vec<String> = [
        "-machine",
        "q35",
        "-m",
        "512M",
        "-smp",
        "1",
        "-cpu",
        // XSAVE and AVX for the context switch's extended state; QEMU 7.2
        // under TCG hangs on setting CR4.OSXSAVE unless XSAVEOPT is
        // offered too. With AVX what every AVX processor has (SSSE3,
        // SSE4.1, SSE4.2, POPCNT): compilers assume them with AVX, and
        // without them programs die of SIGILL on VEX-encoded SSE4
        // instructions (the kernel then keeps AVX off, hal::user).
        "qemu64,+smep,+smap,+xsave,+xsaveopt,+avx,+ssse3,+sse4.1,+sse4.2,+popcnt",
        "-display",
        "none",
        "-no-reboot",
        "-serial",
        "stdio",
        "-monitor",
        "none",
        "-device",
    ]
    .iter()
    .map(|arg| arg.to_string())
    .collect();
    args.push(format!(
        "isa-debug-exit,iobase={DEBUG_EXIT_PORT:#x},iosize=0x04"
    ));
    // The network interface: virtio-net on QEMU's user-mode network
    // (10.0.2.15 behind the router 10.0.2.2), replacing the machine's
    // default NIC.
    let netdev = match config.raw_link {
        // Frames as UDP datagrams to and from the harness (the other host).
        Some((qemu_port, our_port)) => {
            format!("socket,id=net0,udp=127.0.0.1:{our_port},localaddr=127.0.0.1:{qemu_port}")
        }
        None => {
            let mut netdev = String::from("user,id=net0");
            for forward in &config.forwards {
                netdev.push_str(",hostfwd=");
                netdev.push_str(forward);
            }
            netdev
        }
    };
    let nic = if config.nic_behind_bridge {
        args.extend([
            "-device".to_string(),
            "pci-bridge,id=bridge1,chassis_nr=1".to_string(),
        ]);
        "virtio-net-pci,netdev=net0,bus=bridge1,addr=0x3"
    } else {
        "virtio-net-pci,netdev=net0"
    };
    args.extend([
        "-netdev".to_string(),
        netdev,
        "-device".to_string(),
        nic.to_string(),
    ]);
    // Every frame of the interface into a pcap file, when asked (how a
    // transfer's segments, acknowledgements and windows went).
    if let Ok(path) = env::var(NET_DUMP_VARIABLE) {
        args.extend([
            "-object".to_string(),
            format!("filter-dump,id=dump0,netdev=net0,file={path}"),
        ]);
    }
    args.extend(["-accel".to_string(), config.accel.name().to_string()]);
    if config.is_icount {
        args.extend(["-icount".to_string(), "shift=0".to_string()]);
    }
    args.extend([
        "-kernel".to_string(),
        config.kernel.display().to_string(),
        "-append".to_string(),
        config.append.clone(),
    ]);
    if let Some(initrd) = &config.initrd {
        args.extend(["-initrd".to_string(), initrd.display().to_string()]);
    }
    args
}

/// Launcher that makes the kernel kill QEMU when xtask dies, however it dies
/// (`SIGKILL`, an abort): util-linux's `setpriv --pdeathsig KILL` sets the
/// parent-death signal and then execs QEMU, keeping its process id.
const DEATH_SIGNAL_LAUNCHER: &str = "/usr/bin/setpriv";

/// A `Command` that starts QEMU with [`qemu_args`], tied to this process's
/// life through [`DEATH_SIGNAL_LAUNCHER`] when it is installed (it is part
/// of util-linux, which every Debian has).
fn qemu_command(config: &BootConfig) -> Command {
    let mut command = if Path::new(DEATH_SIGNAL_LAUNCHER).is_file() {
        let mut command = Command::new(DEATH_SIGNAL_LAUNCHER);
        command.args(["--pdeathsig", "KILL", QEMU]);
        command
    } else {
        Command::new(QEMU)
    };
    command.args(qemu_args(config));
    command
}

/// Checks a boot configuration before QEMU sees it.
fn check_config(config: &BootConfig) -> Result<()> {
    if config.is_icount && config.accel != Accel::Tcg {
        return Err("-icount needs TCG (drop --accel kvm)".into());
    }
    Ok(())
}

/// Boots with QEMU attached to the terminal and returns how it ended.
pub fn run_interactive(config: &BootConfig) -> Result<GuestExit> {
    check_config(config)?;
    let status = qemu_command(config)
        .status()
        .map_err(|error| format!("cannot start {QEMU}: {error}"))?;
    Ok(decode(status))
}

fn decode(status: ExitStatus) -> GuestExit {
    use std::os::unix::process::ExitStatusExt;
    GuestExit::from_status(status.code(), status.signal())
}

/// The per-run deadline: [`TIMEOUT_VARIABLE`] seconds, else
/// [`DEFAULT_TIMEOUT`].
pub fn run_timeout() -> Result<Duration> {
    match env::var(TIMEOUT_VARIABLE) {
        Ok(text) => text
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|seconds| seconds.is_finite() && *seconds > 0.0)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| format!("{TIMEOUT_VARIABLE}={text}: expected seconds > 0").into()),
        Err(_) => Ok(DEFAULT_TIMEOUT),
    }
}

/// Process ids of running QEMUs, killed by the panic hook.
static LIVE_QEMUS: Mutex<Vec<u32>> = Mutex::new(Vec::new());
static PANIC_HOOK: Once = Once::new();

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Installs (once) a panic hook that kills every live QEMU, because with
/// `panic = "abort"` no `Drop` runs.
fn install_panic_hook() {
    PANIC_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            for pid in lock(&LIVE_QEMUS).iter() {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
            previous(info);
        }));
    });
}

/// Bytes QEMU wrote to one of its output pipes, shared with a reader thread.
#[derive(Default)]
struct Capture {
    state: Mutex<CaptureState>,
    changed: Condvar,
}

#[derive(Default)]
struct CaptureState {
    bytes: Vec<u8>,
    /// The pipe reached end of file (QEMU exited or closed it).
    is_closed: bool,
}

impl Capture {
    /// Starts a thread that appends everything from `pipe` to a new capture.
    fn start(mut pipe: impl Read + Send + 'static) -> (Arc<Self>, JoinHandle<()>) {
        let capture = Arc::new(Self::default());
        let shared = Arc::clone(&capture);
        let reader = thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            loop {
                let count = pipe.read(&mut buffer).unwrap_or(0);
                let mut state = lock(&shared.state);
                if count == 0 {
                    state.is_closed = true;
                } else {
                    state.bytes.extend_from_slice(&buffer[..count]);
                }
                let is_closed = state.is_closed;
                drop(state);
                shared.changed.notify_all();
                if is_closed {
                    break;
                }
            }
        });
        (capture, reader)
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&lock(&self.state).bytes).replace('\r', "")
    }
}

/// The prompt of the kernel's shell (no newline after it).
pub const SHELL_PROMPT: &str = "spindle> ";

/// A QEMU whose serial line the harness owns: it reads what the guest prints,
/// types into it, and waits for it to exit, all within one deadline.
/// Dropping it kills QEMU.
pub struct Guest {
    child: Child,
    stdin: Option<ChildStdin>,
    serial: Arc<Capture>,
    qemu_stderr: Arc<Capture>,
    readers: Vec<JoinHandle<()>>,
    started_at: Instant,
    deadline: Instant,
    timeout: Duration,
    exit: Option<GuestExit>,
    /// Ports of the host forwarded into the guest (`BootConfig::forwards`).
    pub forwards: Vec<crate::netpeer::Forward>,
    /// The other end of the NIC's raw link (`BootConfig::raw_link`).
    pub raw_link: Option<crate::netpeer::RawLink>,
}

impl Guest {
    /// Starts QEMU with piped stdio; the run must end within `timeout`.
    pub fn boot(config: &BootConfig, timeout: Duration) -> Result<Self> {
        check_config(config)?;
        install_panic_hook();
        let started_at = Instant::now();
        let mut child = qemu_command(config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| format!("cannot start {QEMU}: {error}"))?;
        lock(&LIVE_QEMUS).push(child.id());
        let stdin = child.stdin.take();
        let (serial, serial_reader) = Capture::start(child.stdout.take().ok_or("no stdout pipe")?);
        let (qemu_stderr, stderr_reader) =
            Capture::start(child.stderr.take().ok_or("no stderr pipe")?);
        Ok(Self {
            child,
            stdin,
            serial,
            qemu_stderr,
            readers: vec![serial_reader, stderr_reader],
            started_at,
            deadline: started_at + timeout,
            timeout,
            exit: None,
            forwards: Vec::new(),
            raw_link: None,
        })
    }

    /// The host port forwarded to the guest's `port` over `protocol`.
    pub fn host_port(&self, protocol: crate::netpeer::Protocol, port: u16) -> Result<u16> {
        crate::netpeer::host_port(&self.forwards, protocol, port)
    }

    /// Number of serial bytes received so far (a position for
    /// [`Guest::wait_for`]).
    pub fn serial_len(&self) -> usize {
        lock(&self.serial.state).bytes.len()
    }

    /// Everything the guest printed so far, `\r` removed.
    pub fn serial_log(&self) -> String {
        self.serial.text()
    }

    /// Serial log and QEMU's own error output, for failure reports.
    pub fn full_log(&self) -> String {
        let mut log = self.serial_log();
        let stderr = self.qemu_stderr.text();
        if !stderr.trim().is_empty() {
            log.push_str("\n--- QEMU stderr ---\n");
            log.push_str(&stderr);
        }
        log
    }

    /// Waits until `pattern` appears in the serial output at or after byte
    /// `from`, and returns where it starts. `within` caps the wait below the
    /// run's deadline. Fails if QEMU exits or a deadline passes first.
    pub fn wait_for(
        &mut self,
        pattern: &str,
        from: usize,
        within: Option<Duration>,
    ) -> Result<usize> {
        let limit = self.limit(within);
        let needle = pattern.as_bytes();
        let serial = Arc::clone(&self.serial);
        let mut state = lock(&serial.state);
        loop {
            if let Some(found) = find(&state.bytes, needle, from) {
                return Ok(found);
            }
            if state.is_closed {
                drop(state);
                let exit = self.wait_exit(Some(DRAIN_TIMEOUT))?;
                return Err(format!(
                    "QEMU ended before `{}` appeared: {exit}",
                    pattern.escape_debug()
                )
                .into());
            }
            let now = Instant::now();
            if now >= limit {
                drop(state);
                return Err(
                    self.timeout_message(&format!("`{}` to appear", pattern.escape_debug()), limit)
                );
            }
            state = serial
                .changed
                .wait_timeout(state, limit - now)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }

    /// Types `text` into the serial line.
    pub fn send(&mut self, text: &str) -> Result<()> {
        let stdin = self.stdin.as_mut().ok_or("QEMU's stdin is closed")?;
        stdin
            .write_all(text.as_bytes())
            .and_then(|()| stdin.flush())
            .map_err(|error| format!("writing to QEMU's serial line: {error}").into())
    }

    /// Waits for the first shell prompt; returns the time from starting QEMU.
    pub fn wait_for_prompt(&mut self) -> Result<Duration> {
        self.wait_for(SHELL_PROMPT, 0, None)?;
        Ok(self.started_at.elapsed())
    }

    /// Types `line` and Enter at a prompt and returns the reply: what the
    /// guest printed up to the next prompt, without the echoed command line.
    pub fn command(&mut self, line: &str) -> Result<String> {
        let start = self.serial_len();
        self.send(&format!("{line}\n"))?;
        let prompt_at = self
            .wait_for(SHELL_PROMPT, start, None)
            .map_err(|error| format!("after typing `{line}`: {error}"))?;
        let bytes = lock(&self.serial.state).bytes[start..prompt_at].to_vec();
        let text = String::from_utf8_lossy(&bytes).replace('\r', "");
        Ok(strip_echo(&text, line).to_string())
    }

    /// Waits for QEMU to exit (within `within`, capped by the deadline); on
    /// a timeout kills it and reports [`GuestExit::TimedOut`].
    pub fn wait_exit(&mut self, within: Option<Duration>) -> Result<GuestExit> {
        if let Some(exit) = self.exit {
            return Ok(exit);
        }
        let limit = self.limit(within);
        loop {
            if let Some(status) = self.child.try_wait()? {
                self.finish(decode(status));
                break;
            }
            if Instant::now() >= limit {
                self.kill();
                self.exit = Some(GuestExit::TimedOut);
                break;
            }
            thread::sleep(EXIT_POLL_INTERVAL);
        }
        Ok(self.exit.unwrap_or(GuestExit::TimedOut))
    }

    /// Kills QEMU (if still running) and waits for it.
    pub fn kill(&mut self) {
        if self.exit.is_none() {
            let _ = self.child.kill();
            let status = self.child.wait();
            self.finish(status.map(decode).unwrap_or(GuestExit::Signalled(None)));
        }
    }

    /// Records the exit and lets the output readers drain.
    fn finish(&mut self, exit: GuestExit) {
        self.exit = Some(exit);
        self.stdin = None;
        lock(&LIVE_QEMUS).retain(|pid| *pid != self.child.id());
        let drain_limit = Instant::now() + DRAIN_TIMEOUT;
        for capture in [&self.serial, &self.qemu_stderr] {
            let mut state = lock(&capture.state);
            while !state.is_closed && Instant::now() < drain_limit {
                state = capture
                    .changed
                    .wait_timeout(state, drain_limit.saturating_duration_since(Instant::now()))
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .0;
            }
        }
        for reader in self.readers.drain(..) {
            if reader.is_finished() {
                let _ = reader.join();
            }
        }
    }

    fn limit(&self, within: Option<Duration>) -> Instant {
        match within {
            Some(within) => (Instant::now() + within).min(self.deadline),
            None => self.deadline,
        }
    }

    fn timeout_message(&self, what: &str, limit: Instant) -> Box<dyn std::error::Error> {
        if limit >= self.deadline {
            format!(
                "run deadline of {:.0} s passed waiting for {what} (set {TIMEOUT_VARIABLE} to change it)",
                self.timeout.as_secs_f64()
            )
            .into()
        } else {
            format!(
                "timed out after {:.1} s waiting for {what}",
                self.started_at.elapsed().as_secs_f64()
            )
            .into()
        }
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The reply in `text` (what followed typing `line`): the kernel echoes the
/// typed line, so a first line equal to it is dropped.
fn strip_echo<'a>(text: &'a str, line: &str) -> &'a str {
    match text.split_once('\n') {
        Some((echo, reply)) if echo.trim() == line.trim() => reply,
        None if text.trim() == line.trim() => "",
        _ => text,
    }
}

/// First index `>= from` where `needle` occurs in `haystack`.
fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if needle.is_empty() {
        return Some(from.min(haystack.len()));
    }
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|window| window == needle)
        .map(|offset| from + offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_respects_start() {
        assert_eq!(find(b"ab> ab> ", b"> ", 0), Some(2));
        assert_eq!(find(b"ab> ab> ", b"> ", 3), Some(6));
        assert_eq!(find(b"ab> ", b"> ", 9), None);
    }

    #[test]
    fn echo_is_dropped_from_replies() {
        assert_eq!(
            strip_echo("help\ncommands: help\n", "help"),
            "commands: help\n"
        );
        assert_eq!(strip_echo("commands: help\n", "help"), "commands: help\n");
        assert_eq!(strip_echo("halt", "halt"), "");
        assert_eq!(strip_echo("mem \nframes 3\n", "mem"), "frames 3\n");
    }

    #[test]
    fn flags_follow_the_contract() {
        let mut config = BootConfig::new(Path::new("/k"), "test", Accel::Tcg);
        config.initrd = None;
        let args = qemu_args(&config).join(" ");
        assert!(args.contains("-serial stdio"));
        assert!(args.contains("-no-reboot"));
        assert!(args.contains("-device isa-debug-exit,iobase=0xf4,iosize=0x04"));
        assert!(args.contains("-accel tcg"));
        assert!(args.ends_with("-kernel /k -append spindle.mode=test"));
        assert!(!args.contains("-icount"));
        assert!(!args.contains("-initrd"));
        config.initrd = Some(PathBuf::from("/i"));
        assert!(qemu_args(&config).join(" ").ends_with("-initrd /i"));
        config.is_icount = true;
        assert!(qemu_args(&config).join(" ").contains("-icount shift=0"));
        config.accel = Accel::Kvm;
        assert!(check_config(&config).is_err());
    }
}
