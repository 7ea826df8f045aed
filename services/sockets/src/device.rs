//! The stack's IP device: loopback, and the network interface through the
//! protocol graph.
//!
//! smoltcp sees one IP-medium device. A packet it sends to one of our own
//! addresses (127.0.0.0/8, or the interface's) comes straight back in;
//! any other goes to the interface's output (the protocol graph, which
//! adds Ethernet and resolves the next hop with ARP). Packets the graph
//! hands to the sockets (UDP and TCP no extension took) wait in
//! `inbound` until the next poll.

use alloc::{collections::VecDeque, sync::Arc, vec, vec::Vec};
use core::net::Ipv4Addr;

use crate::coalesce;
use smoltcp::{
    phy::{self, Device, DeviceCapabilities, Medium},
    time::Instant,
};

/// Packets queued at most each way (beyond it, new ones are dropped as a
/// full NIC ring would drop them; TCP sends them again).
const QUEUE_LIMIT: usize = 1024;
/// Largest IP packet (loopback could carry more; the interface cannot).
pub(crate) const MTU: usize = 1500;

/// Sends an IP packet out of the interface; `false` if it could not.
pub type Output = Arc<dyn Fn(&[u8]) -> bool + Send + Sync>;

/// The device.
pub(crate) struct StackDevice {
    /// Packets to our own addresses.
    looped: VecDeque<Vec<u8>>,
    /// Packets from the interface.
    inbound: VecDeque<Inbound>,
    /// The capacity of `inbound`'s buffers, in bytes.
    inbound_bytes: usize,
    /// The interface's address and output, once attached.
    interface: Option<(Ipv4Addr, Output)>,
    /// Packets dropped because a queue was full, nothing could send, or
    /// a TCP checksum was wrong.
    pub(crate) dropped: u64,
    /// Segments merged into the one before them ([`crate::coalesce`]).
    pub(crate) coalesced: u64,
}

/// Emptied buffers of inbound packets smoltcp has read, for the next ones
/// (shared by every stack: they are only memory). A frame's allocation,
/// and a merged segment's growth, were a tenth of a TCP transfer's time
/// in the kernel.
static SPARE: spin::Mutex<Vec<Vec<u8>>> = spin::Mutex::new(Vec::new());
/// Buffers kept at most, and the largest kept (a merged segment's).
const SPARE_BUFFERS: usize = 32;
const SPARE_BUFFER_LIMIT: usize = 64 << 10;
/// The room a merged run of segments gets when a second segment joins
/// the first: the largest merge and one more frame.
const MERGED_CAPACITY: usize = coalesce::MERGED_LIMIT + MTU;
/// Bytes of buffers the inbound queue holds at most (merged runs hold
/// [`MERGED_CAPACITY`] whatever their length): beyond it, packets are
/// dropped, as by a full ring.
const INBOUND_BYTES_LIMIT: usize = 4 << 20;

/// Keeps a read packet's buffer, emptied, for the next one.
fn recycle(mut buffer: Vec<u8>) {
    if buffer.capacity() <= SPARE_BUFFER_LIMIT {
        let mut spare = SPARE.lock();
        if spare.len() < SPARE_BUFFERS {
            buffer.clear();
            spare.push(buffer);
        }
    }
}

impl StackDevice {
    pub(crate) fn new() -> Self {
        StackDevice {
            looped: VecDeque::new(),
            inbound: VecDeque::new(),
            inbound_bytes: 0,
            interface: None,
            dropped: 0,
            coalesced: 0,
        }
    }

    pub(crate) fn attach(&mut self, address: Ipv4Addr, output: Output) {
        self.interface = Some((address, output));
    }

    /// Whether packets wait for the next poll (looped or inbound).
    pub(crate) fn has_waiting(&self) -> bool {
        !self.looped.is_empty() || !self.inbound.is_empty()
    }

    /// A packet from the interface, for the next poll. A TCP segment
    /// with a bad checksum is dropped here (smoltcp is told not to check
    /// again: see [`crate::coalesce`]). A data segment that continues the
    /// last one queued joins it at once ([`crate::coalesce`]), so its
    /// bytes are copied once on their way to smoltcp.
    pub(crate) fn push_inbound(&mut self, packet: &[u8]) {
        if !coalesce::verify(packet) {
            self.dropped += 1;
            return;
        }
        if let Some(tail) = self.inbound.back_mut() {
            if coalesce::continues(&tail.packet, packet) {
                if tail.packet.capacity() < MERGED_CAPACITY {
                    // The first join: room for the whole run at once, so
                    // that the run never moves again as it grows.
                    self.inbound_bytes -= tail.packet.capacity();
                    tail.packet
                        .reserve_exact(MERGED_CAPACITY - tail.packet.len());
                    self.inbound_bytes += tail.packet.capacity();
                }
                tail.joined_last = coalesce::append(&mut tail.packet, packet);
                self.coalesced += 1;
                return;
            }
        }
        if self.inbound.len() >= QUEUE_LIMIT || self.inbound_bytes >= INBOUND_BYTES_LIMIT {
            self.dropped += 1;
            return;
        }
        let mut buffer = SPARE.lock().pop().unwrap_or_default();
        buffer.extend_from_slice(packet);
        self.inbound_bytes += buffer.capacity();
        self.inbound.push_back(Inbound {
            packet: buffer,
            joined_last: 0,
        });
    }

    /// The next packet from the interface: a run of data segments merged,
    /// less its last segment, which comes next ([`coalesce::split_last`]).
    fn next_inbound(&mut self) -> Option<Vec<u8>> {
        let Inbound {
            mut packet,
            joined_last,
        } = self.inbound.pop_front()?;
        self.inbound_bytes -= packet.capacity();
        if joined_last > 0 {
            let mut tail = SPARE.lock().pop().unwrap_or_default();
            coalesce::split_last(&mut packet, joined_last, &mut tail);
            if !tail.is_empty() {
                self.inbound_bytes += tail.capacity();
                self.inbound.push_front(Inbound {
                    packet: tail,
                    joined_last: 0,
                });
            }
        }
        Some(packet)
    }

    /// Where a packet smoltcp sent goes.
    fn send(&mut self, packet: Vec<u8>) {
        let destination = packet
            .get(16..20)
            .map(|bytes| Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]));
        let Some(destination) = destination else {
            self.dropped += 1;
            return;
        };
        let is_ours = destination.is_loopback()
            || matches!(&self.interface, Some((address, _)) if *address == destination);
        if is_ours {
            if self.looped.len() < QUEUE_LIMIT {
                self.looped.push_back(packet);
            } else {
                self.dropped += 1;
            }
            return;
        }
        match &self.interface {
            Some((_, output)) if output(&packet) => {}
            _ => self.dropped += 1,
        }
    }
}

/// A packet from the interface waiting for smoltcp.
struct Inbound {
    packet: Vec<u8>,
    /// Bytes of data the last segment that joined it brought (0: none
    /// joined): split off again before smoltcp reads it.
    joined_last: usize,
}

/// A received packet for smoltcp.
pub(crate) struct RxToken(Vec<u8>);

/// A packet smoltcp will write, and where it goes.
pub(crate) struct TxToken<'a>(&'a mut StackDevice);

impl phy::RxToken for RxToken {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        let result = f(&self.0);
        recycle(self.0);
        result
    }
}

impl phy::TxToken for TxToken<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut packet = vec![0; len];
        let result = f(&mut packet);
        self.0.send(packet);
        result
    }
}

impl Device for StackDevice {
    type RxToken<'a> = RxToken;
    type TxToken<'a> = TxToken<'a>;

    fn receive(&mut self, _timestamp: Instant) -> Option<(RxToken, TxToken<'_>)> {
        // Looped packets first: they are ours, and never wait on a wire.
        let packet = match self.looped.pop_front() {
            Some(packet) => packet,
            None => self.next_inbound()?,
        };
        Some((RxToken(packet), TxToken(self)))
    }

    fn transmit(&mut self, _timestamp: Instant) -> Option<TxToken<'_>> {
        Some(TxToken(self))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut capabilities = DeviceCapabilities::default();
        capabilities.medium = Medium::Ip;
        capabilities.max_transmission_unit = if self.interface.is_some() { MTU } else { 65535 };
        // Inbound TCP checksums are verified as segments are queued (so
        // that merged ones need none); looped segments are our own.
        capabilities.checksum.tcp = smoltcp::phy::Checksum::Tx;
        capabilities
    }
}
