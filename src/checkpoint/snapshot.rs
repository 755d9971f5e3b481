//! Taking a checkpoint: the workspace looked at (or known unchanged from the watches), the
//! index brought up to date, its tree written and committed under the session's ref.

use std::collections::BTreeSet;
use std::ffi::CStr;
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use super::git::{GitError, Run};
use super::ignores::{Ignores, Rules};
use super::index::{self, FileStat, Index};
use super::listings::{self, Kind, Listings};
use super::live::{Live, Look, OnDisk};
use super::objects::{commit_bytes, hex, parse_hex, Oid};
use super::scan::{Scan, Scanned, Take, MAX_CHANGED};
use super::watch::{Pending, Watch};
use super::{
    index_entries, index_signature, named, plural, ref_safe, Snap, Store, LIST_BYTES, REFS,
};
use crate::paths::write_atomic;

/// The file a session's ref trades names with (see [`write_ref`]) is this and the ref's name,
/// in the store's git folder, where git reads no ref.
const REF_SPARE: &str = "hx-ref-spare-";

/// Removes the spares (see [`write_ref`]) whose session's ref is gone (a prune, a forget).
pub(super) fn drop_orphan_spares(git_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(git_dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(id) = name.to_str().and_then(|n| n.strip_prefix(REF_SPARE)) else {
            continue;
        };
        if !git_dir.join(REFS).join(id).is_file() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Writes `bytes` as the ref `name` without replacing its file, which `write_atomic` does
/// with a new file for each checkpoint and the old one freed: on ext4 a freed inode is
/// passed over by every file created in its group for a minute or more (`recently_deleted`),
/// and after many, each creation takes up to a millisecond (issue 33: a changed checkpoint
/// creates four files, its objects). So the bytes go into `spare`, the ref's own spare file,
/// which then trades names with the ref (`RENAME_EXCHANGE`): one atomic step for a reader,
/// as a rename is; the spare holds the ref's old content after. A spare just made is
/// synced once before its first exchange, so that a crash cannot leave the ref empty. After
/// that it is written in place without a sync: a crash may keep the exchange and lose the
/// write, and the ref then names what the spare held, this session's checkpoint before the
/// last (never another session's: each ref has its own spare). Where there is no ref yet,
/// or the spare cannot be used (a file system that cannot exchange), `write_atomic`.
fn write_ref(spare: &Path, name: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if !std::fs::symlink_metadata(name).is_ok_and(|m| m.is_file()) {
        return write_atomic(name, bytes);
    }
    // Nothing is changed under the ref's name unless the exchange was made.
    exchange_ref(spare, name, bytes).or_else(|_| write_atomic(name, bytes))
}

/// [`write_ref`] through the spare.
fn exchange_ref(spare: &Path, name: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(spare)?;
    let made = file.metadata()?.len() == 0;
    file.write_all_at(bytes, 0)?;
    file.set_len(bytes.len() as u64)?;
    if made {
        file.sync_all()?;
    }
    drop(file);
    rustix::fs::renameat_with(
        rustix::fs::CWD,
        spare,
        rustix::fs::CWD,
        name,
        rustix::fs::RenameFlags::EXCHANGE,
    )?;
    Ok(())
}

impl Store {
    fn run_index(&self) -> Run<'_> {
        Run {
            index: Some(&self.index),
            limit: LIST_BYTES,
            ..Run::default()
        }
    }

    /// The pathspec of the workspace.
    fn spec(&self) -> &str {
        if self.prefix.is_empty() {
            "."
        } else {
            &self.prefix
        }
    }

    /// Takes a checkpoint for `session`: the workspace as it is now. `previous` is the
    /// session's last one; when nothing changed since, it is the answer (nothing is written).
    /// The lines of what was skipped (too large, too many) come back once per path per run.
    pub async fn snapshot(
        &self,
        session: &str,
        previous: Option<&Snap>,
    ) -> Result<(Snap, Vec<String>), String> {
        let _lock = self.lock().await?;
        let (tree, mut warnings) = match self.watch.as_ref().map(Watch::pending) {
            // No event since the last checkpoint: the same files, the same tree.
            Some(Pending::Unchanged(tree)) => (tree, Vec::new()),
            Some(Pending::Changed(base, paths)) => match self.take_changed(&base, &paths).await {
                Ok(taken) => taken,
                Err(_) => self.look().await?,
            },
            _ => self.look().await?,
        };
        let ahead = std::mem::take(
            &mut *self
                .ahead_warnings
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        warnings.splice(0..0, ahead);
        if let Some(p) = previous.filter(|p| p.tree == tree) {
            return Ok((p.clone(), warnings));
        }
        // The commit and the ref are written here, not by git: a turn's checkpoint starts
        // no process. The ref last: a crash before it leaves only objects nothing names.
        let bad = |e: std::io::Error| format!("cannot write a checkpoint: {e}");
        let tree_oid = parse_hex(&tree).ok_or_else(|| format!("not a tree: {tree}"))?;
        let parent = match previous {
            Some(p) => Some(
                parse_hex(&p.commit).ok_or_else(|| format!("not a checkpoint: {}", p.commit))?,
            ),
            None => None,
        };
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let objects = &self.objects;
        // The previous checkpoint stays reachable through the new one, from the one ref.
        let commit = objects
            .write("commit", &commit_bytes(&tree_oid, parent.as_ref(), now))
            .map_err(bad)?;
        let commit = hex(&commit);
        let name = self.git.git_dir.join(REFS).join(ref_safe(session));
        let spare = self
            .git
            .git_dir
            .join(format!("{REF_SPARE}{}", ref_safe(session)));
        write_ref(&spare, &name, format!("{commit}\n").as_bytes()).map_err(bad)?;
        Ok((Snap { commit, tree }, warnings))
    }

    /// The checkpoint that takes the files `paths` (named by the watches) into `base`, the
    /// last checkpoint's tree held in memory; `Look` when only a look can tell.
    async fn take_changed(
        &self,
        base: &str,
        paths: &[Vec<u8>],
    ) -> Result<(String, Vec<String>), Look> {
        let objects = &self.objects;
        let known = self
            .live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_some_and(|l| l.tree == base);
        if !known {
            // Read when a turn first changes a file, from the loose trees a look wrote
            // (every file of the tree, and a tree per folder at most as many): a run that
            // changes nothing reads none. Packed (a prune packs the store): git lists it.
            let max = 2 * self.settings.max_files;
            let live = match Live::from_objects(base, objects, max) {
                Some(live) => Some(live),
                None => self.listed(base, max).await,
            };
            *self.live.lock().unwrap_or_else(|p| p.into_inner()) = live;
        }
        let mut held = self.live.lock().unwrap_or_else(|p| p.into_inner());
        let Some(live) = held.as_mut().filter(|l| l.tree == base) else {
            return Err(Look);
        };
        let prefix = self.prefix.as_bytes();
        let mine: Vec<Vec<u8>> = paths
            .iter()
            .filter(|p| p.starts_with(prefix))
            .cloned()
            .collect();
        let exclude = self.git.git_dir.join("info").join("exclude");
        let rules = Rules {
            exclude: Some(exclude.as_path()),
            global: self.git.excludes_file.as_deref(),
        };
        let taken = live
            .take(&self.git.work_tree, &mine, objects, &rules, &self.settings)
            .and_then(|skipped| {
                let tree = live.write(objects).map_err(|_| Look)?;
                Ok((tree, skipped))
            });
        match taken {
            Ok((tree, skipped)) => {
                if let Some(w) = &self.watch {
                    w.looked(&tree);
                }
                let warnings = self.warnings(skipped.too_big, skipped.too_many, skipped.unreadable);
                Ok((tree, warnings))
            }
            Err(e) => {
                // Half taken: the next checkpoint starts from a look.
                *held = None;
                Err(e)
            }
        }
    }

    /// A look made before the first checkpoint asks for one ([`Checkpoints::ahead`]): that
    /// checkpoint finds the watches set and the tree known, and gives the look's warnings.
    /// Without watches it would look again, so none is made; one that fails is made again
    /// by that checkpoint, which says why.
    ///
    /// [`Checkpoints::ahead`]: super::Checkpoints::ahead
    pub(super) async fn look_ahead(&self) {
        if self.watch.is_none() {
            return;
        }
        let Ok(_lock) = self.lock().await else {
            return;
        };
        if let Ok((_, warnings)) = self.look().await {
            self.ahead_warnings
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(warnings);
        }
    }

    /// Looks at the workspace: the watches set first where folders came (so that nothing
    /// after them is missed), in the same walk that holds the files against the index's stat
    /// data; the few files that changed since are taken in-process, and only what the walk
    /// cannot be sure of asks git, which brings the index up to date and writes its tree.
    async fn look(&self) -> Result<(String, Vec<String>), String> {
        self.looks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.sync_exclude();
        // The tree held stays good for the files it names; the rules it learnt may not be.
        if let Some(live) = self.live.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            live.forget_rules();
        }
        let resync = self.watch.as_ref().is_some_and(Watch::begin);
        let base = self.index_tree();
        // A store's first look (no index yet): every file taken in-process, into one pack.
        if base.is_none() && self.first_in_process && !self.index.exists() {
            if let Some(taken) = self.first_look(resync) {
                return taken;
            }
            return self.git_look().await;
        }
        let index = base.as_ref().and_then(|_| index::read(&self.index));
        let found = self.scan(index.as_ref(), resync, MAX_CHANGED, None);
        // Racily clean files stay so until git writes the index again (the walk never
        // does), and every run would read them: once a second has passed, git's look does
        // it, once.
        let found = match found {
            Scanned::Changed(_, true) if self.settle_due() => Scanned::Look,
            f => f,
        };
        if let (Some(base), Scanned::Changed(paths, _)) = (base, found) {
            if paths.is_empty() {
                if let Some(w) = &self.watch {
                    w.looked(&base);
                }
                return Ok((base, Vec::new()));
            }
            if let Ok(taken) = self.take_changed(&base, &paths).await {
                return Ok(taken);
            }
        }
        self.git_look().await
    }

    /// git's look: it brings the index up to date and writes its tree.
    async fn git_look(&self) -> Result<(String, Vec<String>), String> {
        self.git_looks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let staged = match self.stage().await {
            Ok(t) => t,
            // The index is only a cache: one that git cannot read is thrown away.
            Err(GitError::Failed(e)) if e.contains("index") => {
                let _ = std::fs::remove_file(&self.index);
                self.stage().await.map_err(|e| e.to_string())?
            }
            Err(e) => return Err(e.to_string()),
        };
        if let Some(w) = &self.watch {
            w.looked(&staged.0);
        }
        // git's look is what writes objects by the thousand (a first look stores every
        // file): they are counted now, once, rather than by the next run's bound check.
        super::store_size(&self.dir);
        Ok(staged)
    }

    /// A store's first look made in-process (issue 33: as git's, it wrote every file as a
    /// loose object, and a workspace of 2,000 folders took two seconds): the walk finds
    /// every file git would take, each is read once and stored in one pack with the trees,
    /// and the index is written with what was read, so the next run's walk holds the files
    /// against it. `None` when only git can be sure (a rule it may read otherwise, a folder
    /// that cannot be read, more files than `max_files`, a file that changed kind while
    /// read): git's look then, with the watches already set.
    fn first_look(&self, resync: bool) -> Option<Result<(String, Vec<String>), String>> {
        let empty = Index {
            entries: Vec::new(),
            mtime: (0, 0),
        };
        let pack = match super::pack::PackWriter::new(&self.git.git_dir) {
            Ok(p) => p,
            Err(e) => return Some(Err(format!("cannot write a checkpoint: {e}"))),
        };
        // Each file is read and stored by the walker that listed it, from the open folder.
        #[derive(Default)]
        struct Taken {
            files: Vec<(Vec<u8>, u32, Oid, FileStat)>,
            too_big: Vec<String>,
            unreadable: Vec<String>,
            failed: Option<String>,
        }
        let taken = Mutex::new(Taken::default());
        let max_bytes = self.settings.max_file_bytes;
        let take = |folder: BorrowedFd<'_>, name: &CStr, kind: Kind, path: &[u8]| {
            let lossy = || String::from_utf8_lossy(path).into_owned();
            let held = || taken.lock().unwrap_or_else(|p| p.into_inner());
            match super::live::on_disk_at(folder, name, kind, max_bytes).map_err(|_| ())? {
                OnDisk::Gone => {}
                OnDisk::TooBig => held().too_big.push(lossy()),
                OnDisk::Unreadable => held().unreadable.push(lossy()),
                OnDisk::Kept { mode, bytes, meta } => match pack.put("blob", &bytes) {
                    Ok(oid) => held().files.push((path.to_vec(), mode, oid, meta)),
                    Err(e) => {
                        held().failed = Some(e.to_string());
                        return Err(());
                    }
                },
            }
            Ok(())
        };
        let scanned = self.scan(Some(&empty), resync, self.settings.max_files, Some(&take));
        let Taken {
            mut files,
            mut too_big,
            mut unreadable,
            failed,
        } = taken.into_inner().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = failed {
            return Some(Err(format!("cannot write a checkpoint: {e}")));
        }
        let Scanned::Changed(..) = scanned else {
            return None;
        };
        // The index's order: bytes of the whole path.
        files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        files.dedup_by(|a, b| a.0 == b.0);
        too_big.sort_unstable();
        unreadable.sort_unstable();
        let mut live = Live::empty();
        let mut entries = Vec::with_capacity(files.len());
        for (path, mode, oid, meta) in files {
            live.insert(&path, mode, oid).ok()?;
            entries.push(index::Entry::of(path, mode, oid, &meta));
        }
        let written = live.write(&pack).and_then(|tree| {
            pack.finish()?;
            index::write(&self.index, &entries)?;
            Ok(tree)
        });
        let tree = match written {
            Ok(t) => t,
            Err(e) => return Some(Err(format!("cannot write a checkpoint: {e}"))),
        };
        if let Some(sig) = index_signature(&self.index) {
            let _ = write_atomic(&self.dir.join("tree"), format!("{sig}{tree}\n").as_bytes());
        }
        // Files written in the second the index was are racily clean, as after git's look.
        let _ = write_atomic(&self.dir.join("racy"), b"");
        if let Some(w) = &self.watch {
            w.looked(&tree);
        }
        *self.live.lock().unwrap_or_else(|p| p.into_inner()) = Some(live);
        super::store_size(&self.dir);
        Some(Ok((tree, self.warnings(too_big, Vec::new(), unreadable))))
    }

    /// The tree git wrote from the index as it is now, when it is known.
    fn index_tree(&self) -> Option<String> {
        let sig = index_signature(&self.index)?;
        let text = std::fs::read_to_string(self.dir.join("tree")).ok()?;
        let tree = text.strip_prefix(&sig)?.trim();
        parse_hex(tree).map(|_| tree.to_string())
    }

    /// The walk of the workspace against `index` (see `scan`), setting the watches when
    /// `resync`.
    fn scan(
        &self,
        index: Option<&Index>,
        resync: bool,
        max_changed: usize,
        take: Option<Take<'_>>,
    ) -> Scanned {
        let watch = self.watch.as_ref().filter(|_| resync);
        // Neither an index to hold the files against nor watches to set: nothing to walk.
        if index.is_none() && watch.is_none() {
            return Scanned::Look;
        }
        let exclude = self.git.git_dir.join("info").join("exclude");
        let top = &self.git.work_tree;
        let listed = self.dir.join(listings::FILE);
        // Those the sandbox's walk read at the run's start, for its first look; read anew
        // for every other, since each look may rewrite them.
        let given = self.kept.lock().unwrap_or_else(|p| p.into_inner()).take();
        let listings = given
            .and_then(|k| k.into_look(top))
            .unwrap_or_else(|| Listings::read(&listed));
        let scan = Scan {
            top,
            prefix: self.prefix.as_bytes(),
            rules: Rules {
                exclude: Some(exclude.as_path()),
                global: self.git.excludes_file.as_deref(),
            },
            max_files: self.settings.max_files,
            max_changed,
            listings: &listings,
            take,
        };
        let mut ignores = Ignores::default();
        let found = match watch {
            None => scan.walk(index, &mut ignores, None).1,
            Some(w) => {
                // The folders above the workspace, for their `.gitignore`; `info`, for
                // `exclude`.
                let root = top.join(&self.prefix);
                let mut also: Vec<PathBuf> = root
                    .ancestors()
                    .skip(1)
                    .take_while(|a| a.starts_with(top))
                    .map(Path::to_path_buf)
                    .collect();
                if let Some(info) = self.user_exclude.as_ref().and_then(|x| x.parent()) {
                    also.push(info.to_path_buf());
                }
                let mut found = Scanned::Look;
                w.sync(&also, |add| {
                    let (watched, f) = scan.walk(index, &mut ignores, Some(add));
                    found = f;
                    watched
                });
                found
            }
        };
        // What the folders held is kept for the next look whatever it found: a listing is
        // true of its folder, not of the look.
        self.listings_taken
            .fetch_add(listings.taken(), std::sync::atomic::Ordering::Relaxed);
        let _ = listings.write(&listed);
        found
    }

    /// The tree `tree` as git lists it, when its objects are packed.
    async fn listed(&self, tree: &str, max: usize) -> Option<Live> {
        let listing = self
            .git
            .run(
                &["ls-tree", "-r", "-t", "-z", "--full-tree", tree],
                Run {
                    limit: LIST_BYTES,
                    ..Run::default()
                },
            )
            .await
            .ok()?;
        Live::from_listing(tree, &listing, max)
    }

    /// Brings the index up to date with the workspace and writes its tree.
    async fn stage(&self) -> Result<(String, Vec<String>), GitError> {
        self.settle().await?;
        // Two gits at once, one for each core: the stat of every tracked file, and the walk
        // for untracked ones. Disjoint but for a path both modified and deleted, which the
        // loop below takes once; the untracked ones keep their order, so `max_files` keeps
        // the same files.
        let spec = self.spec();
        let changed = ["ls-files", "-z", "-t", "-m", "-d", "--", spec];
        let others = [
            "ls-files",
            "-z",
            "-t",
            "-o",
            "--exclude-standard",
            "--",
            spec,
        ];
        let (tracked, untracked) = tokio::join!(
            self.git.run(&changed, self.run_index()),
            self.git.run(&others, self.run_index()),
        );
        let mut listing = tracked?;
        if !listing.is_empty() && !listing.ends_with(&[0]) {
            listing.push(0);
        }
        listing.extend(untracked?);
        let mut seen = BTreeSet::new();
        let mut update: Vec<u8> = Vec::new();
        let mut drop_: Vec<u8> = Vec::new();
        let mut too_big: Vec<String> = Vec::new();
        let mut too_many: Vec<String> = Vec::new();
        let mut unreadable_: Vec<String> = Vec::new();
        let mut files = index_entries(&self.index);
        for item in listing.split(|b| *b == 0).filter(|i| i.len() > 2) {
            let (tag, path) = (item[0], &item[2..]);
            if !seen.insert(path.to_vec()) {
                continue;
            }
            let rel = String::from_utf8_lossy(path).into_owned();
            // A folder with a repository of its own: its git keeps it.
            if path.ends_with(b"/") {
                continue;
            }
            let full = self
                .git
                .work_tree
                .join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path));
            match std::fs::symlink_metadata(&full) {
                Err(_) => {
                    update.extend_from_slice(path);
                    update.push(0);
                }
                Ok(m) if m.file_type().is_symlink() => {
                    if tag == b'?' && files >= self.settings.max_files {
                        too_many.push(rel);
                        continue;
                    }
                    files += usize::from(tag == b'?');
                    update.extend_from_slice(path);
                    update.push(0);
                }
                Ok(m) if m.is_file() => {
                    if m.len() > self.settings.max_file_bytes {
                        too_big.push(rel);
                        drop_.extend_from_slice(path);
                        drop_.push(0);
                        continue;
                    }
                    if tag == b'?' && files >= self.settings.max_files {
                        too_many.push(rel);
                        continue;
                    }
                    // git stops the whole `update-index` at the first file it cannot open,
                    // so one `chmod 000` file would leave the run without checkpoints: it is
                    // skipped, as an oversized one is.
                    if unreadable(&full) {
                        unreadable_.push(rel);
                        drop_.extend_from_slice(path);
                        drop_.push(0);
                        continue;
                    }
                    files += usize::from(tag == b'?');
                    update.extend_from_slice(path);
                    update.push(0);
                }
                // FIFOs, sockets, devices: not files to keep.
                Ok(_) => {}
            }
        }
        let unchanged = update.is_empty() && drop_.is_empty();
        if !unchanged {
            // Entries written in the second their files changed are "racily clean": git
            // reads their content on every look until the index is written again later.
            let _ = write_atomic(&self.dir.join("racy"), b"");
        }
        if !drop_.is_empty() {
            self.git
                .run(
                    &["update-index", "-z", "--force-remove", "--stdin"],
                    Run {
                        stdin: Some(drop_),
                        ..self.run_index()
                    },
                )
                .await?;
        }
        if !update.is_empty() {
            self.git
                .run(
                    &[
                        "update-index",
                        "-z",
                        "--add",
                        "--remove",
                        "--replace",
                        "--stdin",
                    ],
                    Run {
                        stdin: Some(update),
                        ..self.run_index()
                    },
                )
                .await?;
        }
        let warnings = self.warnings(too_big, too_many, unreadable_);
        // Nothing changed: the index is the one whose tree was written last time.
        if unchanged {
            if let Some(tree) = self.index_tree() {
                return Ok((tree, warnings));
            }
        }
        let cached = self.dir.join("tree");
        let tree = self.git.line(&["write-tree"], self.run_index()).await?;
        if let Some(sig) = index_signature(&self.index) {
            let _ = write_atomic(&cached, format!("{sig}{tree}\n").as_bytes());
        }
        Ok((tree, warnings))
    }

    /// Whether the index was changed over a second ago and not written again since: its
    /// racily clean entries would stop being so if git wrote it now.
    fn settle_due(&self) -> bool {
        let Ok(changed) = std::fs::metadata(self.dir.join("racy")).and_then(|m| m.modified())
        else {
            return false;
        };
        SystemTime::now()
            .duration_since(changed)
            .unwrap_or_default()
            >= Duration::from_secs(1)
    }

    /// Writes the index again once a second has passed since it was last changed, so that
    /// the entries it took in the second their files changed are checked by their stat data
    /// from then on instead of by their content: what keeps an unchanged checkpoint a walk
    /// of stat calls.
    async fn settle(&self) -> Result<(), GitError> {
        if !self.settle_due() {
            return Ok(());
        }
        let _ = std::fs::remove_file(self.dir.join("racy"));
        // Exit 1 only says some entry needs an update, which the listing that follows sees.
        match self
            .git
            .run(&["update-index", "-q", "--refresh"], self.run_index())
            .await
        {
            Ok(_) | Err(GitError::Failed(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// One line for each kind of skip, naming the paths not named before in this run.
    fn warnings(
        &self,
        too_big: Vec<String>,
        too_many: Vec<String>,
        unreadable: Vec<String>,
    ) -> Vec<String> {
        let mut warned = self.warned.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = Vec::new();
        let big: Vec<String> = too_big
            .into_iter()
            .filter(|p| warned.insert(p.clone()))
            .collect();
        if !big.is_empty() {
            out.push(format!(
                "checkpoints skip {} over checkpoints.max_file_bytes ({} bytes): {}",
                plural(big.len(), "file"),
                crate::text::thousands(self.settings.max_file_bytes),
                named(&big)
            ));
        }
        let many: Vec<String> = too_many
            .into_iter()
            .filter(|p| warned.insert(p.clone()))
            .collect();
        if !many.is_empty() {
            out.push(format!(
                "checkpoints stop at checkpoints.max_files ({}): {} not kept: {}",
                crate::text::thousands(self.settings.max_files as u64),
                plural(many.len(), "file"),
                named(&many)
            ));
        }
        let locked: Vec<String> = unreadable
            .into_iter()
            .filter(|p| warned.insert(p.clone()))
            .collect();
        if !locked.is_empty() {
            out.push(format!(
                "checkpoints skip {} hx cannot read: {}",
                plural(locked.len(), "file"),
                named(&locked)
            ));
        }
        out
    }
}

/// Whether opening `path` to read it is refused (its mode, an ACL, a security module): what
/// would make git's `update-index` fail. Opened without following a link and without
/// blocking, so a file swapped for a link or a FIFO since it was looked at costs nothing; any
/// other failure (the file gone meanwhile) is left to git, which handles it.
fn unreadable(path: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied)
}
