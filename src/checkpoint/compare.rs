//! What changed between two checkpoints, told from their trees and blobs read here: the
//! figures each turn shows (`FilesChanged`) without a `git diff-tree` per turn. When an
//! object is not loose in the store (packed by a prune), the caller asks git instead.

use std::collections::BTreeMap;

use super::objects::{parse_tree, Objects, Oid, TreeEntry};
use super::Changes;

/// What git's `--numstat` counts as binary: a NUL in the first 8,000 bytes.
const BINARY_PROBE: usize = 8000;

/// Time a file's line count may take before it is counted coarser.
const DIFF_TIME: std::time::Duration = std::time::Duration::from_millis(100);

/// Why the answer is git's: an object this side cannot read.
pub struct NotHere;

type Out = Vec<(Vec<u8>, &'static str, u64, u64)>;

/// What changed from tree `a` to tree `b`, paths as they are below the top.
pub fn changes(objects: &Objects, a: &Oid, b: &Oid) -> Result<Changes, NotHere> {
    let mut out: Out = Vec::new();
    diff(objects, Vec::new(), Some(a), Some(b), &mut out)?;
    out.sort_by(|x, y| x.0.cmp(&y.0));
    let mut c = Changes::default();
    for (path, kind, added, removed) in out {
        c.paths
            .push((String::from_utf8_lossy(&path).into_owned(), kind));
        c.added += added;
        c.removed += removed;
    }
    Ok(c)
}

fn read(objects: &Objects, oid: &Oid, kind: &str) -> Result<Vec<u8>, NotHere> {
    match objects.read(oid) {
        Ok(Some((k, bytes))) if k == kind => Ok(bytes),
        _ => Err(NotHere),
    }
}

fn entries(objects: &Objects, oid: Option<&Oid>) -> Result<BTreeMap<Vec<u8>, TreeEntry>, NotHere> {
    let Some(oid) = oid else {
        return Ok(BTreeMap::new());
    };
    let bytes = read(objects, oid, "tree")?;
    let list = parse_tree(&bytes).map_err(|_| NotHere)?;
    Ok(list.into_iter().map(|e| (e.name.clone(), e)).collect())
}

fn join(prefix: &[u8], name: &[u8]) -> Vec<u8> {
    let mut p = prefix.to_vec();
    if !p.is_empty() {
        p.push(b'/');
    }
    p.extend_from_slice(name);
    p
}

fn diff(
    objects: &Objects,
    prefix: Vec<u8>,
    a: Option<&Oid>,
    b: Option<&Oid>,
    out: &mut Out,
) -> Result<(), NotHere> {
    if a == b {
        return Ok(());
    }
    let (ea, eb) = (entries(objects, a)?, entries(objects, b)?);
    let names: std::collections::BTreeSet<&Vec<u8>> = ea.keys().chain(eb.keys()).collect();
    for name in names {
        let path = join(&prefix, name);
        let (x, y) = (ea.get(name), eb.get(name));
        if let (Some(x), Some(y)) = (x, y) {
            if x.mode == y.mode && x.oid == y.oid {
                continue;
            }
        }
        // A folder on either side: what it holds, added or removed file by file.
        let tree = |e: Option<&TreeEntry>| e.filter(|e| e.is_tree()).map(|e| e.oid);
        fn file(e: Option<&TreeEntry>) -> Option<&TreeEntry> {
            e.filter(|e| !e.is_tree() && e.mode != 0o160000)
        }
        let (ta, tb) = (tree(x), tree(y));
        if ta.is_some() || tb.is_some() {
            diff(objects, path.clone(), ta.as_ref(), tb.as_ref(), out)?;
        }
        match (file(x), file(y)) {
            (None, None) => {}
            (Some(x), None) => {
                let lines = lines(&read(objects, &x.oid, "blob")?);
                out.push((path, "delete", 0, lines));
            }
            (None, Some(y)) => {
                let lines = lines(&read(objects, &y.oid, "blob")?);
                out.push((path, "add", lines, 0));
            }
            (Some(x), Some(y)) => {
                let (added, removed) = if x.oid == y.oid {
                    (0, 0)
                } else {
                    counts(
                        &read(objects, &x.oid, "blob")?,
                        &read(objects, &y.oid, "blob")?,
                    )
                };
                out.push((path, "update", added, removed));
            }
        }
    }
    Ok(())
}

fn binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(BINARY_PROBE)].contains(&0)
}

/// The lines of a file added or removed whole, as git counts them (a last line without
/// its newline counts); none for a binary file.
fn lines(bytes: &[u8]) -> u64 {
    if binary(bytes) || bytes.is_empty() {
        return 0;
    }
    let n = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
    n + u64::from(!bytes.ends_with(b"\n"))
}

/// Lines added and removed from `a` to `b`; none when either is binary.
fn counts(a: &[u8], b: &[u8]) -> (u64, u64) {
    if binary(a) || binary(b) {
        return (0, 0);
    }
    let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
    // Myers is quadratic in the worst case (a 10 MiB file rewritten whole): past the
    // deadline the diff is finished coarser, and the figures are an upper bound.
    let diff = similar::TextDiff::configure()
        .timeout(DIFF_TIME)
        .diff_lines(a.as_ref(), b.as_ref());
    let (mut added, mut removed) = (0u64, 0u64);
    for op in diff.ops() {
        let (tag, old, new) = op.as_tag_tuple();
        match tag {
            similar::DiffTag::Equal => {}
            _ => {
                removed += old.len() as u64;
                added += new.len() as u64;
            }
        }
    }
    (added, removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_counted_as_git_counts_them() {
        assert_eq!(lines(b""), 0);
        assert_eq!(lines(b"a\nb\n"), 2);
        assert_eq!(lines(b"a\nb"), 2);
        assert_eq!(lines(b"a\0b\n"), 0);
        assert_eq!(counts(b"a\nb\nc\n", b"a\nB\nc\nd\n"), (2, 1));
        assert_eq!(counts(b"a\n", b"a"), (1, 1));
        assert_eq!(counts(b"x\0", b"y"), (0, 0));
    }
}
