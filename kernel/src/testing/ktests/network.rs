//! The network interface as the running kernel has it: virtio-net up with
//! its receive interrupt, and the protocol graph dropping hostile frames
//! (the same entry the driver feeds) while it keeps answering.

use alloc::{boxed::Box, vec, vec::Vec};

use super::{ensure, KernelTest, TestResult};

pub const TESTS: &[KernelTest] = &[
    KernelTest {
        name: "the_virtio_net_interface_is_up_with_msi_x_interrupts",
        run: interface_is_up,
    },
    KernelTest {
        name: "hostile_frames_are_counted_and_dropped_and_ping_is_still_answered",
        run: hostile_frames,
    },
    KernelTest {
        name: "busybox_wget_fetches_files_from_the_in_kernel_http_server_over_loopback",
        run: in_kernel_http_server,
    },
    KernelTest {
        name: "busybox_wget_fetches_files_from_the_wasm_http_server_over_loopback",
        run: wasm_http_server,
    },
];

/// What [`wasm_http_server`] runs: the same fetches as [`HTTP_SCRIPT`]
/// from the Wasm server on port 8080, then one after it is unloaded.
const WASM_HTTP_SCRIPT: &str = "mkdir -p /tmp/wwww && echo 'from wasm' > /tmp/wwww/page.txt\n\
    wget -q -O /tmp/bb.got http://127.0.0.1:8080/bin/busybox && cmp /bin/busybox /tmp/bb.got && echo busybox intact\n\
    wget -q -O - http://127.0.0.1:8080/tmp/wwww/page.txt\n\
    wget -q -O - http://127.0.0.1:8080/tmp/wwww/page.txt\n\
    wget -q -O - http://127.0.0.1:8080/tmp/wwww/missing 2>/dev/null || echo missing refused\n\
    wget -q -O - http://127.0.0.1:8080/../etc 2>/dev/null || echo escape refused\n\
    rm -r /tmp/bb.got\n";

/// The HTTP server as a Wasm extension (`extensions/http-server`, on the
/// stream service's `TCP.StreamData`), granted `/` read-only, fetched by
/// busybox `wget` over loopback: busybox itself (2 MB, sent by the kernel
/// from the file), a small file (read into the extension's cache, then
/// served from it), a missing file, a path out of the tree. Unloaded, it
/// no longer answers.
fn wasm_http_server() -> TestResult {
    let extensions = crate::extensions::get().ok_or("no extensions")?;
    extensions.load_with_files("http-server", None, "/")?;
    let run = |script: &str| -> Result<
        (linux_process::threads::UserExit, alloc::string::String),
        alloc::string::String,
    > {
        let (_, mark) = crate::console_output::recent_console_output(u64::MAX);
        let end = linux_process::threads::spawn_path(
            "sh",
            b"/bin/busybox",
            &[b"sh", b"-c", script.as_bytes()],
            &[],
        )?
        .join();
        let (output, _) = crate::console_output::recent_console_output(mark);
        Ok((
            end,
            alloc::string::String::from_utf8_lossy(&output).into_owned(),
        ))
    };
    let (end, output) = run(WASM_HTTP_SCRIPT)?;
    let counter = |export: &str| match extensions.call("http-server", export, &[])? {
        Some(wasm_runtime::WasmValue::I64(value)) => Ok(value),
        _ => Err(alloc::format!("http-server's {export} returned no i64")),
    };
    let (requests, hits) = (counter("requests")?, counter("cache_hits")?);
    let report = crate::stream_service::service()
        .map(|service| service.report().join("; "))
        .unwrap_or_default();
    extensions.unload("http-server")?;
    let expected = "busybox intact\nfrom wasm\nfrom wasm\nmissing refused\nescape refused\n";
    ensure!(
        end == linux_process::threads::UserExit::Exited(0) && output == expected,
        "the script {end}; it printed:\n{output}\ninstead of:\n{expected}"
    );
    ensure!(
        requests == 5 && hits == 1,
        "the extension counted {requests} requests and {hits} cache hits, not 5 and 1"
    );
    ensure!(
        report.contains("port 8080 served by http-server") && report.contains("5 answered"),
        "the stream service reported: {report}"
    );
    let (end, output) = run(
        "wget -q -O - http://127.0.0.1:8080/tmp/wwww/page.txt 2>/dev/null || echo unloaded; rm -r /tmp/wwww\n",
    )?;
    ensure!(
        end == linux_process::threads::UserExit::Exited(0) && output == "unloaded\n",
        "after unloading, the script {end} and printed: {output}"
    );
    Ok(())
}

/// What [`in_kernel_http_server`] runs: busybox itself (2 MB, a boot
/// archive file sent from where the kernel keeps it), a file written to
/// /tmp (read, then cached), the same again (from the cache), a missing
/// file (404) and a path out of the tree (refused).
const HTTP_SCRIPT: &str = "mkdir -p /tmp/kwww && echo 'from the kernel' > /tmp/kwww/page.txt\n\
    wget -q -O /tmp/bb.got http://127.0.0.1:8088/bin/busybox && cmp /bin/busybox /tmp/bb.got && echo busybox intact\n\
    wget -q -O - http://127.0.0.1:8088/tmp/kwww/page.txt\n\
    wget -q -O - http://127.0.0.1:8088/tmp/kwww/page.txt\n\
    wget -q -O - http://127.0.0.1:8088/tmp/kwww/missing 2>/dev/null || echo missing refused\n\
    wget -q -O - http://127.0.0.1:8088/../etc 2>/dev/null || echo escape refused\n\
    rm -r /tmp/kwww /tmp/bb.got\n";

/// The in-kernel HTTP server over loopback, fetched by busybox `wget`.
fn in_kernel_http_server() -> TestResult {
    crate::http_server::start(8088, "/")?;
    let (_, mark) = crate::console_output::recent_console_output(u64::MAX);
    let end = linux_process::threads::spawn_path(
        "sh",
        b"/bin/busybox",
        &[b"sh", b"-c", HTTP_SCRIPT.as_bytes()],
        &[],
    )?
    .join();
    let report = crate::http_server::report();
    let requests = crate::http_server::stop()?;
    let (output, _) = crate::console_output::recent_console_output(mark);
    let output = alloc::string::String::from_utf8_lossy(&output);
    let expected =
        "busybox intact\nfrom the kernel\nfrom the kernel\nmissing refused\nescape refused\n";
    ensure!(
        end == linux_process::threads::UserExit::Exited(0) && output == expected,
        "the script {end}; it printed:\n{output}\ninstead of:\n{expected}"
    );
    ensure!(
        requests == 5,
        "the server answered {requests} requests, not 5"
    );
    ensure!(
        report.contains("cache 1 hits"),
        "the second fetch of page.txt did not come from the cache: {report}"
    );
    Ok(())
}

fn interface_is_up() -> TestResult {
    let network = crate::network::network().ok_or("no network interface came up")?;
    let config = network.config();
    ensure!(
        config.address == net_address(10, 0, 2, 15),
        "the interface has address {}",
        config.address
    );
    let report = crate::network::report().ok_or("no report")?;
    ensure!(
        report
            .iter()
            .any(|(name, _)| *name == "device: receive interrupts"),
        "the report lacks the interrupt counter"
    );
    Ok(())
}

fn net_address(a: u8, b: u8, c: u8, d: u8) -> core::net::Ipv4Addr {
    core::net::Ipv4Addr::new(a, b, c, d)
}

/// An ICMP echo request from 10.0.2.2 (QEMU's router) to us, as it
/// would arrive: Ethernet, IPv4 with its checksum, ICMP with its own.
fn echo_request(mac: [u8; 6], sequence: u16) -> Vec<u8> {
    let mut frame = vec![0u8; 14 + 20 + 16];
    frame[..6].copy_from_slice(&mac);
    frame[6..12].copy_from_slice(&[0x52, 0x55, 10, 0, 2, 2]);
    frame[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut frame[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&36u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = 1;
    ip[12..16].copy_from_slice(&[10, 0, 2, 2]);
    ip[16..20].copy_from_slice(&[10, 0, 2, 15]);
    let checksum = internet_checksum(ip);
    ip[10..12].copy_from_slice(&checksum.to_be_bytes());
    let icmp = &mut frame[34..];
    icmp[0] = 8;
    icmp[4..6].copy_from_slice(&0x5350u16.to_be_bytes());
    icmp[6..8].copy_from_slice(&sequence.to_be_bytes());
    icmp[8..].copy_from_slice(b"spindle!");
    let checksum = internet_checksum(icmp);
    icmp[2..4].copy_from_slice(&checksum.to_be_bytes());
    frame
}

fn internet_checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|pair| u32::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// 3,000 frames, random or mutated from good ones (truncated, bit
/// flips, bad lengths and checksums), enter the live graph with the
/// kernel's handlers and the sockets attached: no panic, every frame
/// counted, the malformed ones as such; a good echo request after them
/// is still answered.
fn hostile_frames() -> TestResult {
    let network = crate::network::network().ok_or("no network interface")?;
    let mac = network.config().mac;
    let before = network.stats();
    let seeds = [echo_request(mac, 1), udp_to(mac, 9, b"hello")];
    let mut state = 0x5eed_1234_abcd_9876u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    const FRAMES: u64 = 3000;
    for round in 0..FRAMES {
        let mut frame: Vec<u8> = if round % 3 == 0 {
            (0..(next() % 120) as usize).map(|_| next() as u8).collect()
        } else {
            seeds[round as usize % seeds.len()].clone()
        };
        for _ in 0..1 + next() % 3 {
            if !frame.is_empty() {
                let at = next() as usize % frame.len();
                frame[at] ^= 1 << (next() % 8);
            }
        }
        if next() % 4 == 0 {
            let keep = next() as usize % (frame.len() + 1);
            frame.truncate(keep);
        }
        network.receive(Box::new(frame));
    }
    let after = network.stats();
    ensure!(
        after.frames_received - before.frames_received >= FRAMES,
        "{} frames counted of {FRAMES}",
        after.frames_received - before.frames_received
    );
    ensure!(
        after.malformed_total() - before.malformed_total() > FRAMES / 3,
        "only {} frames counted as malformed",
        after.malformed_total() - before.malformed_total()
    );
    // The frames above made answers (mutated echo requests are still
    // echo requests) faster than QEMU takes them: let the device's
    // transmit ring drain first.
    sched::sleep_ms(50);
    let answered = network.stats().echo_answered;
    let sent = network.stats().frames_sent;
    network.receive(Box::new(echo_request(mac, 2)));
    let after = network.stats();
    ensure!(
        after.echo_answered == answered + 1 && after.frames_sent > sent,
        "the echo request after the hostile frames was not answered ({} answered, {} frames sent, {} refused by the device)",
        after.echo_answered - answered,
        after.frames_sent - sent,
        after.send_failed
    );
    Ok(())
}

/// A UDP datagram from 10.0.2.2 to our `port`, with a correct checksum
/// of zero ("none").
fn udp_to(mac: [u8; 6], port: u16, data: &[u8]) -> Vec<u8> {
    let udp_len = 8 + data.len();
    let mut frame = vec![0u8; 14 + 20 + udp_len];
    frame[..6].copy_from_slice(&mac);
    frame[6..12].copy_from_slice(&[0x52, 0x55, 10, 0, 2, 2]);
    frame[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut frame[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((20 + udp_len) as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 0, 2, 2]);
    ip[16..20].copy_from_slice(&[10, 0, 2, 15]);
    let checksum = internet_checksum(ip);
    ip[10..12].copy_from_slice(&checksum.to_be_bytes());
    let udp = &mut frame[34..];
    udp[0..2].copy_from_slice(&40000u16.to_be_bytes());
    udp[2..4].copy_from_slice(&port.to_be_bytes());
    udp[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
    udp[8..].copy_from_slice(data);
    frame
}
