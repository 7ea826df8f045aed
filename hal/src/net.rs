//! The network interface: a virtio-net device on PCI, driven by the
//! `virtio-drivers` crate, behind a safe interface of whole Ethernet
//! frames.
//!
//! - Receive buffers are DMA pages ([`DmaBuffer`]) posted to the device;
//!   a received frame is handed up in the page the device wrote
//!   ([`RxFrame`], no copy) and the page returns to a pool when the frame
//!   is dropped. Each frame taken is replaced by a posted page at once.
//! - Transmit fills a DMA page in place ([`NetDevice::transmit`]: the
//!   caller writes the frame into the page the device reads, no copy);
//!   pages come back when the device reports them sent.
//! - Interrupts: MSI-X entry 0 is the receive queue's, delivered to the
//!   local APIC on [`NET_VECTOR`]; the handler acknowledges the APIC
//!   (`timer::end_of_interrupt`) and calls the kernel's hook, which wakes
//!   whatever drains the queue. Transmit completions raise no interrupt:
//!   they are collected on the next transmit.
//!
//! A device hal cannot bring up (no MSI-X, registers outside device memory,
//! no memory for its queues) is refused with a [`NetError`], never a panic.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use virtio_drivers::{
    device::net::VirtIONetRaw,
    transport::{
        pci::{bus::DeviceFunction, virtio_device_type, PciTransport},
        DeviceStatus, DeviceType, InterruptStatus, Transport,
    },
    PhysAddr,
};

use crate::{
    dma::{DmaBuffer, VirtioHal},
    pci::{self, PciError, PortAccess},
    sync::IrqMutex,
    timer,
    trap::{self, TrapFrame},
};

/// Interrupt vector of the network interface's receive queue.
pub const NET_VECTOR: u8 = 0x41;

/// Descriptors per virtqueue (QEMU's virtio-net offers 256).
const QUEUE_SIZE: usize = 128;

/// Receive pages kept for reuse at most (beyond the posted ones).
const POOL_LIMIT: usize = 256;

/// The virtio common configuration registers hal sets itself (virtio 1.2,
/// 4.1.4.3): the configuration-change vector, the queue selector and the
/// selected queue's MSI-X vector. `virtio-drivers` does not set vectors.
const COMMON_MSIX_CONFIG: u64 = 0x10;
const COMMON_QUEUE_SELECT: u64 = 0x16;
const COMMON_QUEUE_MSIX_VECTOR: u64 = 0x1a;
/// "No vector" (virtio 1.2, 4.1.5.1.2).
const NO_VECTOR: u16 = 0xffff;
/// The receive queue's index (virtio 1.2, 5.1.2).
const RECEIVE_QUEUE: u16 = 0;
/// The transmit queue's index.
const TRANSMIT_QUEUE: u16 = 1;
/// Vendor capability type of the common configuration (virtio 1.2, 4.1.4).
const VIRTIO_PCI_CAP_COMMON_CFG: u8 = 1;

/// Why the interface could not be brought up or could not send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetError {
    /// A PCI-level problem.
    Pci(PciError),
    /// The virtio transport or device refused (the driver's reason).
    Device(&'static str),
    /// No physical memory for queues or buffers.
    OutOfMemory,
    /// The frame is longer than a transmit page holds.
    TooLong,
    /// Every transmit descriptor is in flight.
    Busy,
}

impl core::fmt::Display for NetError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            NetError::Pci(error) => write!(f, "PCI: {error}"),
            NetError::Device(reason) => write!(f, "virtio-net: {reason}"),
            NetError::OutOfMemory => f.write_str("out of memory for network buffers"),
            NetError::TooLong => f.write_str("frame longer than a transmit buffer"),
            NetError::Busy => f.write_str("every transmit buffer is in flight"),
        }
    }
}

impl From<PciError> for NetError {
    fn from(error: PciError) -> Self {
        NetError::Pci(error)
    }
}

fn device_error(error: virtio_drivers::Error) -> NetError {
    use virtio_drivers::Error;
    NetError::Device(match error {
        Error::QueueFull => "queue full",
        Error::NotReady => "device not ready",
        Error::WrongToken => "device returned an unexpected buffer",
        Error::AlreadyUsed => "queue already in use",
        Error::InvalidParam => "invalid parameter",
        Error::DmaError => "no DMA memory",
        Error::IoError => "I/O error",
        Error::Unsupported => "request not supported",
        _ => "device error",
    })
}

/// Receive pages waiting to be posted again.
static POOL: IrqMutex<Vec<DmaBuffer>> = IrqMutex::new(Vec::new());

/// The kernel's hook for receive interrupts (a `fn()` address, 0 = none).
static RECEIVE_HOOK: AtomicUsize = AtomicUsize::new(0);

/// Receive interrupts taken.
static INTERRUPTS: AtomicU64 = AtomicU64::new(0);

/// A received Ethernet frame, in the page the device wrote.
pub struct RxFrame {
    buffer: Option<DmaBuffer>,
    start: usize,
    len: usize,
}

impl RxFrame {
    /// The frame's bytes (destination MAC first).
    pub fn bytes(&self) -> &[u8] {
        match &self.buffer {
            Some(buffer) => &buffer.bytes()[self.start..self.start + self.len],
            None => &[],
        }
    }

    /// The frame's bytes, to change in place (a reply built in the page of
    /// the request).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let (start, len) = (self.start, self.len);
        match &mut self.buffer {
            Some(buffer) => &mut buffer.bytes_mut()[start..start + len],
            None => &mut [],
        }
    }
}

impl Drop for RxFrame {
    fn drop(&mut self) {
        if let Some(buffer) = self.buffer.take() {
            let mut pool = POOL.lock();
            if pool.len() < POOL_LIMIT {
                pool.push(buffer);
            }
        }
    }
}

/// A page for the device to fill: from the pool, else freshly allocated.
fn receive_page() -> Option<DmaBuffer> {
    let pooled = POOL.lock().pop();
    pooled.or_else(|| DmaBuffer::allocate(1))
}

/// Counters of the interface.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetStats {
    /// Frames received.
    pub received: u64,
    /// Frames handed to the device to send.
    pub sent: u64,
    /// Frames the device returned malformed (shorter than their header).
    pub receive_errors: u64,
    /// Frames not sent because every transmit buffer was in flight.
    pub send_busy: u64,
    /// Receive interrupts taken.
    pub interrupts: u64,
}

/// The event-index feature bit (virtio 1.2, 6: `VIRTIO_F_EVENT_IDX`).
const EVENT_IDX: u64 = 1 << 29;

/// The PCI transport without the event-index feature. `virtio-drivers`
/// decides whether to notify the device with an event-index test that
/// holds whenever the device's index is stale, and QEMU's receive queue
/// leaves it stale while it has buffers: every buffer posted would then
/// cost a notification (an exit to the device model). Without the
/// feature, the device's "no notify" flag is what counts, and it is right;
/// interrupts are suppressed by the driver's flag while the kernel drains
/// the queue ([`NetDevice::quiet`]).
struct PlainTransport(PciTransport);

impl Transport for PlainTransport {
    fn device_type(&self) -> DeviceType {
        self.0.device_type()
    }
    fn read_device_features(&mut self) -> u64 {
        self.0.read_device_features() & !EVENT_IDX
    }
    fn write_driver_features(&mut self, driver_features: u64) {
        self.0.write_driver_features(driver_features & !EVENT_IDX)
    }
    fn max_queue_size(&mut self, queue: u16) -> u32 {
        self.0.max_queue_size(queue)
    }
    fn notify(&mut self, queue: u16) {
        self.0.notify(queue)
    }
    fn get_status(&self) -> DeviceStatus {
        self.0.get_status()
    }
    fn set_status(&mut self, status: DeviceStatus) {
        self.0.set_status(status)
    }
    fn set_guest_page_size(&mut self, guest_page_size: u32) {
        self.0.set_guest_page_size(guest_page_size)
    }
    fn requires_legacy_layout(&self) -> bool {
        self.0.requires_legacy_layout()
    }
    fn queue_set(
        &mut self,
        queue: u16,
        size: u32,
        descriptors: PhysAddr,
        driver_area: PhysAddr,
        device_area: PhysAddr,
    ) {
        self.0
            .queue_set(queue, size, descriptors, driver_area, device_area)
    }
    fn queue_unset(&mut self, queue: u16) {
        self.0.queue_unset(queue)
    }
    fn queue_used(&mut self, queue: u16) -> bool {
        self.0.queue_used(queue)
    }
    fn ack_interrupt(&mut self) -> InterruptStatus {
        self.0.ack_interrupt()
    }
    fn read_config_generation(&self) -> u32 {
        self.0.read_config_generation()
    }
    fn read_config_space<T: zerocopy::FromBytes + zerocopy::IntoBytes>(
        &self,
        offset: usize,
    ) -> virtio_drivers::Result<T> {
        self.0.read_config_space(offset)
    }
    fn write_config_space<T: zerocopy::IntoBytes + zerocopy::Immutable>(
        &mut self,
        offset: usize,
        value: T,
    ) -> virtio_drivers::Result<()> {
        self.0.write_config_space(offset, value)
    }
}

/// The virtio network interface.
pub struct NetDevice {
    driver: VirtIONetRaw<VirtioHal, PlainTransport, QUEUE_SIZE>,
    /// PCI bus, device and function.
    location: (u8, u8, u8),
    /// Posted receive pages, by descriptor token.
    posted_receive: Vec<Option<DmaBuffer>>,
    /// Pages being sent with the length posted, by descriptor token.
    posted_transmit: Vec<Option<(DmaBuffer, usize)>>,
    /// Sent pages ready for reuse.
    spare_transmit: Vec<DmaBuffer>,
    /// Whether receive interrupts are wired (else the kernel polls).
    has_interrupts: bool,
    stats: NetStats,
}

impl NetDevice {
    /// Finds the first virtio network device on PCI bus 0 and brings it
    /// up: `Ok(None)` when there is none.
    pub fn probe() -> Result<Option<NetDevice>, NetError> {
        let mut root = pci::root();
        let Some((function, _)) = pci::all_functions(&mut root)
            .into_iter()
            .find(|(_, info)| virtio_device_type(info) == Some(DeviceType::Network))
        else {
            return Ok(None);
        };
        let bars = pci::memory_bars(&mut root, function)?;
        // The queues need a few contiguous pages; do not start without.
        if crate::memory::frame_stats().free < 64 {
            return Err(NetError::OutOfMemory);
        }
        let transport = PciTransport::new::<VirtioHal, PortAccess>(&mut root, function)
            .map_err(|_| NetError::Device("the PCI transport was refused"))?;
        let driver = VirtIONetRaw::new(PlainTransport(transport)).map_err(device_error)?;
        let mut device = NetDevice {
            driver,
            location: (function.bus, function.device, function.function),
            posted_receive: (0..QUEUE_SIZE).map(|_| None).collect(),
            posted_transmit: (0..QUEUE_SIZE).map(|_| None).collect(),
            spare_transmit: Vec::new(),
            has_interrupts: false,
            stats: NetStats::default(),
        };
        for _ in 0..QUEUE_SIZE {
            device.post_receive_page()?;
        }
        trap::set_interrupt_handler(NET_VECTOR, receive_interrupt);
        match wire_msix(&mut root, function, &bars) {
            Ok(()) => device.has_interrupts = true,
            Err(error) => log::warn!("net: no receive interrupt ({error}); the queue is polled"),
        }
        Ok(Some(device))
    }

    /// Where the device is: PCI bus, device and function.
    pub fn pci_location(&self) -> (u8, u8, u8) {
        self.location
    }

    /// The interface's MAC address.
    pub fn mac(&self) -> [u8; 6] {
        self.driver.mac_address()
    }

    /// Whether receive interrupts arrive (else [`Self::receive`] must be
    /// polled, e.g. from the timer tick).
    pub fn has_interrupts(&self) -> bool {
        self.has_interrupts
    }

    /// The counters.
    pub fn stats(&self) -> NetStats {
        NetStats {
            interrupts: INTERRUPTS.load(Ordering::Relaxed),
            ..self.stats
        }
    }

    fn post_receive_page(&mut self) -> Result<(), NetError> {
        let mut page = receive_page().ok_or(NetError::OutOfMemory)?;
        // SAFETY: the page is kept in `posted_receive` under its token
        // until `receive_complete` returns it, and nothing reads or writes
        // it meanwhile (it is owned by this device, reachable only here).
        let token = unsafe { self.driver.receive_begin(page.bytes_mut()) }.map_err(device_error)?;
        let slot = self
            .posted_receive
            .get_mut(usize::from(token))
            .ok_or(NetError::Device("token beyond the queue"))?;
        *slot = Some(page);
        Ok(())
    }

    /// Turns receive interrupts off (`quiet = true`) while the caller
    /// drains the queue, and back on after (NAPI's pattern): a burst of
    /// frames costs one interrupt. After turning them on, the caller must
    /// look at the queue once more: a frame may have come in between.
    pub fn quiet(&mut self, quiet: bool) {
        if quiet {
            self.driver.disable_interrupts();
        } else {
            self.driver.enable_interrupts();
        }
    }

    /// Whether a received frame is waiting (a look at the ring, which
    /// the device writes in memory: no exit to the device model).
    pub fn has_received(&self) -> bool {
        self.driver.poll_receive().is_some()
    }

    /// The next received frame, if one is waiting.
    pub fn receive(&mut self) -> Option<RxFrame> {
        loop {
            let token = self.driver.poll_receive()?;
            let mut page = self
                .posted_receive
                .get_mut(usize::from(token))
                .and_then(Option::take)?;
            // SAFETY: `page` is the buffer posted under `token` (same
            // address and length), which the device has finished with.
            let completed = unsafe { self.driver.receive_complete(token, page.bytes_mut()) };
            // Keep the ring full: a frame taken is a page posted.
            let _ = self.post_receive_page();
            match completed {
                Ok((start, len)) if start + len <= page.len() => {
                    self.stats.received += 1;
                    return Some(RxFrame {
                        buffer: Some(page),
                        start,
                        len,
                    });
                }
                _ => {
                    self.stats.receive_errors += 1;
                    POOL.lock().push(page);
                }
            }
        }
    }

    /// Takes back the pages of frames the device has sent.
    fn collect_sent(&mut self) {
        while let Some(token) = self.driver.poll_transmit() {
            let Some((page, len)) = self
                .posted_transmit
                .get_mut(usize::from(token))
                .and_then(Option::take)
            else {
                break;
            };
            // SAFETY: `page` is the buffer posted under `token`, with the
            // length it was posted with.
            let _ = unsafe { self.driver.transmit_complete(token, &page.bytes()[..len]) };
            self.spare_transmit.push(page);
        }
    }

    /// Sends a frame of `len` bytes that `fill` writes in place.
    pub fn transmit(&mut self, len: usize, fill: impl FnOnce(&mut [u8])) -> Result<(), NetError> {
        self.collect_sent();
        let mut page = match self.spare_transmit.pop() {
            Some(page) => page,
            None => DmaBuffer::allocate(1).ok_or(NetError::OutOfMemory)?,
        };
        let header = self
            .driver
            .fill_buffer_header(page.bytes_mut())
            .map_err(device_error)?;
        let total = header + len;
        if total > page.len() {
            self.spare_transmit.push(page);
            return Err(NetError::TooLong);
        }
        fill(&mut page.bytes_mut()[header..total]);
        // SAFETY: the page is kept in `posted_transmit` under its token
        // until `transmit_complete` returns it, unchanged meanwhile.
        let token = match unsafe { self.driver.transmit_begin(&page.bytes()[..total]) } {
            Ok(token) => token,
            Err(virtio_drivers::Error::QueueFull) => {
                self.stats.send_busy += 1;
                self.spare_transmit.push(page);
                return Err(NetError::Busy);
            }
            Err(error) => {
                self.spare_transmit.push(page);
                return Err(device_error(error));
            }
        };
        match self.posted_transmit.get_mut(usize::from(token)) {
            Some(slot) => *slot = Some((page, total)),
            None => return Err(NetError::Device("token beyond the queue")),
        }
        self.stats.sent += 1;
        Ok(())
    }
}

/// Registers the kernel's receive hook, called in interrupt context (with
/// interrupts disabled) after each receive interrupt: it should only wake
/// the thread that drains the queue.
pub fn set_receive_hook(hook: fn()) {
    RECEIVE_HOOK.store(hook as usize, Ordering::Release);
}

fn receive_interrupt(_frame: &mut TrapFrame) {
    INTERRUPTS.fetch_add(1, Ordering::Relaxed);
    timer::end_of_interrupt();
    let hook = RECEIVE_HOOK.load(Ordering::Acquire);
    if hook != 0 {
        // SAFETY: non-zero values are only stored from a `fn()` in
        // `set_receive_hook`.
        let hook: fn() = unsafe { core::mem::transmute::<usize, fn()>(hook) };
        hook();
    }
}

/// Routes the receive queue to MSI-X entry 0 on [`NET_VECTOR`] and the
/// configuration-change and transmit notifications to no vector.
fn wire_msix(
    root: &mut virtio_drivers::transport::pci::bus::PciRoot<PortAccess>,
    function: DeviceFunction,
    bars: &pci::MemoryBars,
) -> Result<(), NetError> {
    let common = common_configuration(root, function, bars)?;
    let write16 = |offset: u64, value: u16| {
        // SAFETY: `common` is the device's common configuration structure,
        // in device memory the window maps uncached (checked in
        // `common_configuration`); the offsets are the virtio 1.2 layout.
        unsafe { core::ptr::write_volatile((common + offset) as *mut u16, value) }
    };
    let read16 = |offset: u64| {
        // SAFETY: as for `write16`.
        unsafe { core::ptr::read_volatile((common + offset) as *const u16) }
    };
    write16(COMMON_MSIX_CONFIG, NO_VECTOR);
    write16(COMMON_QUEUE_SELECT, TRANSMIT_QUEUE);
    write16(COMMON_QUEUE_MSIX_VECTOR, NO_VECTOR);
    write16(COMMON_QUEUE_SELECT, RECEIVE_QUEUE);
    write16(COMMON_QUEUE_MSIX_VECTOR, 0);
    // A device that cannot use the vector reads back "no vector".
    if read16(COMMON_QUEUE_MSIX_VECTOR) != 0 {
        return Err(NetError::Pci(PciError::NoMsix));
    }
    pci::enable_msix(root, function, bars, 0, NET_VECTOR, timer::local_apic_id())?;
    Ok(())
}

/// The window address of the device's virtio common configuration.
fn common_configuration(
    root: &mut virtio_drivers::transport::pci::bus::PciRoot<PortAccess>,
    function: DeviceFunction,
    bars: &pci::MemoryBars,
) -> Result<u64, NetError> {
    use virtio_drivers::transport::pci::bus::ConfigurationAccess;
    const VENDOR_CAPABILITY: u8 = 0x09;
    let capability = root
        .capabilities(function)
        .filter(|capability| capability.id == VENDOR_CAPABILITY)
        .find(|capability| (capability.private_header >> 8) as u8 == VIRTIO_PCI_CAP_COMMON_CFG)
        .ok_or(NetError::Device("no common configuration"))?;
    let bar = PortAccess.read_word(function, capability.offset + 4) as u8;
    let offset = PortAccess.read_word(function, capability.offset + 8);
    let (physical, _) = bars
        .get(usize::from(bar))
        .copied()
        .flatten()
        .ok_or(NetError::Device(
            "common configuration outside a memory BAR",
        ))?;
    crate::memory::device_memory(physical + u64::from(offset), 0x38)
        .ok_or(NetError::Pci(PciError::BarOutsideDeviceMemory))
}
