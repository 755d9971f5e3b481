//! Finding skills at start: the four skill roots, the SKILL.md files under them, and only the
//! frontmatter of each (bodies are read from disk when loaded, so start-up stays cheap).
//!
//! A project's skills come from the repository, so nothing in them may lead out of it: a
//! project root whose real path leaves the project, and a skill folder or SKILL.md under a
//! project root that links out of that root, are skipped with a warning. The user's own roots
//! are the user's choice and may lead anywhere.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use super::catalog::MAX_DESCRIPTION_CHARS;
use super::parse::{is_fence, parse_frontmatter, Frontmatter, Yaml};
use super::walk::{walk, Found, Walked, MAX_DIRS};
use super::{Skill, SkillRegistry, Source};
use crate::text::collapse_whitespace;
use crate::text::cut;

/// Largest frontmatter read at start; a longer one is reported rather than read on.
pub const MAX_FRONTMATTER_BYTES: u64 = 64 * 1024;

/// Longest skill name (the Agent Skills specification's limit): a longer one is refused, so
/// no name can crowd the catalog or the messages that quote it.
pub const MAX_NAME_CHARS: usize = 64;

/// The file every skill folder holds.
pub const SKILL_FILE: &str = "SKILL.md";

/// The result of discovery: the skills, and one line per problem for the caller to print.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    pub registry: SkillRegistry,
    pub warnings: Vec<String>,
    /// The SKILL.md files that did not parse (each also one of `warnings`), for listings that
    /// show every skill folder, loaded or not.
    pub broken: Vec<Broken>,
}

/// A SKILL.md discovery found but could not read as a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    pub path: PathBuf,
    pub source: Source,
    pub reason: String,
}

impl Broken {
    /// The warning discovery gives for it.
    pub fn warning(&self) -> String {
        format!("skipping skill {}: {}", self.path.display(), self.reason)
    }
}

/// One folder skills are read from, in precedence order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillRoot {
    pub path: PathBuf,
    /// `path` with every link resolved.
    pub real: PathBuf,
    pub source: Source,
}

impl SkillRoot {
    /// Where the root's skill folders and SKILL.md files must really lie: inside the root for
    /// a project's (the repository decides what it holds), anywhere for the user's own.
    pub fn bound(&self) -> Option<&Path> {
        (self.source == Source::Project).then_some(self.real.as_path())
    }
}

/// A link that discovery and `check` do not follow because it leads out of where it must stay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The link as found.
    pub path: PathBuf,
    /// Its real path.
    pub target: PathBuf,
    /// What it had to stay in: the project (for a skills root) or its skills root.
    pub bound: PathBuf,
    /// True for a skills root, false for a skill folder or file under one.
    pub is_root: bool,
}

impl Skipped {
    /// Why, as in `links to /x, outside the project /p`.
    pub fn reason(&self) -> String {
        let what = if self.is_root {
            "the project"
        } else {
            "its skills root"
        };
        format!(
            "links to {}, outside {what} {}",
            self.target.display(),
            self.bound.display()
        )
    }

    /// The discovery warning.
    pub fn warning(&self) -> String {
        let what = if self.is_root { "skills root " } else { "" };
        format!(
            "skipping {what}{}: it {}",
            self.path.display(),
            self.reason()
        )
    }
}

/// The roots to read, and the project roots left out because they lead out of the project.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Roots {
    pub roots: Vec<SkillRoot>,
    pub skipped: Vec<Skipped>,
}

/// The roots to read, highest precedence first: the nearest folder at or above `cwd` that has
/// `.agents/skills` or `.claude/skills` gives the project's `.agents/skills` and
/// `.claude/skills`, then `home` gives the user's. Roots that do not exist are left out, and
/// so are a project's roots whose real path is not inside the project (reported in
/// [`Roots::skipped`]).
pub fn skill_roots(cwd: &Path, home: Option<&Path>) -> Roots {
    roots_of(cwd, home, "skills")
}

/// [`skill_roots`] for another kind of folder beside `skills` (`agents`): the project is the
/// nearest folder with `.agents/KIND` or `.claude/KIND`, and the same rules hold: a project's
/// root must really lie in the project, and a folder reached twice counts once.
pub fn roots_of(cwd: &Path, home: Option<&Path>, kind: &str) -> Roots {
    let subs = [format!(".agents/{kind}"), format!(".claude/{kind}")];
    let mut out = Roots::default();
    let mut candidates = Vec::new();
    if let Some(project) = project_dir(cwd, home, &subs) {
        let project_real = project.canonicalize().unwrap_or_else(|_| project.clone());
        for sub in &subs {
            candidates.push((
                project.join(sub),
                Source::Project,
                Some(project_real.clone()),
            ));
        }
    }
    if let Some(home) = home {
        for sub in &subs {
            candidates.push((home.join(sub), Source::User, None));
        }
    }
    for (path, source, project) in candidates {
        let Ok(real) = path.canonicalize() else {
            continue;
        };
        if !real.is_dir() {
            continue;
        }
        if let Some(project) = project {
            if !real.starts_with(&project) {
                out.skipped.push(Skipped {
                    path,
                    target: real,
                    bound: project,
                    is_root: true,
                });
                continue;
            }
        }
        // The same folder reached twice (a symlink, or a project that is the home folder)
        // would only shadow itself.
        if out.roots.iter().any(|r| r.real == real) {
            continue;
        }
        out.roots.push(SkillRoot { path, real, source });
    }
    out
}

/// The project folder: the nearest ancestor of `cwd` (itself included) with one of `subs`
/// (either marks a project: a repository set up only for Claude Code has just
/// `.claude/...`). The home folder does not count: its folders hold the user's own.
fn project_dir(cwd: &Path, home: Option<&Path>, subs: &[String]) -> Option<PathBuf> {
    let home_real = home.and_then(|h| h.canonicalize().ok());
    cwd.ancestors()
        .filter(|dir| subs.iter().any(|sub| dir.join(sub).is_dir()))
        .find(|dir| home_real.is_none() || dir.canonicalize().ok() != home_real)
        .map(Path::to_path_buf)
}

/// Discovers every skill visible from `cwd`. Never fails: broken skills and links out of the
/// project become warnings.
pub fn discover(cwd: &Path, home: Option<&Path>) -> Discovery {
    let roots = skill_roots(cwd, home);
    let mut d = discover_roots(&roots.roots);
    let mut warnings: Vec<String> = roots.skipped.iter().map(Skipped::warning).collect();
    warnings.append(&mut d.warnings);
    d.warnings = warnings;
    d
}

/// Discovers skills in the given roots, earlier roots winning on equal names.
pub fn discover_roots(roots: &[SkillRoot]) -> Discovery {
    let mut warnings = Vec::new();
    let mut broken = Vec::new();
    let mut found: Vec<(Found, &SkillRoot)> = Vec::new();
    for root in roots {
        let walked = find_skill_files(root);
        warnings.extend(walk_warnings(root, &walked));
        let mut files = walked.files;
        // Sorted so that which of two equal names in one root wins never depends on the
        // filesystem's listing order.
        files.sort_by(|a, b| a.path.cmp(&b.path));
        found.extend(files.into_iter().map(|f| (f, root)));
    }
    let read = read_all(&found);
    let mut by_name: BTreeMap<String, Skill> = BTreeMap::new();
    for ((file, root), result) in found.iter().zip(read) {
        let skill = match result {
            Ok(skill) => Skill {
                within: root.bound().map(Path::to_path_buf),
                ..skill
            },
            Err(reason) => {
                let b = Broken {
                    path: file.path.clone(),
                    source: root.source,
                    reason,
                };
                warnings.push(b.warning());
                broken.push(b);
                continue;
            }
        };
        match by_name.get(&skill.name) {
            Some(winner) => warnings.push(format!(
                "skill {} at {} is shadowed by {}",
                skill.name,
                skill.path.display(),
                winner.path.display()
            )),
            None => {
                by_name.insert(skill.name.clone(), skill);
            }
        }
    }
    Discovery {
        registry: SkillRegistry::from_sorted(by_name.into_values().collect()),
        warnings,
        broken,
    }
}

/// Reads every skill file's frontmatter, results in input order (see [`read_in_parallel`]).
fn read_all(files: &[(Found, &SkillRoot)]) -> Vec<Result<Skill, String>> {
    read_in_parallel(files, 128, |(f, root)| {
        read_skill(&f.path, &f.real_dir, root.source)
    })
}

/// `read` of each of `files`, results in input order. Opening, reading and parsing thousands
/// of small files is most of a discovery's cost (skills', agent files'), so a set of more than
/// `min_per_thread` files is split across a few threads (order is restored, so the outcome
/// does not depend on scheduling).
pub fn read_in_parallel<T: Sync, R: Send>(
    files: &[T],
    min_per_thread: usize,
    read: impl Fn(&T) -> Result<R, String> + Sync,
) -> Vec<Result<R, String>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, 4)
        .min(files.len() / min_per_thread.max(1))
        .max(1);
    let read_chunk = |chunk: &[T]| -> Vec<Result<R, String>> { chunk.iter().map(&read).collect() };
    if threads == 1 {
        return read_chunk(files);
    }
    let chunk_len = files.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .chunks(chunk_len)
            .map(|chunk| (chunk, scope.spawn(move || read_chunk(chunk))))
            .collect();
        handles
            .into_iter()
            .flat_map(|(chunk, h)| {
                // A panic in a reader thread (a bug, not bad input) costs only its chunk.
                h.join().unwrap_or_else(|_| {
                    chunk
                        .iter()
                        .map(|_| Err("internal error while reading".to_string()))
                        .collect()
                })
            })
            .collect()
    })
}

/// Every SKILL.md under a root, within the walk's bounds; under a project root, only those
/// whose folder and file really lie inside the root.
pub fn find_skill_files(root: &SkillRoot) -> Walked {
    walk(
        &root.path,
        root.bound(),
        |_, name| name == SKILL_FILE,
        |_| true,
    )
}

/// The links a walk of `root` skipped and whether it stopped early, for the person to read.
pub fn skipped_in(root: &SkillRoot, walked: &Walked) -> Vec<Skipped> {
    walked
        .escapes
        .iter()
        .map(|e| Skipped {
            path: e.link.clone(),
            target: e.target.clone(),
            bound: root.real.clone(),
            is_root: false,
        })
        .collect()
}

fn walk_warnings(root: &SkillRoot, walked: &Walked) -> Vec<String> {
    let mut out: Vec<String> = skipped_in(root, walked)
        .iter()
        .map(Skipped::warning)
        .collect();
    let more = walked.escapes_total - walked.escapes.len();
    if more > 0 {
        out.push(format!(
            "skipping {more} more links out of {}",
            root.path.display()
        ));
    }
    if walked.truncated {
        out.push(format!(
            "stopped looking for skills in {} after {MAX_DIRS} folders",
            root.path.display()
        ));
    }
    out
}

/// Reads one skill's catalog entry from the head of its SKILL.md; `folder` is the real path
/// of the folder holding it.
pub fn read_skill(path: &Path, folder: &Path, source: Source) -> Result<Skill, String> {
    let text = read_frontmatter(path)?;
    let fm = parse_frontmatter(&text).map_err(|e| format!("invalid frontmatter: {e}"))?;
    skill_from_frontmatter(path, folder, &fm, source)
}

/// Reads the file up to the closing `---` and returns the text between the fences, reading
/// at most [`MAX_FRONTMATTER_BYTES`] so a huge file costs no more than a small one.
pub fn read_frontmatter(path: &Path) -> Result<String, String> {
    let file = crate::paths::open_regular(path).map_err(|e| format!("cannot read: {e}"))?;
    read_frontmatter_from(file)
}

/// [`read_frontmatter`] on any source: takes at most [`MAX_FRONTMATTER_BYTES`] from it (the
/// limit sits below the buffer, so not even read-ahead goes further), and gives the same
/// frontmatter as reading the whole file would, or an error.
pub fn read_frontmatter_from(source: impl Read) -> Result<String, String> {
    let mut reader = BufReader::new(source.take(MAX_FRONTMATTER_BYTES));
    let mut line = Vec::new();
    let read = |reader: &mut dyn BufRead, line: &mut Vec<u8>| {
        line.clear();
        reader
            .read_until(b'\n', line)
            .map_err(|e| format!("cannot read: {e}"))
    };
    let too_long = || {
        format!(
            "frontmatter is longer than {} KiB",
            MAX_FRONTMATTER_BYTES / 1024
        )
    };
    let mut total = read(&mut reader, &mut line)?;
    if !is_fence(line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&line)) {
        return Err("no frontmatter (the first line must be ---)".into());
    }
    let mut fm = Vec::new();
    loop {
        let n = read(&mut reader, &mut line)?;
        total += n;
        let at_cap = total as u64 >= MAX_FRONTMATTER_BYTES;
        if n == 0 {
            return Err(if at_cap {
                too_long()
            } else {
                "frontmatter has no closing ---".into()
            });
        }
        // A line the cap cut short is no fence: `---` may be the start of `---more`.
        let whole_line = line.ends_with(b"\n") || !at_cap;
        if whole_line && is_fence(&line) {
            break;
        }
        fm.extend_from_slice(&line);
    }
    String::from_utf8(fm).map_err(|_| "frontmatter is not valid UTF-8".into())
}

/// Builds the catalog entry: `name` defaults to the folder's name and has at most
/// [`MAX_NAME_CHARS`] characters; a description is required, and cut to
/// [`MAX_DESCRIPTION_CHARS`].
/// The frontmatter's `description`, required and text, on one line and cut to
/// [`MAX_DESCRIPTION_CHARS`]: the rule skills and agent files share.
pub fn description_of(fm: &Frontmatter) -> Result<String, String> {
    let description = match fm.fields.get("description") {
        None | Some(Yaml::Null) => return Err("no description".into()),
        Some(v) => match v.as_text() {
            // Cut now: the catalog shows no more, and thousands of skills stay small in memory.
            Some(s) => cut(&collapse_whitespace(&s), MAX_DESCRIPTION_CHARS),
            None => return Err(format!("description is {}, not text", v.kind())),
        },
    };
    if description.is_empty() {
        return Err("empty description".into());
    }
    Ok(description)
}

/// Longest `argument-hint` kept (it is shown in `/help` and completion).
pub const MAX_HINT_CHARS: usize = 120;

/// The `argument-hint` of a command's or skill's frontmatter, on one line, at most
/// [`MAX_HINT_CHARS`]: `[message]`, as Claude Code's files write it, is a YAML list and is
/// shown as it was written. `Err` with a note when it is neither text nor a list.
pub fn argument_hint_of(fields: &BTreeMap<String, Yaml>) -> Result<Option<String>, String> {
    let hint = match fields.get("argument-hint") {
        None | Some(Yaml::Null) => None,
        Some(Yaml::Seq(items)) => {
            let words: Vec<String> = items
                .iter()
                .filter_map(Yaml::as_text)
                .map(|w| format!("[{w}]"))
                .collect();
            Some(words.join(" "))
        }
        Some(v) => match v.as_text() {
            Some(s) => Some(s),
            None => return Err(format!("argument-hint is {}, not text; left out", v.kind())),
        },
    };
    Ok(hint
        .map(|h| collapse_whitespace(&h))
        .filter(|h| !h.is_empty())
        .map(|h| cut(&h, MAX_HINT_CHARS)))
}

pub fn skill_from_frontmatter(
    path: &Path,
    folder_real: &Path,
    fm: &Frontmatter,
    source: Source,
) -> Result<Skill, String> {
    let folder = || {
        path.parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let name = match fm.fields.get("name") {
        None | Some(Yaml::Null) => folder(),
        Some(v) => match v.as_text() {
            Some(s) if s.trim().is_empty() => folder(),
            Some(s) => s.trim().to_string(),
            None => return Err(format!("name is {}, not text", v.kind())),
        },
    };
    if name.is_empty() {
        return Err("no name and no folder name to use instead".into());
    }
    if name.chars().any(char::is_control) {
        return Err("name contains control characters".into());
    }
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        return Err(format!(
            "name is {chars} characters, more than {MAX_NAME_CHARS}"
        ));
    }
    let description = description_of(fm)?;
    // Claude Code's switches; anything but a YAML boolean leaves the default.
    let switch = |key: &str, default: bool| match fm.fields.get(key) {
        Some(Yaml::Bool(b)) => *b,
        _ => default,
    };
    Ok(Skill {
        name,
        source,
        path: path.to_path_buf(),
        folder: folder_real.to_path_buf(),
        within: None,
        description,
        model_invocable: !switch("disable-model-invocation", false),
        user_invocable: switch("user-invocable", true),
        // Shown only, so a hint of the wrong kind is left out without a word.
        argument_hint: argument_hint_of(&fm.fields).ok().flatten(),
    })
}

/// Why no skill is called `name` although a skill folder of that name exists: its SKILL.md
/// did not parse (discovery skipped it), or its frontmatter gives it another name.
pub fn not_loaded(
    registry: &SkillRegistry,
    cwd: &Path,
    home: Option<&Path>,
    name: &str,
) -> Option<String> {
    let folder_is = |path: &Path| {
        path.parent()
            .and_then(Path::file_name)
            .is_some_and(|f| f == name)
    };
    if let Some(other) = registry.skills().iter().find(|s| folder_is(&s.path)) {
        return Some(format!(
            "no skill is named {name}: the skill in {} is named {}; hx skills show {} shows it",
            crate::paths::shown_from(&other.path, cwd),
            other.name,
            other.name
        ));
    }
    let roots = skill_roots(cwd, home);
    roots.roots.iter().find_map(|root| {
        let walked = find_skill_files(root);
        walked
            .files
            .iter()
            .find(|f| folder_is(&f.path))
            .and_then(|f| {
                let folder = f.path.parent()?;
                let reason = read_skill(&f.path, folder, root.source).err()?;
                let path = crate::paths::shown_from(&f.path, cwd);
                Some(format!(
                    "skill {name} is not loaded: {path}: {reason}; hx skills check {path} lists \
                 every problem"
                ))
            })
    })
}

#[cfg(test)]
#[path = "discover_tests.rs"]
mod tests;
