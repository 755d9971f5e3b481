//! What loading a skill returns: its body read from disk now, wrapped in `<skill>` tags, with
//! the skill folder's other files listed. Shared by the `load_skill` tool and `hx skills show`
//! so both always say the same thing.

use std::fmt;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::discover::SKILL_FILE;
use super::parse::{split_frontmatter, strip_bom};
use super::walk::walk;
use super::{Skill, SkillRegistry};

/// Largest SKILL.md read when loading; a body beyond this is not something to put in a prompt.
pub const MAX_SKILL_FILE_BYTES: u64 = 1024 * 1024;
/// Most resource files listed after a body.
pub const MAX_LISTED_FILES: usize = 50;
/// The line introducing the resource list.
pub const FILES_HEADER: &str =
    "Other files in this skill (read them with read_file when the instructions call for them):";

/// Why a skill could not be rendered. `Display` is the text after the tool's `Error: `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenderError {
    /// No skill of that name; `available` is every name, sorted.
    Unknown {
        name: String,
        available: Vec<String>,
    },
    /// The SKILL.md could not be read or no longer has frontmatter.
    Read {
        name: String,
        path: PathBuf,
        reason: String,
    },
}

impl fmt::Display for RenderError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            RenderError::Unknown { name, available } => {
                let list = if available.is_empty() {
                    "(none)".to_string()
                } else {
                    available.join(", ")
                };
                // The name is the model's (or the user's): quoted short.
                let name = crate::tools::output::quote(name);
                write!(f, "unknown skill {name}. Available: {list}")
            }
            RenderError::Read { name, path, reason } => {
                write!(
                    f,
                    "cannot load skill {name} from {}: {reason}",
                    path.display()
                )
            }
        }
    }
}

impl std::error::Error for RenderError {}

/// Exactly what `load_skill` returns for `name`: `<skill name="NAME">\nBODY\n</skill>`, with
/// the folder's other files listed after the body (relative to `workspace_root` when inside it,
/// absolute otherwise).
pub fn render(
    registry: &SkillRegistry,
    name: &str,
    workspace_root: &Path,
) -> Result<String, RenderError> {
    let Some(skill) = registry.get(name) else {
        return Err(RenderError::Unknown {
            name: name.to_string(),
            available: registry.names().map(str::to_string).collect(),
        });
    };
    let body = read_body(skill).map_err(|reason| RenderError::Read {
        name: skill.name.clone(),
        path: skill.path.clone(),
        reason,
    })?;
    let mut inner = body;
    let files = resource_files(skill, workspace_root);
    if !files.is_empty() {
        inner.push_str("\n\n");
        inner.push_str(FILES_HEADER);
        for file in &files.listed {
            inner.push_str("\n- ");
            inner.push_str(file);
        }
        if files.more > 0 {
            inner.push_str(&format!("\n- … and {} more", files.more));
        }
    }
    Ok(format!(
        "<skill name=\"{}\">\n{}\n</skill>",
        escape_attr(&skill.name),
        defuse_closing_tags(&inner)
    ))
}

/// The text with the `</` of every `</skill` made `<\/`, whatever its case or what follows
/// (`</SKILL>`, `</skill >`), so the wrapper only closes where hx closes it. Everything else
/// is kept byte for byte.
fn defuse_closing_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find("</") {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 2..];
        // `get` is `None` off a char boundary, where the next bytes cannot be ASCII "skill".
        let closes = after
            .get(..5)
            .is_some_and(|word| word.eq_ignore_ascii_case("skill"));
        out.push_str(if closes { "<\\/" } else { "</" });
        rest = after;
    }
    out.push_str(rest);
    out
}

impl SkillRegistry {
    /// See [`render`].
    pub fn render(&self, name: &str, workspace_root: &Path) -> Result<String, RenderError> {
        render(self, name, workspace_root)
    }
}

/// Reads the body now (not at start): the file may have changed or gone since discovery, or
/// become a link, which for a project skill must still lead no further than its skills root.
pub fn read_body(skill: &Skill) -> Result<String, String> {
    let path = match &skill.within {
        None => skill.path.clone(),
        Some(bound) => match skill.path.canonicalize() {
            Ok(real) if real.starts_with(bound) => real,
            Ok(real) => {
                return Err(format!(
                    "the file now links to {}, outside its skills root {}",
                    real.display(),
                    bound.display()
                ))
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Err("the file no longer exists".into())
            }
            Err(e) => return Err(format!("cannot read the file: {e}")),
        },
    };
    let text = read_skill_file(&path)?;
    let (_, body) = split_frontmatter(strip_bom(&text))
        .ok_or_else(|| "the file no longer has frontmatter between --- lines".to_string())?;
    Ok(body.to_string())
}

/// A whole SKILL.md as text, bounded: shared by loading and `hx skills check`.
pub(crate) fn read_skill_file(path: &Path) -> Result<String, String> {
    // Not File::open: a SKILL.md swapped for a FIFO since discovery would hang the call.
    let bytes = crate::paths::read_regular(path, MAX_SKILL_FILE_BYTES)
        .map_err(|e| match e.kind() {
            ErrorKind::NotFound => "the file no longer exists".to_string(),
            _ => format!("cannot read the file: {e}"),
        })?
        .ok_or_else(|| {
            format!(
                "the file is larger than {} KiB",
                MAX_SKILL_FILE_BYTES / 1024
            )
        })?;
    String::from_utf8(bytes).map_err(|_| "the file is not valid UTF-8".to_string())
}

struct Files {
    listed: Vec<String>,
    more: usize,
}

impl Files {
    fn is_empty(&self) -> bool {
        self.listed.is_empty()
    }
}

/// The skill folder's files other than SKILL.md, sorted, at most [`MAX_LISTED_FILES`].
/// Hidden files and nested skills' folders are left out: they are not this skill's resources.
/// So are links whose real path leaves the folder: `read_file` would refuse them, and
/// following a linked folder would show the names of whatever it points at.
fn resource_files(skill: &Skill, workspace_root: &Path) -> Files {
    // Real, so that paths compare with the (real) workspace root.
    let dir = &skill.folder;
    let skill_file = dir.join(SKILL_FILE);
    let walked = walk(
        dir,
        Some(dir),
        |path, name| !name.starts_with('.') && path != skill_file,
        |sub| !sub.join(SKILL_FILE).is_file(),
    );
    let mut shown: Vec<String> = walked
        .files
        .iter()
        .map(|f| &f.path)
        .map(|p| match p.strip_prefix(workspace_root) {
            Ok(rel) => slash_path(rel),
            Err(_) => p.display().to_string(),
        })
        .collect();
    shown.sort();
    let more = shown.len().saturating_sub(MAX_LISTED_FILES);
    shown.truncate(MAX_LISTED_FILES);
    Files {
        listed: shown,
        more,
    }
}

/// A relative path with `/` separators on every platform, as the model writes paths.
fn slash_path(rel: &Path) -> String {
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Escapes text for a double-quoted XML attribute.
pub fn escape_attr(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
