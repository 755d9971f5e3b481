//! Bounded tool output: a head+tail text accumulator and an incremental UTF-8 decoder, so tools
//! can stream arbitrarily large output through a fixed amount of memory; and the short quote
//! of a model's argument that error messages use.

use std::borrow::Cow;

/// Characters of a model-supplied argument (a path, a pattern, a name) quoted in an error.
pub const QUOTE_CHARS: usize = 200;

/// `arg` as an error message quotes it: whole when it has at most [`QUOTE_CHARS`] characters,
/// else its start and end around a marker saying how much was left out. An error must tell
/// the model which argument was wrong, not hand a 5 MB argument back to it.
pub fn quote(arg: &str) -> Cow<'_, str> {
    let total = arg.chars().count();
    if total <= QUOTE_CHARS {
        return Cow::Borrowed(arg);
    }
    let keep = QUOTE_CHARS / 2;
    let head = &arg[..byte_index_after_chars(arg, keep)];
    let tail = &arg[byte_index_after_chars(arg, total - keep)..];
    Cow::Owned(format!(
        "{head}... [{} characters omitted] ...{tail}",
        total - 2 * keep
    ))
}

/// Keeps at most `limit` characters (Unicode scalar values) of everything pushed into it: the
/// first half and the last half, with a marker saying how much was left out in between. The
/// start of an output usually says what ran and the end how it finished; the middle is the
/// part a model can best do without.
#[derive(Debug)]
pub struct BoundedText {
    head: String,
    head_chars: usize,
    head_cap: usize,
    /// The most recent text after the head; trimmed to `tail_cap` chars now and then (not on
    /// every push, which would make the accumulator quadratic).
    tail: String,
    tail_chars: usize,
    tail_cap: usize,
    total_chars: usize,
}

impl BoundedText {
    pub fn new(limit: usize) -> Self {
        let head_cap = limit / 2;
        BoundedText {
            head: String::new(),
            head_chars: 0,
            head_cap,
            tail: String::new(),
            tail_chars: 0,
            tail_cap: limit - head_cap,
            total_chars: 0,
        }
    }

    pub fn push(&mut self, mut s: &str) {
        if s.is_empty() {
            return;
        }
        if self.head_chars < self.head_cap {
            let room = self.head_cap - self.head_chars;
            let cut = byte_index_after_chars(s, room);
            let taken = s[..cut].chars().count();
            self.head.push_str(&s[..cut]);
            self.head_chars += taken;
            self.total_chars += taken;
            s = &s[cut..];
            if s.is_empty() {
                return;
            }
        }
        let n = s.chars().count();
        self.total_chars += n;
        if n >= self.tail_cap {
            // This piece alone fills the tail: nothing kept so far survives.
            let skip = byte_index_after_chars(s, n - self.tail_cap);
            self.tail.clear();
            self.tail.push_str(&s[skip..]);
            self.tail_chars = self.tail_cap;
            return;
        }
        self.tail.push_str(s);
        self.tail_chars += n;
        if self.tail_chars > 2 * self.tail_cap {
            self.trim_tail();
        }
    }

    fn trim_tail(&mut self) {
        if self.tail_chars > self.tail_cap {
            let cut = byte_index_after_chars(&self.tail, self.tail_chars - self.tail_cap);
            self.tail.drain(..cut);
            self.tail_chars = self.tail_cap;
        }
    }

    /// Characters pushed in total.
    pub fn total_chars(&self) -> usize {
        self.total_chars
    }

    /// Characters that will be left out of [`finish`](Self::finish).
    pub fn omitted(&self) -> usize {
        self.total_chars - self.head_chars - self.tail_chars.min(self.tail_cap)
    }

    pub fn is_empty(&self) -> bool {
        self.total_chars == 0
    }

    /// The kept text; when something was cut, head and tail are joined by a line
    /// `... [N characters omitted] ...`.
    pub fn finish(mut self) -> String {
        self.trim_tail();
        let omitted = self.omitted();
        if omitted == 0 {
            self.head.push_str(&self.tail);
            return self.head;
        }
        let mut out = self.head;
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("... [{omitted} characters omitted] ..."));
        if !self.tail.is_empty() {
            out.push('\n');
            out.push_str(&self.tail);
        }
        out
    }
}

/// Characters a cut text may exceed its limit by: the marker line of [`BoundedText::finish`]
/// (at most about 50) and a short prefix put before an already cut text (`Error: blocked by
/// hook: `).
pub const CUT_ROOM: usize = 256;

/// `text` cut to `limit` characters (head and tail, with the marker) unless it is within
/// `limit + CUT_ROOM` already. Text that a [`BoundedText`] of the same limit produced is, so
/// bounding twice changes nothing and a cut text is never cut again for its marker.
pub fn bound(text: String, limit: usize) -> String {
    if text.chars().count() <= limit.saturating_add(CUT_ROOM) {
        return text;
    }
    let mut b = BoundedText::new(limit);
    b.push(&text);
    b.finish()
}

/// The byte index just after the first `n` chars of `s` (or its length if shorter).
fn byte_index_after_chars(s: &str, n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    s.char_indices().nth(n).map_or(s.len(), |(i, _)| i)
}

/// Decodes a byte stream as UTF-8 across arbitrary read boundaries: a character split between
/// two reads is held back until it is complete, and invalid bytes become U+FFFD (the same
/// substitution `String::from_utf8_lossy` makes).
#[derive(Debug, Default)]
pub struct Utf8Decoder {
    /// The start of an incomplete character from the previous read (at most 3 bytes).
    pending: Vec<u8>,
    buf: Vec<u8>,
    saw_invalid: bool,
}

impl Utf8Decoder {
    pub fn new() -> Self {
        Utf8Decoder::default()
    }

    /// Whether any invalid byte has been replaced so far.
    pub fn saw_invalid(&self) -> bool {
        self.saw_invalid
    }

    /// Bytes of an incomplete character held back for the next read.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Decodes `bytes`, handing the text to `out` in one or more pieces.
    pub fn decode(&mut self, bytes: &[u8], mut out: impl FnMut(&str)) {
        let data: &[u8] = if self.pending.is_empty() {
            bytes
        } else {
            self.buf.clear();
            self.buf.append(&mut self.pending);
            self.buf.extend_from_slice(bytes);
            &self.buf
        };
        let mut rest = data;
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    out(s);
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    // Safe by construction: from_utf8 just validated this prefix.
                    out(std::str::from_utf8(valid).unwrap_or_default());
                    match e.error_len() {
                        Some(bad) => {
                            self.saw_invalid = true;
                            out("\u{FFFD}");
                            rest = &after[bad..];
                        }
                        None => {
                            self.pending.extend_from_slice(after);
                            break;
                        }
                    }
                }
            }
        }
    }

    /// Ends the stream: an incomplete character left over becomes U+FFFD.
    pub fn finish(&mut self, mut out: impl FnMut(&str)) {
        if !self.pending.is_empty() {
            self.pending.clear();
            self.saw_invalid = true;
            out("\u{FFFD}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounded(limit: usize, pieces: &[&str]) -> String {
        let mut b = BoundedText::new(limit);
        for p in pieces {
            b.push(p);
        }
        b.finish()
    }

    #[test]
    fn quote_keeps_short_arguments_and_cuts_long_ones_visibly() {
        assert_eq!(quote("src/main.rs"), "src/main.rs");
        let exact = "é".repeat(QUOTE_CHARS);
        assert_eq!(quote(&exact), exact.as_str());
        let long = format!(
            "{}{}{}",
            "a".repeat(100),
            "é".repeat(5_000_000),
            "z".repeat(100)
        );
        let q = quote(&long);
        assert_eq!(
            q,
            format!(
                "{}... [5000000 characters omitted] ...{}",
                "a".repeat(100),
                "z".repeat(100)
            )
        );
    }

    #[test]
    fn bound_cuts_once_and_bounding_again_changes_nothing() {
        assert_eq!(bound("short".into(), 10), "short");
        let fits = "x".repeat(10 + CUT_ROOM);
        assert_eq!(bound(fits.clone(), 10), fits);
        let long = format!("{}{}", "a".repeat(300), "b".repeat(300));
        let once = bound(long, 10);
        assert_eq!(once, "aaaaa\n... [590 characters omitted] ...\nbbbbb");
        assert_eq!(bound(once.clone(), 10), once);
        // The widest marker leaves room for a prefix.
        let widest = format!("\n... [{} characters omitted] ...\n", usize::MAX);
        assert!(widest.chars().count() + "Error: blocked by hook: ".len() < CUT_ROOM);
    }

    #[test]
    fn short_output_is_kept_whole() {
        assert_eq!(bounded(10, &["abc", "de"]), "abcde");
        assert_eq!(bounded(10, &["0123456789"]), "0123456789");
        assert_eq!(bounded(10, &[]), "");
    }

    #[test]
    fn long_output_keeps_head_and_tail_with_marker() {
        assert_eq!(
            bounded(10, &["0123456789abcdef"]),
            "01234\n... [6 characters omitted] ...\nbcdef"
        );
        // Same result however the input is split.
        let pieces: Vec<String> = "0123456789abcdef".chars().map(String::from).collect();
        let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
        assert_eq!(
            bounded(10, &refs),
            "01234\n... [6 characters omitted] ...\nbcdef"
        );
    }

    #[test]
    fn counts_characters_not_bytes() {
        let s = "é".repeat(12);
        let mut b = BoundedText::new(10);
        b.push(&s);
        assert_eq!(b.omitted(), 2);
        assert_eq!(b.total_chars(), 12);
        assert_eq!(b.finish(), "ééééé\n... [2 characters omitted] ...\nééééé");
    }

    #[test]
    fn tail_survives_many_small_pushes() {
        let mut b = BoundedText::new(6);
        for i in 0..1000 {
            b.push(&format!("{}", i % 10));
        }
        assert_eq!(b.finish(), "012\n... [994 characters omitted] ...\n789");
    }

    /// The speed of this is measured in `benches/bounded_output.rs`.
    #[test]
    fn thirty_megabytes_keep_exactly_head_and_tail() {
        let line = "line of output ✓\n";
        let chunk = line.repeat(4096);
        let mut b = BoundedText::new(50_000);
        let mut pushed = 0;
        while pushed < 30_000_000 {
            b.push(&chunk);
            pushed += chunk.len();
        }
        let total_chars = b.total_chars();
        assert_eq!(total_chars, pushed / line.len() * line.chars().count());
        let out = b.finish();
        // 25,000 characters of head, the marker line, 25,000 of tail (lines are 17 chars).
        let head: String = line.repeat(25_000 / 17 + 1).chars().take(25_000).collect();
        let tail: String = {
            let t: Vec<char> = line.repeat(25_000 / 17 + 2).chars().collect();
            t[t.len() - 25_000..].iter().collect()
        };
        let marker = format!("... [{} characters omitted] ...", total_chars - 50_000);
        // The head ends inside a line, so the marker starts on a line of its own.
        assert_eq!(out, format!("{head}\n{marker}\n{tail}"));
    }

    fn decode_pieces(pieces: &[&[u8]]) -> (String, bool) {
        let mut d = Utf8Decoder::new();
        let mut s = String::new();
        for p in pieces {
            d.decode(p, |t| s.push_str(t));
        }
        d.finish(|t| s.push_str(t));
        (s, d.saw_invalid())
    }

    #[test]
    fn multibyte_chars_split_across_reads() {
        let bytes = "a€b😀".as_bytes();
        // Split inside the euro sign and inside the emoji, one byte at a time too.
        let (s, bad) = decode_pieces(&[&bytes[..2], &bytes[2..3], &bytes[3..7], &bytes[7..]]);
        assert_eq!((s.as_str(), bad), ("a€b😀", false));
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(decode_pieces(&singles).0, "a€b😀");
    }

    #[test]
    fn invalid_bytes_become_replacement_chars() {
        let (s, bad) = decode_pieces(&[b"a\xffb", b"\xe2\x82"]);
        assert_eq!(s, "a\u{FFFD}b\u{FFFD}");
        assert!(bad);
    }
}
