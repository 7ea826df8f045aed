//! The line discipline as plain data: what was typed and not read yet,
//! the termios modes, the window size and the foreground process group;
//! typed bytes in, signal keys out ([`LineDiscipline::receive`]); and a
//! read's editing of a line, with the bytes it takes and echoes passed
//! in and out by the caller ([`read`]). No locks and no device: the
//! [`crate::Terminal`] holds this under its lock and talks to the line.

use alloc::collections::VecDeque;

use linux_abi::{
    signal::{SIGINT, SIGQUIT, SIGTSTP},
    termios::{Termios, Winsize, ECHO, ICANON, ICRNL, ISIG, NCCS, VINTR, VQUIT, VSUSP},
    Errno,
};

/// `^D`: end of file at the start of a line, else the end of the line
/// without a newline (`VEOF`'s default, which is not configurable here).
const END_OF_FILE: u8 = 0x04;
/// Backspace and DEL both erase the last byte of the line (`VERASE`'s
/// default is DEL; terminals send either).
const ERASE: [u8; 2] = [0x08, 0x7f];
/// What an erased byte echoes as: back, blank it, back.
const ERASE_ECHO: &[u8] = b"\x08 \x08";

/// A signal key that was typed: the signal for the foreground process
/// group, and what it echoes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignalKey {
    /// `SIGINT`, `SIGQUIT` or `SIGTSTP`.
    pub signal: u8,
    /// `^C` (say) and a newline with `ECHO` on; nothing with it off.
    pub echo: Option<[u8; 3]>,
}

/// The terminal's state, as the line discipline sees it.
#[derive(Debug)]
pub struct LineDiscipline {
    termios: Termios,
    window: Winsize,
    /// The foreground process group (`tcsetpgrp`); 0: none yet.
    foreground: u64,
    /// Bytes typed and not read yet.
    pending: VecDeque<u8>,
}

impl Default for LineDiscipline {
    fn default() -> Self {
        Self::new()
    }
}

impl LineDiscipline {
    /// A terminal in Linux's default modes (canonical, echo, signal keys,
    /// carriage return read as newline), 80 by 24, nothing typed.
    pub fn new() -> LineDiscipline {
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
        LineDiscipline {
            termios,
            window,
            foreground: 0,
            pending: VecDeque::new(),
        }
    }

    /// The modes (`TCGETS`).
    pub fn termios(&self) -> Termios {
        self.termios
    }

    /// Sets the modes (`TCSETS`): they apply to the next byte typed and
    /// the next read.
    pub fn set_termios(&mut self, termios: Termios) {
        self.termios = termios;
    }

    /// The window size (`TIOCGWINSZ`).
    pub fn window(&self) -> Winsize {
        self.window
    }

    /// Sets the window size (`TIOCSWINSZ`).
    pub fn set_window(&mut self, window: Winsize) {
        self.window = window;
    }

    /// The foreground process group; 0 while there is none.
    pub fn foreground(&self) -> u64 {
        self.foreground
    }

    /// Makes process group `group` the foreground one: the signal keys
    /// signal it.
    pub fn set_foreground(&mut self, group: u64) {
        self.foreground = group;
    }

    /// How a read started now treats the bytes it takes.
    pub fn read_modes(&self) -> ReadModes {
        ReadModes {
            canonical: self.termios.lflag & ICANON != 0,
            echo: self.termios.lflag & ECHO != 0,
            carriage_return_is_newline: self.termios.iflag & ICRNL != 0,
        }
    }

    /// The signal `byte` sends with `ISIG` on, if it is a signal key. A
    /// control character set to 0 is disabled (`_POSIX_VDISABLE`).
    fn signal_of(&self, byte: u8) -> Option<u8> {
        if self.termios.lflag & ISIG == 0 || byte == 0 {
            return None;
        }
        [(VINTR, SIGINT), (VQUIT, SIGQUIT), (VSUSP, SIGTSTP)]
            .into_iter()
            .find(|&(index, _)| self.termios.cc[index] == byte)
            .map(|(_, signal)| signal)
    }

    /// Takes a typed byte. A signal key is not kept: it discards what
    /// was typed and not read, as Linux's `n_tty` flushes its input, and
    /// is returned for the caller to echo and send to the foreground
    /// group. Any other byte waits for a read.
    pub fn receive(&mut self, byte: u8) -> Option<SignalKey> {
        let Some(signal) = self.signal_of(byte) else {
            self.pending.push_back(byte);
            return None;
        };
        self.pending.clear();
        // ECHOCTL's spelling: ^C for 0x03, ^? for DEL.
        let echo = (self.termios.lflag & ECHO != 0).then_some([b'^', byte ^ 0x40, b'\n']);
        Some(SignalKey { signal, echo })
    }

    /// The oldest byte typed and not read, taken.
    pub fn take_byte(&mut self) -> Option<u8> {
        self.pending.pop_front()
    }

    /// Whether a byte was typed and not read (the terminal is readable).
    pub fn has_input(&self) -> bool {
        !self.pending.is_empty()
    }
}

/// The termios modes a read follows, taken when it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadModes {
    /// `ICANON`: a line at a time, with erase and `^D`; else whatever was
    /// typed, at least one byte (`VMIN` 1, `VTIME` 0).
    pub canonical: bool,
    /// `ECHO`: the bytes read are echoed.
    pub echo: bool,
    /// `ICRNL`: a carriage return reads as a newline (what Enter sends
    /// on a serial line is a carriage return).
    pub carriage_return_is_newline: bool,
}

/// A read of up to `buf.len()` bytes (`buf` not empty). `next_byte`
/// gives the next byte typed, waiting for one unless its argument
/// (`nonblocking`) is true, and fails (`EINTR`) when a signal interrupts
/// the wait; `echo` prints what the read echoes.
///
/// Canonical: the bytes up to and including a newline, erase taking back
/// the last byte; `^D` ends the line without a newline, and at its start
/// reads as end of file (0). Else: what has been typed, at least one
/// byte. `EAGAIN` when `nonblocking` and nothing was typed. The bytes
/// are echoed as the read takes them.
pub fn read(
    modes: ReadModes,
    buf: &mut [u8],
    nonblocking: bool,
    mut next_byte: impl FnMut(bool) -> Result<Option<u8>, Errno>,
    mut echo: impl FnMut(&[u8]),
) -> Result<usize, Errno> {
    let translate = |byte: u8| {
        if byte == b'\r' && modes.carriage_return_is_newline {
            b'\n'
        } else {
            byte
        }
    };
    let mut count = 0;
    if !modes.canonical {
        while count < buf.len() {
            let wait = count == 0 && !nonblocking;
            let Some(byte) = next_byte(!wait)? else {
                break;
            };
            buf[count] = translate(byte);
            count += 1;
            if modes.echo {
                echo(&buf[count - 1..count]);
            }
        }
        return if count == 0 {
            Err(Errno::EAGAIN)
        } else {
            Ok(count)
        };
    }
    while count < buf.len() {
        // Nonblocking applies to the start of a line: once a line is
        // begun, the read waits for its end.
        let Some(byte) = next_byte(nonblocking && count == 0)? else {
            return Err(Errno::EAGAIN);
        };
        match translate(byte) {
            END_OF_FILE => break,
            byte if ERASE.contains(&byte) => {
                if count > 0 {
                    count -= 1;
                    if modes.echo {
                        echo(ERASE_ECHO);
                    }
                }
            }
            byte => {
                buf[count] = byte;
                count += 1;
                if modes.echo {
                    echo(&[byte]);
                }
                if byte == b'\n' {
                    break;
                }
            }
        }
    }
    Ok(count)
}
