//! One accepted connection: what arrived and is not consumed, what is
//! queued to go back, and whether it is ending.

use alloc::{collections::VecDeque, sync::Arc, vec::Vec};
use core::net::SocketAddrV4;

use dispatch::Event;
use extension_interface::PacketRef;
use sockets::{Shutdown, Socket, SocketError};

use crate::{
    stream::{Piece, Stream},
    Counters, Next, StreamArgs, IDLE_TIMEOUT_NS, MAX_PENDING_BYTES, MAX_QUEUED_BYTES,
};

/// Bytes read from a connection at a time, and the most of a file (not
/// kept in memory) read at a time to be sent.
const CHUNK_BYTES: usize = 16 << 10;

pub(crate) struct Connection {
    socket: Socket,
    remote: SocketAddrV4,
    /// Arrived and not consumed by a handler.
    pending: Vec<u8>,
    /// Whether bytes arrived since the last raise.
    fresh: bool,
    queue: VecDeque<Piece>,
    /// Bytes (not file ranges) in `queue`.
    queued_bytes: usize,
    /// The answer is complete: close once `queue` is sent.
    closing: bool,
    /// The peer sent its end.
    peer_done: bool,
    last_activity_ns: u64,
}

/// What a step did to a connection.
pub(crate) struct Progress {
    /// Anything arrived, was raised or was sent.
    pub moved: bool,
    /// The connection is over: drop it.
    pub finished: bool,
}

impl Progress {
    fn finished(moved: bool) -> Progress {
        Progress {
            moved,
            finished: true,
        }
    }
}

impl Connection {
    pub(crate) fn new(socket: Socket, remote: SocketAddrV4, now_ns: u64) -> Connection {
        Connection {
            socket,
            remote,
            pending: Vec::new(),
            fresh: false,
            queue: VecDeque::new(),
            queued_bytes: 0,
            closing: false,
            peer_done: false,
            last_activity_ns: now_ns,
        }
    }

    /// Reads, raises, sends, and says whether the connection is over.
    pub(crate) fn step(
        &mut self,
        port: u16,
        event: &Event<StreamArgs, u32>,
        now_ns: u64,
        counters: &mut Counters,
    ) -> Progress {
        let mut moved = false;
        if !self.closing && !self.peer_done {
            match self.read() {
                Ok(read) => moved |= read,
                Err(()) => {
                    counters.dropped += 1;
                    return Progress::finished(moved);
                }
            }
        }
        if self.fresh {
            self.fresh = false;
            moved = true;
            counters.raised += 1;
            self.raise(port, event);
        }
        if self.peer_done && !self.closing {
            // Nothing more will come: send what is queued, then end.
            self.closing = true;
        }
        match self.send() {
            Ok(sent) => moved |= sent,
            Err(()) => {
                counters.dropped += 1;
                return Progress::finished(moved);
            }
        }
        if self.closing && self.queue.is_empty() {
            let _ = self.socket.shutdown(Shutdown::Write);
            counters.answered += 1;
            return Progress::finished(moved);
        }
        if moved {
            self.last_activity_ns = now_ns;
        } else if now_ns.saturating_sub(self.last_activity_ns) > IDLE_TIMEOUT_NS {
            counters.dropped += 1;
            return Progress::finished(false);
        }
        Progress {
            moved,
            finished: false,
        }
    }

    /// Takes what arrived; whether anything did. `Err` when the
    /// connection failed or holds more unconsumed data than allowed.
    fn read(&mut self) -> Result<bool, ()> {
        let mut buffer = [0u8; 2048];
        let mut read = false;
        loop {
            match self.socket.receive(&mut buffer, false) {
                Ok((0, _, _)) => {
                    self.peer_done = true;
                    return Ok(read);
                }
                Ok((count, _, _)) => {
                    if self.pending.len() + count > MAX_PENDING_BYTES {
                        return Err(());
                    }
                    self.pending.extend_from_slice(&buffer[..count]);
                    self.fresh = true;
                    read = true;
                }
                Err(SocketError::WouldBlock) => return Ok(read),
                Err(_) => return Err(()),
            }
        }
    }

    /// Raises `TCP.StreamData` with everything not consumed.
    fn raise(&mut self, port: u16, event: &Event<StreamArgs, u32>) {
        let data = core::mem::take(&mut self.pending);
        let stream = Arc::new(Stream::new(
            data,
            MAX_QUEUED_BYTES.saturating_sub(self.queued_bytes),
        ));
        let mut args = (
            PacketRef(stream.clone()),
            u32::from(port),
            u32::from(*self.remote.ip()),
            u32::from(self.remote.port()),
        );
        // Every handler faulted: nobody will answer.
        let next = event
            .raise(&mut args)
            .map_or(Next::Close, Next::from_result);
        drop(args);
        let (data, pieces) = stream.into_parts();
        for piece in pieces {
            if let Piece::Bytes { bytes, .. } = &piece {
                self.queued_bytes += bytes.len();
            }
            self.queue.push_back(piece);
        }
        match next {
            Next::MoreData => self.pending = data,
            Next::KeepOpen => {}
            Next::Close => self.closing = true,
        }
    }

    /// Sends queued pieces while the socket takes them; whether any byte
    /// went. `Err` when the connection failed.
    fn send(&mut self) -> Result<bool, ()> {
        let mut moved = false;
        while let Some(piece) = self.queue.front_mut() {
            let sent = match piece {
                Piece::Bytes { bytes, at } => match self.socket.send(&bytes[*at..], None) {
                    Ok(count) => {
                        *at += count;
                        self.queued_bytes -= count;
                        (count, *at == bytes.len())
                    }
                    Err(error) => return wait_or_fail(error, moved),
                },
                Piece::File { file, offset, end } => {
                    let sent = match file.resident() {
                        Some(all) => {
                            let range = all.get(*offset as usize..*end as usize).unwrap_or(&[]);
                            self.socket.send(range, None)
                        }
                        None => {
                            let want = (*end - *offset).min(CHUNK_BYTES as u64) as usize;
                            let mut chunk = alloc::vec![0; want];
                            let got = file.read(*offset, &mut chunk);
                            self.socket.send(&chunk[..got], None)
                        }
                    };
                    match sent {
                        // The file ended early (written meanwhile): stop there.
                        Ok(0) => (0, true),
                        Ok(count) => {
                            *offset += count as u64;
                            (count, *offset >= *end)
                        }
                        Err(error) => return wait_or_fail(error, moved),
                    }
                }
            };
            let (count, done) = sent;
            moved |= count > 0;
            if done {
                self.queue.pop_front();
            } else if count == 0 {
                break;
            }
        }
        Ok(moved)
    }
}

fn wait_or_fail(error: SocketError, moved: bool) -> Result<bool, ()> {
    match error {
        SocketError::WouldBlock => Ok(moved),
        _ => Err(()),
    }
}
