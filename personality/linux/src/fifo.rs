//! Named pipes (FIFOs made by `mknod` or `mkfifo`), as fifo(7) and
//! Linux's `fifo_open` have them: every open of one FIFO inode attaches
//! to the same [`Pipe`] (the queue of `pipe(2)`), which lives while any
//! end is open; its bytes go with the last close.
//!
//! Opening for reading waits until a writer has opened, and for writing
//! until a reader has, unless `O_NONBLOCK`: then a reader opens at once
//! and a writer with no reader is `ENXIO`. `O_RDWR` never waits and
//! holds both ends. A wait ends with `EINTR` on a signal, and the end it
//! attached goes with it.
//!
//! The VFS calls [`NamedPipes`] when a FIFO opens (`vfs::FifoOpener`);
//! the personality registers it when it is made.

use alloc::{
    collections::BTreeMap,
    sync::{Arc, Weak},
};

use vfs::{
    flags::{O_ACCMODE, O_NONBLOCK, O_RDONLY, O_WRONLY},
    Device, Errno, Inode, Readiness,
};

use crate::{
    pipe::{Pipe, ReadEnd, WriteEnd},
    wait::{wait_on, FileWaitQueue},
};

/// The pipes of the FIFOs open now, by the inode's device and inode
/// numbers.
#[derive(Default)]
pub(crate) struct NamedPipes {
    pipes: spin::Mutex<BTreeMap<(u64, u64), Weak<Pipe>>>,
}

impl NamedPipes {
    /// The pipe of FIFO `inode`: the one its open ends share, or a new
    /// one when none is open.
    fn pipe_of(&self, inode: &Arc<dyn Inode>) -> Arc<Pipe> {
        let mut pipes = self.pipes.lock();
        // Pipes whose last end closed are gone.
        pipes.retain(|_, pipe| pipe.strong_count() > 0);
        let key = (inode.dev(), inode.ino());
        if let Some(pipe) = pipes.get(&key).and_then(Weak::upgrade) {
            return pipe;
        }
        let pipe = Pipe::new();
        pipes.insert(key, Arc::downgrade(&pipe));
        pipe
    }
}

/// Waits on `queue` until `partner_opens` differs from `seen`: the other
/// side has opened (`EINTR` on a signal).
fn wait_for_partner(
    queue: &FileWaitQueue,
    seen: u64,
    partner_opens: impl Fn() -> u64,
) -> Result<(), Errno> {
    wait_on(queue, "fifo open", None, || {
        (partner_opens() != seen).then_some(())
    })
    .map(drop)
}

impl vfs::FifoOpener for NamedPipes {
    fn open_fifo(&self, inode: &Arc<dyn Inode>, flags: u32) -> Result<Arc<dyn Device>, Errno> {
        let pipe = self.pipe_of(inode);
        let nonblocking = flags & O_NONBLOCK != 0;
        match flags & O_ACCMODE {
            O_RDONLY => {
                let seen = pipe.write_opens();
                let has_no_writer = pipe.writers() == 0;
                let end = ReadEnd::attach(&pipe, nonblocking && has_no_writer);
                if has_no_writer && !nonblocking {
                    wait_for_partner(pipe.readable_queue(), seen, || pipe.write_opens())?;
                }
                Ok(Arc::new(end))
            }
            O_WRONLY => {
                if nonblocking && pipe.readers() == 0 {
                    return Err(Errno::ENXIO);
                }
                let seen = pipe.read_opens();
                let has_no_reader = pipe.readers() == 0;
                let end = WriteEnd::attach(&pipe);
                if has_no_reader {
                    wait_for_partner(pipe.writable_queue(), seen, || pipe.read_opens())?;
                }
                Ok(Arc::new(end))
            }
            // O_RDWR (the VFS refused the invalid mode 3).
            _ => Ok(Arc::new(BothEnds {
                read: ReadEnd::attach(&pipe, false),
                write: WriteEnd::attach(&pipe),
                queues: BothQueues(pipe),
            })),
        }
    }
}

/// A FIFO opened `O_RDWR`: a reader and a writer of its pipe at once.
struct BothEnds {
    read: ReadEnd,
    write: WriteEnd,
    queues: BothQueues,
}

/// Both queues of a pipe as one: a `poll` of an `O_RDWR` FIFO waits for
/// bytes and for room alike.
struct BothQueues(Arc<Pipe>);

impl vfs::WaitQueue for BothQueues {
    fn register(&self, thread: u64) {
        vfs::WaitQueue::register(self.0.readable_queue(), thread);
        vfs::WaitQueue::register(self.0.writable_queue(), thread);
    }

    fn unregister(&self, thread: u64) {
        vfs::WaitQueue::unregister(self.0.readable_queue(), thread);
        vfs::WaitQueue::unregister(self.0.writable_queue(), thread);
    }

    fn wake_count(&self) -> u64 {
        let readable = vfs::WaitQueue::wake_count(self.0.readable_queue());
        readable.wrapping_add(vfs::WaitQueue::wake_count(self.0.writable_queue()))
    }
}

impl Device for BothEnds {
    fn read(&self, offset: u64, buf: &mut [u8], nonblocking: bool) -> Result<usize, Errno> {
        self.read.read(offset, buf, nonblocking)
    }

    fn write(&self, offset: u64, buf: &[u8], nonblocking: bool) -> Result<usize, Errno> {
        self.write.write(offset, buf, nonblocking)
    }

    /// Readable with bytes in, writable with room; never hung up nor in
    /// error, since it is a reader and a writer itself.
    fn readiness(&self) -> Readiness {
        Readiness {
            readable: self.read.readiness().readable,
            writable: self.write.readiness().writable,
            hung_up: false,
            error: false,
        }
    }

    fn wait_queue(&self) -> Option<&dyn vfs::WaitQueue> {
        Some(&self.queues)
    }

    fn is_seekable(&self) -> bool {
        false
    }
}
