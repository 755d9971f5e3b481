//! Trust for project hooks: a project's `.hx/hooks.json` is code from the repository, so it
//! runs only after the user ran `hx trust` on exactly that content.
//!
//! The store is `trusted.json` in the user's config dir: the canonical path of each trusted
//! hooks file mapped to the SHA-256 of its content. Any edit of the hooks file changes the
//! hash, so a pulled commit cannot change the command lines under an old approval.
//!
//! What is trusted is the hooks file only, not the scripts its commands call: a trusted
//! `./scripts/check.sh` runs whatever that script is at the time, pulled changes included.
//! Hashing the scripts too would need to know which files a shell command line reads, which
//! cannot be known in general.
//!
//! A `.hx/hooks.json` that is (or sits in a `.hx` that is) a symbolic link is never trusted:
//! see `link_problem`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::config::{user_config_dir, Env};

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Where a hooks file stands with the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustState {
    Trusted,
    Untrusted,
    /// Trusted once, but the content is no longer what was trusted.
    Changed,
}

/// The key of a hooks file: its canonical path, so that two spellings of one file share one
/// approval. `None` when the path cannot be resolved (the file is gone): such a file is not
/// trusted, rather than keyed by a spelling that a later lookup would not find.
pub fn key_of(file: &Path) -> Option<String> {
    std::fs::canonicalize(file)
        .ok()
        .map(|p| p.display().to_string())
}

/// Why the project hooks file `file` (`<project>/.hx/hooks.json`) cannot be trusted as it is:
/// it, or its `.hx` folder, is a symbolic link. `None` when both are real.
///
/// Approvals are keyed by the canonical path, which resolves links to their target. A
/// repository could then ship `.hx/hooks.json` (or `.hx`) as a link to a hooks file the user
/// trusted in another project: the hash matches, and that project's commands would run here,
/// in this project's folder, on this project's `./scripts`. So only a real file in a real
/// `.hx` folder is trusted. (Links above `.hx` are fine: the whole project is reached through
/// them, scripts included.)
pub fn link_problem(file: &Path) -> Option<String> {
    let is_link = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
    let why = "a link could borrow the approval of the file it points to";
    if is_link(file) {
        return Some(format!(
            ".hx/hooks.json is a symbolic link, and {why}; make it a real file"
        ));
    }
    if file.parent().is_some_and(is_link) {
        return Some(format!(
            ".hx is a symbolic link, and {why}; make it a real folder"
        ));
    }
    None
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
        key_of(file).is_some_and(|k| self.entries.remove(&k).is_some())
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
    fn a_corrupt_store_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("trusted.json");
        std::fs::write(&path, "[1, 2").expect("write");
        let err = TrustStore::load(&path).expect_err("corrupt");
        assert!(err.contains("is not a valid trust store"), "{err}");
    }
}
