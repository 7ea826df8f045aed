//! The line discipline on made-up input, and the terminal on a host
//! that types scripted bursts whenever a reader waits, records what is
//! written and signalled, and has a little user memory for `ioctl`s.

use std::{
    collections::VecDeque,
    string::String,
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Mutex,
    },
    vec,
    vec::Vec,
};

use linux_abi::{
    signal::{SIGINT, SIGQUIT, SIGTSTP},
    termios::{
        Termios, Winsize, ECHO, ICANON, ICRNL, ISIG, TCGETS, TCSETS, TIOCGPGRP, TIOCGWINSZ,
        TIOCSPGRP, TIOCSWINSZ, VINTR,
    },
};

use super::*;

// The discipline and a read's editing, without a terminal.

/// Reads with `modes` from `typed` (taken byte by byte; none left reads
/// as nothing typed, or `EINTR` for a waiting read): the result and the
/// echo.
fn read_from(
    modes: ReadModes,
    typed: &[u8],
    capacity: usize,
    nonblocking: bool,
) -> (Result<Vec<u8>, Errno>, Vec<u8>) {
    let mut typed: VecDeque<u8> = typed.iter().copied().collect();
    let mut echoed = Vec::new();
    let mut buf = vec![0u8; capacity];
    let result = read(
        modes,
        &mut buf,
        nonblocking,
        |nonblocking| match typed.pop_front() {
            Some(byte) => Ok(Some(byte)),
            None if nonblocking => Ok(None),
            None => Err(Errno::EINTR),
        },
        |bytes| echoed.extend_from_slice(bytes),
    );
    (result.map(|count| buf[..count].to_vec()), echoed)
}

const CANONICAL: ReadModes = ReadModes {
    canonical: true,
    echo: true,
    carriage_return_is_newline: true,
};
const RAW: ReadModes = ReadModes {
    canonical: false,
    echo: false,
    carriage_return_is_newline: false,
};

#[test]
fn a_new_terminal_is_in_linux_default_modes() {
    let discipline = LineDiscipline::new();
    let termios = discipline.termios();
    for (flag, name) in [(ICANON, "ICANON"), (ECHO, "ECHO"), (ISIG, "ISIG")] {
        assert_ne!(termios.lflag & flag, 0, "{name}");
    }
    assert_ne!(termios.iflag & ICRNL, 0);
    assert_eq!(termios.cc[VINTR], 3);
    assert_eq!(discipline.read_modes(), CANONICAL);
    let window = discipline.window();
    assert_eq!((window.columns, window.rows), (80, 24));
    assert_eq!(discipline.foreground(), 0);
    assert!(!discipline.has_input());
}

#[test]
fn typed_bytes_are_kept_in_order_until_read() {
    let mut discipline = LineDiscipline::new();
    for &byte in b"ls\r" {
        assert_eq!(discipline.receive(byte), None);
    }
    assert!(discipline.has_input());
    let taken: Vec<u8> = core::iter::from_fn(|| discipline.take_byte()).collect();
    assert_eq!(taken, b"ls\r");
    assert!(!discipline.has_input());
}

#[test]
fn the_signal_keys_give_their_signals_echo_and_discard_what_was_typed() {
    for (key, signal, echo) in [
        (0x03, SIGINT, *b"^C\n"),
        (0x1c, SIGQUIT, *b"^\\\n"),
        (0x1a, SIGTSTP, *b"^Z\n"),
    ] {
        let mut discipline = LineDiscipline::new();
        discipline.receive(b'x');
        assert_eq!(
            discipline.receive(key),
            Some(SignalKey {
                signal,
                echo: Some(echo)
            })
        );
        assert!(!discipline.has_input(), "typed before {key:#x}: discarded");
    }
}

#[test]
fn without_isig_the_signal_keys_are_plain_bytes() {
    let mut discipline = LineDiscipline::new();
    let mut termios = discipline.termios();
    termios.lflag &= !ISIG;
    discipline.set_termios(termios);
    assert_eq!(discipline.receive(0x03), None);
    assert_eq!(discipline.take_byte(), Some(0x03));
}

#[test]
fn without_echo_a_signal_key_still_signals_but_prints_nothing() {
    let mut discipline = LineDiscipline::new();
    let mut termios = discipline.termios();
    termios.lflag &= !ECHO;
    discipline.set_termios(termios);
    assert_eq!(
        discipline.receive(0x03),
        Some(SignalKey {
            signal: SIGINT,
            echo: None
        })
    );
}

#[test]
fn a_signal_key_can_be_moved_or_disabled() {
    let mut discipline = LineDiscipline::new();
    let mut termios = discipline.termios();
    termios.cc[VINTR] = 0x7f;
    discipline.set_termios(termios);
    assert_eq!(
        discipline.receive(0x7f),
        Some(SignalKey {
            signal: SIGINT,
            echo: Some(*b"^?\n")
        })
    );
    assert_eq!(discipline.receive(0x03), None, "^C is no longer VINTR");
    termios.cc[VINTR] = 0;
    discipline.set_termios(termios);
    assert_eq!(discipline.receive(0), None, "0 disables the key");
}

#[test]
fn a_canonical_read_is_a_line_with_erase_applied_and_echoed() {
    let (line, echoed) = read_from(CANONICAL, b"lsx\x7f -l\r", 64, false);
    assert_eq!(line.unwrap(), b"ls -l\n");
    assert_eq!(echoed, b"lsx\x08 \x08 -l\n");
    // Backspace erases as DEL does.
    let (line, _) = read_from(CANONICAL, b"ab\x08\n", 64, false);
    assert_eq!(line.unwrap(), b"a\n");
}

#[test]
fn erase_at_the_start_of_a_line_does_nothing() {
    let (line, echoed) = read_from(CANONICAL, b"\x7f\x7fa\n", 64, false);
    assert_eq!(line.unwrap(), b"a\n");
    assert_eq!(echoed, b"a\n");
}

#[test]
fn a_canonical_read_stops_at_the_newline_and_leaves_the_next_line() {
    let mut typed: VecDeque<u8> = b"one\ntwo\n".iter().copied().collect();
    let mut buf = [0u8; 64];
    let count = read(
        CANONICAL,
        &mut buf,
        false,
        |_| Ok(typed.pop_front()),
        |_| {},
    )
    .unwrap();
    assert_eq!(&buf[..count], b"one\n");
    assert_eq!(typed, b"two\n");
}

#[test]
fn control_d_is_end_of_file_at_the_start_of_a_line_else_ends_it() {
    let (result, _) = read_from(CANONICAL, b"\x04", 64, false);
    assert_eq!(result.unwrap(), b"", "end of file");
    let (result, echoed) = read_from(CANONICAL, b"ab\x04", 64, false);
    assert_eq!(result.unwrap(), b"ab", "no newline added");
    assert_eq!(echoed, b"ab");
}

#[test]
fn a_line_longer_than_the_buffer_is_read_in_pieces() {
    let (result, _) = read_from(CANONICAL, b"abcdef\n", 4, false);
    assert_eq!(result.unwrap(), b"abcd");
}

#[test]
fn without_echo_nothing_is_printed() {
    let modes = ReadModes {
        echo: false,
        ..CANONICAL
    };
    let (line, echoed) = read_from(modes, b"secret\x7f\r", 64, false);
    assert_eq!(line.unwrap(), b"secre\n");
    assert!(echoed.is_empty());
}

#[test]
fn without_icrnl_a_carriage_return_is_an_ordinary_byte() {
    let modes = ReadModes {
        carriage_return_is_newline: false,
        ..CANONICAL
    };
    let (line, _) = read_from(modes, b"a\rb\n", 64, false);
    assert_eq!(line.unwrap(), b"a\rb\n");
}

#[test]
fn a_raw_read_returns_what_was_typed_without_editing_or_waiting_for_more() {
    // Erase, ^D and the carriage return are data; the read takes what
    // is there and does not wait for a newline (the helper fails a wait
    // once the input is used up, so a read that waited would fail).
    let (result, echoed) = read_from(RAW, b"a\x7f\x04\r", 64, false);
    assert_eq!(result.unwrap(), b"a\x7f\x04\r");
    assert!(echoed.is_empty());
    let (result, _) = read_from(RAW, b"abc", 2, false);
    assert_eq!(result.unwrap(), b"ab");
}

#[test]
fn a_raw_read_with_echo_echoes_each_byte_as_read() {
    let modes = ReadModes { echo: true, ..RAW };
    let (result, echoed) = read_from(modes, b"q", 8, false);
    assert_eq!(result.unwrap(), b"q");
    assert_eq!(echoed, b"q");
}

#[test]
fn a_nonblocking_read_with_nothing_typed_is_eagain() {
    assert_eq!(read_from(RAW, b"", 8, true).0, Err(Errno::EAGAIN));
    assert_eq!(read_from(CANONICAL, b"", 8, true).0, Err(Errno::EAGAIN));
}

#[test]
fn a_wait_interrupted_by_a_signal_is_eintr() {
    assert_eq!(read_from(CANONICAL, b"ab", 8, false).0, Err(Errno::EINTR));
    assert_eq!(read_from(RAW, b"", 8, false).0, Err(Errno::EINTR));
}

// The terminal on a scripted host.

/// Where the fake user memory starts.
const USER: u64 = 0x1000;

#[derive(Default)]
struct FakeHost {
    /// Bytes on the line, not taken yet.
    line: Mutex<VecDeque<u8>>,
    /// Typed, one burst each time a reader waits; when none is left a
    /// signal interrupts the wait.
    bursts: Mutex<VecDeque<Vec<u8>>>,
    written: Mutex<Vec<u8>>,
    signalled: Mutex<Vec<(u64, u8)>>,
    interrupted: AtomicBool,
    waits: AtomicUsize,
    wakes: AtomicUsize,
    memory: Mutex<Vec<u8>>,
}

impl Host for FakeHost {
    fn try_read_byte(&self) -> Option<u8> {
        self.line.lock().unwrap().pop_front()
    }

    fn write(&self, bytes: &[u8]) {
        self.written.lock().unwrap().extend_from_slice(bytes);
    }

    fn signal_group(&self, group: u64, signal: u8) {
        self.signalled.lock().unwrap().push((group, signal));
        // The reader is in the foreground group.
        self.interrupted.store(true, Ordering::SeqCst);
    }

    fn interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }

    fn wait_for_input(&self, look: &mut dyn FnMut() -> bool) {
        self.waits.fetch_add(1, Ordering::SeqCst);
        while !look() {
            let burst = self.bursts.lock().unwrap().pop_front();
            match burst {
                Some(burst) => self.line.lock().unwrap().extend(burst),
                None => {
                    assert!(!self.interrupted(), "the reader would wait for ever");
                    self.interrupted.store(true, Ordering::SeqCst);
                }
            }
        }
    }

    fn input_taken(&self) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }

    fn wait_queue(&self) -> Option<&dyn vfs::WaitQueue> {
        None
    }

    fn copy_to_user(&self, address: u64, bytes: &[u8]) -> Result<(), Errno> {
        let mut memory = self.memory.lock().unwrap();
        let at = address.checked_sub(USER).ok_or(Errno::EFAULT)? as usize;
        let to = memory.get_mut(at..at + bytes.len()).ok_or(Errno::EFAULT)?;
        to.copy_from_slice(bytes);
        Ok(())
    }

    fn copy_from_user(&self, bytes: &mut [u8], address: u64) -> Result<(), Errno> {
        let memory = self.memory.lock().unwrap();
        let at = address.checked_sub(USER).ok_or(Errno::EFAULT)? as usize;
        let from = memory.get(at..at + bytes.len()).ok_or(Errno::EFAULT)?;
        bytes.copy_from_slice(from);
        Ok(())
    }
}

fn terminal_typing(line: &[u8], bursts: &[&[u8]]) -> Terminal<FakeHost> {
    let host = FakeHost::default();
    host.line.lock().unwrap().extend(line);
    host.bursts
        .lock()
        .unwrap()
        .extend(bursts.iter().map(|burst| burst.to_vec()));
    *host.memory.lock().unwrap() = vec![0; 256];
    Terminal::new(host)
}

fn read_line(terminal: &Terminal<FakeHost>, nonblocking: bool) -> Result<String, Errno> {
    let mut buf = [0u8; 64];
    let count = terminal.read(0, &mut buf, nonblocking)?;
    Ok(String::from_utf8_lossy(&buf[..count]).into_owned())
}

fn written(terminal: &Terminal<FakeHost>) -> String {
    String::from_utf8_lossy(&terminal.host.written.lock().unwrap()).into_owned()
}

#[test]
fn a_read_waits_for_the_rest_of_the_line_and_echoes_it() {
    let terminal = terminal_typing(b"ec", &[b"ho", b" hi\r"]);
    assert_eq!(read_line(&terminal, false).unwrap(), "echo hi\n");
    assert_eq!(written(&terminal), "echo hi\n");
    assert_eq!(terminal.host.waits.load(Ordering::SeqCst), 2);
    assert!(
        terminal.host.wakes.load(Ordering::SeqCst) >= 3,
        "each burst taken wakes the waiters"
    );
}

#[test]
fn a_line_already_typed_is_read_without_waiting() {
    let terminal = terminal_typing(b"ls\r", &[]);
    assert_eq!(read_line(&terminal, false).unwrap(), "ls\n");
    assert_eq!(terminal.host.waits.load(Ordering::SeqCst), 0);
}

#[test]
fn control_c_signals_the_foreground_group_and_interrupts_the_waiting_read() {
    let terminal = terminal_typing(b"sle", &[b"ep\x03"]);
    terminal.set_foreground(42);
    assert_eq!(read_line(&terminal, false), Err(Errno::EINTR));
    assert_eq!(*terminal.host.signalled.lock().unwrap(), vec![(42, SIGINT)]);
    assert_eq!(
        written(&terminal),
        "sle^C\n",
        "echoed as read, then the key"
    );
    assert!(!terminal.discipline.lock().has_input(), "\"ep\" discarded");
}

#[test]
fn a_signal_key_without_a_foreground_group_signals_nobody() {
    let terminal = terminal_typing(b"\x1a", &[]);
    terminal.take_input();
    assert!(terminal.host.signalled.lock().unwrap().is_empty());
    assert_eq!(written(&terminal), "^Z\n");
}

#[test]
fn input_after_a_signal_key_is_kept() {
    let terminal = terminal_typing(b"junk\x1cok\r", &[]);
    terminal.set_foreground(7);
    terminal.host.interrupted.store(false, Ordering::SeqCst);
    terminal.take_input();
    assert_eq!(*terminal.host.signalled.lock().unwrap(), vec![(7, SIGQUIT)]);
    terminal.host.interrupted.store(false, Ordering::SeqCst);
    assert_eq!(read_line(&terminal, false).unwrap(), "ok\n");
}

#[test]
fn the_terminal_is_readable_once_a_byte_is_typed_but_not_for_a_signal_key() {
    let terminal = terminal_typing(b"\x03", &[]);
    assert!(!terminal.readiness().readable);
    terminal.host.line.lock().unwrap().push_back(b'a');
    assert!(terminal.readiness().readable);
    assert!(terminal.readiness().writable);
}

#[test]
fn a_nonblocking_read_of_a_quiet_terminal_is_eagain_without_waiting() {
    let terminal = terminal_typing(b"", &[b"late\n"]);
    assert_eq!(read_line(&terminal, true), Err(Errno::EAGAIN));
    assert_eq!(terminal.host.waits.load(Ordering::SeqCst), 0);
}

#[test]
fn end_of_file_reads_as_zero_bytes() {
    let terminal = terminal_typing(b"\x04", &[]);
    assert_eq!(read_line(&terminal, false).unwrap(), "");
}

#[test]
fn output_goes_to_the_line_as_it_is() {
    let terminal = terminal_typing(b"", &[]);
    assert_eq!(terminal.write(0, b"\x1b[1mhi\n", false), Ok(7));
    assert_eq!(written(&terminal), "\x1b[1mhi\n");
    assert!(!terminal.is_seekable());
}

#[test]
fn tcsets_to_raw_mode_makes_reads_take_each_byte_unechoed() {
    let terminal = terminal_typing(b"", &[]);
    terminal.ioctl(TCGETS, USER).unwrap();
    let mut bytes = [0u8; Termios::BYTES];
    terminal.host.copy_from_user(&mut bytes, USER).unwrap();
    let mut termios = Termios::from_bytes(&bytes);
    assert_eq!(termios, LineDiscipline::new().termios());
    termios.lflag &= !(ICANON | ECHO);
    terminal
        .host
        .copy_to_user(USER, &termios.to_bytes())
        .unwrap();
    terminal.ioctl(TCSETS, USER).unwrap();
    terminal.host.line.lock().unwrap().extend(b"k");
    assert_eq!(read_line(&terminal, false).unwrap(), "k");
    assert_eq!(written(&terminal), "");
}

#[test]
fn the_foreground_group_is_set_and_read_by_ioctl() {
    let terminal = terminal_typing(b"", &[]);
    terminal
        .host
        .copy_to_user(USER, &9i32.to_le_bytes())
        .unwrap();
    terminal.ioctl(TIOCSPGRP, USER).unwrap();
    terminal.ioctl(TIOCGPGRP, USER + 8).unwrap();
    let mut group = [0u8; 4];
    terminal.host.copy_from_user(&mut group, USER + 8).unwrap();
    assert_eq!(u32::from_le_bytes(group), 9);
    terminal
        .host
        .copy_to_user(USER, &(-1i32).to_le_bytes())
        .unwrap();
    assert_eq!(terminal.ioctl(TIOCSPGRP, USER), Err(Errno::EINVAL));
    assert_eq!(terminal.discipline.lock().foreground(), 9);
}

#[test]
fn the_window_size_is_set_and_read_by_ioctl() {
    let terminal = terminal_typing(b"", &[]);
    let window = Winsize {
        rows: 50,
        columns: 132,
        ..Winsize::default()
    };
    terminal
        .host
        .copy_to_user(USER, &window.to_bytes())
        .unwrap();
    terminal.ioctl(TIOCSWINSZ, USER).unwrap();
    terminal.ioctl(TIOCGWINSZ, USER + 16).unwrap();
    let mut bytes = [0u8; Winsize::BYTES];
    terminal.host.copy_from_user(&mut bytes, USER + 16).unwrap();
    assert_eq!(Winsize::from_bytes(&bytes), window);
}

#[test]
fn ioctls_fail_as_linux_fails_them() {
    let terminal = terminal_typing(b"", &[]);
    assert_eq!(terminal.ioctl(TCGETS, 0), Err(Errno::EFAULT));
    assert_eq!(terminal.ioctl(0x5401_ffff, USER), Err(Errno::ENOTTY));
}
