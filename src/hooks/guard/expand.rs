//! What the shell makes of a command's words when the line itself tells their values: a loop
//! over literal words (`for i in /`), a variable set to a literal (`d=/`), the positional
//! parameters `set --` gives (`"$@"`), a default (`${HOME:-/}`), a substitution echoing a
//! literal (`$(echo /)`), and brace expansion (`{/,}`).
//!
//! The guard does not follow the shell's control flow, so a name gets every value the line
//! gives it anywhere, and a word with a default may be either side: each combination is a
//! variant of the command that may run, and each is checked. What the line does not tell
//! (`$TMPDIR`, `$(cat list)`) stays as written, which the checks read as an unknown place.

use std::collections::HashMap;

use super::program;
use super::scripts::{output_of, Script};
use super::MAX_PIPE_HOPS;
use crate::hooks::shell_words::{SimpleCommand, PROCESS_SUBSTITUTION, SUBSTITUTION};

/// Variants of one command checked at most: past this the rest pass unseen (the sandbox's).
const MAX_VARIANTS: usize = 64;
/// Values followed inside values (`a=$b`, `b=/`), so a loop `a=$a/x` ends.
const MAX_DEPTH: usize = 4;
/// Values kept per name, and lists of positional parameters kept.
const MAX_VALUES: usize = 32;

/// Shell keywords that may stand before a command's assignments (`do x=/`).
const KEYWORDS: &[&str] = &[
    "do", "then", "else", "elif", "if", "while", "until", "!", "{",
];

/// Every value the line gives each name, as written (expanded when used), and every list the
/// positional parameters are set to.
#[derive(Debug, Default)]
pub(super) struct Bindings {
    vars: HashMap<String, Vec<String>>,
    positional: Vec<Vec<String>>,
}

impl Bindings {
    /// What the commands of a script set, wherever they stand in it.
    pub(super) fn collect(all: &[SimpleCommand]) -> Bindings {
        let mut b = Bindings::default();
        for c in all {
            b.read(&c.words);
        }
        b
    }

    fn is_empty(&self) -> bool {
        self.vars.is_empty() && self.positional.is_empty()
    }

    fn bind(&mut self, name: &str, value: &str) {
        let values = self.vars.entry(name.to_string()).or_default();
        if values.len() < MAX_VALUES && !values.iter().any(|v| v == value) {
            values.push(value.to_string());
        }
    }

    fn set_positional(&mut self, words: Vec<String>) {
        if self.positional.len() < MAX_VALUES && !self.positional.contains(&words) {
            self.positional.push(words);
        }
    }

    fn read(&mut self, words: &[String]) {
        let start = words
            .iter()
            .position(|w| !KEYWORDS.contains(&w.as_str()))
            .unwrap_or(words.len());
        let words = &words[start..];
        match words.first().map(String::as_str) {
            // `for NAME in WORDS`; `for NAME` alone loops over "$@".
            Some("for" | "select") => {
                let Some(name) = words.get(1).filter(|n| is_name(n)) else {
                    return;
                };
                match words.get(2).map(String::as_str) {
                    // The loop's words are brace-expanded once, each a value of its own.
                    Some("in") => words[3..]
                        .iter()
                        .flat_map(|w| braces(w))
                        .for_each(|w| self.bind(name, &w)),
                    None | Some("do") => self.bind(name, "$@"),
                    _ => {}
                }
                return;
            }
            Some("export" | "local" | "declare" | "typeset" | "readonly") => {
                for w in &words[1..] {
                    self.assignment(w);
                }
                return;
            }
            _ => {}
        }
        // `NAME=value` before a command or alone: either way the value may be seen.
        for w in words {
            if !self.assignment(w) {
                break;
            }
        }
        match program(words) {
            Some(("set", args)) => self.set(&args),
            Some(("shift", args)) => {
                let n = args.first().and_then(|a| a.parse().ok()).unwrap_or(1);
                let shifted: Vec<Vec<String>> = self
                    .positional
                    .iter()
                    .map(|p| p.iter().skip(n).cloned().collect())
                    .collect();
                shifted.into_iter().for_each(|p| self.set_positional(p));
            }
            _ => {}
        }
    }

    /// Binds `w` when it is `NAME=value`.
    fn assignment(&mut self, w: &str) -> bool {
        match w.split_once('=') {
            Some((name, value)) if is_name(name) => {
                self.bind(name, value);
                true
            }
            _ => false,
        }
    }

    /// `set -- WORDS`, `set WORDS`: the positional parameters; `set -e` sets none.
    fn set(&mut self, args: &[&str]) {
        let mut it = args.iter().enumerate();
        while let Some((i, a)) = it.next() {
            if *a == "--" {
                let rest = args[i + 1..].iter().map(|w| w.to_string()).collect();
                return self.set_positional(rest);
            }
            if *a == "-o" || *a == "+o" {
                it.next();
            } else if !(a.starts_with('-') || a.starts_with('+')) {
                let rest = args[i..].iter().map(|w| w.to_string()).collect();
                return self.set_positional(rest);
            }
        }
    }
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// One word's possible expansions, each a list of words (`$@` and a split output give more
/// than one).
type Alts = Vec<Vec<String>>;

/// Every way to join an expansion of `a` with one of `b` (the last word of one runs into the
/// first of the other), at most [`MAX_VARIANTS`].
fn join(a: &Alts, b: &Alts) -> Alts {
    let mut out = Vec::new();
    for x in a {
        for y in b {
            if out.len() == MAX_VARIANTS {
                return out;
            }
            let mut words = x.clone();
            let mut rest = y.iter();
            match (words.last_mut(), rest.next()) {
                (Some(last), Some(first)) => last.push_str(first),
                (None, Some(first)) => words.push(first.clone()),
                _ => {}
            }
            words.extend(rest.cloned());
            out.push(words);
        }
    }
    out
}

fn literal(s: &str) -> Alts {
    vec![vec![s.to_string()]]
}

/// What one command's words expand to.
struct Expander<'a> {
    b: &'a Bindings,
    /// Per substitution of the command (in order), what it prints where the line tells.
    printed: Vec<Option<String>>,
}

impl Expander<'_> {
    /// The expansions of `word`, whose first substitution is the command's `k`-th; moves `k`
    /// past its substitutions.
    fn word(&self, word: &str, k: &mut usize, depth: usize) -> Alts {
        let mut acc = literal("");
        let mut rest = word;
        while !rest.is_empty() {
            let (piece, len) = self.piece(rest, k, depth);
            acc = join(&acc, &piece);
            rest = &rest[len..];
        }
        acc
    }

    /// The expansions of what starts `s`, and how many bytes of `s` it takes.
    fn piece(&self, s: &str, k: &mut usize, depth: usize) -> (Alts, usize) {
        if s.starts_with(SUBSTITUTION) {
            let at = *k;
            *k = k.saturating_add(1);
            let alts = match self.printed.get(at).cloned().flatten() {
                // Unquoted, the shell splits what it prints into words.
                Some(text) => vec![text.split_whitespace().map(str::to_string).collect()],
                None => literal(SUBSTITUTION),
            };
            return (alts, SUBSTITUTION.len());
        }
        if s.starts_with(PROCESS_SUBSTITUTION) {
            *k = k.saturating_add(1);
            return (literal(PROCESS_SUBSTITUTION), PROCESS_SUBSTITUTION.len());
        }
        let Some(after) = s.strip_prefix('$') else {
            let len = s.chars().next().map_or(1, char::len_utf8);
            return (literal(&s[..len]), len);
        };
        if let Some(inner) = after.strip_prefix('{') {
            let Some(end) = closing_brace(inner) else {
                return (literal(s), s.len());
            };
            let len = 2 + end + 1;
            return (self.braced(&inner[..end], &s[..len], k, depth), len);
        }
        let name_len = match after.chars().next() {
            Some('@' | '*') => 1,
            Some(c) if c.is_ascii_digit() => 1,
            _ => after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len()),
        };
        if name_len == 0 {
            return (literal("$"), 1);
        }
        let name = &after[..name_len];
        let len = 1 + name_len;
        (
            self.value(name, depth)
                .unwrap_or_else(|| literal(&s[..len])),
            len,
        )
    }

    /// `${…}`: a name, or a name with a default or an alternative; `whole` as written.
    fn braced(&self, inner: &str, whole: &str, k: &mut usize, depth: usize) -> Alts {
        let name_len = inner
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '@' || c == '*'))
            .unwrap_or(inner.len());
        let (name, op) = inner.split_at(name_len);
        if name.is_empty() {
            return literal(whole);
        }
        let plain = || {
            self.value(name, depth)
                .unwrap_or_else(|| literal(&format!("${{{name}}}")))
        };
        // The word after the operator; its substitutions are the command's, in order.
        let mut other = |w: &str| {
            if depth == 0 {
                literal(w)
            } else {
                self.word(w, k, depth - 1)
            }
        };
        let union = |mut a: Alts, b: Alts| {
            a.extend(b);
            a.truncate(MAX_VARIANTS);
            a
        };
        for op_text in [":-", ":=", "-", "="] {
            if let Some(w) = op.strip_prefix(op_text) {
                // Set, the value; unset (or empty), the default: either may be.
                return union(plain(), other(w));
            }
        }
        for op_text in [":+", "+"] {
            if let Some(w) = op.strip_prefix(op_text) {
                return union(literal(""), other(w));
            }
        }
        if op.is_empty() || op.starts_with(":?") || op.starts_with('?') {
            return plain();
        }
        // `${X#p}`, `${X/a/b}`, `${#X}`: not worked out.
        literal(whole)
    }

    /// What the line sets `name` to, each value expanded; `None` when it sets nothing.
    fn value(&self, name: &str, depth: usize) -> Option<Alts> {
        if depth == 0 {
            return None;
        }
        let positional = |f: &dyn Fn(&Vec<String>) -> Vec<String>| -> Option<Alts> {
            (!self.b.positional.is_empty())
                .then(|| self.b.positional.iter().map(f).collect::<Vec<_>>())
                .map(|lists| {
                    lists
                        .into_iter()
                        .flat_map(|words| self.words(&words, depth - 1))
                        .take(MAX_VARIANTS)
                        .collect()
                })
        };
        match name {
            "@" | "*" => positional(&|p| p.clone()),
            n if n.chars().all(|c| c.is_ascii_digit()) => {
                let i: usize = n.parse().ok()?;
                let i = i.checked_sub(1)?;
                positional(&|p| p.get(i).cloned().into_iter().collect())
            }
            n => {
                let values = self.b.vars.get(n)?;
                let mut out = Alts::new();
                for v in values {
                    let mut k = usize::MAX;
                    out.extend(self.word(v, &mut k, depth - 1));
                    out.truncate(MAX_VARIANTS);
                }
                Some(out)
            }
        }
    }

    /// Each way a list of words (as written) expands.
    fn words(&self, words: &[String], depth: usize) -> Alts {
        let mut acc: Alts = vec![Vec::new()];
        for w in words {
            let mut k = usize::MAX;
            let alts = self.word(w, &mut k, depth);
            acc = product(&acc, &alts);
        }
        acc
    }
}

/// Each list of `a` followed by each of `b`, as separate words.
fn product(a: &Alts, b: &Alts) -> Alts {
    let mut out = Vec::new();
    for x in a {
        for y in b {
            if out.len() == MAX_VARIANTS {
                return out;
            }
            out.push(x.iter().chain(y).cloned().collect());
        }
    }
    out
}

/// The index in `s` of the `}` closing a `${` just before it.
fn closing_brace(s: &str) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(i),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The commands `cmd` may run once the shell has expanded its words, other than `cmd` as
/// written: none when its words expand to nothing the line tells.
pub(super) fn variants(
    cmd: &SimpleCommand,
    all: &[SimpleCommand],
    b: &Bindings,
) -> Vec<SimpleCommand> {
    let printed: Vec<Option<String>> = cmd
        .substitutions
        .iter()
        .map(|r| {
            let last = all.get(r.clone())?.last()?;
            match output_of(last, all, MAX_PIPE_HOPS) {
                Script::Text(t) => Some(t),
                _ => None,
            }
        })
        .collect();
    let expands = |w: &String| {
        w.contains('{') || (w.contains(SUBSTITUTION) && printed.iter().any(Option::is_some))
    };
    if b.is_empty() && !cmd.words.iter().any(expands) {
        return Vec::new();
    }
    let x = Expander { b, printed };
    let mut acc: Alts = vec![Vec::new()];
    let mut k = 0;
    for w in &cmd.words {
        let alts: Alts = x
            .word(w, &mut k, MAX_DEPTH)
            .into_iter()
            .map(|words| braces_all(&words))
            .take(MAX_VARIANTS)
            .collect();
        acc = product(&acc, &alts);
    }
    // A substitution whose output took its place is gone from the words, and from the list.
    let substitutions: Vec<_> = cmd
        .substitutions
        .iter()
        .zip(&x.printed)
        .filter(|(_, p)| p.is_none())
        .map(|(r, _)| r.clone())
        .collect();
    acc.into_iter()
        .map(|words| words.into_iter().filter(|w| !w.is_empty()).collect())
        .filter(|words: &Vec<String>| *words != cmd.words)
        .map(|words| SimpleCommand {
            words,
            substitutions: substitutions.clone(),
            ..cmd.clone()
        })
        .collect()
}

/// A list of words with every word brace-expanded: one word may become several.
fn braces_all(words: &[String]) -> Vec<String> {
    words.iter().flat_map(|w| braces(w)).collect()
}

/// Brace expansion of one word: `{a,b}` and `{1..3}`; a `${` is not one, nor `{}`.
pub(super) fn braces(word: &str) -> Vec<String> {
    let mut out = Vec::new();
    expand_braces(word, &mut out);
    out
}

fn expand_braces(word: &str, out: &mut Vec<String>) {
    if out.len() >= MAX_VARIANTS {
        return;
    }
    let bytes = word.as_bytes();
    for (open, _) in word.match_indices('{') {
        if open > 0 && bytes[open - 1] == b'$' {
            continue;
        }
        let inner = &word[open + 1..];
        let Some(end) = closing_brace(inner) else {
            continue;
        };
        let body = &inner[..end];
        let (prefix, suffix) = (&word[..open], &inner[end + 1..]);
        let parts = alternatives(body);
        if parts.len() < 2 {
            continue;
        }
        for p in parts {
            expand_braces(&format!("{prefix}{p}{suffix}"), out);
        }
        return;
    }
    if out.len() < MAX_VARIANTS {
        out.push(word.to_string());
    }
}

/// The alternatives of a brace's body: split at its top-level commas, or a sequence
/// (`1..3`, `a..c`); fewer than two when it is none.
fn alternatives(body: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(body[start..i].to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !parts.is_empty() {
        parts.push(body[start..].to_string());
        return parts;
    }
    let Some((a, b)) = body.split_once("..") else {
        return parts;
    };
    if let (Ok(a), Ok(b)) = (a.parse::<i64>(), b.parse::<i64>()) {
        let (lo, hi) = (a.min(b), a.max(b));
        return (lo..=hi)
            .take(MAX_VARIANTS)
            .map(|n| n.to_string())
            .collect();
    }
    let (mut a, mut b) = (a.chars(), b.chars());
    match (a.next(), a.next(), b.next(), b.next()) {
        (Some(x), None, Some(y), None) if x.is_ascii_alphabetic() && y.is_ascii_alphabetic() => {
            (x.min(y)..=x.max(y)).map(String::from).collect()
        }
        _ => parts,
    }
}
