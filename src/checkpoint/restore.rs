//! Reading checkpoints back: what changed between two, the diff, and a restore that writes
//! a checkpoint's files into the workspace without ever going through a link.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::git::Run;
use super::{safe_rel, split_paths, Changes, Restored, Store, LIST_BYTES};

impl Store {
    /// The paths that differ between two trees (or commits).
    pub async fn changed(&self, a: &str, b: &str) -> Result<Vec<String>, String> {
        if a == b {
            return Ok(Vec::new());
        }
        let out = self.diff_tree("--name-only", a, b).await?;
        Ok(split_paths(&out))
    }

    /// `git diff-tree -r -z --no-renames FORMAT a b`, its output bounded.
    async fn diff_tree(&self, format: &str, a: &str, b: &str) -> Result<Vec<u8>, String> {
        self.git
            .run(
                &["diff-tree", "-r", "-z", "--no-renames", format, a, b],
                Run {
                    limit: LIST_BYTES,
                    ..Run::default()
                },
            )
            .await
            .map_err(|e| e.to_string())
    }

    /// What changed between two trees, with lines added and removed.
    pub async fn changes(&self, a: &str, b: &str) -> Result<Changes, String> {
        if a == b {
            return Ok(Changes::default());
        }
        let out = self.diff_tree("--numstat", a, b).await?;
        let mut c = Changes::default();
        for item in out.split(|b| *b == 0).filter(|i| !i.is_empty()) {
            let text = String::from_utf8_lossy(item);
            let mut parts = text.splitn(3, '\t');
            let (Some(add), Some(del), Some(_)) = (parts.next(), parts.next(), parts.next()) else {
                continue;
            };
            c.added += add.parse::<u64>().unwrap_or(0);
            c.removed += del.parse::<u64>().unwrap_or(0);
        }
        let status = self
            .git
            .run(
                &[
                    "diff-tree",
                    "-r",
                    "-z",
                    "--no-renames",
                    "--name-status",
                    a,
                    b,
                ],
                Run {
                    limit: LIST_BYTES,
                    ..Run::default()
                },
            )
            .await
            .map_err(|e| e.to_string())?;
        let mut parts = status.split(|b| *b == 0).filter(|i| !i.is_empty());
        while let (Some(tag), Some(path)) = (parts.next(), parts.next()) {
            let kind = match tag.first() {
                Some(b'A') => "add",
                Some(b'D') => "delete",
                _ => "update",
            };
            let path = String::from_utf8_lossy(path);
            let shown = path.strip_prefix(self.prefix.as_str()).unwrap_or(&path);
            c.paths.push((shown.to_string(), kind));
        }
        Ok(c)
    }

    /// How each path that differs between `a` and `b` is in `a`: its mode and blob, or none
    /// when `a` does not have it.
    pub async fn differences(
        &self,
        a: &str,
        b: &str,
    ) -> Result<BTreeMap<String, Option<(String, String)>>, String> {
        let mut map = BTreeMap::new();
        if a == b {
            return Ok(map);
        }
        let out = self
            .git
            .run(
                &["diff-tree", "-r", "-z", "--no-renames", "--raw", a, b],
                Run {
                    limit: LIST_BYTES,
                    ..Run::default()
                },
            )
            .await
            .map_err(|e| e.to_string())?;
        // `:MODE_A MODE_B HASH_A HASH_B STATUS` NUL `PATH` NUL.
        let mut parts = out.split(|b| *b == 0).filter(|i| !i.is_empty());
        while let (Some(meta), Some(path)) = (parts.next(), parts.next()) {
            let meta = String::from_utf8_lossy(meta);
            let f: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
            let (Some(mode), Some(hash), Some(status)) = (f.first(), f.get(2), f.get(4)) else {
                continue;
            };
            let entry = (!status.starts_with('A')).then(|| (mode.to_string(), hash.to_string()));
            map.insert(String::from_utf8_lossy(path).into_owned(), entry);
        }
        Ok(map)
    }

    /// Gives each of `paths` its content and mode in the target back, as `differences` (of
    /// the target and now) says they are there, and removes those the target does not have.
    /// Other paths are left alone. A regular file that is rewritten keeps its permission
    /// bits, but for the executable bit, which is the target's.
    pub async fn restore(
        &self,
        target: &BTreeMap<String, Option<(String, String)>>,
        paths: &[String],
    ) -> Result<Restored, String> {
        let _lock = self.lock().await?;
        let mut done = Restored::default();
        let mut write: Vec<(&String, &String, &String)> = Vec::new();
        // Deepest first, so a folder a turn made is empty when its files are gone.
        let mut sorted: Vec<&String> = paths.iter().filter(|p| safe_rel(p)).collect();
        sorted.sort_by(|a, b| b.cmp(a));
        for p in sorted {
            let Some(entry) = target.get(p.as_str()) else {
                continue;
            };
            if !self.beneath_no_link(p) {
                done.refused.push(p.clone());
                continue;
            }
            let full = self.git.work_tree.join(p);
            if let Some((mode, hash)) = entry {
                write.push((p, mode, hash));
                continue;
            }
            match std::fs::symlink_metadata(&full) {
                Ok(m) if m.is_dir() => {
                    if std::fs::remove_dir(&full).is_ok() {
                        done.removed.push(p.clone());
                    }
                }
                Ok(_) => {
                    if std::fs::remove_file(&full).is_ok() {
                        done.removed.push(p.clone());
                    }
                    self.remove_empty_parents(p);
                }
                Err(_) => {}
            }
        }
        if !write.is_empty() {
            // What each file's permissions are now, to keep them (git knows only 644/755).
            let before: BTreeMap<&String, u32> = write
                .iter()
                .filter_map(|(p, _, _)| {
                    let m = std::fs::symlink_metadata(self.git.work_tree.join(p)).ok()?;
                    m.is_file().then(|| (*p, m.permissions().mode() & 0o7777))
                })
                .collect();
            // An index of just these entries, checked out.
            let index = self.dir.join("restore.index");
            let _ = std::fs::remove_file(&index);
            let run = || Run {
                index: Some(&index),
                limit: LIST_BYTES,
                ..Run::default()
            };
            let mut info = Vec::new();
            let mut names = Vec::new();
            for (p, mode, hash) in &write {
                let _ = writeln!(info, "{mode} {hash}\t{p}");
                names.extend_from_slice(p.as_bytes());
                names.push(0);
            }
            let result = async {
                self.git
                    .run(
                        &["update-index", "--index-info"],
                        Run {
                            stdin: Some(info),
                            ..run()
                        },
                    )
                    .await?;
                self.git
                    .run(
                        &["checkout-index", "-f", "-z", "--stdin"],
                        Run {
                            stdin: Some(names),
                            ..run()
                        },
                    )
                    .await
            }
            .await;
            let _ = std::fs::remove_file(&index);
            result.map_err(|e| e.to_string())?;
            for (p, mode, _) in write {
                let mode = u32::from_str_radix(mode, 8).unwrap_or(0);
                if let (Some(old), true) = (before.get(p), mode & 0o170000 == 0o100000) {
                    let exec = mode & 0o111 != 0;
                    let keep = old & 0o666 | if exec { (old & 0o444) >> 2 } else { 0 };
                    let _ = std::fs::set_permissions(
                        self.git.work_tree.join(p),
                        std::fs::Permissions::from_mode(keep),
                    );
                }
                done.written.push(p.clone());
            }
        }
        done.removed.sort();
        done.written.sort();
        Ok(done)
    }

    /// Whether every folder on the way to `rel` (below the work tree) is a real folder, not a
    /// link: a path is never removed through a link.
    fn beneath_no_link(&self, rel: &str) -> bool {
        let mut at = self.git.work_tree.clone();
        let parts: Vec<&str> = rel.split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.file_type().is_symlink() => return false,
                Ok(m) if !m.is_dir() => return true,
                Err(_) => return true,
                Ok(_) => {}
            }
        }
        true
    }

    /// Removes the folders above `rel` that its removal left empty, up to the workspace (a
    /// folder the target has files in gets them back from the checkout that follows).
    fn remove_empty_parents(&self, rel: &str) {
        let mut parent = Path::new(rel).parent();
        while let Some(p) = parent.filter(|p| !p.as_os_str().is_empty()) {
            if p.as_os_str().len() < self.prefix.len() {
                break;
            }
            if std::fs::remove_dir(self.git.work_tree.join(p)).is_err() {
                break;
            }
            parent = p.parent();
        }
    }

    /// A tree that is `base` with `paths` as they are in `top`: the changes of those paths
    /// only, for a diff limited to them.
    pub async fn tree_with(
        &self,
        base: &str,
        top: &str,
        paths: &[String],
    ) -> Result<String, String> {
        let _lock = self.lock().await?;
        let out = self
            .git
            .run(
                &["ls-tree", "-r", "-z", "--full-tree", top],
                Run {
                    limit: LIST_BYTES,
                    ..Run::default()
                },
            )
            .await
            .map_err(|e| e.to_string())?;
        let mut top_entries: BTreeMap<String, String> = BTreeMap::new();
        for item in out.split(|b| *b == 0).filter(|i| !i.is_empty()) {
            let text = String::from_utf8_lossy(item);
            if let Some((meta, path)) = text.split_once('\t') {
                let mut m = meta.split(' ');
                if let (Some(mode), Some(_), Some(hash)) = (m.next(), m.next(), m.next()) {
                    top_entries.insert(path.to_string(), format!("{mode} {hash}"));
                }
            }
        }
        let mut info = Vec::new();
        for p in paths {
            match top_entries.get(p) {
                Some(e) => writeln!(info, "{e}\t{p}"),
                None => writeln!(info, "0 {}\t{p}", "0".repeat(40)),
            }
            .ok();
        }
        let index = self.dir.join("diff.index");
        let run = || Run {
            index: Some(&index),
            limit: LIST_BYTES,
            ..Run::default()
        };
        let result = async {
            self.git.run(&["read-tree", base], run()).await?;
            self.git
                .run(
                    &["update-index", "--index-info"],
                    Run {
                        stdin: Some(info),
                        ..run()
                    },
                )
                .await?;
            self.git.line(&["write-tree"], run()).await
        }
        .await;
        let _ = std::fs::remove_file(&index);
        result.map_err(|e| e.to_string())
    }

    /// The unified diff (or `--stat`) from tree `a` to tree `b`, paths relative to the work
    /// tree, as `git apply` reads it; binary files are named, not dumped.
    /// Never coloured: colour for a terminal is added by whoever escapes the text for it.
    pub async fn diff(&self, a: &str, b: &str, stat: bool) -> Result<Vec<u8>, String> {
        let mut args = vec![
            "diff-tree",
            "-r",
            "--no-renames",
            "--no-ext-diff",
            "--no-textconv",
            "--color=never",
        ];
        args.push(if stat { "--stat" } else { "-p" });
        args.extend([a, b]);
        self.git
            .run(
                &args,
                Run {
                    limit: LIST_BYTES,
                    ..Run::default()
                },
            )
            .await
            .map_err(|e| e.to_string())
    }
}
