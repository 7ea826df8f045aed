//! Sockets (`AF_INET` over the loopback interface, and local `AF_UNIX`
//! ones): our own checks of their semantics and errors, and Debian's
//! busybox `httpd`, `wget` and `nc` talking to each other.

use alloc::string::String;

use super::{ensure, user::run_and_capture, KernelTest, TestResult};
use linux_process::threads::{self as user, UserExit};

pub const TESTS: &[KernelTest] = &[
    KernelTest {
        name: "udp_and_tcp_sockets_over_loopback_as_linux_programs_use_them",
        run: sockets_program,
    },
    KernelTest {
        name: "a_server_and_a_client_talk_over_named_unix_sockets",
        run: local_sockets_program,
    },
    KernelTest {
        name: "busybox_httpd_wget_and_nc_transfer_files_over_loopback",
        run: busybox_network_applets,
    },
];

/// `user/sockets.c`: UDP (ephemeral ports, addresses, connected sockets,
/// peeking, truncation, vectors), TCP (non-blocking connect, accept4,
/// 256 KiB each way between two processes, shutdown, EPIPE) and the
/// errors Linux gives.
fn sockets_program() -> TestResult {
    let personality = crate::linux::personality().ok_or("the Linux personality is not set up")?;
    let processes = personality.processes();
    let (end, output) = run_and_capture("sockets", &[])?;
    ensure!(
        end == UserExit::Exited(0) && output.contains("sockets: ok"),
        "sockets {end}, printing:\n{output}"
    );
    ensure!(
        personality.processes() == processes,
        "{} processes outlived the test",
        personality.processes() - processes
    );
    Ok(())
}

/// `user/localsockets.c`: a server and a forked client over a stream
/// socket bound to a path (accept, names, `SO_PEERCRED`, a descriptor
/// passed with `SCM_RIGHTS`, the end of file) and datagram sockets
/// (`sendto` a path, the sender's abstract name, a default peer), and
/// the errors of `bind` and `connect`.
fn local_sockets_program() -> TestResult {
    let personality = crate::linux::personality().ok_or("the Linux personality is not set up")?;
    let processes = personality.processes();
    let (end, output) = run_and_capture("localsockets", &[])?;
    ensure!(
        end == UserExit::Exited(0) && output.contains("localsockets: ok"),
        "localsockets {end}, printing:\n{output}"
    );
    ensure!(
        personality.processes() == processes,
        "{} processes outlived the test",
        personality.processes() - processes
    );
    Ok(())
}

/// What [`busybox_network_applets`] runs: `httpd` serves a page and a
/// 300 KiB file of random bytes to `wget`; `nc` sends the file to a
/// listening `nc` (whose input stays open: at the end of its input
/// busybox `nc` stops reading, on Linux too); `wget` of a port nobody
/// listens on is refused.
const SCRIPT: &str = "mkdir -p /tmp/www\n\
    dd if=/dev/urandom of=/tmp/www/blob bs=1024 count=300 2>/dev/null\n\
    echo 'hello from spindle' > /tmp/www/index.html\n\
    httpd -p 127.0.0.1:8080 -h /tmp/www\n\
    wget -q -O - http://127.0.0.1:8080/index.html\n\
    wget -q -O /tmp/blob.got http://127.0.0.1:8080/blob && cmp /tmp/www/blob /tmp/blob.got && echo http blob intact\n\
    sleep 2 | nc -l -p 9000 > /tmp/nc.got &\n\
    listener=$!\n\
    sleep 1\n\
    nc 127.0.0.1 9000 < /tmp/www/blob\n\
    wait $listener\n\
    cmp /tmp/www/blob /tmp/nc.got && echo nc blob intact\n\
    wget -q -O - http://127.0.0.1:8081/ 2>/dev/null || echo refused\n\
    kill $(pidof httpd)\n\
    rm -r /tmp/www /tmp/blob.got /tmp/nc.got\n";

fn busybox_network_applets() -> TestResult {
    let (_, mark) = crate::console_output::recent_console_output(u64::MAX);
    let end = user::spawn_path(
        "sh",
        b"/bin/busybox",
        &[b"sh", b"-c", SCRIPT.as_bytes()],
        &[],
    )?
    .join();
    let (output, _) = crate::console_output::recent_console_output(mark);
    let output = String::from_utf8_lossy(&output);
    let expected = "hello from spindle\nhttp blob intact\nnc blob intact\nrefused\n";
    ensure!(
        end == UserExit::Exited(0) && output == expected,
        "the script {end}; it printed:\n{output}\ninstead of:\n{expected}"
    );
    Ok(())
}
