//! The serial console as a terminal: `/dev/console` and `/dev/tty`.
//!
//! Output goes to the serial line. Input goes through a small line
//! discipline that honours the termios modes programs set:
//! - `ICANON`: a line at a time, with backspace and ^D; else byte by byte
//!   (`VMIN` 1);
//! - `ECHO`, and `ICRNL` (a typed carriage return reads as a newline);
//! - `ISIG`: ^C, ^\ and ^Z (the `VINTR`, `VQUIT` and `VSUSP` characters)
//!   send `SIGINT`, `SIGQUIT` and `SIGTSTP` to the foreground process
//!   group and discard the input not yet read, as Linux's `n_tty` does.
//!
//! It answers the `ioctl`s a shell asks: `TCGETS`/`TCSETS*`, the window
//! size, and the foreground process group (`tcsetpgrp`, which job
//! control depends on).
//!
//! The serial line cannot be peeked, so typed bytes are taken into
//! `pending` by whoever looks first: a read, `poll`, or the watcher thread
//! that `./x run`'s shell starts so that ^C reaches a program that is not
//! reading (a foreground `sleep`).
//!
//! Who waits for input (a read, `poll`, the watcher) blocks on [`INPUT`],
//! which the serial receive interrupt wakes (`hal::console::set_input_hook`),
//! and so does a thread that moved typed bytes into `pending`. A waiter
//! looks again after [`LOST_EDGE_MS`] all the same (the interrupt is an
//! edge that may be missed, as `hal::console` allows for), or every
//! [`INPUT_POLL_MS`] where input does not arrive by interrupt.

use alloc::{collections::VecDeque, sync::Arc};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use linux_abi::{
    signal::{SIGINT, SIGQUIT, SIGTSTP},
    termios::{
        Termios, Winsize, ECHO, ICANON, ICRNL, ISIG, NCCS, TCGETS, TCSETS, TCSETSF, TCSETSW,
        TIOCGPGRP, TIOCGSID, TIOCGWINSZ, TIOCSCTTY, TIOCSPGRP, TIOCSWINSZ, VINTR, VQUIT, VSUSP,
    },
};
use vfs::{Device, Errno, Readiness};

/// How often a waiting read, and the watcher, look at the serial line
/// when input does not arrive by interrupt.
const INPUT_POLL_MS: u64 = 5;
/// How long a waiter for input blocks at most when input arrives by
/// interrupt: `hal::console` reads the line at least this often anyway
/// (its `FALLBACK_TICKS`), for a receive interrupt that was missed.
const LOST_EDGE_MS: u64 = 200;

/// Threads waiting for typed input: readers, `poll`s of the terminal,
/// the signal-key watcher.
static INPUT: linux::FileWaitQueue = linux::FileWaitQueue::new();

/// The serial receive interrupt's hook: wakes the waiters for input.
fn input_arrived() {
    INPUT.wake_all_from_interrupt();
}

/// The uptime until which a waiter for input may block.
fn input_wait_deadline() -> u64 {
    let ms = if hal::console::is_input_interrupt_driven() {
        LOST_EDGE_MS
    } else {
        INPUT_POLL_MS
    };
    hal::timer::uptime_ns().saturating_add(ms * 1_000_000)
}

/// The serial terminal.
pub struct Terminal {
    /// `struct termios` as the kernel's `TCGETS` gives it.
    termios: spin::Mutex<Termios>,
    /// `struct winsize`.
    window: spin::Mutex<Winsize>,
    /// The foreground process group (`tcsetpgrp`).
    foreground: AtomicU64,
    /// Bytes taken from the serial line and not read yet.
    pending: spin::Mutex<VecDeque<u8>>,
}

static TERMINAL: spin::Once<Arc<Terminal>> = spin::Once::new();

/// The terminal (made on first use).
pub fn terminal() -> &'static Arc<Terminal> {
    TERMINAL.call_once(|| Arc::new(Terminal::new()))
}

static WATCHING: AtomicBool = AtomicBool::new(false);

/// Starts (once) the thread that takes typed bytes in every few
/// milliseconds, so that a signal key reaches the foreground group even
/// while no program reads the terminal.
pub fn watch_for_signal_keys() {
    if WATCHING.swap(true, Ordering::Relaxed) {
        return;
    }
    let spawned = sched::spawn("terminal keys", || {
        // Registered for good: it looks whenever input arrives.
        INPUT.register(sched::current());
        loop {
            sched::prepare_to_wait();
            terminal().take_input();
            sched::block_prepared("terminal input", Some(input_wait_deadline()));
        }
    });
    if spawned.is_err() {
        log::warn!("terminal: no memory for a thread to watch for ^C and ^Z; they act only when a program reads");
    }
}

impl Terminal {
    fn new() -> Terminal {
        hal::console::set_input_hook(input_arrived);
        // VINTR ^C, VQUIT ^\, VERASE DEL, VKILL ^U, VEOF ^D, VTIME 0,
        // VMIN 1, then VSTART ^Q, VSTOP ^S, VSUSP ^Z.
        let control = [3u8, 0x1c, 0x7f, 0x15, 4, 0, 1, 0, 0x11, 0x13, 0x1a];
        let mut cc = [0u8; NCCS];
        cc[..control.len()].copy_from_slice(&control);
        // Linux's defaults: ICRNL|IXON; OPOST|ONLCR; B38400|CS8|CREAD|HUPCL;
        // ISIG|ICANON|ECHO|ECHOE|ECHOK|ECHOCTL|ECHOKE|IEXTEN.
        let termios = Termios {
            iflag: 0o2400,
            oflag: 0o5,
            cflag: 0o2277,
            lflag: 0o105073,
            line: 0,
            cc,
        };
        let window = Winsize {
            rows: 24,
            columns: 80,
            ..Winsize::default()
        };
        Terminal {
            termios: spin::Mutex::new(termios),
            window: spin::Mutex::new(window),
            foreground: AtomicU64::new(0),
            pending: spin::Mutex::new(VecDeque::new()),
        }
    }

    /// Makes process group `group` the foreground one.
    pub fn set_foreground(&self, group: u64) {
        self.foreground.store(group, Ordering::Relaxed);
    }

    fn control_character(&self, index: usize) -> u8 {
        self.termios.lock().cc[index]
    }

    /// The signal `byte` sends with `ISIG` on, if it is a signal key.
    fn signal_key(&self, byte: u8) -> Option<u8> {
        if self.termios.lock().lflag & ISIG == 0 || byte == 0 {
            return None;
        }
        [(VINTR, SIGINT), (VQUIT, SIGQUIT), (VSUSP, SIGTSTP)]
            .into_iter()
            .find(|&(index, _)| self.control_character(index) == byte)
            .map(|(_, signal)| signal)
    }

    /// Takes what has been typed into `pending`. A signal key is not
    /// kept: it discards what was typed before it, echoes as `^C` (say),
    /// and signals the foreground process group.
    ///
    /// Two threads take input (the signal-key watcher and a reader), so
    /// `pending` stays locked from reading a byte off the line to queueing
    /// it: otherwise one thread could hold a byte it has read while the
    /// other queues the bytes typed after it, and input would arrive out
    /// of order (`spindle` read as `sindlep`).
    fn take_input(&self) {
        loop {
            let mut took = false;
            let signal_key = {
                let mut pending = self.pending.lock();
                let mut signal_key = None;
                while let Some(byte) = hal::console::try_read_byte() {
                    match self.signal_key(byte) {
                        None => {
                            pending.push_back(byte);
                            took = true;
                        }
                        Some(signal) => {
                            pending.clear();
                            signal_key = Some((byte, signal));
                            break;
                        }
                    }
                }
                signal_key
            };
            if took {
                // Readers and pollers woken by the interrupt may have
                // looked before these bytes were in `pending`.
                INPUT.wake_all();
            }
            // The echo and the signal go out with `pending` unlocked:
            // delivering a signal can wake and run a reader of this terminal.
            let Some((byte, signal)) = signal_key else {
                return;
            };
            if self.termios.lock().lflag & ECHO != 0 {
                crate::console_output::console_write(&[b'^', byte + b'@', b'\n']);
            }
            let group = self.foreground.load(Ordering::Relaxed);
            if group != 0 {
                let _ = linux_process::signals::kill(0, -(group as i32), signal);
            }
        }
    }

    /// The next byte typed, waiting for one unless `nonblocking`;
    /// `EINTR` if a signal arrives meanwhile (^C included).
    fn next_byte(&self, nonblocking: bool) -> Result<Option<u8>, Errno> {
        let mut registered = None;
        let result = loop {
            if registered.is_some() {
                // Prepared before the look: input arriving between the
                // look and the block makes the block return at once.
                sched::prepare_to_wait();
            }
            self.take_input();
            if let Some(byte) = self.pending.lock().pop_front() {
                break Ok(Some(byte));
            }
            if nonblocking {
                break Ok(None);
            }
            if linux_process::signals::interrupted() {
                break Err(Errno::EINTR);
            }
            match registered {
                // Registered, then one more look before blocking.
                None => {
                    let me = sched::current();
                    INPUT.register(me);
                    registered = Some(me);
                }
                Some(_) => sched::block_prepared("terminal input", Some(input_wait_deadline())),
            }
        };
        if let Some(me) = registered {
            INPUT.unregister(me);
        }
        result
    }
}

impl Device for Terminal {
    fn read(&self, _offset: u64, buf: &mut [u8], nonblocking: bool) -> Result<usize, Errno> {
        if buf.is_empty() {
            return Ok(0);
        }
        let (input, local) = {
            let termios = self.termios.lock();
            (termios.iflag, termios.lflag)
        };
        let echo = local & ECHO != 0;
        let translate = |byte: u8| {
            if byte == b'\r' && input & ICRNL != 0 {
                b'\n'
            } else {
                byte
            }
        };
        if local & ICANON == 0 {
            // Raw: what has been typed, at least one byte (VMIN 1).
            let mut count = 0;
            while count < buf.len() {
                let wait = count == 0 && !nonblocking;
                let Some(byte) = self.next_byte(!wait)? else {
                    break;
                };
                buf[count] = translate(byte);
                count += 1;
                if echo {
                    crate::console_output::console_write(&buf[count - 1..count]);
                }
            }
            return if count == 0 {
                Err(Errno::EAGAIN)
            } else {
                Ok(count)
            };
        }
        let mut count = 0;
        while count < buf.len() {
            let Some(byte) = self.next_byte(nonblocking && count == 0)? else {
                return Err(Errno::EAGAIN);
            };
            match translate(byte) {
                // ^D at the start of a line: end of file.
                0x04 if count == 0 => return Ok(0),
                0x04 => break,
                0x08 | 0x7f => {
                    if count > 0 {
                        count -= 1;
                        if echo {
                            hal::console::write_str("\x08 \x08");
                        }
                    }
                }
                b'\n' => {
                    buf[count] = b'\n';
                    count += 1;
                    if echo {
                        hal::console::write_str("\n");
                    }
                    break;
                }
                byte => {
                    buf[count] = byte;
                    count += 1;
                    if echo {
                        crate::console_output::console_write(&[byte]);
                    }
                }
            }
        }
        Ok(count)
    }

    fn write(&self, _offset: u64, buf: &[u8], _nonblocking: bool) -> Result<usize, Errno> {
        crate::console_output::console_write(buf);
        Ok(buf.len())
    }

    /// Readable when a byte has been typed (taken from the serial line
    /// into `pending`, since the line cannot be peeked).
    fn readiness(&self) -> Readiness {
        self.take_input();
        Readiness {
            readable: !self.pending.lock().is_empty(),
            writable: true,
            hung_up: false,
        }
    }

    /// None where input does not arrive by interrupt: nothing would wake
    /// a `poll` then, which looks every few milliseconds instead.
    fn wait_queue(&self) -> Option<&dyn vfs::WaitQueue> {
        hal::console::is_input_interrupt_driven().then_some(&INPUT as &dyn vfs::WaitQueue)
    }

    fn ioctl(&self, request: u32, argument: u64) -> Result<i64, Errno> {
        let fault = |_| Errno::EFAULT;
        match request {
            TCGETS => {
                let termios = self.termios.lock().to_bytes();
                hal::user::copy_to_user(argument, &termios).map_err(fault)?;
            }
            TCSETS | TCSETSW | TCSETSF => {
                let mut termios = [0u8; Termios::BYTES];
                hal::user::copy_from_user(&mut termios, argument).map_err(fault)?;
                *self.termios.lock() = Termios::from_bytes(&termios);
            }
            TIOCGWINSZ => {
                let window = self.window.lock().to_bytes();
                hal::user::copy_to_user(argument, &window).map_err(fault)?;
            }
            TIOCSWINSZ => {
                let mut window = [0u8; Winsize::BYTES];
                hal::user::copy_from_user(&mut window, argument).map_err(fault)?;
                *self.window.lock() = Winsize::from_bytes(&window);
            }
            TIOCGPGRP | TIOCGSID => {
                let group = self.foreground.load(Ordering::Relaxed) as u32;
                hal::user::copy_to_user(argument, &group.to_le_bytes()).map_err(fault)?;
            }
            TIOCSPGRP => {
                let mut group = [0u8; 4];
                hal::user::copy_from_user(&mut group, argument).map_err(fault)?;
                let group = i32::from_le_bytes(group);
                if group < 0 {
                    return Err(Errno::EINVAL);
                }
                self.foreground.store(group as u64, Ordering::Relaxed);
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
