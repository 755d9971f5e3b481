//! git's pack format, written and read by hx itself for the objects of a store's first look:
//! a workspace of 2,000 files in 2,000 folders is 4,000 objects, and as loose files their
//! creation was most of a first run (issue 33: 1.97 s against 0.11 s with checkpoints off,
//! nearly all of it in the file system making inodes). One pack is two files.
//!
//! A pack written here holds whole objects only (no deltas), each zlib-compressed after its
//! type and size, with version 2's index beside it (sorted names, CRC-32s, offsets), named
//! by its checksum as git names packs. Read back are only whole objects, found through an
//! index this reader can check; a delta (as `git gc` writes) is `None`, and the caller asks
//! git. Hand-written for the reason `objects` is: the formats are short, and gix would add a
//! large dependency to compile for them.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha1::{Digest, Sha1};

use super::index::be32;
use super::objects::{hex, name, Oid, MAX_OBJECT_BYTES};

/// An index file read at most: 50,000 files and their trees take about 3 MB.
const MAX_IDX_BYTES: u64 = 256 * 1024 * 1024;

fn kind_code(kind: &str) -> Option<u8> {
    match kind {
        "commit" => Some(1),
        "tree" => Some(2),
        "blob" => Some(3),
        "tag" => Some(4),
        _ => None,
    }
}

/// Objects smaller than this are stored in their zlib stream without compression: resetting
/// the compressor clears its tables (a 256 KB `memset`), which for a file of a few hundred
/// bytes cost more than the file itself (an eighth of a 2,000-file first run). The price is
/// room: they stay so through a prune's repack, which reuses packed data, so the store
/// keeps small files at about their size on disk, where zlib would halve source text.
const STORED_BELOW: usize = 4096;

/// `bytes` as a zlib stream of stored blocks, appended to `out`.
fn stored(bytes: &[u8], out: &mut Vec<u8>) {
    out.reserve(bytes.len() + bytes.len() / 65535 * 5 + 11);
    out.extend_from_slice(&[0x78, 0x01]);
    let mut chunks = bytes.chunks(65535).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(chunk) = chunks.next() {
        out.push(u8::from(chunks.peek().is_none()));
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    // Adler-32, sums kept below 2^32 by reducing every 5,552 bytes as zlib does.
    let (mut a, mut b) = (1u32, 0u32);
    for block in bytes.chunks(5552) {
        for &x in block {
            a += u32::from(x);
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    out.extend_from_slice(&((b << 16) | a).to_be_bytes());
}

/// `bytes` deflated by `z` (reset first), appended to `out`.
fn deflated(z: &mut flate2::Compress, bytes: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
    z.reset();
    out.reserve(bytes.len() + bytes.len() / 1000 + 64);
    let (start_in, mut status) = (z.total_in(), flate2::Status::Ok);
    while status != flate2::Status::StreamEnd {
        if out.len() == out.capacity() {
            out.reserve(out.capacity() / 2 + 64);
        }
        let done = (z.total_in() - start_in) as usize;
        status = z
            .compress_vec(&bytes[done..], out, flate2::FlushCompress::Finish)
            .map_err(std::io::Error::other)?;
    }
    Ok(())
}

/// A pack being written: objects go to a temporary file in the pack folder as they come;
/// [`PackWriter::finish`] gives it its header, checksum and index, and puts both in place.
pub struct PackWriter {
    folder: PathBuf,
    /// Taken by [`PackWriter::finish`]; still here when dropped, the temporary file goes.
    inner: Mutex<Option<Inner>>,
}

struct Inner {
    body: BufWriter<File>,
    body_path: PathBuf,
    at: u64,
    /// Each object's name, the CRC-32 of its entry, and where the entry starts.
    entries: Vec<(Oid, u32, u64)>,
    seen: HashSet<Oid>,
    /// One compressor for every object, reset between them: making one allocates and
    /// clears some 300 KB of tables, which for 4,000 small objects was most of the pack's
    /// cost.
    z: flate2::Compress,
}

/// A new temporary file's name in the pack folder, with `tmp_`, the prefix git gives its
/// own temporary files there.
fn temporary(folder: &Path) -> PathBuf {
    folder.join(format!(
        "tmp_pack_{}_{}",
        std::process::id(),
        fastrand::u64(..)
    ))
}

impl PackWriter {
    /// A pack for the repository at `git_dir`.
    pub fn new(git_dir: &Path) -> std::io::Result<PackWriter> {
        let folder = git_dir.join("objects").join("pack");
        std::fs::create_dir_all(&folder)?;
        let body_path = temporary(&folder);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&body_path)?;
        Ok(PackWriter {
            folder,
            inner: Mutex::new(Some(Inner {
                body: BufWriter::new(file),
                body_path,
                // The header comes first: 12 bytes.
                at: 12,
                entries: Vec::new(),
                seen: HashSet::new(),
                // The fastest level, as loose objects are written: a first look is on the
                // run's path.
                z: flate2::Compress::new(flate2::Compression::fast(), true),
            })),
        })
    }

    /// Adds `bytes` as an object of `kind` (once per name) and gives its name. Safe to
    /// call from several threads at once (a first look's two walkers): the name and a small
    /// object's entry are made before the pack is held.
    pub fn put(&self, kind: &str, bytes: &[u8]) -> std::io::Result<Oid> {
        let code = kind_code(kind).ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "not an object kind")
        })?;
        let oid = name(kind, bytes);
        // Type and size: four bits of size in the first byte, seven in each after.
        let mut entry = Vec::with_capacity(bytes.len() / 2 + 32);
        let mut size = bytes.len() as u64;
        let mut first = (code << 4) | (size & 0x0f) as u8;
        size >>= 4;
        while size > 0 {
            entry.push(first | 0x80);
            first = (size & 0x7f) as u8;
            size >>= 7;
        }
        entry.push(first);
        let small = bytes.len() < STORED_BELOW;
        if small {
            stored(bytes, &mut entry);
        }
        let mut held = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let inner = held
            .as_mut()
            .ok_or_else(|| std::io::Error::other("the pack is finished"))?;
        if !inner.seen.insert(oid) {
            return Ok(oid);
        }
        if !small {
            deflated(&mut inner.z, bytes, &mut entry)?;
        }
        let mut crc = flate2::Crc::new();
        crc.update(&entry);
        let at = inner.at;
        inner.body.write_all(&entry)?;
        inner.at += entry.len() as u64;
        inner.entries.push((oid, crc.sum(), at));
        Ok(oid)
    }

    /// Writes the pack and its index into the pack folder, the index last (git sees a pack
    /// only through its index), each renamed into place. Nothing written: no files.
    pub fn finish(self) -> std::io::Result<()> {
        let Some(inner) = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take() else {
            return Ok(());
        };
        let Inner {
            body,
            body_path,
            mut entries,
            ..
        } = inner;
        let done = (|| {
            let mut body = body.into_inner().map_err(|e| e.into_error())?;
            if entries.is_empty() {
                return Ok(());
            }
            let count = u32::try_from(entries.len()).map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "too many objects")
            })?;
            // The header, then the body read back through the checksum.
            let mut sum = Sha1::new();
            let mut header = Vec::with_capacity(12);
            header.extend_from_slice(b"PACK");
            header.extend_from_slice(&2u32.to_be_bytes());
            header.extend_from_slice(&count.to_be_bytes());
            sum.update(&header);
            let pack_tmp = temporary(&self.folder);
            let mut out = BufWriter::new(
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o444)
                    .open(&pack_tmp)?,
            );
            let written = (|| {
                out.write_all(&header)?;
                body.seek(SeekFrom::Start(0))?;
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = body.read(&mut buf)?;
                    if n == 0 {
                        break;
                    }
                    sum.update(&buf[..n]);
                    out.write_all(&buf[..n])?;
                }
                let checksum: [u8; 20] = sum.finalize().into();
                out.write_all(&checksum)?;
                // Not synced, as git's own objects in the store are not (`core.fsync=none`):
                // a machine's crash (not hx's) can lose them, as it could lose git's.
                out.into_inner().map_err(|e| e.into_error())?;
                Ok::<_, std::io::Error>(checksum)
            })();
            let checksum = match written {
                Ok(c) => c,
                Err(e) => {
                    let _ = std::fs::remove_file(&pack_tmp);
                    return Err(e);
                }
            };
            let base = self.folder.join(format!("pack-{}", hex(&checksum)));
            let pack = base.with_extension("pack");
            std::fs::rename(&pack_tmp, &pack)?;
            entries.sort_unstable_by_key(|e| e.0);
            let idx = idx_bytes(&entries, &checksum);
            crate::paths::write_atomic(&base.with_extension("idx"), &idx)
        })();
        let _ = std::fs::remove_file(&body_path);
        done
    }
}

impl Drop for PackWriter {
    /// A pack given up (the look went to git): its temporary file goes with it.
    fn drop(&mut self) {
        let inner = self.inner.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(inner) = inner.take() {
            let _ = std::fs::remove_file(&inner.body_path);
        }
    }
}

/// A version 2 pack index of `entries` (sorted by name) for the pack `checksum` names.
fn idx_bytes(entries: &[(Oid, u32, u64)], checksum: &[u8; 20]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + 1024 + entries.len() * 28 + 40);
    out.extend_from_slice(&[0xff, b't', b'O', b'c']);
    out.extend_from_slice(&2u32.to_be_bytes());
    let mut fanout = [0u32; 256];
    for (oid, _, _) in entries {
        fanout[usize::from(oid[0])] += 1;
    }
    let mut total = 0u32;
    for n in fanout {
        total += n;
        out.extend_from_slice(&total.to_be_bytes());
    }
    for (oid, _, _) in entries {
        out.extend_from_slice(oid);
    }
    for (_, crc, _) in entries {
        out.extend_from_slice(&crc.to_be_bytes());
    }
    let mut large: Vec<u64> = Vec::new();
    for (_, _, at) in entries {
        let small = if *at < 0x8000_0000 {
            *at as u32
        } else {
            large.push(*at);
            0x8000_0000 | (large.len() as u32 - 1)
        };
        out.extend_from_slice(&small.to_be_bytes());
    }
    for at in large {
        out.extend_from_slice(&at.to_be_bytes());
    }
    out.extend_from_slice(checksum);
    let sum: [u8; 20] = Sha1::digest(&out).into();
    out.extend_from_slice(&sum);
    out
}

/// One pack of a repository, through its index.
struct Pack {
    idx: Vec<u8>,
    count: usize,
    pack: File,
}

/// The packs of a repository, read when first asked.
#[derive(Default)]
pub struct Packs {
    packs: Vec<Pack>,
}

impl Packs {
    /// Every pack of `objects_dir` whose index this reader knows (version 2, checksum good).
    pub fn open(objects_dir: &Path) -> Packs {
        let mut packs = Vec::new();
        let Ok(rd) = std::fs::read_dir(objects_dir.join("pack")) else {
            return Packs { packs };
        };
        for e in rd.flatten() {
            let path = e.path();
            if path.extension().is_none_or(|x| x != "idx") {
                continue;
            }
            let Ok(Some(idx)) = crate::paths::read_regular(&path, MAX_IDX_BYTES) else {
                continue;
            };
            let Some(count) = check_idx(&idx) else {
                continue;
            };
            let Ok(pack) = File::open(path.with_extension("pack")) else {
                continue;
            };
            packs.push(Pack { idx, count, pack });
        }
        Packs { packs }
    }

    /// The object `oid` when a pack holds it whole, checked against its name: `None` when
    /// no pack holds it, or holds it as a delta; an error when what a pack holds is not
    /// what the name says.
    pub fn read(&self, oid: &Oid) -> Result<Option<(String, Vec<u8>)>, String> {
        for p in &self.packs {
            let Some(at) = p.find(oid) else { continue };
            return p.object(oid, at);
        }
        Ok(None)
    }
}

/// The object count of a version 2 index, when its layout is one. Its checksum is not
/// hashed (a store's index after `git gc` may be megabytes, read at a turn's first packed
/// object): a damaged index gives a wrong place, and what is read there fails its name.
fn check_idx(idx: &[u8]) -> Option<usize> {
    if idx.get(..8)? != [0xff, b't', b'O', b'c', 0, 0, 0, 2] {
        return None;
    }
    let count = be32(idx, 8 + 255 * 4)? as usize;
    // Names, CRCs, offsets, then the large offsets and two checksums.
    let fixed = 8 + 1024 + count.checked_mul(28)? + 40;
    (idx.len() >= fixed).then_some(count)
}

impl Pack {
    /// Where the entry of `oid` starts in the pack.
    fn find(&self, oid: &Oid) -> Option<u64> {
        let fan = |i: usize| be32(&self.idx, 8 + i * 4).map(|v| v as usize);
        let first = usize::from(oid[0]);
        let lo = if first == 0 { 0 } else { fan(first - 1)? };
        let hi = fan(first)?.min(self.count);
        let names = 8 + 1024;
        let name_at = |i: usize| &self.idx[names + i * 20..names + i * 20 + 20];
        let (mut lo, mut hi) = (lo, hi);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match name_at(mid).cmp(oid.as_slice()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let offsets = names + self.count * 24;
                    let small = be32(&self.idx, offsets + mid * 4)?;
                    if small & 0x8000_0000 == 0 {
                        return Some(u64::from(small));
                    }
                    let large = offsets + self.count * 4 + (small & 0x7fff_ffff) as usize * 8;
                    let b = self.idx.get(large..large + 8)?;
                    return Some(u64::from_be_bytes(b.try_into().ok()?));
                }
            }
        }
        None
    }

    fn object(&self, oid: &Oid, at: u64) -> Result<Option<(String, Vec<u8>)>, String> {
        let bad = || format!("object {} is damaged in its pack", hex(oid));
        let mut head = [0u8; 16];
        let n = self.pack.read_at(&mut head, at).map_err(|_| bad())?;
        let mut i = 0;
        let mut c = *head.get(i).filter(|_| n > 0).ok_or_else(bad)?;
        let code = (c >> 4) & 7;
        let mut size = u64::from(c & 0x0f);
        let mut shift = 4;
        while c & 0x80 != 0 {
            i += 1;
            c = *head.get(i).filter(|_| i < n).ok_or_else(bad)?;
            if shift > 60 {
                return Err(bad());
            }
            size |= u64::from(c & 0x7f) << shift;
            shift += 7;
        }
        let kind = match code {
            1 => "commit",
            2 => "tree",
            3 => "blob",
            4 => "tag",
            // A delta: git's to read.
            _ => return Ok(None),
        };
        if size > MAX_OBJECT_BYTES {
            return Err(bad());
        }
        let from = At {
            file: &self.pack,
            at: at + i as u64 + 1,
        };
        let mut body = Vec::with_capacity(size as usize);
        flate2::read::ZlibDecoder::new(from)
            .take(size + 1)
            .read_to_end(&mut body)
            .map_err(|_| bad())?;
        if body.len() as u64 != size || name(kind, &body) != *oid {
            return Err(format!(
                "object {} is not what its name says: the store was changed",
                hex(oid)
            ));
        }
        Ok(Some((kind.to_string(), body)))
    }
}

/// A file read from an offset on, without moving a shared position.
struct At<'a> {
    file: &'a File,
    at: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

impl std::fmt::Debug for Packs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Packs({})", self.packs.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(git_dir: &Path, args: &[&str]) -> (bool, String) {
        let out = Command::new("git")
            .arg("--git-dir")
            .arg(git_dir)
            .args(args)
            .output()
            .expect("git");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    }

    /// What hx packs, git reads whole and checks (`verify-pack`, `fsck`, `cat-file`), and
    /// hx reads back each object by its name; a pack changed after is an error, not content.
    #[test]
    fn a_pack_hx_writes_is_one_git_reads_and_hx_reads_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let git_dir = dir.path().join("git");
        let ok = Command::new("git")
            .args(["init", "-q", "--bare"])
            .arg(&git_dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "git init");
        // Given up: nothing is left in the pack folder.
        let dropped = PackWriter::new(&git_dir).expect("pack");
        dropped.put("blob", b"given up\n").expect("put");
        drop(dropped);
        let left = std::fs::read_dir(git_dir.join("objects/pack"))
            .expect("pack folder")
            .count();
        assert_eq!(left, 0, "a pack given up left its temporary file");
        let pack = PackWriter::new(&git_dir).expect("pack");
        let big: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let blobs = [&b"alpha\n"[..], b"", &big, b"alpha\n"];
        let oids: Vec<Oid> = blobs
            .iter()
            .map(|b| pack.put("blob", b).expect("put"))
            .collect();
        assert_eq!(oids[0], oids[3], "one name, one object");
        let mut entries = vec![super::super::objects::TreeEntry {
            mode: 0o100644,
            name: b"a.txt".to_vec(),
            oid: oids[0],
        }];
        let tree = pack
            .put("tree", &super::super::objects::tree_bytes(&mut entries))
            .expect("tree");
        pack.finish().expect("finish");
        let folder = git_dir.join("objects/pack");
        let mut names: Vec<String> = std::fs::read_dir(&folder)
            .expect("pack folder")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names.len(),
            2,
            "a pack and its index, nothing else: {names:?}"
        );
        let idx = folder.join(&names[0]);
        let (ok, out) = git(&git_dir, &["verify-pack", "-v", &idx.to_string_lossy()]);
        assert!(ok, "verify-pack: {out}");
        let (ok, out) = git(&git_dir, &["fsck", "--full", "--strict", "--no-dangling"]);
        assert!(ok, "fsck: {out}");
        let (ok, out) = git(&git_dir, &["cat-file", "-p", &hex(&tree)]);
        assert!(ok && out.contains("a.txt"), "cat-file: {out}");
        let packs = Packs::open(&git_dir.join("objects"));
        for (oid, bytes) in oids.iter().zip(blobs) {
            let (kind, read) = packs.read(oid).expect("read").expect("found");
            assert_eq!((kind.as_str(), read.as_slice()), ("blob", bytes));
        }
        assert_eq!(packs.read(&[7u8; 20]), Ok(None), "a name no pack has");
        // The big blob's last byte of compressed data changed: caught by its name or zlib.
        let pack_file = folder.join(&names[1]);
        let mut raw = std::fs::read(&pack_file).expect("read pack");
        let at = raw.len() - 30;
        raw[at] ^= 0xff;
        std::fs::set_permissions(
            &pack_file,
            std::os::unix::fs::PermissionsExt::from_mode(0o644),
        )
        .expect("chmod");
        std::fs::write(&pack_file, &raw).expect("write pack");
        let packs = Packs::open(&git_dir.join("objects"));
        let damaged = oids
            .iter()
            .chain([&tree])
            .filter(|o| packs.read(o).is_err())
            .count();
        assert_eq!(damaged, 1, "the changed object was read as content");
    }
}
