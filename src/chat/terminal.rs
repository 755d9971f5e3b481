//! The terminal's settings, kept to be put back when something other than the editor ends
//! hx while the editor has the terminal in raw mode.

/// The terminal's settings at start, put back when a signal ends hx while the editor has the
/// terminal in raw mode (its own restore never runs then).
pub struct SavedTerminal(Option<libc::termios>);

impl SavedTerminal {
    pub fn save() -> SavedTerminal {
        // SAFETY: tcgetattr fills the struct it is given; a zeroed termios is a valid value.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            SavedTerminal((libc::tcgetattr(libc::STDIN_FILENO, &mut t) == 0).then_some(t))
        }
    }

    pub fn restore(&self) {
        if let Some(t) = &self.0 {
            // SAFETY: puts back settings read from the same descriptor.
            unsafe {
                libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, t);
            }
            // Bracketed paste off again, as the editor would on leaving.
            let _ = std::io::Write::write_all(&mut std::io::stderr(), b"\x1b[?2004l");
        }
    }
}
