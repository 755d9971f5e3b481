//! Subagent definitions: the `.agents/agents/*.md` and `.claude/agents/*.md` files of Claude
//! Code's format, read at start so that `task` can start a subagent of a given type.
//!
//! The files are written for other tools, so reading them is forgiving: YAML that strict
//! parsing rejects is retried (the skills' rewrite, then line by line), a tool hx lacks is
//! left out with a note, a Claude model name means the configured model. What was left out
//! is said grouped ([`Discovery::run_warnings`]), once per change of the file (the cache
//! remembers what was said, [`cache`]); `hx agents check` says it per file, every time. Discovery reads only frontmatter; a body is read when a subagent of that type
//! starts, so start-up stays cheap and a body never sits in memory unused.

pub mod cache;
pub mod tools;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::skills::discover::{
    description_of, read_frontmatter_from, roots_of, skipped_in, Roots, SkillRoot, Skipped,
    MAX_NAME_CHARS,
};
use crate::skills::parse::{parse_frontmatter, split_frontmatter, Frontmatter, Yaml};
use crate::skills::walk::{walk, MAX_DIRS};
use crate::skills::{Source, MAX_DESCRIPTION_CHARS};
use crate::text::{collapse_whitespace, cut, Warning};
use tools::tool_names;
pub use tools::{tools_for, For};

/// Largest agent file read (frontmatter and body): the body becomes a system prompt.
pub const MAX_FILE_BYTES: u64 = 128 * 1024;
/// Most agent files read in all roots together; the rest are counted in one warning.
pub const MAX_FILES: usize = 1_000;
/// Most characters of the `task` tool's list of agents (as the skill catalog's default).
pub const LIST_BUDGET: usize = 8_000;
/// Longest note kept about one file's field (a tool name quoted in it, say).
const MAX_QUOTED_CHARS: usize = 80;

/// One subagent type, as discovered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Definition {
    pub name: String,
    pub source: Source,
    pub path: PathBuf,
    /// For a project's file, the real path of its root, in which the file must still lie when
    /// its body is read.
    #[serde(skip)]
    pub within: Option<PathBuf>,
    /// On one line, at most [`MAX_DESCRIPTION_CHARS`] characters.
    pub description: String,
    /// hx's names of the tools it asked for, mapped (`mcp__SERVER__TOOL` names kept as
    /// they are); `None` when it named none, which gives it every subagent tool.
    pub tools: Option<Vec<String>>,
    /// The model to run it on; `None` for the configured one.
    pub model: Option<String>,
    /// What was left out or read differently, one line each.
    pub notes: Vec<String>,
}

/// An agent file (or a command file) that could not be read as a definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Broken {
    pub path: PathBuf,
    pub source: Source,
    pub reason: String,
}

/// The definitions of a run, and what discovery found wrong.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// By unique name, in name order.
    pub agents: Vec<Definition>,
    pub broken: Vec<Broken>,
    /// Roots skipped, links not followed, bounds reached, names shadowed: one line each.
    pub warnings: Vec<String>,
    /// By file, the notes an earlier run said about it as it is now: not said again.
    pub said: BTreeMap<PathBuf, Vec<String>>,
}

impl Discovery {
    pub fn get(&self, name: &str) -> Option<&Definition> {
        self.agents
            .binary_search_by(|a| a.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.agents[i])
    }

    /// What a run says about its agent files: the discovery warnings, then one line per
    /// distinct note naming the agents it concerns, then one for the files not read. A
    /// collection of a hundred agents that all say `model: sonnet` gives one line. A note an
    /// earlier run said about the file as it is now is left out: it works, only differently
    /// than its author's tool would run it, so it is advice (never an `error` item in
    /// `--json`), and once per change of the file is enough.
    pub fn run_warnings(&self) -> Vec<Warning> {
        let mut out: Vec<Warning> = self.warnings.iter().map(Warning::new).collect();
        let mut by_note: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for a in &self.agents {
            let said = self.said.get(&a.path);
            for n in &a.notes {
                if !said.is_some_and(|s| s.contains(n)) {
                    by_note.entry(n).or_default().push(&a.name);
                }
            }
        }
        for (note, names) in by_note {
            out.push(Warning::advisory(format!(
                "agent {}: {note}",
                some_names(&names)
            )));
        }
        out.extend(broken_line(&self.broken, "agent", "hx agents check").map(Warning::new));
        out
    }
}

/// The one line a run says about the files of `what` (`agent`, `command`) it could not read:
/// the first, and how many more `listing` shows.
pub fn broken_line(broken: &[Broken], what: &str, listing: &str) -> Option<String> {
    let first = broken.first()?;
    let more = match broken.len() - 1 {
        0 => String::new(),
        n => format!(" (and {n} more; `{listing}` lists them)"),
    };
    Some(format!(
        "skipping {what} file {}: {}{more}",
        first.path.display(),
        first.reason
    ))
}

/// `a, b, c and 4 more`.
fn some_names(names: &[&str]) -> String {
    const SHOWN: usize = 5;
    let mut s = names[..names.len().min(SHOWN)].join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    s
}

/// The roots agent files are read from, highest precedence first: the project's
/// `.agents/agents` and `.claude/agents` (the project found as for skills, from these
/// folders), then `~/.agents/agents` and `~/.claude/agents`.
pub fn agent_roots(cwd: &Path, home: Option<&Path>) -> Roots {
    roots_of(cwd, home, "agents")
}

/// Every definition visible from `cwd`. Never fails: what cannot be used is a warning.
pub fn discover(cwd: &Path, home: Option<&Path>) -> Discovery {
    discover_cached(cwd, home, None)
}

/// [`discover`], taking what files have not changed since from the cache file `cache`
/// ([`cache`]) and writing it back: what a run's start does. `hx agents` reads every file.
pub fn discover_cached(cwd: &Path, home: Option<&Path>, cache: Option<&Path>) -> Discovery {
    let roots = agent_roots(cwd, home);
    let cache = match cache {
        Some(path) => cache::Cache::load(path, std::time::SystemTime::now()),
        None => cache::Cache::default(),
    };
    let mut d = discover_roots_with(&roots.roots, &cache);
    let mut warnings: Vec<String> = roots.skipped.iter().map(Skipped::warning).collect();
    warnings.append(&mut d.warnings);
    d.warnings = warnings;
    d
}

/// The `*.md` files under a root (subfolders included, within the skills walk's bounds);
/// under a project root only those that really lie in it.
pub fn agent_files(root: &SkillRoot) -> crate::skills::walk::Walked {
    walk(
        &root.path,
        root.bound(),
        |_, name| is_agent_file(name),
        |_| true,
    )
}

/// Whether a file name is an agent file's: Markdown, but not a folder's README.
pub fn is_agent_file(name: &str) -> bool {
    name.ends_with(".md") && !name.eq_ignore_ascii_case("README.md")
}

/// The Markdown files of `roots` that a discovery of `what` (`agent`, `command`) reads:
/// each root's in path order (so which of two equal names in one root wins never depends on
/// the filesystem's listing order), roots in precedence order, at most [`MAX_FILES`] in all.
/// What the walks skipped, and the files left out, are pushed to `warnings`.
pub fn files_in<'a>(
    roots: &'a [SkillRoot],
    what: &str,
    warnings: &mut Vec<String>,
) -> Vec<(PathBuf, &'a SkillRoot)> {
    let mut found: Vec<(PathBuf, &SkillRoot)> = Vec::new();
    let mut left = 0usize;
    for root in roots {
        let walked = agent_files(root);
        for s in skipped_in(root, &walked) {
            warnings.push(s.warning());
        }
        if walked.truncated {
            warnings.push(format!(
                "stopped looking for {what}s in {} after {MAX_DIRS} folders",
                root.path.display()
            ));
        }
        let mut files: Vec<PathBuf> = walked.files.into_iter().map(|f| f.path).collect();
        files.sort();
        let room = MAX_FILES - found.len();
        left += files.len().saturating_sub(room);
        found.extend(files.into_iter().take(room).map(|p| (p, root)));
    }
    if left > 0 {
        warnings.push(format!(
            "read only the first {MAX_FILES} {what} files; {left} more left out"
        ));
    }
    found
}

/// Discovers the definitions in `roots`, earlier roots winning on equal names.
pub fn discover_roots(roots: &[SkillRoot]) -> Discovery {
    discover_roots_with(roots, &cache::Cache::default())
}

/// [`discover_roots`] through `cache`, which it saves when it read anything new.
pub fn discover_roots_with(roots: &[SkillRoot], cache: &cache::Cache) -> Discovery {
    let mut d = Discovery::default();
    let found = files_in(roots, "agent", &mut d.warnings);
    let looked = read_all(&found, cache);
    let paths: Vec<&Path> = found.iter().map(|(p, _)| p.as_path()).collect();
    cache.save(&paths, &looked);
    let mut by_name: BTreeMap<String, Definition> = BTreeMap::new();
    for ((path, root), looked) in found.into_iter().zip(looked) {
        match looked.read {
            Ok(mut def) => {
                def.within = root.bound().map(Path::to_path_buf);
                if looked.notes_said {
                    d.said.insert(def.path.clone(), def.notes.clone());
                }
                match by_name.get(&def.name) {
                    Some(winner) => d.warnings.push(format!(
                        "agent {} at {} is shadowed by {}",
                        def.name,
                        def.path.display(),
                        winner.path.display()
                    )),
                    None => {
                        by_name.insert(def.name.clone(), def);
                    }
                }
            }
            Err(reason) => d.broken.push(Broken {
                path,
                source: root.source,
                reason,
            }),
        }
    }
    d.agents = by_name.into_values().collect();
    d
}

/// Reads every agent file's frontmatter (or takes it from `cache`), results in input order,
/// on a few threads for a large set, as skills are read.
fn read_all(files: &[(PathBuf, &SkillRoot)], cache: &cache::Cache) -> Vec<cache::Looked> {
    crate::skills::discover::read_in_parallel(files, 64, |(path, root)| {
        Ok(cache.look(path, root.source, || read_definition(path, root.source)))
    })
    .into_iter()
    .map(|r| match r {
        Ok(looked) => looked,
        Err(reason) => cache::Looked::failed(reason),
    })
    .collect()
}

/// Reads one agent file's definition from its frontmatter.
pub fn read_definition(path: &Path, source: Source) -> Result<Definition, String> {
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
    let text = read_frontmatter_from(file)?;
    definition_from(path, &text, source)
}

/// The definition in frontmatter text (between the fences).
pub fn definition_from(path: &Path, text: &str, source: Source) -> Result<Definition, String> {
    let mut notes = Vec::new();
    let fm = lenient_frontmatter(text, &mut notes)?;
    let name = match fm.fields.get("name") {
        None | Some(Yaml::Null) => None,
        Some(v) => match v.as_text() {
            Some(s) if s.trim().is_empty() => None,
            Some(s) => Some(s.trim().to_string()),
            None => return Err(format!("name is {}, not text", v.kind())),
        },
    };
    let name = match name {
        Some(n) => n,
        None => path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    check_name(&name)?;
    let description = description_of(&fm)?;
    let tools = match fm.fields.get("tools") {
        None | Some(Yaml::Null) => None,
        Some(v) => tool_names(v, &mut notes),
    };
    let model = match fm.fields.get("model") {
        None | Some(Yaml::Null) => None,
        Some(v) => match v.as_text() {
            Some(m) => model_of(m.trim(), &mut notes),
            None => {
                notes.push(format!(
                    "model is {}, not text; the configured model is used",
                    v.kind()
                ));
                None
            }
        },
    };
    Ok(Definition {
        name,
        source,
        path: path.to_path_buf(),
        within: None,
        description,
        tools,
        model,
        notes,
    })
}

/// Whether `name` may name a subagent type: not empty, no spaces or control characters, at
/// most [`MAX_NAME_CHARS`]. Also what a cached definition is held to (`cache`).
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("no name".into());
    }
    if name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("name contains spaces or control characters".into());
    }
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        return Err(format!(
            "name is {chars} characters, more than {MAX_NAME_CHARS}"
        ));
    }
    Ok(())
}

/// Frontmatter as files written for Claude Code hold it: strict YAML, then the skills'
/// rewrite, then [`line_by_line`] (with a note saying so). An error only when nothing at all
/// could be read. Shared by agent files and command files (the `commands` module, a layer above).
pub fn lenient_frontmatter(text: &str, notes: &mut Vec<String>) -> Result<Frontmatter, String> {
    match parse_frontmatter(text) {
        Ok(fm) => Ok(fm),
        Err(e) => {
            let fm = line_by_line(text);
            if fm.fields.is_empty() {
                return Err(format!("invalid frontmatter: {e}"));
            }
            notes.push(format!(
                "frontmatter is not valid YAML ({e}); read line by line"
            ));
            Ok(fm)
        }
    }
}

fn quoted(t: &str) -> String {
    cut(&collapse_whitespace(t), MAX_QUOTED_CHARS)
}

/// The model a `model` field names: `None` for `inherit` and for Claude's models, which the
/// configured provider cannot serve.
pub fn model_of(m: &str, notes: &mut Vec<String>) -> Option<String> {
    let claude = ["sonnet", "opus", "haiku", "opusplan", "fable"];
    let lower = m.to_ascii_lowercase();
    if m.is_empty() || lower == "inherit" {
        return None;
    }
    let base = lower.split('[').next().unwrap_or_default();
    if claude.contains(&base) || lower.starts_with("claude") {
        notes.push(format!(
            "model {} is Claude's; the configured model is used",
            quoted(m)
        ));
        return None;
    }
    if m.chars().any(|c| c.is_control() || c.is_whitespace()) || m.chars().count() > 200 {
        notes.push("model is not a model name; the configured model is used".to_string());
        return None;
    }
    Some(m.to_string())
}

/// Top-level `key: value` lines, for frontmatter no YAML reading could take (a description
/// with quotes inside and a colon, say). Indented lines after one continue its value;
/// surrounding quotes are dropped.
fn line_by_line(text: &str) -> Frontmatter {
    let mut fields: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t', '-']) {
            if let Some((_, v)) = fields.last_mut() {
                v.push(' ');
                v.push_str(line.trim());
            }
            continue;
        }
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let key_ok = !k.is_empty()
            && k.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if key_ok {
            fields.push((k.to_string(), v.trim().to_string()));
        }
    }
    let unquote = |v: &str| {
        let v = v.trim();
        for q in ['"', '\''] {
            if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
                return v[1..v.len() - 1].to_string();
            }
        }
        v.to_string()
    };
    Frontmatter {
        fields: fields
            .into_iter()
            .map(|(k, v)| {
                let v = unquote(&v);
                let v = if v.is_empty() {
                    Yaml::Null
                } else {
                    Yaml::String(v)
                };
                (k, v)
            })
            .collect(),
        recovered: true,
    }
}

/// The body of a definition's file, read when a subagent of its type starts: at most
/// [`MAX_FILE_BYTES`], from a regular file that (for a project's) still lies in its root.
pub fn read_body(def: &Definition) -> Result<String, String> {
    let text = read_within(&def.path, def.within.as_deref())?;
    match split_frontmatter(&text) {
        Some((_, body)) => Ok(body.to_string()),
        None => Err(format!(
            "cannot read {}: its frontmatter is gone",
            def.path.display()
        )),
    }
}

/// The whole text of an agent or command file, read when it is used: at most
/// [`MAX_FILE_BYTES`], from a regular file that still lies in `within` (a project's root).
pub fn read_within(path: &Path, within: Option<&Path>) -> Result<String, String> {
    let fail = |e: &dyn std::fmt::Display| format!("cannot read {}: {e}", path.display());
    if let Some(within) = within {
        let real = path.canonicalize().map_err(|e| fail(&e))?;
        if !real.starts_with(within) {
            return Err(fail(&format!(
                "it now links to {}, outside {}",
                real.display(),
                within.display()
            )));
        }
    }
    let file = crate::paths::open_regular(path).map_err(|e| fail(&e))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(&e))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(fail(&format!(
            "it is more than {} KiB",
            MAX_FILE_BYTES / 1024
        )));
    }
    String::from_utf8(bytes).map_err(|_| fail(&"it is not valid UTF-8"))
}

/// The `task` tool's list of agents: `- name: description` per agent in name order, within
/// `budget` characters. Descriptions are cut to the same length until it fits; if the names
/// alone do not, the first ones are listed and the rest counted.
pub fn listing(agents: &[Definition], budget: usize) -> String {
    let render = |cap: usize| {
        let mut s = String::new();
        for a in agents {
            s.push_str("\n- ");
            s.push_str(&a.name);
            let d = cut(&a.description, cap);
            if !d.is_empty() {
                s.push_str(": ");
                s.push_str(&d);
            }
        }
        s
    };
    let mut cap = MAX_DESCRIPTION_CHARS;
    loop {
        let s = render(cap);
        if s.chars().count() <= budget {
            return s;
        }
        if cap == 0 {
            break;
        }
        cap /= 2;
    }
    let mut s = String::new();
    for (i, a) in agents.iter().enumerate() {
        let more = format!(
            "\n- … and {} more (an unknown subagent_type lists them all)",
            agents.len() - i
        );
        if s.chars().count() + a.name.chars().count() + 3 + more.chars().count() > budget {
            s.push_str(&more);
            return s;
        }
        s.push_str("\n- ");
        s.push_str(&a.name);
    }
    s
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
