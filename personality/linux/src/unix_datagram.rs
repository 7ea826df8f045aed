//! The receive queue of an `AF_UNIX` datagram socket that `socket` made:
//! datagrams from any sender, each with the sender's name (what
//! `recvfrom` reports), its credentials and any descriptors passed with
//! it. Senders find the socket by its name (`sendto`) or as their
//! default peer (`connect`); see `unix_socket`.
//!
//! The queue holds at most [`BUFFER_BYTES`], each datagram charged
//! [`MESSAGE_OVERHEAD_BYTES`] besides its bytes, as a connected pair's
//! directions do; a sender waits for room on the receiving socket's wait
//! queue, which every receive wakes.

use alloc::{collections::VecDeque, sync::Arc, vec::Vec};

use vfs::OpenFile;

use crate::{
    unix_address::UnixAddress,
    unix_connection::{
        PeerCredentials, ReceiveOptions, Received, BUFFER_BYTES, MESSAGE_OVERHEAD_BYTES,
    },
};

/// One queued datagram.
pub struct Datagram {
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// Its sender's name when it was sent.
    pub from: UnixAddress,
    /// Descriptors passed with it (`SCM_RIGHTS`).
    pub rights: Vec<Arc<OpenFile>>,
    /// Who sent it.
    pub sender: PeerCredentials,
}

/// A datagram socket's receive queue.
#[derive(Default)]
pub struct Inbox {
    queue: spin::Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    datagrams: VecDeque<Datagram>,
    /// Bytes charged: the datagrams' bytes and their overhead.
    charged: usize,
}

/// Whether a datagram of `length` bytes could ever be queued
/// (`EMSGSIZE` otherwise).
pub fn fits_at_all(length: usize) -> bool {
    length + MESSAGE_OVERHEAD_BYTES <= BUFFER_BYTES
}

impl Inbox {
    /// Queues `datagram`, or gives it back when there is no room yet.
    pub fn deliver(&self, datagram: Datagram) -> Result<(), Datagram> {
        let mut queue = self.queue.lock();
        let cost = datagram.bytes.len() + MESSAGE_OVERHEAD_BYTES;
        if queue.charged + cost > BUFFER_BYTES {
            return Err(datagram);
        }
        queue.charged += cost;
        queue.datagrams.push_back(datagram);
        Ok(())
    }

    /// Takes the first datagram into `buf` (cut to it; with `peek`, left
    /// queued): what was received and who sent it, or `None` when the
    /// queue is empty.
    pub fn receive(
        &self,
        buf: &mut [u8],
        options: ReceiveOptions,
    ) -> Option<(Received, UnixAddress)> {
        let mut queue = self.queue.lock();
        let datagram = queue.datagrams.front()?;
        let count = datagram.bytes.len().min(buf.len());
        buf[..count].copy_from_slice(&datagram.bytes[..count]);
        let mut received = Received {
            count,
            whole: datagram.bytes.len(),
            rights: Vec::new(),
            sender: Some(datagram.sender),
        };
        let from = datagram.from.clone();
        if !options.peek {
            if let Some(datagram) = queue.datagrams.pop_front() {
                queue.charged -= datagram.bytes.len() + MESSAGE_OVERHEAD_BYTES;
                received.rights = datagram.rights;
            }
        }
        Some((received, from))
    }

    /// Whether a datagram is queued.
    pub fn has_datagrams(&self) -> bool {
        !self.queue.lock().datagrams.is_empty()
    }

    /// Whether a small datagram would fit now.
    pub fn has_room(&self) -> bool {
        self.queue.lock().charged + MESSAGE_OVERHEAD_BYTES < BUFFER_BYTES
    }

    /// Empties the queue (the socket closed): descriptors passed in
    /// datagrams never received close.
    pub fn clear(&self) -> VecDeque<Datagram> {
        let mut queue = self.queue.lock();
        queue.charged = 0;
        core::mem::take(&mut queue.datagrams)
    }
}
