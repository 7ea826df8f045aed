use crate::termios::{Termios, Winsize, ECHO, ICANON, NCCS, TCGETS, TIOCGWINSZ, VINTR, VSUSP};

#[test]
fn termios_is_the_kernel_layout() {
    let mut cc = [0; NCCS];
    cc[VINTR] = 3;
    cc[VSUSP] = 0x1a;
    let termios = Termios {
        iflag: 0o2400,
        oflag: 0o5,
        cflag: 0o2277,
        lflag: ICANON | ECHO,
        line: 0,
        cc,
    };
    let bytes = termios.to_bytes();
    assert_eq!(bytes.len(), 36);
    assert_eq!(bytes[12..16], (ICANON | ECHO).to_le_bytes(), "c_lflag");
    assert_eq!(bytes[17], 3, "c_cc[VINTR]");
    assert_eq!(bytes[17 + 10], 0x1a, "c_cc[VSUSP]");
    assert_eq!(Termios::from_bytes(&bytes), termios);
    assert_eq!((TCGETS, TIOCGWINSZ), (0x5401, 0x5413));
}

#[test]
fn winsize_round_trips() {
    let window = Winsize {
        rows: 24,
        columns: 80,
        ..Winsize::default()
    };
    let bytes = window.to_bytes();
    assert_eq!(bytes, [24, 0, 80, 0, 0, 0, 0, 0]);
    assert_eq!(Winsize::from_bytes(&bytes), window);
}
