//! Text helpers shared by every layer: one-line forms of outside text for messages, and the
//! escaping that keeps outside text from driving a terminal. A leaf module: it imports nothing
//! of hx, so the lowest layers (the model client, the session store) can use it.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Outside text made safe to show on a terminal: every character a terminal would act on
/// instead of print is replaced by a visible form, and everything else is left as it is.
///
/// - C0 controls but newline and tab, and DEL, in caret notation as `cat -v` and `less` show
///   them: ESC is `^[`, BEL `^G`, CR `^M`, DEL `^?`. A CR right before a newline stays, since it
///   moves nothing that is not moved anyway (CRLF text).
/// - C1 controls (U+0080–U+009F, among them the one-character CSI U+009B) and the
///   bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069), which
///   can make a line read in another order than it runs, as `\u{9b}`, `\u{202e}`.
///
/// Works on any piece of a stream on its own: an escape sequence split across two pieces is
/// escaped all the same, since each control character is replaced where it stands.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

/// Like [`escape_controls`], but newlines and tabs are shown too (`^J`, `^I`), so the text
/// stays on one line: for listings where one line must be one item (`hx trust`).
pub fn escape_line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

fn escape(text: &str, keep_layout: bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| {
        (c.is_control() && !(keep_layout && (c == '\n' || c == '\t')))
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if keep_layout && chars.peek() == Some(&'\n') => out.push(c),
            c if !unsafe_char(c) => out.push(c),
            '\u{7f}' => out.push_str("^?"),
            c if (c as u32) < 0x20 => {
                out.push('^');
                out.push(char::from(b'@' + c as u8));
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

/// Every run of whitespace (newlines included) as one space, trimmed: error messages and
/// descriptions shown on one line.
pub fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Cuts text to one line of at most `max` characters, marking the cut with `…`.
pub fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| {
            if c == '\n' || c == '\r' || c == '\t' {
                ' '
            } else {
                c
            }
        })
        .collect();
    if flat.chars().count() > max {
        let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    } else {
        flat
    }
}

/// `text` when it has at most `max` characters; otherwise its first `max - 1` characters
/// (trailing blanks dropped) and `…`, so the result never exceeds `max`.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let head: String = text.chars().take(max - 1).collect();
    format!("{}…", head.trim_end())
}

/// `1 turn`, `3 turns`: a count and its noun (one that takes an s), for the lines people read.
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `bytes` in lowercase hexadecimal, two digits each (hashes, object names).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `812344` as `812,344`, for the lines people read.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A line for the user beside a run's work: something hx skipped, cut or could not do while it
/// goes on. The one place the prefix of such a line is decided: a warning is shown as
/// `hx: warning: TEXT`; a notice (a project file waiting for `hx trust`, a session whose open
/// calls were answered, a hook that failed) as `hx: TEXT`; a detail of the line before it (a
/// failed server's last stderr lines) as `  TEXT`. Every view shows it as [`fmt::Display`]
/// gives it.
///
/// [`fmt::Display`]: std::fmt::Display
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    text: String,
    level: Level,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Warning,
    /// Shown as a warning, but about something that works, only otherwise than asked.
    Advisory,
    Notice,
    Detail,
}

impl Warning {
    /// `hx: warning: TEXT`.
    pub fn new(text: impl Into<String>) -> Warning {
        Warning::with(Level::Warning, text)
    }

    /// `hx: warning: TEXT` about something that works, only otherwise than its author asked
    /// (an agent file's Claude model, a tool hx lacks): `--json` gives it as a `warning`
    /// item, never as an `error` one.
    pub fn advisory(text: impl Into<String>) -> Warning {
        Warning::with(Level::Advisory, text)
    }

    /// Whether it is an [`Warning::advisory`] one.
    pub fn is_advisory(&self) -> bool {
        self.level == Level::Advisory
    }

    /// `hx: TEXT`.
    pub fn notice(text: impl Into<String>) -> Warning {
        Warning::with(Level::Notice, text)
    }

    /// `  TEXT`, under the line it belongs to.
    pub fn detail(text: impl Into<String>) -> Warning {
        Warning::with(Level::Detail, text)
    }

    fn with(level: Level, text: impl Into<String>) -> Warning {
        Warning {
            text: text.into(),
            level,
        }
    }

    /// The words, without the prefix.
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let prefix = match self.level {
            Level::Warning | Level::Advisory => "hx: warning: ",
            Level::Notice => "hx: ",
            Level::Detail => "  ",
        };
        write!(f, "{prefix}{}", self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warning_decides_its_own_prefix() {
        assert_eq!(Warning::new("a").to_string(), "hx: warning: a");
        assert_eq!(Warning::notice("f: skipped").to_string(), "hx: f: skipped");
        assert_eq!(Warning::detail("s stderr: x").to_string(), "  s stderr: x");
        assert_eq!(Warning::new("a").text(), "a");
    }

    #[test]
    fn cut_counts_characters_not_bytes() {
        assert_eq!(cut("ééééé", 5), "ééééé");
        assert_eq!(cut("éééééé", 5), "éééé…");
        assert_eq!(cut("ab  cd", 4), "ab…");
        assert_eq!(cut("abc", 0), "");
    }

    #[test]
    fn a_count_of_one_is_singular() {
        assert_eq!(count(1, "turn"), "1 turn");
        assert_eq!(count(0, "error"), "0 errors");
        assert_eq!(count(12, "turn"), "12 turns");
    }

    #[test]
    fn collapse_whitespace_joins_runs() {
        assert_eq!(collapse_whitespace("  a\n\tb   c \r\n"), "a b c");
    }

    #[test]
    fn escape_controls_shows_what_a_terminal_would_act_on() {
        assert!(matches!(
            escape_controls("plain\ttext\né 漢 ✓"),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            escape_controls("\x1b]0;pwned\x07 \x1b[2J \0 \x7f a\rb"),
            "^[]0;pwned^G ^[[2J ^@ ^? a^Mb"
        );
        assert_eq!(escape_controls("crlf\r\nend\r"), "crlf\r\nend^M");
        assert_eq!(
            escape_controls("\u{9b}31m \u{85} \u{202e}txt.exe \u{2066}x\u{2069}"),
            "\\u{9b}31m \\u{85} \\u{202e}txt.exe \\u{2066}x\\u{2069}"
        );
        // Marks that only shape neighbouring text are kept.
        assert_eq!(escape_controls("\u{200e}\u{200d}"), "\u{200e}\u{200d}");
    }

    #[test]
    fn one_line_flattens_and_cuts() {
        assert_eq!(one_line("a\nb", 10), "a b");
        assert_eq!(one_line("abcdef", 4), "abc…");
        assert_eq!(one_line("ééééé", 5), "ééééé");
    }
}
