//! Splits a shell command line into simple commands and their words, for the guard.
//!
//! Written by hand because no maintained crate does this job: `shlex` splits words but not on
//! `;`, `&&`, `|` or `$(...)`, and a full shell parser is far more than a guard needs. This
//! errs on the side of finding commands: every command substitution is analysed as well, and
//! each command says where its standard input comes from, so the guard can read a script fed
//! to a shell (`sh <<EOF`, `echo … | bash`).

use std::ops::Range;

/// One simple command: its words (quotes removed), the targets of its output redirections,
/// where its standard input comes from, and the commands whose output its words hold.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// A command or process substitution stands in a word as `$(…)` or `<(…)`.
    pub words: Vec<String>,
    pub redirects: Vec<String>,
    pub stdin: Input,
    /// Per substitution in the words (`$(…)`, backticks, `<(…)`, `>(…)`), in order: the indices,
    /// in the list [`commands`] returns, of the commands inside it (nested ones included). They
    /// always come before the command itself.
    pub substitutions: Vec<Range<usize>>,
}

/// Where a command's standard input comes from.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub enum Input {
    /// Not redirected: whatever the line's own stdin is.
    #[default]
    Inherited,
    /// A here-doc's body or a here-string's word, with the newline the shell adds.
    Text(String),
    /// `< FILE`.
    File(String),
    /// The output of the command at this index (always an earlier one), through `|`.
    Pipe(usize),
    /// What the splitter does not follow: a pipe from a compound command (`{ …; } |`), `<&N`.
    Unknown,
}

/// What a command substitution leaves in a word.
pub const SUBSTITUTION: &str = "$(…)";
/// What a process substitution (`<(…)`, `>(…)`) leaves in a word: a file name.
pub const PROCESS_SUBSTITUTION: &str = "<(…)";

/// Every simple command in `line`, including those inside `$(...)`, backticks, process
/// substitutions, subshells and unquoted here-doc bodies.
pub fn commands(line: &str) -> Vec<SimpleCommand> {
    let mut out = Vec::new();
    parse(line, &mut out, 0);
    out
}

/// Nesting bound, so hostile input cannot recurse without end.
const MAX_DEPTH: usize = 8;

/// What the next word is, after a redirection operator.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Next {
    Word,
    /// The target of `>`/`>>`: kept, a write may matter.
    OutTarget,
    /// The source of `<`: the command's stdin.
    InFile,
    /// The word of `<<<`: the command's stdin.
    HereString,
    /// The file of a redirection of another descriptor (`3<x`), or a here-doc delimiter.
    Skip,
}

/// A here-doc whose body starts after the next newline.
struct Heredoc {
    delim: String,
    strip_tabs: bool,
    /// Quoted delimiter: the body is taken literally, no substitutions run in it.
    quoted: bool,
    /// It is the command's stdin (not `3<<EOF`).
    stdin: bool,
    /// The command that reads it, once that command is in the output list.
    reader: Option<usize>,
}

struct State {
    cmd: SimpleCommand,
    word: String,
    in_word: bool,
    next: Next,
    /// Here-docs of the command being read.
    cmd_heredocs: Vec<Heredoc>,
    /// Here-docs opened on the current line, in order.
    heredocs: Vec<Heredoc>,
    /// The stdin of the next command, when it is the right side of `|`.
    piped: Option<Input>,
}

impl State {
    fn end_word(&mut self) {
        if self.in_word {
            let w = std::mem::take(&mut self.word);
            match self.next {
                // `2>&1`, `>&-`: a descriptor, not a file.
                Next::OutTarget if w.chars().all(|c| c.is_ascii_digit() || c == '-') => {}
                Next::OutTarget => self.cmd.redirects.push(w),
                Next::InFile => self.cmd.stdin = Input::File(w),
                Next::HereString => self.cmd.stdin = Input::Text(w + "\n"),
                Next::Skip => {}
                Next::Word => self.cmd.words.push(w),
            }
            self.next = Next::Word;
            self.in_word = false;
        }
    }

    /// Ends the command being read; returns its index in `out` when it had anything in it.
    fn end_command(&mut self, out: &mut Vec<SimpleCommand>) -> Option<usize> {
        self.end_word();
        self.next = Next::Word;
        let mut cmd = std::mem::take(&mut self.cmd);
        let mut docs = std::mem::take(&mut self.cmd_heredocs);
        if cmd.words.is_empty() && cmd.redirects.is_empty() {
            // Its here-docs' bodies are still skipped, but no command reads them.
            self.heredocs.append(&mut docs);
            return None;
        }
        // A redirection of its own beats the pipe.
        if let Some(piped) = self.piped.take() {
            if cmd.stdin == Input::Inherited {
                cmd.stdin = piped;
            }
        }
        let index = out.len();
        out.push(cmd);
        for d in &mut docs {
            d.reader = Some(index);
        }
        self.heredocs.append(&mut docs);
        Some(index)
    }

    /// Parses a substitution's text; it stands in the current word as `placeholder`.
    fn substitution(
        &mut self,
        inner: &str,
        placeholder: &str,
        out: &mut Vec<SimpleCommand>,
        depth: usize,
    ) {
        let start = out.len();
        parse(inner, out, depth + 1);
        self.cmd.substitutions.push(start..out.len());
        self.in_word = true;
        self.word.push_str(placeholder);
    }
}

fn parse(line: &str, out: &mut Vec<SimpleCommand>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let chars: Vec<char> = line.chars().collect();
    let mut st = State {
        cmd: SimpleCommand::default(),
        word: String::new(),
        in_word: false,
        next: Next::Word,
        cmd_heredocs: Vec::new(),
        heredocs: Vec::new(),
        piped: None,
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' => {
                st.in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    st.word.push(chars[i]);
                    i += 1;
                }
            }
            '"' => {
                st.in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        i += 1;
                        st.word.push(chars[i]);
                    } else if chars[i] == '$' && chars.get(i + 1) == Some(&'(') {
                        let (inner, end) = balanced(&chars, i + 2);
                        st.substitution(&inner, SUBSTITUTION, out, depth);
                        i = end;
                    } else if chars[i] == '`' {
                        let (inner, end) = until(&chars, i + 1, '`');
                        st.substitution(&inner, SUBSTITUTION, out, depth);
                        i = end;
                    } else {
                        st.word.push(chars[i]);
                    }
                    i += 1;
                }
            }
            '\\' => {
                if let Some(&n) = chars.get(i + 1) {
                    // A line continuation joins lines; it is not part of any word.
                    if n != '\n' {
                        st.in_word = true;
                        st.word.push(n);
                    }
                    i += 1;
                }
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                let (inner, end) = balanced(&chars, i + 2);
                st.substitution(&inner, SUBSTITUTION, out, depth);
                i = end;
            }
            '$' if chars.get(i + 1) == Some(&'\'') => {
                // Bash's ANSI-C quoting: `$'\x72\x6d'` is the word `rm`.
                st.in_word = true;
                i = ansi_c_quoted(&chars, i + 2, &mut st.word);
            }
            '$' if chars.get(i + 1) == Some(&'"') => {
                // `$"…"` (a translated string) is a double-quoted word.
                i += 1;
                continue;
            }
            '`' => {
                let (inner, end) = until(&chars, i + 1, '`');
                st.substitution(&inner, SUBSTITUTION, out, depth);
                i = end;
            }
            '#' if !st.in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '<' | '>' if chars.get(i + 1) == Some(&'(') && !st.in_word => {
                // Process substitution: its commands run, and the word is a file name.
                let (inner, end) = balanced(&chars, i + 2);
                st.substitution(&inner, PROCESS_SUBSTITUTION, out, depth);
                i = end;
            }
            '&' if chars.get(i + 1) == Some(&'>') => {
                // `&>`, `&>>`: stdout and stderr to a file, not a separator.
                st.end_word();
                i += 1;
                while chars.get(i + 1) == Some(&'>') {
                    i += 1;
                }
                st.next = Next::OutTarget;
            }
            '|' => {
                let pipe = chars.get(i + 1) != Some(&'|');
                if !pipe || chars.get(i + 1) == Some(&'&') {
                    // `||`, or bash's `|&` (a pipe of stdout and stderr).
                    i += 1;
                }
                let producer = st.end_command(out);
                st.piped = pipe.then(|| producer.map_or(Input::Unknown, Input::Pipe));
            }
            '{' | '}' if st.in_word || !group_brace(&st, chars.get(i + 1)) => {
                // Part of a word: `${HOME}`, `{}`, `-I{}`, `{a,b}`.
                st.in_word = true;
                st.word.push(c);
            }
            ';' | '&' | '\n' | '(' | ')' | '{' | '}' => {
                st.end_command(out);
                if matches!(c, ';' | '&') {
                    st.piped = None;
                }
                if c == '\n' && !st.heredocs.is_empty() {
                    // The lines after a here-doc's command are its text, not commands.
                    for doc in std::mem::take(&mut st.heredocs) {
                        let (body, end) = heredoc_body(&chars, i, &doc.delim, doc.strip_tabs);
                        i = end;
                        if !doc.quoted {
                            body_substitutions(&body, out, depth);
                        }
                        if let Some(reader) = doc.reader.and_then(|r| out.get_mut(r)) {
                            if doc.stdin {
                                reader.stdin = Input::Text(body);
                            }
                        }
                    }
                }
            }
            '<' if chars.get(i + 1) == Some(&'<') && chars.get(i + 2) == Some(&'<') => {
                let fd = take_fd(&mut st);
                st.end_word();
                i += 2;
                st.next = if stdin_fd(&fd) {
                    Next::HereString
                } else {
                    Next::Skip
                };
            }
            '<' if chars.get(i + 1) == Some(&'<') => {
                let fd = take_fd(&mut st);
                st.end_word();
                i += 2;
                let strip_tabs = chars.get(i) == Some(&'-');
                if strip_tabs {
                    i += 1;
                }
                let (delim, quoted, end) = heredoc_delimiter(&chars, i);
                let stdin = stdin_fd(&fd);
                if stdin {
                    // Known to be a here-doc now; the body is filled in after the line.
                    st.cmd.stdin = Input::Text(String::new());
                }
                st.cmd_heredocs.push(Heredoc {
                    delim,
                    strip_tabs,
                    quoted,
                    stdin,
                    reader: None,
                });
                i = end;
                continue;
            }
            '>' | '<' => {
                // `2>`, `0<`: a descriptor written right before the operator.
                let fd = take_fd(&mut st);
                st.end_word();
                let dup = chars.get(i + 1) == Some(&'&');
                // `>>`, `>|`, `>&`, `<>`, `<&`: one operator.
                while matches!(
                    chars.get(i + 1),
                    Some('>') | Some('<') | Some('|') | Some('&')
                ) {
                    i += 1;
                }
                st.next = if c == '>' {
                    Next::OutTarget
                } else if !stdin_fd(&fd) {
                    Next::Skip
                } else if dup {
                    // `<&3`: another descriptor, which the splitter does not follow.
                    st.cmd.stdin = Input::Unknown;
                    Next::Skip
                } else {
                    Next::InFile
                };
            }
            c if c.is_whitespace() => st.end_word(),
            c => {
                st.in_word = true;
                st.word.push(c);
            }
        }
        i += 1;
    }
    st.end_command(out);
    // Here-docs on the last line without a body: the shell reads nothing for them.
}

/// Whether a `{` or `}` not inside a word, followed by `next`, is a group's brace: bash reads
/// one only as a command's first word, standing alone (`{ a; }`); elsewhere (`echo {}`, `find
/// -exec rm {} +`) it is a word of its own.
fn group_brace(st: &State, next: Option<&char>) -> bool {
    let alone = next.is_none_or(|n| n.is_whitespace() || ";&|()<>".contains(*n));
    alone && st.cmd.words.is_empty() && st.next == Next::Word
}

/// A descriptor number written right before a redirection operator (`2>`), taken out of the
/// word being read; empty when there is none.
fn take_fd(st: &mut State) -> String {
    if st.in_word && st.next == Next::Word && st.word.chars().all(|d| d.is_ascii_digit()) {
        st.in_word = false;
        std::mem::take(&mut st.word)
    } else {
        String::new()
    }
}

/// Whether a redirection of descriptor `fd` (empty: the default) is of stdin.
fn stdin_fd(fd: &str) -> bool {
    fd.is_empty() || fd.trim_start_matches('0').is_empty()
}

/// The delimiter word of a here-doc starting at `start` (quotes removed), whether it was quoted,
/// and the index just after it.
fn heredoc_delimiter(chars: &[char], start: usize) -> (String, bool, usize) {
    let mut i = start;
    while matches!(chars.get(i), Some(' ') | Some('\t')) {
        i += 1;
    }
    let mut delim = String::new();
    let mut quoted = false;
    while let Some(&c) = chars.get(i) {
        match c {
            '\'' | '"' => quoted = true,
            '\\' => {
                quoted = true;
                i += 1;
                if let Some(&n) = chars.get(i) {
                    delim.push(n);
                }
            }
            c if c.is_whitespace() || ";&|<>()".contains(c) => break,
            c => delim.push(c),
        }
        i += 1;
    }
    (delim, quoted, i)
}

/// From the newline at `nl`, reads the here-doc's lines through the one that is exactly
/// `delim`; returns the body (each line ending in a newline) and the index of the newline
/// ending the delimiter line (or the end).
fn heredoc_body(chars: &[char], nl: usize, delim: &str, strip_tabs: bool) -> (String, usize) {
    let mut body = String::new();
    let mut start = nl + 1;
    while start < chars.len() {
        let end = (start..chars.len())
            .find(|&j| chars[j] == '\n')
            .unwrap_or(chars.len());
        let line: String = chars[start..end].iter().collect();
        let line = if strip_tabs {
            line.trim_start_matches('\t')
        } else {
            line.as_str()
        };
        if line == delim {
            return (body, end);
        }
        body.push_str(line);
        body.push('\n');
        start = end + 1;
    }
    (body, chars.len())
}

/// The commands of the substitutions in an unquoted here-doc's body: the shell runs them while
/// it reads the body, even when the body only goes to a file.
fn body_substitutions(body: &str, out: &mut Vec<SimpleCommand>, depth: usize) {
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '$' if chars.get(i + 1) == Some(&'(') => {
                let (inner, end) = balanced(&chars, i + 2);
                parse(&inner, out, depth + 1);
                i = end;
            }
            '`' => {
                let (inner, end) = until(&chars, i + 1, '`');
                parse(&inner, out, depth + 1);
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
}

/// Reads an ANSI-C quoted string (`$'…'`) from `start`, just after its opening quote, into
/// `word` with its escapes read as bash reads them; returns the index of the closing quote (or
/// the end).
fn ansi_c_quoted(chars: &[char], start: usize, word: &mut String) -> usize {
    let mut i = start;
    while let Some(&c) = chars.get(i) {
        if c == '\'' {
            return i;
        }
        if c != '\\' {
            word.push(c);
            i += 1;
            continue;
        }
        i += 1;
        let Some(&e) = chars.get(i) else {
            word.push('\\');
            return i;
        };
        // The digits after index `i` (at most `max`), added to `value`; moves `i` past them.
        let mut number = |radix: u32, max: usize, mut value: u32| {
            let mut n = 0;
            while let Some(d) = chars.get(i + 1).and_then(|c| c.to_digit(radix)) {
                if n == max {
                    break;
                }
                value = value.saturating_mul(radix).saturating_add(d);
                i += 1;
                n += 1;
            }
            (n > 0).then_some(value)
        };
        // `\NNN` and `\xHH` stand for one byte each.
        let byte = |v: u32| char::from((v & 0xff) as u8);
        match e {
            'n' => word.push('\n'),
            't' => word.push('\t'),
            'r' => word.push('\r'),
            'a' => word.push('\x07'),
            'b' => word.push('\x08'),
            'e' | 'E' => word.push('\x1b'),
            'f' => word.push('\x0c'),
            'v' => word.push('\x0b'),
            '0'..='7' => {
                let first = e.to_digit(8).unwrap_or(0);
                word.push(byte(number(8, 2, first).unwrap_or(first)));
            }
            'x' => match number(16, 2, 0) {
                Some(v) => word.push(byte(v)),
                None => word.push_str("\\x"),
            },
            'u' | 'U' => match number(16, if e == 'u' { 4 } else { 8 }, 0).and_then(char::from_u32)
            {
                Some(ch) => word.push(ch),
                None => {
                    word.push('\\');
                    word.push(e);
                }
            },
            // `\cX`: the control character of X.
            'c' => {
                if let Some(&x) = chars.get(i + 1) {
                    i += 1;
                    word.push(byte(x as u32 & 0x1f));
                }
            }
            '\\' | '\'' | '"' | '?' => word.push(e),
            other => {
                word.push('\\');
                word.push(other);
            }
        }
        i += 1;
    }
    i
}

/// The text up to the `)` that closes an opening just before `start`; returns it and the
/// index of that `)`.
fn balanced(chars: &[char], start: usize) -> (String, usize) {
    let mut depth = 1;
    let mut i = start;
    while i < chars.len() {
        match chars[i] {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return (chars[start..i].iter().collect(), i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    (chars[start..].iter().collect(), chars.len())
}

fn until(chars: &[char], start: usize, end: char) -> (String, usize) {
    let mut i = start;
    while i < chars.len() && chars[i] != end {
        i += 1;
    }
    (chars[start..i.min(chars.len())].iter().collect(), i)
}

#[cfg(test)]
mod tests;
