//! Trust for project files. A project's `.hx/config.toml` and `.hx/hooks.json` are code from
//! whoever wrote the repository: the config can send the API key to another server or turn the
//! guard off, the hooks run commands. So hx applies such a file only after the user ran
//! `hx trust` on exactly that content; until then a run leaves it out with one warning. The
//! user's own files and the environment need no trust.
//!
//! Each kind of file that needs trust is a [`Kind`] defined by the module that reads the file
//! (`config::TRUST`, `hooks::config::TRUST`), which reads it in runs through [`gate`]; the list
//! of them all is `cli::trust::KINDS`, and `hx trust` shows, approves, lists and revokes every
//! kind alike. This module knows none of them: it sits below the config and the hooks. Another
//! kind of project file that can run commands or move requests is one more `Kind` and one more
//! entry in that list.
//!
//! The store is `trusted.json` in the user's config dir: the canonical path of each trusted
//! file mapped to the SHA-256 of its content. Approvals are per file, and any edit of a file
//! changes its hash, so a pulled commit cannot change a file under an old approval, and
//! editing one file leaves the approval of another as it was.
//!
//! What is trusted is the file only, not the scripts its commands call: a trusted
//! `./scripts/check.sh` runs whatever that script is at the time, pulled changes included.
//! Hashing the scripts too would need to know which files a shell command line reads, which
//! cannot be known in general.
//!
//! A project file that is (or sits in a folder that is) a symbolic link is never trusted: see
//! [`Kind::link_problem`].

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::paths::{user_config_dir, Env};
use crate::text::Warning;

/// The largest config or hooks file hx reads, the user's or a project's: such files are a few
/// kilobytes, and a bigger one is a mistake or an attack, not a configuration.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Problems reported of one file: past these, one line counts the rest.
const MAX_PROBLEMS_SHOWN: usize = 20;

/// What `hx trust` shows of a valid file (one line each, escaped), or the problems that
/// refuse it.
pub type Review = Result<Vec<String>, Vec<String>>;

/// A kind of project file that needs `hx trust`.
#[derive(Debug)]
pub struct Kind {
    /// Where it lives, relative to the project folder. The nearest one at or above the working
    /// directory counts.
    pub path: &'static str,
    /// How messages name it.
    pub label: &'static str,
    /// Reads the text of the file at the path as a run would, and gives the lines `hx trust`
    /// shows (escaped: they come from the repository). The problems it finds refuse trust.
    pub review: fn(&Path, &str) -> Review,
    /// What is approved: the file's bytes, or what a folder's files can run.
    pub content: Content,
}

/// What of a kind's path is hashed and approved.
#[derive(Debug, Clone, Copy)]
pub enum Content {
    /// The file, whole.
    File,
    /// A folder (`.claude/commands`): the text the function makes of it, a deterministic
    /// listing of what its files can run, so that an edit of what runs (and only that) asks
    /// again. `Ok(None)` when nothing in it runs: then there is nothing to trust.
    Folder(fn(&Path) -> Result<Option<Vec<u8>>, String>),
}

impl Kind {
    /// The nearest file of this kind at or above `cwd` (for a folder kind, the nearest
    /// folder in which something runs).
    pub fn find(&self, cwd: &Path) -> Option<PathBuf> {
        cwd.ancestors()
            .map(|d| d.join(self.path))
            .find(|p| match self.content {
                Content::File => p.is_file(),
                Content::Folder(read) => p.is_dir() && !matches!(read(p), Ok(None)),
            })
    }

    /// What of the path found is approved, read as a run reads it: `None` when there is
    /// none (any more). Errors name the path.
    pub fn read(&self, path: &Path) -> Result<Option<Vec<u8>>, String> {
        match self.content {
            Content::File => read_file(path),
            Content::Folder(_) if !path.is_dir() => Ok(None),
            Content::Folder(read) => read(path).map_err(|e| format!("{}: {e}", path.display())),
        }
    }

    /// The store's key for this kind's file in folder `dir`, whether or not the file is
    /// there: `dir`'s canonical path joined with the kind's path. Only a real file in real
    /// folders is ever trusted (see [`Kind::link_problem`]), so this is the key [`key_of`]
    /// gave it, also once the file (or its `.hx`) is gone and can no longer be resolved.
    pub fn key_in(&self, dir: &Path) -> Option<String> {
        std::fs::canonicalize(dir)
            .ok()
            .map(|d| d.join(self.path).display().to_string())
    }

    /// The project folder of `file`, found by [`Kind::find`]: the folder its path is
    /// relative to.
    pub fn project_dir<'a>(&self, file: &'a Path) -> &'a Path {
        let depth = Path::new(self.path).components().count();
        // A path found by `find` always has that many parents; the fallback keeps this total.
        file.ancestors().nth(depth).unwrap_or(file)
    }

    /// Why `file` (found by [`Kind::find`]) cannot be trusted as it is: it, or a folder
    /// between it and the project folder (`.hx`), is a symbolic link. `None` when all are real.
    ///
    /// Approvals are keyed by the canonical path, which resolves links to their target. A
    /// repository could then ship `.hx/hooks.json` (or `.hx`) as a link to a file the user
    /// trusted in another project: the hash matches, and that project's commands would run
    /// here, in this project's folder, on this project's `./scripts`. So only a real file in
    /// real folders is trusted. (Links above the project folder are fine: the whole project is
    /// reached through them, scripts included.)
    pub fn link_problem(&self, file: &Path) -> Option<String> {
        let is_link =
            |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
        let why = "a link could borrow the approval of the file it points to";
        let mut rel = Path::new(self.path);
        let mut at = file;
        let mut what = "file";
        loop {
            if is_link(at) {
                return Some(format!(
                    "{} is a symbolic link, and {why}; make it a real {what}",
                    rel.display()
                ));
            }
            rel = rel.parent().filter(|r| !r.as_os_str().is_empty())?;
            at = at.parent()?;
            what = "folder";
        }
    }
}

/// Text from a project file as `hx trust` shows it: quoted, on one line, every control
/// character shown (the terminal's one escaping function), so that a `\r` or an escape
/// sequence cannot make `touch PWNED #\r./scripts/lint.sh` look like `./scripts/lint.sh` on a
/// terminal, and the user approve what they did not see.
pub fn escaped(text: &str) -> String {
    format!("\"{}\"", crate::text::escape_line(text))
}

/// The problems found in one file as lines to print, at most [`MAX_PROBLEMS_SHOWN`] and one
/// that counts the rest: a file of a megabyte of mistakes must not flood the terminal.
pub fn problem_lines(problems: &[String]) -> Vec<String> {
    let mut lines: Vec<String> = problems.iter().take(MAX_PROBLEMS_SHOWN).cloned().collect();
    if problems.len() > MAX_PROBLEMS_SHOWN {
        lines.push(format!(
            "and {} more problems",
            problems.len() - MAX_PROBLEMS_SHOWN
        ));
    }
    lines
}

/// Reads a config or hooks file, the user's or a project's, whole: `None` when there is none.
/// Errors name the file. Only a regular file is read (a FIFO would block the run), and at most
/// [`MAX_FILE_BYTES`].
pub fn read_file(path: &Path) -> Result<Option<Vec<u8>>, String> {
    let p = path.display();
    match crate::paths::read_regular(path, MAX_FILE_BYTES) {
        Ok(Some(bytes)) => Ok(Some(bytes)),
        Ok(None) => Err(format!(
            "{p}: larger than {} KiB, the most hx reads of a config or hooks file",
            MAX_FILE_BYTES / 1024
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
            Err(format!("{p}: not a regular file"))
        }
        Err(e) => Err(format!("{p}: cannot read ({e})")),
    }
}

/// What a run does with a project file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Apply it. `text` is the content whose hash the user approved: the bytes hashed are the
    /// bytes parsed, so the file cannot change between the two.
    Trusted { path: PathBuf, text: String },
    /// Leave it out; the notice (`hx: FILE: ...`) says why and what to do. `bytes` is what
    /// was read of the file, for a view that shows what waits for trust (`None` when it was
    /// not read: a link out of the project).
    Skipped {
        notice: Warning,
        path: PathBuf,
        bytes: Option<Vec<u8>>,
    },
}

/// The project file of `kind` for a run started in `cwd`, and whether the run applies it;
/// `None` when there is no such file. An `Err` (the file cannot be read) names the file.
pub fn gate(kind: &Kind, cwd: &Path, env: &Env) -> Result<Option<Gate>, String> {
    let Some(path) = kind.find(cwd) else {
        return Ok(None);
    };
    let skipped = |why: &str, bytes: Option<Vec<u8>>| {
        let notice = Warning::notice(format!("{}: {} skipped: {why}", path.display(), kind.label));
        Ok(Some(Gate::Skipped {
            notice,
            path: path.clone(),
            bytes,
        }))
    };
    if let Some(problem) = kind.link_problem(&path) {
        return skipped(&problem, None);
    }
    let Some(bytes) = kind.read(&path)? else {
        return Ok(None);
    };
    let store = match TrustStore::path_for(env).map(|p| TrustStore::load(&p)) {
        Some(Ok(store)) => store,
        Some(Err(e)) => {
            return skipped(
                &format!("{e}; fix or delete it, then run `hx trust`"),
                Some(bytes),
            )
        }
        None => {
            return skipped(
                "no user config dir (set HOME or XDG_CONFIG_HOME) to keep approvals in",
                Some(bytes),
            )
        }
    };
    match store.state(&path, &bytes) {
        TrustState::Untrusted => skipped(
            "not trusted; review the file, then run `hx trust` to allow it",
            Some(bytes),
        ),
        TrustState::Changed => skipped(
            "changed since trusted; review the file, then run `hx trust` again",
            Some(bytes),
        ),
        TrustState::Trusted => match String::from_utf8(bytes) {
            Ok(text) => Ok(Some(Gate::Trusted { path, text })),
            // `hx trust` approves text only; kept total for a store written by hand.
            Err(_) => Err(format!("{}: not UTF-8 text", path.display())),
        },
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    crate::text::hex(&Sha256::digest(bytes))
}

/// Where a project file stands with the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustState {
    Trusted,
    Untrusted,
    /// Trusted once, but the content is no longer what was trusted.
    Changed,
}

/// The key of a project file: its canonical path, so that two spellings of one file share one
/// approval. `None` when the path cannot be resolved (the file is gone): such a file is not
/// trusted, rather than keyed by a spelling that a later lookup would not find.
pub fn key_of(file: &Path) -> Option<String> {
    std::fs::canonicalize(file)
        .ok()
        .map(|p| p.display().to_string())
}

#[derive(Debug, Clone, Default)]
pub struct TrustStore {
    path: PathBuf,
    entries: BTreeMap<String, String>,
}

impl TrustStore {
    /// `trusted.json` in the user's config dir, if there is one.
    pub fn path_for(env: &Env) -> Option<PathBuf> {
        user_config_dir(env).map(|d| d.join("trusted.json"))
    }

    /// Reads the store; a missing file is an empty store.
    pub fn load(path: &Path) -> Result<TrustStore, String> {
        let entries = match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| format!("{} is not a valid trust store ({e})", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        Ok(TrustStore {
            path: path.to_path_buf(),
            entries,
        })
    }

    /// Whether `content`, read from `file`, is what the user trusted.
    pub fn state(&self, file: &Path, content: &[u8]) -> TrustState {
        let Some(key) = key_of(file) else {
            return TrustState::Untrusted;
        };
        match self.entries.get(&key) {
            None => TrustState::Untrusted,
            Some(h) if *h == sha256_hex(content) => TrustState::Trusted,
            Some(_) => TrustState::Changed,
        }
    }

    /// Records `content` of `file` as trusted, under its canonical path; returns its hash.
    pub fn trust(&mut self, file: &Path, content: &[u8]) -> Result<String, String> {
        let key =
            key_of(file).ok_or_else(|| format!("cannot resolve the path of {}", file.display()))?;
        let hash = sha256_hex(content);
        self.entries.insert(key, hash.clone());
        Ok(hash)
    }

    /// Forgets `file`; whether it was there.
    pub fn revoke(&mut self, file: &Path) -> bool {
        key_of(file).is_some_and(|k| self.revoke_key(&k))
    }

    /// Whether an approval is kept under `key`, present or not.
    pub fn holds(&self, key: &str) -> bool {
        self.entries.contains_key(key)
    }

    /// Forgets the approval kept under `key` (the file may be gone); whether there was one.
    pub fn revoke_key(&mut self, key: &str) -> bool {
        self.entries.remove(key).is_some()
    }

    pub fn entries(&self) -> &BTreeMap<String, String> {
        &self.entries
    }

    /// Writes the store atomically: a crash mid-write must not leave a torn file that would
    /// silently untrust (or, worse, fail to parse) every project.
    pub fn save(&self) -> Result<(), String> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let text = serde_json::to_string_pretty(&self.entries)
            .map_err(|e| format!("cannot encode the trust store: {e}"))?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)
            .map_err(|e| format!("cannot write in {}: {e}", dir.display()))?;
        tmp.write_all(text.as_bytes())
            .and_then(|_| tmp.write_all(b"\n"))
            .and_then(|_| tmp.as_file().sync_all())
            .map_err(|e| format!("cannot write the trust store: {e}"))?;
        tmp.persist(&self.path)
            .map_err(|e| format!("cannot replace {}: {}", self.path.display(), e.error))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two kinds as the config and the hooks define them; trust itself knows neither.
    const CONFIG: Kind = Kind {
        path: ".hx/config.toml",
        label: "project config",
        review: |_, text| Ok(text.lines().map(escaped).collect()),
        content: Content::File,
    };
    const HOOKS: Kind = Kind {
        path: ".hx/hooks.json",
        label: "project hooks",
        review: |_, text| Ok(text.lines().map(escaped).collect()),
        content: Content::File,
    };

    #[test]
    fn hash_is_sha256_hex() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn trusted_changed_untrusted_and_revoked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("hooks.json");
        std::fs::write(&file, "{}").expect("write");
        let store_path = dir.path().join("cfg").join("trusted.json");
        let mut store = TrustStore::load(&store_path).expect("empty store");
        assert_eq!(store.state(&file, b"{}"), TrustState::Untrusted);
        store.trust(&file, b"{}").expect("trust");
        store.save().expect("save");

        let store = TrustStore::load(&store_path).expect("reload");
        assert_eq!(store.state(&file, b"{}"), TrustState::Trusted);
        assert_eq!(store.state(&file, b"{ }"), TrustState::Changed);
        // Another spelling of the same path shares the approval.
        let other = dir.path().join(".").join("hooks.json");
        assert_eq!(store.state(&other, b"{}"), TrustState::Trusted);

        let mut store = store;
        assert!(store.revoke(&file));
        assert!(!store.revoke(&file));
        assert_eq!(store.state(&file, b"{}"), TrustState::Untrusted);
    }

    #[test]
    fn an_approval_outlives_its_file_under_the_same_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join(".hx/config.toml");
        std::fs::create_dir_all(dir.path().join(".hx")).expect("mkdir");
        std::fs::write(&file, "").expect("write");
        let mut store = TrustStore::load(&dir.path().join("trusted.json")).expect("store");
        store.trust(&file, b"").expect("trust");
        let key = CONFIG.key_in(dir.path()).expect("a key");
        assert_eq!(Some(&key), key_of(&file).as_ref());
        // Gone with its folder, the file has no canonical path, but its key is still known.
        std::fs::remove_dir_all(dir.path().join(".hx")).expect("rm");
        assert_eq!(key_of(&file), None);
        assert_eq!(CONFIG.key_in(dir.path()), Some(key.clone()));
        assert!(store.holds(&key));
        assert!(
            !store.revoke(&file),
            "a path that cannot be resolved names no approval"
        );
        assert!(store.revoke_key(&key));
        assert!(!store.holds(&key));
        assert!(!store.revoke_key(&key));
    }

    fn env_for(home: &Path) -> Env {
        let mut env = Env::new();
        env.insert("HOME".into(), home.display().to_string());
        env
    }

    #[test]
    fn a_kind_is_found_at_or_above_cwd_with_its_project() {
        let dir = tempfile::tempdir().expect("tempdir");
        let project = dir.path().join("p");
        let sub = project.join("a/b");
        std::fs::create_dir_all(project.join(".hx")).expect("mkdir");
        std::fs::create_dir_all(&sub).expect("mkdir");
        assert_eq!(CONFIG.find(&sub), None);
        std::fs::write(project.join(".hx/config.toml"), "").expect("write");
        let found = CONFIG.find(&sub).expect("found");
        assert_eq!(found, project.join(".hx/config.toml"));
        assert_eq!(CONFIG.project_dir(&found), project);
        assert_eq!(HOOKS.find(&sub), None, "each kind is its own file");
    }

    #[test]
    fn a_linked_file_or_folder_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("real");
        std::fs::create_dir_all(real.join(".hx")).expect("mkdir");
        std::fs::write(real.join(".hx/config.toml"), "").expect("write");
        assert_eq!(CONFIG.link_problem(&real.join(".hx/config.toml")), None);

        let file_link = dir.path().join("f");
        std::fs::create_dir_all(file_link.join(".hx")).expect("mkdir");
        std::os::unix::fs::symlink(
            real.join(".hx/config.toml"),
            file_link.join(".hx/config.toml"),
        )
        .expect("ln");
        let why = CONFIG
            .link_problem(&file_link.join(".hx/config.toml"))
            .expect("a link");
        assert!(
            why.starts_with(".hx/config.toml is a symbolic link"),
            "{why}"
        );
        assert!(why.ends_with("make it a real file"), "{why}");

        let dir_link = dir.path().join("d");
        std::fs::create_dir_all(&dir_link).expect("mkdir");
        std::os::unix::fs::symlink(real.join(".hx"), dir_link.join(".hx")).expect("ln");
        let why = CONFIG
            .link_problem(&dir_link.join(".hx/config.toml"))
            .expect("a link");
        assert!(why.starts_with(".hx is a symbolic link"), "{why}");
        assert!(why.ends_with("make it a real folder"), "{why}");
    }

    #[test]
    fn read_file_is_bounded_and_reads_regular_files_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config.toml");
        assert_eq!(read_file(&path), Ok(None));
        std::fs::write(&path, vec![b'#'; MAX_FILE_BYTES as usize]).expect("write");
        assert_eq!(
            read_file(&path).map(|b| b.map(|b| b.len())),
            Ok(Some(MAX_FILE_BYTES as usize))
        );
        std::fs::write(&path, vec![b'#'; MAX_FILE_BYTES as usize + 1]).expect("write");
        let err = read_file(&path).expect_err("too large");
        assert!(err.contains("larger than 1024 KiB"), "{err}");
        let err = read_file(dir.path()).expect_err("a folder");
        assert!(err.ends_with(": not a regular file"), "{err}");
    }

    #[test]
    fn gate_applies_only_the_trusted_content() {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_for(&dir.path().join("home"));
        let project = dir.path().join("p");
        std::fs::create_dir_all(project.join(".hx")).expect("mkdir");
        assert_eq!(gate(&CONFIG, &project, &env), Ok(None));
        let file = project.join(".hx/config.toml");
        std::fs::write(&file, "guard = false\n").expect("write");
        let skipped = |why: &str, bytes: &[u8]| {
            Ok(Some(Gate::Skipped {
                notice: Warning::notice(format!(
                    "{}: project config skipped: {why}",
                    file.display()
                )),
                path: file.clone(),
                bytes: Some(bytes.to_vec()),
            }))
        };
        assert_eq!(
            gate(&CONFIG, &project, &env),
            skipped(
                "not trusted; review the file, then run `hx trust` to allow it",
                b"guard = false\n"
            )
        );

        let store_path = TrustStore::path_for(&env).expect("store path");
        let mut store = TrustStore::load(&store_path).expect("store");
        store.trust(&file, b"guard = false\n").expect("trust");
        store.save().expect("save");
        assert_eq!(
            gate(&CONFIG, &project, &env),
            Ok(Some(Gate::Trusted {
                path: file.clone(),
                text: "guard = false\n".into()
            }))
        );
        // Trusting the config trusts nothing else.
        std::fs::write(project.join(".hx/hooks.json"), "{}").expect("write");
        assert!(matches!(
            gate(&HOOKS, &project, &env),
            Ok(Some(Gate::Skipped { .. }))
        ));

        std::fs::write(&file, "guard = false\nmax_turns = 1\n").expect("write");
        assert_eq!(
            gate(&CONFIG, &project, &env),
            skipped(
                "changed since trusted; review the file, then run `hx trust` again",
                b"guard = false\nmax_turns = 1\n"
            )
        );

        std::fs::write(&store_path, "{").expect("write");
        let Ok(Some(Gate::Skipped { notice, .. })) = gate(&CONFIG, &project, &env) else {
            panic!("a corrupt store trusts nothing");
        };
        let line = notice.to_string();
        assert!(line.contains("is not a valid trust store"), "{line}");
    }

    #[test]
    fn a_corrupt_store_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("trusted.json");
        std::fs::write(&path, "[1, 2").expect("write");
        let err = TrustStore::load(&path).expect_err("corrupt");
        assert!(err.contains("is not a valid trust store"), "{err}");
    }
}
