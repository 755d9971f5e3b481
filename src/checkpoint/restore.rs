//! Reading checkpoints back: what changed between two, the diff, and a restore that writes
//! a checkpoint's files into the workspace without ever going through a link (`place`).

use std::collections::BTreeMap;
use std::io::Write;

use super::git::Run;
use super::objects::parse_hex;
use super::{compare, place};
use super::{safe_rel, split_paths, Changes, Restored, Store, LIST_BYTES};

/// Files read from the store before they are written: 16 of `max_file_bytes` (10 MiB by
/// default) stay within `LIST_BYTES`, and a rewind holds no more than that in memory.
const BLOBS_AT_ONCE: usize = 16;

impl Store {
    /// The bytes of the blobs `hashes` names, read with one `git cat-file --batch` (one
    /// process per file made a rewind of 100 files twice as slow). The caller asks for at
    /// most [`BLOBS_AT_ONCE`], so the answer stays within what one git answer may hold.
    async fn blobs(
        &self,
        hashes: &[&str],
    ) -> Result<std::collections::HashMap<String, Vec<u8>>, String> {
        let mut out = std::collections::HashMap::new();
        {
            let input: String = hashes.iter().map(|h| format!("{h}\n")).collect();
            let answer = self
                .git
                .run(
                    &["cat-file", "--batch"],
                    Run {
                        stdin: Some(input.into_bytes()),
                        limit: LIST_BYTES,
                        ..Run::default()
                    },
                )
                .await
                .map_err(|e| format!("cannot read the checkpoint's files: {e}"))?;
            let mut rest = answer.as_slice();
            // Each answer: "<hash> blob <size>\n", the bytes, "\n"; "<name> missing\n"
            // for one the store lacks, which the caller reports by path.
            while let Some(end) = rest.iter().position(|&b| b == b'\n') {
                let header = String::from_utf8_lossy(&rest[..end]).into_owned();
                rest = &rest[end + 1..];
                let mut words = header.split(' ');
                let (Some(hash), Some(kind), Some(size)) =
                    (words.next(), words.next(), words.next())
                else {
                    continue;
                };
                let Ok(size) = size.parse::<usize>() else {
                    continue;
                };
                if kind != "blob" || rest.len() < size {
                    return Err(format!("cannot read the checkpoint's files: {header}"));
                }
                // What is written back is what the checkpoint took, or nothing.
                if parse_hex(hash) != Some(super::objects::name("blob", &rest[..size])) {
                    return Err(format!(
                        "the store's copy of {hash} is not what its name says: the store \
                         was changed, and nothing was written"
                    ));
                }
                out.insert(hash.to_string(), rest[..size].to_vec());
                rest = rest.get(size + 1..).unwrap_or_default();
            }
        }
        Ok(out)
    }

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
        // Read here when both trees and their files are loose (a run's own checkpoints):
        // a turn's figures start no process.
        if let (Some(x), Some(y)) = (parse_hex(a), parse_hex(b)) {
            let objects = &self.objects;
            if let Ok(mut c) = compare::changes(objects, &x, &y) {
                for (path, _) in c.paths.iter_mut() {
                    if let Some(shown) = path.strip_prefix(self.prefix.as_str()) {
                        *path = shown.to_string();
                    }
                }
                return Ok(c);
            }
        }
        self.git_changes(a, b).await
    }

    /// [`Store::changes`] as git tells them: where an object is packed.
    pub(super) async fn git_changes(&self, a: &str, b: &str) -> Result<Changes, String> {
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
    /// bits, but for the executable bit, which is the target's. Everything on the disk goes
    /// through open folders and never through a link (`place`); a path with a link (or a
    /// file) where a folder of its way should be is left alone, in `refused`.
    pub async fn restore(
        &self,
        target: &BTreeMap<String, Option<(String, String)>>,
        paths: &[String],
    ) -> Result<Restored, String> {
        let _lock = self.lock().await?;
        let mut done = Restored::default();
        let mut write: Vec<(&String, &String, &String)> = Vec::new();
        // The workspace's own folders (the store's work tree is the repository's top) are
        // never removed for being empty.
        let keep = 1 + self.prefix.split('/').filter(|c| !c.is_empty()).count();
        // Deepest first, so a folder a turn made is empty when its files are gone.
        let mut sorted: Vec<&String> = paths.iter().filter(|p| safe_rel(p)).collect();
        sorted.sort_by(|a, b| b.cmp(a));
        for p in sorted {
            let Some(entry) = target.get(p.as_str()) else {
                continue;
            };
            if let Some((mode, hash)) = entry {
                write.push((p, mode, hash));
                continue;
            }
            match place::folders(&self.git.work_tree, p, false) {
                Ok((open, name)) => {
                    let Some(at) = open.last() else { continue };
                    if place::remove(at, name) {
                        done.removed.push(p.clone());
                        place::remove_empty(&open, p, keep);
                    }
                }
                Err(place::Blocked::NotFolder) => done.refused.push(p.clone()),
                Err(_) => {}
            }
        }
        // Shallowest first: a folder the target has is made before what it holds.
        write.reverse();
        let files: Vec<(&String, u32, bool, &String)> = write
            .into_iter()
            .filter_map(|(p, mode, hash)| {
                let mode = u32::from_str_radix(mode, 8).unwrap_or(0);
                let link = match mode & 0o170000 {
                    0o100000 => false,
                    0o120000 => true,
                    // A submodule's commit: nothing of it is kept here.
                    _ => return None,
                };
                Some((p, mode, link, hash))
            })
            .collect();
        for chunk in files.chunks(BLOBS_AT_ONCE) {
            let hashes: Vec<&str> = chunk.iter().map(|(_, _, _, h)| h.as_str()).collect();
            let blobs = self.blobs(&hashes).await?;
            for &(p, mode, link, hash) in chunk {
                // Two paths may hold the same bytes: the blob is read once, used by both.
                let Some(bytes) = blobs.get(hash.as_str()) else {
                    return Err(format!("cannot read {p} from the checkpoint"));
                };
                let (open, name) = match place::folders(&self.git.work_tree, p, true) {
                    Ok(o) => o,
                    Err(place::Blocked::NotFolder) => {
                        done.refused.push(p.clone());
                        continue;
                    }
                    Err(place::Blocked::Missing) => return Err(format!("cannot restore {p}")),
                    Err(place::Blocked::Failed(e)) => {
                        return Err(format!("cannot restore {p}: {e}"))
                    }
                };
                let Some(at) = open.last() else { continue };
                let content = if link {
                    place::Content::Link(bytes)
                } else {
                    place::Content::File(bytes, mode & 0o111 != 0)
                };
                place::put(at, name, content).map_err(|e| format!("cannot restore {p}: {e}"))?;
                done.written.push(p.clone());
            }
        }
        done.removed.sort();
        done.written.sort();
        done.refused.sort();
        Ok(done)
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
