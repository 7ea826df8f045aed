//! `./x bench net`: the network, Spindle beside Linux in the same QEMU
//! (TCG), same NIC model (virtio-net), same user-mode network, same host
//! clients (`netpeer`).
//!
//! - `net.udp_rtt.spindle_kernel`: a 16-byte datagram's round trip to the
//!   Wasm echo in Spindle's kernel (`udp-echo`, on `UDP.PacketArrived`);
//! - `net.udp_rtt.spindle_user`: the same to the baseline's user-level
//!   echo (`udp_echo`, a static musl program) on Spindle;
//! - `net.udp_rtt.linux_user`: the same to that program on Linux
//!   (`../shared/baseline/serve.sh`);
//! - `net.tcp_mbps.*`: 8 MiB sent from the host to a busybox `nc` sink
//!   (standard input at its end on both systems), in Mbit/s, from connect
//!   until every byte is acknowledged and the sink has closed;
//! - `net.http_rps.*`: sequential HTTP/1.0 GETs of a 15-byte file, a
//!   connection each, per second: Spindle's in-kernel server
//!   (`spindle http start`) against busybox `httpd` on Linux (and busybox
//!   `httpd` on Spindle, `net.http_rps.spindle_busybox`, and the same
//!   server as a Wasm extension on the stream service,
//!   `net.http_rps.spindle_wasm`: `extensions/http-server`).
//!
//! Each figure is a median (round trips) or a rate over the whole run,
//! every answer checked.

use std::{
    collections::BTreeMap,
    io::{BufRead, BufReader, Read, Write},
    net::Shutdown,
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use crate::{
    bench::BenchContext,
    netpeer::{self, Forward, Protocol},
    qemu::Guest,
    scenarios::save_log,
    toolchain, Result,
};

/// Round trips measured per echo.
const ROUND_TRIPS: usize = 1000;
/// Bytes of each datagram (the baseline's `udp_rtt_lo` sends 16).
const DATAGRAM: usize = 16;
/// Bytes sent to the TCP sink.
const TCP_BYTES: usize = 8 << 20;
/// HTTP requests made.
const HTTP_REQUESTS: usize = 200;
/// The small file served (the baseline's `/www/index.html`).
const INDEX: &[u8] = b"baseline httpd\n";

/// What one side measured.
struct Figures {
    udp_kernel_us: Option<f64>,
    udp_user_us: f64,
    tcp_mbps: f64,
    /// The in-kernel server on Spindle, busybox `httpd` on Linux.
    http_rps: f64,
    /// busybox `httpd` on Spindle.
    busybox_rps: Option<f64>,
    /// The Wasm server (`http-server`) on Spindle.
    wasm_rps: Option<f64>,
}

/// The suite.
pub fn net(context: &mut BenchContext) -> Result<()> {
    let spindle = spindle_figures(context)?;
    let linux = linux_figures(context)?;
    let kernel_us = spindle
        .udp_kernel_us
        .ok_or("no in-kernel echo figure on Spindle")?;
    let lines = [
        ("udp_rtt.spindle_kernel", kernel_us, "us"),
        ("udp_rtt.spindle_user", spindle.udp_user_us, "us"),
        ("udp_rtt.linux_user", linux.udp_user_us, "us"),
        ("tcp_mbps.spindle", spindle.tcp_mbps, "Mbit/s"),
        ("tcp_mbps.linux", linux.tcp_mbps, "Mbit/s"),
        ("http_rps.spindle", spindle.http_rps, "req/s"),
        (
            "http_rps.spindle_busybox",
            spindle.busybox_rps.unwrap_or(f64::NAN),
            "req/s",
        ),
        (
            "http_rps.spindle_wasm",
            spindle.wasm_rps.unwrap_or(f64::NAN),
            "req/s",
        ),
        ("http_rps.linux", linux.http_rps, "req/s"),
    ];
    for (name, value, unit) in lines {
        println!("bench net.{name} {value:.1} {unit}");
    }
    let ratios = [
        (
            "udp_rtt.kernel_vs_linux_user",
            kernel_us / linux.udp_user_us,
        ),
        (
            "udp_rtt.kernel_vs_spindle_user",
            kernel_us / spindle.udp_user_us,
        ),
        (
            "udp_rtt.spindle_user_vs_linux_user",
            spindle.udp_user_us / linux.udp_user_us,
        ),
        ("tcp_mbps.ratio", spindle.tcp_mbps / linux.tcp_mbps),
        ("http_rps.ratio", spindle.http_rps / linux.http_rps),
        (
            "http_rps.wasm_ratio",
            spindle.wasm_rps.unwrap_or(f64::NAN) / linux.http_rps,
        ),
    ];
    for (name, ratio) in ratios {
        println!("bench net.{name} {ratio:.2} x");
    }
    eprintln!(
        "\n{:<26} {:>12} {:>12} {:>8}",
        "figure", "spindle", "linux", "ratio"
    );
    eprintln!(
        "{:<26} {:>12.1} {:>12.1} {:>7.2}x",
        "udp rtt, kernel echo (us)",
        kernel_us,
        linux.udp_user_us,
        kernel_us / linux.udp_user_us
    );
    eprintln!(
        "{:<26} {:>12.1} {:>12.1} {:>7.2}x",
        "udp rtt, user echo (us)",
        spindle.udp_user_us,
        linux.udp_user_us,
        spindle.udp_user_us / linux.udp_user_us
    );
    eprintln!(
        "{:<26} {:>12.1} {:>12.1} {:>7.2}x",
        "tcp to a sink (Mbit/s)",
        spindle.tcp_mbps,
        linux.tcp_mbps,
        spindle.tcp_mbps / linux.tcp_mbps
    );
    eprintln!(
        "{:<26} {:>12.1} {:>12.1} {:>7.2}x",
        "http GETs (req/s)",
        spindle.http_rps,
        linux.http_rps,
        spindle.http_rps / linux.http_rps
    );
    if let Some(wasm_rps) = spindle.wasm_rps {
        eprintln!(
            "{:<26} {:>12.1} {:>12.1} {:>7.2}x",
            "http GETs, wasm (req/s)",
            wasm_rps,
            linux.http_rps,
            wasm_rps / linux.http_rps
        );
    }
    Ok(())
}

/// Boots Spindle with the baseline's programs and the ports forwarded,
/// and measures.
fn spindle_figures(context: &mut BenchContext) -> Result<Figures> {
    let (archive, _) = crate::bench::baseline_archive()?;
    let mut config = context.boot_config("linux")?;
    config.initrd = Some(archive);
    let forwards = [
        Forward::pick(Protocol::Udp, 7)?,
        Forward::pick(Protocol::Udp, 7007)?,
        Forward::pick(Protocol::Tcp, 5001)?,
        Forward::pick(Protocol::Tcp, 80)?,
        Forward::pick(Protocol::Tcp, 8080)?,
    ];
    config.forwards = forwards.iter().map(Forward::hostfwd).collect();
    eprintln!("x: booting Spindle with its network interface");
    let mut guest = Guest::boot(&config, context.timeout)?;
    guest.forwards = forwards.to_vec();
    let figures = measure_spindle(
        &mut guest,
        &toolchain::kernel_elf(context.profile, toolchain::Image::Testing),
    );
    save_log("bench-net", &guest.full_log());
    guest.kill();
    if let Ok(figures) = &figures {
        eprintln!(
            "x: Spindle: udp rtt {:.1} us (kernel echo), {:.1} us (user echo), tcp {:.1} Mbit/s, http {:.1} req/s",
            figures.udp_kernel_us.unwrap_or(f64::NAN),
            figures.udp_user_us,
            figures.tcp_mbps,
            figures.http_rps
        );
    }
    figures
}

fn measure_spindle(guest: &mut Guest, kernel: &Path) -> Result<Figures> {
    guest.wait_for("/ # ", 0, None)?;
    shell(guest, "spindle ext load udp-echo", "answering UDP port 7")?;
    let echo = guest.host_port(Protocol::Udp, 7)?;
    warm_up(echo)?;
    let udp_kernel_us = netpeer::udp_echo_median_us(echo, &[0x5a; DATAGRAM - 8], ROUND_TRIPS)?;
    shell(guest, "spindle ext unload udp-echo", "unloaded")?;
    shell(
        guest,
        "/bench/udp_echo 7007 & echo user-echo-started",
        "user-echo-started",
    )?;
    let user = guest.host_port(Protocol::Udp, 7007)?;
    warm_up(user)?;
    let udp_user_us = netpeer::udp_echo_median_us(user, &[0x5a; DATAGRAM - 8], ROUND_TRIPS)?;
    shell(
        guest,
        "(while true; do nc -l -p 5001 </dev/null >/dev/null; done) & echo sink-started",
        "sink-started",
    )?;
    // Threads' CPU time and the interface's counters around the transfer,
    // and a profile of it (kernel addresses by timer ticks), in the saved
    // log (target/qemu-logs/bench-net.log): where
    // the guest's time went, frames, coalesced segments.
    shell(guest, "spindle net", "device: receive interrupts")?;
    shell(guest, "spindle threads", "cpu_ms")?;
    let sink = guest.host_port(Protocol::Tcp, 5001)?;
    probe_sink(sink)?;
    shell(guest, "spindle profile start", "profiling")?;
    let tcp_mbps = tcp_sink_rate(sink)?;
    let profile_at = guest.serial_len();
    shell(guest, "spindle profile stop", "samples")?;
    // Wait for the whole list (it ends at the next prompt).
    guest.wait_for("/ # ", profile_at, Some(Duration::from_secs(30)))?;
    let log = guest.serial_log();
    save_profile(log.get(profile_at..).unwrap_or_default(), kernel);
    shell(guest, "spindle net", "device: receive interrupts")?;
    shell(guest, "spindle threads", "cpu_ms")?;
    shell(
        guest,
        "mkdir -p /www && echo 'baseline httpd' > /www/index.html && spindle http start 80 /www",
        "serving /www over HTTP on port 80",
    )?;
    let http_rps = http_rate(guest.host_port(Protocol::Tcp, 80)?)?;
    shell(
        guest,
        "spindle ext load http-server native files=/www",
        "serving HTTP on TCP port 8080",
    )?;
    let wasm_rps = http_rate(guest.host_port(Protocol::Tcp, 8080)?)?;
    shell(guest, "spindle ext unload http-server", "unloaded")?;
    shell(
        guest,
        "httpd -p 8080 -h /www && echo httpd-started",
        "httpd-started",
    )?;
    let busybox_rps = http_rate(guest.host_port(Protocol::Tcp, 8080)?)?;
    Ok(Figures {
        udp_kernel_us: Some(udp_kernel_us),
        udp_user_us,
        tcp_mbps,
        http_rps,
        busybox_rps: Some(busybox_rps),
        wasm_rps: Some(wasm_rps),
    })
}

/// Runs `line` at busybox's prompt and checks it printed `expected`.
fn shell(guest: &mut Guest, line: &str, expected: &str) -> Result<()> {
    let start = guest.serial_len();
    guest.send(&format!("{line}\n"))?;
    guest.wait_for(
        expected,
        start + line.len() + 1,
        Some(Duration::from_secs(30)),
    )?;
    Ok(())
}

/// A few exchanges first, until the echo answers (ARP, a server still
/// starting).
fn warm_up(port: u16) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut answered = 0;
    while answered < 10 {
        if netpeer::udp_exchange(port, b"warm-up", Duration::from_millis(500))?.is_some() {
            answered += 1;
        } else if Instant::now() > deadline {
            return Err(format!("no echo on port {port}").into());
        }
    }
    Ok(())
}

/// Writes the profile `spindle profile stop` printed (lines of a count
/// and a call chain's addresses, innermost first) by function, the
/// kernel ELF's symbols from `addr2line`, to
/// `target/qemu-logs/bench-net-profile.log`: where the transfer's time
/// went, in the function itself ("self") and in it or what it called
/// ("total"), and the commonest chains. Best effort: without `addr2line`
/// the addresses stay.
fn save_profile(printed: &str, kernel: &Path) {
    let chains: Vec<(u64, Vec<String>)> = printed
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let count = words.next()?.parse().ok()?;
            let addresses: Vec<String> = words
                .filter(|word| word.starts_with("0x"))
                .map(str::to_string)
                .collect();
            (!addresses.is_empty()).then_some((count, addresses))
        })
        .collect();
    let mut unique: Vec<&String> = chains.iter().flat_map(|(_, chain)| chain).collect();
    unique.sort();
    unique.dedup();
    let names: BTreeMap<&String, String> = Command::new("addr2line")
        .arg("-f")
        .arg("-C")
        .arg("-e")
        .arg(kernel)
        .args(unique.iter().map(|address| address.as_str()))
        .output()
        .ok()
        .map(|output| {
            let text = String::from_utf8_lossy(&output.stdout).into_owned();
            unique
                .iter()
                .copied()
                .zip(text.lines().step_by(2).map(short_name))
                .collect()
        })
        .unwrap_or_default();
    let name = |address: &String| {
        names
            .get(address)
            .cloned()
            .unwrap_or_else(|| address.clone())
    };
    let total: u64 = chains.iter().map(|(count, _)| count).sum();
    let mut own: BTreeMap<String, u64> = BTreeMap::new();
    let mut inclusive: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_chain: BTreeMap<String, u64> = BTreeMap::new();
    for (count, chain) in &chains {
        let named: Vec<String> = chain.iter().map(name).collect();
        *own.entry(named[0].clone()).or_default() += count;
        let mut seen: Vec<&String> = Vec::new();
        for function in &named {
            if !seen.contains(&function) {
                seen.push(function);
                *inclusive.entry(function.clone()).or_default() += count;
            }
        }
        *by_chain.entry(named.join(" < ")).or_default() += count;
    }
    let ranked = |counts: BTreeMap<String, u64>, rows: usize| {
        let mut list: Vec<(String, u64)> = counts.into_iter().collect();
        list.sort_by_key(|entry| std::cmp::Reverse(entry.1));
        list.into_iter()
            .take(rows)
            .map(|(what, count)| {
                format!(
                    "{count:6} {:5.1}%  {what}\n",
                    count as f64 * 100.0 / total.max(1) as f64
                )
            })
            .collect::<String>()
    };
    let text = format!(
        "{total} kernel samples\n\nself:\n{}\ntotal (self and callees):\n{}\nchains (innermost first):\n{}\n{printed}",
        ranked(own, 60),
        ranked(inclusive, 80),
        ranked(by_chain, 60),
    );
    save_log("bench-net-profile", &text);
}

/// A function's name from `addr2line -C` without generic arguments (a
/// trait implementation's `<Type as Trait>` stays), so that a table
/// stays readable.
fn short_name(name: &str) -> String {
    let kept_depth = usize::from(name.starts_with('<'));
    let mut out = String::new();
    let mut depth = 0usize;
    for character in name.chars() {
        match character {
            '<' => {
                depth += 1;
                if depth <= kept_depth {
                    out.push(character);
                }
            }
            '>' => {
                if depth <= kept_depth {
                    out.push(character);
                }
                depth = depth.saturating_sub(1);
            }
            _ if depth <= kept_depth => out.push(character),
            _ => {}
        }
    }
    out
}

/// Waits until the sink listens: a connection that is closed at once
/// (the sink's loop listens again for the measured one).
fn probe_sink(port: u16) -> Result<()> {
    let _ = netpeer::connect_when_up(port, Duration::from_secs(20))?;
    std::thread::sleep(Duration::from_millis(500));
    Ok(())
}

/// `TCP_BYTES` (or `SPINDLE_BENCH_TCP_MIB` MiB, for a longer profile) to
/// a sink: Mbit/s from connect to the sink's close.
fn tcp_sink_rate(port: u16) -> Result<f64> {
    let bytes = std::env::var("SPINDLE_BENCH_TCP_MIB")
        .ok()
        .and_then(|mib| mib.parse::<usize>().ok())
        .map_or(TCP_BYTES, |mib| mib << 20);
    let data = netpeer::pattern(bytes);
    let started = Instant::now();
    let mut stream = netpeer::connect_when_up(port, Duration::from_secs(20))?;
    stream.set_read_timeout(Some(Duration::from_secs(120)))?;
    stream.write_all(&data)?;
    stream.shutdown(Shutdown::Write)?;
    // The transfer is over when the guest has the data: the host's
    // socket has had every byte acknowledged, and the sink has closed.
    // Either alone can end early: the sink closes its side at once when
    // its standard input is at its end (Linux's, a background job of a
    // script), and the host's acknowledgements come from QEMU, a window
    // ahead of the guest.
    netpeer::wait_until_acknowledged(&stream, Duration::from_secs(120))?;
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest);
    let seconds = started.elapsed().as_secs_f64();
    Ok(bytes as f64 * 8.0 / seconds / 1e6)
}

/// Sequential GETs of `/index.html`, each checked: requests per second.
fn http_rate(port: u16) -> Result<f64> {
    // QEMU accepts the host's connection before the guest's server does
    // (a daemon still starting after its parent returned answers with a
    // reset): wait until a whole GET succeeds.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match netpeer::http_get(port, "/index.html", Duration::from_secs(5)) {
            Ok((status, body)) if status.contains(" 200") && body == INDEX => break,
            Ok(_) | Err(_) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(100))
            }
            Ok((status, _)) => return Err(format!("the server answers {status}").into()),
            Err(error) => return Err(error),
        }
    }
    let started = Instant::now();
    for request in 0..HTTP_REQUESTS {
        let (status, body) = netpeer::http_get(port, "/index.html", Duration::from_secs(20))?;
        if !status.contains(" 200") || body != INDEX {
            return Err(format!("GET {request}: {status}, {} bytes", body.len()).into());
        }
    }
    Ok(HTTP_REQUESTS as f64 / started.elapsed().as_secs_f64())
}

/// Boots the Linux baseline in serve mode (`serve.sh`) with the same NIC
/// and forwards, and measures the same.
fn linux_figures(context: &BenchContext) -> Result<Figures> {
    let out = crate::bench::build_linux_baseline()?;
    let forwards = [
        Forward::pick(Protocol::Udp, 7)?,
        Forward::pick(Protocol::Tcp, 5001)?,
        Forward::pick(Protocol::Tcp, 80)?,
    ];
    let netdev = format!(
        "user,id=n0,{}",
        forwards
            .iter()
            .map(|forward| format!("hostfwd={}", forward.hostfwd()))
            .collect::<Vec<_>>()
            .join(",")
    );
    eprintln!("x: booting Linux as the peer (serve.sh)");
    let serve = crate::repo_root().join("../shared/baseline/serve.sh");
    let mut command = Command::new("bash");
    command
        .arg(serve)
        .args(["-netdev", &netdev, "-device", "virtio-net-pci,netdev=n0"]);
    // The same capture as Spindle's (`SPINDLE_NET_DUMP`), beside it.
    if let Ok(path) = std::env::var(crate::qemu::NET_DUMP_VARIABLE) {
        command.args([
            "-object".to_string(),
            format!("filter-dump,id=dump0,netdev=n0,file={path}.linux"),
        ]);
    }
    command
        .env("BASELINE_OUT", &out)
        .env("BASELINE_ACCEL", context.accel_name())
        .env("BASELINE_TIMEOUT", "900")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn()?;
    let figures = measure_linux(&mut child, &forwards);
    // serve.sh runs QEMU under `timeout`, in a process group of its own:
    // end every process the script started, deepest first, then it.
    for pid in descendants(child.id()).into_iter().rev() {
        let _ = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
    }
    let _ = child.kill();
    let _ = child.wait();
    figures
}

fn measure_linux(child: &mut Child, forwards: &[Forward]) -> Result<Figures> {
    let stdout = child.stdout.take().ok_or("no stdout from serve.sh")?;
    let mut lines = BufReader::new(stdout).lines();
    loop {
        match lines.next() {
            Some(Ok(line)) if line.starts_with("serving") => break,
            Some(Ok(_)) => continue,
            _ => return Err("serve.sh ended before its servers ran".into()),
        }
    }
    let echo = netpeer::host_port(forwards, Protocol::Udp, 7)?;
    warm_up(echo)?;
    let udp_user_us = netpeer::udp_echo_median_us(echo, &[0x5a; DATAGRAM - 8], ROUND_TRIPS)?;
    let sink = netpeer::host_port(forwards, Protocol::Tcp, 5001)?;
    probe_sink(sink)?;
    let tcp_mbps = tcp_sink_rate(sink)?;
    let http_rps = http_rate(netpeer::host_port(forwards, Protocol::Tcp, 80)?)?;
    Ok(Figures {
        udp_kernel_us: None,
        udp_user_us,
        tcp_mbps,
        http_rps,
        busybox_rps: None,
        wasm_rps: None,
    })
}

/// The processes under `pid` (children, their children, ...), parents
/// before children, from `/proc`.
fn descendants(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut parents = vec![pid];
    while let Some(parent) = parents.pop() {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            break;
        };
        for entry in entries.flatten() {
            let Some(child) = entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<u32>().ok())
            else {
                continue;
            };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            // The parent's id is the second field after the command's
            // closing parenthesis.
            let parent_of = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|field| field.parse::<u32>().ok());
            if parent_of == Some(parent) {
                found.push(child);
                parents.push(child);
            }
        }
    }
    found
}
