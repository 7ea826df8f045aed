//! The host side of the network scenarios and benchmarks: ports of the
//! host's 127.0.0.1 forwarded into a guest (QEMU's user-mode network,
//! `hostfwd`), and the clients and servers that talk to it from here.

use std::{
    io::{Read, Write},
    net::{Shutdown, TcpListener, TcpStream, UdpSocket},
    thread::{self, JoinHandle},
    time::{Duration, Instant},
};

use crate::Result;

/// A transport protocol of a forwarded port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// UDP.
    Udp,
    /// TCP.
    Tcp,
}

impl Protocol {
    fn name(self) -> &'static str {
        match self {
            Protocol::Udp => "udp",
            Protocol::Tcp => "tcp",
        }
    }
}

/// A guest port reached from a host port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Forward {
    /// Its protocol.
    pub protocol: Protocol,
    /// The port on the host's 127.0.0.1.
    pub host_port: u16,
    /// The port on the guest (10.0.2.15).
    pub guest_port: u16,
}

impl Forward {
    /// A free host port forwarded to `guest_port` (the host port is taken
    /// from the system and released for QEMU to bind).
    pub fn pick(protocol: Protocol, guest_port: u16) -> Result<Forward> {
        let host_port = match protocol {
            Protocol::Udp => UdpSocket::bind("127.0.0.1:0")?.local_addr()?.port(),
            Protocol::Tcp => TcpListener::bind("127.0.0.1:0")?.local_addr()?.port(),
        };
        Ok(Forward {
            protocol,
            host_port,
            guest_port,
        })
    }

    /// QEMU's `hostfwd` value for it.
    pub fn hostfwd(&self) -> String {
        format!(
            "{}:127.0.0.1:{}-:{}",
            self.protocol.name(),
            self.host_port,
            self.guest_port
        )
    }
}

/// The host port forwarded to `guest_port` over `protocol`.
pub fn host_port(forwards: &[Forward], protocol: Protocol, guest_port: u16) -> Result<u16> {
    forwards
        .iter()
        .find(|forward| forward.protocol == protocol && forward.guest_port == guest_port)
        .map(|forward| forward.host_port)
        .ok_or_else(|| {
            format!(
                "no {} port forwarded to guest port {guest_port}",
                protocol.name()
            )
            .into()
        })
}

/// Sends `payload` to the host's `port` and waits up to `within` for a
/// datagram back: `Ok(None)` when none came.
pub fn udp_exchange(port: u16, payload: &[u8], within: Duration) -> Result<Option<Vec<u8>>> {
    let socket = UdpSocket::bind("127.0.0.1:0")?;
    socket.connect(("127.0.0.1", port))?;
    socket.set_read_timeout(Some(within))?;
    socket.send(payload)?;
    let mut buffer = vec![0; 65536];
    match socket.recv(&mut buffer) {
        Ok(len) => Ok(Some(buffer[..len].to_vec())),
        Err(error)
            if matches!(
                error.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Ok(None)
        }
        // A port-unreachable answer on the host's loopback.
        Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// Round trips of `payload` to an echo behind `port`: the median in
/// microseconds over `count` exchanges, each checked to come back equal.
pub fn udp_echo_median_us(port: u16, payload: &[u8], count: usize) -> Result<f64> {
    let socket = UdpSocket::bind("127.0.0.1:0")?;
    socket.connect(("127.0.0.1", port))?;
    socket.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut buffer = vec![0; 65536];
    let mut times = Vec::with_capacity(count);
    for round in 0..count {
        let mut message = payload.to_vec();
        message.extend_from_slice(&(round as u64).to_le_bytes());
        let started = Instant::now();
        socket.send(&message)?;
        let len = socket
            .recv(&mut buffer)
            .map_err(|error| format!("no echo for datagram {round}: {error}"))?;
        let elapsed = started.elapsed();
        if buffer[..len] != message[..] {
            return Err(format!("datagram {round} came back changed").into());
        }
        times.push(elapsed.as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// `GET path` over HTTP/1.0 from the host's `port`: status line and body.
pub fn http_get(port: u16, path: &str, within: Duration) -> Result<(String, Vec<u8>)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(within))?;
    stream.write_all(format!("GET {path} HTTP/1.0\r\nHost: spindle\r\n\r\n").as_bytes())?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let end = response
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .ok_or("the response has no end of headers")?;
    let head = String::from_utf8_lossy(&response[..end]).into_owned();
    let status = head.lines().next().unwrap_or("").to_string();
    Ok((status, response[end + 4..].to_vec()))
}

/// Connects to the host's `port` and sends `data`, then closes the
/// sending side and waits for the peer to close.
pub fn tcp_send(port: u16, data: &[u8], within: Duration) -> Result<()> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_write_timeout(Some(within))?;
    stream.set_read_timeout(Some(within))?;
    stream.write_all(data)?;
    stream.shutdown(Shutdown::Write)?;
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest);
    Ok(())
}

/// Connects to `port` (retrying while the server is not up yet, until
/// `within`).
pub fn connect_when_up(port: u16, within: Duration) -> Result<TcpStream> {
    let deadline = Instant::now() + within;
    loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(stream) => return Ok(stream),
            Err(error) if Instant::now() >= deadline => {
                return Err(format!("port {port}: {error}").into())
            }
            Err(_) => thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// Bytes the host's TCP socket bound to 127.0.0.1:`local_port` has sent
/// and not had acknowledged yet, or not yet sent (its `tx_queue` in
/// `/proc/net/tcp`); `None` if the socket is not listed.
pub fn unacknowledged_bytes(local_port: u16) -> Option<u64> {
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    let local = format!("0100007F:{local_port:04X}");
    table.lines().skip(1).find_map(|line| {
        let mut columns = line.split_whitespace().skip(1);
        if columns.next()? != local {
            return None;
        }
        let queues = columns.nth(2)?;
        let (sending, _) = queues.split_once(':')?;
        u64::from_str_radix(sending, 16).ok()
    })
}

/// Waits until everything written on `stream` is acknowledged by its
/// peer (QEMU's user-mode network, which takes the data in as its guest
/// takes it, holding at most a window of its own), polling every 100 us.
pub fn wait_until_acknowledged(stream: &TcpStream, within: Duration) -> Result<()> {
    let port = stream.local_addr()?.port();
    let deadline = Instant::now() + within;
    loop {
        match unacknowledged_bytes(port) {
            Some(0) | None => return Ok(()),
            Some(_) if Instant::now() > deadline => {
                return Err(
                    format!("the data sent from port {port} was not all acknowledged").into(),
                )
            }
            Some(_) => thread::sleep(Duration::from_micros(100)),
        }
    }
}

/// A one-request HTTP server on the host's 127.0.0.1 (the guest reaches
/// it as 10.0.2.2:`port`), answering `body`.
pub struct HostHttpServer {
    /// Its port.
    pub port: u16,
    thread: JoinHandle<std::io::Result<()>>,
}

impl HostHttpServer {
    /// Starts it.
    pub fn start(body: Vec<u8>) -> Result<HostHttpServer> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let thread = thread::spawn(move || -> std::io::Result<()> {
            let (mut stream, _) = listener.accept()?;
            stream.set_read_timeout(Some(Duration::from_secs(30)))?;
            let mut request = Vec::new();
            let mut buffer = [0; 1024];
            while !request.windows(4).any(|window| window == b"\r\n\r\n") {
                let len = stream.read(&mut buffer)?;
                if len == 0 {
                    break;
                }
                request.extend_from_slice(&buffer[..len]);
            }
            let head = format!(
                "HTTP/1.0 200 OK\r\nContent-Length: {}\r\nContent-Type: text/plain\r\n\r\n",
                body.len()
            );
            stream.write_all(head.as_bytes())?;
            stream.write_all(&body)?;
            Ok(())
        });
        Ok(HostHttpServer { port, thread })
    }

    /// Waits for it to have served its request.
    pub fn finish(self) -> Result<()> {
        match self.thread.join() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(format!("the host's HTTP server: {error}").into()),
            Err(_) => Err("the host's HTTP server panicked".into()),
        }
    }
}

/// A one-connection TCP echo server on the host's 127.0.0.1 (the guest
/// reaches it as 10.0.2.2:`port`): what it reads it writes back, until the
/// client closes its sending side.
pub struct HostTcpEcho {
    /// Its port.
    pub port: u16,
    thread: JoinHandle<std::io::Result<u64>>,
}

impl HostTcpEcho {
    /// Starts it.
    pub fn start() -> Result<HostTcpEcho> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let thread = thread::spawn(move || -> std::io::Result<u64> {
            let (mut stream, _) = listener.accept()?;
            stream.set_read_timeout(Some(Duration::from_secs(60)))?;
            let mut reader = stream.try_clone()?;
            let echoed = std::io::copy(&mut reader, &mut stream)?;
            stream.shutdown(Shutdown::Write)?;
            Ok(echoed)
        });
        Ok(HostTcpEcho { port, thread })
    }

    /// Waits for it to have served its connection: the bytes it echoed.
    pub fn finish(self) -> Result<u64> {
        match self.thread.join() {
            Ok(Ok(echoed)) => Ok(echoed),
            Ok(Err(error)) => Err(format!("the host's TCP echo server: {error}").into()),
            Err(_) => Err("the host's TCP echo server panicked".into()),
        }
    }
}

/// Connects to the host's `port`, sends `data` (from a second thread, so
/// that neither direction waits for the other), closes the sending side
/// and reads everything that comes back.
pub fn tcp_round_trip(port: u16, data: &[u8], within: Duration) -> Result<Vec<u8>> {
    let stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(within))?;
    stream.set_write_timeout(Some(within))?;
    let mut writer = stream.try_clone()?;
    let outgoing = data.to_vec();
    let sender = thread::spawn(move || -> std::io::Result<()> {
        writer.write_all(&outgoing)?;
        writer.shutdown(Shutdown::Write)
    });
    let mut back = Vec::new();
    let read = (&stream).read_to_end(&mut back);
    match sender.join() {
        Ok(Ok(())) => {}
        Ok(Err(error)) => return Err(format!("sending to port {port}: {error}").into()),
        Err(_) => return Err("the sending thread panicked".into()),
    }
    read.map_err(|error| format!("reading from port {port}: {error}"))?;
    Ok(back)
}

/// `count` deterministic pseudo-random bytes (the same on every run), for
/// transfers checked end to end.
pub fn pattern(count: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// The MD5 of `data` in hex, from the host's `md5sum` (coreutils).
pub fn md5_hex(data: &[u8]) -> Result<String> {
    let mut child = std::process::Command::new("md5sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|error| format!("cannot run md5sum: {error}"))?;
    child
        .stdin
        .take()
        .ok_or("no stdin for md5sum")?
        .write_all(data)?;
    let output = child.wait_with_output()?;
    let text = String::from_utf8_lossy(&output.stdout);
    Ok(text.split_whitespace().next().unwrap_or("").to_string())
}

/// A UDP server on the host's 127.0.0.1 (the guest reaches it as
/// 10.0.2.2:`port`) that answers every datagram with `prefix` and the
/// datagram, until dropped.
pub struct HostUdpResponder {
    /// Its port.
    pub port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl HostUdpResponder {
    /// Starts it.
    pub fn start(prefix: &'static [u8]) -> Result<HostUdpResponder> {
        let socket = UdpSocket::bind("127.0.0.1:0")?;
        let port = socket.local_addr()?.port();
        socket.set_read_timeout(Some(Duration::from_millis(100)))?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        thread::spawn(move || {
            let mut buffer = vec![0; 65536];
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok((len, from)) = socket.recv_from(&mut buffer) {
                    let mut answer = prefix.to_vec();
                    answer.extend_from_slice(&buffer[..len]);
                    let _ = socket.send_to(&answer, from);
                }
            }
        });
        Ok(HostUdpResponder { port, stop })
    }
}

impl Drop for HostUdpResponder {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The harness's end of a NIC on a raw link (`-netdev socket,udp=`): every
/// Ethernet frame the guest sends arrives here as one UDP datagram, and
/// every datagram sent to `qemu_port` enters the guest as one frame. The
/// harness plays the host 10.0.2.2 ([`PEER_MAC`]).
pub struct RawLink {
    socket: UdpSocket,
    /// QEMU's port on 127.0.0.1.
    pub qemu_port: u16,
}

/// The guest's MAC address (QEMU's default for the first NIC).
pub const GUEST_MAC: [u8; 6] = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];
/// The MAC address the harness uses on a raw link.
pub const PEER_MAC: [u8; 6] = [0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc];
/// The guest's address.
pub const GUEST_IP: [u8; 4] = [10, 0, 2, 15];
/// The harness's address on a raw link.
pub const PEER_IP: [u8; 4] = [10, 0, 2, 2];

impl RawLink {
    /// Binds the harness's end and picks a free port for QEMU's.
    pub fn open() -> Result<RawLink> {
        let socket = UdpSocket::bind("127.0.0.1:0")?;
        let qemu_port = UdpSocket::bind("127.0.0.1:0")?.local_addr()?.port();
        Ok(RawLink { socket, qemu_port })
    }

    /// The harness's port.
    pub fn our_port(&self) -> Result<u16> {
        Ok(self.socket.local_addr()?.port())
    }

    /// Sends one frame to the guest.
    pub fn send(&self, frame: &[u8]) -> Result<()> {
        self.socket.send_to(frame, ("127.0.0.1", self.qemu_port))?;
        Ok(())
    }

    /// Reads and drops every frame from the guest waiting in the
    /// harness's socket; how many. The socket's receive buffer holds a
    /// few hundred frames: after a burst that the guest answers frame by
    /// frame (hostile frames, many of them ARP requests it replies to),
    /// unread answers fill it and the host drops whatever comes next,
    /// the answer a test then waits for among it.
    pub fn discard_pending(&self) -> Result<usize> {
        self.socket.set_nonblocking(true)?;
        let mut buffer = vec![0; 65536];
        let mut discarded = 0;
        let outcome = loop {
            match self.socket.recv(&mut buffer) {
                Ok(_) => discarded += 1,
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                    break Ok(discarded)
                }
                Err(error) => break Err(error.into()),
            }
        };
        self.socket.set_nonblocking(false)?;
        outcome
    }

    /// The next frame from the guest that `wanted` accepts, within
    /// `within` (others are skipped).
    pub fn receive_matching(
        &self,
        within: Duration,
        wanted: impl Fn(&[u8]) -> bool,
    ) -> Result<Option<Vec<u8>>> {
        let deadline = Instant::now() + within;
        let mut buffer = vec![0; 65536];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            self.socket.set_read_timeout(Some(left))?;
            match self.socket.recv(&mut buffer) {
                Ok(len) if wanted(&buffer[..len]) => return Ok(Some(buffer[..len].to_vec())),
                Ok(_) => continue,
                Err(error)
                    if matches!(
                        error.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(None)
                }
                Err(error) => return Err(error.into()),
            }
        }
    }
}

/// The Internet checksum (RFC 1071) of `bytes`.
pub fn internet_checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|pair| u32::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An Ethernet frame from the harness to the guest.
pub fn ethernet_frame(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(14 + payload.len());
    frame.extend_from_slice(&GUEST_MAC);
    frame.extend_from_slice(&PEER_MAC);
    frame.extend_from_slice(&ethertype.to_be_bytes());
    frame.extend_from_slice(payload);
    frame
}

/// An ARP request from the harness: who has `target`?
pub fn arp_request(target: [u8; 4]) -> Vec<u8> {
    let mut arp = vec![0, 1, 8, 0, 6, 4, 0, 1];
    arp.extend_from_slice(&PEER_MAC);
    arp.extend_from_slice(&PEER_IP);
    arp.extend_from_slice(&[0; 6]);
    arp.extend_from_slice(&target);
    let mut frame = ethernet_frame(0x0806, &arp);
    frame[..6].copy_from_slice(&[0xff; 6]);
    frame
}

/// An IPv4 packet from the harness to the guest in a frame.
pub fn ipv4_frame(protocol: u8, payload: &[u8]) -> Vec<u8> {
    let mut header = vec![0x45, 0];
    header.extend_from_slice(&((20 + payload.len()) as u16).to_be_bytes());
    header.extend_from_slice(&[0, 1, 0, 0, 64, protocol, 0, 0]);
    header.extend_from_slice(&PEER_IP);
    header.extend_from_slice(&GUEST_IP);
    let checksum = internet_checksum(&header);
    header[10..12].copy_from_slice(&checksum.to_be_bytes());
    header.extend_from_slice(payload);
    ethernet_frame(0x0800, &header)
}

/// An ICMP echo request with `identifier`, `sequence` and `data`.
pub fn echo_request(identifier: u16, sequence: u16, data: &[u8]) -> Vec<u8> {
    let mut message = vec![8, 0, 0, 0];
    message.extend_from_slice(&identifier.to_be_bytes());
    message.extend_from_slice(&sequence.to_be_bytes());
    message.extend_from_slice(data);
    let checksum = internet_checksum(&message);
    message[2..4].copy_from_slice(&checksum.to_be_bytes());
    ipv4_frame(1, &message)
}

/// A UDP datagram from the harness's `source_port` to the guest's
/// `destination_port` (checksum 0: none).
pub fn udp_frame(source_port: u16, destination_port: u16, data: &[u8]) -> Vec<u8> {
    let mut datagram = Vec::new();
    datagram.extend_from_slice(&source_port.to_be_bytes());
    datagram.extend_from_slice(&destination_port.to_be_bytes());
    datagram.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
    datagram.extend_from_slice(&[0, 0]);
    datagram.extend_from_slice(data);
    ipv4_frame(17, &datagram)
}
