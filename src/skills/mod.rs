//! Skills: project rules in `.agents/skills/<name>/SKILL.md`, listed by name and description
//! in the system prompt and loaded on demand with the `load_skill` tool.
//!
//! The flow: [`discover`] reads only the frontmatter of every SKILL.md it finds (cheap at
//! start, even with thousands of skills) into a [`SkillRegistry`]; [`catalog`] turns that into
//! the system prompt's skill list; [`LoadSkill`] (the tool) and [`render`] read a body from
//! disk when the model asks for it; [`check`] validates skills against the Agent Skills
//! specification for `hx skills check`.
//!
//! YAML: frontmatter is parsed by serde-saphyr, a maintained pure-Rust parser built not to
//! panic on hostile input (serde_yaml is archived and serde_yml unsound).

use std::path::{Path, PathBuf};

use serde::Serialize;

pub mod catalog;
pub mod check;
pub mod discover;
pub mod load;
pub mod parse;
pub mod render;
pub mod walk;

pub use catalog::{catalog, DEFAULT_CATALOG_BUDGET, MAX_DESCRIPTION_CHARS};
pub use check::{check_path, check_roots, Severity};
pub use discover::{discover, skill_roots, Broken, Discovery};
pub use load::LoadSkill;

/// Where a skill was found; a project skill wins over a user skill of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Project,
    User,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Project => "project",
            Source::User => "user",
        }
    }
}

/// One skill as known at start: what the catalog and `hx skills` show. The body is not kept;
/// it is read from `path` when the skill is loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skill {
    pub name: String,
    pub source: Source,
    /// The SKILL.md file.
    pub path: PathBuf,
    /// The real path of the skill's folder (links resolved at discovery): where its resource
    /// files are listed from, and what `read_file` may read when it lies outside the workspace.
    #[serde(skip)]
    pub folder: PathBuf,
    /// For a project skill, the real path of its skills root: its SKILL.md must still lie in
    /// it when loaded (it may have become a link since discovery). `None` for the user's.
    #[serde(skip)]
    pub within: Option<PathBuf>,
    /// The description on one line (whitespace runs collapsed), at most
    /// [`MAX_DESCRIPTION_CHARS`] characters; not yet cut to any budget.
    pub description: String,
    /// In the catalog, for the model to load (`disable-model-invocation: true` says no: only
    /// the user invokes it, as `/NAME`). In `--json` only when false.
    #[serde(skip_serializing_if = "is_true")]
    pub model_invocable: bool,
    /// The user may invoke it as `/NAME` (`user-invocable: false` says no).
    #[serde(skip_serializing_if = "is_true")]
    pub user_invocable: bool,
    /// What `/NAME` takes, shown by `/help` and completion (`argument-hint`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
}

fn is_true(b: &bool) -> bool {
    *b
}

/// The skills of one run, by unique name in name order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillRegistry {
    skills: Vec<Skill>,
}

impl SkillRegistry {
    /// A registry of the given skills; on equal names the earlier one is kept.
    pub fn new(skills: impl IntoIterator<Item = Skill>) -> Self {
        let mut out: Vec<Skill> = Vec::new();
        for skill in skills {
            if !out.iter().any(|s| s.name == skill.name) {
                out.push(skill);
            }
        }
        Self::from_sorted(out)
    }

    pub(crate) fn from_sorted(mut skills: Vec<Skill>) -> Self {
        skills.sort_by(|a, b| a.name.cmp(&b.name));
        SkillRegistry { skills }
    }

    /// A skill by exact name. Names are only ever looked up here, never used as paths.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills
            .binary_search_by(|s| s.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.skills[i])
    }

    /// All skills in name order (what `hx skills` lists; `Skill` serializes for `--json`).
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.skills.iter().map(|s| s.name.as_str())
    }

    pub fn len(&self) -> usize {
        self.skills.len()
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The real folders of the skills that lie outside `workspace_root` (a real path): all that
    /// `read_file` may read besides the workspace. Only the skills in the registry count, so
    /// neither a stray file in a skills root nor a shadowed or skipped skill is readable.
    pub fn folders_outside(&self, workspace_root: &Path) -> Vec<PathBuf> {
        self.skills
            .iter()
            .map(|s| &s.folder)
            .filter(|f| !f.starts_with(workspace_root))
            .cloned()
            .collect()
    }

    /// The system prompt's skills section, within `budget` characters.
    pub fn catalog(&self, budget: usize) -> String {
        catalog(self, budget)
    }
}

/// Helpers for this module's tests: fixtures written into temp folders.
#[cfg(test)]
pub(crate) mod test_util {
    use std::path::Path;

    /// Writes `text` to `path`, creating folders.
    pub fn write(path: &Path, text: impl AsRef<[u8]>) {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create test folder");
        }
        std::fs::write(path, text).expect("write test file");
    }

    /// A project skill `name` as discovery would give it, its files under `/p/NAME`.
    pub fn project_skill(name: &str, description: &str) -> super::Skill {
        super::Skill {
            name: name.into(),
            source: super::Source::Project,
            path: std::path::PathBuf::from(format!("/p/{name}/SKILL.md")),
            folder: std::path::PathBuf::from(format!("/p/{name}")),
            within: None,
            description: description.into(),
            model_invocable: true,
            user_invocable: true,
            argument_hint: None,
        }
    }

    /// Writes `<root>/<name>/SKILL.md` with the given description and body.
    pub fn skill(root: &Path, name: &str, description: &str, body: &str) {
        write(
            &root.join(name).join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n"),
        );
    }
}
