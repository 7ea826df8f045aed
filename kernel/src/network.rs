//! The network interface wired into the kernel: the virtio-net device
//! (`hal::net`), SPIN's protocol graph on it (`services/net`), and the
//! sockets of Linux programs (`services/sockets`) attached to both.
//!
//! One kernel thread, `net`, drains the device: the receive interrupt
//! wakes it (at once when the processor idles), it raises
//! `Ether.PacketArrived` for each frame (handlers run on it, extensions'
//! included), and moves the socket stack forward. It also wakes every
//! 10 ms for TCP's timers.

use alloc::{boxed::Box, sync::Arc, vec::Vec};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hal::{
    net::{NetDevice, RxFrame},
    sync::IrqMutex,
};
use net::{FrameBuffer, InterfaceConfig, Link, Network};
use wasm_runtime::EventPort;

/// How often the thread wakes without an interrupt (TCP's timers, and a
/// device without interrupts).
const IDLE_WAKE_MS: u64 = 10;

/// The device, shared by the thread (receive) and every sender.
struct Nic(IrqMutex<NetDevice>);

impl Link for Nic {
    fn transmit(&self, len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool {
        let started = hal::timer::uptime_ns();
        let sent = self.0.lock().transmit(len, fill).is_ok();
        TRANSMIT_NS.fetch_add(hal::timer::uptime_ns() - started, Ordering::Relaxed);
        sent
    }
}

/// A received frame, in the page the device wrote.
struct DeviceFrame(RxFrame);

impl FrameBuffer for DeviceFrame {
    fn bytes(&self) -> &[u8] {
        self.0.bytes()
    }
}

/// What is running.
struct Running {
    network: &'static Network,
    nic: Arc<Nic>,
    ports: Vec<Arc<dyn EventPort>>,
}

static RUNNING: spin::Once<Running> = spin::Once::new();
/// The thread's id (0 until it runs).
static THREAD: AtomicU64 = AtomicU64::new(0);
/// Nanoseconds spent handing frames to the device (notifying it is an
/// exit to QEMU, which waits for its global lock while the user-mode
/// network holds it), by every sender.
static TRANSMIT_NS: AtomicU64 = AtomicU64::new(0);
/// Set by the interrupt, cleared by the thread before it drains.
static PENDING: AtomicBool = AtomicBool::new(false);

/// Nanoseconds the `net` thread spent taking frames through the graph
/// (the device, the events, the sockets' queue) and polling the sockets'
/// stack (smoltcp): where the receive path's time goes (`spindle net`).
/// Wall time, so a thread that preempted the `net` thread is counted too.
static GRAPH_NS: AtomicU64 = AtomicU64::new(0);
/// See [`GRAPH_NS`].
static POLL_NS: AtomicU64 = AtomicU64::new(0);
/// Of [`GRAPH_NS`]: nanoseconds taking frames from the device (and
/// giving it fresh pages).
static DEVICE_NS: AtomicU64 = AtomicU64::new(0);
/// Of [`GRAPH_NS`]: nanoseconds the sockets took to queue the packets the
/// graph gave them (checksums verified, copied).
static QUEUE_NS: AtomicU64 = AtomicU64::new(0);

/// Brings the interface up if the machine has one: the graph, the socket
/// stack's attachment, the thread. Logs what it found.
pub fn init() {
    let device = match NetDevice::probe() {
        Ok(Some(device)) => device,
        Ok(None) => {
            log::info!("net: no network device");
            return;
        }
        Err(error) => {
            log::warn!("net: the network device was not brought up: {error}");
            return;
        }
    };
    let config = InterfaceConfig::qemu_user(device.mac());
    let has_interrupts = device.has_interrupts();
    let (bus, slot, function) = device.pci_location();
    let nic = Arc::new(Nic(IrqMutex::new(device)));
    let network = Network::start(config, nic.clone());
    if let Some(personality) = linux_process::personality() {
        let stack = personality.sockets().clone();
        stack.attach_interface(
            config.address,
            config.prefix,
            config.gateway,
            Arc::new(move |packet: &[u8]| network.send_ip_packet(packet)),
        );
        network.attach_sockets(Arc::new(move |packet: &[u8]| {
            let started = hal::timer::uptime_ns();
            stack.receive(packet);
            QUEUE_NS.fetch_add(hal::timer::uptime_ns() - started, Ordering::Relaxed);
        }));
    }
    let events = network.events();
    let ports = alloc::vec![
        wasm_runtime::port(events.ether.clone()),
        wasm_runtime::port(events.ip.clone()),
        wasm_runtime::port(events.icmp.clone()),
        wasm_runtime::port(events.udp.clone()),
        wasm_runtime::port(events.tcp.clone()),
        wasm_runtime::port(events.ip_send.clone()),
        wasm_runtime::port(events.udp_send.clone()),
        wasm_runtime::port(events.tcp_send.clone()),
    ];
    RUNNING.call_once(|| Running {
        network,
        nic,
        ports,
    });
    hal::net::set_receive_hook(on_receive_interrupt);
    if sched::spawn("net", serve).is_err() {
        log::warn!("net: no memory for the interface's thread");
        return;
    }
    let mac = config.mac;
    log::info!(
        "net: virtio-net at PCI {bus:02x}:{slot:02x}.{function}, {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}, {}/{} via {}, receive {}",
        mac[0],
        mac[1],
        mac[2],
        mac[3],
        mac[4],
        mac[5],
        config.address,
        config.prefix,
        config.gateway,
        if has_interrupts {
            "interrupts (MSI-X)"
        } else {
            "polled"
        }
    );
}

/// The receive interrupt: wake the thread.
fn on_receive_interrupt() {
    PENDING.store(true, Ordering::Release);
    let id = THREAD.load(Ordering::Acquire);
    if id != 0 {
        sched::wake_from_interrupt(sched::ThreadId(id));
    }
}

/// The `net` thread.
///
/// While traffic flows it watches the device's receive ring itself,
/// with receive interrupts off, yielding to any other thread between
/// looks; after [`WATCH_NS`] without a frame it turns interrupts on and
/// sleeps. Under QEMU's TCG, taking an interrupt (and the write that ends
/// it) waits for QEMU's global lock, which the user-mode network holds
/// while it writes a whole burst of frames into the ring: woken by
/// interrupts, the thread sat idle through every burst and began only
/// after its last frame; watching the ring, it takes frames as they land.
fn serve() {
    THREAD.store(sched::current().0, Ordering::Release);
    let Some(running) = RUNNING.get() else {
        return;
    };
    let mut watch_until = 0;
    running.nic.0.lock().quiet(true);
    loop {
        PENDING.store(false, Ordering::Release);
        let started = hal::timer::uptime_ns();
        let frames = drain(running, BATCH_FRAMES);
        let drained = hal::timer::uptime_ns();
        if frames > 0 {
            if let Some(personality) = linux_process::personality() {
                personality.sockets().poll();
            }
            let polled = hal::timer::uptime_ns();
            GRAPH_NS.fetch_add(drained - started, Ordering::Relaxed);
            POLL_NS.fetch_add(polled - drained, Ordering::Relaxed);
            linux::wake_network_waiters();
            watch_until = polled + WATCH_NS;
            continue;
        }
        if drained < watch_until {
            sched::yield_now();
            continue;
        }
        // Quiet: interrupts on, then one more look (a frame that came in
        // between raised none), else sleep until a frame's interrupt, or
        // the sockets' timers are due.
        let is_waiting = {
            let mut nic = running.nic.0.lock();
            nic.quiet(false);
            nic.has_received()
        };
        if !is_waiting && !PENDING.load(Ordering::Acquire) {
            // Until the sockets' next timer (a delayed acknowledgement
            // is due within a few milliseconds), or the idle period.
            let mut sleep_ms = IDLE_WAKE_MS;
            if let Some(personality) = linux_process::personality() {
                let sockets = personality.sockets();
                sockets.poll();
                if let Some(due_ms) = sockets.poll_delay_ms() {
                    sleep_ms = due_ms.clamp(1, IDLE_WAKE_MS);
                }
            }
            sched::sleep_ms(sleep_ms);
        }
        running.nic.0.lock().quiet(true);
    }
}

/// How long the `net` thread watches the receive ring after its last
/// frame before it sleeps until an interrupt: a TCP sender's next burst
/// follows its acknowledgement within microseconds, and a request's
/// answer comes back within a round trip.
const WATCH_NS: u64 = 500_000;

/// Frames taken from the device before the sockets are polled (and so
/// acknowledged): a 64 KiB window (the user-mode network offers no
/// window scaling) is 44 full frames.
const BATCH_FRAMES: usize = 64;

/// The frames waiting, at most `limit`, into the graph (receive
/// interrupts stay as they are: the caller's); how many.
fn drain(running: &Running, limit: usize) -> usize {
    let mut frames = 0;
    while frames < limit {
        // The device lock is not held while the graph runs: handlers send.
        let started = hal::timer::uptime_ns();
        let frame = running.nic.0.lock().receive();
        DEVICE_NS.fetch_add(hal::timer::uptime_ns() - started, Ordering::Relaxed);
        let Some(frame) = frame else {
            break;
        };
        frames += 1;
        running.network.receive(Box::new(DeviceFrame(frame)));
    }
    frames
}

/// The graph's events as extensions are granted them (empty without an
/// interface).
pub fn event_ports() -> Vec<Arc<dyn EventPort>> {
    RUNNING
        .get()
        .map(|running| running.ports.clone())
        .unwrap_or_default()
}

/// The interface's counters as (name, value) lines, `None` without one.
pub fn report() -> Option<Vec<(&'static str, u64)>> {
    let running = RUNNING.get()?;
    let mut lines = running.network.stats().lines();
    let device = running.nic.0.lock().stats();
    lines.push(("device: frames received", device.received));
    lines.push(("device: frames sent", device.sent));
    lines.push(("device: receive errors", device.receive_errors));
    lines.push(("device: transmit ring full", device.send_busy));
    lines.push(("device: receive interrupts", device.interrupts));
    let times = [
        ("net thread: us in the graph", &GRAPH_NS),
        (
            "net thread: us of it taking frames from the device",
            &DEVICE_NS,
        ),
        (
            "net thread: us of it queueing packets for the sockets",
            &QUEUE_NS,
        ),
        ("net thread: us polling the sockets", &POLL_NS),
        ("device: us sending frames", &TRANSMIT_NS),
    ];
    for (name, nanoseconds) in times {
        lines.push((name, nanoseconds.load(Ordering::Relaxed) / 1000));
    }
    if let Some(personality) = linux_process::personality() {
        let sockets = personality.sockets();
        lines.push((
            "sockets: tcp segments coalesced",
            sockets.coalesced_segments(),
        ));
        lines.push(("sockets: packets dropped", sockets.dropped_packets()));
    }
    Some(lines)
}

/// The interface's network, if there is one (tests inject frames).
pub fn network() -> Option<&'static Network> {
    RUNNING.get().map(|running| running.network)
}

/// The forwardings running (SPIN's forwarder), by forwarded port.
static FORWARDERS: spin::Mutex<Vec<Arc<net::forwarder::Forwarder>>> = spin::Mutex::new(Vec::new());

/// Relays `protocol` packets for `port` to `target` (`ADDRESS:PORT`).
pub fn forward(
    protocol: net::forwarder::Protocol,
    port: u16,
    target: &str,
) -> Result<(), alloc::string::String> {
    use alloc::format;
    let network = network().ok_or("no network interface")?;
    let address: core::net::SocketAddrV4 = target
        .parse()
        .map_err(|_| format!("`{target}` is not an IPv4 address and port"))?;
    let target = ((*address.ip()), address.port());
    let name = protocol.name();
    let mut forwarders = FORWARDERS.lock();
    let same = |forwarder: &&Arc<net::forwarder::Forwarder>| forwarder.protocol == protocol;
    if forwarders
        .iter()
        .filter(same)
        .any(|forwarder| forwarder.port == port)
    {
        return Err(format!("{name} port {port} is forwarded already"));
    }
    // Answers are told apart by their source: one forwarding per target.
    if forwarders
        .iter()
        .filter(same)
        .any(|forwarder| forwarder.target == target)
    {
        return Err(format!(
            "{target} is the target of another {name} forwarding already",
            target = address
        ));
    }
    let forwarder = net::forwarder::Forwarder::install(network, protocol, port, target)
        .map_err(|error| format!("cannot install the forwarder: {error}"))?;
    forwarders.push(forwarder);
    Ok(())
}

/// Stops forwarding `protocol` on `port`; how many packets it relayed.
pub fn unforward(
    protocol: net::forwarder::Protocol,
    port: u16,
) -> Result<u64, alloc::string::String> {
    let mut forwarders = FORWARDERS.lock();
    let at = forwarders
        .iter()
        .position(|forwarder| forwarder.protocol == protocol && forwarder.port == port)
        .ok_or_else(|| alloc::format!("{} port {port} is not forwarded", protocol.name()))?;
    let forwarder = forwarders.remove(at);
    forwarder.remove();
    Ok(forwarder.relayed())
}
