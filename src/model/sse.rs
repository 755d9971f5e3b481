//! Incremental Server-Sent Events parsing.
//!
//! Written by hand because the job is small and exact: the client needs comment lines as
//! distinct events (keep-alives must not count as progress) and must dispatch a final event
//! that lacks its trailing blank line, which the SSE spec says to drop but real servers send.

/// Bytes one event may hold unless the caller says otherwise (`[network] max_event_bytes`).
pub const DEFAULT_MAX_EVENT: usize = 16 * 1024 * 1024;

/// One parsed SSE item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseEvent {
    /// The joined `data:` lines of one event.
    Data(String),
    /// A comment line (`: keep-alive`), reported so callers can tell liveness from progress.
    Comment,
}

/// One event (or one line) grew past the parser's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventTooLarge {
    pub limit: usize,
}

/// Feeds bytes in, takes whole events out. Partial lines (and partial UTF-8) are buffered, up
/// to a limit: a server that never ends a line or an event must not grow memory forever.
#[derive(Debug)]
pub struct SseParser {
    buf: Vec<u8>,
    data: Option<String>,
    /// A `\r` ended the last line; a `\n` right after it belongs to the same line break.
    after_cr: bool,
    /// Bytes one event may hold: its data so far plus the line being read.
    max_event: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::new()
    }
}

impl SseParser {
    /// A parser whose events may hold at most [`DEFAULT_MAX_EVENT`] bytes.
    pub fn new() -> Self {
        SseParser::with_limit(DEFAULT_MAX_EVENT)
    }

    /// A parser whose events (and lines) may hold at most `max_event` bytes.
    pub fn with_limit(max_event: usize) -> Self {
        SseParser {
            buf: Vec::new(),
            data: None,
            after_cr: false,
            max_event,
        }
    }

    /// Adds bytes and appends every event they complete to `out`. Fails, for good, once the
    /// event being read is larger than the limit.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), EventTooLarge> {
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'\n' || b == b'\r' {
                let skip = b == b'\n' && self.after_cr && start == i && self.buf.is_empty();
                self.after_cr = b == b'\r';
                if skip {
                    start = i + 1;
                    continue;
                }
                self.buf.extend_from_slice(&bytes[start..i]);
                let line = std::mem::take(&mut self.buf);
                self.check(line.len())?;
                self.line(&line, out);
                start = i + 1;
            } else {
                self.after_cr = false;
            }
        }
        self.buf.extend_from_slice(&bytes[start..]);
        self.check(self.buf.len())
    }

    /// Whether an event whose pending line has `line` bytes is still within the limit.
    fn check(&self, line: usize) -> Result<(), EventTooLarge> {
        let data = self.data.as_ref().map_or(0, String::len);
        if data.saturating_add(line) > self.max_event {
            Err(EventTooLarge {
                limit: self.max_event,
            })
        } else {
            Ok(())
        }
    }

    /// The stream ended: dispatch what is pending, even without a closing blank line.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
            self.line(&line, out);
        }
        if let Some(d) = self.data.take() {
            out.push(SseEvent::Data(d));
        }
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if let Some(d) = self.data.take() {
                out.push(SseEvent::Data(d));
            }
            return;
        }
        if line[0] == b':' {
            out.push(SseEvent::Comment);
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(p) => {
                let v = &line[p + 1..];
                (&line[..p], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        // Only `data` matters for chat completions; `event`, `id` and `retry` are ignored.
        if field == b"data" {
            let value = String::from_utf8_lossy(value);
            match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(&value);
                }
                None => self.data = Some(value.into_owned()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(input: &str, piece: usize) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in input.as_bytes().chunks(piece) {
            p.feed(c, &mut out).expect("within the limit");
        }
        p.finish(&mut out);
        out
    }

    #[test]
    fn events_comments_and_split_input() {
        let input = ": keep-alive\n\ndata: {\"a\":1}\n\ndata: é\r\n\r\ndata: [DONE]\n\n";
        for piece in 1..input.len() {
            assert_eq!(
                parse_in_pieces(input, piece),
                vec![
                    SseEvent::Comment,
                    SseEvent::Data("{\"a\":1}".into()),
                    SseEvent::Data("é".into()),
                    SseEvent::Data("[DONE]".into()),
                ],
                "piece size {piece}"
            );
        }
    }

    #[test]
    fn last_event_without_blank_line_is_dispatched() {
        assert_eq!(
            parse_in_pieces("data: x\n\ndata: [DONE]", 4),
            vec![SseEvent::Data("x".into()), SseEvent::Data("[DONE]".into())]
        );
    }

    #[test]
    fn an_endless_line_or_event_breaks_the_limit() {
        let mut out = Vec::new();
        let mut p = SseParser::with_limit(10);
        assert_eq!(p.feed(b"data: 0123", &mut out), Ok(()));
        assert_eq!(
            p.feed(b"456789", &mut out),
            Err(EventTooLarge { limit: 10 })
        );
        // Many short data lines of one event add up.
        let mut p = SseParser::with_limit(20);
        assert_eq!(p.feed(b"data: 1234\ndata: 5678\n", &mut out), Ok(()));
        assert!(p.feed(b"data: 90123456\n", &mut out).is_err());
        // Each event has the whole limit to itself, and so does a comment line.
        let mut p = SseParser::with_limit(20);
        for _ in 0..100 {
            p.feed(b"data: 0123456789\n\n: keep-alive\n", &mut out)
                .expect("within the limit");
        }
        assert!(p.feed(b": 01234567890123456789", &mut out).is_err());
        assert_eq!(out.len(), 200);
    }

    #[test]
    fn multiline_data_and_bare_cr() {
        assert_eq!(
            parse_in_pieces("data:a\rdata: b\r\revent: x\nid: 3\n\n", 3),
            vec![SseEvent::Data("a\nb".into())]
        );
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    /// Parses `bytes` fed in pieces of the given sizes (cycled), then finishes; the events
    /// and whether the limit broke.
    fn parse(bytes: &[u8], sizes: &[usize], limit: usize) -> (Vec<SseEvent>, bool) {
        let mut p = SseParser::with_limit(limit);
        let mut out = Vec::new();
        let mut rest = bytes;
        for size in sizes.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (piece, after) = rest.split_at((*size).clamp(1, rest.len()));
            if p.feed(piece, &mut out).is_err() {
                return (out, true);
            }
            rest = after;
        }
        p.finish(&mut out);
        (out, false)
    }

    #[derive(Debug, Clone)]
    enum Item {
        /// The lines of one event's data.
        Data(Vec<String>),
        Comment(String),
        /// A field the parser ignores (`event:`, `id:`), inside the next event.
        Ignored(String),
    }

    fn item() -> impl Strategy<Value = Item> {
        // Any text without line breaks, multibyte characters included.
        let line = "[^\r\n]{0,12}";
        prop_oneof![
            4 => proptest::collection::vec(line, 1..4).prop_map(Item::Data),
            1 => line.prop_map(Item::Comment),
            1 => line.prop_map(Item::Ignored),
        ]
    }

    /// A valid stream in one line-ending style, with the events it must parse to.
    fn stream() -> impl Strategy<Value = (Vec<u8>, Vec<SseEvent>)> {
        (proptest::collection::vec(item(), 0..12), 0..3usize).prop_map(|(items, style)| {
            let eol = ["\n", "\r\n", "\r"][style];
            let mut text = String::new();
            let mut events = Vec::new();
            for item in items {
                match item {
                    Item::Data(lines) => {
                        for l in &lines {
                            text.push_str(&format!("data: {l}{eol}"));
                        }
                        text.push_str(eol);
                        events.push(SseEvent::Data(lines.join("\n")));
                    }
                    Item::Comment(c) => {
                        text.push_str(&format!(":{c}{eol}"));
                        events.push(SseEvent::Comment);
                    }
                    Item::Ignored(v) => text.push_str(&format!("event: {v}{eol}")),
                }
            }
            (text.into_bytes(), events)
        })
    }

    proptest! {
        // Each case parses a few hundred bytes: 256 cases take milliseconds.
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_chunking_of_a_valid_stream_gives_its_events(
            (bytes, expected) in stream(),
            sizes in proptest::collection::vec(1..16usize, 1..8),
        ) {
            prop_assert_eq!(parse(&bytes, &sizes, usize::MAX), (expected, false));
        }

        #[test]
        fn any_bytes_parse_the_same_however_chunked_and_never_panic(
            bytes in proptest::collection::vec(
                prop_oneof![Just(b'\n'), Just(b'\r'), Just(b':'), Just(b' '), any::<u8>()],
                0..300,
            ),
            sizes in proptest::collection::vec(1..32usize, 1..8),
            limit in prop_oneof![Just(usize::MAX), 1..64usize],
        ) {
            let whole = parse(&bytes, &[usize::MAX], limit);
            prop_assert_eq!(parse(&bytes, &sizes, limit), whole);
        }
    }
}
