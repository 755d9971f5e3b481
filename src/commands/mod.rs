//! Prompt commands a user invokes by name: the `.claude/commands/*.md` and
//! `.agents/commands/*.md` files of Claude Code's format, found with the skills' root rules
//! (the project's, then the user's; a project's folder or file that links out of it does not
//! count), a subfolder's file named `dir:name`.
//!
//! Discovery reads only the head of each file (the frontmatter, and the first line of the
//! body when there is no `description`), on a few threads, so a chat's start and its Tab
//! completion stay cheap; the body is read when the command runs. A body's `$ARGUMENTS` and
//! `$1`…`$9` are the user's words ([`substitute`]); its `` !`cmd` `` spans ([`shell_spans`])
//! are run by the front end (`app::invoke`) only when the user wrote the file or `hx trust`
//! approved what the project's folder runs ([`TRUST_CLAUDE`], [`TRUST_AGENTS`]).
//!
//! The files are written for Claude Code, so reading them is as forgiving as the agent files':
//! the same frontmatter reading ([`crate::agents::lenient_frontmatter`]), the same mapping of
//! tool names and models, a field hx cannot use a note rather than an error.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::agents::{lenient_frontmatter, model_of, tools_for, For};
use crate::skills::discover::{
    argument_hint_of, roots_of, Roots, SkillRoot, Skipped, MAX_NAME_CHARS,
};
use crate::skills::parse::{is_fence, split_frontmatter, strip_bom, Yaml};
use crate::skills::{Source, MAX_DESCRIPTION_CHARS};
use crate::text::{collapse_whitespace, cut};

pub mod trust;

pub use trust::{TRUST_AGENTS, TRUST_CLAUDE};

/// Largest command file read (frontmatter and body), as for agent files: the body becomes a
/// message.
pub use crate::agents::{MAX_FILES, MAX_FILE_BYTES};
/// What discovery reads of a file at first: a command's frontmatter is a few lines, so most
/// files are read in one call; a longer head is read on up to the frontmatter limit.
const FIRST_READ_BYTES: usize = 4 * 1024;
pub use crate::skills::discover::MAX_HINT_CHARS;
/// Longest description made from a body's first line when the frontmatter has none.
const MAX_FIRST_LINE_CHARS: usize = 120;
/// Most `` !`cmd` `` spans of one body that are run; past these the text stays as it is.
pub const MAX_SHELL_SPANS: usize = 16;

/// One command, as discovered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Command {
    /// `name`, or `dir:name` for `dir/name.md`.
    pub name: String,
    pub source: Source,
    pub path: PathBuf,
    /// The folder it was found in (`.claude/commands`, as reached).
    pub root: PathBuf,
    /// For a project's file, the real path of its root, in which the file must still lie
    /// when its body is read.
    #[serde(skip)]
    pub within: Option<PathBuf>,
    /// On one line; the body's first line when the frontmatter has none; may be empty.
    pub description: String,
    pub argument_hint: Option<String>,
    /// The model of the message it sends; `None` for the configured one.
    pub model: Option<String>,
    /// hx's names of the tools the message may use (`allowed-tools`, mapped); `None` for
    /// every tool.
    pub tools: Option<Vec<String>>,
    /// What was left out or read differently, one line each: said when it runs.
    pub notes: Vec<String>,
}

/// A command file that could not be read as a command.
pub use crate::agents::Broken;

/// The commands visible from a folder, and what discovery found wrong.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// By unique name, in name order.
    pub commands: Vec<Command>,
    pub broken: Vec<Broken>,
    /// Roots skipped, links not followed, bounds reached, names shadowed: one line each.
    pub warnings: Vec<String>,
}

impl Discovery {
    pub fn get(&self, name: &str) -> Option<&Command> {
        self.commands
            .binary_search_by(|c| c.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.commands[i])
    }

    /// What a run says about its command files at start: the discovery warnings, then one
    /// line for the files not read (`hx commands list` shows each). A command's own notes
    /// are said when it runs.
    pub fn run_warnings(&self) -> Vec<String> {
        let mut out = self.warnings.clone();
        out.extend(crate::agents::broken_line(
            &self.broken,
            "command",
            "hx commands list",
        ));
        out
    }
}

/// The roots command files are read from, highest precedence first: the project's
/// `.agents/commands` and `.claude/commands` (the project found as for skills, from these
/// folders), then `~/.agents/commands` and `~/.claude/commands`.
pub fn command_roots(cwd: &Path, home: Option<&Path>) -> Roots {
    roots_of(cwd, home, "commands")
}

/// Every command visible from `cwd`. Never fails: what cannot be used is a warning.
pub fn discover(cwd: &Path, home: Option<&Path>) -> Discovery {
    let roots = command_roots(cwd, home);
    let mut d = discover_roots(&roots.roots);
    let mut warnings: Vec<String> = roots.skipped.iter().map(Skipped::warning).collect();
    warnings.append(&mut d.warnings);
    d.warnings = warnings;
    d
}

/// The command `name` names as [`discover`] would find it, reading only its file in each
/// root (highest precedence first) rather than every file: what `hx agent "/NAME"` needs.
/// A discovery of that one command, a file of the same name in a later root said to be
/// shadowed; `None` when no root has a readable file of that name.
pub fn find(cwd: &Path, home: Option<&Path>, name: &str) -> Option<Discovery> {
    let parts: Vec<&str> = name.split(':').collect();
    // A name is never a path: each part one plain file or folder name.
    let plain =
        |p: &&str| !p.is_empty() && *p != "." && *p != ".." && !p.contains(['/', '\\', '\0']);
    if !parts.iter().all(plain) {
        return None;
    }
    let mut rel: PathBuf = parts.iter().collect();
    rel.set_extension("md");
    let roots = command_roots(cwd, home).roots;
    let in_root = |root: &SkillRoot| {
        let path = root.path.join(&rel);
        let real = path.canonicalize().ok()?;
        root.bound()
            .is_none_or(|b| real.starts_with(b))
            .then_some(path)
    };
    let (at, cmd) = roots.iter().enumerate().find_map(|(i, root)| {
        let path = in_root(root)?;
        read_command(&path, root).ok().map(|c| (i, c))
    })?;
    let warnings = roots[at + 1..]
        .iter()
        .filter_map(in_root)
        .map(|p| {
            format!(
                "command {} at {} is shadowed by {}",
                cmd.name,
                p.display(),
                cmd.path.display()
            )
        })
        .collect();
    Some(Discovery {
        commands: vec![cmd],
        broken: Vec::new(),
        warnings,
    })
}

/// A command's name from its path under `root`: `a/b.md` is `a:b`. `None` for a path
/// outside the root.
pub fn name_of(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?.with_extension("");
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    (!parts.is_empty()).then(|| parts.join(":"))
}

/// Discovers the commands in `roots`, earlier roots winning on equal names.
pub fn discover_roots(roots: &[SkillRoot]) -> Discovery {
    let mut d = Discovery::default();
    // The agent files' walk and bounds: the same kind of folder of Markdown files.
    let found = crate::agents::files_in(roots, "command", &mut d.warnings);
    let read = crate::skills::discover::read_in_parallel(&found, 64, |(path, root)| {
        read_command(path, root)
    });
    let mut by_name: BTreeMap<String, Command> = BTreeMap::new();
    for ((path, root), result) in found.into_iter().zip(read) {
        match result {
            Ok(cmd) => match by_name.get(&cmd.name) {
                Some(winner) => d.warnings.push(format!(
                    "command {} at {} is shadowed by {}",
                    cmd.name,
                    cmd.path.display(),
                    winner.path.display()
                )),
                None => {
                    by_name.insert(cmd.name.clone(), cmd);
                }
            },
            Err(reason) => d.broken.push(Broken {
                path,
                source: root.source,
                reason,
            }),
        }
    }
    d.commands = by_name.into_values().collect();
    d
}

/// Reads one command file's head into a command.
pub fn read_command(path: &Path, root: &SkillRoot) -> Result<Command, String> {
    let name = name_of(&root.path, path).ok_or("not under its commands folder")?;
    let file = crate::paths::open_regular(path).map_err(|e| format!("cannot read: {e}"))?;
    let size = file
        .metadata()
        .map_err(|e| format!("cannot read: {e}"))?
        .len();
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "the file is {} KiB, more than {} KiB",
            size / 1024,
            MAX_FILE_BYTES / 1024
        ));
    }
    let head = read_head(file)?;
    let mut cmd = command_from(&name, path, &head, root.source)?;
    cmd.root = root.path.clone();
    cmd.within = root.bound().map(Path::to_path_buf);
    Ok(cmd)
}

/// What discovery reads of a file: its frontmatter text (`None` when the file has none, which
/// a command may lack) and the first line of its body that is not blank.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Head {
    pub frontmatter: Option<String>,
    pub first_line: Option<String>,
}

/// Reads a file's head: a first read of [`FIRST_READ_BYTES`], more only while the
/// frontmatter has not closed, never past the skills' frontmatter limit.
pub fn read_head(source: impl Read) -> Result<Head, String> {
    let limit = crate::skills::discover::MAX_FRONTMATTER_BYTES;
    let mut source = source;
    let mut buf = Vec::with_capacity(FIRST_READ_BYTES);
    let mut want = FIRST_READ_BYTES as u64;
    loop {
        let room = want - buf.len() as u64;
        (&mut source)
            .take(room)
            .read_to_end(&mut buf)
            .map_err(|e| format!("cannot read: {e}"))?;
        // Less than asked for: the file ended.
        let ended = (buf.len() as u64) < want;
        let text = valid_prefix(&buf);
        let complete = head_complete(text);
        if ended || complete || want >= limit {
            return head_of(text, ended || complete);
        }
        want = (want * 4).min(limit);
    }
}

/// The longest prefix of `bytes` that is UTF-8 text: a read may stop mid-character, and
/// what follows the head is not discovery's to judge (a frontmatter that is not UTF-8 finds
/// no closing fence, and says so).
fn valid_prefix(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(),
    }
}

/// Whether `text` holds a whole head: no frontmatter and a first line, or a closed
/// frontmatter followed by a whole line.
fn head_complete(text: &str) -> bool {
    let text = strip_bom(text);
    let starts_fenced = text
        .split_once('\n')
        .is_some_and(|(first, _)| is_fence(first.as_bytes()));
    if !starts_fenced {
        return text.contains('\n');
    }
    split_frontmatter(text).is_some_and(|(_, body)| body.is_empty() || body.contains('\n'))
}

/// The head of `text` (the start of a file); `whole` says the text is the whole file or
/// holds its whole head.
fn head_of(text: &str, whole: bool) -> Result<Head, String> {
    let text = strip_bom(text);
    let first_fenced = text
        .split_once('\n')
        .map_or(is_fence(text.as_bytes()), |(first, _)| {
            is_fence(first.as_bytes())
        });
    let (frontmatter, body) = if first_fenced {
        match split_frontmatter(text) {
            Some((fm, body)) => (Some(fm.to_string()), body),
            None if whole => return Err("frontmatter has no closing ---".into()),
            None => {
                return Err(format!(
                    "frontmatter is longer than {} KiB",
                    crate::skills::discover::MAX_FRONTMATTER_BYTES / 1024
                ))
            }
        }
    } else {
        (None, text)
    };
    let first_line = body
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .map(|l| cut(&collapse_whitespace(l), MAX_FIRST_LINE_CHARS));
    Ok(Head {
        frontmatter,
        first_line,
    })
}

/// The command in a file's head.
pub fn command_from(
    name: &str,
    path: &Path,
    head: &Head,
    source: Source,
) -> Result<Command, String> {
    if name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("its name (from the file name) contains spaces or control characters".into());
    }
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        return Err(format!(
            "its name is {chars} characters, more than {MAX_NAME_CHARS}"
        ));
    }
    let mut notes = Vec::new();
    let fields = match &head.frontmatter {
        Some(text) if !text.trim().is_empty() => lenient_frontmatter(text, &mut notes)?.fields,
        _ => BTreeMap::new(),
    };
    let text_field = |key: &str, notes: &mut Vec<String>| match fields.get(key) {
        None | Some(Yaml::Null) => None,
        Some(v) => match v.as_text() {
            Some(s) if s.trim().is_empty() => None,
            Some(s) => Some(collapse_whitespace(&s)),
            None => {
                notes.push(format!("{key} is {}, not text; left out", v.kind()));
                None
            }
        },
    };
    let description = text_field("description", &mut notes)
        .or_else(|| head.first_line.clone())
        .map(|d| cut(&d, MAX_DESCRIPTION_CHARS))
        .unwrap_or_default();
    let argument_hint = argument_hint_of(&fields).unwrap_or_else(|note| {
        notes.push(note);
        None
    });
    let model = text_field("model", &mut notes).and_then(|m| model_of(m.trim(), &mut notes));
    let tools = match fields.get("allowed-tools") {
        None | Some(Yaml::Null) => None,
        Some(v) => tools_for(v, For::Message, &mut notes),
    };
    Ok(Command {
        name: name.to_string(),
        source,
        path: path.to_path_buf(),
        root: PathBuf::new(),
        within: None,
        description,
        argument_hint,
        model,
        tools,
        notes,
    })
}

/// The body of a command's file, read when it runs (as an agent file's is: bounded, and for
/// a project's still in its root), without its frontmatter.
pub fn read_body(cmd: &Command) -> Result<String, String> {
    let text = crate::agents::read_within(&cmd.path, cmd.within.as_deref())?;
    Ok(body_of(&text).to_string())
}

/// A command file's text without its frontmatter (a file may have none), trimmed.
pub fn body_of(text: &str) -> &str {
    let text = strip_bom(text);
    match split_frontmatter(text) {
        Some((_, body)) => body,
        None => text.trim(),
    }
}

/// The body with the user's words put in: `$ARGUMENTS` is all of them as typed, `$1`…`$9`
/// each word (a quoted group is one word; one missing is empty). A body that names none of
/// them gets the words after it, as Claude Code does, so they are never lost.
pub fn substitute(body: &str, args: &str) -> String {
    expand(body, &[], &[], args)
}

/// [`substitute`] around the body's `` !`cmd` `` spans: `spans[i]` becomes `outputs[i]` when
/// there is one (the span as written otherwise), and the user's words are never put into a
/// command, nor into what a command printed.
pub fn expand(body: &str, spans: &[ShellSpan], outputs: &[String], args: &str) -> String {
    let args = args.trim();
    let words = split_words(args);
    let mut out = String::with_capacity(body.len() + args.len());
    let mut used = false;
    let mut at = 0;
    for (i, span) in spans.iter().enumerate() {
        put_words(&body[at..span.start], args, &words, &mut used, &mut out);
        out.push_str(
            outputs
                .get(i)
                .map_or(&body[span.start..span.end], String::as_str),
        );
        at = span.end;
    }
    put_words(&body[at..], args, &words, &mut used, &mut out);
    if !used && !args.is_empty() {
        out.push_str("\n\nARGUMENTS: ");
        out.push_str(args);
    }
    out
}

fn put_words(text: &str, args: &str, words: &[String], used: &mut bool, out: &mut String) {
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(args);
            *used = true;
            rest = tail;
            continue;
        }
        let mut chars = after.chars();
        match (chars.next(), chars.next()) {
            // `$10` is not `$1` then `0`: left as it is.
            (Some(d @ '1'..='9'), next) if !next.is_some_and(|c| c.is_ascii_digit()) => {
                let n = (d as usize) - ('1' as usize);
                out.push_str(words.get(n).map_or("", String::as_str));
                *used = true;
                rest = &after[1..];
            }
            _ => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
}

/// Words as a shell would split them for `$1`…`$9`, only simpler: whitespace separates, and
/// double or single quotes group (no escapes, no expansion). Written here rather than taken
/// from `hooks::shell_words`, which sits in the same layer and parses whole command lines.
pub fn split_words(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in args.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                started = true;
            }
            None if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            None => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push(word);
    }
    out
}

/// One `` !`cmd` `` of a body: where it stands and what it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellSpan {
    /// Byte range of the whole span (`!`, both backticks) in the text.
    pub start: usize,
    pub end: usize,
    pub command: String,
}

/// The `` !`cmd` `` spans of a text, as Claude Code finds them: `!` right before a backtick,
/// a command without backticks on one line, the closing backtick. At most
/// [`MAX_SHELL_SPANS`]; a span with only blanks inside is not one.
pub fn shell_spans(text: &str) -> Vec<ShellSpan> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find("!`") {
        let start = from + i;
        let inner = start + 2;
        let Some(len) = text[inner..].find(['`', '\n']) else {
            break;
        };
        let close = inner + len;
        if text.as_bytes()[close] == b'`' && !text[inner..close].trim().is_empty() {
            if out.len() == MAX_SHELL_SPANS {
                break;
            }
            out.push(ShellSpan {
                start,
                end: close + 1,
                command: text[inner..close].to_string(),
            });
            from = close + 1;
        } else {
            from = inner;
        }
    }
    out
}

/// The names of `known` closest to `name`, best first, at most `n`: for the error of an
/// unknown `/NAME`. Close means a prefix either way, or a small edit distance.
pub fn near_names<'a>(name: &str, known: impl Iterator<Item = &'a str>, n: usize) -> Vec<String> {
    let name = name.to_lowercase();
    let mut scored: Vec<(usize, &str)> = known
        .filter_map(|k| {
            let lower = k.to_lowercase();
            let d = if lower.starts_with(&name) || name.starts_with(&lower) {
                0
            } else {
                edit_distance(&name, &lower)
            };
            let cap = (name.chars().count() / 3).max(2);
            (d <= cap || lower.contains(&name)).then_some((d, k))
        })
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(n)
        .map(|(_, k)| k.to_string())
        .collect()
}

/// Levenshtein distance over characters, two rows: names are short (at most
/// [`MAX_NAME_CHARS`]), so a crate would add nothing.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
