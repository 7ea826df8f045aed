//! The stream as a handler holds it: a packet whose bytes are the
//! connection's data not yet consumed and whose replies are appended to
//! the connection's answer.

use alloc::{sync::Arc, vec::Vec};

use extension_interface::{check_file_range, FileAccess, PacketAccess, ReplyError};

/// A piece of an answer, waiting to be sent.
pub(crate) enum Piece {
    /// Bytes a handler gave, sent from `at` on.
    Bytes {
        /// The bytes.
        bytes: Vec<u8>,
        /// How many are sent.
        at: usize,
    },
    /// A range of a file, sent from the file.
    File {
        /// The file.
        file: Arc<dyn FileAccess>,
        /// Next byte to send.
        offset: u64,
        /// End of the range.
        end: u64,
    },
}

/// The data of one raise, and the answer its handlers add.
pub(crate) struct Stream {
    data: Vec<u8>,
    answer: spin::Mutex<Answer>,
}

struct Answer {
    pieces: Vec<Piece>,
    /// Bytes (not file ranges) still allowed on the connection's queue.
    room: usize,
}

impl Stream {
    /// The stream showing `data`, with `room` bytes of answer allowed.
    pub(crate) fn new(data: Vec<u8>, room: usize) -> Stream {
        Stream {
            data,
            answer: spin::Mutex::new(Answer {
                pieces: Vec::new(),
                room,
            }),
        }
    }

    /// The data back and the answer's pieces, once the raise is over.
    pub(crate) fn into_parts(self: Arc<Stream>) -> (Vec<u8>, Vec<Piece>) {
        match Arc::try_unwrap(self) {
            Ok(stream) => (stream.data, stream.answer.into_inner().pieces),
            // A kernel handler kept the packet: copy what it shows.
            Err(shared) => {
                let pieces = core::mem::take(&mut shared.answer.lock().pieces);
                (shared.data.clone(), pieces)
            }
        }
    }
}

impl PacketAccess for Stream {
    fn len(&self) -> usize {
        self.data.len()
    }

    fn read(&self, offset: usize, out: &mut [u8]) -> usize {
        let Some(rest) = self.data.get(offset..) else {
            return 0;
        };
        let count = rest.len().min(out.len());
        out[..count].copy_from_slice(&rest[..count]);
        count
    }

    fn reply(&self, data: &[u8]) -> Result<(), ReplyError> {
        let mut answer = self.answer.lock();
        if data.len() > answer.room {
            return Err(ReplyError::TooLong);
        }
        answer.room -= data.len();
        if !data.is_empty() {
            answer.pieces.push(Piece::Bytes {
                bytes: data.to_vec(),
                at: 0,
            });
        }
        Ok(())
    }

    fn reply_file(
        &self,
        file: &Arc<dyn FileAccess>,
        offset: u64,
        len: u64,
    ) -> Result<(), ReplyError> {
        let end = check_file_range(file.as_ref(), offset, len)?;
        if len > 0 {
            self.answer.lock().pieces.push(Piece::File {
                file: file.clone(),
                offset,
                end,
            });
        }
        Ok(())
    }

    fn as_any(&self) -> &dyn core::any::Any {
        self
    }
}
