//! `socketpair(AF_UNIX, type, protocol, sv)`: two connected local
//! sockets, each an open file whose device is one [`End`] of a
//! [`Pair`], on a socket inode of the personality's hidden file system
//! (so `fstat` says `S_IFSOCK`). What one end writes the other reads:
//! a byte stream for `SOCK_STREAM`, whole messages for `SOCK_DGRAM` and
//! `SOCK_SEQPACKET` (a read takes one message; what does not fit in the
//! reader's buffer is dropped, as Linux does).
//!
//! Each direction holds at most [`BUFFER_BYTES`], Linux's default socket
//! buffer, each message charged [`MESSAGE_OVERHEAD_BYTES`] besides its
//! bytes (Linux charges every buffer's bookkeeping to the sender), so a
//! writer of many small datagrams runs out of room (`EAGAIN` when
//! non-blocking) long before the bytes alone would fill it. Waiting
//! works as for pipes (see [`crate::wait`]).
//!
//! When one end is closed, the other reads the end of file (a stream or
//! sequenced-packet socket; a datagram socket just has nothing more to
//! read) and its writes fail: `EPIPE` (with `SIGPIPE` from the kernel)
//! for a connection, `ECONNREFUSED` for datagrams.

use alloc::{collections::VecDeque, format, sync::Arc, vec::Vec};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use linux_abi::socket::{
    AF_INET, AF_MAX, AF_UNIX, IPPROTO_TCP, IPPROTO_UDP, SOCK_CLOEXEC, SOCK_DGRAM, SOCK_MAX,
    SOCK_NONBLOCK, SOCK_RAW, SOCK_SEQPACKET, SOCK_STREAM, SOCK_TYPE_MASK,
};
use vfs::{flags, Device, Errno, Inode, NewNode, NodeKind, OpenFile, Readiness};

use crate::{
    user,
    wait::{wait_on, FileWaitQueue},
    LinuxProcess,
};

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
    fn is_message_based(self) -> bool {
        self != PairKind::Stream
    }

    /// Whether the other end's close ends the connection (the end of
    /// file for reads, `EPIPE` for writes).
    fn is_connection(self) -> bool {
        self != PairKind::Datagram
    }
}

/// One direction's queue: messages (a stream's writes are messages too,
/// read across their boundaries) and the bytes they are charged.
#[derive(Default)]
struct Queue {
    messages: VecDeque<Vec<u8>>,
    /// Bytes charged: the messages' bytes and their overhead.
    charged: usize,
}

/// One direction of a pair, from the writing end to the reading end.
struct Direction {
    queue: spin::Mutex<Queue>,
    /// The reading end's readers (and `poll`s) wait here for messages.
    readable: FileWaitQueue,
    /// The writing end's writers (and `poll`s) wait here for room.
    writable: FileWaitQueue,
}

impl Direction {
    fn new() -> Direction {
        Direction {
            queue: spin::Mutex::new(Queue::default()),
            readable: FileWaitQueue::new(),
            writable: FileWaitQueue::new(),
        }
    }
}

/// The two directions and which ends are still open.
pub struct Pair {
    kind: PairKind,
    /// `directions[side]` is what end `side` reads.
    directions: [Direction; 2],
    /// Whether end `side` was closed.
    is_closed: [AtomicBool; 2],
}

/// One end of a [`Pair`]: it reads `directions[side]` and writes the
/// other.
pub struct End {
    pair: Arc<Pair>,
    side: usize,
}

impl End {
    fn incoming(&self) -> &Direction {
        &self.pair.directions[self.side]
    }

    fn outgoing(&self) -> &Direction {
        &self.pair.directions[1 - self.side]
    }

    fn is_peer_closed(&self) -> bool {
        self.pair.is_closed[1 - self.side].load(Ordering::SeqCst)
    }

    /// Whether a read finds the end of file: nothing queued and the
    /// connection gone.
    fn is_at_end(&self) -> bool {
        self.pair.kind.is_connection() && self.is_peer_closed()
    }

    /// The error a write to a closed peer gives.
    fn peer_gone_error(&self) -> Errno {
        if self.pair.kind.is_connection() {
            Errno::EPIPE
        } else {
            Errno::ECONNREFUSED
        }
    }

    /// Takes what a read of `buf` gets from `queue`: bytes across
    /// messages for a stream, one message (cut to `buf`) otherwise.
    fn take(&self, queue: &mut Queue, buf: &mut [u8]) -> usize {
        if self.pair.kind.is_message_based() {
            let Some(message) = queue.messages.pop_front() else {
                return 0;
            };
            let count = message.len().min(buf.len());
            buf[..count].copy_from_slice(&message[..count]);
            queue.charged -= message.len() + MESSAGE_OVERHEAD_BYTES;
            return count;
        }
        let mut done = 0;
        while done < buf.len() {
            let Some(message) = queue.messages.front_mut() else {
                break;
            };
            let count = message.len().min(buf.len() - done);
            buf[done..done + count].copy_from_slice(&message[..count]);
            message.drain(..count);
            queue.charged -= count;
            done += count;
            if message.is_empty() {
                queue.messages.pop_front();
                queue.charged -= MESSAGE_OVERHEAD_BYTES;
            }
        }
        done
    }
}

impl Drop for End {
    fn drop(&mut self) {
        // The peer's waiters learn of the close: readers get the end of
        // file, writers their error.
        self.pair.is_closed[self.side].store(true, Ordering::SeqCst);
        for direction in &self.pair.directions {
            direction.readable.wake_all();
            direction.writable.wake_all();
        }
    }
}

impl Device for End {
    fn read(&self, _offset: u64, buf: &mut [u8], nonblocking: bool) -> Result<usize, Errno> {
        let attempt = || {
            let mut queue = self.incoming().queue.lock();
            if !queue.messages.is_empty() {
                let count = self.take(&mut queue, buf);
                drop(queue);
                self.incoming().writable.wake_all();
                return Some(Ok(count));
            }
            drop(queue);
            if self.is_at_end() {
                return Some(Ok(0));
            }
            nonblocking.then_some(Err(Errno::EAGAIN))
        };
        wait_on(&self.incoming().readable, "socketpair read", None, attempt)?.unwrap_or(Ok(0))
    }

    /// A stream takes what fits and waits for room for the rest; a
    /// message goes whole or waits (`EMSGSIZE` if it could never fit).
    fn write(&self, _offset: u64, buf: &[u8], nonblocking: bool) -> Result<usize, Errno> {
        let is_message_based = self.pair.kind.is_message_based();
        if is_message_based && buf.len() + MESSAGE_OVERHEAD_BYTES > BUFFER_BYTES {
            return Err(Errno::EMSGSIZE);
        }
        let mut done = 0;
        let attempt = || loop {
            if self.is_peer_closed() {
                return Some(if done > 0 {
                    Ok(done)
                } else {
                    Err(self.peer_gone_error())
                });
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
                queue.messages.push_back(buf[done..done + count].to_vec());
                queue.charged += count + MESSAGE_OVERHEAD_BYTES;
                drop(queue);
                done += count;
                self.outgoing().readable.wake_all();
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
        match wait_on(&self.outgoing().writable, "socketpair write", None, attempt) {
            Ok(answer) => answer.unwrap_or(Ok(0)),
            // Interrupted after some bytes went: those count.
            Err(_) if done > 0 => Ok(done),
            Err(error) => Err(error),
        }
    }

    fn readiness(&self) -> Readiness {
        let has_messages = !self.incoming().queue.lock().messages.is_empty();
        let has_room = self.outgoing().queue.lock().charged + MESSAGE_OVERHEAD_BYTES < BUFFER_BYTES;
        let is_hung_up = self.is_at_end();
        Readiness {
            readable: has_messages || is_hung_up,
            writable: has_room || self.is_peer_closed(),
            hung_up: is_hung_up,
            error: false,
        }
    }

    fn wait_queue(&self) -> Option<&dyn vfs::WaitQueue> {
        Some(&self.incoming().readable)
    }

    fn is_seekable(&self) -> bool {
        false
    }
}

/// The kind of pair `socketpair(AF_UNIX, type, protocol)` makes, or its
/// error: `EPROTONOSUPPORT` for a protocol other than 0 or `PF_UNIX`,
/// `ESOCKTNOSUPPORT` for a type `AF_UNIX` lacks (Linux's `unix_create`).
fn unix_kind(kind: u64, protocol: u64) -> Result<PairKind, Errno> {
    if protocol != 0 && protocol != u64::from(AF_UNIX) {
        return Err(Errno::EPROTONOSUPPORT);
    }
    match kind {
        SOCK_STREAM => Ok(PairKind::Stream),
        SOCK_DGRAM | SOCK_RAW => Ok(PairKind::Datagram),
        SOCK_SEQPACKET => Ok(PairKind::SequencedPacket),
        _ => Err(Errno::ESOCKTNOSUPPORT),
    }
}

/// What `socketpair(AF_INET, ...)` says: `EOPNOTSUPP` for a type and
/// protocol `socket` would take (IPv4 sockets come one at a time), else
/// the error `socket` gives.
fn inet_error(kind: u64, protocol: u64) -> Errno {
    match (kind, protocol) {
        (SOCK_STREAM, 0 | IPPROTO_TCP) | (SOCK_DGRAM, 0 | IPPROTO_UDP) => Errno::EOPNOTSUPP,
        (SOCK_STREAM | SOCK_DGRAM | SOCK_RAW, _) => Errno::EPROTONOSUPPORT,
        _ => Errno::ESOCKTNOSUPPORT,
    }
}

/// Numbers the hidden socket nodes.
static NEXT_PAIR: AtomicU64 = AtomicU64::new(1);

/// Two connected ends of `kind` as open files with `status_flags`, on
/// a socket inode made in `directory` and unlinked at once.
pub fn make_pair(
    directory: &Arc<dyn Inode>,
    kind: PairKind,
    status_flags: u32,
) -> Result<(Arc<OpenFile>, Arc<OpenFile>), Errno> {
    let name = format!("socketpair-{}", NEXT_PAIR.fetch_add(1, Ordering::Relaxed));
    let inode = directory.create(
        name.as_bytes(),
        NewNode {
            kind: NodeKind::Socket,
            permissions: 0o777,
            uid: 0,
            gid: 0,
        },
    )?;
    let _ = directory.unlink(name.as_bytes());
    let pair = Arc::new(Pair {
        kind,
        directions: [Direction::new(), Direction::new()],
        is_closed: [AtomicBool::new(false), AtomicBool::new(false)],
    });
    let end = |side: usize| {
        let device = End {
            pair: pair.clone(),
            side,
        };
        Arc::new(OpenFile::new(
            inode.clone(),
            flags::O_RDWR | status_flags,
            Some(Arc::new(device)),
        ))
    };
    Ok((end(0), end(1)))
}

/// `socketpair(domain, type, protocol, sv)`: `EINVAL` for flags other
/// than `SOCK_NONBLOCK` and `SOCK_CLOEXEC` or a type past `SOCK_MAX`,
/// `EAFNOSUPPORT` for a family other than `AF_UNIX` and `AF_INET`,
/// `EFAULT` (and no descriptors left open) for a bad `sv`.
pub fn socketpair(
    directory: &Arc<dyn Inode>,
    files: &LinuxProcess,
    domain: u64,
    kind: u64,
    protocol: u64,
    fds: u64,
) -> Result<i64, Errno> {
    if kind & !(SOCK_TYPE_MASK | SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let socket_type = kind & SOCK_TYPE_MASK;
    // Linux's `__sock_create` order: the family's range, the type's,
    // then the family itself. The domain is an `int`.
    let domain = domain as i32;
    if !(0..AF_MAX as i32).contains(&domain) {
        return Err(Errno::EAFNOSUPPORT);
    }
    if socket_type >= SOCK_MAX {
        return Err(Errno::EINVAL);
    }
    let pair_kind = match u16::try_from(domain) {
        Ok(AF_UNIX) => unix_kind(socket_type, protocol)?,
        Ok(AF_INET) => return Err(inet_error(socket_type, protocol)),
        _ => return Err(Errno::EAFNOSUPPORT),
    };
    let status = if kind & SOCK_NONBLOCK != 0 {
        flags::O_NONBLOCK
    } else {
        0
    };
    let (first, second) = make_pair(directory, pair_kind, status)?;
    let cloexec = kind & SOCK_CLOEXEC != 0;
    let first_fd = files.fds.install(first, 0, cloexec)?;
    let second_fd = match files.fds.install(second, 0, cloexec) {
        Ok(fd) => fd,
        Err(error) => {
            let _ = files.fds.close(i64::from(first_fd));
            return Err(error);
        }
    };
    let mut pair = [0u8; 8];
    pair[..4].copy_from_slice(&first_fd.to_le_bytes());
    pair[4..].copy_from_slice(&second_fd.to_le_bytes());
    if let Err(error) = user::write(fds, &pair) {
        let _ = files.fds.close(i64::from(first_fd));
        let _ = files.fds.close(i64::from(second_fd));
        return Err(error);
    }
    Ok(0)
}
