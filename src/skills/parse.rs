//! Splitting a SKILL.md into frontmatter and body, and parsing the frontmatter as YAML.
//!
//! The frontmatter is real YAML (serde-saphyr), read into a map of key → [`Yaml`] so keys this
//! code does not know (`license`, `metadata`, ...) never make parsing fail. Files written for
//! other agents often hold `description: Use when: ...`, which strict YAML rejects; such
//! top-level lines are retried as quoted strings before the file is given up on.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::text::collapse_whitespace;

/// A YAML value from the frontmatter. Only what SKILL.md needs: scalars keep their kind so
/// `name: 2024` can be read back as text, collections are kept for validation.
#[derive(Debug, Clone, PartialEq)]
pub enum Yaml {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    String(String),
    Seq(Vec<Yaml>),
    Map(Vec<(Yaml, Yaml)>),
}

impl Yaml {
    /// The value as text when it is a scalar (numbers and booleans are written back the way
    /// YAML reads them); `None` for null and collections.
    pub fn as_text(&self) -> Option<String> {
        match self {
            Yaml::String(s) => Some(s.clone()),
            Yaml::Int(i) => Some(i.to_string()),
            Yaml::Float(f) => Some(f.to_string()),
            Yaml::Bool(b) => Some(b.to_string()),
            Yaml::Null | Yaml::Seq(_) | Yaml::Map(_) => None,
        }
    }

    /// A short word for messages ("a list", "a mapping", ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Yaml::Null => "null",
            Yaml::Bool(_) => "a boolean",
            Yaml::Int(_) | Yaml::Float(_) => "a number",
            Yaml::String(_) => "a string",
            Yaml::Seq(_) => "a list",
            Yaml::Map(_) => "a mapping",
        }
    }
}

struct YamlVisitor;

impl<'de> Visitor<'de> for YamlVisitor {
    type Value = Yaml;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_unit<E>(self) -> Result<Yaml, E> {
        Ok(Yaml::Null)
    }
    fn visit_none<E>(self) -> Result<Yaml, E> {
        Ok(Yaml::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Yaml, D::Error> {
        Yaml::deserialize(d)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Yaml, E> {
        Ok(Yaml::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Yaml, E> {
        Ok(Yaml::Int(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Yaml, E> {
        Ok(Yaml::Int(v.into()))
    }
    fn visit_i128<E>(self, v: i128) -> Result<Yaml, E> {
        Ok(Yaml::Int(v))
    }
    fn visit_u128<E: serde::de::Error>(self, v: u128) -> Result<Yaml, E> {
        Ok(i128::try_from(v).map_or_else(|_| Yaml::String(v.to_string()), Yaml::Int))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Yaml, E> {
        Ok(Yaml::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Yaml, E> {
        Ok(Yaml::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Yaml, E> {
        Ok(Yaml::String(v))
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<Yaml, E> {
        Ok(Yaml::String(String::from_utf8_lossy(v).into_owned()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Yaml, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element()? {
            out.push(v);
        }
        Ok(Yaml::Seq(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Yaml, A::Error> {
        let mut out = Vec::new();
        while let Some((k, v)) = map.next_entry()? {
            out.push((k, v));
        }
        Ok(Yaml::Map(out))
    }
}

impl<'de> Deserialize<'de> for Yaml {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(YamlVisitor)
    }
}

/// Parsed frontmatter: top-level keys in name order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Frontmatter {
    pub fields: BTreeMap<String, Yaml>,
    /// True when strict YAML failed and the `key: value: more` rewrite was needed.
    pub recovered: bool,
}

/// The text without a leading UTF-8 byte order mark.
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Whether a line is the `---` fence; tolerates its line end (LF or CRLF) and trailing blanks.
pub fn is_fence(line: &[u8]) -> bool {
    let mut end = line.len();
    while end > 0 && matches!(line[end - 1], b'\n' | b'\r' | b' ' | b'\t') {
        end -= 1;
    }
    &line[..end] == b"---"
}

/// Splits a whole SKILL.md (BOM already stripped or not) into frontmatter text and the
/// trimmed body. `None` when the first line is not `---` or no closing `---` follows.
pub fn split_frontmatter(text: &str) -> Option<(&str, &str)> {
    let text = strip_bom(text);
    let (first, mut rest) = text.split_once('\n')?;
    if !is_fence(first.as_bytes()) {
        return None;
    }
    let start = text.len() - rest.len();
    loop {
        let (line, after) = match rest.split_once('\n') {
            Some((l, a)) => (l, Some(a)),
            None => (rest, None),
        };
        if is_fence(line.as_bytes()) {
            let fm_end = text.len() - rest.len();
            let body = after.unwrap_or("");
            return Some((&text[start..fm_end], body.trim()));
        }
        rest = after?;
    }
}

/// Why frontmatter could not be read, as one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Parses frontmatter text: strict YAML first, then the quoted-line rewrite.
pub fn parse_frontmatter(yaml: &str) -> Result<Frontmatter, ParseError> {
    let yaml = yaml.replace("\r\n", "\n");
    match parse_strict(&yaml) {
        Ok(fields) => Ok(Frontmatter {
            fields,
            recovered: false,
        }),
        Err(first) => {
            let rewritten = quote_colon_lines(&yaml);
            if rewritten == yaml {
                return Err(first);
            }
            // The original error is the one worth showing: the rewrite is only a guess.
            parse_strict(&rewritten)
                .map(|fields| Frontmatter {
                    fields,
                    recovered: true,
                })
                .map_err(|_| first)
        }
    }
}

fn parse_strict(yaml: &str) -> Result<BTreeMap<String, Yaml>, ParseError> {
    let mut options = serde_saphyr::Options::default();
    // One-line messages: warnings go to stderr as single lines.
    options.with_snippet = false;
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::LastWins;
    let value: Yaml = serde_saphyr::from_str_with_options(yaml, options)
        .map_err(|e| ParseError(collapse_whitespace(&e.to_string())))?;
    match value {
        Yaml::Null => Ok(BTreeMap::new()),
        Yaml::Map(entries) => {
            let mut fields = BTreeMap::new();
            for (k, v) in entries {
                let Some(key) = k.as_text() else {
                    return Err(ParseError(format!("a key is {}, not text", k.kind())));
                };
                fields.insert(key, v);
            }
            Ok(fields)
        }
        other => Err(ParseError(format!(
            "frontmatter is {}, not a mapping of keys",
            other.kind()
        ))),
    }
}

/// Rewrites top-level `key: value: more` lines as `key: "value: more"`, the common way
/// hand-written frontmatter breaks strict YAML, and `key: [a] [b]` lines (a list with words
/// after it) as `key: "[a] [b]"`. Other values that start YAML syntax (quotes, block scalars,
/// flow collections, anchors, tags) are left alone. A trailing
/// ` #comment` stays out of the quotes, and more-indented lines after such a line (a value
/// wrapped by hand) are folded into it with single spaces, as YAML folds a plain value.
fn quote_colon_lines(yaml: &str) -> String {
    let mut out = String::with_capacity(yaml.len() + 16);
    let mut lines = yaml.split('\n').peekable();
    while let Some(line) = lines.next() {
        let Some((key, mut value)) = colon_value(line) else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        // A blank line or a comment line ends a plain value; anything unindented is the next
        // key.
        while let Some(next) = lines.peek() {
            let text = next.trim();
            if !next.starts_with([' ', '\t']) || text.is_empty() || text.starts_with('#') {
                break;
            }
            value.push(' ');
            value.push_str(strip_comment(text));
            lines.next();
        }
        out.push_str(key);
        out.push_str(": \"");
        for c in value.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push_str("\"\n");
    }
    out.pop();
    out
}

/// The key and the comment-free value of a top-level `key: value: more` or `key: [a] [b]`
/// line, which strict YAML rejects; `None` for any other line.
fn colon_value(line: &str) -> Option<(&str, String)> {
    let (key, value) = line.split_once(':')?;
    let key_ok = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !key_ok || !value.starts_with([' ', '\t']) {
        return None;
    }
    let value = value.trim();
    if value.starts_with('[') {
        let value = strip_comment(value);
        return words_after_a_list(value).then(|| (key, value.to_string()));
    }
    let starts_syntax = value.starts_with(['"', '\'', '|', '>', '{', '&', '*', '!', '#']);
    if starts_syntax {
        return None;
    }
    let value = strip_comment(value);
    if value.is_empty() || !(value.contains(": ") || value.ends_with(':')) {
        return None;
    }
    Some((key, value.to_string()))
}

/// Whether `value` is `[a] [b]`-like: a flow list closed before more text, as Claude Code's
/// `argument-hint: [remote] [branch]` is written (strict YAML rejects it; it means the text).
fn words_after_a_list(value: &str) -> bool {
    let mut depth = 0usize;
    for (i, c) in value.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return !value[i + 1..].trim().is_empty();
                }
            }
            _ => {}
        }
    }
    false
}

/// Text (already trimmed) without a trailing YAML comment: a `#` after a space or tab starts
/// one, while a `#` inside a word (`C#`) does not.
fn strip_comment(text: &str) -> &str {
    let bytes = text.as_bytes();
    (1..bytes.len())
        .find(|&i| bytes[i] == b'#' && matches!(bytes[i - 1], b' ' | b'\t'))
        .map_or(text, |i| text[..i].trim_end())
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
