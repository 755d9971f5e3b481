//! The folders a command may write, worked out once per run from the settings, and what
//! `PATH` says about them: a folder on `PATH` that a command may write holds programs that
//! unsandboxed programs (the user's hooks and shell) then find.

use std::path::{Path, PathBuf};

use super::{Root, Settings};
use crate::paths::Env;

pub(super) const TMP_WHY: &str = "the temporary folder";
pub(super) const TMPDIR_WHY: &str = "$TMPDIR";

/// The workspace, the temporary folder(s) and the configured roots, canonical and without
/// duplicates. A configured root that cannot be resolved is a warning, not an error: the
/// rest of the sandbox still holds.
pub(super) fn writable_roots(
    settings: &Settings,
    workspace: &Path,
    env: &Env,
    warnings: &mut Vec<String>,
) -> Vec<Root> {
    let mut roots = vec![Root {
        path: workspace.to_path_buf(),
        why: "the workspace",
    }];
    let add = |path: PathBuf, why: &'static str, roots: &mut Vec<Root>| {
        if !roots.iter().any(|r| r.path == path) {
            roots.push(Root { path, why });
        }
    };
    if let Ok(tmp) = Path::new("/tmp").canonicalize() {
        add(tmp, TMP_WHY, &mut roots);
    }
    let tmpdir = env.get("TMPDIR").map(PathBuf::from);
    if let Some(t) = tmpdir.filter(|t| t.is_absolute()) {
        if let Ok(t) = t.canonicalize() {
            add(t, TMPDIR_WHY, &mut roots);
        }
    }
    let home = env.get("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let on_path = path_folders(env.get("PATH").map_or("", String::as_str));
    for raw in &settings.writable_roots {
        let path = if raw == "~" || raw.starts_with("~/") {
            match &home {
                Some(h) => h.join(raw.trim_start_matches('~').trim_start_matches('/')),
                None => {
                    warnings.push(format!(
                        "sandbox.writable_roots: {raw:?} needs HOME, which is not set; it is not writable"
                    ));
                    continue;
                }
            }
        } else {
            workspace.join(raw)
        };
        match path.canonicalize() {
            Ok(real) => {
                if let Some(w) = programs_warning(raw, &real, &on_path) {
                    warnings.push(w);
                }
                add(real, "sandbox.writable_roots", &mut roots)
            }
            Err(e) => {
                let why = match e.kind() {
                    std::io::ErrorKind::NotFound => "does not exist".to_string(),
                    _ => format!("cannot be used ({e})"),
                };
                warnings.push(format!(
                    "sandbox.writable_roots: {raw:?} ({}) {why}; it is not writable",
                    path.display()
                ));
            }
        }
    }
    roots
}

/// The absolute folders of a `PATH` value, resolved: each one's links resolved as far as it
/// exists, the missing rest kept as written (a folder that does not exist yet, such as
/// `~/.local/bin`, is searched as soon as a command makes it). Relative entries (and the empty
/// one, the current folder) name no fixed folder and are left out.
pub(super) fn path_folders(path: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for entry in std::env::split_paths(path) {
        if !entry.is_absolute() {
            continue;
        }
        if let Some(real) = resolve_existing(&entry) {
            if !out.contains(&real) {
                out.push(real);
            }
        }
    }
    out
}

/// `path` with its longest existing ancestor canonical and the rest appended; `None` when the
/// missing rest has a `..` (what it means depends on folders that do not exist yet).
pub(super) fn resolve_existing(path: &Path) -> Option<PathBuf> {
    let mut base = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = base.canonicalize() {
            return Some(rest.iter().rev().fold(real, |p, part| p.join(part)));
        }
        // No name for a path that ends in `..`.
        rest.push(base.file_name()?);
        base = base.parent()?;
    }
}

/// The warning for the configured root `raw` (canonical `real`) when it is, or holds, one of
/// the folders `on_path`: a command could put a program there that unsandboxed programs (the
/// user's hooks and shell, which search the same PATH) then run.
fn programs_warning(raw: &str, real: &Path, on_path: &[PathBuf]) -> Option<String> {
    let held: Vec<&PathBuf> = on_path.iter().filter(|p| p.starts_with(real)).collect();
    if held.is_empty() {
        return None;
    }
    let what = if held.len() == 1 && held[0] == real {
        "is a folder on PATH".to_string()
    } else {
        let names: Vec<String> = held.iter().map(|p| p.display().to_string()).collect();
        let noun = if held.len() == 1 {
            "a folder"
        } else {
            "folders"
        };
        format!("holds {}, {noun} on PATH", names.join(", "))
    };
    Some(format!(
        "sandbox.writable_roots: {raw:?} ({}) {what}: a command could put a program there that \
         your hooks and your shell then run outside the sandbox; allow a folder inside it that \
         holds no programs instead (such as ~/.cargo/registry rather than ~/.cargo)",
        real.display()
    ))
}

/// Warnings for the entries of `PATH` (`path`) that lead the user's unsandboxed programs (their
/// hooks, their shell) to programs a command may have put there: folders in the workspace (an
/// activated virtualenv's `.venv/bin`, direnv's `node_modules/.bin`), and relative entries
/// (`./node_modules/.bin`, or the empty one), which name whatever folder a program runs in:
/// the workspace, for hooks. A folder of `sandbox.writable_roots` has its own warning
/// ([`programs_warning`]).
pub(super) fn path_warnings(path: &str, workspace: &Path) -> Vec<String> {
    if path.is_empty() {
        return Vec::new();
    }
    let mut inside: Vec<PathBuf> = Vec::new();
    let mut relative: Vec<String> = Vec::new();
    for entry in std::env::split_paths(path) {
        if entry.is_absolute() {
            let real = resolve_existing(&entry);
            if real.is_some_and(|r| r.starts_with(workspace)) && !inside.contains(&entry) {
                inside.push(entry);
            }
            continue;
        }
        let shown = if entry.as_os_str().is_empty() {
            "\"\" (the current folder)".to_string()
        } else {
            format!("{:?}", entry.display().to_string())
        };
        if !relative.contains(&shown) {
            relative.push(shown);
        }
    }
    let mut warnings: Vec<String> = inside
        .iter()
        .map(|dir| {
            format!(
                "PATH holds {}, in the workspace, which commands may write: your hooks and your \
                 shell would run a program a command puts there; hx itself takes git, the \
                 hooks' shell and MCP programs from PATH's other folders",
                dir.display()
            )
        })
        .collect();
    if !relative.is_empty() {
        let one = relative.len() == 1;
        warnings.push(format!(
            "PATH holds the relative {} {}, which {} whatever folder a program runs in (the \
             workspace, for your hooks): your hooks and your shell would run a program a command \
             puts there; hx itself never looks a program up through {}",
            if one { "entry" } else { "entries" },
            relative.join(", "),
            if one { "names" } else { "name" },
            if one { "it" } else { "them" },
        ));
    }
    warnings
}
