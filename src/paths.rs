//! Paths hx works out: the environment map it reads them from, the user's folders it names,
//! and the real path of a path with every link resolved. A leaf module: it imports nothing of
//! hx, so the lowest layers (the sandbox, the session store, trust) can use it.

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::path::{Component, Path, PathBuf};

/// Symlink hops followed while resolving one path before giving up (the Linux limit).
const MAX_SYMLINK_HOPS: usize = 40;

/// The environment as hx reads it; a map so tests need not touch the process environment.
pub type Env = BTreeMap<String, String>;

pub fn process_env() -> Env {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// The user's home folder (`$HOME` as the process has it, non-UTF-8 too), where the user's
/// skills and MCP files live.
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The user's config file: `$XDG_CONFIG_HOME/hx/config.toml`, else `~/.config/hx/...`.
pub fn user_config_dir(env: &Env) -> Option<PathBuf> {
    let xdg = env.get("XDG_CONFIG_HOME").filter(|v| !v.is_empty());
    match xdg {
        Some(x) => Some(PathBuf::from(x).join("hx")),
        None => env
            .get("HOME")
            .filter(|v| !v.is_empty())
            .map(|h| PathBuf::from(h).join(".config").join("hx")),
    }
}

/// hx's cache folder: `$XDG_CACHE_HOME/hx` (an absolute one), else `~/.cache/hx`. What is in
/// it can be deleted at any time; hx makes it again.
pub fn cache_dir(env: &Env) -> Option<PathBuf> {
    let cache = match env.get("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(x) if Path::new(x).is_absolute() => PathBuf::from(x),
        _ => PathBuf::from(env.get("HOME").filter(|v| !v.is_empty())?).join(".cache"),
    };
    Some(cache.join("hx"))
}

/// hx's state folder: `$XDG_STATE_HOME/hx` (an absolute one), else `~/.local/state/hx`. The
/// sessions and the checkpoints live in it.
pub fn state_dir(env: &Env) -> Option<PathBuf> {
    let state = match env.get("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        Some(x) if Path::new(x).is_absolute() => PathBuf::from(x),
        _ => PathBuf::from(env.get("HOME").filter(|v| !v.is_empty())?)
            .join(".local")
            .join("state"),
    };
    Some(state.join("hx"))
}

/// A folder name for a workspace: its path with every character other than letters, digits,
/// `.`, `_` and `-` turned into `-`, cut to a readable length, plus a short hash of the whole
/// path, so that `/a-b/c` and `/a/b-c` (the same once flattened) stay apart.
pub fn workspace_folder(workspace: &Path) -> String {
    use sha2::Digest;
    let full = workspace.to_string_lossy();
    let mut flat: String = full
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let trimmed = flat.trim_start_matches('-').len();
    flat = flat.split_off(flat.len() - trimmed);
    if flat.len() > 80 {
        // Keep the end: the project's own name is more telling than /home/user/src.
        flat = flat.split_off(flat.len() - 80);
    }
    let hash = sha2::Sha256::digest(full.as_bytes());
    // Not `text::hex`: `paths` and `text` are one layer, and neither imports the other.
    let short: String = hash.iter().take(5).map(|b| format!("{b:02x}")).collect();
    format!("{flat}-{short}")
}

/// `path` as the user would type it from `cwd`: relative when it lies beneath it.
pub fn shown_from(path: &Path, cwd: &Path) -> String {
    let cwd_real = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    path.strip_prefix(&cwd_real)
        .or_else(|_| path.strip_prefix(cwd))
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}

/// `path` (absolute) with `.` dropped and `..` taken back as written, without looking at
/// the file system: links are left alone, as the name the user gave names them.
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// The real absolute path `path` (absolute) names, resolving it one component at a time as the
/// kernel would: every component that exists is checked for a symlink and the link followed
/// (also a dangling one, whose target a write would create), `..` applies to what is resolved
/// so far, and components that do not exist are taken as written. Resolving the deepest
/// existing ancestor alone is not enough: in `nope/../link/x` the `..` leads back to `link`,
/// which may point anywhere.
pub fn real_path(path: &Path) -> io::Result<PathBuf> {
    let mut pending: VecDeque<PathBuf> = parts(path).collect();
    let mut base = PathBuf::from("/");
    let mut hops = 0;
    while let Some(part) = pending.pop_front() {
        if part.as_os_str() == ".." {
            base.pop();
            continue;
        }
        let next = base.join(&part);
        match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return Err(io::Error::other("too many levels of symbolic links"));
                }
                let target = std::fs::read_link(&next)?;
                if target.is_absolute() {
                    base = PathBuf::from("/");
                }
                for (i, t) in parts(&target).enumerate() {
                    pending.insert(i, t);
                }
            }
            // An existing entry, or one that does not exist (yet): nothing to follow.
            _ => base = next,
        }
    }
    Ok(base)
}

/// The `..` and name components of a path (`.` and the root dropped).
fn parts(path: &Path) -> impl Iterator<Item = PathBuf> + '_ {
    path.components().filter_map(|c| match c {
        Component::ParentDir => Some(PathBuf::from("..")),
        Component::Normal(n) => Some(PathBuf::from(n)),
        _ => None,
    })
}

/// Writes `bytes` to `path` through a temporary file in its folder and a rename, making the
/// folder first: a reader sees the old file or the new one, never half of one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Opens `path` for reading if it is a regular file, without ever blocking: a FIFO (or a
/// device) put where a file is expected would otherwise hang the open or the read, and a
/// check before the open could be raced. The check is made on the opened file itself.
pub fn open_regular(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ))
    }
}

/// The whole of the regular file at `path` (opened as [`open_regular`] opens one) when it
/// holds at most `max` bytes; `Ok(None)` when it holds more, of which no more than `max + 1`
/// bytes are read: what every reader of a file from outside needs, whatever its limit.
pub fn read_regular(path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    open_regular(path)?
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= max).then_some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_regular_refuses_a_fifo_without_blocking() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("SKILL.md");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = open_regular(&fifo).expect_err("a FIFO");
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        std::fs::write(dir.path().join("f"), "x").expect("write");
        assert!(open_regular(&dir.path().join("f")).is_ok());
        assert_eq!(
            open_regular(&dir.path().join("nope"))
                .expect_err("missing")
                .kind(),
            io::ErrorKind::NotFound
        );
    }
}
