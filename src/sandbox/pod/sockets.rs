//! Other programs' pathname Unix sockets, found for the pod to cover with `/dev/null`: at the
//! pod's start and again in every launcher, before it joins the pod (the lists and the paths
//! are those of hx's namespaces).
//!
//! `/proc/net/unix` lists where each socket was bound, as its program wrote the path, in the
//! network namespace that reads it. That is not always where a command reaches it: a socket
//! bound at a temporary name and then linked or renamed into place (OpenSSH's ControlMaster
//! makes `~/.ssh/cm-*` so) is no longer at its listed path; one bound by a relative path is
//! relative to a folder the list does not name; one bound through a linked folder is listed
//! with the link, which the pod's mounts do not follow; and one of another network namespace
//! (a rootless container's) is in that namespace's list only, with a path of its process's
//! mount namespace. So sockets are found by place, not only by listed path:
//! - every network namespace hx can see is read, through one of its processes;
//! - each listed path is taken to hx's mount namespace (through the process's mounts where it
//!   has its own), relative ones against the folders its processes work in, and its folder's
//!   links are resolved;
//! - the folder of each listed path is scanned for sockets, as are the places where the
//!   user's agents and engines keep theirs ([`home_places`]: `~/.ssh`, `~/.gnupg`,
//!   `~/.docker`, ...), a few levels deep, links to sockets followed.
//!
//! What is left (a socket moved into a folder that holds no listed socket and is no known
//! place, one bound after a command's sweep) is in the README's Sandbox section; Landlock's
//! pathname socket right (ABI 9) closes it where the kernel has it.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{attach_null, sys};

/// At most this many sockets are covered per sweep (each costs a mount).
const MAX_SOCKETS: usize = 4096;
/// At most this many folder entries are looked at per sweep.
const MAX_ENTRIES: usize = 65_536;
/// At most this many processes are looked at for their namespaces and folders.
const MAX_PROCESSES: usize = 65_536;
/// At most this many bytes of one socket table.
const MAX_TABLE: u64 = 16 << 20;

/// A folder scanned for sockets, `depth` levels down (1: its own entries).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Place {
    pub path: PathBuf,
    pub depth: u8,
}

/// Where, under the user's home folder, programs that act with the user's credentials keep
/// their sockets: OpenSSH's control masters and agents (`ControlPath` often in a folder of
/// `~/.ssh`), GnuPG's agent, Docker Desktop's engine (`~/.docker/run`, `~/.docker/desktop`),
/// Colima's and Lima's engines, Rancher Desktop's, 1Password's ssh agent, and the home folder
/// itself (Bitwarden's agent, tools that put `~/.NAME.sock`). Folders are resolved when
/// scanned, links included.
pub fn home_places(home: &Path) -> Vec<Place> {
    const IN_HOME: [(&str, u8); 8] = [
        ("", 1),
        (".ssh", 2),
        (".gnupg", 1),
        (".docker", 3),
        (".colima", 2),
        (".lima", 3),
        (".rd", 1),
        (".1password", 1),
    ];
    IN_HOME
        .iter()
        .map(|(sub, depth)| Place {
            path: if sub.is_empty() {
                home.to_path_buf()
            } else {
                home.join(sub)
            },
            depth: *depth,
        })
        .collect()
}

/// The sockets a command must not reach, as paths of hx's mount namespace without links: not
/// beneath a kept path (the writable roots, the allowed sockets), and not in `/tmp` or
/// `/run`, which the pod replaces (a path there inside the pod is not the socket's).
///
/// `every_namespace`: read the tables of the other network namespaces too. That takes a look
/// at every process (a `stat` of its `ns/net`), which costs a launcher about 2 ms where the
/// rest of the sweep costs a few hundredths: so the pod's start does it, and each command's
/// launcher reads hx's own namespace's table only (a socket of another namespace bound after
/// the start stays reachable: the README says so). The processes are read anyway when a
/// relative path is listed, for their folders.
pub(crate) fn foreign_sockets(
    kept: &[PathBuf],
    places: &[Place],
    every_namespace: bool,
) -> Vec<PathBuf> {
    let mut f = Finder::new(kept);
    let mut procs: Option<Procs> = every_namespace.then(Procs::read);
    let namespaces = match &procs {
        Some(p) => p.namespaces(),
        None => vec![(ns_inode("self", "net"), None)],
    };
    let own_mnt = ns_inode("self", "mnt");
    for (net, pid) in namespaces {
        let table = match pid {
            None => read_table("/proc/net/unix"),
            Some(pid) => read_table(&format!("/proc/{pid}/net/unix")),
        };
        // Paths of another mount namespace are taken to ours through its mounts.
        let mapper = match pid {
            Some(pid) if own_mnt.is_some() && ns_inode(&pid.to_string(), "mnt") != own_mnt => {
                Mapper::of(pid)
            }
            _ => None,
        };
        let mut cwds: Option<Vec<PathBuf>> = None;
        for listed in table {
            if f.full() {
                break;
            }
            if listed.is_absolute() {
                let path = match &mapper {
                    Some(m) => m.to_ours(&listed),
                    None => Some(listed),
                };
                if let Some(p) = path {
                    f.listed(&p);
                }
                continue;
            }
            // Relative: against each folder a process of that namespace works in.
            let cwds = cwds.get_or_insert_with(|| {
                procs
                    .get_or_insert_with(Procs::read)
                    .cwds(net, mapper.as_ref())
            });
            for cwd in cwds.iter() {
                f.listed(&cwd.join(&listed));
            }
        }
    }
    for p in places {
        if let Ok(real) = std::fs::canonicalize(&p.path) {
            f.folder(real, p.depth);
        }
    }
    f.scan_all();
    f.out
}

/// Covers the socket at `path` with a read-only `/dev/null`, so `connect` is refused; a path
/// that is not a socket (already covered, or gone) or that holds a link is left alone.
pub(crate) fn cover_socket(path: &Path) -> std::io::Result<()> {
    cover_csocket(&sys::cstr(path)?)
}

/// [`cover_socket`] on a path made before a fork: allocates nothing, so hx's forked child
/// may call it (see `join`).
pub(crate) fn cover_csocket(path: &std::ffi::CStr) -> std::io::Result<()> {
    let fd = sys::open_cpath(path, false)?;
    if sys::file_type(&fd)? != libc::S_IFSOCK {
        return Ok(());
    }
    attach_null(&fd)
}

/// The paths of the pathname sockets in a `/proc/.../net/unix` table (absolute or relative).
fn read_table(file: &str) -> Vec<PathBuf> {
    use std::io::Read;
    let mut text = String::new();
    let read = std::fs::File::open(file).and_then(|f| f.take(MAX_TABLE).read_to_string(&mut text));
    if read.is_err() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for line in text.lines().skip(1) {
        // Num RefCount Protocol Flags Type St Inode Path: the path is the 8th field, and may
        // hold spaces; `@` starts an abstract name, which is no file.
        let mut rest = line;
        for _ in 0..7 {
            rest = rest.trim_start();
            rest = match rest.find(' ') {
                Some(i) => &rest[i..],
                None => "",
            };
        }
        let path = rest.trim_start();
        if path.is_empty() || path.starts_with('@') || path.len() > 4096 {
            continue;
        }
        out.push(PathBuf::from(path));
    }
    out
}

/// The inode of `/proc/WHO/ns/KIND`, which names the namespace; `None` where it cannot be
/// read (another user's process, one gone).
fn ns_inode(who: &str, kind: &str) -> Option<u64> {
    std::fs::metadata(format!("/proc/{who}/ns/{kind}"))
        .ok()
        .map(|m| m.ino())
}

/// The processes hx can see, with their network namespaces.
struct Procs {
    own_net: Option<u64>,
    list: Vec<(i32, u64)>,
}

impl Procs {
    fn read() -> Procs {
        let mut list = Vec::new();
        if let Ok(dir) = std::fs::read_dir("/proc") {
            for e in dir.flatten().take(MAX_PROCESSES) {
                let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                    continue;
                };
                if let Some(net) = ns_inode(&pid.to_string(), "net") {
                    list.push((pid, net));
                }
            }
        }
        Procs {
            own_net: ns_inode("self", "net"),
            list,
        }
    }

    /// Each network namespace once: hx's own first (`None`: read from `/proc/net/unix`), then
    /// every other with one of its processes.
    fn namespaces(&self) -> Vec<(Option<u64>, Option<i32>)> {
        let mut out = vec![(self.own_net, None)];
        let mut seen: HashSet<u64> = self.own_net.into_iter().collect();
        for &(pid, net) in &self.list {
            if seen.insert(net) {
                out.push((Some(net), Some(pid)));
            }
        }
        out
    }

    /// The folders the processes of network namespace `net` work in, as paths of hx's mount
    /// namespace (through `mapper` for another's).
    fn cwds(&self, net: Option<u64>, mapper: Option<&Mapper>) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        for &(pid, n) in &self.list {
            if Some(n) != net {
                continue;
            }
            let Ok(cwd) = std::fs::read_link(format!("/proc/{pid}/cwd")) else {
                continue;
            };
            let cwd = match mapper {
                Some(m) => m.to_ours(&cwd),
                None => Some(cwd),
            };
            if let Some(c) = cwd.filter(|c| !out.contains(c)) {
                out.push(c);
            }
        }
        out
    }
}

/// One line of a `mountinfo`: the device, the path within its file system that is mounted,
/// and where.
#[derive(Debug, Clone, PartialEq)]
struct Mount {
    dev: String,
    root: PathBuf,
    point: PathBuf,
}

/// Takes paths of another process's mount namespace to hx's, through the mounts of both.
struct Mapper {
    theirs: Vec<Mount>,
    ours: Vec<Mount>,
}

impl Mapper {
    fn of(pid: i32) -> Option<Mapper> {
        let read = |f: &str| std::fs::read_to_string(f).ok().map(|t| parse_mountinfo(&t));
        Some(Mapper {
            theirs: read(&format!("/proc/{pid}/mountinfo"))?,
            ours: read("/proc/self/mountinfo")?,
        })
    }

    fn to_ours(&self, path: &Path) -> Option<PathBuf> {
        map_path(&self.theirs, &self.ours, path)
    }
}

/// `path` of the namespace whose mounts are `theirs`, in the one whose mounts are `ours`: the
/// file system and the path in it from the mount that holds it (the deepest; the later of
/// two at one place, which is on top), then a mount of ours of that file system whose root
/// holds that path. `None` where ours does not show it.
fn map_path(theirs: &[Mount], ours: &[Mount], path: &Path) -> Option<PathBuf> {
    let mut held: Option<&Mount> = None;
    for m in theirs.iter().filter(|m| path.starts_with(&m.point)) {
        if held.is_none_or(|h| m.point.components().count() >= h.point.components().count()) {
            held = Some(m);
        }
    }
    let m = held?;
    let in_fs = m.root.join(path.strip_prefix(&m.point).ok()?);
    ours.iter()
        .filter(|o| o.dev == m.dev)
        .find_map(|o| Some(o.point.join(in_fs.strip_prefix(&o.root).ok()?)))
}

fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split(' ');
            let (_id, _parent, dev, root, point) =
                (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
            Some(Mount {
                dev: dev.to_string(),
                root: PathBuf::from(unescape(root)),
                point: PathBuf::from(unescape(point)),
            })
        })
        .collect()
}

/// A `mountinfo` field with its octal escapes (`\040` for a space) decoded.
fn unescape(field: &str) -> std::ffi::OsString {
    use std::os::unix::ffi::OsStringExt;
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    std::ffi::OsString::from_vec(out)
}

/// What one sweep found so far.
struct Finder<'a> {
    kept: &'a [PathBuf],
    out: Vec<PathBuf>,
    seen: HashSet<PathBuf>,
    /// Folders to scan, each at the greatest depth asked.
    folders: HashMap<PathBuf, u8>,
    /// Each listed path's folder, resolved once.
    resolved: HashMap<PathBuf, Option<PathBuf>>,
    entries: usize,
}

impl<'a> Finder<'a> {
    fn new(kept: &'a [PathBuf]) -> Finder<'a> {
        Finder {
            kept,
            out: Vec::new(),
            seen: HashSet::new(),
            folders: HashMap::new(),
            resolved: HashMap::new(),
            entries: 0,
        }
    }

    fn full(&self) -> bool {
        self.out.len() >= MAX_SOCKETS
    }

    /// A path a command must not reach unless it is beneath a kept path or the pod's own
    /// `/tmp` or `/run`.
    fn foreign(&self, p: &Path) -> bool {
        !(p.starts_with("/tmp")
            || p.starts_with("/run")
            || p.starts_with("/var/run")
            || self.kept.iter().any(|k| p.starts_with(k)))
    }

    fn push(&mut self, p: PathBuf) {
        if !self.full() && self.foreign(&p) && self.seen.insert(p.clone()) {
            self.out.push(p);
        }
    }

    /// A listed socket's path (absolute, of hx's mount namespace): its folder resolved, links
    /// and all, and scanned.
    fn listed(&mut self, path: &Path) {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return;
        };
        let real = self
            .resolved
            .entry(parent.to_path_buf())
            .or_insert_with(|| std::fs::canonicalize(parent).ok())
            .clone();
        if let Some(real) = real {
            self.push(real.join(name));
            self.folder(real, 1);
        }
    }

    fn folder(&mut self, real: PathBuf, depth: u8) {
        if !self.foreign(&real) {
            return;
        }
        let d = self.folders.entry(real).or_insert(0);
        *d = (*d).max(depth);
    }

    fn scan_all(&mut self) {
        let mut folders: Vec<(PathBuf, u8)> = self.folders.drain().collect();
        folders.sort();
        for (dir, depth) in folders {
            self.scan(&dir, depth);
        }
    }

    /// The sockets in `dir` (a real folder), `depth` levels down; a link is followed when it
    /// leads to a socket (the socket is covered where it really is).
    fn scan(&mut self, dir: &Path, depth: u8) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            self.entries += 1;
            if self.entries > MAX_ENTRIES || self.full() {
                return;
            }
            let Ok(kind) = e.file_type() else {
                continue;
            };
            let path = e.path();
            if kind.is_socket() {
                self.push(path);
            } else if kind.is_dir() && depth > 1 && self.foreign(&path) {
                self.scan(&path, depth - 1);
            } else if kind.is_symlink()
                && std::fs::metadata(&path).is_ok_and(|m| m.file_type().is_socket())
            {
                if let Ok(real) = std::fs::canonicalize(&path) {
                    self.push(real);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mount(dev: &str, root: &str, point: &str) -> Mount {
        Mount {
            dev: dev.into(),
            root: root.into(),
            point: point.into(),
        }
    }

    #[test]
    fn a_path_of_another_mount_namespace_is_taken_through_the_mounts() {
        let theirs = [
            mount("8:1", "/var/lib/c/rootfs", "/"),
            mount("8:1", "/home/u/data", "/data"),
            mount("0:50", "/", "/tmp"),
        ];
        let ours = [mount("8:1", "/", "/"), mount("0:22", "/", "/proc")];
        let map = |p: &str| map_path(&theirs, &ours, Path::new(p));
        assert_eq!(map("/data/app.sock"), Some("/home/u/data/app.sock".into()));
        assert_eq!(
            map("/run/x.sock"),
            Some("/var/lib/c/rootfs/run/x.sock".into())
        );
        // Their own tmpfs is nowhere in ours.
        assert_eq!(map("/tmp/x.sock"), None);
        // A bind of a folder of ours.
        let ours = [mount("8:1", "/home", "/mnt/h")];
        assert_eq!(
            map_path(&theirs, &ours, Path::new("/data/s")),
            Some("/mnt/h/u/data/s".into())
        );
    }

    #[test]
    fn mountinfo_lines_are_read_with_their_escapes() {
        let text = "36 35 98:0 /mnt1 /mnt/par\\040ent rw,noatime master:1 - ext3 /dev/root rw\n\
                    37 36 0:5 / /proc rw - proc proc rw\n";
        assert_eq!(
            parse_mountinfo(text),
            [
                mount("98:0", "/mnt1", "/mnt/par ent"),
                mount("0:5", "/", "/proc")
            ]
        );
    }

    #[test]
    fn a_socket_table_gives_absolute_and_relative_paths_not_abstract_names() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("unix");
        std::fs::write(
            &t,
            "Num       RefCount Protocol Flags    Type St Inode Path\n\
             0000: 00000002 00000000 00010000 0001 01 20 /home/u/a b.sock\n\
             0000: 00000002 00000000 00010000 0001 01 21 @abstract\n\
             0000: 00000002 00000000 00010000 0001 01 22 rel.sock\n\
             0000: 00000002 00000000 00000000 0002 01 23\n",
        )
        .unwrap();
        assert_eq!(
            read_table(t.to_str().unwrap()),
            [PathBuf::from("/home/u/a b.sock"), PathBuf::from("rel.sock")]
        );
    }

    /// A socket moved within a scanned folder, one reached through a link in it, and one in a
    /// folder of a place are found; kept paths are not.
    #[test]
    fn scanning_finds_sockets_by_place() {
        // Not in /tmp, which the pod replaces, so the sweep never looks there; a checkout
        // may lie there itself (CI's may), and then /var/tmp serves.
        let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
        let base = if target.starts_with("/tmp") {
            PathBuf::from("/var/tmp")
        } else {
            target
        };
        std::fs::create_dir_all(&base).unwrap();
        let d = tempfile::tempdir_in(&base).unwrap();
        let root = d.path().canonicalize().unwrap();
        let sub = root.join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        let _s1 = std::os::unix::net::UnixListener::bind(root.join("top.sock")).unwrap();
        let _s2 = std::os::unix::net::UnixListener::bind(sub.join("deep.sock")).unwrap();
        std::os::unix::fs::symlink(sub.join("deep.sock"), root.join("link")).unwrap();
        let kept = [root.join("a/b/deep.sock")];
        let mut f = Finder::new(&kept);
        f.folder(root.clone(), 3);
        f.scan_all();
        assert_eq!(f.out, [root.join("top.sock")]);
        let mut f = Finder::new(&[]);
        f.folder(root.clone(), 1);
        f.scan_all();
        let mut out = f.out.clone();
        out.sort();
        // One level: the deep socket only through the link, where it really is.
        assert_eq!(out, [sub.join("deep.sock"), root.join("top.sock")]);
    }
}
