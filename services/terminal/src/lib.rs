//! The console as a Linux terminal: `/dev/console` and `/dev/tty`.
//!
//! Output goes to the line as it is. Input goes through a small line
//! discipline that honours the termios modes programs set:
//! - `ICANON`: a line at a time, with erase and ^D; else byte by byte
//!   (`VMIN` 1);
//! - `ECHO`, and `ICRNL` (a typed carriage return reads as a newline);
//! - `ISIG`: ^C, ^\ and ^Z (the `VINTR`, `VQUIT` and `VSUSP` characters)
//!   send `SIGINT`, `SIGQUIT` and `SIGTSTP` to the foreground process
//!   group and discard the input not yet read, as Linux's `n_tty` does.
//!
//! It answers the `ioctl`s a shell asks: `TCGETS`/`TCSETS*`, the window
//! size, and the foreground process group (`tcsetpgrp`, which job control
//! depends on).
//!
//! The pieces:
//! - [`LineDiscipline`] and [`read`]: the discipline as plain data and a
//!   read's line editing, tested on the host.
//! - [`Terminal`]: the device (`vfs::Device`) that holds the discipline
//!   under a lock and moves typed bytes into it.
//! - [`Host`]: what the terminal needs from the kernel (the line's bytes
//!   in and out, signals, waiting for input, user memory), which the
//!   kernel implements for the serial line.
//!
//! The line cannot be peeked, so typed bytes are taken into the
//! discipline by whoever looks first: a read, `poll`, or the watcher
//! ([`Terminal::watch_for_signal_keys`]) that the kernel runs so that ^C
//! reaches a program that is not reading (a foreground `sleep`).
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

mod discipline;
#[cfg(test)]
mod tests;

use linux_abi::termios::{
    Termios, Winsize, TCGETS, TCSETS, TCSETSF, TCSETSW, TIOCGPGRP, TIOCGSID, TIOCGWINSZ, TIOCSCTTY,
    TIOCSPGRP, TIOCSWINSZ,
};
use vfs::{Device, Errno, Readiness};

pub use discipline::{read, LineDiscipline, ReadModes, SignalKey};

/// What the terminal needs from the kernel: the line it is attached to,
/// the processes it signals, the waiting of its readers, and the user
/// memory its `ioctl`s read and write.
pub trait Host: Send + Sync {
    /// The next byte typed on the line, if there is one (never waits).
    fn try_read_byte(&self) -> Option<u8>;
    /// Writes `bytes` to the line: programs' output and the echo.
    fn write(&self, bytes: &[u8]);
    /// Sends `signal` to every process of process group `group`.
    fn signal_group(&self, group: u64, signal: u8);
    /// Whether the calling thread has a signal to take (or is being
    /// killed), so a read waiting for input must return `EINTR`.
    fn interrupted(&self) -> bool;
    /// Blocks the calling thread until `look` answers true, asking it
    /// first and again whenever input may have arrived. The calling
    /// thread is registered to be woken by [`Host::input_taken`] and by
    /// the line's input (an interrupt) before each look, so input that
    /// arrives between a look and the block is not missed.
    fn wait_for_input(&self, look: &mut dyn FnMut() -> bool);
    /// Wakes the threads in [`Host::wait_for_input`]: bytes were taken
    /// off the line, perhaps by a thread other than the one that will
    /// read them.
    fn input_taken(&self);
    /// The queue a `poll` of the terminal waits on; `None` where nothing
    /// wakes it (input that does not arrive by interrupt), so `poll`
    /// looks every few milliseconds instead.
    fn wait_queue(&self) -> Option<&dyn vfs::WaitQueue>;
    /// Copies `bytes` to the calling process's memory at `address`.
    fn copy_to_user(&self, address: u64, bytes: &[u8]) -> Result<(), Errno>;
    /// Fills `bytes` from the calling process's memory at `address`.
    fn copy_from_user(&self, bytes: &mut [u8], address: u64) -> Result<(), Errno>;
}

/// A terminal: the line discipline on the line its [`Host`] reaches.
pub struct Terminal<H> {
    host: H,
    discipline: spin::Mutex<LineDiscipline>,
}

impl<H: Host> Terminal<H> {
    /// A terminal in Linux's default modes on `host`'s line.
    pub fn new(host: H) -> Terminal<H> {
        Terminal {
            host,
            discipline: spin::Mutex::new(LineDiscipline::new()),
        }
    }

    /// Makes process group `group` the foreground one.
    pub fn set_foreground(&self, group: u64) {
        self.discipline.lock().set_foreground(group);
    }

    /// Takes typed bytes in whenever input arrives, for ever, so that a
    /// signal key reaches the foreground group even while no program
    /// reads the terminal. The kernel runs it on a thread of its own.
    pub fn watch_for_signal_keys(&self) -> ! {
        loop {
            self.host.wait_for_input(&mut || {
                self.take_input();
                false
            });
        }
    }

    /// Takes what has been typed into the discipline. A signal key is
    /// echoed and signals the foreground process group.
    ///
    /// Two threads take input (the watcher and a reader), so the
    /// discipline stays locked from reading a byte off the line to
    /// keeping it: otherwise one thread could hold a byte it has read
    /// while the other keeps the bytes typed after it, and input would
    /// arrive out of order (`spindle` read as `sindlep`).
    fn take_input(&self) {
        loop {
            let mut took = false;
            let signal_key = {
                let mut discipline = self.discipline.lock();
                let mut signal_key = None;
                while let Some(byte) = self.host.try_read_byte() {
                    match discipline.receive(byte) {
                        None => took = true,
                        Some(key) => {
                            signal_key = Some((key, discipline.foreground()));
                            break;
                        }
                    }
                }
                signal_key
            };
            if took {
                // Readers and pollers woken by the line's interrupt may
                // have looked before these bytes were kept.
                self.host.input_taken();
            }
            // The echo and the signal go out with the discipline
            // unlocked: a signal can wake and run a reader of this
            // terminal.
            let Some((key, group)) = signal_key else {
                return;
            };
            if let Some(echo) = key.echo {
                self.host.write(&echo);
            }
            if group != 0 {
                self.host.signal_group(group, key.signal);
            }
        }
    }

    /// One look for the next byte: `Some` answer (a byte; none, when
    /// `nonblocking`; `EINTR`) or `None` to wait.
    fn look_for_byte(&self, nonblocking: bool) -> Option<Result<Option<u8>, Errno>> {
        self.take_input();
        if let Some(byte) = self.discipline.lock().take_byte() {
            return Some(Ok(Some(byte)));
        }
        if nonblocking {
            return Some(Ok(None));
        }
        if self.host.interrupted() {
            return Some(Err(Errno::EINTR));
        }
        None
    }

    /// The next byte typed, waiting for one unless `nonblocking`;
    /// `EINTR` if a signal arrives meanwhile (^C included).
    fn next_byte(&self, nonblocking: bool) -> Result<Option<u8>, Errno> {
        // Once without waiting: a byte already typed costs no
        // registering with the line's waiters.
        if let Some(answer) = self.look_for_byte(nonblocking) {
            return answer;
        }
        let mut answer = None;
        self.host.wait_for_input(&mut || {
            answer = self.look_for_byte(nonblocking);
            answer.is_some()
        });
        answer.unwrap_or(Err(Errno::EINTR))
    }
}

impl<H: Host> Device for Terminal<H> {
    fn read(&self, _offset: u64, buf: &mut [u8], nonblocking: bool) -> Result<usize, Errno> {
        if buf.is_empty() {
            return Ok(0);
        }
        let modes = self.discipline.lock().read_modes();
        read(
            modes,
            buf,
            nonblocking,
            |nonblocking| self.next_byte(nonblocking),
            |echo| self.host.write(echo),
        )
    }

    fn write(&self, _offset: u64, buf: &[u8], _nonblocking: bool) -> Result<usize, Errno> {
        self.host.write(buf);
        Ok(buf.len())
    }

    /// Readable when a byte has been typed (taken off the line into the
    /// discipline, since the line cannot be peeked).
    fn readiness(&self) -> Readiness {
        self.take_input();
        Readiness {
            readable: self.discipline.lock().has_input(),
            writable: true,
            hung_up: false,
            error: false,
        }
    }

    fn wait_queue(&self) -> Option<&dyn vfs::WaitQueue> {
        self.host.wait_queue()
    }

    fn ioctl(&self, request: u32, argument: u64) -> Result<i64, Errno> {
        match request {
            TCGETS => {
                let termios = self.discipline.lock().termios().to_bytes();
                self.host.copy_to_user(argument, &termios)?;
            }
            TCSETS | TCSETSW | TCSETSF => {
                let mut termios = [0u8; Termios::BYTES];
                self.host.copy_from_user(&mut termios, argument)?;
                self.discipline
                    .lock()
                    .set_termios(Termios::from_bytes(&termios));
            }
            TIOCGWINSZ => {
                let window = self.discipline.lock().window().to_bytes();
                self.host.copy_to_user(argument, &window)?;
            }
            TIOCSWINSZ => {
                let mut window = [0u8; Winsize::BYTES];
                self.host.copy_from_user(&mut window, argument)?;
                self.discipline
                    .lock()
                    .set_window(Winsize::from_bytes(&window));
            }
            TIOCGPGRP | TIOCGSID => {
                let group = self.discipline.lock().foreground() as u32;
                self.host.copy_to_user(argument, &group.to_le_bytes())?;
            }
            TIOCSPGRP => {
                let mut group = [0u8; 4];
                self.host.copy_from_user(&mut group, argument)?;
                let group = i32::from_le_bytes(group);
                if group < 0 {
                    return Err(Errno::EINVAL);
                }
                self.set_foreground(group as u64);
            }
            TIOCSCTTY => {}
            _ => return Err(Errno::ENOTTY),
        }
        Ok(0)
    }

    fn is_seekable(&self) -> bool {
        false
    }
}
