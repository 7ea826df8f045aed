//! Counters of the interface: what arrived, what was sent, and every
//! reason a frame was dropped (SPIN counted per event; so does the
//! dispatcher; these are the network's own).

use core::sync::atomic::{AtomicU64, Ordering};

use crate::frame::Malformed;

/// The live counters.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) frames_received: AtomicU64,
    pub(crate) frames_sent: AtomicU64,
    pub(crate) send_failed: AtomicU64,
    pub(crate) malformed: [AtomicU64; MALFORMED_KINDS],
    pub(crate) not_for_us: AtomicU64,
    pub(crate) other_ethertype: AtomicU64,
    pub(crate) other_protocol: AtomicU64,
    pub(crate) arp_answered: AtomicU64,
    pub(crate) arp_requested: AtomicU64,
    pub(crate) arp_waiting_dropped: AtomicU64,
    pub(crate) echo_answered: AtomicU64,
    pub(crate) no_listener: AtomicU64,
    pub(crate) send_refused: AtomicU64,
}

const MALFORMED_KINDS: usize = 9;

fn malformed_index(reason: Malformed) -> usize {
    match reason {
        Malformed::Ethernet => 0,
        Malformed::Ipv4Header => 1,
        Malformed::Ipv4Checksum => 2,
        Malformed::Fragment => 3,
        Malformed::Udp => 4,
        Malformed::UdpChecksum => 5,
        Malformed::Tcp => 6,
        Malformed::Icmp => 7,
        Malformed::Arp => 8,
    }
}

/// Names of the malformed-frame reasons, in counter order.
const MALFORMED_NAMES: [&str; MALFORMED_KINDS] = [
    "short ethernet frame",
    "bad ipv4 header",
    "bad ipv4 checksum",
    "ipv4 fragment",
    "bad udp header",
    "bad udp checksum",
    "bad tcp header",
    "short icmp message",
    "bad arp packet",
];

impl Counters {
    pub(crate) fn add(&self, counter: &AtomicU64, count: u64) {
        counter.fetch_add(count, Ordering::Relaxed);
    }

    pub(crate) fn malformed(&self, reason: Malformed) {
        self.add(&self.malformed[malformed_index(reason)], 1);
    }

    pub(crate) fn snapshot(&self) -> Stats {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let mut malformed = [0; MALFORMED_KINDS];
        for (slot, counter) in malformed.iter_mut().zip(&self.malformed) {
            *slot = read(counter);
        }
        Stats {
            frames_received: read(&self.frames_received),
            frames_sent: read(&self.frames_sent),
            send_failed: read(&self.send_failed),
            malformed,
            not_for_us: read(&self.not_for_us),
            other_ethertype: read(&self.other_ethertype),
            other_protocol: read(&self.other_protocol),
            arp_answered: read(&self.arp_answered),
            arp_requested: read(&self.arp_requested),
            arp_waiting_dropped: read(&self.arp_waiting_dropped),
            echo_answered: read(&self.echo_answered),
            no_listener: read(&self.no_listener),
            send_refused: read(&self.send_refused),
        }
    }
}

/// A snapshot of the counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Frames the interface received.
    pub frames_received: u64,
    /// Frames handed to the device.
    pub frames_sent: u64,
    /// Frames the device would not take.
    pub send_failed: u64,
    /// Malformed frames dropped, by reason (see [`Stats::lines`]).
    pub malformed: [u64; MALFORMED_KINDS],
    /// IPv4 packets for another address.
    pub not_for_us: u64,
    /// Frames of an EtherType other than IPv4 and ARP.
    pub other_ethertype: u64,
    /// IPv4 packets of a protocol other than ICMP, UDP and TCP.
    pub other_protocol: u64,
    /// ARP requests for our address answered.
    pub arp_answered: u64,
    /// ARP requests sent.
    pub arp_requested: u64,
    /// Packets dropped while their next hop's address was unknown.
    pub arp_waiting_dropped: u64,
    /// ICMP echo requests answered.
    pub echo_answered: u64,
    /// Packets for the sockets while none were attached.
    pub no_listener: u64,
    /// Packets a handler of a send event refused (not sent).
    pub send_refused: u64,
}

impl Stats {
    /// All malformed frames dropped.
    pub fn malformed_total(&self) -> u64 {
        self.malformed.iter().sum()
    }

    /// Every counter as (name, value), for people.
    pub fn lines(&self) -> alloc::vec::Vec<(&'static str, u64)> {
        let mut lines = alloc::vec![
            ("frames received", self.frames_received),
            ("frames sent", self.frames_sent),
            ("frames the device refused", self.send_failed),
            ("packets for other hosts", self.not_for_us),
            ("other ethertypes", self.other_ethertype),
            ("other ip protocols", self.other_protocol),
            ("arp requests answered", self.arp_answered),
            ("arp requests sent", self.arp_requested),
            ("dropped waiting for arp", self.arp_waiting_dropped),
            ("icmp echoes answered", self.echo_answered),
            ("packets with no socket layer", self.no_listener),
            ("packets refused by send handlers", self.send_refused),
        ];
        for (name, value) in MALFORMED_NAMES.iter().zip(self.malformed) {
            lines.push((name, value));
        }
        lines
    }
}
