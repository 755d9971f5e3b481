//! git's object format, written and read by hx itself: what lets a checkpoint after a turn
//! store the files the turn changed, and their trees, commit and ref, without a process
//! (issue 33: the git processes of each checkpoint were most of what checkpoints cost a turn).
//!
//! A turn's objects are written loose (zlib over `"<kind> <size>\0<bytes>"`, named by the
//! SHA-1 of that), a first look's into one pack (`pack`), so the store stays a repository
//! git reads for `hx diff`, prunes and packs; loose objects and whole packed ones are read
//! here, and everything read is checked against its name, so a damaged or forged object is
//! an error, never content. Hand-written rather than gitoxide:
//! these four formats (blob, tree, commit, loose file) are a few dozen lines, where gix
//! would add a large dependency to compile for them.

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use sha1::{Digest, Sha1};

/// An object's name.
pub type Oid = [u8; 20];

/// Bytes an object read here may inflate to: a file over `max_file_bytes` is never stored,
/// and trees of a workspace within `max_files` are far smaller.
pub const MAX_OBJECT_BYTES: u64 = 256 * 1024 * 1024;

pub fn hex(oid: &Oid) -> String {
    crate::text::hex(oid)
}

pub fn parse_hex(s: &str) -> Option<Oid> {
    let s = s.as_bytes();
    if s.len() != 40 {
        return None;
    }
    let mut out = [0u8; 20];
    for (i, pair) in s.chunks(2).enumerate() {
        let d = |c: u8| (c as char).to_digit(16);
        out[i] = (d(pair[0])? * 16 + d(pair[1])?) as u8;
    }
    Some(out)
}

/// The name git gives `bytes` as an object of `kind`.
pub fn name(kind: &str, bytes: &[u8]) -> Oid {
    let mut h = Sha1::new();
    h.update(format!("{kind} {}\0", bytes.len()).as_bytes());
    h.update(bytes);
    h.finalize().into()
}

/// Where a checkpoint's new objects go: loose files (a turn's few), or one pack (a first
/// look's thousands, `pack`).
pub trait Sink {
    /// Stores `bytes` as an object of `kind` and gives its name.
    fn put(&self, kind: &str, bytes: &[u8]) -> std::io::Result<Oid>;
}

impl Sink for Objects {
    fn put(&self, kind: &str, bytes: &[u8]) -> std::io::Result<Oid> {
        self.write(kind, bytes)
    }
}

impl Sink for super::pack::PackWriter {
    fn put(&self, kind: &str, bytes: &[u8]) -> std::io::Result<Oid> {
        super::pack::PackWriter::put(self, kind, bytes)
    }
}

/// The objects of a repository: written loose, read loose or from the packs hx can read.
#[derive(Debug, Clone)]
pub struct Objects {
    dir: PathBuf,
    /// The packs, opened when an object is first not found loose.
    packs: std::sync::Arc<std::sync::OnceLock<super::pack::Packs>>,
}

impl Objects {
    pub fn new(git_dir: &Path) -> Objects {
        Objects {
            dir: git_dir.join("objects"),
            packs: Default::default(),
        }
    }

    fn path(&self, oid: &Oid) -> PathBuf {
        let h = hex(oid);
        self.dir.join(&h[..2]).join(&h[2..])
    }

    /// Writes `bytes` as an object of `kind` unless the store has it loose already, and
    /// gives its name. Written beside and renamed into place, so a crash leaves no half
    /// object under a name.
    pub fn write(&self, kind: &str, bytes: &[u8]) -> std::io::Result<Oid> {
        let oid = name(kind, bytes);
        let path = self.path(&oid);
        if path.exists() {
            return Ok(oid);
        }
        let folder = path.parent().unwrap_or(&self.dir);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(folder)?;
        let tmp = folder.join(format!(
            "tmp_obj_{}_{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        let written = (|| {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o444)
                .open(&tmp)?;
            // The fastest level: a checkpoint is on a turn's path, and prunes repack anyway.
            let mut z = flate2::write::ZlibEncoder::new(file, flate2::Compression::fast());
            z.write_all(format!("{kind} {}\0", bytes.len()).as_bytes())?;
            z.write_all(bytes)?;
            z.finish()?;
            std::fs::rename(&tmp, &path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written.map(|()| oid)
    }

    /// The object `oid` when the store has it loose or whole in a pack, checked against its
    /// name: `None` when it is not (it may be a delta in a pack, which git reads); an error
    /// when it is there but is not what its name says.
    pub fn read(&self, oid: &Oid) -> Result<Option<(String, Vec<u8>)>, String> {
        let file = match std::fs::File::open(self.path(oid)) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return self
                    .packs
                    .get_or_init(|| super::pack::Packs::open(&self.dir))
                    .read(oid)
            }
            Err(e) => return Err(format!("cannot read object {}: {e}", hex(oid))),
        };
        let mut raw = Vec::new();
        flate2::read::ZlibDecoder::new(file)
            .take(MAX_OBJECT_BYTES + 64)
            .read_to_end(&mut raw)
            .map_err(|e| format!("object {} is damaged: {e}", hex(oid)))?;
        let bad = || format!("object {} is damaged", hex(oid));
        let nul = raw.iter().position(|&b| b == 0).ok_or_else(bad)?;
        let header = std::str::from_utf8(&raw[..nul]).map_err(|_| bad())?;
        let (kind, size) = header.split_once(' ').ok_or_else(bad)?;
        let (kind, size) = (kind.to_string(), size.parse::<usize>().map_err(|_| bad())?);
        let body = raw.split_off(nul + 1);
        if body.len() != size || name(&kind, &body) != *oid {
            return Err(format!(
                "object {} is not what its name says: the store was changed",
                hex(oid)
            ));
        }
        Ok(Some((kind, body)))
    }
}

/// One entry of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    pub mode: u32,
    pub name: Vec<u8>,
    pub oid: Oid,
}

impl TreeEntry {
    pub fn is_tree(&self) -> bool {
        self.mode == 0o040000
    }
}

/// A tree object's bytes: entries in git's order, where a folder sorts as if its name ended
/// in `/`.
pub fn tree_bytes(entries: &mut [TreeEntry]) -> Vec<u8> {
    fn key(e: &TreeEntry) -> impl Iterator<Item = u8> + '_ {
        e.name.iter().copied().chain(e.is_tree().then_some(b'/'))
    }
    entries.sort_by(|a, b| key(a).cmp(key(b)));
    let mut out = Vec::with_capacity(entries.len() * 40);
    for e in entries.iter() {
        out.extend_from_slice(format!("{:o} ", e.mode).as_bytes());
        out.extend_from_slice(&e.name);
        out.push(0);
        out.extend_from_slice(&e.oid);
    }
    out
}

/// The entries of a tree object's bytes.
pub fn parse_tree(mut bytes: &[u8]) -> Result<Vec<TreeEntry>, String> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let bad = || "a tree of the store is damaged".to_string();
        let sp = bytes.iter().position(|&b| b == b' ').ok_or_else(bad)?;
        let mode = std::str::from_utf8(&bytes[..sp])
            .ok()
            .and_then(|m| u32::from_str_radix(m, 8).ok())
            .ok_or_else(bad)?;
        let rest = &bytes[sp + 1..];
        let nul = rest.iter().position(|&b| b == 0).ok_or_else(bad)?;
        let name = rest[..nul].to_vec();
        let oid: Oid = rest
            .get(nul + 1..nul + 21)
            .and_then(|s| s.try_into().ok())
            .ok_or_else(bad)?;
        out.push(TreeEntry { mode, name, oid });
        bytes = &rest[nul + 21..];
    }
    Ok(out)
}

/// A checkpoint's commit: as `git commit-tree` makes it with hx's name, at `time` (Unix
/// seconds, UTC).
pub fn commit_bytes(tree: &Oid, parent: Option<&Oid>, time: u64) -> Vec<u8> {
    let mut s = format!("tree {}\n", hex(tree));
    if let Some(p) = parent {
        s.push_str(&format!("parent {}\n", hex(p)));
    }
    s.push_str(&format!(
        "author hx <hx@localhost> {time} +0000\ncommitter hx <hx@localhost> {time} +0000\n\nhx checkpoint\n"
    ));
    s.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str], input: Option<&[u8]>) -> String {
        let mut child = Command::new("git")
            .args(args)
            .env("GIT_DIR", dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("git");
        if let Some(i) = input {
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(i)
                .expect("write");
        }
        drop(child.stdin.take());
        let out = child.wait_with_output().expect("git");
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// What hx writes, git reads as the same objects it would have made, and the other way.
    #[test]
    fn objects_written_here_are_gits_and_read_back_checked() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("repo.git");
        git(
            tmp.path(),
            &["init", "-q", "--bare", dir.to_str().expect("utf-8")],
            None,
        );
        let objects = Objects::new(&dir);
        let blob = objects.write("blob", b"hello\n").expect("blob");
        assert_eq!(
            hex(&blob),
            git(&dir, &["hash-object", "--stdin"], Some(b"hello\n"))
        );
        assert_eq!(git(&dir, &["cat-file", "-p", &hex(&blob)], None), "hello");
        let mut entries = vec![
            TreeEntry {
                mode: 0o100644,
                name: b"a.txt".to_vec(),
                oid: blob,
            },
            TreeEntry {
                mode: 0o040000,
                name: b"a".to_vec(),
                oid: name("tree", b""),
            },
            TreeEntry {
                mode: 0o100755,
                name: b"a-b".to_vec(),
                oid: blob,
            },
        ];
        objects.write("tree", b"").expect("empty tree");
        let tree = objects
            .write("tree", &tree_bytes(&mut entries))
            .expect("tree");
        git(&dir, &["fsck", "--strict", "--no-dangling"], None);
        let listed = git(&dir, &["ls-tree", &hex(&tree)], None);
        assert!(listed.starts_with("100755 blob"), "{listed}");
        let commit = objects
            .write("commit", &commit_bytes(&tree, None, 1_700_000_000))
            .expect("commit");
        assert_eq!(
            git(
                &dir,
                &["rev-parse", &format!("{}^{{tree}}", hex(&commit))],
                None
            ),
            hex(&tree)
        );
        let (kind, back) = objects.read(&tree).expect("read").expect("loose");
        assert_eq!(kind, "tree");
        assert_eq!(parse_tree(&back).expect("parse"), entries);
        // An object changed in place is refused, not read.
        let path = objects.path(&blob);
        let forged = {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            z.write_all(b"blob 7\0forged\n").expect("z");
            z.finish().expect("z")
        };
        let _ = std::fs::remove_file(&path);
        std::fs::write(&path, forged).expect("forge");
        assert!(objects.read(&blob).is_err());
        assert_eq!(objects.read(&name("blob", b"absent")), Ok(None));
    }
}
