//! Splits a shell command line into simple commands and their words, for the guard.
//!
//! Written by hand because no maintained crate does this job: `shlex` splits words but not on
//! `;`, `&&`, `|` or `$(...)`, and a full shell parser is far more than a guard needs. This
//! errs on the side of finding commands: every command substitution and every `sh -c` string
//! is analysed as well.

/// One simple command: its words (quotes removed) and the targets of its output redirections.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    pub words: Vec<String>,
    pub redirects: Vec<String>,
}

/// Every simple command in `line`, including those inside `$(...)`, backticks and
/// subshells.
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
    /// The source of `<`, a here-doc delimiter or a here-string: not a command word.
    Skip,
}

struct State {
    cmd: SimpleCommand,
    word: String,
    in_word: bool,
    next: Next,
    /// Here-docs opened on the current line: (delimiter, strip leading tabs).
    heredocs: Vec<(String, bool)>,
}

impl State {
    fn end_word(&mut self) {
        if self.in_word {
            let w = std::mem::take(&mut self.word);
            match self.next {
                // `2>&1`, `>&-`: a descriptor, not a file.
                Next::OutTarget if w.chars().all(|c| c.is_ascii_digit() || c == '-') => {}
                Next::OutTarget => self.cmd.redirects.push(w),
                Next::Skip => {}
                Next::Word => self.cmd.words.push(w),
            }
            self.next = Next::Word;
            self.in_word = false;
        }
    }

    fn end_command(&mut self, out: &mut Vec<SimpleCommand>) {
        self.end_word();
        let cmd = std::mem::take(&mut self.cmd);
        if !cmd.words.is_empty() || !cmd.redirects.is_empty() {
            out.push(cmd);
        }
        self.next = Next::Word;
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
        heredocs: Vec::new(),
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
                        parse(&inner, out, depth + 1);
                        st.word.push_str("$(…)");
                        i = end;
                    } else if chars[i] == '`' {
                        let (inner, end) = until(&chars, i + 1, '`');
                        parse(&inner, out, depth + 1);
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
                parse(&inner, out, depth + 1);
                st.in_word = true;
                st.word.push_str("$(…)");
                i = end;
            }
            '`' => {
                let (inner, end) = until(&chars, i + 1, '`');
                parse(&inner, out, depth + 1);
                st.in_word = true;
                i = end;
            }
            '#' if !st.in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            ';' | '&' | '|' | '\n' | '(' | ')' | '{' | '}'
                if !st.in_word || c != '{' && c != '}' =>
            {
                // `{`/`}` only separate when they stand alone (group braces), not in `${HOME}`.
                st.end_command(out);
                if c == '\n' && !st.heredocs.is_empty() {
                    // The lines after a here-doc's command are its text, not commands.
                    for (delim, strip_tabs) in std::mem::take(&mut st.heredocs) {
                        i = skip_heredoc(&chars, i, &delim, strip_tabs);
                    }
                }
            }
            '<' if chars.get(i + 1) == Some(&'<') && chars.get(i + 2) != Some(&'<') => {
                st.end_word();
                i += 2;
                let strip_tabs = chars.get(i) == Some(&'-');
                if strip_tabs {
                    i += 1;
                }
                let (delim, end) = heredoc_delimiter(&chars, i);
                st.heredocs.push((delim, strip_tabs));
                i = end;
                continue;
            }
            '>' | '<' => {
                st.end_word();
                // `2>`, `&>`, `>>`, `>|`: the next word is a redirection target.
                if let Some(last) = st.cmd.words.last() {
                    if last.chars().all(|d| d.is_ascii_digit()) && !last.is_empty() {
                        st.cmd.words.pop();
                    }
                }
                while matches!(
                    chars.get(i + 1),
                    Some('>') | Some('<') | Some('|') | Some('&')
                ) {
                    i += 1;
                }
                st.next = if c == '>' {
                    Next::OutTarget
                } else {
                    Next::Skip
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
}

/// The delimiter word of a here-doc starting at `start` (quotes removed), and the index just
/// after it.
fn heredoc_delimiter(chars: &[char], start: usize) -> (String, usize) {
    let mut i = start;
    while matches!(chars.get(i), Some(' ') | Some('\t')) {
        i += 1;
    }
    let mut delim = String::new();
    while let Some(&c) = chars.get(i) {
        match c {
            '\'' | '"' => {}
            '\\' => {
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
    (delim, i)
}

/// From the newline at `nl`, skips the here-doc's lines through the one that is exactly
/// `delim`; returns the index of the newline ending that line (or the end).
fn skip_heredoc(chars: &[char], nl: usize, delim: &str, strip_tabs: bool) -> usize {
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
            return end;
        }
        start = end + 1;
    }
    chars.len()
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
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Vec<String>> {
        commands(line).into_iter().map(|c| c.words).collect()
    }

    #[test]
    fn splits_on_operators_and_keeps_quoted_words_whole() {
        assert_eq!(
            words(r#"cd x && echo "a; b" | grep 'c d'; ls"#),
            vec![
                vec!["cd", "x"],
                vec!["echo", "a; b"],
                vec!["grep", "c d"],
                vec!["ls"]
            ]
        );
    }

    #[test]
    fn finds_substitutions_and_redirects() {
        let cmds = commands("echo \"$(sudo id)\" > /dev/sda 2>&1");
        assert_eq!(cmds[0].words, vec!["sudo", "id"]);
        assert_eq!(cmds[1].words, vec!["echo", "$(…)"]);
        assert_eq!(cmds[1].redirects, vec!["/dev/sda"]);
        assert_eq!(words("x=`reboot`"), vec![vec!["reboot"], vec!["x="]]);
    }

    #[test]
    fn braces_in_words_and_groups() {
        assert_eq!(words("{ echo ${HOME}; }"), vec![vec!["echo", "${HOME}"]]);
    }

    #[test]
    fn heredoc_bodies_and_continuations() {
        assert_eq!(
            words("cat > setup.sh <<'EOF'\nsudo apt-get install foo\nEOF\nls"),
            vec![vec!["cat"], vec!["ls"]]
        );
        assert_eq!(
            words("cat <<-END | sh\n\tsudo x\n\tEND\necho ok"),
            vec![vec!["cat"], vec!["sh"], vec!["echo", "ok"]]
        );
        assert_eq!(
            words("cd x && \\\n  sudo make install"),
            vec![vec!["cd", "x"], vec!["sudo", "make", "install"]]
        );
        assert_eq!(words("grep x < in.txt"), vec![vec!["grep", "x"]]);
        assert_eq!(words("cat <<< reboot"), vec![vec!["cat"]]);
    }

    #[test]
    fn comments_are_ignored() {
        assert_eq!(words("ls # sudo reboot"), vec![vec!["ls"]]);
    }
}
