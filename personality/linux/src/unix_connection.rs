//! The data path of two connected `AF_UNIX` sockets: a [`Pair`] of
//! directions, each end an [`End`] (the pairs `socketpair` makes, and
//! the connections `connect` and `accept` make). What one end sends the
//! other receives: a byte stream for `SOCK_STREAM`, whole messages for
//! `SOCK_DGRAM` and `SOCK_SEQPACKET` (a receive takes one message; what
//! does not fit in the reader's buffer is dropped, as Linux does).
//! Messages may carry descriptors (`SCM_RIGHTS`) and always carry their
//! sender's credentials (for `SCM_CREDENTIALS`).
//!
//! Each direction holds at most [`BUFFER_BYTES`], Linux's default socket
//! buffer, each message charged [`MESSAGE_OVERHEAD_BYTES`] besides its
//! bytes (Linux charges every buffer's bookkeeping to the sender), so a
//! writer of many small datagrams runs out of room (`EAGAIN` when
//! non-blocking) long before the bytes alone would fill it.
//!
//! Waiting: each end has one wait queue (its socket's), woken whenever
//! something changes for it: a message arrived, room was freed in what
//! it sends into, its peer shut down or closed. Its readers, writers and
//! `poll`s all wait there (see [`crate::wait`]).
//!
//! `shutdown` closes a direction for reading or writing; closing an end
//! closes both of its directions. A reader of a direction whose writer
//! shut it reads the end of file once it is empty; a writer into a
//! direction shut either way gets `EPIPE` (a connection) or
//! `ECONNREFUSED` (datagrams whose peer closed). An end closed with
//! bytes unread leaves its peer `ECONNRESET` (taken by the next receive
//! or `SO_ERROR`), as does a listener closed with the connection still
//! queued.

use alloc::{collections::VecDeque, sync::Arc, vec::Vec};
use core::sync::atomic::{AtomicBool, Ordering};

use vfs::{Errno, OpenFile, Readiness};

use crate::wait::{wait_on, FileWaitQueue};

/// Bytes each direction of a pair holds (Linux's default
/// `net.core.wmem_default`).
pub const BUFFER_BYTES: usize = 212_992;
/// What each queued message costs besides its bytes (about what Linux
/// charges for a socket buffer's bookkeeping, `SKB_TRUESIZE(0)`).
pub const MESSAGE_OVERHEAD_BYTES: usize = 576;

/// What a pair carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairKind {
    /// `SOCK_STREAM`: bytes.
    Stream,
    /// `SOCK_DGRAM` (and `SOCK_RAW`): messages, no connection to lose.
    Datagram,
    /// `SOCK_SEQPACKET`: messages over a connection.
    SequencedPacket,
}

impl PairKind {
    /// Whether it keeps message boundaries.
    pub fn is_message_based(self) -> bool {
        self != PairKind::Stream
    }

    /// Whether the other end's close ends the connection (the end of
    /// file for reads, `EPIPE` for writes).
    pub fn is_connection(self) -> bool {
        self != PairKind::Datagram
    }
}

/// Who sent a message, or who is at the other end (`struct ucred`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerCredentials {
    /// Process id.
    pub pid: u32,
    /// Effective user id.
    pub uid: u32,
    /// Effective group id.
    pub gid: u32,
}

impl PeerCredentials {
    /// What Linux reports for nobody (no peer): pid 0, ids -1.
    pub const NOBODY: PeerCredentials = PeerCredentials {
        pid: 0,
        uid: u32::MAX,
        gid: u32::MAX,
    };

    /// The `struct ucred` record: pid, uid, gid.
    pub fn to_bytes(self) -> [u8; linux_abi::socket::UCRED_BYTES] {
        let mut bytes = [0u8; linux_abi::socket::UCRED_BYTES];
        bytes[..4].copy_from_slice(&self.pid.to_le_bytes());
        bytes[4..8].copy_from_slice(&self.uid.to_le_bytes());
        bytes[8..].copy_from_slice(&self.gid.to_le_bytes());
        bytes
    }
}

/// One queued message (a stream's sends are messages too, read across
/// their boundaries).
pub struct Message {
    /// Its bytes (what is left of them, for a stream).
    pub bytes: Vec<u8>,
    /// Descriptors passed with it (`SCM_RIGHTS`), delivered with its
    /// first byte.
    pub rights: Vec<Arc<OpenFile>>,
    /// Who sent it.
    pub sender: PeerCredentials,
}

/// What one receive got.
pub struct Received {
    /// Bytes copied into the buffer.
    pub count: usize,
    /// The whole message's length (more than `count` if it was cut).
    pub whole: usize,
    /// Descriptors that came with what was read.
    pub rights: Vec<Arc<OpenFile>>,
    /// Who sent the first message read, if one was read.
    pub sender: Option<PeerCredentials>,
}

impl Received {
    /// Nothing received (the end of file).
    fn nothing() -> Received {
        Received {
            count: 0,
            whole: 0,
            rights: Vec::new(),
            sender: None,
        }
    }
}

/// How a receive behaves (`recv`'s flags, and the file's `O_NONBLOCK`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ReceiveOptions {
    /// Do not wait: `EAGAIN` when there is nothing.
    pub nonblocking: bool,
    /// `MSG_PEEK`: leave what is read queued.
    pub peek: bool,
    /// `MSG_WAITALL`: a stream waits until the buffer is full.
    pub wait_all: bool,
}

/// One direction's queue: messages and the bytes they are charged.
#[derive(Default)]
struct Queue {
    messages: VecDeque<Message>,
    /// Bytes charged: the messages' bytes and their overhead.
    charged: usize,
}

/// One direction of a pair, from the writing end to the reading end.
#[derive(Default)]
struct Direction {
    queue: spin::Mutex<Queue>,
    /// The writer shut it (`SHUT_WR`) or closed: once empty, it reads as
    /// the end of file.
    is_write_shut: AtomicBool,
    /// The reader shut it (`SHUT_RD`) or closed: reads end at once,
    /// writes fail.
    is_read_shut: AtomicBool,
}

/// The two directions and what each end's waiters wait on.
pub struct Pair {
    kind: PairKind,
    /// `directions[side]` is what end `side` reads.
    directions: [Direction; 2],
    /// `events[side]`: end `side`'s socket's wait queue.
    events: [Arc<FileWaitQueue>; 2],
    /// Whether end `side` was closed.
    is_closed: [AtomicBool; 2],
    /// The error end `side`'s next receive (or `SO_ERROR`) takes.
    pending_error: [spin::Mutex<Option<Errno>>; 2],
}

/// One end of a [`Pair`]: it reads `directions[side]` and writes the
/// other.
pub struct End {
    pair: Arc<Pair>,
    side: usize,
}

/// Two connected ends of `kind`; `events` are the two sockets' wait
/// queues, end 0's first.
pub fn connect(kind: PairKind, events: [Arc<FileWaitQueue>; 2]) -> (End, End) {
    let pair = Arc::new(Pair {
        kind,
        directions: [Direction::default(), Direction::default()],
        events,
        is_closed: [AtomicBool::new(false), AtomicBool::new(false)],
        pending_error: [spin::Mutex::new(None), spin::Mutex::new(None)],
    });
    (
        End {
            pair: pair.clone(),
            side: 0,
        },
        End { pair, side: 1 },
    )
}

impl End {
    fn incoming(&self) -> &Direction {
        &self.pair.directions[self.side]
    }

    fn outgoing(&self) -> &Direction {
        &self.pair.directions[1 - self.side]
    }

    fn events(&self) -> &FileWaitQueue {
        &self.pair.events[self.side]
    }

    fn wake_both(&self) {
        self.pair.events[0].wake_all();
        self.pair.events[1].wake_all();
    }

    fn is_peer_closed(&self) -> bool {
        self.pair.is_closed[1 - self.side].load(Ordering::SeqCst)
    }

    /// Whether a read of an empty queue finds the end of file.
    fn is_at_end(&self) -> bool {
        let incoming = self.incoming();
        incoming.is_read_shut.load(Ordering::SeqCst)
            || (self.pair.kind.is_connection() && incoming.is_write_shut.load(Ordering::SeqCst))
    }

    /// The error a send gets now, if it cannot send at all.
    fn send_error(&self) -> Option<Errno> {
        let outgoing = self.outgoing();
        if self.pair.kind.is_connection() {
            let is_shut = outgoing.is_write_shut.load(Ordering::SeqCst)
                || outgoing.is_read_shut.load(Ordering::SeqCst);
            return is_shut.then_some(Errno::EPIPE);
        }
        if outgoing.is_write_shut.load(Ordering::SeqCst) {
            return Some(Errno::EPIPE);
        }
        if self.is_peer_closed() {
            return Some(Errno::ECONNREFUSED);
        }
        outgoing
            .is_read_shut
            .load(Ordering::SeqCst)
            .then_some(Errno::EPIPE)
    }

    /// Takes the pending error.
    pub fn take_error(&self) -> Option<Errno> {
        self.pair.pending_error[self.side].lock().take()
    }

    /// Leaves the peer `ECONNRESET`: a listener closed with this
    /// connection still queued.
    pub fn reset_peer(&self) {
        *self.pair.pending_error[1 - self.side].lock() = Some(Errno::ECONNRESET);
        self.pair.events[1 - self.side].wake_all();
    }

    /// `shutdown`: no more reading (`read`) and/or no more writing
    /// (`write`); the peer sees the end of file or `EPIPE`.
    pub fn shutdown(&self, read: bool, write: bool) {
        if read {
            self.incoming().is_read_shut.store(true, Ordering::SeqCst);
        }
        if write {
            self.outgoing().is_write_shut.store(true, Ordering::SeqCst);
        }
        self.wake_both();
    }

    /// Receives into `buf` (see [`ReceiveOptions`]): one message, or a
    /// stream's bytes across messages (stopping before descriptors that
    /// came with a later send); 0 bytes at the end of file.
    pub fn receive(&self, buf: &mut [u8], options: ReceiveOptions) -> Result<Received, Errno> {
        let mut received = Received::nothing();
        let attempt = || {
            let mut queue = self.incoming().queue.lock();
            if !queue.messages.is_empty() {
                take(self.pair.kind, &mut queue, buf, options.peek, &mut received);
                drop(queue);
                if !options.peek {
                    // Room for the peer's writers.
                    self.pair.events[1 - self.side].wake_all();
                }
                let is_full = received.count == buf.len();
                if self.pair.kind.is_message_based() || !options.wait_all || is_full {
                    return Some(Ok(()));
                }
            } else {
                drop(queue);
            }
            if received.count > 0 && (options.nonblocking || self.is_at_end()) {
                return Some(Ok(()));
            }
            if let Some(error) = self.take_error() {
                return Some(Err(error));
            }
            if self.is_at_end() {
                return Some(Ok(()));
            }
            (options.nonblocking && received.count == 0).then_some(Err(Errno::EAGAIN))
        };
        match wait_on(self.events(), "unix socket receive", None, attempt) {
            Ok(Some(Err(error))) => Err(error),
            Ok(_) => Ok(received),
            // Interrupted after some bytes came: those count.
            Err(_) if received.count > 0 => Ok(received),
            Err(error) => Err(error),
        }
    }

    /// Sends `buf` (with `rights` and `sender` on its first message): a
    /// stream takes what fits and waits for room for the rest; a message
    /// goes whole or waits (`EMSGSIZE` if it could never fit).
    pub fn send(
        &self,
        buf: &[u8],
        rights: Vec<Arc<OpenFile>>,
        sender: PeerCredentials,
        nonblocking: bool,
    ) -> Result<usize, Errno> {
        let is_message_based = self.pair.kind.is_message_based();
        if is_message_based && buf.len() + MESSAGE_OVERHEAD_BYTES > BUFFER_BYTES {
            return Err(Errno::EMSGSIZE);
        }
        let mut rights = Some(rights);
        let mut done = 0;
        let attempt = || loop {
            if let Some(error) = self.send_error() {
                return Some(if done > 0 { Ok(done) } else { Err(error) });
            }
            if done == buf.len() && (done > 0 || !is_message_based) {
                return Some(Ok(done));
            }
            let mut queue = self.outgoing().queue.lock();
            let room = BUFFER_BYTES.saturating_sub(queue.charged + MESSAGE_OVERHEAD_BYTES);
            let wanted = buf.len() - done;
            let fits = if is_message_based {
                room >= wanted
            } else {
                room > 0
            };
            if fits {
                let count = room.min(wanted);
                queue.messages.push_back(Message {
                    bytes: buf[done..done + count].to_vec(),
                    rights: rights.take().unwrap_or_default(),
                    sender,
                });
                queue.charged += count + MESSAGE_OVERHEAD_BYTES;
                drop(queue);
                done += count;
                self.pair.events[1 - self.side].wake_all();
                if is_message_based {
                    return Some(Ok(done));
                }
                continue;
            }
            drop(queue);
            if nonblocking {
                return Some(if done > 0 {
                    Ok(done)
                } else {
                    Err(Errno::EAGAIN)
                });
            }
            return None;
        };
        match wait_on(self.events(), "unix socket send", None, attempt) {
            Ok(answer) => answer.unwrap_or(Ok(0)),
            // Interrupted after some bytes went: those count.
            Err(_) if done > 0 => Ok(done),
            Err(error) => Err(error),
        }
    }

    /// What `poll` sees: readable with something queued, at the end of
    /// file or with an error; writable with room (or when a write would
    /// fail at once); hung up when shut both ways.
    pub fn readiness(&self) -> Readiness {
        let has_messages = !self.incoming().queue.lock().messages.is_empty();
        let has_room = self.outgoing().queue.lock().charged + MESSAGE_OVERHEAD_BYTES < BUFFER_BYTES;
        let has_error = self.pair.pending_error[self.side].lock().is_some();
        let is_at_end = self.is_at_end();
        let cannot_send = self.send_error().is_some();
        Readiness {
            readable: has_messages || is_at_end || has_error,
            writable: has_room || cannot_send,
            hung_up: is_at_end && cannot_send,
            error: has_error,
        }
    }
}

/// Takes what a receive into `buf` gets from `queue` into `received`
/// (leaving it queued when `peek`): bytes across messages for a stream,
/// one message (cut to `buf`) otherwise.
fn take(kind: PairKind, queue: &mut Queue, buf: &mut [u8], peek: bool, received: &mut Received) {
    if kind.is_message_based() {
        let Some(message) = queue.messages.front() else {
            return;
        };
        let count = message.bytes.len().min(buf.len());
        buf[..count].copy_from_slice(&message.bytes[..count]);
        received.count = count;
        received.whole = message.bytes.len();
        received.sender = Some(message.sender);
        if !peek {
            if let Some(message) = queue.messages.pop_front() {
                queue.charged -= message.bytes.len() + MESSAGE_OVERHEAD_BYTES;
                received.rights = message.rights;
            }
        }
        return;
    }
    let mut index = 0;
    while received.count < buf.len() {
        let Some(message) = queue.messages.get_mut(index) else {
            break;
        };
        // Descriptors come with the first byte of their send: a receive
        // that already has bytes stops before them.
        if !message.rights.is_empty() && received.count > 0 {
            break;
        }
        received.sender.get_or_insert(message.sender);
        let count = message.bytes.len().min(buf.len() - received.count);
        let done = received.count;
        buf[done..done + count].copy_from_slice(&message.bytes[..count]);
        received.count += count;
        if peek {
            index += 1;
            continue;
        }
        received.rights.append(&mut message.rights);
        message.bytes.drain(..count);
        queue.charged -= count;
        if message.bytes.is_empty() {
            queue.messages.pop_front();
            queue.charged -= MESSAGE_OVERHEAD_BYTES;
        }
    }
    received.whole = received.count;
}

impl Drop for End {
    fn drop(&mut self) {
        // The peer learns of the close: its reads find the end of file,
        // its writes their error; bytes left unread reset a connection.
        let unread = core::mem::take(&mut self.incoming().queue.lock().messages);
        if self.pair.kind.is_connection() && !unread.is_empty() {
            *self.pair.pending_error[1 - self.side].lock() = Some(Errno::ECONNRESET);
        }
        self.pair.is_closed[self.side].store(true, Ordering::SeqCst);
        self.incoming().is_read_shut.store(true, Ordering::SeqCst);
        self.outgoing().is_write_shut.store(true, Ordering::SeqCst);
        self.wake_both();
        // Descriptors never received close with the messages.
        drop(unread);
    }
}
