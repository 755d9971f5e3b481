//! Finding skills at start: the four skill roots, the SKILL.md files under them, and only the
//! frontmatter of each (bodies are read from disk when loaded, so start-up stays cheap).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use super::parse::{is_fence, parse_frontmatter, Frontmatter, Yaml};
use super::walk::{walk, MAX_DIRS};
use super::{Skill, SkillRegistry, Source};
use crate::term::collapse_whitespace;

/// Largest frontmatter read at start; a longer one is reported rather than read on.
pub const MAX_FRONTMATTER_BYTES: u64 = 64 * 1024;

/// The file every skill folder holds.
pub const SKILL_FILE: &str = "SKILL.md";

/// The result of discovery: the skills, and one line per problem for the caller to print.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    pub registry: SkillRegistry,
    pub warnings: Vec<String>,
}

/// One folder skills are read from, in precedence order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillRoot {
    pub path: PathBuf,
    pub source: Source,
}

/// The roots to read, highest precedence first: the nearest folder at or above `cwd` that has
/// `.agents/skills` or `.claude/skills` gives the project's `.agents/skills` and
/// `.claude/skills`, then `home` gives the user's. Roots that do not exist are left out.
pub fn skill_roots(cwd: &Path, home: Option<&Path>) -> Vec<SkillRoot> {
    let mut roots = Vec::new();
    if let Some(project) = project_dir(cwd, home) {
        roots.push(SkillRoot {
            path: project.join(".agents/skills"),
            source: Source::Project,
        });
        roots.push(SkillRoot {
            path: project.join(".claude/skills"),
            source: Source::Project,
        });
    }
    if let Some(home) = home {
        for sub in [".agents/skills", ".claude/skills"] {
            roots.push(SkillRoot {
                path: home.join(sub),
                source: Source::User,
            });
        }
    }
    // The same folder reached twice (a symlink, or a project that is the home folder) would
    // only shadow itself.
    let mut seen = Vec::new();
    roots.retain(|r| match r.path.canonicalize() {
        Ok(real) if r.path.is_dir() && !seen.contains(&real) => {
            seen.push(real);
            true
        }
        _ => false,
    });
    roots
}

/// The project folder: the nearest ancestor of `cwd` (itself included) with `.agents/skills`
/// or `.claude/skills` (either marks a project: a repository set up only for Claude Code has
/// just the latter). The home folder does not count: its skill folders hold the user's skills.
fn project_dir(cwd: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let home_real = home.and_then(|h| h.canonicalize().ok());
    cwd.ancestors()
        .filter(|dir| {
            [".agents/skills", ".claude/skills"]
                .iter()
                .any(|sub| dir.join(sub).is_dir())
        })
        .find(|dir| home_real.is_none() || dir.canonicalize().ok() != home_real)
        .map(Path::to_path_buf)
}

/// Discovers every skill visible from `cwd`. Never fails: broken skills become warnings.
pub fn discover(cwd: &Path, home: Option<&Path>) -> Discovery {
    discover_roots(&skill_roots(cwd, home))
}

/// Discovers skills in the given roots, earlier roots winning on equal names.
pub fn discover_roots(roots: &[SkillRoot]) -> Discovery {
    let mut warnings = Vec::new();
    let mut found: Vec<(PathBuf, Source)> = Vec::new();
    for root in roots {
        let mut files = find_skill_files(&root.path, &mut warnings);
        // Sorted so that which of two equal names in one root wins never depends on the
        // filesystem's listing order.
        files.sort();
        found.extend(files.into_iter().map(|f| (f, root.source)));
    }
    let read = read_all(&found);
    let mut by_name: BTreeMap<String, Skill> = BTreeMap::new();
    for ((path, _), result) in found.iter().zip(read) {
        let skill = match result {
            Ok(skill) => skill,
            Err(reason) => {
                warnings.push(format!("skipping skill {}: {reason}", path.display()));
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
    }
}

/// Reads every file's frontmatter, results in input order. Opening, reading and parsing
/// thousands of small files is most of discovery's cost, so large sets are split across a
/// few threads (order is restored, so the outcome does not depend on scheduling).
fn read_all(files: &[(PathBuf, Source)]) -> Vec<Result<Skill, String>> {
    const MIN_PER_THREAD: usize = 128;
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, 4)
        .min(files.len() / MIN_PER_THREAD)
        .max(1);
    let read_chunk = |chunk: &[(PathBuf, Source)]| -> Vec<Result<Skill, String>> {
        chunk.iter().map(|(p, s)| read_skill(p, *s)).collect()
    };
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

/// Every SKILL.md under a root, within the walk's bounds.
pub fn find_skill_files(root: &Path, warnings: &mut Vec<String>) -> Vec<PathBuf> {
    let walked = walk(root, |_, name| name == SKILL_FILE, |_| true);
    if walked.truncated {
        warnings.push(format!(
            "stopped looking for skills in {} after {MAX_DIRS} folders",
            root.display()
        ));
    }
    walked.files
}

/// Reads one skill's catalog entry from the head of its SKILL.md.
pub fn read_skill(path: &Path, source: Source) -> Result<Skill, String> {
    let text = read_frontmatter(path)?;
    let fm = parse_frontmatter(&text).map_err(|e| format!("invalid frontmatter: {e}"))?;
    skill_from_frontmatter(path, &fm, source)
}

/// Reads the file up to the closing `---` and returns the text between the fences, reading
/// at most [`MAX_FRONTMATTER_BYTES`] so a huge file costs no more than a small one.
pub fn read_frontmatter(path: &Path) -> Result<String, String> {
    let file = File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    let mut reader = BufReader::new(file).take(MAX_FRONTMATTER_BYTES + 8);
    let mut line = Vec::new();
    let read = |reader: &mut dyn BufRead, line: &mut Vec<u8>| {
        line.clear();
        reader
            .read_until(b'\n', line)
            .map_err(|e| format!("cannot read: {e}"))
    };
    let mut total = read(&mut reader, &mut line)?;
    if !is_fence(line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&line)) {
        return Err("no frontmatter (the first line must be ---)".into());
    }
    let mut fm = Vec::new();
    loop {
        let n = read(&mut reader, &mut line)?;
        total += n;
        if n == 0 {
            return Err(if total as u64 >= MAX_FRONTMATTER_BYTES {
                format!(
                    "frontmatter is longer than {} KiB",
                    MAX_FRONTMATTER_BYTES / 1024
                )
            } else {
                "frontmatter has no closing ---".into()
            });
        }
        if is_fence(&line) {
            break;
        }
        fm.extend_from_slice(&line);
    }
    String::from_utf8(fm).map_err(|_| "frontmatter is not valid UTF-8".into())
}

/// Builds the catalog entry: `name` defaults to the folder's name; a description is required.
pub fn skill_from_frontmatter(
    path: &Path,
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
    let description = match fm.fields.get("description") {
        None | Some(Yaml::Null) => return Err("no description".into()),
        Some(v) => match v.as_text() {
            Some(s) => collapse_whitespace(&s),
            None => return Err(format!("description is {}, not text", v.kind())),
        },
    };
    if description.is_empty() {
        return Err("empty description".into());
    }
    Ok(Skill {
        name,
        source,
        path: path.to_path_buf(),
        description,
    })
}

#[cfg(test)]
#[path = "discover_tests.rs"]
mod tests;
