//! Terminals: the kernel's `struct termios` (`TCGETS`, `TCSETS`), `struct
//! winsize`, the mode bits the line discipline honours and the terminal
//! `ioctl` requests (`asm-generic/termbits.h`, `asm-generic/ioctls.h`).

use crate::bytes::{get, get_u32, put};

/// Control characters in `c_cc` (`NCCS`).
pub const NCCS: usize = 19;

/// `c_cc` index: the interrupt character (`^C`).
pub const VINTR: usize = 0;
/// `c_cc` index: the quit character (`^\`).
pub const VQUIT: usize = 1;
/// `c_cc` index: the suspend character (`^Z`).
pub const VSUSP: usize = 10;

/// `c_iflag`: a carriage return is read as a newline.
pub const ICRNL: u32 = 0o400;
/// `c_lflag`: the signal keys send their signals.
pub const ISIG: u32 = 0o1;
/// `c_lflag`: canonical (line by line) input.
pub const ICANON: u32 = 0o2;
/// `c_lflag`: input is echoed.
pub const ECHO: u32 = 0o10;

/// `ioctl`: get the `termios`.
pub const TCGETS: u32 = 0x5401;
/// `ioctl`: set the `termios` now.
pub const TCSETS: u32 = 0x5402;
/// `ioctl`: set the `termios` once output is drained.
pub const TCSETSW: u32 = 0x5403;
/// `ioctl`: set the `termios` once output is drained, discarding input.
pub const TCSETSF: u32 = 0x5404;
/// `ioctl`: make the terminal the caller's controlling terminal.
pub const TIOCSCTTY: u32 = 0x540e;
/// `ioctl`: get the foreground process group.
pub const TIOCGPGRP: u32 = 0x540f;
/// `ioctl`: set the foreground process group.
pub const TIOCSPGRP: u32 = 0x5410;
/// `ioctl`: get the window size.
pub const TIOCGWINSZ: u32 = 0x5413;
/// `ioctl`: set the window size.
pub const TIOCSWINSZ: u32 = 0x5414;
/// `ioctl`: get the session of the terminal.
pub const TIOCGSID: u32 = 0x5429;

/// The kernel's `struct termios` (not glibc's, which adds speeds): 36
/// bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Termios {
    /// `c_iflag`: input modes.
    pub iflag: u32,
    /// `c_oflag`: output modes.
    pub oflag: u32,
    /// `c_cflag`: control modes.
    pub cflag: u32,
    /// `c_lflag`: local modes.
    pub lflag: u32,
    /// `c_line`: the line discipline.
    pub line: u8,
    /// `c_cc`: the control characters, indexed by `V*`.
    pub cc: [u8; NCCS],
}

impl Termios {
    /// Bytes of the kernel's `struct termios`.
    pub const BYTES: usize = 36;

    /// The record as user space reads it: iflag@0, oflag@4, cflag@8,
    /// lflag@12, line@16, cc@17.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        put(&mut bytes, 0, self.iflag.to_le_bytes());
        put(&mut bytes, 4, self.oflag.to_le_bytes());
        put(&mut bytes, 8, self.cflag.to_le_bytes());
        put(&mut bytes, 12, self.lflag.to_le_bytes());
        bytes[16] = self.line;
        put(&mut bytes, 17, self.cc);
        bytes
    }

    /// The record user space wrote.
    pub fn from_bytes(bytes: &[u8; Self::BYTES]) -> Termios {
        Termios {
            iflag: get_u32(bytes, 0),
            oflag: get_u32(bytes, 4),
            cflag: get_u32(bytes, 8),
            lflag: get_u32(bytes, 12),
            line: bytes[16],
            cc: get(bytes, 17),
        }
    }
}

/// `struct winsize` (`TIOCGWINSZ`): 8 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Winsize {
    /// `ws_row`: rows.
    pub rows: u16,
    /// `ws_col`: columns.
    pub columns: u16,
    /// `ws_xpixel`: width in pixels (unused).
    pub x_pixels: u16,
    /// `ws_ypixel`: height in pixels (unused).
    pub y_pixels: u16,
}

impl Winsize {
    /// Bytes of a `struct winsize`.
    pub const BYTES: usize = 8;

    /// The record as user space reads it: rows@0, columns@2, then the
    /// pixel sizes.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut bytes = [0; Self::BYTES];
        put(&mut bytes, 0, self.rows.to_le_bytes());
        put(&mut bytes, 2, self.columns.to_le_bytes());
        put(&mut bytes, 4, self.x_pixels.to_le_bytes());
        put(&mut bytes, 6, self.y_pixels.to_le_bytes());
        bytes
    }

    /// The record user space wrote.
    pub fn from_bytes(bytes: &[u8; Self::BYTES]) -> Winsize {
        Winsize {
            rows: u16::from_le_bytes(get(bytes, 0)),
            columns: u16::from_le_bytes(get(bytes, 2)),
            x_pixels: u16::from_le_bytes(get(bytes, 4)),
            y_pixels: u16::from_le_bytes(get(bytes, 6)),
        }
    }
}
