//! Pipes: `pipe` and `pipe2`. A pipe is a bounded byte queue with a read
//! end and a write end, each an open file whose device is one end; the
//! files sit on a FIFO inode of the personality's own hidden file system
//! (so `fstat` says `S_IFIFO`, as on Linux).
//!
//! A read of an empty pipe waits while a writer is left, then gives 0
//! (end of file); a write to a pipe with no reader is `EPIPE` (SIGPIPE
//! comes with signal delivery). A waiting reader blocks on the pipe's
//! `readable` queue, which writes and the last writer's close wake; a
//! waiting writer on `writable`, which reads and the last reader's close
//! wake (see [`crate::wait`]). A wait stops with `EINTR` when the kernel
//! says the caller was interrupted (a signal, a kill).
//!
//! Named pipes (`crate::fifo`) share this queue: their ends attach to a
//! [`Pipe`] as they open, and the open counters tell a FIFO's opener
//! that the other side has come.

use alloc::{collections::VecDeque, format, sync::Arc};
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use vfs::{flags, Device, Errno, Inode, NewNode, NodeKind, OpenFile, Readiness};

use crate::{
    user,
    wait::{wait_on, FileWaitQueue},
    LinuxProcess,
};

/// Bytes a pipe holds (Linux's default, 16 pages).
pub const PIPE_CAPACITY: usize = 64 * 1024;

/// The queue both ends share.
pub(crate) struct Pipe {
    bytes: spin::Mutex<VecDeque<u8>>,
    readers: AtomicUsize,
    writers: AtomicUsize,
    /// Read ends attached so far (Linux's `r_counter`): a FIFO writer
    /// waiting for a reader waits for it to change.
    read_opens: AtomicU64,
    /// Write ends attached so far (`w_counter`).
    write_opens: AtomicU64,
    /// Readers waiting for bytes or the end of file (and `poll`s of the
    /// read end).
    readable: FileWaitQueue,
    /// Writers waiting for room or a broken pipe (and `poll`s of the
    /// write end).
    writable: FileWaitQueue,
}

impl Pipe {
    /// An empty queue with no end attached.
    pub(crate) fn new() -> Arc<Pipe> {
        Arc::new(Pipe {
            bytes: spin::Mutex::new(VecDeque::new()),
            readers: AtomicUsize::new(0),
            writers: AtomicUsize::new(0),
            read_opens: AtomicU64::new(0),
            write_opens: AtomicU64::new(0),
            readable: FileWaitQueue::new(),
            writable: FileWaitQueue::new(),
        })
    }

    /// Read ends attached so far.
    pub(crate) fn read_opens(&self) -> u64 {
        self.read_opens.load(Ordering::SeqCst)
    }

    /// Write ends attached so far.
    pub(crate) fn write_opens(&self) -> u64 {
        self.write_opens.load(Ordering::SeqCst)
    }

    /// Read ends attached now.
    pub(crate) fn readers(&self) -> usize {
        self.readers.load(Ordering::SeqCst)
    }

    /// Write ends attached now.
    pub(crate) fn writers(&self) -> usize {
        self.writers.load(Ordering::SeqCst)
    }

    /// Where readers (and a FIFO's openers waiting for a writer) wait.
    pub(crate) fn readable_queue(&self) -> &FileWaitQueue {
        &self.readable
    }

    /// Where writers (and a FIFO's openers waiting for a reader) wait.
    pub(crate) fn writable_queue(&self) -> &FileWaitQueue {
        &self.writable
    }
}

/// The read end.
pub(crate) struct ReadEnd {
    pipe: Arc<Pipe>,
    /// The write-open count at which no hang-up is reported: a FIFO
    /// opened for reading without waiting reports `POLLHUP` only once a
    /// writer has come and gone (Linux's `f_version` in `fifo_open`).
    quiet_while_write_opens: Option<u64>,
}
/// The write end.
pub(crate) struct WriteEnd(Arc<Pipe>);

impl ReadEnd {
    /// A new read end of `pipe`; its hang-up is kept quiet until a writer
    /// attaches with `quiet_until_a_writer`. Wakes writers' opens waiting
    /// for a reader.
    pub(crate) fn attach(pipe: &Arc<Pipe>, quiet_until_a_writer: bool) -> ReadEnd {
        pipe.readers.fetch_add(1, Ordering::SeqCst);
        pipe.read_opens.fetch_add(1, Ordering::SeqCst);
        pipe.writable.wake_all();
        ReadEnd {
            pipe: pipe.clone(),
            quiet_while_write_opens: quiet_until_a_writer.then(|| pipe.write_opens()),
        }
    }
}

impl WriteEnd {
    /// A new write end of `pipe`. Wakes readers' opens waiting for a
    /// writer.
    pub(crate) fn attach(pipe: &Arc<Pipe>) -> WriteEnd {
        pipe.writers.fetch_add(1, Ordering::SeqCst);
        pipe.write_opens.fetch_add(1, Ordering::SeqCst);
        pipe.readable.wake_all();
        WriteEnd(pipe.clone())
    }
}

/// The two ends of a new pipe's queue, as devices (a pipe's open files
/// have one each; a Unix stream socket reads one pipe and writes
/// another).
pub(crate) fn ends() -> (ReadEnd, WriteEnd) {
    let pipe = Pipe::new();
    let write_end = WriteEnd::attach(&pipe);
    (ReadEnd::attach(&pipe, false), write_end)
}

impl Drop for ReadEnd {
    fn drop(&mut self) {
        // The last reader gone, waiting writers get EPIPE.
        if self.pipe.readers.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.pipe.writable.wake_all();
        }
    }
}

impl Drop for WriteEnd {
    fn drop(&mut self) {
        // The last writer gone, waiting readers get the end of file.
        if self.0.writers.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.readable.wake_all();
        }
    }
}

/// Whether the calling thread was interrupted (set by the kernel).
static INTERRUPTED: spin::Once<fn() -> bool> = spin::Once::new();

/// Tells the personality how to learn that the calling thread must stop
/// waiting (it is being ended, or has a signal to take).
pub fn set_interrupted_check(check: fn() -> bool) {
    INTERRUPTED.call_once(|| check);
}

/// Whether the calling thread must stop waiting: it is being ended, or a
/// signal arrived that it must take (the kernel's check).
pub(crate) fn interrupted() -> bool {
    INTERRUPTED.get().is_some_and(|interrupted| interrupted())
}

impl ReadEnd {
    /// Copies the first bytes queued into `buf`, leaving them queued
    /// (`tee`): waits as a read does while the pipe is empty and a writer
    /// is left (`EAGAIN` instead if `nonblocking`); 0 at the end of file.
    pub(crate) fn peek(&self, buf: &mut [u8], nonblocking: bool) -> Result<usize, Errno> {
        if buf.is_empty() {
            return Ok(0);
        }
        let attempt = || {
            {
                let bytes = self.pipe.bytes.lock();
                if !bytes.is_empty() {
                    let count = buf.len().min(bytes.len());
                    for (slot, byte) in buf.iter_mut().zip(bytes.iter()) {
                        *slot = *byte;
                    }
                    return Some(Ok(count));
                }
            }
            if self.pipe.writers.load(Ordering::SeqCst) == 0 {
                return Some(Ok(0));
            }
            nonblocking.then_some(Err(Errno::EAGAIN))
        };
        wait_on(&self.pipe.readable, "pipe read", None, attempt)?.unwrap_or(Ok(0))
    }
}

impl Device for ReadEnd {
    fn read(&self, _offset: u64, buf: &mut [u8], nonblocking: bool) -> Result<usize, Errno> {
        if buf.is_empty() {
            return Ok(0);
        }
        let attempt = || {
            {
                let mut bytes = self.pipe.bytes.lock();
                if !bytes.is_empty() {
                    let count = buf.len().min(bytes.len());
                    for (slot, byte) in buf.iter_mut().zip(bytes.drain(..count)) {
                        *slot = byte;
                    }
                    drop(bytes);
                    self.pipe.writable.wake_all();
                    return Some(Ok(count));
                }
            }
            if self.pipe.writers.load(Ordering::SeqCst) == 0 {
                return Some(Ok(0));
            }
            nonblocking.then_some(Err(Errno::EAGAIN))
        };
        // No deadline: only bytes, the end of file or a signal end it.
        wait_on(&self.pipe.readable, "pipe read", None, attempt)?.unwrap_or(Ok(0))
    }

    fn write(&self, _offset: u64, _buf: &[u8], _nonblocking: bool) -> Result<usize, Errno> {
        Err(Errno::EBADF)
    }

    fn as_any(&self) -> Option<&dyn core::any::Any> {
        Some(self)
    }

    fn readiness(&self) -> Readiness {
        // As Linux's `pipe_poll`: readable only with bytes in; a writer
        // gone is a hang-up, not input (`POLLHUP` alone for an empty
        // pipe, which `select` counts as readable all the same).
        let is_quiet = self
            .quiet_while_write_opens
            .is_some_and(|opens| opens == self.pipe.write_opens());
        Readiness {
            readable: !self.pipe.bytes.lock().is_empty(),
            writable: false,
            hung_up: self.pipe.writers.load(Ordering::Acquire) == 0 && !is_quiet,
            error: false,
        }
    }

    fn wait_queue(&self) -> Option<&dyn vfs::WaitQueue> {
        Some(&self.pipe.readable)
    }

    fn is_seekable(&self) -> bool {
        false
    }
}

impl Device for WriteEnd {
    fn read(&self, _offset: u64, _buf: &mut [u8], _nonblocking: bool) -> Result<usize, Errno> {
        Err(Errno::EBADF)
    }

    /// Writes everything, waiting for room as needed. A write of at most
    /// 4 KiB (`PIPE_BUF`) goes in at once or not at all, so it is never
    /// interleaved with another writer's bytes, as POSIX asks.
    fn write(&self, _offset: u64, buf: &[u8], nonblocking: bool) -> Result<usize, Errno> {
        let mut done = 0;
        // Puts in what fits; an answer once everything is in or the
        // write must stop, `None` to wait for room.
        let attempt = || loop {
            if done == buf.len() {
                return Some(Ok(done));
            }
            if self.0.readers.load(Ordering::SeqCst) == 0 {
                return Some(if done > 0 {
                    Ok(done)
                } else {
                    Err(Errno::EPIPE)
                });
            }
            let mut bytes = self.0.bytes.lock();
            let room = PIPE_CAPACITY - bytes.len();
            let atomic = buf.len() - done <= 4096;
            if room > 0 && (!atomic || room >= buf.len() - done) {
                let count = room.min(buf.len() - done);
                bytes.extend(&buf[done..done + count]);
                drop(bytes);
                done += count;
                self.0.readable.wake_all();
                continue;
            }
            drop(bytes);
            if nonblocking {
                return Some(if done > 0 {
                    Ok(done)
                } else {
                    Err(Errno::EAGAIN)
                });
            }
            return None;
        };
        match wait_on(&self.0.writable, "pipe write", None, attempt) {
            Ok(answer) => answer.unwrap_or(Ok(0)),
            // Interrupted after some bytes went in: those count.
            Err(error) => {
                if done > 0 {
                    Ok(done)
                } else {
                    Err(error)
                }
            }
        }
    }

    /// Writable while there is room; with no reader left, an error
    /// rather than a hang-up, as Linux's `pipe_poll` reports it (a write
    /// would fail at once with `EPIPE`).
    fn readiness(&self) -> Readiness {
        let readers = self.0.readers.load(Ordering::Acquire);
        Readiness {
            readable: false,
            writable: self.0.bytes.lock().len() < PIPE_CAPACITY,
            hung_up: false,
            error: readers == 0,
        }
    }

    fn wait_queue(&self) -> Option<&dyn vfs::WaitQueue> {
        Some(&self.0.writable)
    }

    fn is_seekable(&self) -> bool {
        false
    }
}

/// Numbers the hidden FIFO nodes.
static NEXT_PIPE: AtomicU64 = AtomicU64::new(1);

/// The two open files of a new pipe, on a FIFO inode made in `directory`
/// (a directory of the personality's hidden file system) and unlinked at
/// once, so only the open files hold it.
pub fn make_pipe(
    directory: &Arc<dyn Inode>,
    status_flags: u32,
) -> Result<(Arc<OpenFile>, Arc<OpenFile>), Errno> {
    let name = format!("pipe-{}", NEXT_PIPE.fetch_add(1, Ordering::Relaxed));
    let inode = directory.create(
        name.as_bytes(),
        NewNode {
            kind: NodeKind::Fifo,
            permissions: 0o600,
            uid: 0,
            gid: 0,
        },
    )?;
    let _ = directory.unlink(name.as_bytes());
    let (read_end, write_end) = ends();
    let nonblocking = status_flags & flags::O_NONBLOCK;
    let reader = OpenFile::new(
        inode.clone(),
        flags::O_RDONLY | nonblocking,
        Some(Arc::new(read_end)),
    );
    let writer = OpenFile::new(
        inode,
        flags::O_WRONLY | nonblocking,
        Some(Arc::new(write_end)),
    );
    Ok((Arc::new(reader), Arc::new(writer)))
}

/// `pipe2(fds, flags)` (and `pipe`): `O_CLOEXEC` and `O_NONBLOCK` only.
pub fn pipe2(
    directory: &Arc<dyn Inode>,
    files: &LinuxProcess,
    fds: u64,
    pipe_flags: u64,
) -> Result<i64, Errno> {
    let allowed = u64::from(flags::O_CLOEXEC | flags::O_NONBLOCK | flags::O_DIRECT);
    if pipe_flags & !allowed != 0 {
        return Err(Errno::EINVAL);
    }
    let (reader, writer) = make_pipe(directory, pipe_flags as u32)?;
    let cloexec = pipe_flags & u64::from(flags::O_CLOEXEC) != 0;
    let read_fd = files.fds.install(reader, 0, cloexec)?;
    let write_fd = match files.fds.install(writer, 0, cloexec) {
        Ok(fd) => fd,
        Err(error) => {
            let _ = files.close(i64::from(read_fd));
            return Err(error);
        }
    };
    let mut pair = [0u8; 8];
    pair[..4].copy_from_slice(&read_fd.to_le_bytes());
    pair[4..].copy_from_slice(&write_fd.to_le_bytes());
    if let Err(error) = user::write(fds, &pair) {
        let _ = files.close(i64::from(read_fd));
        let _ = files.close(i64::from(write_fd));
        return Err(error);
    }
    Ok(0)
}
