//! Incremental Server-Sent Events parsing.
//!
//! Written by hand because the job is small and exact: the client needs comment lines as
//! distinct events (keep-alives must not count as progress) and must dispatch a final event
//! that lacks its trailing blank line, which the SSE spec says to drop but real servers send.

/// One parsed SSE item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseEvent {
    /// The joined `data:` lines of one event.
    Data(String),
    /// A comment line (`: keep-alive`), reported so callers can tell liveness from progress.
    Comment,
}

/// Feeds bytes in, takes whole events out. Partial lines (and partial UTF-8) are buffered.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    data: Option<String>,
    /// A `\r` ended the last line; a `\n` right after it belongs to the same line break.
    after_cr: bool,
}

impl SseParser {
    pub fn new() -> Self {
        SseParser::default()
    }

    /// Adds bytes and appends every event they complete to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
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
                self.line(&line, out);
                start = i + 1;
            } else {
                self.after_cr = false;
            }
        }
        self.buf.extend_from_slice(&bytes[start..]);
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
            p.feed(c, &mut out);
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
    fn multiline_data_and_bare_cr() {
        assert_eq!(
            parse_in_pieces("data:a\rdata: b\r\revent: x\nid: 3\n\n", 3),
            vec![SseEvent::Data("a\nb".into())]
        );
    }
}
